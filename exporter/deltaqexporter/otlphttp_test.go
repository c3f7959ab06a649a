// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestOTLPHTTPEndpoints: with an http section the otlp_http exporter posts
// OTLP/HTTP protobuf, here to a metrics_endpoint and a logs_endpoint of
// their own, and every metric and event of the output contract arrives.
func TestOTLPHTTPEndpoints(t *testing.T) {
	var mu sync.Mutex
	names := map[string]bool{}
	events := map[string]bool{}
	got := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The otlp_http exporter compresses with gzip by default.
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			rd = zr
		}
		body, err := io.ReadAll(rd)
		if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/dq/metrics":
			req := pmetricotlp.NewExportRequest()
			if req.UnmarshalProto(body) != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			ms := req.Metrics().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
			for i := 0; i < ms.Len(); i++ {
				names[ms.At(i).Name()] = true
			}
		case "/dq/events":
			req := plogotlp.NewExportRequest()
			if req.UnmarshalProto(body) != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			lrs := req.Logs().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := 0; i < lrs.Len(); i++ {
				events[lrs.At(i).EventName()] = true
			}
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		got <- struct{}{}
	}))
	defer srv.Close()

	cfg := contractConfig(createDefaultConfig().(*Config))
	hc := cfg.HTTP.GetOrInsertDefault()
	hc.MetricsEndpoint = srv.URL + "/dq/metrics"
	hc.LogsEndpoint = srv.URL + "/dq/events"
	require.NoError(t, confmap.Validate(cfg))
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, nil)
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()
	contractWindows(t, exp, clk)

	deadline := time.After(30 * time.Second)
	for {
		mu.Lock()
		done := len(names) == len(allMetrics) && len(events) == len(allEvents)
		mu.Unlock()
		if done {
			break
		}
		select {
		case <-got:
		case <-deadline:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("OTLP/HTTP endpoint received metrics %v and events %v", names, events)
		}
	}
}

// TestLogsToTheirOwnGRPCEndpoint: with a logs section the trigger and
// snapshot events go to its endpoint, the metrics to the top-level one.
func TestLogsToTheirOwnGRPCEndpoint(t *testing.T) {
	metricsSrv, logsSrv := otlptest.Start(t, otlptest.Options{}), otlptest.Start(t, otlptest.Options{})
	cfg := contractConfig(grpcConfig(metricsSrv.Addr()))
	lc := otlpexporter.NewFactory().CreateDefaultConfig().(*otlpexporter.Config)
	lc.ClientConfig.Endpoint = logsSrv.Addr()
	lc.ClientConfig.TLS.Insecure = true
	cfg.Logs = configoptional.Some(*lc)
	require.NoError(t, confmap.Validate(cfg))
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, nil)
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()
	contractWindows(t, exp, clk)

	metricsSrv.Until(t, "every metric", 30*time.Second, func() bool { m, _ := names(metricsSrv); return len(m) == len(allMetrics) })
	logsSrv.Until(t, "every event", 30*time.Second, func() bool { _, e := names(logsSrv); return len(e) == len(allEvents) })
	m, e := names(metricsSrv)
	assert.Equal(t, allMetrics, sortedKeys(m))
	assert.Empty(t, e, "no event at the metrics endpoint")
	m, e = names(logsSrv)
	assert.Empty(t, m, "no metric at the logs endpoint")
	assert.Equal(t, allEvents, sortedKeys(e))
}

// TestPartialSuccessCountedOverHTTP: over OTLP/HTTP too, the items the
// endpoint rejects in partial successes are counted, by signal.
func TestPartialSuccessCountedOverHTTP(t *testing.T) {
	var mu sync.Mutex
	requests := map[string]int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		switch r.URL.Path {
		case "/v1/metrics":
			resp := pmetricotlp.NewExportResponse()
			resp.PartialSuccess().SetRejectedDataPoints(2)
			body, _ = resp.MarshalProto()
		case "/v1/logs":
			resp := plogotlp.NewExportResponse()
			resp.PartialSuccess().SetRejectedLogRecords(1)
			body, _ = resp.MarshalProto()
		default:
			w.WriteHeader(http.StatusNotFound)
			return
		}
		mu.Lock()
		requests[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	cfg := contractConfig(createDefaultConfig().(*Config))
	cfg.HTTP.GetOrInsertDefault().ClientConfig.Endpoint = srv.URL
	require.NoError(t, confmap.Validate(cfg))
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel)
	contractWindows(t, exp, clk)
	require.NoError(t, exp.shutdown(context.Background())) // the queues drained

	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, requests["/v1/logs"], "a window's logs were sent")
	assert.Equal(t, map[string]int64{"signal=metrics": 2 * requests["/v1/metrics"], "signal=logs": requests["/v1/logs"]},
		telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_rejected"))
}
