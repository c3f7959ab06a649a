// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestRestartUnderNewNameDoesNotSettle: a gateway (1 s windows, a lag of
// 3 s, expected_agents 3) starts at 10.5 s; agents a and b run on, c never
// comes. At 15.4 s a restarts under a new name, a-2 (the collector's
// random service.instance.id): window 15 has the words of a, a-2 and b,
// three names, but two agents up throughout it. Every window misses c;
// once the gateway stops waiting for it (the windows that begin a minute
// after its start) it counts them: 11 to 74 but 15, where a's two names
// stand for three agents, as a settled gateway would count them. Before,
// the restarted agent counted twice ended the settling at window 15: the
// windows held before it, 11 to 14, were forgotten, 4 windows missing c
// uncounted.
func TestRestartUnderNewNameDoesNotSettle(t *testing.T) {
	start := at(10*time.Second + 500*time.Millisecond)
	cfg := testConfig()
	cfg.Lag = 3 * time.Second
	cfg.Gateway.ExpectedAgents = 3
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	g := newHarness(t, cfg, start)
	word := func(source string, k int, began int64) {
		t.Helper()
		md := idleWord(source, at(time.Duration(k)*time.Second), at(time.Duration(k+1)*time.Second), began)
		require.NoError(t, g.obs.ConsumeMetrics(context.Background(), md))
	}
	restart := at(15*time.Second + 400*time.Millisecond).UnixNano()
	// At second s the agents send their words of window s−2; the gateway
	// closes the windows that ended 3 s before.
	for s := 13; s <= 78; s++ {
		k := s - 2
		word("b", k, 1)
		if k <= 15 {
			word("a", k, 1)
		}
		if k >= 15 {
			word("a-2", k, restart)
		}
		g.obs.tick(at(time.Duration(s) * time.Second))
	}
	missing := telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_windows_missing_agents")[""]
	assert.Equal(t, int64(74-11), missing, "windows 11 to 74 but 15, every one without c")
}

// TestAgentsSharingANameWarned: two agents running at once under one
// name (a literal service.instance.id in a DaemonSet's configuration)
// count as one contributor, so that with expected_agents the windows would
// count as missing one though every agent is up; their instances all
// merge. The gateway says why, once, naming the name; of an agent of a
// name of its own it says nothing. (An agent restarted under its name is
// no such pair: TestAgentsSharingAName in analysis.)
func TestAgentsSharingANameWarned(t *testing.T) {
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gcfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	logCore, logs := observer.New(zapcore.WarnLevel)
	gateway := newHarnessWith(t, gcfg, at(200*time.Millisecond), func(set *Settings) { set.Telemetry.Logger = zap.New(logCore) })
	agents := []*harness{
		agentHarness(t, "node", at(100*time.Millisecond)),
		agentHarness(t, "node", at(150*time.Millisecond)),
		agentHarness(t, "solo", at(100*time.Millisecond)),
	}
	sent := make([]int, len(agents))
	for s := 3; s <= 8; s++ {
		// The gateway opens the windows up to s and closes those that
		// ended 2 s before; the agents close theirs, and their windows
		// reach it; then they see a span each of window s (3 and 4).
		gateway.obs.tick(at(time.Duration(s) * time.Second))
		for i, a := range agents {
			a.obs.tick(at(time.Duration(s) * time.Second))
			mds := a.metrics.AllMetrics()
			for _, md := range mds[sent[i]:] {
				require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
			}
			sent[i] = len(mds)
			if s <= 4 {
				a.consume(span{probe: "p", outcome: contract.Success, end: time.Duration(s)*time.Second + ms(700), delay: ms(5),
					dmax: 100 * time.Millisecond, bins: 100})
			}
		}
	}
	_, totals := lastObserved(t, gateway)
	assert.Equal(t, map[string]int64{"success": 6, "timeout": 0, "failure": 0}, totals["p"], "every agent's instances of windows 3 and 4")
	contributors := map[int64]int64{}
	for _, md := range gateway.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricContributors {
				dp := m.Gauge().DataPoints().At(0)
				contributors[int64(dp.Timestamp().AsTime().Sub(at(0))/time.Second)-1] = dp.IntValue() // by the window's end
			}
		})
	}
	assert.Equal(t, int64(2), contributors[3], "window 3: two names of three agents")
	assert.Equal(t, int64(2), contributors[4], "window 4: two names of three agents")
	said := logs.FilterField(zap.String("agent", "node")).All()
	require.Len(t, said, 1, "one warning about node")
	assert.Contains(t, said[0].Message, `two agents running at once send their windows as "node"`)
	assert.Zero(t, logs.FilterField(zap.String("agent", "solo")).Len(), "no warning about solo")
}
