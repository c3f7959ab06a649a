// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestIdleAgentsAreNotMissing: two agents (windows_only) see instances in
// one window, then none; a gateway with expected_agents 2 takes all their
// output, and a second gateway the same but for their deltaq.window.idle
// points (what a gateway that does not know them sees). The first counts
// no window missing an agent while both agents run and are idle; the
// second counts every idle window after the busy one (the fault the idle
// points mend). Neither counts the windows that began before its start.
// Their
// ΔQ output is the same but for deltaq.window.contributors: the idle
// points merge nothing — no probe, no count, no Quality of Outcome score
// (p's min_rate scores the windows without instances 0 on both). Then one
// agent stops: the first gateway counts each window after as missing it.
func TestIdleAgentsAreNotMissing(t *testing.T) {
	start := at(time.Second)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gcfg.Gateway.ExpectedAgents = 2
	gcfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100, QoO: analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 20 * time.Millisecond}}, MaxFailure: 0.1},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 60 * time.Millisecond}}, MaxFailure: 0.5},
		MinRate: 5,
	}}}
	gateway, plain := newHarness(t, gcfg, start), newHarness(t, gcfg, start)
	agents := []*harness{agentHarnessWith(t, "agent-0", start, true), agentHarnessWith(t, "agent-1", start, true)}
	for i := range 40 {
		agents[i%2].consume(span{probe: "p", outcome: contract.Success, end: time.Second + time.Duration(i*20)*time.Millisecond + ms(1),
			delay: ms(float64(1 + i%30)), dmax: 100 * time.Millisecond, bins: 100})
	}
	ctx := context.Background()
	sent := make([]int, len(agents)) // the agents' requests given to the gateways
	idlePoints := 0
	step := func(w int, up []*harness) {
		now := at(time.Duration(w) * time.Second)
		for i, a := range up {
			a.obs.tick(now)
			mds := a.metrics.AllMetrics()
			for _, md := range mds[sent[i]:] {
				require.NoError(t, gateway.obs.ConsumeMetrics(ctx, md))
				stripped, n := withoutIdle(md)
				idlePoints += n
				require.NoError(t, plain.obs.ConsumeMetrics(ctx, stripped))
			}
			sent[i] = len(mds)
		}
		gateway.obs.tick(now)
		plain.obs.tick(now)
	}
	missing := func(h *harness) int64 {
		return telemetrytest.Points(t, h.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
	}
	// The agents close windows 0 to 7 (1 of instances, the others idle
	// but 0, which ended as they began: they say nothing of it), the
	// gateways −1 to 6: −1 and 0, open at their start (a longer lag),
	// began before it and are not counted.
	for w := 2; w <= 9; w++ {
		step(w, agents)
	}
	assert.Equal(t, int64(0), missing(gateway), "windows missing an agent")
	assert.Equal(t, 12, idlePoints, "the agents' idle points: six windows each")
	// Without the idle points every idle window after 1 misses both agents.
	assert.Equal(t, int64(5), missing(plain), "without the idle points")
	assert.Equal(t, map[string]int64{"fate=accepted": 2, "fate=idle": 12},
		telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
	var contributors []int64
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors {
				contributors = append(contributors, m.Gauge().DataPoints().At(0).IntValue())
			}
		})
	}
	assert.Equal(t, []int64{0, 2, 2, 2, 2, 2, 2}, contributors, "the gateway's windows 0 to 6 (from the first agent's word on)")
	assert.Equal(t, outputWithout(t, plain, contract.MetricContributors), outputWithout(t, gateway, contract.MetricContributors),
		"the gateways' output but for the contributors")
	scores := 0
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricQoOScore {
				scores += m.Gauge().DataPoints().Len()
			}
		})
	}
	assert.Equal(t, 6, scores, "p's scores: one a window from 1 on, 0 in the windows without instances; none in −1 and 0, which ended before the gateway began and no agent's window vouches for")

	// agent-1 stops after closing window 7: the gateway closes windows 7
	// to 9, and 8 and 9 miss it.
	for w := 10; w <= 12; w++ {
		step(w, agents[:1])
	}
	assert.Equal(t, int64(2), missing(gateway), "windows missing the stopped agent")
	names := promNames(t)
	for _, h := range append([]*harness{gateway, plain}, agents...) {
		dm := newDataModel(t)
		for _, md := range h.metrics.AllMetrics() {
			dm.check(md)
			names(md)
		}
	}
}

// withoutIdle returns a copy of md without its deltaq.window.idle metrics,
// and the number of their points.
func withoutIdle(md pmetric.Metrics) (pmetric.Metrics, int) {
	out := pmetric.NewMetrics()
	md.CopyTo(out)
	n := 0
	for _, rm := range out.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				if m.Name() != contract.MetricWindowIdle {
					return false
				}
				n += m.Sum().DataPoints().Len()
				return true
			})
		}
	}
	return out, n
}

// outputWithout returns h's metrics output as JSON, without the metrics
// named name.
func outputWithout(t *testing.T, h *harness, name string) []string {
	t.Helper()
	var out []string
	for _, md := range h.metrics.AllMetrics() {
		c := pmetric.NewMetrics()
		md.CopyTo(c)
		for _, rm := range c.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				sm.Metrics().RemoveIf(func(m pmetric.Metric) bool { return m.Name() == name })
			}
		}
		b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(c)
		require.NoError(t, err)
		out = append(out, string(b))
	}
	return out
}

// TestIdlePointOnTheWire: an agent with emit_windows sends, for a window
// it closes without a deltaq.window point, one deltaq.window.idle point —
// a delta sum of 1 whose start and end are the window's, with its
// deltaq.agent.start — and none for a window of instances; an observer
// without emit_windows sends none, and none for a window that ended
// before it began (TestNoIdleBeforeTheAgentBegan). A gateway refuses a
// point of no agent and a point of another type (invalid).
func TestIdlePointOnTheWire(t *testing.T) {
	start := at(500 * time.Millisecond)
	agent := agentHarnessWith(t, "agent-0", start, false)
	single := newHarness(t, testConfig(), start)
	for _, h := range []*harness{agent, single} {
		h.consume(span{probe: "p", outcome: contract.Success, end: time.Second + ms(500), delay: ms(5), dmax: 100 * time.Millisecond, bins: 100})
		h.obs.tick(at(4 * time.Second)) // windows 0 (idle), 1 (an instance), 2 (idle)
	}
	var idle, windows []string
	for _, md := range agent.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			switch m.Name() {
			case contract.MetricWindowIdle:
				require.Equal(t, pmetric.MetricTypeSum, m.Type())
				assert.Equal(t, pmetric.AggregationTemporalityDelta, m.Sum().AggregationTemporality())
				for _, dp := range m.Sum().DataPoints().All() {
					began, ok := dp.Attributes().Get(contract.AttrAgentStart)
					assert.True(t, ok && began.Int() == int64(agent.obs.build.start), "deltaq.agent.start")
					assert.Equal(t, int64(1), dp.IntValue())
					assert.Equal(t, time.Second, dp.Timestamp().AsTime().Sub(dp.StartTimestamp().AsTime()))
					idle = append(idle, fmt.Sprint(dp.StartTimestamp().AsTime().Sub(t0)))
				}
			case contract.MetricWindow:
				for _, dp := range m.Histogram().DataPoints().All() {
					windows = append(windows, fmt.Sprint(dp.StartTimestamp().AsTime().Sub(t0)))
				}
			}
		})
	}
	assert.Equal(t, []string{"0s", "2s"}, idle, "the idle windows' starts")
	assert.Equal(t, []string{"1s"}, windows, "the window of instances")
	for _, md := range single.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			assert.NotEqual(t, contract.MetricWindowIdle, m.Name(), "an observer without emit_windows")
		})
	}

	gateway := newHarness(t, testConfig(), start)
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	// No resource: no agent named.
	agent.obs.build.idlePoint(ms, pcommon.NewTimestampFromTime(at(time.Second)), pcommon.NewTimestampFromTime(at(2*time.Second)))
	g := ms.AppendEmpty()
	g.SetName(contract.MetricWindowIdle)
	g.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
	require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
	assert.Equal(t, map[string]int64{"fate=invalid": 2}, telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
}

// TestUnreachedGatewayCountsMissing: a gateway with expected_agents that no
// agent reaches, or that one of its agents never comes back to, waits for
// them until the windows that begin a minute after its start (agentsReturn:
// the agents of a gateway that was down reconnect with gRPC's backoff), or
// its lag and two intervals when that is longer; then it counts every
// window since its start as missing agents, and each one after. Before the
// idle words, a gateway that no agent reached counted nothing, ever.
func TestUnreachedGatewayCountsMissing(t *testing.T) {
	for _, c := range []struct {
		name          string
		interval, lag time.Duration
		reached       bool // one of the two agents says it is idle
	}{
		{"no agent, 1 s windows", time.Second, 2 * time.Second, false},
		{"one agent of two, 1 s windows", time.Second, 2 * time.Second, true},
		{"no agent, 1 min windows", time.Minute, 2 * time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// On a window boundary (windows are aligned on the Unix epoch).
			start := at(10 * c.interval).Truncate(c.interval)
			cfg := testConfig()
			cfg.Interval, cfg.Lag = c.interval, c.lag
			cfg.Gateway.ExpectedAgents = 2
			cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
			g := newHarness(t, cfg, start)
			missing := func() int64 {
				return telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
			}
			settle := max(time.Minute, c.lag+2*c.interval)
			// The window that begins settle after the start closes the lag
			// after its end.
			due := start.Add(settle + c.interval + c.lag)
			for now := start.Add(c.interval); !now.After(due.Add(2 * c.interval)); now = now.Add(c.interval) {
				if c.reached {
					md := idleWord("agent-0", now.Add(-c.interval), now, 1)
					require.NoError(t, g.obs.ConsumeMetrics(context.Background(), md))
				}
				g.obs.tick(now)
				want := int64(0)
				if !now.Before(due) {
					// Every window from the start's on.
					want = int64(now.Sub(start)-c.lag) / int64(c.interval)
				}
				require.Equal(t, want, missing(), "at %v after the start", now.Sub(start))
			}
		})
	}
}

// idleWord is the request of an agent source that says it was idle in the
// window [start, end), with its deltaq.agent.start began.
func idleWord(source string, start, end time.Time, began int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	if source != "" {
		rm.Resource().Attributes().PutStr("service.instance.id", source)
	}
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(contract.MetricWindowIdle)
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := sum.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(end))
	dp.SetIntValue(1)
	if began != 0 {
		dp.Attributes().PutInt(contract.AttrAgentStart, began)
	}
	return md
}

// TestRestartedGatewaySettles: a gateway (1 s windows, a lag of 3 s,
// expected_agents 2) restarts at 10.5 s while its two agents run on. The
// agents' words of the windows before its start went to its predecessor
// (one of window 9 arrives late, retried); agent-0 reaches it at once,
// agent-1 only with window 14 (gRPC's backoff after the outage). The
// gateway counts no window missing an agent: not 7 to 10, which began
// before its start, nor 11 to 13, before every agent had come back. From
// window 14, which has both, it counts: agent-1 stops after window 16, and
// windows 17 to 19 miss it. Before, it counted every window of fewer
// agents from agent-0's first word on: 7 to 13 as well, and the
// DeltaQAgentsMissing alert fired at every gateway restart.
func TestRestartedGatewaySettles(t *testing.T) {
	start := at(10*time.Second + 500*time.Millisecond)
	cfg := testConfig()
	cfg.Lag = 3 * time.Second
	cfg.Gateway.ExpectedAgents = 2
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	g := newHarness(t, cfg, start)
	missing := func() int64 {
		return telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
	}
	word := func(source string, k int) {
		t.Helper()
		md := idleWord(source, at(time.Duration(k)*time.Second), at(time.Duration(k+1)*time.Second), 1)
		require.NoError(t, g.obs.ConsumeMetrics(context.Background(), md))
	}
	word("agent-0", 9)
	// At second s the agents send their words of window s−2 (their lag of
	// one interval, and their timer's); the gateway closes the windows
	// that ended 3 s before.
	for s := 11; s <= 23; s++ {
		if k := s - 2; k >= 10 {
			word("agent-0", k)
			if k >= 14 && k <= 16 {
				word("agent-1", k)
			}
		}
		g.obs.tick(at(time.Duration(s) * time.Second))
		if s <= 20 {
			require.Equal(t, int64(0), missing(), "at %d s: the windows up to %d", s, s-4)
		}
	}
	assert.Equal(t, int64(3), missing(), "windows 17 to 19, after agent-1 stopped")
	var contributors []int64
	for _, md := range g.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors {
				contributors = append(contributors, m.Gauge().DataPoints().At(0).IntValue())
			}
		})
	}
	assert.Equal(t, []int64{0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1}, contributors, "windows 7 to 19")
}

// TestNoIdleBeforeTheAgentBegan: an agent (a lag of 2 s) that starts at
// 2.5 s opens the windows from 0 on, but says it was idle only in those it
// was up in, 2 and 3: windows 0 and 1 ended before it began — it was down,
// or not yet started — and a gateway must not count it in them. Before, it
// sent its word for them too (a restarted agent claimed the windows of its
// outage back to its lag).
func TestNoIdleBeforeTheAgentBegan(t *testing.T) {
	cfg := testConfig()
	cfg.EmitWindows, cfg.WindowsOnly = true, true
	cfg.Lag = 2 * time.Second
	agent := newHarnessWith(t, cfg, at(2500*time.Millisecond), func(s *Settings) {
		r := pcommon.NewResource()
		r.Attributes().PutStr("service.instance.id", "agent-0")
		s.Telemetry.Resource = r
	})
	agent.obs.tick(at(6 * time.Second)) // closes windows 0 to 3
	var idle []string
	for _, md := range agent.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricWindowIdle {
				for _, dp := range m.Sum().DataPoints().All() {
					idle = append(idle, fmt.Sprint(dp.StartTimestamp().AsTime().Sub(t0)))
				}
			}
		})
	}
	assert.Equal(t, []string{"2s", "3s"}, idle, "the starts of the windows it said it was idle in")
}

// TestForgedIdlePoints: deltaq.window.idle points that are not an agent's
// word are refused and counted by fate, as windows are, and count no
// contributor: of no agent or a name too long, of a value other than the
// integer 1, of another metric type (and a deltaq.window of another type),
// of bounds that are no open window (misaligned, reversed, far ahead, far
// behind, the extremes of the timestamps). A word without a start, or of a
// start that is not an integer, counts (an agent of unknown start). Before,
// a point of another type or value was taken for a word or not counted at
// all.
func TestForgedIdlePoints(t *testing.T) {
	g := newHarness(t, testConfig(), at(10*time.Second))
	k, k1 := at(10*time.Second), at(11*time.Second)
	ts := pcommon.NewTimestampFromTime
	set := func(f func(m pmetric.Metric)) func(md pmetric.Metrics) {
		return func(md pmetric.Metrics) { f(md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0)) }
	}
	point := func(f func(dp pmetric.NumberDataPoint)) func(md pmetric.Metrics) {
		return set(func(m pmetric.Metric) { f(m.Sum().DataPoints().At(0)) })
	}
	bounds := func(start, end pcommon.Timestamp) func(md pmetric.Metrics) {
		return point(func(dp pmetric.NumberDataPoint) { dp.SetStartTimestamp(start); dp.SetTimestamp(end) })
	}
	for _, c := range []struct {
		name   string
		source string
		change func(md pmetric.Metrics)
		want   string
	}{
		{"an agent's word", "a", nil, "idle"},
		{"the same again", "a", nil, "duplicate"},
		{"no start", "b", point(func(dp pmetric.NumberDataPoint) { dp.Attributes().Clear() }), "idle"},
		{"a start that is no integer", "c", point(func(dp pmetric.NumberDataPoint) { dp.Attributes().PutStr(contract.AttrAgentStart, "1") }), "idle"},
		{"no agent", "", nil, "invalid"},
		{"a name too long", strings.Repeat("n", analysis.MaxSourceLength+1), nil, "agent_invalid"},
		{"value 0", "d", point(func(dp pmetric.NumberDataPoint) { dp.SetIntValue(0) }), "invalid"},
		{"value 7", "d", point(func(dp pmetric.NumberDataPoint) { dp.SetIntValue(7) }), "invalid"},
		{"value 1.0", "d", point(func(dp pmetric.NumberDataPoint) { dp.SetDoubleValue(1) }), "invalid"},
		{"a gauge", "d", set(func(m pmetric.Metric) { m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1) }), "invalid"},
		{"a histogram", "d", set(func(m pmetric.Metric) { m.SetEmptyHistogram().DataPoints().AppendEmpty() }), "invalid"},
		{"a deltaq.window gauge", "d", set(func(m pmetric.Metric) {
			m.SetName(contract.MetricWindow)
			m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
		}), "invalid"},
		{"half a window", "d", bounds(ts(k.Add(500*time.Millisecond)), ts(k1.Add(500*time.Millisecond))), "misaligned"},
		{"two windows", "d", bounds(ts(k), ts(k1.Add(time.Second))), "misaligned"},
		{"reversed", "d", bounds(ts(k1), ts(k)), "misaligned"},
		{"zero", "d", bounds(0, 0), "misaligned"},
		{"the epoch's first window", "d", bounds(0, pcommon.Timestamp(time.Second)), "late"},
		{"the largest timestamps", "d", bounds(math.MaxUint64-pcommon.Timestamp(time.Second), math.MaxUint64), "misaligned"},
		{"far behind", "d", bounds(ts(k.Add(-1e5*time.Second)), ts(k1.Add(-1e5*time.Second))), "late"},
		{"far ahead", "d", bounds(ts(k.Add(1e5*time.Second)), ts(k1.Add(1e5*time.Second))), "early"},
	} {
		before := telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_contributions")
		md := idleWord(c.source, k, k1, 100)
		if c.change != nil {
			c.change(md)
		}
		require.NoError(t, g.obs.ConsumeMetrics(context.Background(), md))
		after := telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_contributions")
		assert.Equal(t, before["fate="+c.want]+1, after["fate="+c.want], "%s: counted as %s", c.name, c.want)
		for fate, n := range after {
			if fate != "fate="+c.want {
				assert.Equal(t, before[fate], n, "%s: %s", c.name, fate)
			}
		}
	}
	g.obs.tick(at(13 * time.Second))
	var contributors []int64
	for _, md := range g.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors && m.Gauge().DataPoints().At(0).Timestamp() == ts(k1) {
				contributors = append(contributors, m.Gauge().DataPoints().At(0).IntValue())
			}
		})
	}
	assert.Equal(t, []int64{3}, contributors, "window 10: the agents a, b and c alone")
}
