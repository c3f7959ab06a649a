// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestShutdownKeepsToItsDeadline: against an endpoint that takes every
// request and never answers, a shutdown whose context ends after 200 ms
// returns soon after, not after one attempt of timeout (5 s) per request
// still queued; every request it did not send is counted as dropped, and
// it says its deadline passed.
func TestShutdownKeepsToItsDeadline(t *testing.T) {
	arrived := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := otlptest.Start(t, otlptest.Options{Metrics: func(pmetric.Metrics) otlptest.Reply {
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-release
		return otlptest.Reply{}
	}})
	t.Cleanup(func() { close(release) }) // before the receiver stops
	cfg := grpcConfig(srv.Addr())
	cfg.QueueConfig.Get().NumConsumers = 1
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	sent := &countingMetrics{}
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel, counting(sent))

	// Windows [0 s, 1 s), [1 s, 2 s) and [2 s, 3 s) closed, the first
	// being sent, and [3 s, 4 s) open: four requests at least (the
	// shutdown closes every window still open).
	for w := range 4 {
		base := time.Duration(w) * time.Second
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", base+ms(100))))
		if w < 3 {
			clk.Tick(at(base + 2*time.Second))
		}
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first window was not sent")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- exp.shutdown(ctx) }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.DeadlineExceeded, "the shutdown says its deadline passed")
	case <-time.After(3 * time.Second):
		t.Fatalf("Shutdown with a 200 ms deadline still running after %v", time.Since(start))
	}
	require.GreaterOrEqual(t, sent.requests, 4, "the windows handed to the sender")
	dropped := telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_dropped")
	assert.Equal(t, map[string]int64{"signal=metrics": int64(sent.requests)}, dropped, "every request unanswered counted as dropped")
}

// TestPartialSuccessCounted: the items an endpoint rejects in OTLP partial
// successes are counted, by signal (output_rejected), though the senders'
// warnings are not logged (here no logger at all): an operator can alert on
// them. The collector's exporter telemetry counts each item sent once.
func TestPartialSuccessCounted(t *testing.T) {
	srv := otlptest.Start(t, otlptest.Options{
		Metrics: func(pmetric.Metrics) otlptest.Reply { return otlptest.Reply{Rejected: 3, Message: "3 points refused"} },
		Logs:    func(plog.Logs) otlptest.Reply { return otlptest.Reply{Rejected: 1, Message: "1 record refused"} },
	})
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, contractConfig(grpcConfig(srv.Addr())), clk, tel)
	contractWindows(t, exp, clk)
	srv.Until(t, "a window's logs", 30*time.Second, func() bool { return srv.Counts().LogRecords > 0 })
	require.NoError(t, exp.shutdown(context.Background()))

	var metricsRequests, logsRequests int64
	for range srv.Metrics() {
		metricsRequests++
	}
	for range srv.Logs() {
		logsRequests++
	}
	assert.Equal(t, map[string]int64{"signal=metrics": 3 * metricsRequests, "signal=logs": logsRequests},
		telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_rejected"), "3 points per metrics request, 1 record per logs request")
	var sentPoints int64
	for _, n := range telemetrytest.Sum(t, tel, "otelcol_exporter_sent_metric_points") {
		sentPoints += n
	}
	assert.Equal(t, int64(srv.Counts().DataPoints), sentPoints, "each point sent counted once")
}
