// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/outcome"
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
			series, _ := a.Get(outcome.AttrSeries)
			sc, hasScenario := a.Get(outcome.AttrScenario)
			if series.Str() != outcome.SeriesWhatIf {
				assert.False(t, hasScenario, "%s: series %q carries a scenario", m.Name(), series.Str())
				continue
			}
			require.Contains(t, []string{outcome.MetricCDF, outcome.MetricQuantile}, m.Name(), "what-if points only in deltaq.cdf and deltaq.quantile")
			if m.Name() != metric {
				continue
			}
			probe, _ := a.Get(outcome.AttrProbe)
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
// by deltaq.scenario. On 1 ms bins, every a at 10.5 ms (bin 10) and every
// b at 20.5 ms (bin 20), by hand (analysis.TestWhatIfKnownAnswer gives
// the conventions): a ⊗ b is ½ in bins 30 and 31, median 31 ms; faster
// (b′ = 0.5·b, bin 10) is ½ in bins 20 and 21: F(20 ms) = 0, F(21 ms) =
// ½, F(22 ms) = 1, median 21 ms; slower (a′ = 2·a, uniform on [20, 22)
// ms, ½ in bins 20 and 21) with b gives ½ at the index sums 40 and 41,
// so ¼, ½ and ¼ in bins 40, 41 and 42: F(41 ms) = ¼, F(42 ms) = ¾,
// F(43 ms) = 1, and the median, linear inside bin 41, 41.5 ms. The
// convolutions have 200 bins: with cdf_points 0, 200 points.
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
			span{probe: "a", outcome: outcome.Success, end: end, delay: ms(10.5), dmax: 100 * time.Millisecond, bins: 100},
			span{probe: "b", outcome: outcome.Success, end: end, delay: ms(20.5), dmax: 100 * time.Millisecond, bins: 100})
	}
	h.consume(specs...)
	h.obs.tick(at(2 * time.Second))

	cdf := whatIfPoints(t, h, outcome.MetricCDF, outcome.AttrLE)
	require.Len(t, cdf, 2, "one curve per scenario")
	for sc, pts := range cdf {
		assert.Len(t, pts, 200, "%s: every bin edge of the 200-bin convolution", sc)
	}
	near := func(want, got float64, what string) {
		t.Helper()
		assert.True(t, math.Abs(want-got) < 1e-12, "%s = %v, want %v", what, got, want)
	}
	for le, want := range map[string]float64{"0.02": 0, "0.021": 0.5, "0.022": 1, "0.2": 1} {
		near(want, cdf["faster"][le], "faster F("+le+")")
	}
	for le, want := range map[string]float64{"0.04": 0, "0.041": 0.25, "0.042": 0.75, "0.043": 1} {
		near(want, cdf["slower"][le], "slower F("+le+")")
	}

	q := whatIfPoints(t, h, outcome.MetricQuantile, outcome.AttrQ)
	require.Len(t, q, 2)
	near(0.021, q["faster"]["0.5"], "faster median")
	near(0.0415, q["slower"]["0.5"], "slower median")
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
	assert.ErrorContains(t, c.Check(), `whatif["faster_payment"]["payments"]: the outcome diagram has no probe payments`)
}
