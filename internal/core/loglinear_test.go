// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// logLinearWindows registers a processor probe "ll" with log-linear
// buckets, 1ms to 10s by tens in 10 steps, and runs two windows of it
// through an observer with cfg: 0.5ms, 1.5ms, 25ms, 4.2s and a timeout,
// then 1.5ms twice. Its spans carry the dMax and no bins, as the
// processor writes them.
func logLinearWindows(t *testing.T, cfg *Config) *harness {
	t.Helper()
	ll := deltaq.LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}
	registerProcessor(t, map[string]deltaq.Layout{"ll": {DMaxNs: ll.High, LogLinear: ll}})
	h := newHarness(t, cfg, at(time.Second))
	d := 10 * time.Second
	h.consume(
		span{probe: "ll", outcome: contract.Success, end: ms(100), delay: ms(0.5), dmax: d},
		span{probe: "ll", outcome: contract.Success, end: ms(200), delay: ms(1.5), dmax: d},
		span{probe: "ll", outcome: contract.Success, end: ms(300), delay: ms(25), dmax: d},
		span{probe: "ll", outcome: contract.Success, end: ms(400), delay: ms(4200), dmax: d},
		span{probe: "ll", outcome: contract.Timeout, end: ms(500), delay: d, dmax: d},
	)
	h.obs.tick(at(2 * time.Second))
	h.consume(
		span{probe: "ll", outcome: contract.Success, end: ms(1100), delay: ms(1.5), dmax: d},
		span{probe: "ll", outcome: contract.Success, end: ms(1200), delay: ms(1.5), dmax: d},
	)
	h.obs.tick(at(3 * time.Second))
	return h
}

// TestLogLinearObservedBoundsAreLlquantizeEdges: deltaq.observed of a
// log-linear probe has llquantize's bucket edges as its explicit bounds
// (1ms … 9ms, 10ms … 90ms, 100ms … 900ms, 1s … 10s) and the buckets'
// exact counts, cumulative: after two windows, [0, 1ms) holds 1, [1ms,
// 2ms) 3, [20ms, 30ms) 1 and [4s, 5s) 1. Its windows go to a gateway as
// deltaq.window with the same buckets.
func TestLogLinearObservedBoundsAreLlquantizeEdges(t *testing.T) {
	cfg := testConfig()
	cfg.EmitWindows = true
	h := logLinearWindows(t, cfg)
	hs := observedHistograms(h)["ll"]
	require.Len(t, hs, 2)
	var want []float64
	for _, mag := range []int64{1e6, 1e7, 1e8, 1e9} { // ns
		for v := int64(1); v < 10; v++ {
			if v > 1 || mag == 1e6 {
				want = append(want, float64(v*mag)/1e9)
			}
		}
		want = append(want, float64(10*mag)/1e9)
	}
	dp := hs[1]
	assert.Equal(t, want, dp.ExplicitBounds().AsRaw())
	counts := make([]uint64, len(want)+1)
	counts[0], counts[1], counts[11], counts[31] = 1, 3, 1, 1
	assert.Equal(t, counts, dp.BucketCounts().AsRaw())
	assert.Equal(t, uint64(6), dp.Count())
	assert.Equal(t, hs[0].StartTimestamp(), dp.StartTimestamp(), "one cumulative stream")
	assert.InDelta(t, 0.0005+3*0.0015+0.025+4.2, dp.Sum(), 1e-9)
	assert.Equal(t, map[string]int64{"success": 6, "timeout": 1, "failure": 0}, outcomeCounts(t, h, "ll"))
	// The window goes to a gateway too, with its buckets (windows.go).
	windows, successes, timeouts := 0, uint64(0), int64(0)
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricWindow {
				return
			}
			for _, dp := range m.Histogram().DataPoints().All() {
				var w analysis.Window
				if assert.True(t, readWindow(dp, "agent", &w, freshReader())) {
					windows++
					assert.Equal(t, int64(10), w.LogLinear.Factor)
					for _, c := range w.BinCounts {
						successes += c
					}
					timeouts += w.Timeouts
				}
			}
		})
	}
	assert.Equal(t, 2, windows, "a log-linear probe's windows in deltaq.window")
	assert.Equal(t, uint64(6), successes)
	assert.Equal(t, int64(1), timeouts)
}

// TestLogLinearObservedExponential: with histogram::exponential each
// bucket's count goes into the exponential bucket of its upper edge, as a
// uniform bin's does: the 6 successes, the 3 of [1ms, 2ms) together in
// the exponential bucket of 2ms.
func TestLogLinearObservedExponential(t *testing.T) {
	cfg := testConfig()
	cfg.Histogram.Exponential = &ExponentialHistogramConfig{MaxSize: 160}
	h := logLinearWindows(t, cfg)
	var dps []pmetric.ExponentialHistogramDataPoint
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricObserved {
				for i := range m.ExponentialHistogram().DataPoints().Len() {
					dps = append(dps, m.ExponentialHistogram().DataPoints().At(i))
				}
			}
		})
	}
	require.Len(t, dps, 2)
	dp := dps[1]
	var total, most uint64
	for _, c := range dp.Positive().BucketCounts().AsRaw() {
		total += c
		most = max(most, c)
	}
	assert.Equal(t, uint64(6), dp.Count())
	assert.Equal(t, uint64(6), total)
	assert.Equal(t, uint64(3), most)
	// 1ms to 10s is 13.3 powers of two: the finest scale with at most 160
	// buckets is 3 (8 a power of two, 107 buckets).
	assert.Equal(t, int32(3), dp.Scale())
}
