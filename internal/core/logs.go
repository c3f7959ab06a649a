// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"github.com/deltaq-otel/deltaq/internal/contract"

	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

// logs returns the trigger and snapshot records of one closed window, and
// false when there are none. observed is the time the records are made.
func (b *builder) logs(r *analysis.Result, observed time.Time) (plog.Logs, bool) {
	if len(r.Triggers) == 0 && len(r.Snapshots) == 0 {
		return plog.Logs{}, false
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	b.resource.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(b.scope)
	sl.Scope().SetVersion(b.version)
	recs := sl.LogRecords()
	obs := pcommon.NewTimestampFromTime(observed)
	for i := range r.Triggers {
		triggerRecord(recs.AppendEmpty(), &r.Triggers[i], obs, b.start)
	}
	for _, s := range r.Snapshots {
		snapshotRecords(recs, s, obs, b.start)
	}
	return ld, true
}

// triggerRecord fills a deltaq.trigger record: severity WARN, the probe,
// the trigger kind, the values it compared and the delay it names; with the
// snapshot it began, when the analysis that numbers the snapshots began
// (start).
func triggerRecord(lr plog.LogRecord, t *analysis.TriggerEvent, obs, start pcommon.Timestamp) {
	lr.SetEventName(contract.EventTrigger)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(t.Time))
	lr.SetObservedTimestamp(obs)
	lr.SetSeverityNumber(plog.SeverityNumberWarn)
	lr.SetSeverityText("WARN")
	a := lr.Attributes()
	a.PutStr(contract.AttrProbe, t.Probe)
	a.PutStr(contract.AttrTrigger, t.Kind.String())
	a.PutDouble(contract.AttrObserved, t.Observed)
	a.PutDouble(contract.AttrRequired, t.Required)
	// The delay a trigger names: a qta trigger's QTA point, a slack_trend
	// trigger's projected time to violation (0: the slack is below zero
	// already). The other kinds compare no delay.
	if t.Kind == analysis.TriggerQTA || t.Kind == analysis.TriggerSlackTrend {
		a.PutDouble(contract.AttrDelay, t.Delay.Seconds())
	}
	if t.SnapshotID > 0 {
		a.PutInt(contract.AttrSnapshotID, t.SnapshotID)
		a.PutInt(contract.AttrAgentStart, int64(start))
	}
	putWorst(a, &t.Worst)
	if ex, ok := t.WorstInstance(); ok {
		setTraceContext(lr, ex)
	}
	lr.Body().SetStr(triggerMessage(t))
}

// triggerMessage says in words what fired.
func triggerMessage(t *analysis.TriggerEvent) string {
	switch t.Kind {
	case analysis.TriggerQTA:
		return fmt.Sprintf("probe %s breaks its QTA: F(%gs) = %.4g < %.4g", t.Probe, t.Delay.Seconds(), t.Observed, t.Required)
	case analysis.TriggerFailure:
		return fmt.Sprintf("probe %s failure ratio %.4g > %.4g", t.Probe, t.Observed, t.Required)
	case analysis.TriggerLoad:
		return fmt.Sprintf("probe %s load %.0f instances > %.0f", t.Probe, t.Observed, t.Required)
	case analysis.TriggerDivergence:
		return fmt.Sprintf("probe %s observed and calculated ΔQ diverge significantly: p = %.3g < α = %.3g", t.Probe, t.Observed, t.Required)
	case analysis.TriggerSlackTrend:
		return fmt.Sprintf("probe %s QTA slack is falling: projected %.4g within the horizon, a violation in %s", t.Probe, t.Observed, t.Delay)
	}
	return fmt.Sprintf("probe %s trigger %s", t.Probe, t.Kind)
}

// snapshotRecords appends one deltaq.snapshot record per probe per window
// of the snapshot; the body carries the CDFs. began is when the analysis
// that numbers the snapshots began: a restarted collector numbers them
// from 1 again.
func snapshotRecords(recs plog.LogRecordSlice, s *analysis.Snapshot, obs, began pcommon.Timestamp) {
	for _, w := range s.Windows {
		start, end := w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano)
		ts := pcommon.NewTimestampFromTime(w.End)
		for _, p := range w.Probes {
			lr := recs.AppendEmpty()
			lr.SetEventName(contract.EventSnapshot)
			lr.SetTimestamp(ts)
			lr.SetObservedTimestamp(obs)
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
			a := lr.Attributes()
			a.PutStr(contract.AttrProbe, p.Name)
			a.PutInt(contract.AttrSnapshotID, s.ID)
			a.PutInt(contract.AttrAgentStart, int64(began))
			a.PutStr(contract.AttrWindowStart, start)
			a.PutStr(contract.AttrWindowEnd, end)
			a.PutInt(contract.AttrSuccess, p.Counts.Success)
			a.PutInt(contract.AttrTimeout, p.Counts.Timeout)
			a.PutInt(contract.AttrFailure, p.Counts.Failure)
			putWorst(a, &p.Worst)
			if ex, ok := p.Worst.Worst(); ok {
				setTraceContext(lr, ex)
			}
			body := lr.Body().SetEmptyMap()
			putCDF(body, contract.SeriesObserved, p.Observed)
			putCDF(body, contract.SeriesCalculated, p.Calculated)
		}
	}
}

// setTraceContext gives a record the trace and span ids of the instance it
// stands for, in the record's own fields: a log backend's link from a log
// line to its trace (Grafana's, for one) follows those, not attributes.
func setTraceContext(lr plog.LogRecord, ex analysis.Exemplar) {
	lr.SetTraceID(ex.TraceID)
	lr.SetSpanID(ex.SpanID)
}

// putWorst stores the trace ids of a window's worst instances of a probe.
func putWorst(a pcommon.Map, w *analysis.WorstInstances) {
	for _, k := range [...]struct {
		key string
		xs  []analysis.Exemplar
	}{{contract.AttrSlowestTraceIDs, w.Slowest}, {contract.AttrTimeoutTraceIDs, w.Timeouts}, {contract.AttrFailureTraceIDs, w.Failures}} {
		if len(k.xs) == 0 {
			continue
		}
		s := a.PutEmptySlice(k.key)
		s.EnsureCapacity(len(k.xs))
		for i := range k.xs {
			s.AppendEmpty().SetStr(pcommon.TraceID(k.xs[i].TraceID).String())
		}
	}
}

// putCDF stores {"width": w, "cdf": [F(w), F(2w), …]} under key; nothing
// for a nil ΔQ.
func putCDF(m pcommon.Map, key string, d *deltaq.DeltaQ) {
	if d == nil {
		return
	}
	c := m.PutEmptyMap(key)
	c.PutDouble("width", d.Width())
	s := c.PutEmptySlice("cdf")
	cdf := d.CDFEdges(nil)
	s.EnsureCapacity(len(cdf))
	for _, v := range cdf {
		s.AppendEmpty().SetDouble(v)
	}
}
