// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

func template(t testing.TB, spans int) *spanTemplate {
	t.Helper()
	tm, err := newTemplate(templateConfig{Spans: spans, Names: []string{"a", "b", "c"}, MeanElapsed: time.Millisecond,
		FailureRatio: 0.5, ProbeAttribute: true}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func decode(t *testing.T, data []byte) ptrace.SpanSlice {
	t.Helper()
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatalf("restamped request does not decode: %v", err)
	}
	return req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
}

// A restamped request decodes to the template's spans with fresh, distinct
// ids and timestamps ending at the given time.
func TestRestamp(t *testing.T) {
	tm := template(t, 300)
	orig := decode(t, tm.Data)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	seen := make(map[pcommon.SpanID]bool)
	for seq := uint64(1); seq <= 2; seq++ {
		buf := append([]byte(nil), tm.Data...)
		tm.restamp(buf, 7, seq, now)
		spans := decode(t, buf)
		if spans.Len() != 300 {
			t.Fatalf("%d spans, want 300", spans.Len())
		}
		traces := make(map[pcommon.TraceID]bool)
		for i := range spans.Len() {
			sp, o := spans.At(i), orig.At(i)
			if sp.Name() != o.Name() || sp.Status().Code() != o.Status().Code() {
				t.Fatalf("span %d: name/status %q/%v, template %q/%v", i, sp.Name(), sp.Status().Code(), o.Name(), o.Status().Code())
			}
			if v, _ := sp.Attributes().Get(outcome.AttrProbe); v.Str() != sp.Name() {
				t.Fatalf("span %d: probe attribute %q", i, v.Str())
			}
			if sp.EndTimestamp().AsTime() != now || sp.StartTimestamp() > sp.EndTimestamp() || sp.EndTimestamp()-sp.StartTimestamp() != pcommon.Timestamp(tm.elapsed[i]) {
				t.Fatalf("span %d runs %v – %v, want %v ending at %v", i, sp.StartTimestamp(), sp.EndTimestamp(), tm.elapsed[i], now)
			}
			if sp.SpanID().IsEmpty() || sp.TraceID().IsEmpty() || seen[sp.SpanID()] || traces[sp.TraceID()] {
				t.Fatalf("span %d: ids %v/%v empty or repeated", i, sp.TraceID(), sp.SpanID())
			}
			seen[sp.SpanID()] = true
			traces[sp.TraceID()] = true
		}
	}
	var failed int
	for i := range orig.Len() {
		if orig.At(i).Status().Code() == ptrace.StatusCodeError {
			failed++
		}
	}
	if failed < 100 || failed > 200 {
		t.Errorf("%d of 300 spans failed at failure ratio 0.5", failed)
	}
}

func TestNewTemplateErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := newTemplate(templateConfig{Spans: 0, Names: []string{"a"}}, rng); err == nil {
		t.Error("accepted 0 spans")
	}
	if _, err := newTemplate(templateConfig{Spans: 1}, rng); err == nil {
		t.Error("accepted no names")
	}
}

// startSink starts an OTLP/gRPC receiver that counts spans, rejects reject
// of every request as a partial success, and sets *dup when a span id comes
// twice.
func startSink(t *testing.T, reject int64) (r *otlptest.Receiver, dup *atomic.Bool) {
	t.Helper()
	ids := make(map[pcommon.SpanID]bool) // only the hook uses it, one request at a time
	dup = new(atomic.Bool)
	r = otlptest.Start(t, otlptest.Options{CountOnly: true, Traces: func(td ptrace.Traces) otlptest.Reply {
		for sp := range otlprecv.Spans(td) {
			if ids[sp.SpanID()] {
				dup.Store(true)
			}
			ids[sp.SpanID()] = true
		}
		return otlptest.Reply{Rejected: reject, Message: "full"}
	}})
	return r, dup
}

// Every span the server received was counted by dqload as acked, or had been
// sent before the measurement began or during the request the end cut short;
// ids never repeat.
func TestRunCountsAcked(t *testing.T) {
	s, dup := startSink(t, 0)
	var out bytes.Buffer
	err := run([]string{"-endpoint", s.Addr(), "-conns", "2", "-inflight", "2", "-batch", "50",
		"-warmup", "0s", "-duration", "2s", "-report", "0", "-collector-pid", strconv.Itoa(os.Getpid())}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	var acked, failed int64
	var secs float64
	line := out.String()[strings.Index(out.String(), "total:"):]
	if _, err := fmt.Sscanf(line, "total: %d spans acked, %d failed in %fs", &acked, &failed, &secs); err != nil {
		t.Fatalf("cannot read the total from %q: %v", line, err)
	}
	got := int64(s.Counts().Spans)
	// The four streams may each have one request in flight when the
	// measurement ends (received but not counted).
	if acked == 0 || failed != 0 || acked > got || got-acked > 4*50 {
		t.Fatalf("dqload counted %d acked, %d failed; the server received %d", acked, failed, got)
	}
	if dup.Load() {

		t.Error("a span id was sent twice")
	}
	if !strings.Contains(out.String(), "collector rss: first") {
		t.Errorf("no memory figures for -collector-pid:\n%s", out.String())
	}
}

// Rejected spans are failures, and dqload exits with an error. The run
// lasts 2 s, as TestRunCountsAcked's does: on a machine busy with other
// builds a shorter one could end before its first request was answered.
func TestRunCountsRejected(t *testing.T) {
	s, _ := startSink(t, 10)
	var out bytes.Buffer
	err := run([]string{"-endpoint", s.Addr(), "-conns", "1", "-inflight", "1", "-batch", "50",
		"-warmup", "0s", "-duration", "2s", "-report", "0"}, &out)
	if err == nil || !strings.Contains(err.Error(), "partial success: full") {
		t.Fatalf("run error %v, want the partial-success rejections reported\n%s", err, out.String())
	}
}

func TestReadProc(t *testing.T) {
	rss, err := readRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Fatalf("readRSS = %d, %v", rss, err)
	}
	if _, err := readCPU(os.Getpid()); err != nil {
		t.Fatalf("readCPU: %v", err)
	}
	if _, err := readRSS(-1); err == nil {
		t.Fatal("readRSS(-1) succeeded")
	}
}

func BenchmarkRestamp(b *testing.B) {
	tm := template(b, 1000)
	buf := append([]byte(nil), tm.Data...)
	now := time.Now()
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		tm.restamp(buf, 1, uint64(i), now)
	}
}
