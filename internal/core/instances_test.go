// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// contractSpan appends a span as the processor writes it (the contract in
// internal/contract): the probe, the outcome unless it is a success, and the
// layout only when dmax > 0.
func contractSpan(spans ptrace.SpanSlice, probe, oc string, end, delay, dmax time.Duration, bins int) {
	sp := spans.AppendEmpty()
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(end - delay)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(end)))
	a := sp.Attributes()
	a.PutStr(contract.AttrProbe, probe)
	if oc != contract.Success {
		a.PutStr(contract.AttrOutcome, oc)
	}
	if dmax > 0 {
		a.PutInt(contract.AttrDMaxNs, int64(dmax))
		a.PutInt(contract.AttrBins, int64(bins))
	}
}

// TestLayoutFromTheFirstSpanThatCarriesIt: a reader that configures no
// layout for a probe, and has no processor of its own that does, takes it
// from the first span of the probe that carries the layout attributes (the
// processor writes them on the first span of each probe in a batch); the
// spans after it, without, are classified under it from their own delays.
// A span of a probe whose layout is still unknown is dropped as invalid.
func TestLayoutFromTheFirstSpanThatCarriesIt(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	// No layout known for "early" yet: dropped.
	contractSpan(spans, "early", contract.Success, ms(50), ms(1), 0, 0)
	contractSpan(spans, "p", contract.Success, ms(100), ms(10.5), 50*time.Millisecond, 50)
	contractSpan(spans, "p", contract.Success, ms(200), ms(20.5), 0, 0)
	contractSpan(spans, "p", contract.Failure, ms(300), ms(5), 0, 0)
	// Longer than the layout's dMax of 50 ms: a timeout (thesis 3.3).
	contractSpan(spans, "p", contract.Success, ms(400), ms(60), 0, 0)
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))

	st := h.obs.Stats()
	assert.Equal(t, int64(4), st.Counted)
	assert.Equal(t, int64(1), st.Dropped[analysis.DropInvalid], "the span of a probe with no layout yet")
	assert.Equal(t, int64(1), st.Dropped.Total())
	assert.Equal(t, int64(0), st.Rebinned)

	h.obs.tick(at(2 * time.Second))
	hs := observedHistograms(h)["p"]
	require.Len(t, hs, 1)
	dp := hs[0]
	assert.Equal(t, 50, dp.ExplicitBounds().Len(), "the layout of the first span that carries one")
	// deltaq.observed holds the successes; the failure and the timeout are
	// in deltaq.outcomes.
	assert.Equal(t, uint64(2), dp.Count())
	assert.Equal(t, uint64(1), dp.BucketCounts().At(10))
	assert.Equal(t, uint64(1), dp.BucketCounts().At(20))
	assert.Equal(t, uint64(0), dp.BucketCounts().At(50), "nothing above dMax")
	assert.InDelta(t, 0.031, dp.Sum(), 1e-9, "the two successes within dMax: 10.5 ms + 20.5 ms")
	assert.Equal(t, map[string]int64{"success": 2, "failure": 1, "timeout": 1}, outcomeCounts(t, h, "p"))
}

// TestTimeoutLayoutDecidesWhetherItCounts: a timeout carries the dMax it was
// judged by. Under a reader's longer configured dMax it might have ended in
// time, so it is dropped (layout_mismatch); a timeout judged by the reader's
// dMax or a longer one counts.
func TestTimeoutLayoutDecidesWhetherItCounts(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"p": {DMaxNs: int64(100 * time.Millisecond), Bins: 100}})
	h := newHarness(t, testConfig(), at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	contractSpan(spans, "p", contract.Timeout, ms(100), ms(60), 50*time.Millisecond, 50)
	contractSpan(spans, "p", contract.Timeout, ms(300), ms(200), 200*time.Millisecond, 100)
	contractSpan(spans, "p", contract.Timeout, ms(400), ms(150), 100*time.Millisecond, 100)
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))

	st := h.obs.Stats()
	assert.Equal(t, int64(2), st.Counted)
	assert.Equal(t, int64(1), st.Dropped[analysis.DropLayoutMismatch])
}

// illFormedOutcomes each put a deltaq.outcome that is present but is no
// outcome: empty, not a string, or not one of the three values (the case
// counts).
var illFormedOutcomes = []func(pcommon.Map){
	func(a pcommon.Map) { a.PutStr(contract.AttrOutcome, "") },
	func(a pcommon.Map) { a.PutInt(contract.AttrOutcome, 1) },
	func(a pcommon.Map) { a.PutBool(contract.AttrOutcome, true) },
	func(a pcommon.Map) { a.PutEmpty(contract.AttrOutcome) },
	func(a pcommon.Map) { a.PutStr(contract.AttrOutcome, "Success") },
	func(a pcommon.Map) { a.PutStr(contract.AttrOutcome, "maybe") },
}

// TestAbsentOutcomeIsASuccess: the processor leaves deltaq.outcome off a
// success, so a span with deltaq.probe and no deltaq.outcome is counted as a
// success, as is one with an explicit "success" (earlier processors wrote
// it). A deltaq.outcome that is present but empty, not a string, or not one
// of the three values makes the instance invalid: dropped and counted, not
// taken for a success.
func TestAbsentOutcomeIsASuccess(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"p": {DMaxNs: int64(50 * time.Millisecond), Bins: 50}})
	h := newHarness(t, testConfig(), at(time.Second))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	contractSpan(spans, "p", contract.Success, ms(100), ms(10.5), 0, 0)
	contractSpan(spans, "p", contract.Success, ms(200), ms(20.5), 0, 0)
	spans.At(1).Attributes().PutStr(contract.AttrOutcome, contract.Success)
	for i, put := range illFormedOutcomes {
		contractSpan(spans, "p", contract.Success, ms(300+float64(i)), ms(5), 0, 0)
		put(spans.At(spans.Len() - 1).Attributes())
	}
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))

	st := h.obs.Stats()
	assert.Equal(t, int64(2), st.Counted, "the bare and the explicit success")
	assert.Equal(t, int64(len(illFormedOutcomes)), st.Dropped[analysis.DropInvalid], "every ill-formed outcome")
	assert.Equal(t, int64(len(illFormedOutcomes)), st.Dropped.Total())

	h.obs.tick(at(2 * time.Second))
	hs := observedHistograms(h)["p"]
	require.Len(t, hs, 1)
	dp := hs[0]
	assert.Equal(t, uint64(2), dp.Count())
	// Successes land in the bin of their delay (1 ms bins), a failure or a
	// timeout would be in the overflow bucket (50).
	assert.Equal(t, uint64(1), dp.BucketCounts().At(10))
	assert.Equal(t, uint64(1), dp.BucketCounts().At(20))
	assert.Equal(t, uint64(0), dp.BucketCounts().At(50))
	assert.InDelta(t, 0.031, dp.Sum(), 1e-9, "the two successes: 10.5 ms + 20.5 ms")
}

// TestProcessorTimeoutsThatEndedAreCompletions: job = a -> b, a's dMax
// 16 ms under the job's 40 ms. Spans of a that the processor marked
// timeouts (deltaq.outcome timeout, their own start and end 25 ms apart)
// ended: they count as timeouts of a, and at the analysis resolution as
// completions at 25 ms, so the job's calculated ΔQ reaches its median near
// 25 + 10 ms, where the observed job's is. Synthetic timeout spans
// (deltaq.synthetic) never completed, whatever their timestamps say: the
// job's calculated median is then unreachable.
func TestProcessorTimeoutsThatEndedAreCompletions(t *testing.T) {
	for _, synthetic := range []bool{false, true} {
		registerProcessor(t, map[string]deltaq.Layout{
			"a": {DMaxNs: int64(16 * time.Millisecond), Bins: 16}, "b": {DMaxNs: int64(16 * time.Millisecond), Bins: 16},
			"job": {DMaxNs: int64(40 * time.Millisecond), Bins: 40}})
		cfg := testConfig()
		cfg.Diagram = "job = a -> b;"
		cfg.Quantiles = []float64{0.5}
		h := newHarness(t, cfg, at(time.Second))
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for i := range 4 {
			end := ms(100 + float64(i))
			contractSpan(spans, "a", contract.Timeout, end, ms(25), 16*time.Millisecond, 16)
			spans.At(spans.Len()-1).Attributes().PutBool(contract.AttrSynthetic, synthetic)
			contractSpan(spans, "b", contract.Success, end, ms(10), 0, 0)
			contractSpan(spans, "job", contract.Success, end, ms(35), 0, 0)
		}
		require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
		h.obs.tick(at(2 * time.Second))
		assert.Equal(t, map[string]int64{"success": 0, "timeout": 4, "failure": 0}, outcomeCounts(t, h, "a"))
		calc := probeQuantiles(h, "job", contract.SeriesCalculated)["0.5"]
		if synthetic {
			assert.Empty(t, calc, "synthetic timeouts never complete: no calculated median")
			continue
		}
		require.Len(t, calc, 1, "the job's calculated median")
		assert.InDelta(t, 0.035, calc[0], 0.035/32, "the job's calculated median: a's completions at 25 ms plus b's 10 ms")
	}
}

// probeQuantiles returns h's deltaq.quantile points of a probe and series,
// by quantile.
func probeQuantiles(h *harness, probe, series string) map[string][]float64 {
	out := map[string][]float64{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricQuantile {
				return
			}
			dps := m.Gauge().DataPoints()
			for i := 0; i < dps.Len(); i++ {
				a := dps.At(i).Attributes()
				p, _ := a.Get(contract.AttrProbe)
				s, _ := a.Get(contract.AttrSeries)
				if p.Str() != probe || s.Str() != series {
					continue
				}
				q, _ := a.Get(contract.AttrQ)
				out[q.Str()] = append(out[q.Str()], dps.At(i).DoubleValue())
			}
		})
	}
	return out
}

// TestMarkedSpanWithoutTimesIsMalformed: a span that carries deltaq.probe
// but no start or end time (zero, or past the largest int64 the analysis's
// times are) is counted as malformed (instances_dropped{reason=malformed}),
// as a span the connector's own probes match is: read as it was, a start of
// zero made a delay of decades, counted as a timeout in the window open
// now (late_timeouts), and a start past int64 a negative one. The offline
// analysis counts it alike, in the whole input and by windows, and the
// whole input's window does not reach back to 1970 for it.
func TestMarkedSpanWithoutTimesIsMalformed(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"p": {DMaxNs: int64(50 * time.Millisecond), Bins: 50}})
	now := uint64(at(500 * time.Millisecond).UnixNano())
	cases := []struct {
		start, end uint64
		outcome    string
		synthetic  bool
	}{
		{0, now, "", false},
		{0, now, contract.Timeout, false},
		{0, now, contract.Timeout, true},
		{0, 0, contract.Timeout, true},
		{now, 0, contract.Failure, false},
		{math.MaxUint64 - 5, now, "", false},
		{math.MaxUint64 - 5, now, contract.Timeout, true},
		{now - 1e6, math.MaxUint64, "", false},
	}
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, c := range cases {
		sp := spans.AppendEmpty()
		sp.SetStartTimestamp(pcommon.Timestamp(c.start))
		sp.SetEndTimestamp(pcommon.Timestamp(c.end))
		a := sp.Attributes()
		a.PutStr(contract.AttrProbe, "p")
		if c.outcome != "" {
			a.PutStr(contract.AttrOutcome, c.outcome)
		}
		if c.synthetic {
			a.PutBool(contract.AttrSynthetic, true)
		}
	}
	// One well-formed success, which the window keeps.
	contractSpan(spans, "p", contract.Success, ms(400), ms(10), 0, 0)
	want := int64(len(cases))

	h := newHarness(t, testConfig(), at(time.Second))
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
	st := h.obs.Stats()
	assert.Equal(t, want, st.Dropped[analysis.DropMalformed])
	assert.Equal(t, want, st.Dropped.Total())
	assert.Equal(t, int64(1), st.Counted, "the well-formed success alone")
	assert.Zero(t, st.LateTimeouts)

	cfg := testConfig()
	cfg.Interval = time.Second
	off, err := NewOfflineAnalysis(cfg, testLayouts, nil)
	require.NoError(t, err)
	off.OnWindow(func(*analysis.Result) {})
	require.NoError(t, off.ConsumeTraces(context.Background(), td))
	whole, wst := off.Result()
	assert.Equal(t, want, wst.Dropped[analysis.DropMalformed])
	assert.Equal(t, int64(1), wst.Counted)
	assert.Equal(t, want, off.WindowStats().Dropped[analysis.DropMalformed])
	assert.Equal(t, ms(10), whole.SamplingPeriod, "from the success's start to its end")
}
