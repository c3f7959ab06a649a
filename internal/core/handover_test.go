// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/reload"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestReloadCarriesTheOpenWindowAndTheStreams: an observer shut down as
// part of a configuration reload emits nothing of its open window and hands
// it to the observer of the same component that the reload builds; the
// window then closes there with all its instances, under the new QTA, and
// the cumulative series continue with their start times.
func TestReloadCarriesTheOpenWindowAndTheStreams(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100,
		QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 10 * time.Millisecond, P: 0.5}}}}}
	old := newHarnessWith(t, cfg, at(time.Second), withID)
	ok := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	old.consume(ok(ms(100)), ok(ms(200)))
	old.obs.tick(at(2 * time.Second))
	old.consume(ok(time.Second+ms(100)), ok(time.Second+ms(300)), ok(time.Second+ms(500)))
	before := len(old.metrics.AllMetrics())

	ho.Requested()
	require.NoError(t, old.obs.Shutdown(context.Background()))
	assert.Len(t, old.metrics.AllMetrics(), before, "the open window is not flushed")

	cfg2 := testConfig()
	cfg2.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100,
		QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 30 * time.Millisecond, P: 0.5}}}}}
	nu := newHarnessWith(t, cfg2, at(2*time.Second+ms(500)), withID)
	nu.obs.tick(at(3 * time.Second))

	assert.Equal(t, map[string]int64{"success": 5, "timeout": 0, "failure": 0}, outcomeCounts(t, nu, "p"),
		"the two instances of window 1 and the three of the open window, once each")
	first, last := observedHistograms(old)["p"][0], observedHistograms(nu)["p"]
	require.Len(t, last, 1)
	assert.Equal(t, first.StartTimestamp(), last[0].StartTimestamp(), "one stream across the reload")
	assert.Equal(t, uint64(5), last[0].Count())
	assert.Equal(t, map[string]float64{"p": 0}, gaugeValues(t, nu, contract.MetricQTAViolation),
		"the new QTA (50 % by 30 ms) holds for 20 ms delays; the old one (by 10 ms) did not")
}

// TestReloadToAnotherIntervalFlushesTheOpenWindows: a reload that changes
// the interval carries nothing over (the windows of the two intervals do
// not line up), so the open windows its predecessor handed over close when
// the reloaded observer starts, as at a stop: their instances count once,
// in the predecessor's streams, and the new streams start afresh. They
// were lost: 3 of the 5 instances were never counted.
func TestReloadToAnotherIntervalFlushesTheOpenWindows(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	old := newHarnessWith(t, cfg, at(time.Second), withID)
	ok := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	old.consume(ok(ms(100)), ok(ms(200)))
	old.obs.tick(at(2 * time.Second)) // closes [0, 1 s)
	old.consume(ok(time.Second+ms(100)), ok(time.Second+ms(300)), ok(2*time.Second+ms(100)))
	ho.Requested()
	require.NoError(t, old.obs.Shutdown(context.Background()))

	cfg2 := testConfig()
	cfg2.Interval = 2 * time.Second
	cfg2.Probes = cfg.Probes
	nu := newHarnessWith(t, cfg2, at(2*time.Second+ms(500)), withID)
	assert.Equal(t, map[string]int64{"success": 5, "timeout": 0, "failure": 0}, outcomeCounts(t, nu, "p"),
		"the two instances of window 0, counted before the reload, and the three of the open windows")
	hs := observedHistograms(nu)["p"]
	require.NotEmpty(t, hs)
	assert.Equal(t, observedHistograms(old)["p"][0].StartTimestamp(), hs[len(hs)-1].StartTimestamp(),
		"the predecessor's stream, to its end")
	assert.Equal(t, uint64(5), hs[len(hs)-1].Count())

	nu.consume(ok(2*time.Second + ms(800)))
	nu.obs.tick(at(6 * time.Second)) // closes [2 s, 4 s)
	hs = observedHistograms(nu)["p"]
	assert.Equal(t, uint64(1), hs[len(hs)-1].Count(), "the new stream starts afresh")
	assert.NotEqual(t, observedHistograms(old)["p"][0].StartTimestamp(), hs[len(hs)-1].StartTimestamp())
}

// TestReloadToAnotherIntervalKeepsTheSeriesInTimeOrder: the predecessor's
// last flushed window, of 10 s, ends at 30 s, after the reload at 22 s;
// the reloaded observer's windows of 7 s open since before it, [14 s,
// 21 s) and [21 s, 28 s), went out after it: every series went back in
// time, and each new cumulative stream began before the last point of
// the one it replaced, which a backend refuses (the OpenTelemetry metrics
// data model, "Resets and Gaps"). Their points are held: their instances
// count in the next cumulative point, of [28 s, 35 s), whose stream
// starts at 30 s.
func TestReloadToAnotherIntervalKeepsTheSeriesInTimeOrder(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.Interval = 10 * time.Second
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	// Times from a boundary of windows of 10 s and of 7 s.
	const o = 50 * time.Second
	old := newHarnessWith(t, cfg, at(o+time.Second), withID)
	ok := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: o + end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	old.consume(ok(ms(100)))
	old.obs.tick(at(o + 20*time.Second)) // closes [0 s, 10 s)
	old.consume(ok(12*time.Second), ok(21*time.Second))
	ho.Requested()
	require.NoError(t, old.obs.Shutdown(context.Background()))

	cfg2 := testConfig()
	cfg2.Interval = 7 * time.Second
	cfg2.Probes = cfg.Probes
	nu := newHarnessWith(t, cfg2, at(o+22*time.Second), withID)
	flushed := len(nu.metrics.AllMetrics())
	nu.consume(ok(23*time.Second), ok(29*time.Second), ok(33*time.Second))
	nu.obs.tick(at(o + 60*time.Second)) // closes the windows up to [42 s, 49 s)

	dm := newDataModel(t)
	for _, md := range append(old.metrics.AllMetrics(), nu.metrics.AllMetrics()...) {
		dm.check(md)
	}
	var first pmetric.NumberDataPoint
	for _, md := range nu.metrics.AllMetrics()[flushed:] {
		forEachMetric(md, func(m pmetric.Metric) {
			var times []pcommon.Timestamp
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				for i := range m.Gauge().DataPoints().Len() {
					times = append(times, m.Gauge().DataPoints().At(i).Timestamp())
				}
			case pmetric.MetricTypeSum:
				for i := range m.Sum().DataPoints().Len() {
					times = append(times, m.Sum().DataPoints().At(i).Timestamp())
				}
				if m.Name() == contract.MetricOutcomes && first == (pmetric.NumberDataPoint{}) {
					first = m.Sum().DataPoints().At(0)
				}
			case pmetric.MetricTypeHistogram:
				for i := range m.Histogram().DataPoints().Len() {
					times = append(times, m.Histogram().DataPoints().At(i).Timestamp())
				}
			}
			for _, ts := range times {
				assert.Greater(t, ts.AsTime(), at(o+30*time.Second), "%s: a point at or before the predecessor's last", m.Name())
			}
		})
	}
	require.NotEqual(t, pmetric.NumberDataPoint{}, first)
	assert.Equal(t, at(o+35*time.Second), first.Timestamp().AsTime().UTC(), "the first window of 7 s that ends after 30 s")
	assert.Equal(t, at(o+30*time.Second), first.StartTimestamp().AsTime().UTC(), "the new stream starts at the predecessor's last point")
	assert.Equal(t, int64(3), first.IntValue(), "the instances at 23 s, 29 s and 33 s")
	assert.Equal(t, int64(3), outcomeTotal(t, nu, "p", contract.Success))
}

// TestReloadAgainHoldsTheWindowsStill: a reload that keeps the interval,
// right after one that changed it, carries the end of the windows the
// first flushed: the windows that end by then still go out without their
// points.
func TestReloadAgainHoldsTheWindowsStill(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.Interval = 10 * time.Second
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	const o = 50 * time.Second // a boundary of windows of 10 s and of 7 s
	ok := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: o + end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	old := newHarnessWith(t, cfg, at(o+time.Second), withID)
	old.consume(ok(21 * time.Second))
	ho.Requested()
	require.NoError(t, old.obs.Shutdown(context.Background()))
	cfg2 := testConfig()
	cfg2.Interval = 7 * time.Second
	cfg2.Probes = cfg.Probes
	mid := newHarnessWith(t, cfg2, at(o+22*time.Second), withID) // flushes [20 s, 30 s)
	ho.Requested()
	require.NoError(t, mid.obs.Shutdown(context.Background()))
	nu := newHarnessWith(t, cfg2, at(o+22*time.Second+ms(500)), withID)
	nu.consume(ok(23 * time.Second))
	nu.obs.tick(at(o + 60*time.Second))

	dm := newDataModel(t)
	for _, h := range []*harness{old, mid, nu} {
		for _, md := range h.metrics.AllMetrics() {
			dm.check(md)
		}
	}
	assert.Equal(t, int64(1), outcomeTotal(t, nu, "p", contract.Success), "the instance at 23 s, in the next point")
}

// TestReloadToAnotherIntervalKeepsTheServiceLabel: the open windows a
// reload to another interval flushes carry the probe's deltaq.service, as
// those its predecessor closed did, and so do the reloaded observer's
// windows before any new span: the services go over with the windows.
func TestReloadToAnotherIntervalKeepsTheServiceLabel(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	old := newHarnessWith(t, testConfig(), at(time.Second), withID)
	ctx := context.Background()
	require.NoError(t, old.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", ms(100)))))
	old.obs.tick(at(2 * time.Second))
	require.NoError(t, old.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", time.Second+ms(100)))))
	require.Equal(t, []string{"shop"}, serviceLabels(t, old)["p"])

	ho.Requested()
	require.NoError(t, old.obs.Shutdown(ctx))
	cfg := testConfig()
	cfg.Interval = 2 * time.Second
	nu := newHarnessWith(t, cfg, at(2*time.Second+ms(500)), withID)
	assert.Equal(t, []string{"shop"}, serviceLabels(t, nu)["p"], "the window flushed")
	assert.Equal(t, int64(2), outcomeTotal(t, nu, "p", contract.Success))
}

// gaugeValues returns the last value of a gauge per probe.
func gaugeValues(t *testing.T, h *harness, name string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != name {
				return
			}
			dps := m.Gauge().DataPoints()
			for i := range dps.Len() {
				p, _ := dps.At(i).Attributes().Get(contract.AttrProbe)
				out[p.Str()] = dps.At(i).DoubleValue()
			}
		})
	}
	return out
}

// TestRefusedReloadFlushesTheOpenWindow: a SIGHUP whose configuration the
// collector refuses shuts the components down and stops the collector, so
// no successor claims what they hand over. The observer flushes the open
// window as at a stop, and no state is left parked. (Before the collector's
// verdict was asked, the window was parked and lost: no output at all.)
func TestRefusedReloadFlushesTheOpenWindow(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"job": {DMax: 100 * time.Millisecond, Bins: 100}}
	h := newHarnessWith(t, cfg, at(time.Second), withID)
	ok := func(end time.Duration) span {
		return span{probe: "job", outcome: contract.Success, end: end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	h.consume(ok(time.Second+ms(100)), ok(time.Second+ms(300)), ok(time.Second+ms(500)))

	ho.Refused(errors.New("invalid configuration"))
	require.NoError(t, h.obs.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{"success": 3, "timeout": 0, "failure": 0}, outcomeCounts(t, h, "job"),
		"the open window's instances reach the output before the collector stops")
	_, parked := ho.Claim(h.obs.reloadKey())
	assert.False(t, parked, "nothing handed to components that will not start")
}

// TestReloadKeepsTheServiceLabel: the services of the probes go to the
// observer a reload builds, so that a window it closes before any new span
// has arrived carries the probe's deltaq.service as before. (They were not
// carried: the windows closed at the reload went out without the label, a
// series apart from the probe's, whose cumulative totals a sum by probe
// counted twice.)
func TestReloadKeepsTheServiceLabel(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	old := newHarnessWith(t, testConfig(), at(time.Second), withID)
	ctx := context.Background()
	require.NoError(t, old.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", ms(100)))))
	old.obs.tick(at(2 * time.Second))
	require.NoError(t, old.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", time.Second+ms(100)))))
	assert.Equal(t, []string{"shop"}, serviceLabels(t, old)["p"])

	ho.Requested()
	require.NoError(t, old.obs.Shutdown(ctx))
	nu := newHarnessWith(t, testConfig(), at(2*time.Second+ms(500)), withID)
	nu.obs.tick(at(3 * time.Second)) // closes window 1, before any new span
	assert.Equal(t, []string{"shop"}, serviceLabels(t, nu)["p"], "the window carried over")
	require.NoError(t, nu.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", 2*time.Second+ms(600)))))
	nu.obs.tick(at(4 * time.Second))
	assert.Equal(t, []string{"shop"}, serviceLabels(t, nu)["p"])
	assert.Equal(t, int64(3), outcomeTotal(t, nu, "p", contract.Success))
}

// TestReloadCarriesTheSettling: a gateway (1 s windows, a lag of 2 s)
// started at 10 s is reloaded at 20.5 s; agent-0 says it is idle in every
// window, agent-1 in those of each case. Each case counts the windows
// missing an agent as the gateway would without the reload:
//
//   - expected_agents 2 both sides, agent-1 never comes: the windows held
//     before the reload (10 to 17) count with the others when the window
//     that begins a minute after the start (70) closes, at 73 s: 61, then
//     one a second. Before, the reloaded gateway held only the windows it
//     closed itself, and forgot 8.
//   - expected_agents 2 both sides, agent-1 up to window 17, the last the
//     gateway closed before the reload: it had settled (window 10 had
//     both), and each window from 18 counts as it closes. Before, the
//     reloaded gateway settled again: it held them until the window that
//     begins a minute after the start (70) closed, at 73 s, and counted
//     53 at once.
//   - expected_agents raised from 1 to 2 (agent-1 deployed with the new
//     configuration), agent-1 from window 75: the gateway settles afresh
//     from the reload, as one started with that configuration; agent-1
//     comes within the minute after it, and the windows held are
//     forgotten. (Timed from the start, they would count from 73 s, the
//     agent on its way.)
//   - the same, agent-1 never comes: the windows since the reload's first
//     (18 to 81: 81 begins a minute after the reload) count at 84 s.
func TestReloadCarriesTheSettling(t *testing.T) {
	// counted: from the tick at second from on, the windows since first
	// (the tick at s closes the windows up to s−3).
	counted := func(from, first int) func(s int) int64 {
		return func(s int) int64 {
			if s < from {
				return 0
			}
			return int64(s - 3 - first + 1)
		}
	}
	never := func(int) bool { return false }
	for _, c := range []struct {
		name          string
		before, after int              // expected_agents
		agent1        func(k int) bool // the windows agent-1 is idle in
		want          func(s int) int64
	}{
		{"unsettled, an agent never comes", 2, 2, never, counted(73, 10)},
		{"settled, an agent stops at the reload", 2, 2, func(k int) bool { return k <= 17 }, counted(21, 18)},
		{"expected_agents raised, the agent comes", 1, 2, func(k int) bool { return k >= 75 }, func(int) int64 { return 0 }},
		{"expected_agents raised, the agent never comes", 1, 2, never, counted(84, 18)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ho := reload.New()
			withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
			config := func(expected int) *Config {
				cfg := testConfig()
				cfg.Lag = 2 * time.Second
				cfg.Gateway.ExpectedAgents = expected
				cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
				return cfg
			}
			g := newHarnessWith(t, config(c.before), at(10*time.Second), withID)
			var before int64 // counted by the gateway before the reload
			missing := func() int64 {
				return before + telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
			}
			for s := 11; s <= 90; s++ {
				if s == 21 {
					before = missing()
					ho.Requested()
					require.NoError(t, g.obs.Shutdown(context.Background()))
					g = newHarnessWith(t, config(c.after), at(20*time.Second+500*time.Millisecond), withID)
				}
				// The agents' words of window s−1, then the tick at s.
				k := s - 1
				for _, agent := range []string{"agent-0", "agent-1"} {
					if agent == "agent-0" || c.agent1(k) {
						md := idleWord(agent, at(time.Duration(k)*time.Second), at(time.Duration(k+1)*time.Second), 1)
						require.NoError(t, g.obs.ConsumeMetrics(context.Background(), md))
					}
				}
				g.obs.tick(at(time.Duration(s) * time.Second))
				require.Equal(t, c.want(s), missing(), "at %d s: the windows up to %d", s, s-3)
			}
		})
	}
}

// TestReloadLayoutChangeToldWhicheverOrder: a reload changes a processor
// probe's dmax. Whether the new processor registers its layout before the
// reloaded observer is made (a processor in a pipeline that does not feed
// the connector can be built first) or after it, and whether a span in the
// new layout reaches the observer before its Start (that processor,
// started first, sends its timeouts on), the log says once that the probe
// starts afresh. Before, a processor registered first made the old engine
// take the new layout for its own at adoption, and nothing was said (the
// connector's end-to-end reload test failed about one run in three on a
// loaded machine).
func TestReloadLayoutChangeToldWhicheverOrder(t *testing.T) {
	const old, nu = 100 * time.Millisecond, 50 * time.Millisecond
	for _, registeredFirst := range []bool{true, false} {
		for _, batchBeforeStart := range []bool{true, false} {
			name := fmt.Sprintf("registered first %v, batch before start %v", registeredFirst, batchBeforeStart)
			t.Run(name, func(t *testing.T) {
				ho := reload.New()
				owner := new(int)
				testLayouts.Register(owner, map[string]deltaq.Layout{"p": {DMaxNs: int64(old), Bins: 100}})
				t.Cleanup(func() { testLayouts.Unregister(owner) })
				withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
				cfg := testConfig()
				before := newHarnessWith(t, cfg, at(time.Second), withID)
				before.consume(span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(20), dmax: old, bins: 100})
				ho.Requested()
				require.NoError(t, before.obs.Shutdown(context.Background()))

				newLayout := func() {
					require.True(t, testLayouts.SetLayout(owner, "p", deltaq.Layout{DMaxNs: int64(nu), Bins: 100}))
				}
				if registeredFirst {
					newLayout()
				}
				logCore, logs := observer.New(zapcore.WarnLevel)
				set := testSettings(nil, func() time.Time { return at(time.Second + ms(500)) })
				withID(&set)
				set.Telemetry.Logger = zap.New(logCore)
				obs, err := New(cfg, set)
				require.NoError(t, err)
				if !registeredFirst {
					newLayout()
				}
				if batchBeforeStart {
					require.NoError(t, obs.ConsumeTraces(context.Background(), instanceTraces(
						span{probe: "p", outcome: contract.Success, end: time.Second + ms(200), delay: ms(20), dmax: nu, bins: 100})))
				}
				require.NoError(t, obs.Start(Outputs{Metrics: new(consumertest.MetricsSink), Logs: new(consumertest.LogsSink)}))
				t.Cleanup(func() { require.NoError(t, obs.Shutdown(context.Background())) })
				said := logs.FilterMessage("configuration reload: the probe starts afresh").FilterField(zap.String("probe", "p")).All()
				assert.Len(t, said, 1, "the change of p's layout is told once")
				require.NoError(t, obs.ConsumeTraces(context.Background(), instanceTraces(
					span{probe: "p", outcome: contract.Success, end: time.Second + ms(400), delay: ms(20), dmax: nu, bins: 100})))
				l, ok := obs.engine.Layout("p")
				assert.True(t, ok && l.DMaxNs == int64(nu), "p moves to its new layout: %+v", l)
			})
		}
	}
}

// TestReloadToAnotherIntervalAndCDFPointsKeepsTheBandAtItsEdges: the open
// windows a reload to another interval flushes carry their band at the
// edges the predecessor kept it at (its cdf_points, 20, 40 … 100 ms),
// labelled with those edges, while the successor reads their observed
// curve at its own (10, 20 … 100 ms). Every instance takes 20 ms, so the
// mean of the windows is the observed CDF: 1 from 20 ms. (The band's five
// values went out labelled 10, 20 … 50 ms, the mean reading 1 at 10 ms
// where the observed CDF is 0, and the rest of its curve was read from
// the next series: the mean read the lower bound from 60 ms.)
func TestReloadToAnotherIntervalAndCDFPointsKeepsTheBandAtItsEdges(t *testing.T) {
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq", ho }
	cfg := testConfig()
	cfg.CDFPoints = 5
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	old := newHarnessWith(t, cfg, at(time.Second), withID)
	ok := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100}
	}
	old.consume(ok(ms(100)), ok(ms(200)))
	old.obs.tick(at(2 * time.Second)) // closes [0, 1 s)
	old.consume(ok(time.Second+ms(100)), ok(time.Second+ms(300)))
	ho.Requested()
	require.NoError(t, old.obs.Shutdown(context.Background()))

	cfg2 := testConfig()
	cfg2.Interval = 2 * time.Second
	cfg2.CDFPoints = 10
	cfg2.Probes = cfg.Probes
	nu := newHarnessWith(t, cfg2, at(2*time.Second+ms(500)), withID)
	curves := map[string]map[string]float64{} // series → le → value, of the windows flushed
	for _, md := range nu.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) { addCDFPoints(curves, m) })
	}
	obs := curves[contract.SeriesObserved]
	require.Len(t, obs, 10, "the successor's ten points")
	assert.Equal(t, 0.0, obs["0.01"])
	want := map[string]float64{}
	for _, le := range []string{"0.02", "0.04", "0.06", "0.08", "0.1"} {
		assert.Equal(t, 1.0, obs[le], le)
		want[le] = 1
	}
	assert.Equal(t, want, curves[contract.SeriesMean], "the mean of windows of the same delays, at the predecessor's points")
	for _, s := range []string{contract.SeriesLower, contract.SeriesUpper} {
		require.Len(t, curves[s], 5, s)
		for le := range want {
			assert.Contains(t, curves[s], le, s)
		}
	}
	assert.Equal(t, want, curves[contract.SeriesUpper], "the upper bound of a mean of 1")
}
