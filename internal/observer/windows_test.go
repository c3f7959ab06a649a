// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/outcome"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// agentHarness is an observer with emit_windows whose resource names it.
func agentHarness(t *testing.T, name string, now time.Time) *harness {
	cfg := testConfig()
	cfg.EmitWindows = true
	return newHarnessWith(t, cfg, now, func(s *Settings) {
		r := pcommon.NewResource()
		r.Attributes().PutStr("service.instance.id", name)
		s.Telemetry.Resource = r
	})
}

// lastObserved returns, per probe, the last deltaq.observed point's bucket
// counts and the last deltaq.outcomes totals of h's output.
func lastObserved(t *testing.T, h *harness) (map[string][]uint64, map[string]map[string]int64) {
	t.Helper()
	hists := map[string][]uint64{}
	for p, dps := range observedHistograms(h) {
		hists[p] = dps[len(dps)-1].BucketCounts().AsRaw()
	}
	totals := map[string]map[string]int64{}
	for p := range hists {
		totals[p] = outcomeCounts(t, h, p)
	}
	return hists, totals
}

// TestGatewayMergesAgentsOverOTLP: three agents each see a third of the
// instances and send their windows as deltaq.window; a gateway that merges
// them emits what one observer that saw every instance emits, and says how
// many agents contributed to each window.
func TestGatewayMergesAgentsOverOTLP(t *testing.T) {
	start := at(time.Second)
	single := newHarness(t, testConfig(), start)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gateway := newHarness(t, gcfg, start)
	agents := make([]*harness, 3)
	for i := range agents {
		agents[i] = agentHarness(t, fmt.Sprintf("agent-%d", i), start)
	}
	const dm = 100 * time.Millisecond
	var specs []span
	for w := range 3 {
		for i := range 60 {
			end := time.Duration(w)*time.Second + time.Duration(i*15)*time.Millisecond + ms(1)
			s := span{probe: "p", outcome: outcome.Success, end: end, delay: ms(float64(1 + i%40)), dmax: dm, bins: 100}
			switch i % 10 {
			case 3:
				s.outcome = outcome.Failure
			case 7:
				s.delay = 150 * time.Millisecond // beyond dMax: a timeout
			}
			specs = append(specs, s)
		}
	}
	single.consume(specs...)
	for i, s := range specs {
		agents[i%3].consume(s)
	}
	for w := 2; w <= 5; w++ {
		now := at(time.Duration(w) * time.Second)
		single.obs.tick(now)
		for _, a := range agents {
			a.obs.tick(now)
		}
	}
	for _, a := range agents {
		for _, md := range a.metrics.AllMetrics() {
			require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
		}
	}
	gateway.obs.tick(at(7 * time.Second))

	wantH, wantT := lastObserved(t, single)
	gotH, gotT := lastObserved(t, gateway)
	assert.Equal(t, wantH, gotH, "the successes by bin")
	assert.Equal(t, wantT, gotT, "the outcome totals")
	// 180 instances: every tenth a failure, every tenth a timeout.
	assert.Equal(t, map[string]int64{"success": 144, "timeout": 18, "failure": 18}, gotT["p"])

	// Each of the three windows with instances had three contributors; the
	// gateway's other windows had none.
	var contributors []int64
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == outcome.MetricContributors {
				contributors = append(contributors, m.Gauge().DataPoints().At(0).IntValue())
			}
		})
	}
	require.NotEmpty(t, contributors)
	three := 0
	for _, c := range contributors {
		if c == 3 {
			three++
		} else {
			assert.Zero(t, c)
		}
	}
	assert.Equal(t, 3, three)
	assert.Equal(t, map[string]int64{"fate=accepted": 9},
		telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
}

// TestReadWindowRefusesWhatIsNotAWindow: a deltaq.window point whose
// bounds are not even bin edges, whose overflow bucket disagrees with its
// timeouts and failures, or that lacks them, is an invalid contribution.
func TestReadWindowRefusesWhatIsNotAWindow(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	p := probeResult(0.001, 1, 2, 3)
	p.Counts.Timeout, p.Counts.Failure = 1, 2
	md := b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}})
	var dp pmetric.HistogramDataPoint
	forEachMetric(md, func(m pmetric.Metric) {
		if m.Name() == outcome.MetricWindow {
			dp = m.Histogram().DataPoints().At(0)
		}
	})
	var w analysis.Window
	require.True(t, readWindow(dp, "a", &w, nil))
	assert.Equal(t, []uint64{1, 2, 3}, w.BinCounts)
	assert.Equal(t, int64(3_000_000), w.DMaxNs)
	assert.Equal(t, int64(1), w.Timeouts)
	assert.Equal(t, int64(2), w.Failures)

	for name, spoil := range map[string]func(pmetric.HistogramDataPoint){
		"uneven bounds":      func(d pmetric.HistogramDataPoint) { d.ExplicitBounds().SetAt(1, 0.0025) },
		"overflow disagrees": func(d pmetric.HistogramDataPoint) { d.BucketCounts().SetAt(3, 7) },
		"no timeouts":        func(d pmetric.HistogramDataPoint) { d.Attributes().Remove(outcome.AttrTimeout) },
		"no probe":           func(d pmetric.HistogramDataPoint) { d.Attributes().Remove(outcome.AttrProbe) },
	} {
		c := pmetric.NewHistogramDataPoint()
		dp.CopyTo(c)
		spoil(c)
		assert.False(t, readWindow(c, "a", &w, nil), name)
	}
}
