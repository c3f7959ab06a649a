// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

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
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestIdleAgentsAreNotMissing: two agents (windows_only) see instances in
// one window, then none; a gateway with expected_agents 2 takes all their
// output, and a second gateway the same but for their deltaq.window.idle
// points (what a gateway that does not know them sees). The first counts
// no window missing an agent while both agents run and are idle; the
// second counts every idle window (the fault the idle points mend). Their
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
	// The agents close windows 0 to 7 (1 of instances, the others idle),
	// the gateways −1 to 6: −1, open at their start (a longer lag), ended
	// before the agents began, and misses them.
	for w := 2; w <= 9; w++ {
		step(w, agents)
	}
	assert.Equal(t, int64(1), missing(gateway), "windows missing an agent: only the one before they began")
	assert.Equal(t, 14, idlePoints, "the agents' idle points: seven windows each")
	// Without the idle points every idle window but −1 misses both agents:
	// that gateway closed −1 before any window of an agent arrived, and
	// counts nothing missing until one has.
	assert.Equal(t, int64(6), missing(plain), "without the idle points")
	assert.Equal(t, map[string]int64{"fate=accepted": 2, "fate=idle": 14},
		telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
	var contributors []int64
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors {
				contributors = append(contributors, m.Gauge().DataPoints().At(0).IntValue())
			}
		})
	}
	assert.Equal(t, []int64{0, 2, 2, 2, 2, 2, 2, 2}, contributors, "the gateway's windows −1 to 6")
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
	assert.Equal(t, 8, scores, "p's scores: one a window, 0 in the windows without instances")

	// agent-1 stops after closing window 7: the gateway closes windows 7
	// to 9, and 8 and 9 miss it.
	for w := 10; w <= 12; w++ {
		step(w, agents[:1])
	}
	assert.Equal(t, int64(1+2), missing(gateway), "windows missing the stopped agent")
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
// without emit_windows sends none. A gateway refuses a point of no agent
// (invalid) and counts a point of another type not at all.
func TestIdlePointOnTheWire(t *testing.T) {
	start := at(time.Second)
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
	assert.Equal(t, map[string]int64{"fate=invalid": 1}, telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
}

// TestUnreachedGatewayCountsMissing: a gateway with expected_agents that no
// agent reaches counts the windows it closes as missing agents once every
// agent has had its time to send one (its lag and two intervals after its
// start: 1 s windows, a lag of 2 s), and not before: the windows closed
// earlier could not yet hold an agent's. Before, it counted nothing until
// a window of some agent had arrived, so a gateway cut off from every
// agent from its start never alerted.
func TestUnreachedGatewayCountsMissing(t *testing.T) {
	start := at(10 * time.Second)
	cfg := testConfig()
	cfg.Lag = 2 * time.Second
	cfg.Gateway.ExpectedAgents = 2
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	g := newHarness(t, cfg, start)
	missing := func() int64 {
		return telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
	}
	for s := 11; s <= 13; s++ {
		g.obs.tick(at(time.Duration(s) * time.Second))
	}
	assert.Equal(t, int64(0), missing(), "within the lag and two intervals of the start")
	for s := 14; s <= 16; s++ {
		g.obs.tick(at(time.Duration(s) * time.Second))
	}
	assert.Equal(t, int64(3), missing(), "one a window from 4 s after the start")
}
