// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// traces returns n spans named s0, s1, … in one resource.
func traces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range n {
		spans.AppendEmpty().SetName("s" + string(rune('0'+i)))
	}
	return td
}

// metrics returns one gauge with n data points.
func metrics(n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	dps := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints()
	for i := range n {
		dps.AppendEmpty().SetIntValue(int64(i))
	}
	return md
}

// logs returns n log records.
func logs(n int) plog.Logs {
	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for range n {
		recs.AppendEmpty().Body().SetStr("r")
	}
	return ld
}

// TestReceiverKeepsAndCounts sends one request of each signal: the receiver
// counts their items and keeps copies equal to what was sent.
func TestReceiverKeepsAndCounts(t *testing.T) {
	r := Start(t, Options{})
	conn := Dial(t, r.Addr())
	ctx := context.Background()
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(traces(3))); err != nil {
		t.Fatal(err)
	}
	if _, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(metrics(2))); err != nil {
		t.Fatal(err)
	}
	if _, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(logs(4))); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Counts(), (Counts{Requests: 3, Spans: 3, DataPoints: 2, LogRecords: 4}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if tr := r.Traces(); len(tr) != 1 || tr[0].SpanCount() != 3 ||
		tr[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(2).Name() != "s2" {
		t.Errorf("kept traces %v, want the 3 spans sent", tr)
	}
	if m := r.Metrics(); len(m) != 1 || m[0].DataPointCount() != 2 {
		t.Errorf("kept metrics %v, want the 2 data points sent", m)
	}
	if l := r.Logs(); len(l) != 1 || l[0].LogRecordCount() != 4 {
		t.Errorf("kept logs %v, want the 4 records sent", l)
	}
}

// TestReceiverReplies: a hook's partial rejection reaches the sender and the
// request is kept; a hook's error reaches the sender with its code and the
// request is neither kept nor counted; CountOnly keeps nothing.
func TestReceiverReplies(t *testing.T) {
	var fail atomic.Bool
	r := Start(t, Options{Traces: func(td ptrace.Traces) Reply {
		if fail.Load() {
			return Reply{Err: status.Error(codes.Unavailable, "not now")}
		}
		return Reply{Rejected: 1, Message: "one too many"}
	}})
	client := ptraceotlp.NewGRPCClient(Dial(t, r.Addr()))
	resp, err := client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(traces(2)))
	if err != nil || resp.PartialSuccess().RejectedSpans() != 1 || resp.PartialSuccess().ErrorMessage() != "one too many" {
		t.Fatalf("partial success: %v, rejected %d %q", err, resp.PartialSuccess().RejectedSpans(), resp.PartialSuccess().ErrorMessage())
	}
	fail.Store(true)
	_, err = client.Export(context.Background(), ptraceotlp.NewExportRequestFromTraces(traces(5)))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("failed request: error %v, want code Unavailable", err)
	}
	if got := r.Counts(); got != (Counts{Requests: 1, Spans: 2}) || len(r.Traces()) != 1 {
		t.Errorf("counts %+v and %d kept requests, want the partly rejected request only", got, len(r.Traces()))
	}

	c := Start(t, Options{CountOnly: true})
	if _, err := pmetricotlp.NewGRPCClient(Dial(t, c.Addr())).Export(context.Background(),
		pmetricotlp.NewExportRequestFromMetrics(metrics(7))); err != nil {
		t.Fatal(err)
	}
	if got := c.Counts(); got.DataPoints != 7 || len(c.Metrics()) != 0 {
		t.Errorf("CountOnly: counts %+v, %d kept; want 7 points counted and nothing kept", got, len(c.Metrics()))
	}
}

// TestWaitFor waits for records that another goroutine sends in two
// requests after the wait has begun.
func TestWaitFor(t *testing.T) {
	r := Start(t, Options{})
	client := plogotlp.NewGRPCClient(Dial(t, r.Addr()))
	errc := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		for range 2 {
			if _, err := client.Export(context.Background(), plogotlp.NewExportRequestFromLogs(logs(3))); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	got := r.WaitFor(t, Counts{LogRecords: 6}, 30*time.Second)
	if got.LogRecords != 6 || got.Requests != 2 {
		t.Errorf("WaitFor returned %+v, want 2 requests of 6 records", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestUntil waits for a condition on the kept data, met by the second of
// two requests that another goroutine sends after the wait has begun.
func TestUntil(t *testing.T) {
	r := Start(t, Options{})
	client := pmetricotlp.NewGRPCClient(Dial(t, r.Addr()))
	errc := make(chan error, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		for _, n := range []int{1, 4} {
			if _, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(metrics(n))); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	r.Until(t, "a request of 4 points", 30*time.Second, func() bool {
		for _, md := range r.Metrics() {
			if md.DataPointCount() == 4 {
				return true
			}
		}
		return false
	})
	if got := r.Counts(); got != (Counts{Requests: 2, DataPoints: 5}) {
		t.Errorf("counts %+v, want both requests", got)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestServerOptionsLimitTheMessageSize: with grpc.MaxRecvMsgSize the
// receiver refuses a larger request as gRPC does, with ResourceExhausted,
// and neither keeps nor counts it; a request within the limit passes.
func TestServerOptionsLimitTheMessageSize(t *testing.T) {
	r := Start(t, Options{ServerOptions: []grpc.ServerOption{grpc.MaxRecvMsgSize(1 << 10)}})
	client := pmetricotlp.NewGRPCClient(Dial(t, r.Addr()))
	// An int gauge point takes at least 11 bytes on the wire (its tag and
	// length, and the tag and 8 bytes of its value): 200 of them exceed
	// 1 KiB, 10 do not.
	big := pmetricotlp.NewExportRequestFromMetrics(metrics(200))
	if b, _ := big.MarshalProto(); len(b) <= 1<<10 {
		t.Fatalf("the large request is only %d bytes", len(b))
	}
	_, err := client.Export(context.Background(), big)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("large request: error %v, want code ResourceExhausted", err)
	}
	if _, err := client.Export(context.Background(), pmetricotlp.NewExportRequestFromMetrics(metrics(10))); err != nil {
		t.Fatal(err)
	}
	if got := r.Counts(); got != (Counts{Requests: 1, DataPoints: 10}) || len(r.Metrics()) != 1 {
		t.Errorf("counts %+v, %d kept; want the small request only", got, len(r.Metrics()))
	}
}
