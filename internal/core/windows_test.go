// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// agentHarness is an observer with emit_windows whose resource names it.
func agentHarness(t *testing.T, name string, now time.Time) *harness {
	return agentHarnessWith(t, name, now, false)
}

// agentHarnessWith is agentHarness, with windows_only when windowsOnly.
func agentHarnessWith(t *testing.T, name string, now time.Time, windowsOnly bool) *harness {
	cfg := testConfig()
	cfg.EmitWindows = true
	cfg.WindowsOnly = windowsOnly
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
// many agents contributed to each window. With windows_only the agents
// send deltaq.window alone, and the gateway's result is the same.
func TestGatewayMergesAgentsOverOTLP(t *testing.T) {
	for _, windowsOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("windows_only=%v", windowsOnly), func(t *testing.T) { gatewayMergesAgents(t, windowsOnly) })
	}
}

// gatewayMergesAgents runs TestGatewayMergesAgentsOverOTLP with agents
// whose windows_only is windowsOnly.
func gatewayMergesAgents(t *testing.T, windowsOnly bool) {
	start := at(time.Second)
	single := newHarness(t, testConfig(), start)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	// The gateway pins the probe's layout, as the example gateway does.
	gcfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	logCore, logs := observer.New(zapcore.WarnLevel)
	gateway := newHarnessWith(t, gcfg, start, func(s *Settings) { s.Telemetry.Logger = zap.New(logCore) })
	agents := make([]*harness, 3)
	for i := range agents {
		agents[i] = agentHarnessWith(t, fmt.Sprintf("agent-%d", i), start, windowsOnly)
	}
	const dm = 100 * time.Millisecond
	var specs []span
	for w := range 3 {
		for i := range 60 {
			end := time.Duration(w)*time.Second + time.Duration(i*15)*time.Millisecond + ms(1)
			s := span{probe: "p", outcome: contract.Success, end: end, delay: ms(float64(1 + i%40)), dmax: dm, bins: 100}
			switch i % 10 {
			case 3:
				s.outcome = contract.Failure
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
	names := map[string]bool{}
	for _, a := range agents {
		for _, md := range a.metrics.AllMetrics() {
			forEachMetric(md, func(m pmetric.Metric) { names[m.Name()] = true })
			require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
		}
	}
	gateway.obs.tick(at(7 * time.Second))
	if windowsOnly {
		// The windows, and the word of the last window, without instances.
		assert.Equal(t, map[string]bool{contract.MetricWindow: true, contract.MetricWindowIdle: true}, names, "the agents' metrics")
	} else {
		assert.True(t, names[contract.MetricWindow] && names[contract.MetricObserved] && names[contract.MetricOutcomes], "the agents' metrics: %v", names)
	}

	wantH, wantT := lastObserved(t, single)
	gotH, gotT := lastObserved(t, gateway)
	assert.Equal(t, wantH, gotH, "the successes by bin")
	assert.Equal(t, wantT, gotT, "the outcome totals")
	// 180 instances: every tenth a failure, every tenth a timeout.
	assert.Equal(t, map[string]int64{"success": 144, "timeout": 18, "failure": 18}, gotT["p"])

	// Each of the three windows with instances had three contributors, and
	// so had the fourth the agents closed, without instances: they were up
	// and said so (deltaq.window.idle). The gateway's other windows, which
	// no agent closed, had none.
	var contributors []int64
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors {
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
	assert.Equal(t, 4, three)
	assert.Equal(t, map[string]int64{"fate=accepted": 9, "fate=idle": 3},
		telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
	assert.Zero(t, logs.Len(), "windows of the probe's layout: no warning")
}

// TestRepeatedDeliveryCountsOnce: an agent's request delivered twice (an
// exporter's retry of a request the gateway had taken) adds its windows
// once, the repeats counted as duplicate; the same agent restarted under
// its name (a later deltaq.agent.start) sends windows of its own, which
// count. The word of the window before, which the agents were up in and
// closed without instances (deltaq.window.idle), is a repeat alike.
func TestRepeatedDeliveryCountsOnce(t *testing.T) {
	start := at(200 * time.Millisecond)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gateway := newHarness(t, gcfg, start)
	agent := agentHarness(t, "agent-0", start)
	restarted := agentHarness(t, "agent-0", start.Add(500*time.Millisecond))
	spec := span{probe: "p", outcome: contract.Success, end: time.Second + ms(700), delay: ms(5), dmax: 100 * time.Millisecond, bins: 100}
	agent.consume(spec)
	restarted.consume(spec)
	for _, a := range []*harness{agent, restarted} {
		a.obs.tick(at(3 * time.Second))
	}
	for _, a := range []*harness{agent, agent, restarted} {
		for _, md := range a.metrics.AllMetrics() {
			require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
		}
	}
	gateway.obs.tick(at(5 * time.Second))
	_, totals := lastObserved(t, gateway)
	assert.Equal(t, map[string]int64{"success": 2, "timeout": 0, "failure": 0}, totals["p"], "once each agent's start")
	assert.Equal(t, map[string]int64{"fate=accepted": 2, "fate=idle": 2, "fate=duplicate": 2},
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
	dp := windowPoint(t, md)
	var w analysis.Window
	require.True(t, readWindow(dp, "a", &w, freshReader()))
	assert.Equal(t, []int{0, 1, 2}, w.BinIndex)
	assert.Equal(t, []uint64{1, 2, 3}, w.BinCounts)
	assert.Equal(t, int64(3_000_000), w.DMaxNs)
	assert.Equal(t, int64(1), w.Timeouts)
	assert.Equal(t, int64(2), w.Failures)

	for name, spoil := range map[string]func(pmetric.HistogramDataPoint){
		"uneven bounds":      func(d pmetric.HistogramDataPoint) { d.ExplicitBounds().SetAt(1, 0.0025) },
		"overflow disagrees": func(d pmetric.HistogramDataPoint) { d.BucketCounts().SetAt(3, 7) },
		"no timeouts":        func(d pmetric.HistogramDataPoint) { d.Attributes().Remove(contract.AttrTimeout) },
		"no probe":           func(d pmetric.HistogramDataPoint) { d.Attributes().Remove(contract.AttrProbe) },
	} {
		c := pmetric.NewHistogramDataPoint()
		dp.CopyTo(c)
		spoil(c)
		assert.False(t, readWindow(c, "a", &w, freshReader()), name)
	}
}

// TestReadWindowRefusesAttributesOfOtherTypes: a point whose timeouts or
// failures are not integers, whose analysis counts are not bytes or
// whose weights are not floats, or that has weights without analysis
// counts, is not a window; one of every attribute of its type is.
func TestReadWindowRefusesAttributesOfOtherTypes(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	p := probeResult(0.001, 1, 2, 3)
	p.Counts.Timeout, p.Counts.Failure = 1, 2
	dp := windowPoint(t, b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}}))
	putFine(dp.Attributes(), &analysis.Window{Fine: true, FineIndex: []int{3, 9}, FineCounts: []uint64{1, 2}, WeightSum: 6, WeightSquares: 6}, nil)
	var w analysis.Window
	require.True(t, readWindow(dp, "a", &w, freshReader()))
	assert.Equal(t, []int{3, 9}, w.FineIndex)
	assert.Equal(t, 6.0, w.WeightSum)

	for name, spoil := range map[string]func(pcommon.Map){
		"timeouts a string":          func(a pcommon.Map) { a.PutStr(contract.AttrTimeout, "1") },
		"failures a float":           func(a pcommon.Map) { a.PutDouble(contract.AttrFailure, 2) },
		"analysis counts a string":   func(a pcommon.Map) { a.PutStr(contract.AttrFine, "x") },
		"analysis counts not a form": func(a pcommon.Map) { a.PutEmptyBytes(contract.AttrFine).FromRaw([]byte{7}) },
		"weight sum an integer":      func(a pcommon.Map) { a.PutInt(contract.AttrWeightSum, 6) },
		"weight squares a string":    func(a pcommon.Map) { a.PutStr(contract.AttrWeightSquares, "6") },
		"weights without counts":     func(a pcommon.Map) { a.Remove(contract.AttrFine) },
	} {
		c := pmetric.NewHistogramDataPoint()
		dp.CopyTo(c)
		spoil(c.Attributes())
		assert.False(t, readWindow(c, "a", &w, freshReader()), name)
	}
}

// TestReadWindowIntoUsedWindow: a point read into a window that held
// another, every field set, reads as into a fresh one: readWindow empties
// each field the point may leave unset (here no agent start, no analysis
// counts, no weights, no log-linear buckets).
func TestReadWindowIntoUsedWindow(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	p := probeResult(0.001, 1, 0, 3)
	p.Counts.Timeout = 1
	dp := windowPoint(t, b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}}))
	dp.Attributes().Remove(contract.AttrAgentStart)
	var fresh analysis.Window
	require.True(t, readWindow(dp, "a", &fresh, freshReader()))

	used := analysis.Window{
		Probe: "other", Start: at(5 * time.Second), End: at(6 * time.Second),
		DMaxNs: 7, Bins: 8, LogLinear: deltaq.LogLinear{Factor: 2, Low: 1, High: 7, Steps: 1},
		BinIndex: []int{1, 2}, BinCounts: []uint64{3, 4}, SuccessSum: 9, Timeouts: 10, Failures: 11,
		Fine: true, FineIndex: []int{12}, FineFirst: 13, FineCounts: []uint64{14},
		WeightSum: 15, WeightSquares: 16, Source: "b", SourceStart: 17,
	}
	// A field added to analysis.Window must be set above, and emptied by
	// readWindow when a point may leave it unset.
	for i, v := 0, reflect.ValueOf(used); i < v.NumField(); i++ {
		require.False(t, v.Field(i).IsZero(), "analysis.Window.%s not set", v.Type().Field(i).Name)
	}
	require.True(t, readWindow(dp, "a", &used, freshReader()))
	// The buffers are kept: empty where fresh has none.
	for _, w := range []*analysis.Window{&fresh, &used} {
		if len(w.FineIndex) == 0 {
			w.FineIndex = nil
		}
		if len(w.FineCounts) == 0 {
			w.FineCounts = nil
		}
	}
	assert.Equal(t, fresh, used)
}

// windowPoint returns the one deltaq.window point of md.
func windowPoint(t *testing.T, md pmetric.Metrics) pmetric.HistogramDataPoint {
	t.Helper()
	var dp pmetric.HistogramDataPoint
	n := 0
	forEachMetric(md, func(m pmetric.Metric) {
		if m.Name() == contract.MetricWindow {
			dp = m.Histogram().DataPoints().At(0)
			n += m.Histogram().DataPoints().Len()
		}
	})
	require.Equal(t, 1, n, "deltaq.window points")
	return dp
}

// TestSparseWindowOnTheWire: a window of 1000 bins of which 4 are occupied
// goes out as 7 buckets — the first bin, each occupied bin, one empty
// bucket per run of empty bins, dMax — and reads back to its occupied
// bins exactly; a bucket spanning empty bins that holds a count, or a
// bound between two edges, is refused.
func TestSparseWindowOnTheWire(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	counts := make([]uint64, 1000)
	counts[0], counts[5], counts[6], counts[500] = 1, 2, 3, 4
	p := probeResult(0.001, counts...)
	p.Counts.Timeout = 2
	dp := windowPoint(t, b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}}))
	assert.Equal(t, []float64{0.001, 0.005, 0.006, 0.007, 0.5, 0.501, 1}, dp.ExplicitBounds().AsRaw())
	assert.Equal(t, []uint64{1, 0, 2, 3, 0, 4, 0, 2}, dp.BucketCounts().AsRaw())
	var w analysis.Window
	require.True(t, readWindow(dp, "a", &w, freshReader()))
	assert.Equal(t, []int{0, 5, 6, 500}, w.BinIndex)
	assert.Equal(t, []uint64{1, 2, 3, 4}, w.BinCounts)
	assert.Equal(t, 1000, w.Bins)
	assert.Equal(t, int64(time.Second), w.DMaxNs)

	// A window of timeouts alone has no occupied bin: two buckets, and it
	// reads, into a fresh window, as sparse and empty — not as dense.
	to := probeResult(0.001, make([]uint64, 1000)...)
	to.Counts.Timeout = 7
	tdp := windowPoint(t, b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{to}}))
	assert.Equal(t, []float64{0.001, 1}, tdp.ExplicitBounds().AsRaw())
	var fresh analysis.Window
	require.True(t, readWindow(tdp, "a", &fresh, freshReader()))
	require.NotNil(t, fresh.BinIndex)
	e, err := analysis.New(analysis.Config{Probes: map[string]analysis.ProbeConfig{"p": {DMax: time.Second, Bins: 1000}}}, t0)
	require.NoError(t, err)
	assert.Equal(t, analysis.ContributionAccepted, e.AddWindow(&fresh))

	for name, spoil := range map[string]func(pmetric.HistogramDataPoint){
		"a count in a run of empty bins": func(d pmetric.HistogramDataPoint) { d.BucketCounts().SetAt(1, 1) },
		"a bound between edges":          func(d pmetric.HistogramDataPoint) { d.ExplicitBounds().SetAt(1, 0.0055) },
		"bounds out of order":            func(d pmetric.HistogramDataPoint) { d.ExplicitBounds().SetAt(2, 0.004) },
		"NaN dMax":                       func(d pmetric.HistogramDataPoint) { d.ExplicitBounds().SetAt(6, math.NaN()) },
	} {
		c := pmetric.NewHistogramDataPoint()
		dp.CopyTo(c)
		spoil(c)
		assert.False(t, readWindow(c, "a", &w, freshReader()), name)
	}
}

// TestLogLinearWindowOnTheWire: a log-linear probe's window carries its
// buckets' edges, factor and steps, and reads back to its layout and
// bucket counts.
func TestLogLinearWindowOnTheWire(t *testing.T) {
	ll := deltaq.LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}
	edges, err := ll.Edges()
	require.NoError(t, err)
	counts := make([]uint64, len(edges)-1)
	counts[3], counts[20] = 5, 1
	upper := make([]float64, len(counts))
	for i := range upper {
		upper[i] = float64(edges[i+1]) / 1e9
	}
	p := analysis.ProbeResult{Name: "ll", Width: 0.001, Bins: 10000, BinCounts: counts, Edges: upper, LogLinear: ll,
		Counts: analysis.Counts{Success: 6, Failure: 1}}
	p.SuccessSum = 5*float64(edges[3])/1e9 + float64(edges[20])/1e9
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	dp := windowPoint(t, b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}}))
	var w analysis.Window
	require.True(t, readWindow(dp, "a", &w, freshReader()))
	assert.Equal(t, ll, w.LogLinear)
	assert.Equal(t, len(counts), w.Bins)
	assert.Equal(t, []int{3, 20}, w.BinIndex)
	assert.Equal(t, []uint64{5, 1}, w.BinCounts)
	assert.Equal(t, int64(1), w.Failures)

	e, err := analysis.New(analysis.Config{Probes: map[string]analysis.ProbeConfig{"ll": {Binning: &deltaq.BinningConfig{
		Kind: deltaq.BinningLogLinear, Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10}}}}, t0)
	require.NoError(t, err)
	assert.Equal(t, analysis.ContributionAccepted, e.AddWindow(&w))
}

// TestCopyCounts: the dense counts are copied whole, for lengths around
// the four counts copyCounts moves a round.
func TestCopyCounts(t *testing.T) {
	for n := range 10 {
		src := pcommon.NewUInt64Slice()
		for i := range n + 1 {
			src.Append(uint64(1000*i + 7))
		}
		got := copyCounts(make([]uint64, n), src)
		require.Equal(t, src.AsRaw()[:n], got, "%d counts", n)
	}
}

// TestConcurrentRequestsMergeAsSequential: agents' requests of 80 windows
// each — dense and sparse, more than one batch of the engine's at a time,
// one point spoiled — given to a gateway's ConsumeMetrics from several
// goroutines at once merge to what the same requests give one after the
// other, with the same fates.
func TestConcurrentRequestsMergeAsSequential(t *testing.T) {
	start := at(time.Second)
	const probes = 80
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gcfg.Probes = map[string]analysis.ProbeConfig{}
	for p := range probes {
		gcfg.Probes[fmt.Sprintf("p%02d", p)] = analysis.ProbeConfig{DMax: 100 * time.Millisecond, Bins: 100}
	}
	var requests []pmetric.Metrics
	for a := range 6 {
		agent := agentHarness(t, fmt.Sprintf("agent-%d", a), start)
		var specs []span
		for p := range probes {
			n := 3 // sparse
			if p%2 == 0 {
				n = 60 // dense: more than a quarter of the bins occupied
			}
			for i := range n {
				end := time.Duration(i%3)*time.Second + time.Duration(i*5+a)*time.Millisecond + ms(1)
				specs = append(specs, span{probe: fmt.Sprintf("p%02d", p), outcome: contract.Success, end: end,
					delay: ms(float64(1 + (i*7+a+p)%95)), dmax: 100 * time.Millisecond, bins: 100})
			}
		}
		agent.consume(specs...)
		for w := 2; w <= 5; w++ {
			agent.obs.tick(at(time.Duration(w) * time.Second))
		}
		requests = append(requests, agent.metrics.AllMetrics()...)
	}
	// One point spoiled: its overflow bucket disagrees with its attributes.
	spoiled := false
	forEachMetric(requests[0], func(m pmetric.Metric) {
		if m.Name() == contract.MetricWindow && !spoiled {
			dp := m.Histogram().DataPoints().At(0)
			dp.BucketCounts().SetAt(dp.BucketCounts().Len()-1, 12345)
			spoiled = true
		}
	})
	require.True(t, spoiled)

	sequential, concurrent := newHarness(t, gcfg, start), newHarness(t, gcfg, start)
	for _, md := range requests {
		require.NoError(t, sequential.obs.ConsumeMetrics(context.Background(), md))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(requests); i += 4 {
				assert.NoError(t, concurrent.obs.ConsumeMetrics(context.Background(), requests[i]))
			}
		})
	}
	wg.Wait()
	for _, h := range []*harness{sequential, concurrent} {
		h.obs.tick(at(7 * time.Second))
	}
	wantH, wantT := lastObserved(t, sequential)
	gotH, gotT := lastObserved(t, concurrent)
	require.Len(t, wantH, probes)
	assert.Equal(t, wantH, gotH, "the successes by bin")
	assert.Equal(t, wantT, gotT, "the outcome totals")
	fates := telemetrytest.Points(t, sequential.tel, "otelcol_exporter_deltaq_contributions")
	assert.Equal(t, int64(1), fates["fate=invalid"], "the spoiled point")
	assert.Positive(t, fates["fate=accepted"])
	assert.Equal(t, fates, telemetrytest.Points(t, concurrent.tel, "otelcol_exporter_deltaq_contributions"))
}

// freshReader returns a reader of a new, empty cache of window layouts.
func freshReader() *wireReader {
	r := newWireCache().reader()
	return &r
}

// TestUnpinnedGatewayMergesOtherLayouts: two agents judge a probe by two
// layouts — 100 bins up to 100 ms and 50 up to 200 ms — and a gateway that
// pins nothing accepts every window from the first (the probe takes the
// first window's layout, the other's display counts are read from its
// analysis counts): its totals, by 100 ms, and its quantiles, read at the
// analysis resolution, are those of one observer that saw every instance
// by 100 ms. Before windows carried their analysis counts, such a gateway
// refused every window of a layout fewer than layout_quorum agents sent.
func TestUnpinnedGatewayMergesOtherLayouts(t *testing.T) {
	start := at(time.Second)
	scfg := testConfig()
	scfg.Quantiles = []float64{0.25, 0.5, 0.9}
	single := newHarness(t, scfg, start)
	gcfg := scfg
	gcfg.Lag = 2 * time.Second
	logCore, logs := observer.New(zapcore.WarnLevel)
	gateway := newHarnessWith(t, gcfg, start, func(s *Settings) { s.Telemetry.Logger = zap.New(logCore) })
	agents := []*harness{agentHarness(t, "agent-0", start), agentHarness(t, "agent-1", start)}
	// One window: a timeout's window, by start + dMax, is the window of its
	// end under either layout.
	for i := range 120 {
		end := time.Duration(i*8)*time.Millisecond + ms(1)
		s := span{probe: "p", outcome: contract.Success, end: end, delay: ms(float64(1 + i%40)), dmax: 100 * time.Millisecond, bins: 100}
		switch i % 10 {
		case 3:
			s.outcome = contract.Failure
		case 7:
			s.delay = 150 * time.Millisecond // beyond 100 ms, within 200 ms
		}
		single.consume(s)
		if i%2 == 1 {
			s.dmax, s.bins = 200*time.Millisecond, 50
		}
		agents[i%2].consume(s)
	}
	for w := 2; w <= 4; w++ {
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
	_, wantT := lastObserved(t, single)
	_, gotT := lastObserved(t, gateway)
	assert.Equal(t, wantT, gotT, "the outcome totals")
	assert.Equal(t, map[string]int64{"success": 96, "timeout": 12, "failure": 12}, gotT["p"])
	assert.Equal(t, probeQuantiles(single, "p", contract.SeriesObserved), probeQuantiles(gateway, "p", contract.SeriesObserved), "the quantiles")
	fates := telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions")
	// Each agent's two other windows had no instance: their word counts it.
	assert.Equal(t, map[string]int64{"fate=accepted": 2, "fate=idle": 4}, fates, "every window accepted")
	// The gateway says so, once: it accepted them silently, and a probe
	// whose agents have dmax: auto stayed in their learning phase's layout.
	warned := logs.FilterField(zap.String("probe", "p")).All()
	if assert.Len(t, warned, 1) {
		assert.Contains(t, warned[0].Message, "probe p: agents' windows of another layout are read into the probe's (100ms in 100 bins)")
	}
}

// TestFineCountsOnTheWire: a window's analysis counts go out as varints in
// one bytes attribute — pairs for scattered buckets, a run for mostly
// occupied ones — and come back as they were; bytes that end inside a
// varint, an unknown form, or an attribute of another type are not a
// window's.
func TestFineCountsOnTheWire(t *testing.T) {
	w := analysis.Window{Fine: true, FineIndex: []int{0, 1, 700, 2368}, FineCounts: []uint64{3, 1 << 40, 1, 7}, WeightSum: 12, WeightSquares: 40}
	a := pcommon.NewMap()
	putFine(a, &w, nil)
	v, ok := a.Get(contract.AttrFine)
	require.True(t, ok)
	var got analysis.Window
	require.True(t, readFine(v, &got))
	assert.Equal(t, w.FineIndex, got.FineIndex)
	assert.Equal(t, w.FineCounts, got.FineCounts)
	raw := v.Bytes().AsRaw()
	v.Bytes().FromRaw(raw[:len(raw)-1])
	assert.False(t, readFine(v, &analysis.Window{}), "bytes that end inside a varint")
	assert.False(t, readFine(pcommon.NewValueInt(3), &analysis.Window{}), "an integer")

	// Mostly occupied: a run from the first bucket, its gaps as zeros.
	w = analysis.Window{Fine: true, FineIndex: []int{10, 11, 13}, FineCounts: []uint64{2, 300, 4}}
	a = pcommon.NewMap()
	putFine(a, &w, nil)
	v, _ = a.Get(contract.AttrFine)
	got = analysis.Window{}
	require.True(t, readFine(v, &got))
	assert.Nil(t, got.FineIndex, "a run")
	assert.Equal(t, 10, got.FineFirst)
	assert.Equal(t, []uint64{2, 300, 0, 4}, got.FineCounts)
	v.Bytes().FromRaw([]byte{2, 0})
	assert.False(t, readFine(v, &analysis.Window{}), "an unknown form")
}

// TestFineReadInPlace: the analysis counts decoded from pdata's bytes in
// place read what a decoder of the bytes copied out reads (fineFromRaw,
// the reader before), for the two forms and each count width, and refuse
// the same malformed bytes: random ones, runs cut inside a count, varints
// that overflow 64 bits or end early.
func TestFineReadInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	var inputs [][]byte
	for _, width := range []int{1, 2, 4, 8} {
		for _, n := range []int{1, 7, 8, 9, 700} {
			w := analysis.Window{Fine: true}
			for j := range n {
				w.FineIndex = append(w.FineIndex, 40+j)
				w.FineCounts = append(w.FineCounts, rng.Uint64N(1<<(8*width-1))+1)
			}
			// One count that needs the width.
			w.FineCounts[n-1] = 1 << (8*width - 1)
			if width == 8 {
				w.FineCounts[n-1] = math.MaxUint64
			}
			a := pcommon.NewMap()
			putFine(a, &w, nil)
			v, _ := a.Get(contract.AttrFine)
			raw := v.Bytes().AsRaw()
			require.Equal(t, byte(fineRun), raw[0])
			require.Equal(t, byte(width), raw[1], "%d counts", n)
			inputs = append(inputs, raw, raw[:len(raw)-1], raw[:2], raw[:1])
			if n < 3 {
				continue
			}
			// The same counts scattered: the pair form.
			for j := range w.FineIndex {
				w.FineIndex[j] = 3 * j * j
			}
			a = pcommon.NewMap()
			putFine(a, &w, nil)
			v, _ = a.Get(contract.AttrFine)
			raw = v.Bytes().AsRaw()
			require.Equal(t, byte(fineSparse), raw[0])
			inputs = append(inputs, raw, raw[:len(raw)-1])
		}
	}
	// Runs of pairs of one byte each, scattered by steps of 2 to 126 (too
	// scattered for a run), with a pair of longer varints after some.
	for _, n := range []int{3, 4, 5, 8, 9, 300} {
		w := analysis.Window{Fine: true}
		at := 0
		for j := range n {
			at += 3 + int(rng.Uint32N(125))
			if j%7 == 6 {
				at += 200
			}
			w.FineIndex = append(w.FineIndex, at)
			w.FineCounts = append(w.FineCounts, uint64(rng.Uint32N(128)))
		}
		w.FineCounts[n-1] = 1000
		a := pcommon.NewMap()
		putFine(a, &w, nil)
		v, _ := a.Get(contract.AttrFine)
		raw := v.Bytes().AsRaw()
		require.Equal(t, byte(fineSparse), raw[0])
		inputs = append(inputs, raw, raw[:len(raw)-1])
	}
	// Varints of 10 bytes and beyond, and at the limits of an index.
	inputs = append(inputs,
		[]byte{fineSparse, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		[]byte{fineSparse, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		[]byte{fineSparse, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
		[]byte{fineSparse, 0xff, 0xff, 0xff, 0xff, 0x07, 1},
		[]byte{fineSparse, 0xfe, 0xff, 0xff, 0xff, 0x07, 1, 0, 1},
		[]byte{fineRun, 1, 0xff, 0xff, 0xff, 0xff, 0x07, 9},
		[]byte{fineRun, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 9},
		[]byte{fineRun, 3, 0, 1, 2, 3},
		[]byte{fineRun, 2, 0, 1, 2, 3},
		[]byte{fineRun, 2, 0, 1, 2, 3, 4},
		[]byte{}, []byte{2}, []byte{fineRun})
	for range 2000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.Uint32())
			if rng.IntN(3) == 0 {
				b[i] &= 0x7f
			}
		}
		if len(b) > 0 {
			b[0] %= 2
		}
		inputs = append(inputs, b)
	}
	for _, raw := range inputs {
		v := pcommon.NewValueBytes()
		v.Bytes().FromRaw(raw)
		var got analysis.Window
		ok := readFine(v, &got)
		want, wantOK := fineFromRaw(raw)
		require.Equal(t, wantOK, ok, "% x", raw)
		if ok {
			// An empty list of pairs reads as nil or empty: no count either way.
			if len(got.FineCounts) == 0 {
				got.FineIndex, got.FineCounts, want.FineIndex, want.FineCounts = nil, nil, nil, nil
			}
			assert.Equal(t, want.FineIndex, got.FineIndex, "% x", raw)
			assert.Equal(t, want.FineFirst, got.FineFirst, "% x", raw)
			assert.Equal(t, want.FineCounts, got.FineCounts, "% x", raw)
		}
	}
}

// fineFromRaw decodes putFine's bytes from a plain slice, with the
// standard library's varints and little-endian words: the reference
// readFine is held to.
func fineFromRaw(b []byte) (analysis.Window, bool) {
	var w analysis.Window
	if len(b) == 0 || b[0] > fineRun {
		return w, false
	}
	if b[0] == fineRun {
		if len(b) < 2 {
			return w, false
		}
		width := int(b[1])
		first, n := binary.Uvarint(b[2:])
		if (width != 1 && width != 2 && width != 4 && width != 8) || n <= 0 || first > math.MaxInt32 || (len(b)-2-n)%width != 0 {
			return w, false
		}
		w.FineFirst, w.FineCounts = int(first), []uint64{}
		for rest := b[2+n:]; len(rest) > 0; rest = rest[width:] {
			var word [8]byte
			copy(word[:], rest[:width])
			w.FineCounts = append(w.FineCounts, binary.LittleEndian.Uint64(word[:]))
		}
		return w, true
	}
	w.FineIndex, w.FineCounts = []int{}, []uint64{}
	prev := -1
	for rest := b[1:]; len(rest) > 0; {
		d, n := binary.Uvarint(rest)
		if n <= 0 || d > math.MaxInt32 || prev+int(d)+1 > math.MaxInt32 {
			return w, false
		}
		c, m := binary.Uvarint(rest[n:])
		if m <= 0 {
			return w, false
		}
		rest = rest[n+m:]
		prev += int(d) + 1
		w.FineIndex, w.FineCounts = append(w.FineIndex, prev), append(w.FineCounts, c)
	}
	return w, true
}

// TestWindowTimesRemembered: the times of a request's windows, converted
// once for a run of windows that share a timestamp (timeOf), are each
// window's own, the Unix epoch's included.
func TestWindowTimesRemembered(t *testing.T) {
	var c timeOf
	for _, ts := range []pcommon.Timestamp{0, 0, 5e9, 5e9, 6e9, 0, 6e9} {
		if got, want := c.at(ts), ts.AsTime(); !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("timestamp %d: %v, want %v", ts, got, want)
		}
	}
}

// TestQTABeyondDMaxWarned: a probe whose QTA has a point beyond its dMax
// (a processor's dmax: auto that chose 100 ms under a QTA of 500 ms) reads
// the instances between the two as late; the observer says so, once a
// probe. A probe whose QTA lies within its dMax is not warned about.
func TestQTABeyondDMaxWarned(t *testing.T) {
	cfg := testConfig()
	qta := func(last time.Duration) analysis.QTA {
		return analysis.QTA{Points: []analysis.QTAPoint{{Delay: 50 * time.Millisecond, P: 0.5}, {Delay: last, P: 0.9}}}
	}
	cfg.Probes = map[string]analysis.ProbeConfig{
		"p": {DMax: 100 * time.Millisecond, Bins: 100, QTA: qta(500 * time.Millisecond)},
		"q": {DMax: 100 * time.Millisecond, Bins: 100, QTA: qta(100 * time.Millisecond)},
	}
	logCore, logs := observer.New(zapcore.WarnLevel)
	h := newHarnessWith(t, cfg, at(time.Second), func(s *Settings) { s.Telemetry.Logger = zap.New(logCore) })
	for w := range 3 {
		for _, probe := range []string{"p", "q"} {
			h.consume(span{probe: probe, outcome: contract.Success, end: time.Duration(w)*time.Second + ms(500), delay: ms(20), dmax: 100 * time.Millisecond, bins: 100})
		}
		h.obs.tick(at(time.Duration(w+2) * time.Second))
	}
	warned := logs.All()
	if assert.Len(t, warned, 1) {
		assert.Equal(t, "probe p: its QTA's last point, 500ms, is beyond its dMax, 100ms: the instances between the two are timeouts, "+
			"which the point reads as late; raise the probe's dmax (or the dmax_min of a processor's dmax: auto probe) to the QTA's last point",
			warned[0].Message)
	}
}
