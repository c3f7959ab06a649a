// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// probeResult is a window of probe p with the given bin counts in a layout
// of len(counts) bins of width w.
func probeResult(w float64, counts ...uint64) analysis.ProbeResult {
	p := analysis.ProbeResult{Name: "p", Width: w, Bins: len(counts), BinCounts: counts}
	for i, k := range counts {
		p.Counts.Success += int64(k)
		p.SuccessSum += float64(k) * (float64(i) + 0.5) * w
	}
	return p
}

// buildWindow returns the deltaq.observed metric of one window of the
// given probes.
func buildWindow(t *testing.T, b *builder, start time.Duration, probes ...analysis.ProbeResult) pmetric.Metric {
	t.Helper()
	md := b.metrics(&analysis.Result{Start: at(start), End: at(start + time.Second), Probes: probes})
	var out pmetric.Metric
	forEachMetric(md, func(m pmetric.Metric) {
		if m.Name() == contract.MetricObserved {
			out = m
		}
	})
	require.NotEqual(t, pmetric.MetricTypeEmpty, out.Type(), "no deltaq.observed")
	return out
}

// TestObservedIsOneCumulativeStream: deltaq.observed adds every window to
// the probe's stream, keeps its start time, repeats it through an empty
// window, and starts a new stream when the layout changes or the probe is
// forgotten.
func TestObservedIsOneCumulativeStream(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	m := buildWindow(t, b, 0, probeResult(0.001, 1, 2, 0))
	dp := m.Histogram().DataPoints().At(0)
	assert.Equal(t, []uint64{1, 2, 0, 0}, dp.BucketCounts().AsRaw())
	start := dp.StartTimestamp()
	assert.Equal(t, at(0), start.AsTime())

	m = buildWindow(t, b, time.Second, probeResult(0.001, 0, 1, 4))
	dp = m.Histogram().DataPoints().At(0)
	assert.Equal(t, []uint64{1, 3, 4, 0}, dp.BucketCounts().AsRaw())
	assert.Equal(t, uint64(8), dp.Count())
	assert.InDelta(t, 0.0005+2*0.0015+0.0015+4*0.0025, dp.Sum(), 1e-12)
	assert.Equal(t, start, dp.StartTimestamp())

	// An empty window: the stream again, unchanged, at the window's end.
	m = buildWindow(t, b, 2*time.Second, analysis.ProbeResult{Name: "p"})
	dp = m.Histogram().DataPoints().At(0)
	assert.Equal(t, []uint64{1, 3, 4, 0}, dp.BucketCounts().AsRaw())
	assert.Equal(t, at(3*time.Second), dp.Timestamp().AsTime())

	// Another layout: a new stream from this window's start.
	m = buildWindow(t, b, 3*time.Second, probeResult(0.002, 5, 0))
	dp = m.Histogram().DataPoints().At(0)
	assert.Equal(t, []uint64{5, 0, 0}, dp.BucketCounts().AsRaw())
	assert.Equal(t, at(3*time.Second), dp.StartTimestamp().AsTime())

	// A window without p forgets it; its return starts afresh.
	buildWindow(t, b, 4*time.Second, probeResult(0.001, 1))
	m = buildWindow(t, b, 5*time.Second, probeResult(0.002, 1, 0))
	dp = m.Histogram().DataPoints().At(0)
	assert.Equal(t, []uint64{1, 0, 0}, dp.BucketCounts().AsRaw(), "p had a 1-bin layout in between")
	assert.Len(t, b.cum, 1)
}

// TestObservedExponential: with histogram::exponential the stream is an
// exponential histogram of at most max_size buckets whose counts add up to
// the bins', each bin in the bucket of its right edge.
func TestObservedExponential(t *testing.T) {
	const bins, w = 1000, 0.0001 // 100 µs bins to dMax = 100 ms
	counts := make([]uint64, bins)
	var total uint64
	for i := range counts {
		counts[i] = uint64(i % 7)
		total += counts[i]
	}
	b := newBuilder(0, DefaultExponentialMaxSize, exporterScope, "", t0)
	m := buildWindow(t, b, 0, probeResult(w, counts...))
	require.Equal(t, pmetric.MetricTypeExponentialHistogram, m.Type())
	assert.Equal(t, pmetric.AggregationTemporalityCumulative, m.ExponentialHistogram().AggregationTemporality())
	dp := m.ExponentialHistogram().DataPoints().At(0)
	// log2(1000) ≈ 9.97 octaves: 16 buckets per octave (scale 4) need 160,
	// scale 5 would need 319.
	assert.Equal(t, int32(4), dp.Scale())
	bc := dp.Positive().BucketCounts().AsRaw()
	assert.LessOrEqual(t, len(bc), DefaultExponentialMaxSize)
	var sum uint64
	for _, k := range bc {
		sum += k
	}
	assert.Equal(t, total, sum)
	assert.Equal(t, total, dp.Count())

	// Every bin's right edge lies in the bucket its count went to.
	base := math.Pow(2, 1.0/16)
	x := b.expOf(w, bins)
	for i := range bins {
		k := float64(x.index[i] + x.offset)
		edge := edgeSeconds(i, w)
		assert.True(t, edge > math.Pow(base, k)*(1-1e-12) && edge <= math.Pow(base, k+1)*(1+1e-12), "bin %d", i)
	}

	// Bin 0 is empty (0 % 7): the buckets start at the first that holds a
	// count, and end at the last.
	assert.Equal(t, x.index[1]+x.offset, dp.Positive().Offset())
	assert.NotZero(t, bc[0])
	assert.NotZero(t, bc[len(bc)-1])

	// A smaller max_size takes a coarser scale.
	b = newBuilder(0, 20, exporterScope, "", t0)
	dp = buildWindow(t, b, 0, probeResult(w, counts...)).ExponentialHistogram().DataPoints().At(0)
	// Scale 1 spans buckets −27 (1e-4 in (2^−13.5, 2^−13]) to −7 (0.1 in
	// (2^−3.5, 2^−3]): 21 > 20; scale 0 spans −14 to −4, 11 buckets.
	assert.Equal(t, int32(0), dp.Scale())
	assert.LessOrEqual(t, dp.Positive().BucketCounts().Len(), 20)
}

// TestObservedExponentialTrimmed: the buckets of an exponential stream run
// from its first to its last non-empty bucket; a stream of no success (a
// probe whose instances all failed) has none. Prometheus 2.42 fails on a
// remote-written native histogram whose buckets start empty.
func TestObservedExponentialTrimmed(t *testing.T) {
	b := newBuilder(0, DefaultExponentialMaxSize, exporterScope, "", t0)
	counts := make([]uint64, 100)
	counts[40], counts[60] = 3, 4
	dp := buildWindow(t, b, 0, probeResult(0.001, counts...)).ExponentialHistogram().DataPoints().At(0)
	x := b.expOf(0.001, 100)
	assert.Equal(t, x.index[40]+x.offset, dp.Positive().Offset())
	bc := dp.Positive().BucketCounts().AsRaw()
	assert.Equal(t, uint64(3), bc[0])
	assert.Equal(t, uint64(4), bc[len(bc)-1])
	assert.Len(t, bc, int(x.index[60]-x.index[40])+1)

	b = newBuilder(0, DefaultExponentialMaxSize, exporterScope, "", t0)
	p := probeResult(0.001, make([]uint64, 100)...)
	p.Counts.Failure = 5
	dp = buildWindow(t, b, 0, p).ExponentialHistogram().DataPoints().At(0)
	assert.Zero(t, dp.Positive().BucketCounts().Len())
	assert.Zero(t, dp.Count())
}

func TestExponentialMaxSizeBounds(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Histogram.Exponential = &ExponentialHistogramConfig{}
	assert.Equal(t, DefaultExponentialMaxSize, cfg.exponentialMaxSize(), "max_size 0 is the default")
	require.NoError(t, cfg.checkBounds())
	cfg.Histogram.Exponential.MaxSize = 1
	assert.ErrorContains(t, cfg.checkBounds(), `histogram.exponential.max_size: 1 is below the minimum 2`)
	cfg.Histogram.Exponential = nil
	assert.Equal(t, 0, cfg.exponentialMaxSize(), "explicit buckets")
}

// TestOutcomesStartNoLaterThanFirstWindow: an observer's first windows
// begin before it was made (the engine keeps a window open for the
// instances that ended just before), and deltaq.outcomes, a cumulative sum,
// starts its stream no later than its first window, never after the
// point's own time; a probe first seen later starts at its first window,
// as its deltaq.observed stream does.
func TestOutcomesStartNoLaterThanFirstWindow(t *testing.T) {
	made := at(1300 * time.Millisecond)
	b := newBuilder(0, 0, exporterScope, "", made)
	md := b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{probeResult(0.001, 1)}})
	dp := outcomesOf(md)
	assert.Equal(t, at(time.Second), dp.Timestamp().AsTime())
	assert.Equal(t, at(0), dp.StartTimestamp().AsTime(), "the stream starts with its first window")

	md = b.metrics(&analysis.Result{Start: at(time.Second), End: at(2 * time.Second), Probes: []analysis.ProbeResult{probeResult(0.001, 1)}})
	assert.Equal(t, at(0), outcomesOf(md).StartTimestamp().AsTime(), "one stream")

	q := probeResult(0.001, 1)
	q.Name = "q"
	md = b.metrics(&analysis.Result{Start: at(5 * time.Second), End: at(6 * time.Second), Probes: []analysis.ProbeResult{q}})
	assert.Equal(t, at(5*time.Second), outcomesOf(md).StartTimestamp().AsTime(), "a later probe starts at its first window")
}

// TestOutcomesRestartStartsNewStream: a probe the analysis forgets and
// sees again restarts its totals; its deltaq.outcomes stream then starts
// anew at that window's start, so that the drop is a reset with a new
// start time rather than a cumulative stream that goes down.
func TestOutcomesRestartStartsNewStream(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	p := probeResult(0.001, 5)
	p.Totals = p.Counts
	first := outcomesOf(b.metrics(&analysis.Result{Start: at(time.Second), End: at(2 * time.Second), Probes: []analysis.ProbeResult{p}}))
	assert.Equal(t, int64(5), first.IntValue())

	// A window without p: the analysis has forgotten it.
	b.metrics(&analysis.Result{Start: at(2 * time.Second), End: at(3 * time.Second)})

	p = probeResult(0.001, 2)
	p.Totals = p.Counts
	again := outcomesOf(b.metrics(&analysis.Result{Start: at(3 * time.Second), End: at(4 * time.Second), Probes: []analysis.ProbeResult{p}}))
	assert.Equal(t, int64(2), again.IntValue())
	assert.NotEqual(t, first.StartTimestamp(), again.StartTimestamp(), "a restarted total is a new stream")
	assert.Equal(t, at(3*time.Second), again.StartTimestamp().AsTime())
}

// TestObservedExponentialScaleForPrometheus: a probe whose buckets span
// 1 µs to 100 s (a log-linear layout) under a small max_size still gets a
// scale Prometheus's native histograms take, at least −4: remote write
// refuses a coarser one, and the probe's histogram would be lost.
func TestObservedExponentialScaleForPrometheus(t *testing.T) {
	assert.Equal(t, -4, ExponentialScale(1e-6, 100, 2))
	assert.Equal(t, -3, ExponentialScale(1e-6, 100, 4), "a scale that fits is kept")
	b := newBuilder(0, 2, exporterScope, "", t0)
	p := probeResult(1e-6, 1, 0, 1)
	p.Edges = []float64{1e-6, 1e-3, 100}
	dp := buildWindow(t, b, 0, p).ExponentialHistogram().DataPoints().At(0)
	assert.Equal(t, int32(-4), dp.Scale())
	assert.Equal(t, uint64(2), dp.Count())
}

// TestOutcomesNewLayoutStartsNewStream: a probe whose layout changes
// restarts its totals (the analysis starts it afresh), and its
// deltaq.outcomes stream starts anew at that window's start, as its
// deltaq.observed stream does, even when the new totals are not below the
// last ones.
func TestOutcomesNewLayoutStartsNewStream(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	p := probeResult(0.001, 1, 1)
	p.Totals = p.Counts
	first := outcomesOf(b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}}))
	assert.Equal(t, int64(2), first.IntValue())

	p = probeResult(0.002, 4, 1)
	p.Totals = p.Counts // restarted with the layout
	again := outcomesOf(b.metrics(&analysis.Result{Start: at(time.Second), End: at(2 * time.Second), Probes: []analysis.ProbeResult{p}}))
	assert.Equal(t, int64(5), again.IntValue())
	assert.Equal(t, at(time.Second), again.StartTimestamp().AsTime(), "a new layout's totals are a new stream")

	// The same layout again: one stream.
	q := probeResult(0.002, 1, 0)
	q.Totals = p.Totals
	q.Totals.Success++
	same := outcomesOf(b.metrics(&analysis.Result{Start: at(2 * time.Second), End: at(3 * time.Second), Probes: []analysis.ProbeResult{q}}))
	assert.Equal(t, at(time.Second), same.StartTimestamp().AsTime())
}

// outcomesOf returns the first deltaq.outcomes point of md (a zero point
// when it has none).
func outcomesOf(md pmetric.Metrics) pmetric.NumberDataPoint {
	var dp pmetric.NumberDataPoint
	forEachMetric(md, func(m pmetric.Metric) {
		if m.Name() == contract.MetricOutcomes {
			dp = m.Sum().DataPoints().At(0)
		}
	})
	return dp
}

// TestObservedStreamFromTheFirstInstance: a probe's deltaq.observed stream
// starts with its first window of any instance, a timeout alone included
// (a point of no success), not with its first success or failure; the
// successes of later windows add to it, from the same start.
func TestObservedStreamFromTheFirstInstance(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	timeout := span{probe: "p", outcome: contract.Timeout, end: ms(1500), delay: 50 * time.Millisecond, dmax: 50 * time.Millisecond, bins: 50}
	h.consume(timeout)
	h.obs.tick(at(3 * time.Second)) // closes [1 s, 2 s)
	h.consume(span{probe: "p", outcome: contract.Success, end: ms(2500), delay: ms(5), dmax: 50 * time.Millisecond, bins: 50})
	h.obs.tick(at(4 * time.Second)) // closes [2 s, 3 s)
	hs := observedHistograms(h)["p"]
	require.Len(t, hs, 2)
	for i, want := range []uint64{0, 1} {
		assert.Equal(t, at(time.Second), hs[i].StartTimestamp().AsTime().UTC(), "point %d: the stream starts with the timeout's window", i)
		assert.Equal(t, want, hs[i].Count(), "point %d: the successes so far", i)
	}
}
