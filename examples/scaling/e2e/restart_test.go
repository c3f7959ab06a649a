// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// TestGatewayRestartMissesNoAgent: two idle agents and a gateway with
// expected_agents 2 (testdata/fast.yaml: windows of 500 ms; the gateway's
// lag 2 s). The gateway is stopped and, 2 s later, started again while the
// agents run on; their exporters find it again after gRPC's backoff. Neither
// at its first start nor after the restart does it count a window missing
// an agent: the windows it opens at its start reach back its lag, and
// their agents sent their windows of them before it could take them, and
// it waits for both agents to be back before it counts. Then agent-1
// stops, and the gateway counts the windows after as missing it. Before,
// every start counted the windows opened before it once the first agent's
// word had arrived (1 to 4 a start here), and DeltaQAgentsMissing fired at
// every gateway deploy.
func TestGatewayRestartMissesNoAgent(t *testing.T) {
	began := time.Now()
	gateway, agents, gwSink := startPair(t, gate(t), true)
	missing := func() int64 { return scrapeSum(t, gateway.telemetry, missingName) }
	// The window ending four intervals from now, closed with both agents.
	settled := func(what string, from int) map[int64]int64 {
		t.Helper()
		end := nextEnd(time.Now()) + int64(4*fastInterval)
		c := waitWindowFrom(t, gwSink, from, end)
		if c[end] != 2 {
			t.Fatalf("%s: the window ending %v has %d contributors, want both agents", what, time.Unix(0, end).UTC(), c[end])
		}
		return c
	}

	first := settled("first start", 0)
	if m := missing(); m != 0 {
		t.Errorf("first start: %s = %d, want 0 (contributors by window end %s)", missingName, m, byWindow(first))
	}

	gateway.StopCleanly(t)
	time.Sleep(2 * time.Second)
	mark := len(gwSink.Metrics())
	restarted := time.Now()
	gateway.start(t)
	gateway.waitReady(t)
	again := settled("after the restart", mark)
	if m := missing(); m != 0 {
		t.Errorf("after the restart: %s = %d, want 0 (contributors by window end %s)", missingName, m, byWindow(again))
	}

	// agent-1 stops (its last windows flushed): the windows after it miss
	// it, and the gateway, settled, counts them. The agents logged, as
	// errors, the exports the outage cost: they stop with status 0.
	stop := func(c *collector) {
		if err := c.Stop(t); err != nil {
			t.Errorf("%s exited with %v, want status 0", c.name, err)
		}
	}
	stop(agents[1])
	stopped := nextEnd(time.Now())
	e2etest.Until(t, missingName+" counting the windows after agent-1 stopped", 10*time.Second, func() bool {
		return missing() >= 2
	}, gateway.Proc)
	after := fold(gwSink.Metrics()[mark:]).contributors
	for end, c := range after {
		if end > stopped && c != 1 {
			t.Errorf("window ending %v, after agent-1 stopped: %d contributors, want 1", time.Unix(0, end).UTC(), c)
		}
	}
	stop(agents[0])
	gateway.StopCleanly(t)
	t.Logf("contributors by window end at the first start %s; after the restart (%s) %s; done after %v",
		byWindow(first), restarted.UTC().Format("05.000"), byWindow(after), time.Since(began).Round(time.Millisecond))
}

// nextEnd returns the end of the window of fastInterval holding t.
func nextEnd(t time.Time) int64 {
	return (t.UnixNano()/int64(fastInterval) + 1) * int64(fastInterval)
}

// waitWindowFrom waits until the gateway has emitted, in the requests its
// sink got from the from-th on, the window ending at end, and returns the
// contributors of their windows by end.
func waitWindowFrom(t *testing.T, gwSink *otlptest.Receiver, from int, end int64) map[int64]int64 {
	t.Helper()
	var c map[int64]int64
	gwSink.Until(t, "the gateway's window ending "+time.Unix(0, end).UTC().String(), 15*time.Second, func() bool {
		c = fold(gwSink.Metrics()[from:]).contributors
		_, ok := c[end]
		return ok
	})
	return c
}

// byWindow formats contributors by window end as seconds:agents.
func byWindow(c map[int64]int64) string {
	var per []string
	for _, end := range slices.Sorted(maps.Keys(c)) {
		per = append(per, fmt.Sprintf("%s:%d", time.Unix(0, end).UTC().Format("05.0"), c[end]))
	}
	return strings.Join(per, " ")
}
