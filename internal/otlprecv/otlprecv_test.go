// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlprecv_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// TestServeGzipAndUnserved: a gzip-compressed request (what the collector's
// OTLP exporters send by default) reaches the handler and gets its partial
// success; a signal without a handler answers Unimplemented.
func TestServeGzipAndUnserved(t *testing.T) {
	got := make(chan int, 1)
	s, err := otlprecv.Listen("127.0.0.1:0", otlprecv.Handlers{Metrics: func(md pmetric.Metrics) otlprecv.Reply {
		got <- md.DataPointCount()
		return otlprecv.Reply{Rejected: 2, Message: "two bad"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(0)
	conn := otlptest.Dial(t, s.Addr())
	md := pmetric.NewMetrics()
	dps := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptySum().DataPoints()
	for range 3 {
		dps.AppendEmpty().SetDoubleValue(1)
	}
	resp, err := pmetricotlp.NewGRPCClient(conn).Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(md),
		grpc.UseCompressor(gzip.Name))
	if err != nil || resp.PartialSuccess().RejectedDataPoints() != 2 || resp.PartialSuccess().ErrorMessage() != "two bad" {
		t.Fatalf("export: %v, rejected %d %q; want a partial success of 2", err, resp.PartialSuccess().RejectedDataPoints(), resp.PartialSuccess().ErrorMessage())
	}
	if n := <-got; n != 3 {
		t.Errorf("handler saw %d data points, want 3", n)
	}
	_, err = plogotlp.NewGRPCClient(conn).Export(context.Background(), plogotlp.NewExportRequestFromLogs(plog.NewLogs()))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("logs without a handler: %v, want Unimplemented", err)
	}
}

// TestStopGraceful: Stop lets a request in flight get its answer within the
// grace period, and Done then yields nil.
func TestStopGraceful(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s, err := otlprecv.Listen("127.0.0.1:0", otlprecv.Handlers{Logs: func(plog.Logs) otlprecv.Reply {
		close(entered)
		<-release
		return otlprecv.Reply{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := plogotlp.NewGRPCClient(otlptest.Dial(t, s.Addr())).Export(context.Background(), plogotlp.NewExportRequestFromLogs(plog.NewLogs()))
		errc <- err
	}()
	<-entered
	stopped := make(chan struct{})
	go func() {
		s.Stop(10 * time.Second)
		close(stopped)
	}()
	time.Sleep(50 * time.Millisecond) // Stop is now waiting for the request
	close(release)
	if err := <-errc; err != nil {
		t.Errorf("the request in flight during Stop failed: %v", err)
	}
	<-stopped
	if err := <-s.Done(); err != nil {
		t.Errorf("Done after Stop: %v, want nil", err)
	}
}

func TestListenError(t *testing.T) {
	if _, err := otlprecv.Listen("127.0.0.1:-1", otlprecv.Handlers{}); err == nil || !strings.HasPrefix(err.Error(), "listen: ") {
		t.Errorf("listening on port -1: %v, want a listen error", err)
	}
}

// TestIterators walks requests of two resources with two scopes each, and
// stops early when asked to.
func TestIterators(t *testing.T) {
	td := ptrace.NewTraces()
	md := pmetric.NewMetrics()
	ld := plog.NewLogs()
	var want []string
	for r := range 2 {
		rs, rm, rl := td.ResourceSpans().AppendEmpty(), md.ResourceMetrics().AppendEmpty(), ld.ResourceLogs().AppendEmpty()
		for s := range 2 {
			spans, ms, recs := rs.ScopeSpans().AppendEmpty().Spans(), rm.ScopeMetrics().AppendEmpty().Metrics(), rl.ScopeLogs().AppendEmpty().LogRecords()
			for i := range r + s + 1 { // 1, 2, 2, 3 items
				name := string(rune('a'+r)) + string(rune('a'+s)) + string(rune('0'+i))
				spans.AppendEmpty().SetName(name)
				ms.AppendEmpty().SetName(name)
				recs.AppendEmpty().SetEventName(name)
				want = append(want, name)
			}
		}
	}
	var spans, metrics, records []string
	for sp := range otlprecv.Spans(td) {
		spans = append(spans, sp.Name())
	}
	for m := range otlprecv.Metrics(md) {
		metrics = append(metrics, m.Name())
	}
	for lr := range otlprecv.LogRecords(ld) {
		records = append(records, lr.EventName())
	}
	for what, got := range map[string][]string{"spans": spans, "metrics": metrics, "log records": records} {
		if !slices.Equal(got, want) {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
	n := 0
	for range otlprecv.Metrics(md) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("break after 3 metrics: %d", n)
	}
}
