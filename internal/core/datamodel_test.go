// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// dataModel checks a component's output, batch by batch, against the
// OpenTelemetry metrics data model: finite values, histograms whose bucket
// counts add up to their count and number one more than their explicit
// bounds (strictly increasing), exponential histograms of a scale the data
// model defines and Prometheus takes (−4 to 20), exemplars with both or
// neither of their trace and span
// ids, and cumulative streams whose start time stays while their counts
// grow and moves past the previous point when they restart, and whose
// points go forward in time.
type dataModel struct {
	t testing.TB
	// last holds each cumulative stream's last point: its start, time and
	// count.
	last map[string][3]uint64
}

func newDataModel(t testing.TB) *dataModel { return &dataModel{t: t, last: make(map[string][3]uint64)} }

func (c *dataModel) check(md pmetric.Metrics) {
	c.t.Helper()
	forEachMetric(md, func(m pmetric.Metric) {
		switch m.Type() {
		case pmetric.MetricTypeGauge:
			c.numbers(m.Name(), m.Gauge().DataPoints())
		case pmetric.MetricTypeSum:
			c.numbers(m.Name(), m.Sum().DataPoints())
			if m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityCumulative {
				dps := m.Sum().DataPoints()
				for i := range dps.Len() {
					dp := dps.At(i)
					c.stream(m.Name(), dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), uint64(dp.IntValue()))
				}
			}
		case pmetric.MetricTypeHistogram:
			dps := m.Histogram().DataPoints()
			for i := range dps.Len() {
				dp := dps.At(i)
				where := fmt.Sprintf("%s %v", m.Name(), dp.Attributes().AsRaw())
				bounds, counts := dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()
				if len(counts) != len(bounds)+1 {
					c.t.Errorf("%s: %d bucket counts for %d bounds", where, len(counts), len(bounds))
				}
				for j := range bounds {
					if !finite(bounds[j]) || j > 0 && bounds[j] <= bounds[j-1] {
						c.t.Errorf("%s: bounds %v are not finite and strictly increasing", where, bounds)
						break
					}
				}
				if n := sumOf(counts); n != dp.Count() {
					c.t.Errorf("%s: bucket counts add up to %d, count %d", where, n, dp.Count())
				}
				if !finite(dp.Sum()) {
					c.t.Errorf("%s: sum %v", where, dp.Sum())
				}
				c.exemplars(where, dp.Exemplars())
				if m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityCumulative {
					c.stream(m.Name(), dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), dp.Count())
				}
			}
		case pmetric.MetricTypeExponentialHistogram:
			dps := m.ExponentialHistogram().DataPoints()
			for i := range dps.Len() {
				dp := dps.At(i)
				where := fmt.Sprintf("%s %v", m.Name(), dp.Attributes().AsRaw())
				if dp.Scale() < minExpScale || dp.Scale() > maxExpScale {
					c.t.Errorf("%s: scale %d", where, dp.Scale())
				}
				n := dp.ZeroCount() + sumOf(dp.Positive().BucketCounts().AsRaw()) + sumOf(dp.Negative().BucketCounts().AsRaw())
				if n != dp.Count() {
					c.t.Errorf("%s: buckets add up to %d, count %d", where, n, dp.Count())
				}
				if !finite(dp.Sum()) {
					c.t.Errorf("%s: sum %v", where, dp.Sum())
				}
				c.exemplars(where, dp.Exemplars())
				if m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityCumulative {
					c.stream(m.Name(), dp.Attributes(), dp.StartTimestamp(), dp.Timestamp(), dp.Count())
				}
			}
		default:
			c.t.Errorf("%s: type %v", m.Name(), m.Type())
		}
	})
}

func (c *dataModel) numbers(name string, dps pmetric.NumberDataPointSlice) {
	c.t.Helper()
	for i := range dps.Len() {
		dp := dps.At(i)
		if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble && !finite(dp.DoubleValue()) {
			c.t.Errorf("%s %v: value %v", name, dp.Attributes().AsRaw(), dp.DoubleValue())
		}
		c.exemplars(name, dp.Exemplars())
	}
}

func (c *dataModel) exemplars(where string, es pmetric.ExemplarSlice) {
	c.t.Helper()
	for i := range es.Len() {
		e := es.At(i)
		if e.TraceID().IsEmpty() != e.SpanID().IsEmpty() {
			c.t.Errorf("%s: exemplar with trace %v and span %v", where, e.TraceID(), e.SpanID())
		}
		if e.ValueType() == pmetric.ExemplarValueTypeDouble && !finite(e.DoubleValue()) {
			c.t.Errorf("%s: exemplar value %v", where, e.DoubleValue())
		}
	}
}

// stream checks one point of a cumulative stream against its last.
func (c *dataModel) stream(name string, attrs pcommon.Map, start, ts pcommon.Timestamp, n uint64) {
	c.t.Helper()
	key := fmt.Sprintf("%s %v", name, attrs.AsRaw())
	if start == 0 || start > ts {
		c.t.Errorf("%s: start %v, time %v", key, start, ts)
	}
	if prev, ok := c.last[key]; ok {
		switch {
		case ts <= pcommon.Timestamp(prev[1]):
			c.t.Errorf("%s: a point at %v after one at %v", key, ts.AsTime(), pcommon.Timestamp(prev[1]).AsTime())
		case pcommon.Timestamp(prev[0]) == start && n < prev[2]:
			c.t.Errorf("%s: count %d after %d in one stream (start %v)", key, n, prev[2], start.AsTime())
		case pcommon.Timestamp(prev[0]) != start && start < pcommon.Timestamp(prev[1]):
			c.t.Errorf("%s: a new stream starts at %v, before the last point of the previous one, %v", key, start.AsTime(), pcommon.Timestamp(prev[1]).AsTime())
		}
	}
	c.last[key] = [3]uint64{uint64(start), uint64(ts), n}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func sumOf(xs []uint64) uint64 {
	var n uint64
	for _, x := range xs {
		n += x
	}
	return n
}

// everyWindow runs windows of every kind through an observer and returns
// its output, a batch a window: a probe and its calculated ΔQ with a
// what-if scenario, windows of failures and timeouts only, of one
// instance, an empty window, a window of the inputs alone, a probe
// forgotten and seen again, a QTA with its slack trend and a Quality of
// Outcome requirement; the spans name their service. exp makes
// deltaq.observed exponential.
func everyWindow(t *testing.T, exp bool) []pmetric.Metrics {
	const dmax = 20 * time.Millisecond
	cfg := testConfig()
	cfg.Diagram = "e2e = a -> b;"
	cfg.WhatIf = map[string]map[string]string{"faster": {"b": "0.5*X"}}
	if exp {
		cfg.Histogram.Exponential = &ExponentialHistogramConfig{}
	}
	qoo := analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(5)}}},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(15)}}, MaxFailure: 0.5},
		MinRate: 1,
	}
	cfg.Probes = map[string]analysis.ProbeConfig{
		"e2e": {DMax: dmax, Bins: 20, QoO: qoo,
			QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 8 * time.Millisecond, P: 0.5}}, MaxFailure: 0.3},
			Triggers: analysis.Triggers{QTA: true, Failure: true, MaxDivergence: 0.5,
				SlackTrend: analysis.SlackTrendTrigger{Horizon: 10 * time.Second, Windows: 3}}},
		"a": {DMax: dmax, Bins: 20},
		"b": {DMax: dmax, Bins: 20},
	}
	// u, of no configuration, is forgotten while idle and seen again.
	cfg.ProbeIdleTimeout = 2 * time.Second
	h := newHarness(t, cfg, at(time.Second))
	mk := func(probe, oc string, end, delay time.Duration) span {
		return span{probe: probe, outcome: oc, end: end, delay: delay, dmax: dmax, bins: 20}
	}
	windows := [][]span{
		// Successes everywhere, e2e slowing from window to window.
		{mk("a", contract.Success, ms(100), ms(2.5)), mk("b", contract.Success, ms(100), ms(3.5)),
			mk("e2e", contract.Success, ms(200), ms(6)), mk("e2e", contract.Success, ms(300), ms(7)),
			mk("u", contract.Success, ms(100), ms(1.5)), mk("u", contract.Success, ms(200), ms(1.5)), mk("u", contract.Failure, ms(300), ms(1))},
		{mk("a", contract.Success, ms(100), ms(2.5)), mk("b", contract.Success, ms(100), ms(3.5)),
			mk("e2e", contract.Success, ms(200), ms(9)), mk("e2e", contract.Success, ms(300), ms(12))},
		// Failures and timeouts only.
		{mk("a", contract.Failure, ms(100), ms(1)), mk("b", contract.Timeout, ms(100), dmax),
			mk("e2e", contract.Failure, ms(200), ms(1)), mk("e2e", contract.Timeout, ms(300), dmax)},
		// One instance.
		{mk("e2e", contract.Success, ms(200), ms(19.5))},
		// Nothing.
		nil,
		// The inputs alone.
		{mk("a", contract.Success, ms(100), ms(2.5)), mk("b", contract.Success, ms(100), ms(3.5))},
		{mk("a", contract.Success, ms(100), ms(0.5)), mk("b", contract.Success, ms(100), ms(0.5)), mk("u", contract.Success, ms(100), ms(1.5)),
			mk("e2e", contract.Success, ms(200), ms(0.5)), mk("e2e", contract.Failure, ms(300), ms(1))},
	}
	for i, w := range windows {
		off := time.Duration(i) * time.Second
		for j := range w {
			w[j].end += off
		}
		if len(w) > 0 {
			// Trace and span ids, for the exemplars.
			td := instanceTraces(w...)
			td.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "shop")
			spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			for j := range spans.Len() {
				spans.At(j).SetTraceID(pcommon.TraceID{0: byte(i + 1), 15: byte(j + 1)})
				spans.At(j).SetSpanID(pcommon.SpanID{0: byte(i + 1), 7: byte(j + 1)})
			}
			require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
		}
		h.obs.tick(at(off + 2*time.Second))
	}
	mds := h.metrics.AllMetrics()
	require.Len(t, mds, len(windows))
	return mds
}

// TestOutputFollowsDataModel checks every batch of everyWindow, explicit
// and exponential (dataModel).
func TestOutputFollowsDataModel(t *testing.T) {
	for _, exp := range []bool{false, true} {
		t.Run(fmt.Sprintf("exponential=%v", exp), func(t *testing.T) {
			dm := newDataModel(t)
			names := map[string]bool{}
			for _, md := range everyWindow(t, exp) {
				dm.check(md)
				forEachMetric(md, func(m pmetric.Metric) { names[m.Name()] = true })
			}
			for _, want := range []string{contract.MetricObserved, contract.MetricOutcomes, contract.MetricDivergence,
				contract.MetricQTASlackTrendStdErr, contract.MetricQoOScore} {
				require.True(t, names[want], "no %s in %v", want, slices.Sorted(maps.Keys(names)))
			}
		})
	}
}
