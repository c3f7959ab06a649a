// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestEndpointUpLater: with the endpoint down from the start, the windows
// closed meanwhile fill the sending queue (3 requests) and the rest are
// dropped and counted; once the endpoint comes up, the queued windows are
// sent, each once and in order, and so are those closed at shutdown.
// Every window is either received or counted as dropped (README, "Failures
// downstream"); over OTLP/gRPC and OTLP/HTTP alike.
func TestEndpointUpLater(t *testing.T) {
	t.Run("grpc", func(t *testing.T) {
		endpointUpLater(t, func(addr string) *Config {
			cfg := grpcConfig(addr)
			cfg.RetryConfig = fastRetries()
			cfg.QueueConfig.Get().QueueSize = 3
			return cfg
		}, func(t *testing.T, addr string) func() []pmetric.Metrics {
			var mu sync.Mutex
			var got []pmetric.Metrics
			srv, err := otlprecv.Listen(addr, otlprecv.Handlers{Metrics: func(md pmetric.Metrics) otlprecv.Reply {
				mu.Lock()
				defer mu.Unlock()
				cp := pmetric.NewMetrics()
				md.CopyTo(cp)
				got = append(got, cp)
				return otlprecv.Reply{}
			}, Logs: func(plog.Logs) otlprecv.Reply { return otlprecv.Reply{} }})
			require.NoError(t, err)
			t.Cleanup(func() { srv.Stop(0) })
			return func() []pmetric.Metrics {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(got)
			}
		})
	})
	t.Run("http", func(t *testing.T) {
		endpointUpLater(t, func(addr string) *Config {
			cfg := createDefaultConfig().(*Config)
			h := cfg.HTTP.GetOrInsertDefault()
			h.ClientConfig.Endpoint = "http://" + addr
			h.RetryConfig = fastRetries()
			h.QueueConfig.Get().QueueSize = 3
			return cfg
		}, func(t *testing.T, addr string) func() []pmetric.Metrics {
			lis, err := net.Listen("tcp", addr)
			require.NoError(t, err)
			h := new(httpReceiver)
			srv := httptest.NewUnstartedServer(h)
			srv.Listener = lis
			srv.Start()
			t.Cleanup(srv.Close)
			return func() []pmetric.Metrics {
				h.mu.Lock()
				defer h.mu.Unlock()
				return slices.Clone(h.metrics)
			}
		})
	})
}

// fastRetries retries every 10 to 50 ms for a minute.
func fastRetries() configretry.BackOffConfig {
	r := configretry.NewDefaultBackOffConfig()
	r.InitialInterval, r.MaxInterval, r.MaxElapsedTime = 10*time.Millisecond, 50*time.Millisecond, time.Minute
	return r
}

// endpointUpLater closes windows of an exporter of config(addr) while
// nothing listens at addr, then has serve(addr) listen there, and checks
// what the endpoint received (serve's function) and what was dropped.
func endpointUpLater(t *testing.T, config func(addr string) *Config, serve func(t *testing.T, addr string) func() []pmetric.Metrics) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())

	cfg := config(addr)
	require.NoError(t, confmap.Validate(cfg))
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel)
	const windows = 8
	for w := range windows {
		base := time.Duration(w) * time.Second
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", base+ms(100))))
		clk.Tick(at(base + 2*time.Second))
	}
	// Windows ending at 1 s … 8 s closed (the default lag keeps the next
	// open), the one ending at 9 s and the partial one at 10 s closed at
	// shutdown.
	const closed = windows + 2
	received := serve(t, addr)
	// The queue drains once the client has reconnected (gRPC's backoff, 1 s
	// at first); the bound only turns a hang into a failure.
	require.Eventually(t, func() bool { return len(received()) >= 3 }, 30*time.Second, 10*time.Millisecond,
		"the queued windows never reached the endpoint once it was up")
	require.NoError(t, exp.shutdown(context.Background()))

	ends := map[pcommon.Timestamp]int{}
	var order []pcommon.Timestamp
	for _, md := range received() {
		eachPoint(md, func(name string, _ pcommon.Map, ts pcommon.Timestamp, _ uint64) {
			if name == contract.MetricObserved {
				ends[ts]++
				order = append(order, ts)
			}
		})
	}
	dropped := telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_dropped")["signal=metrics"]
	for ts, n := range ends {
		require.Equal(t, 1, n, "window ending at %v received %d times", ts.AsTime(), n)
	}
	require.IsIncreasing(t, order, "windows out of order")
	require.Equal(t, at(time.Second), order[0].AsTime(), "the first window, queued while the endpoint was down, was lost")
	require.Equal(t, at(closed*time.Second), order[len(order)-1].AsTime(), "the window closed at shutdown was lost")
	require.Positive(t, dropped, "the queue holds 3 requests: windows beyond were dropped")
	require.Equal(t, int64(closed), int64(len(ends))+dropped, "windows received %d, counted as dropped %d", len(ends), dropped)
}

// TestRequestLargerThanQueueDropped: with sizer bytes and a queue_size
// below a window's request, the request is never queued; it is dropped,
// counted in output_dropped and logged with the queue's reason (README,
// "OTLP output"), and a window that fits still goes out.
func TestRequestLargerThanQueueDropped(t *testing.T) {
	srv := otlptest.Start(t, otlptest.Options{})
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"endpoint": srv.Addr(), "tls": map[string]any{"insecure": true},
		"sending_queue": map[string]any{"sizer": "bytes", "queue_size": 30000},
	}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	zc, logs := observer.New(zapcore.WarnLevel)
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel, func(_ *deltaqExporter, s *core.Settings) { s.Telemetry.Logger = zap.New(zc) })
	// A window of one probe fits in 30000 bytes; one of 100 does not.
	require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", ms(100))))
	clk.Tick(at(2 * time.Second))
	for i := range 100 {
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances(fmt.Sprintf("p%d", i), time.Second+ms(100))))
	}
	clk.Tick(at(3 * time.Second))
	require.NoError(t, exp.shutdown(context.Background()))

	require.Positive(t, srv.Counts().Requests, "the window that fits was sent")
	dropped := telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_dropped")["signal=metrics"]
	require.Positive(t, dropped, "the window larger than the queue was not counted as dropped")
	warned := 0
	for _, e := range logs.FilterMessage("dropping ΔQ output: the next consumer did not accept it").All() {
		require.Contains(t, e.ContextMap()["error"], "element size too large")
		warned++
	}
	require.Equal(t, int(dropped), warned, "one warning per request dropped")
}
