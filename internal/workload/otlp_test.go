// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

var epoch = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func inst(probe string, span byte, parent byte, start time.Duration) Instance {
	in := Instance{Probe: probe, TraceID: [16]byte{1}, SpanID: [8]byte{span}, Start: start}
	if parent != 0 {
		in.ParentID = [8]byte{parent}
	}
	return in
}

func spansByName(t *testing.T, td ptrace.Traces) map[string]ptrace.Span {
	t.Helper()
	out := make(map[string]ptrace.Span)
	sp := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range sp.Len() {
		out[sp.At(i).Name()] = sp.At(i)
	}
	return out
}

func TestBatcherSpans(t *testing.T) {
	b := &Batcher{Epoch: epoch, Starts: StartsNone, ServiceName: "svc", ProbeAttribute: true}
	job := inst(ProbeJob, 1, 0, time.Second)
	w1 := inst(ProbeWorker1, 2, 1, time.Second)
	b.Started(job)
	b.Started(w1)
	b.Ended(w1, time.Second+3*time.Millisecond, false)
	b.Ended(job, time.Second+3*time.Millisecond, true)
	if b.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", b.Pending())
	}
	out := b.Flush(2 * time.Second)
	if out.Spans != 2 || out.Starts != 0 || out.Traces.SpanCount() != 2 {
		t.Fatalf("flush: %d spans (%d in traces), %d starts; want 2 and 0", out.Spans, out.Traces.SpanCount(), out.Starts)
	}
	if got, _ := out.Traces.ResourceSpans().At(0).Resource().Attributes().Get("service.name"); got.Str() != "svc" {
		t.Errorf("service.name = %q", got.Str())
	}
	spans := spansByName(t, out.Traces)
	s := spans[ProbeWorker1]
	if s.StartTimestamp().AsTime() != epoch.Add(time.Second) || s.EndTimestamp().AsTime() != epoch.Add(time.Second+3*time.Millisecond) {
		t.Errorf("worker_1 span runs %v – %v", s.StartTimestamp(), s.EndTimestamp())
	}
	if s.ParentSpanID() != pcommon.SpanID(job.SpanID) || s.TraceID() != pcommon.TraceID(job.TraceID) || s.Status().Code() != ptrace.StatusCodeOk {
		t.Errorf("worker_1 span: parent %v trace %v status %v", s.ParentSpanID(), s.TraceID(), s.Status().Code())
	}
	if v, ok := s.Attributes().Get(contract.AttrProbe); !ok || v.Str() != ProbeWorker1 {
		t.Errorf("worker_1 span lacks %s", contract.AttrProbe)
	}
	j := spans[ProbeJob]
	if !j.ParentSpanID().IsEmpty() || j.Status().Code() != ptrace.StatusCodeError {
		t.Errorf("job span: parent %v, status %v; want root with status ERROR", j.ParentSpanID(), j.Status().Code())
	}
	if b.Pending() != 0 || b.Flush(3*time.Second).Spans != 0 {
		t.Errorf("batcher not empty after a flush")
	}
}

// StartsOpen announces only the instances unfinished at the flush.
func TestBatcherStartsOpen(t *testing.T) {
	b := &Batcher{Epoch: epoch, Starts: StartsOpen, ServiceName: "svc"}
	job := inst(ProbeJob, 1, 0, time.Second)
	w1 := inst(ProbeWorker1, 2, 1, time.Second)
	w2 := inst(ProbeWorker2, 3, 1, time.Second+time.Millisecond)
	b.Started(job)
	b.Started(w1)
	b.Ended(w1, time.Second+time.Millisecond, false)
	b.Started(w2)
	out := b.Flush(time.Second + 2*time.Millisecond)
	if out.Starts != 2 || out.Spans != 1 || b.Elided() != 1 {
		t.Fatalf("flush: %d starts, %d spans, %d elided; want 2, 1, 1", out.Starts, out.Spans, b.Elided())
	}
	recs := out.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	want := []Instance{job, w2}
	for i := range recs.Len() {
		lr := recs.At(i)
		if lr.EventName() != contract.StartEventName {
			t.Errorf("record %d: event name %q", i, lr.EventName())
		}
		if lr.SpanID() != pcommon.SpanID(want[i].SpanID) || lr.TraceID() != pcommon.TraceID(want[i].TraceID) {
			t.Errorf("record %d: ids %v/%v, want %x", i, lr.TraceID(), lr.SpanID(), want[i].SpanID)
		}
		if lr.Timestamp().AsTime() != epoch.Add(want[i].Start) {
			t.Errorf("record %d: timestamp %v, want the start %v", i, lr.Timestamp().AsTime(), epoch.Add(want[i].Start))
		}
		if v, _ := lr.Attributes().Get(contract.AttrProbe); v.Str() != want[i].Probe {
			t.Errorf("record %d: probe %q, want %q", i, v.Str(), want[i].Probe)
		}
		if v, _ := lr.Attributes().Get(contract.AttrSpanName); v.Str() != want[i].Probe {
			t.Errorf("record %d: span name %q, want %q", i, v.Str(), want[i].Probe)
		}
	}
	// The already announced instances end later: spans only, no new starts.
	b.Ended(w2, time.Second+5*time.Millisecond, false)
	b.Ended(job, time.Second+5*time.Millisecond, false)
	out = b.Flush(2 * time.Second)
	if out.Starts != 0 || out.Spans != 2 {
		t.Fatalf("second flush: %d starts, %d spans; want 0, 2", out.Starts, out.Spans)
	}
}

func TestBatcherStartsAll(t *testing.T) {
	b := &Batcher{Epoch: epoch, Starts: StartsAll}
	w1 := inst(ProbeWorker1, 2, 1, time.Second)
	b.Started(w1)
	b.Ended(w1, 2*time.Second, false)
	if out := b.Flush(3 * time.Second); out.Starts != 1 || out.Spans != 1 {
		t.Fatalf("flush: %d starts, %d spans; want 1, 1", out.Starts, out.Spans)
	}
}

func TestParseStartEvents(t *testing.T) {
	for s, want := range map[string]StartEvents{"open": StartsOpen, "all": StartsAll, "none": StartsNone} {
		if got, err := ParseStartEvents(s); err != nil || got != want {
			t.Errorf("ParseStartEvents(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseStartEvents("some"); err == nil {
		t.Error("ParseStartEvents accepted \"some\"")
	}
}

// collector is an in-process OTLP/gRPC receiver that keeps what it accepts
// and answers trace requests as the test sets.
type collector struct {
	*otlptest.Receiver
	reply atomic.Pointer[otlptest.Reply] // the answer to trace requests; nil: success
}

func startCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{}
	c.Receiver = otlptest.Start(t, otlptest.Options{Traces: func(ptrace.Traces) otlptest.Reply {
		if r := c.reply.Load(); r != nil {
			return *r
		}
		return otlptest.Reply{}
	}})
	return c
}

func batchOf(n int) Batch {
	b := &Batcher{Epoch: epoch, Starts: StartsAll}
	for i := range n {
		in := inst(ProbeWorker1, byte(i+1), 0, time.Duration(i))
		b.Started(in)
		b.Ended(in, time.Duration(i+1), false)
	}
	return b.Flush(time.Second)
}

// The sender's counts add up to what it was given and match what the
// collector acknowledged, rejected or refused.
func TestSenderCounts(t *testing.T) {
	c := startCollector(t)
	s := NewSender(otlptest.Dial(t, c.Addr()), 5*time.Second, 8)
	s.Enqueue(batchOf(5))
	s.Close(10 * time.Second)
	if got := s.Counts(); got != (Counts{SentSpans: 5, SentStarts: 5}) {
		t.Fatalf("counts %+v: want 5 spans and 5 starts sent", got)
	}
	if n := c.Counts().Spans; n != 5 {
		t.Fatalf("collector holds %d spans, want 5", n)
	}

	c.reply.Store(&otlptest.Reply{Rejected: 2, Message: "rejected by test"})
	s = NewSender(otlptest.Dial(t, c.Addr()), 5*time.Second, 8)
	s.Enqueue(batchOf(5))
	s.Close(10 * time.Second)
	if got := s.Counts(); got.SentSpans != 3 || got.FailedSpans != 2 || !strings.Contains(got.LastError, "rejected by test") {
		t.Fatalf("partial success: %+v, want 3 sent, 2 failed with the server's message", got)
	}

	c.reply.Store(&otlptest.Reply{Err: status.Error(codes.Unavailable, "test says no")})
	s = NewSender(otlptest.Dial(t, c.Addr()), 5*time.Second, 8)
	s.Enqueue(batchOf(4))
	s.Close(10 * time.Second)
	if got := s.Counts(); got.SentSpans != 0 || got.FailedSpans != 4 || got.SentStarts != 4 || !strings.Contains(got.LastError, "test says no") {
		t.Fatalf("refused export: %+v, want 4 spans failed, 4 starts sent", got)
	}
}

// A full queue drops whole batches and counts them; it never blocks.
func TestSenderQueueFull(t *testing.T) {
	// A listener that accepts and never answers holds the sender's first
	// export until its timeout.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	s := NewSender(otlptest.Dial(t, lis.Addr().String()), 200*time.Millisecond, 1)
	for range 5 {
		s.Enqueue(batchOf(3))
	}
	s.Close(10 * time.Second)
	got := s.Counts()
	if got.SentSpans != 0 || got.FailedSpans+got.DroppedSpans != 15 || got.DroppedSpans < 9 {
		t.Fatalf("counts %+v: want all 15 spans failed or dropped, at least 3 batches dropped", got)
	}
}

// A collector that is gone held the close for the timeout of every queued
// batch, since each export waits for the connection to be ready: 256 batches
// of 5 s each kept the demo's workload for more than 12 minutes. Close's
// bound ends it, and every span is still counted once.
func TestSenderCloseIsBounded(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nobody listens: a collector that died
	s := NewSender(otlptest.Dial(t, addr), time.Hour, 16)
	for range 10 {
		s.Enqueue(batchOf(2))
	}
	start := time.Now()
	if s.Close(200 * time.Millisecond) {
		t.Fatal("Close reported every batch sent to an address nobody listens on")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a bound of 200ms", took)
	}
	got := s.Counts()
	if got.SentSpans != 0 || got.FailedSpans+got.DroppedSpans != 20 || got.DroppedSpans < 16 ||
		got.FailedStarts+got.DroppedStarts != 20 {
		t.Errorf("counts %+v: want nothing sent, the export in flight failed and the rest (at least 8 batches) dropped", got)
	}
}

// In the batch form a flush announces the instances unfinished at the
// flush in one record a probe, an entry an instance: its ids and its start.
func TestBatcherBatchStarts(t *testing.T) {
	b := &Batcher{Epoch: epoch, Starts: StartsOpen, BatchStarts: true, ServiceName: "svc"}
	job := inst(ProbeJob, 1, 0, time.Second)
	w1 := inst(ProbeWorker1, 2, 1, time.Second)
	w2 := inst(ProbeWorker1, 3, 1, 2*time.Second)
	done := inst(ProbeWorker1, 4, 1, time.Second)
	for _, in := range []Instance{job, w1, w2, done} {
		b.Started(in)
	}
	b.Ended(done, 2*time.Second, false) // announced by its span alone
	out := b.Flush(3 * time.Second)
	if out.Starts != 3 || out.StartRecords != 2 || out.Logs.LogRecordCount() != 2 {
		t.Fatalf("flush: %d starts in %d records (%d in logs); want 3 in 2", out.Starts, out.StartRecords, out.Logs.LogRecordCount())
	}
	recs := out.Logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i, want := range [][]Instance{{job}, {w1, w2}} {
		lr := recs.At(i)
		probe, _ := lr.Attributes().Get(contract.AttrProbe)
		raw, _ := lr.Attributes().Get(contract.AttrStarts)
		starts, err := contract.DecodeStarts(probe.Str(), raw.Bytes().AsRaw(), nil, false)
		if lr.EventName() != contract.StartsEventName || probe.Str() != want[0].Probe || err != contract.StartsOK || starts.Len() != len(want) {
			t.Fatalf("record %d: %q, probe %q, %v, %d entries", i, lr.EventName(), probe.Str(), err, starts.Len())
		}
		for k, in := range want {
			e := starts.At(k)
			if e.TraceID != in.TraceID || e.SpanID != in.SpanID || e.Start != epoch.Add(in.Start).UnixNano() {
				t.Errorf("record %d entry %d: %+v, want %+v", i, k, e, in)
			}
		}
	}
}
