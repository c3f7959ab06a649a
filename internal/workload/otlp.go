// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// scopeName is the instrumentation scope of everything the workload emits.
const scopeName = "github.com/deltaq-otel/deltaq/cmd/dqworkload"

// AttrRate is the span attribute that carries the arrival rate λ, jobs per
// second, in force when the span's job arrived: with a ramp (-ramp-to), an
// observer of the spans knows the load each job met.
const AttrRate = "dqworkload.rate"

// StartEvents selects which instances get a start event.
type StartEvents int

const (
	// StartsOpen sends a start event only for instances still running when
	// their batch is flushed: an instance that started and ended within one
	// flush interval is announced by its span alone, which carries its start
	// time. This is what a start event is for (a timeout needs to know that
	// an unfinished instance exists) and it keeps start events from arriving
	// after the spans they announce.
	StartsOpen StartEvents = iota
	// StartsAll sends a start event for every instance.
	StartsAll
	// StartsNone sends no start events.
	StartsNone
)

// ParseStartEvents parses "open", "all" or "none".
func ParseStartEvents(s string) (StartEvents, error) {
	switch s {
	case "open":
		return StartsOpen, nil
	case "all":
		return StartsAll, nil
	case "none":
		return StartsNone, nil
	}
	return 0, fmt.Errorf("start events must be open, all or none, got %q", s)
}

// Batch is one flush: the start events first, then the ended spans.
type Batch struct {
	Logs   plog.Logs
	Traces ptrace.Traces
	Starts int // instances announced in Logs
	// StartRecords is the log records in Logs: Starts, or in the batch
	// form one a probe.
	StartRecords int
	Spans        int // spans in Traces
}

// Batcher is the Observer that turns outcome instances into OTLP: a span per
// ended instance (status ERROR for a failure, the job's arrival rate in
// AttrRate) and a deltaq.span.start log record per started instance.
// Simulation times are offset by Epoch.
type Batcher struct {
	// Epoch is the wall-clock time of simulation time 0.
	Epoch time.Time
	// Starts selects which instances get a start event.
	Starts StartEvents
	// BatchStarts announces the starts of each flush in the batch form:
	// one record a probe (contract.StartsEventName) rather than one an
	// instance.
	BatchStarts bool
	// ProbeAttribute also sets deltaq.probe on every span.
	ProbeAttribute bool
	// Resource attributes: service.name.
	ServiceName string

	starts  []Instance
	startAt map[[8]byte]int // span id → index in starts, for StartsOpen
	spans   ptrace.SpanSlice
	traces  ptrace.Traces
	have    bool // traces holds a batch in progress
	elided  int64
}

// Pending returns the number of spans waiting for the next flush.
func (b *Batcher) Pending() int {
	if !b.have {
		return 0
	}
	return b.spans.Len()
}

// Elided returns how many start events StartsOpen left out so far.
func (b *Batcher) Elided() int64 { return b.elided }

func (b *Batcher) ts(d time.Duration) pcommon.Timestamp {
	return pcommon.NewTimestampFromTime(b.Epoch.Add(d))
}

func (b *Batcher) resetTraces() {
	b.traces = ptrace.NewTraces()
	b.have = true
	rs := b.traces.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", b.ServiceName)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scopeName)
	b.spans = ss.Spans()
}

// Started implements Observer.
func (b *Batcher) Started(in Instance) {
	if b.Starts == StartsNone {
		return
	}
	if b.startAt == nil {
		b.startAt = make(map[[8]byte]int)
	}
	b.startAt[in.SpanID] = len(b.starts)
	b.starts = append(b.starts, in)
}

// Ended implements Observer.
func (b *Batcher) Ended(in Instance, end time.Duration, failed bool) {
	if b.Starts == StartsOpen {
		if i, ok := b.startAt[in.SpanID]; ok {
			// Announced by this span alone; mark the start event dropped.
			b.starts[i].Probe = ""
			delete(b.startAt, in.SpanID)
			b.elided++
		}
	}
	if !b.have {
		b.resetTraces()
	}
	sp := b.spans.AppendEmpty()
	sp.SetTraceID(in.TraceID)
	sp.SetSpanID(in.SpanID)
	if in.ParentID != ([8]byte{}) {
		sp.SetParentSpanID(in.ParentID)
		sp.SetKind(ptrace.SpanKindInternal)
	} else {
		sp.SetKind(ptrace.SpanKindServer)
	}
	sp.SetName(in.Probe)
	sp.SetStartTimestamp(b.ts(in.Start))
	sp.SetEndTimestamp(b.ts(end))
	if b.ProbeAttribute {
		sp.Attributes().PutStr(contract.AttrProbe, in.Probe)
	}
	if in.Rate != 0 {
		sp.Attributes().PutDouble(AttrRate, in.Rate)
	}
	if failed {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("queue full: message dropped")
	} else {
		sp.Status().SetCode(ptrace.StatusCodeOk)
	}
}

// Flush returns what was collected since the last flush and starts afresh;
// now (simulation time) stamps the log records' observed time.
func (b *Batcher) Flush(now time.Duration) Batch {
	var out Batch
	if b.have {
		out.Traces = b.traces
		out.Spans = b.spans.Len()
		b.have = false
	}
	if len(b.starts) > 0 {
		logs := plog.NewLogs()
		rl := logs.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", b.ServiceName)
		sl := rl.ScopeLogs().AppendEmpty()
		sl.Scope().SetName(scopeName)
		recs := sl.LogRecords()
		observed := b.ts(now)
		if b.BatchStarts {
			out.Starts = b.appendBatchStarts(recs, observed)
		} else {
			b.appendSingleStarts(recs, observed)
		}
		if recs.Len() > 0 {
			out.Logs = logs
			out.StartRecords = recs.Len()
			if !b.BatchStarts {
				out.Starts = recs.Len()
			}
		}
		b.starts = b.starts[:0]
		clear(b.startAt)
	}
	return out
}

// appendBatchStarts appends to recs a batch start event per probe of the
// instances to announce, in the order the probes first appear, and returns
// the number of instances.
func (b *Batcher) appendBatchStarts(recs plog.LogRecordSlice, observed pcommon.Timestamp) int {
	var probes []string
	entries := map[string][]byte{}
	n := 0
	for _, in := range b.starts {
		if in.Probe == "" {
			continue
		}
		if _, ok := entries[in.Probe]; !ok {
			probes = append(probes, in.Probe)
		}
		entries[in.Probe] = contract.AppendStart(entries[in.Probe], in.TraceID, in.SpanID, uint64(b.ts(in.Start)))
		n++
	}
	for _, p := range probes {
		lr := recs.AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.SetObservedTimestamp(observed)
		lr.Attributes().PutStr(contract.AttrProbe, p)
		lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[p])
	}
	return n
}

// appendSingleStarts appends to recs a start event per instance to
// announce.
func (b *Batcher) appendSingleStarts(recs plog.LogRecordSlice, observed pcommon.Timestamp) {
	for _, in := range b.starts {
		if in.Probe == "" {
			continue
		}
		lr := recs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(b.ts(in.Start))
		lr.SetObservedTimestamp(observed)
		lr.SetTraceID(in.TraceID)
		lr.SetSpanID(in.SpanID)
		lr.Attributes().PutStr(contract.AttrProbe, in.Probe)
		// The span's name, for the span the processor makes if the
		// instance times out.
		lr.Attributes().PutStr(contract.AttrSpanName, in.Probe)
	}
}
