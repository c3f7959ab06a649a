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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// TestWindowsArriveInOrder: with the default sending queue, a window whose
// first attempt fails (Unavailable: retried after initial_interval) still
// arrives before the next window. The cumulative series of a probe sent out
// of order are refused by a backend that refuses out-of-order samples
// (Prometheus) or read as a reset; with several queue consumers the next
// window was sent while the first waited for its retry.
func TestWindowsArriveInOrder(t *testing.T) {
	failed := false
	srv := otlptest.Start(t, otlptest.Options{Metrics: func(md pmetric.Metrics) otlptest.Reply {
		// The first window is the one without probe b, whose first
		// instance is in the second.
		if !failed && !carriesProbe(md, "b") {
			failed = true
			return otlptest.Reply{Err: status.Error(codes.Unavailable, "busy")}
		}
		return otlptest.Reply{}
	}})
	cfg := grpcConfig(srv.Addr())
	cfg.RetryConfig.InitialInterval = 300 * time.Millisecond
	cfg.RetryConfig.RandomizationFactor = 0
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, nil)
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()

	require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("a", ms(100))))
	clk.Tick(at(2 * time.Second))
	require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("a", time.Second+ms(100))))
	require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("b", time.Second+ms(100))))
	clk.Tick(at(3 * time.Second))

	srv.Until(t, "both windows", 10*time.Second, func() bool { return srv.Counts().Requests >= 2 })
	got := srv.Metrics()
	require.True(t, failed, "the first window's first attempt failed")
	assert.False(t, carriesProbe(got[0], "b"), "the first window arrived first")
	assert.True(t, carriesProbe(got[1], "b"), "the second window arrived second")
}

// TestShutdownGivesUpOnADeadEndpoint: the collector shuts its components
// down without a deadline, and a sender drains its queue then, one attempt
// per request. Against an endpoint that takes requests and never answers,
// each attempt lasted timeout: with one consumer, the default, a stop (or a
// configuration reload) waited timeout × the requests queued, 5 minutes for
// a full queue at the defaults. Once an attempt of the drain has failed as
// the endpoint's (not the request's) fault, the requests still queued are
// dropped unsent and counted.
func TestShutdownGivesUpOnADeadEndpoint(t *testing.T) {
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
	cfg.TimeoutConfig.Timeout = 500 * time.Millisecond
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	sent := &countingMetrics{}
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel, counting(sent))
	for w := range 8 {
		base := time.Duration(w) * time.Second
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", base+ms(100))))
		clk.Tick(at(base + 2*time.Second))
	}
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first window was not sent")
	}

	start := time.Now()
	require.NoError(t, exp.shutdown(context.Background()))
	// One attempt or two of 500 ms, where every request's took 4 s.
	assert.Less(t, time.Since(start), 2500*time.Millisecond, "the shutdown tried every request queued")
	require.GreaterOrEqual(t, sent.requests, 8)
	dropped := telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_dropped")["signal=metrics"]
	assert.GreaterOrEqual(t, dropped, int64(sent.requests-2), "the requests not tried counted as dropped")
	assert.Less(t, dropped, int64(sent.requests), "the request that failed is the sender's failure, not dropped unsent")
}
