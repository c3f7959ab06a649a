// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// blockedTraces is a next consumer that takes nothing until its context
// ends, as an exporter without a sending queue, or with block_on_overflow,
// does while its endpoint is down.
type blockedTraces struct{ calls atomic.Int64 }

func (b *blockedTraces) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *blockedTraces) ConsumeTraces(ctx context.Context, _ ptrace.Traces) error {
	b.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// within fails the test unless f returns within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		require.FailNow(t, what+" did not return", "waited %v", d)
	}
}

// TestBlockedNextConsumer: a next consumer that blocks holds neither the
// timer, whose later timeouts still fire (the blocked tick's spans are
// dropped and counted), nor the shutdown, which used to wait for the timer
// for as long as the consumer blocked (an exporter's retries: 5 minutes;
// a blocking queue: for good).
func TestBlockedNextConsumer(t *testing.T) {
	next := new(blockedTraces)
	h := newHarnessWith(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)), next)
	h.p.sendTimeout = 20 * time.Millisecond

	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	within(t, 5*time.Second, "a tick", func() { h.clock.tick(base.Add(time.Second)) })
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 2, at: base.Add(time.Second)}))
	within(t, 5*time.Second, "the next tick", func() { h.clock.tick(base.Add(2 * time.Second)) })
	assert.Equal(t, int64(2), next.calls.Load(), "each tick's timeouts offered")
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_synthetic_dropped"))
	assert.Equal(t, map[string]int64{"probe=checkout": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))

	// The shutdown ends a send still waiting.
	h.p.sendTimeout = time.Hour
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 3, at: base.Add(2 * time.Second)}))
	h.clock.set(base.Add(3 * time.Second))
	h.clock.ch <- base.Add(3 * time.Second)
	require.Eventually(t, func() bool { return next.calls.Load() == 3 }, 5*time.Second, time.Millisecond)
	within(t, 5*time.Second, "the shutdown", func() {
		require.NoError(t, h.traces.Shutdown(context.Background()))
	})
}
