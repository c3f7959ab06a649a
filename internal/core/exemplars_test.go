// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// sampledSpan appends a span of probe p with trace and span id n, delay
// delay ending at end, and the tracestate ts.
func sampledSpan(spans ptrace.SpanSlice, oc string, n byte, end, delay time.Duration, ts string) {
	sp := spans.AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{0: 0xab, 15: n})
	sp.SetSpanID(pcommon.SpanID{7: n})
	sp.TraceState().FromRaw(ts)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(end - delay)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(end)))
	sp.Attributes().PutStr(contract.AttrProbe, "p")
	if oc != contract.Success {
		sp.Attributes().PutStr(contract.AttrOutcome, oc)
	}
}

// TestSampledSpansCountWithTheirAdjustedCount: a span kept with probability
// 1/4 (ot=th:c) counts 4 in its bucket, the histogram's count and sum, and
// the outcome counters; a span with sampling.priority > 0 counts one
// whatever its threshold, as contrib's probabilistic sampler keeps it; a
// span without sampling information counts one.
func TestSampledSpansCountWithTheirAdjustedCount(t *testing.T) {
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	cfg.Exemplars.Enabled = false
	h := newHarness(t, cfg, at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	sampledSpan(spans, contract.Success, 1, ms(100), ms(10.5), "ot=th:c")
	sampledSpan(spans, contract.Success, 2, ms(200), ms(20.5), "")
	sampledSpan(spans, contract.Success, 3, ms(250), ms(20.5), "ot=th:8")
	spans.At(2).Attributes().PutInt(contract.AttrSamplingPriority, 1)
	sampledSpan(spans, contract.Failure, 4, ms(300), ms(5), "vendor=1,ot=th:8")
	sampledSpan(spans, contract.Timeout, 5, ms(400), ms(100), "ot=th:e")
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
	h.obs.tick(at(2 * time.Second))

	hs := observedHistograms(h)["p"]
	require.Len(t, hs, 1)
	dp := hs[0]
	assert.Equal(t, uint64(6), dp.Count(), "4 + 1 + 1 successes")
	assert.Equal(t, uint64(4), dp.BucketCounts().At(10), "10.5 ms ×4")
	assert.Equal(t, uint64(2), dp.BucketCounts().At(20))
	assert.InDelta(t, 4*0.0105+2*0.0205, dp.Sum(), 1e-12)
	assert.Equal(t, map[string]int64{"success": 6, "failure": 2, "timeout": 8}, outcomeCounts(t, h, "p"))
	assert.Equal(t, 0, dp.Exemplars().Len(), "exemplars::enabled false names no instance")
}

// TestExemplarsOnTheObservedHistogramAndCounters: with exemplars on (the
// default), the
// observed histogram's point carries the window's successes (trace, span,
// delay in seconds, end time), the timeout and failure counters their
// instances (value: the increment, the adjusted count).
func TestExemplarsOnTheObservedHistogramAndCounters(t *testing.T) {
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	assert.True(t, cfg.Exemplars.Enabled, "exemplars are on by default")
	cfg.Exemplars.MaxPerProbe = 2
	h := newHarness(t, cfg, at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, d := range []float64{10.5, 30.5, 60.5, 90.5} {
		sampledSpan(spans, contract.Success, byte(i+1), ms(100), ms(d), "")
	}
	sampledSpan(spans, contract.Failure, 7, ms(300), ms(5), "ot=th:8")
	sampledSpan(spans, contract.Timeout, 8, ms(400), ms(100), "")
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
	h.obs.tick(at(2 * time.Second))

	dp := observedHistograms(h)["p"][0]
	require.Equal(t, 2, dp.Exemplars().Len(), "the slowest of each half of the bins")
	e := dp.Exemplars().At(0)
	assert.Equal(t, pcommon.TraceID{0: 0xab, 15: 2}, e.TraceID())
	assert.Equal(t, pcommon.SpanID{7: 2}, e.SpanID())
	assert.InDelta(t, 0.0305, e.DoubleValue(), 1e-12)
	assert.Equal(t, pcommon.NewTimestampFromTime(at(ms(100))), e.Timestamp())
	assert.Equal(t, pcommon.TraceID{0: 0xab, 15: 4}, dp.Exemplars().At(1).TraceID())

	byOutcome := map[string]pmetric.Exemplar{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricOutcomes {
				return
			}
			for i := range m.Sum().DataPoints().Len() {
				p := m.Sum().DataPoints().At(i)
				o, _ := p.Attributes().Get(contract.AttrOutcome)
				if p.Exemplars().Len() > 0 {
					byOutcome[o.Str()] = p.Exemplars().At(0)
				}
			}
		})
	}
	require.Len(t, byOutcome, 2, "timeout and failure, not success")
	assert.Equal(t, pcommon.SpanID{7: 7}, byOutcome["failure"].SpanID())
	assert.Equal(t, 2.0, byOutcome["failure"].DoubleValue(), "the failure's adjusted count")
	assert.Equal(t, pcommon.SpanID{7: 8}, byOutcome["timeout"].SpanID())
	// A timeout ends at start + dMax: 300 ms + 100 ms.
	assert.Equal(t, pcommon.NewTimestampFromTime(at(ms(400))), byOutcome["timeout"].Timestamp())
}

// TestTriggerRecordsNameTheWorstInstances: a QTA trigger's record and its
// snapshot's records carry the trace ids of the window's slowest successes,
// slowest first, and of its timeouts and failures.
func TestTriggerRecordsNameTheWorstInstances(t *testing.T) {
	cfg := testConfig()
	cfg.WorstInstances = 2
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100,
		QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 20 * time.Millisecond, P: 0.9}}},
		Triggers: analysis.Triggers{QTA: true}}}
	h := newHarness(t, cfg, at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i, d := range []float64{10.5, 80.5, 50.5, 90.5} {
		sampledSpan(spans, contract.Success, byte(i+1), ms(100), ms(d), "")
	}
	sampledSpan(spans, contract.Timeout, 9, ms(400), ms(100), "")
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
	// The snapshot completes snapshot::after (5 s) after the trigger.
	for sec := 2; sec <= 10; sec++ {
		h.obs.tick(at(time.Duration(sec) * time.Second))
	}

	id := func(n byte) string { return pcommon.TraceID{0: 0xab, 15: n}.String() }
	var trig, snap plog.LogRecord
	var found, foundSnap bool
	for _, ld := range h.logs.AllLogs() {
		recs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range recs.Len() {
			switch r := recs.At(i); r.EventName() {
			case contract.EventTrigger:
				trig, found = r, true
			case contract.EventSnapshot:
				if c, _ := r.Attributes().Get(contract.AttrSuccess); c.Int() == 4 {
					snap, foundSnap = r, true
				}
			}
		}
	}
	require.True(t, found, "a trigger record")
	for name, r := range map[string]plog.LogRecord{"trigger": trig, "snapshot": snap} {
		if name == "snapshot" && !foundSnap {
			t.Fatal("no snapshot record of the trigger's window")
		}
		slow, _ := r.Attributes().Get(contract.AttrSlowestTraceIDs)
		assert.Equal(t, []any{id(4), id(2)}, slow.Slice().AsRaw(), "%s: slowest first", name)
		to, _ := r.Attributes().Get(contract.AttrTimeoutTraceIDs)
		assert.Equal(t, []any{id(9)}, to.Slice().AsRaw(), name)
		_, ok := r.Attributes().Get(contract.AttrFailureTraceIDs)
		assert.False(t, ok, "%s: no failure, no attribute", name)
		// The record's own trace context is its worst instance's, the timeout
		// that never completed: what a log backend's link to traces follows.
		assert.Equal(t, pcommon.TraceID{0: 0xab, 15: 9}, r.TraceID(), "%s: the record's trace id", name)
		assert.Equal(t, pcommon.SpanID{7: 9}, r.SpanID(), "%s: the record's span id", name)
	}
}
