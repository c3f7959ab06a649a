// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestGatewayMergesWhileItsWindowsClose: the windows of four agents
// arrive from a goroutine each while the gateway's own timer closes its
// windows. Every window sent has one fate, and every instance of the
// agents is counted once: in a window of the gateway (its cumulative
// outcomes at the end), or dropped as too late with a window that came
// after its window closed.
func TestGatewayMergesWhileItsWindowsClose(t *testing.T) {
	start := at(time.Second)
	clk := coretest.NewClock(start)
	gcfg := testConfig()
	gcfg.Lag = 500 * time.Millisecond
	gcfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	gateway := newHarnessWith(t, gcfg, start, func(s *Settings) { s.Now, s.Ticks, s.Ticked = clk.Now, clk.C, clk.Ticked })

	const agents, windows, perWindow = 4, 12, 30
	batches := make([][]pmetric.Metrics, agents)
	var instances, sent int64
	for a := range agents {
		agent := agentHarness(t, fmt.Sprintf("agent-%d", a), start)
		for w := range windows {
			var specs []span
			for i := range perWindow {
				s := span{probe: "p", outcome: contract.Success, end: time.Duration(w)*time.Second + time.Duration(i*30)*time.Millisecond + ms(1),
					delay: ms(float64(1 + i%40)), dmax: 100 * time.Millisecond, bins: 100}
				if i%10 == 3 {
					s.outcome = contract.Failure
				}
				specs = append(specs, s)
			}
			agent.consume(specs...)
			instances += perWindow
			agent.obs.tick(at(time.Duration(w+2) * time.Second))
		}
		batches[a] = agent.metrics.AllMetrics()
		for _, md := range batches[a] {
			forEachMetric(md, func(m pmetric.Metric) {
				if m.Name() == contract.MetricWindow {
					sent += int64(m.Histogram().DataPoints().Len())
				}
			})
		}
	}

	// Each agent sends its window w's batch once the gateway's clock is
	// past the window's end, as agents do, while the gateway's timer
	// closes its windows: some come within the lag, some after it.
	var wg sync.WaitGroup
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w, md := range batches[a] {
				for clk.Now().Before(at(time.Duration(w+1)*time.Second + time.Duration(a)*150*time.Millisecond)) {
					time.Sleep(100 * time.Microsecond)
				}
				assert.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	now := start
loop:
	for {
		select {
		case <-done:
			break loop
		default:
		}
		now = now.Add(50 * time.Millisecond)
		clk.Tick(now)
		time.Sleep(200 * time.Microsecond)
	}
	require.NoError(t, gateway.obs.Shutdown(context.Background()))

	var fates int64
	for fate, n := range telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions") {
		if fate != "fate=idle" {
			fates += n
		}
	}
	assert.Equal(t, sent, fates, "every window sent has one fate")
	st := gateway.obs.Stats()
	var dropped int64
	for _, n := range st.Dropped {
		dropped += n
	}
	assert.Equal(t, instances, st.Counted+dropped, "every instance counted or dropped, once")
	var total int64
	for _, n := range outcomeCounts(t, gateway, "p") {
		total += n
	}
	assert.Equal(t, st.Counted, total, "the last cumulative outcomes are every instance counted")
}
