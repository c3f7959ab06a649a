// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// whatIfPoints returns, from the last batch, the points of a gauge of the
// series whatif, by scenario then by the value of key (deltaq.le or
// deltaq.q), and fails on a what-if point of another probe than job or
// without a scenario, or a scenario on another series.
func whatIfPoints(t *testing.T, h *harness, metric, key string) map[string]map[string]float64 {
	t.Helper()
	all := h.metrics.AllMetrics()
	require.NotEmpty(t, all)
	out := map[string]map[string]float64{}
	forEachMetric(all[len(all)-1], func(m pmetric.Metric) {
		if m.Type() != pmetric.MetricTypeGauge {
			return
		}
		dps := m.Gauge().DataPoints()
		for i := range dps.Len() {
			a := dps.At(i).Attributes()
			series, _ := a.Get(contract.AttrSeries)
			sc, hasScenario := a.Get(contract.AttrScenario)
			if series.Str() != contract.SeriesWhatIf {
				assert.False(t, hasScenario, "%s: series %q carries a scenario", m.Name(), series.Str())
				continue
			}
			require.Contains(t, []string{contract.MetricCDF, contract.MetricQuantile}, m.Name(), "what-if points only in deltaq.cdf and deltaq.quantile")
			if m.Name() != metric {
				continue
			}
			probe, _ := a.Get(contract.AttrProbe)
			require.Equal(t, "job", probe.Str(), "only the calculated probe has what-if series")
			require.True(t, hasScenario, "a what-if point without deltaq.scenario")
			require.Equal(t, 4, a.Len(), "deltaq.probe, deltaq.series, deltaq.scenario and %s", key)
			k, ok := a.Get(key)
			require.True(t, ok, "no %s", key)
			if out[sc.Str()] == nil {
				out[sc.Str()] = map[string]float64{}
			}
			out[sc.Str()][k.Str()] = dps.At(i).DoubleValue()
		}
	})
	return out
}

// TestWhatIfSeries: the what-if scenarios of job = a -> b reach the
// output as deltaq.cdf and deltaq.quantile points of series whatif, named
// by deltaq.scenario, one point per bin edge with cdf_points 0. Every a
// takes 10.5 ms, in the analysis bucket [a₀, a₁), every b 20.5 ms, in [b₀,
// b₁), each read uniform over its bucket (analysis.TestWhatIfKnownAnswer
// gives the conventions), and the result shown on job's grid w:
// faster (b′ = 0.5·b) lies within [a₀ + b₀/2, a₁ + b₁/2] and slower (a′ =
// 2·a) within [2a₀ + b₀, 2a₁ + b₁], each up to two grid bins either side,
// symmetric about the centre, where its median lies.
func TestWhatIfSeries(t *testing.T) {
	cfg := testConfig()
	cfg.Diagram = "job = a -> b;"
	cfg.CDFPoints = 0
	cfg.Quantiles = []float64{0.5}
	cfg.WhatIf = map[string]map[string]string{"faster": {"b": "0.5*X"}, "slower": {"a": "2*X"}}
	require.NoError(t, cfg.Check())
	h := newHarness(t, cfg, at(time.Second))
	var specs []span
	for i := range 4 {
		end := ms(100 + 100*float64(i))
		specs = append(specs,
			span{probe: "a", outcome: contract.Success, end: end, delay: ms(10.5), dmax: 100 * time.Millisecond, bins: 100},
			span{probe: "b", outcome: contract.Success, end: end, delay: ms(20.5), dmax: 100 * time.Millisecond, bins: 100})
	}
	h.consume(specs...)
	h.obs.tick(at(2 * time.Second))

	edges, err := deltaq.FineLayout().Edges()
	require.NoError(t, err)
	bucket := func(d time.Duration) (float64, float64) {
		j := deltaq.LogLinearBucket(edges, int64(d))
		return float64(edges[j]) / 1e9, float64(edges[j+1]) / 1e9
	}
	a0, a1 := bucket(ms(10.5))
	b0, b1 := bucket(ms(20.5))
	// job has no layout of its own: its curves are shown on the analysis
	// bins of the largest dMax, 100 ms (coarser than the diagram's grid,
	// of b₁).
	w := deltaq.AnalysisWidth(int64(100 * time.Millisecond))
	support := map[string][2]float64{"faster": {a0 + b0/2, a1 + b1/2}, "slower": {2*a0 + b0, 2*a1 + b1}}

	cdf := whatIfPoints(t, h, contract.MetricCDF, contract.AttrLE)
	require.Len(t, cdf, 2, "one curve per scenario")
	for sc, pts := range cdf {
		lo, hi := support[sc][0], support[sc][1]
		assert.GreaterOrEqual(t, len(pts), int(hi/w), "%s: a point at every bin edge", sc)
		for le, f := range pts {
			x, err := strconv.ParseFloat(le, 64)
			require.NoError(t, err)
			switch {
			case x < lo-2*w:
				assert.InDelta(t, 0, f, 1e-9, "%s F(%s) below the support", sc, le)
			case x > hi+2*w:
				assert.InDelta(t, 1, f, 1e-9, "%s F(%s) above the support", sc, le)
			}
		}
	}
	q := whatIfPoints(t, h, contract.MetricQuantile, contract.AttrQ)
	require.Len(t, q, 2)
	for sc, s := range support {
		assert.InDelta(t, (s[0]+s[1])/2, q[sc]["0.5"], 2*w, "%s median", sc)
	}
}

// TestWhatIfDecodes: the whatif option decodes from a component's section
// and its errors reach the component's check.
func TestWhatIfDecodes(t *testing.T) {
	c, err := decode(t, `
diagram: "job = payment -> email;"
whatif:
  faster_payment: {payment: 0.5*X, email: remove}
  new_mailer: {email: "exp(2ms) + never 1%"}
`)
	require.NoError(t, err)
	assert.Equal(t, map[string]map[string]string{
		"faster_payment": {"payment": "0.5*X", "email": "remove"},
		"new_mailer":     {"email": "exp(2ms) + never 1%"},
	}, c.WhatIf)
	require.NoError(t, c.Check())

	c, err = decode(t, `
diagram: "job = payment -> email;"
whatif: {faster_payment: {payments: 0.5*X}}
`)
	require.NoError(t, err)
	assert.ErrorContains(t, c.Check(), `whatif["faster_payment"]["payments"]: the outcome diagram has no probe payments (did you mean payment?)`)
}
