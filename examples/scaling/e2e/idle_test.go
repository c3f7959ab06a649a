// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// fastInterval is the window of testdata/fast.yaml.
const fastInterval = 500 * time.Millisecond

// TestIdleAgentsAreNotMissing: two agents and a gateway with
// expected_agents 2, windows of 500 ms (testdata/fast.yaml, the gateway's
// lag 2 s). Both agents get spans for 2 s, then none: an agent that saw no
// instance in a window sends no deltaq.window of it but its word that it
// was idle (deltaq.window.idle), so every gateway window after the traffic
// has both agents as contributors and windows_missing_agents stays flat
// for 3 s (six windows) while both agents run; the gateway counts the words
// as contributions of fate idle. Then one agent stops: the gateway's
// windows after it have one contributor, and windows_missing_agents rises
// by one a window. Before, the counter rose by one a window as soon as the
// traffic stopped, and DeltaQAgentsMissing fired with every agent up.
func TestIdleAgentsAreNotMissing(t *testing.T) {
	began := time.Now()
	gateway, agents, gwSink := startPair(t, gate(t), true)
	missing := func() int64 { return scrapeSum(t, gateway.telemetry, missingName) }

	// 2 s of spans to both agents.
	lastBusy := sendToAll(t, agents, 2*time.Second)
	waitGatewayWindow(t, gwSink, lastBusy)
	atTrafficEnd := missing()
	// Six idle windows, both agents up.
	idleUntil := lastBusy + int64(6*fastInterval)
	contributors := waitGatewayWindow(t, gwSink, idleUntil)
	afterIdle := missing()
	if afterIdle != atTrafficEnd {
		t.Errorf("%s rose from %d to %d over six idle windows with both agents up, want flat", missingName, atTrafficEnd, afterIdle)
	}
	for end := lastBusy - int64(2*fastInterval); end <= idleUntil; end += int64(fastInterval) {
		if c, ok := contributors[end]; !ok || c != 2 {
			t.Errorf("window ending %v: %d contributors (reported %v), want both agents", time.Unix(0, end).UTC(), c, ok)
		}
	}
	fates := scrapeContributions(t, gateway.telemetry)
	if fates["idle"] < 2*6 {
		t.Errorf("contributions %v: want at least 12 of fate idle, the two agents' words of six windows", fates)
	}
	for fate, n := range fates {
		if fate != "accepted" && fate != "idle" && n != 0 {
			t.Errorf("contributions{fate=%s} = %d, want 0", fate, n)
		}
	}

	// One agent stops (its last windows flushed): the windows after it
	// miss it.
	agents[1].StopCleanly(t)
	stopped := (time.Now().UnixNano()/int64(fastInterval) + 1) * int64(fastInterval)
	lastAfter := stopped + int64(4*fastInterval)
	contributors = waitGatewayWindow(t, gwSink, lastAfter)
	e2etest.Until(t, missingName+" counting the windows after the stop", 5*time.Second, func() bool {
		return missing() >= afterIdle+4
	}, gateway.Proc)
	afterStop := missing()
	for end := stopped + int64(fastInterval); end <= lastAfter; end += int64(fastInterval) {
		if c := contributors[end]; c != 1 {
			t.Errorf("window ending %v, after agent-1 stopped: %d contributors, want 1", time.Unix(0, end).UTC(), c)
		}
	}
	for _, c := range []*collector{agents[0], gateway} {
		c.StopCleanly(t)
	}
	var per []string
	for _, end := range slices.Sorted(maps.Keys(contributors)) {
		if end > lastBusy-int64(4*fastInterval) {
			per = append(per, fmt.Sprintf("%s:%d", time.Unix(0, end).UTC().Format("05.0"), contributors[end]))
		}
	}
	t.Logf("%s: %d at the traffic's end, %d after six idle windows, %d after agent-1 stopped; contributions %v; "+
		"contributors by window end (s:agents; traffic ended %s, agent-1 stopped %s): %s; done after %v",
		missingName, atTrafficEnd, afterIdle, afterStop, fates,
		time.Unix(0, lastBusy).UTC().Format("05.0"), time.Unix(0, stopped).UTC().Format("05.0"),
		strings.Join(per, " "), time.Since(began).Round(time.Millisecond))
}

// sendToAll sends, every 100 ms for d, three instances (their worker_1,
// worker_2 and job spans) to each agent, and returns the end of the last
// window of fastInterval they fell in.
func sendToAll(t *testing.T, agents []*collector, d time.Duration) int64 {
	t.Helper()
	clients := make([]ptraceotlp.GRPCClient, len(agents))
	for i, a := range agents {
		clients[i] = ptraceotlp.NewGRPCClient(otlptest.Dial(t, a.addr))
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	n := 0
	var last int64
	stop := time.Now().Add(d)
	for now := time.Now(); now.Before(stop); now = <-tick.C {
		now = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		for i, c := range clients {
			td := ptrace.NewTraces()
			spans := newResource(td)
			for range 3 {
				d1 := time.Duration(1+n*7%25) * time.Millisecond
				d2 := time.Duration(1+n*11%30) * time.Millisecond
				addSpan(spans, n, "worker_1", now, d1, false)
				addSpan(spans, n, "worker_2", now, d2, false)
				addSpan(spans, n, "job", now, d1+d2+2*time.Millisecond, false)
				n++
			}
			if _, err := c.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
				cancel()
				t.Fatalf("sending spans to agent-%d: %v", i, err)
			}
		}
		cancel()
		last = (now.UnixNano()/int64(fastInterval) + 1) * int64(fastInterval)
	}
	return last
}

// waitGatewayWindow waits until the gateway has emitted the window ending
// at end, and returns the contributors of its windows by end.
func waitGatewayWindow(t *testing.T, gwSink *otlptest.Receiver, end int64) map[int64]int64 {
	t.Helper()
	var c map[int64]int64
	// The gateway closes a window its lag (2 s) after its end, on a timer
	// of one interval.
	gwSink.Until(t, "the gateway's window ending "+time.Unix(0, end).UTC().String(), 15*time.Second, func() bool {
		c = fold(gwSink.Metrics()).contributors
		_, ok := c[end]
		return ok
	})
	return c
}

// missingName is the gateway's count of windows closed with fewer agents
// than expected_agents.
const missingName = "otelcol_connector_deltaq_windows_missing_agents"

// startPair starts, and waits until ready, a gateway with expected_agents
// 2 and two agents that report to it; the gateway's output goes to the sink
// returned. fast puts all three on testdata/fast.yaml's windows of 500 ms
// (the gateway's lag 2 s, testdata/gateway_fast.yaml).
func startPair(t *testing.T, otelcol string, fast bool) (gateway *collector, agents []*collector, gwSink *otlptest.Receiver) {
	t.Helper()
	gwConfigs, agConfigs := []string{"../gateway.yaml", "testdata/sink.yaml"}, []string{"../agent.yaml", "testdata/agent.yaml"}
	if fast {
		gwConfigs = append(gwConfigs, "testdata/fast.yaml", "testdata/gateway_fast.yaml")
		agConfigs = append(agConfigs, "testdata/fast.yaml")
	}
	gwSink = otlptest.Start(t, otlptest.Options{})
	ports := e2etest.NewPorts(t)
	gateway = newCollector(t, ports, otelcol, "gateway", gwConfigs,
		"DELTAQ_DIAGRAM="+demoDiagram(t), "DELTAQ_SINK="+gwSink.Addr(), "DELTAQ_EXPECTED_AGENTS=2")
	for i := range 2 {
		id := fmt.Sprintf("agent-%d", i)
		agents = append(agents, newCollector(t, ports, otelcol, id, agConfigs,
			"DELTAQ_AGENT_ID="+id, "DELTAQ_GATEWAY="+gateway.addr))
	}
	startAll(t, append([]*collector{gateway}, agents...)...)
	return gateway, agents, gwSink
}
