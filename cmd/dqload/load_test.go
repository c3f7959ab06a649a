// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
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
			if v, _ := sp.Attributes().Get(contract.AttrProbe); v.Str() != sp.Name() {
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

func decodeStarts(t *testing.T, data []byte) plog.LogRecordSlice {
	t.Helper()
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(data); err != nil {
		t.Fatalf("restamped start events do not decode: %v", err)
	}
	return req.Logs().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
}

// A restamped logs request decodes to one start event per span of the
// traces request restamped with it: the span's trace and span ids, its
// start as the timestamp, its name as the probe.
func TestRestampStartEvents(t *testing.T) {
	tm := template(t, 300)
	st, err := newStartTemplate(tm, startsSingle, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	spanBuf := append([]byte(nil), tm.Data...)
	startBuf := append([]byte(nil), st.Data...)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for seq := uint64(1); seq <= 2; seq++ {
		tm.restamp(spanBuf, 7, seq, now.Add(time.Duration(seq)*time.Second))
		st.restamp(startBuf, spanBuf)
		spans, records := decode(t, spanBuf), decodeStarts(t, startBuf)
		if records.Len() != spans.Len() {
			t.Fatalf("%d start events for %d spans", records.Len(), spans.Len())
		}
		for i := range spans.Len() {
			sp, lr := spans.At(i), records.At(i)
			if lr.EventName() != contract.StartEventName {
				t.Fatalf("event %d: name %q", i, lr.EventName())
			}
			if lr.TraceID() != sp.TraceID() || lr.SpanID() != sp.SpanID() {
				t.Fatalf("event %d: ids %v/%v, span's %v/%v", i, lr.TraceID(), lr.SpanID(), sp.TraceID(), sp.SpanID())
			}
			if lr.Timestamp() != sp.StartTimestamp() || lr.ObservedTimestamp() != 0 {
				t.Fatalf("event %d: timestamp %v (observed %v), span started %v", i, lr.Timestamp(), lr.ObservedTimestamp(), sp.StartTimestamp())
			}
			if v, _ := lr.Attributes().Get(contract.AttrProbe); v.Str() != sp.Name() || lr.Attributes().Len() != 1 {
				t.Fatalf("event %d: attributes %v, want only the probe %q", i, lr.Attributes().AsRaw(), sp.Name())
			}
		}
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

// runOutput runs dqload for 2 s with args against addr and returns its
// error, its output and the totals it printed: spans acked and failed, and
// with -start-events the start events acked and failed (else -1).
func runOutput(t *testing.T, addr string, args ...string) (out string, totals [4]int64, err error) {
	t.Helper()
	var b bytes.Buffer
	err = run(append([]string{"-endpoint", addr, "-warmup", "0s", "-duration", "2s", "-report", "0"}, args...), &b)
	out = b.String()
	totals = [4]int64{-1, -1, -1, -1}
	if i := strings.Index(out, "total:"); i >= 0 {
		fmt.Sscanf(out[i:], "total: %d spans acked, %d failed", &totals[0], &totals[1])
	}
	if i := strings.Index(out, "start events:"); i >= 0 {
		fmt.Sscanf(out[i:], "start events: %d acked, %d failed", &totals[2], &totals[3])
	}
	return out, totals, err
}

// With -start-events every span the server receives was announced before
// it, on its connection, by a start event with its trace and span ids and
// its start as the timestamp; none is announced twice, and dqload's counts
// agree with the server's. With -start-drain 10ms (spans of 5 ms on
// average), some spans are announced so and the others not at all.
func TestRunSendsStartEvents(t *testing.T) {
	for _, c := range []struct {
		form  string
		drain time.Duration
	}{{startsSingle, 0}, {startsBatch, 0}, {startsBatch, 10 * time.Millisecond}, {startsSingle, 10 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%s/drain=%v", c.form, c.drain), func(t *testing.T) { checkRunSendsStartEvents(t, c.form, c.drain) })
	}
}

// checkRunSendsStartEvents is TestRunSendsStartEvents for one form and
// -start-drain.
func checkRunSendsStartEvents(t *testing.T, form string, drain time.Duration) {
	type start struct {
		trace pcommon.TraceID
		at    pcommon.Timestamp
	}
	// The hooks use these one request at a time; the test reads them under
	// mu too, since a request may still be in the server when dqload ends.
	var mu sync.Mutex
	announced := make(map[pcommon.SpanID]start)
	var repeated, unannounced, mismatched int
	var announcedTotal int64 // the start events received, entries of batches each one
	s := otlptest.Start(t, otlptest.Options{CountOnly: true,
		Logs: func(ld plog.Logs) otlptest.Reply {
			mu.Lock()
			defer mu.Unlock()
			for lr := range otlprecv.LogRecords(ld) {
				for _, e := range startsOf(t, lr) {
					announcedTotal++
					if _, ok := announced[e.SpanID]; ok {
						repeated++
					}
					announced[e.SpanID] = start{e.TraceID, pcommon.Timestamp(e.Start)}
				}
			}
			return otlptest.Reply{}
		},
		Traces: func(td ptrace.Traces) otlptest.Reply {
			mu.Lock()
			defer mu.Unlock()
			for sp := range otlprecv.Spans(td) {
				a, ok := announced[sp.SpanID()]
				switch {
				case !ok:
					unannounced++
				case a.trace != sp.TraceID() || a.at != sp.StartTimestamp():
					mismatched++
				}
				delete(announced, sp.SpanID())
			}
			return otlptest.Reply{}
		}})
	out, n, err := runOutput(t, s.Addr(), "-start-events="+form, "-start-drain", drain.String(), "-conns", "2", "-inflight", "2", "-batch", "50")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	got := s.Counts() // outside mu: the server holds its own lock while a hook takes mu
	mu.Lock()
	rep, unann, mism, total := repeated, unannounced, mismatched, announcedTotal
	mu.Unlock()
	if rep+mism != 0 || got.Spans == 0 || (unann == 0) != (drain == 0) || unann >= got.Spans {
		t.Fatalf("of %d spans received, %d had no start event before them and %d one with other ids or start; %d start events repeated",
			got.Spans, unann, mism, rep)
	}
	// Each of the four streams may have a logs request, and the traces
	// request after it, in flight when the measurement ends, received but
	// not counted; or its logs request counted and its traces request not.
	acked, failed, startsAcked, startsFailed := n[0], n[1], n[2], n[3]
	records := int64(got.LogRecords)
	if form == startsBatch {
		records = total
	}
	// Without -start-drain every span acked was announced; with it fewer.
	if acked <= 0 || failed != 0 || startsFailed != 0 || (drain == 0) != (startsAcked >= acked) || startsAcked-acked > 4*50 ||
		startsAcked > records || records-startsAcked > 4*50 {
		t.Fatalf("dqload counted %d spans acked, %d failed, %d start events acked, %d failed; the server received %d spans, %d start events\n%s",
			acked, failed, startsAcked, startsFailed, got.Spans, got.LogRecords, out)
	}
}

// startsOf returns the instances a start event announces: itself, or the
// entries of a batch.
func startsOf(t *testing.T, lr plog.LogRecord) []contract.StartEntry {
	if lr.EventName() == contract.StartEventName {
		return []contract.StartEntry{{TraceID: lr.TraceID(), SpanID: lr.SpanID(), Start: int64(lr.Timestamp())}}
	}
	probe, _ := lr.Attributes().Get(contract.AttrProbe)
	b, _ := lr.Attributes().Get(contract.AttrStarts)
	starts, err := contract.DecodeStarts(probe.Str(), b.Bytes().AsRaw(), nil, false)
	if lr.EventName() != contract.StartsEventName || err != contract.StartsOK {
		t.Errorf("a log record %q that is no start event (%v)", lr.EventName(), err)
		return nil
	}
	out := make([]contract.StartEntry, starts.Len())
	for i := range out {
		out[i] = starts.At(i)
	}
	return out
}

// A start event the server rejects is a failure of its own: dqload exits
// with an error naming it, while the spans were all acknowledged.
func TestRunCountsRejectedStartEvents(t *testing.T) {
	s := otlptest.Start(t, otlptest.Options{CountOnly: true, Logs: func(plog.Logs) otlptest.Reply {
		return otlptest.Reply{Rejected: 10, Message: "full"}
	}})
	out, n, err := runOutput(t, s.Addr(), "-start-events=single", "-conns", "1", "-inflight", "1", "-batch", "50")
	if err == nil || !strings.Contains(err.Error(), "start events failed") || strings.Contains(err.Error(), "spans failed") ||
		!strings.Contains(err.Error(), "start events: partial success: full") {
		t.Fatalf("run error %v, want the start events' rejections alone reported\n%s", err, out)
	}
	if n[0] <= 0 || n[1] != 0 || n[3] <= 0 || n[3] != n[2]/4 {
		t.Fatalf("totals %v: want spans acked, none failed, and 10 of every 50 start events failed\n%s", n, out)
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

func BenchmarkRestampStartEvents(b *testing.B) {
	tm := template(b, 1000)
	st, err := newStartTemplate(tm, startsSingle, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	spans := append([]byte(nil), tm.Data...)
	buf := append([]byte(nil), st.Data...)
	now := time.Now()
	b.SetBytes(int64(len(buf)))
	for i := 0; b.Loop(); i++ {
		tm.restamp(spans, 1, uint64(i), now)
		st.restamp(buf, spans)
	}
}

// A restamped batch of start events decodes to one entry per span of the
// traces request restamped with it, in a record of the span's name: the
// span's trace and span ids and its start; with -start-drain, to one
// entry per span announced, those still running at a drain: the spans
// that outlast a drain interval all, the others each with probability
// elapsed/drain.
func TestRestampBatchStartEvents(t *testing.T) {
	for _, drain := range []time.Duration{0, 200 * time.Microsecond, time.Millisecond, 5 * time.Millisecond} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) { checkRestampBatchStartEvents(t, drain) })
	}
	for v, want := range map[string]startsFlag{"-start-events": startsBatch, "-start-events=single": startsSingle, "-start-events=none": ""} {
		if o, err := parseFlags([]string{v}, io.Discard); err != nil || o.startEvents != want || o.startDrain != 0 {
			t.Errorf("%s: %q drain %v, %v; want %q drain 0", v, o.startEvents, o.startDrain, err, want)
		}
	}
	if o, err := parseFlags([]string{"-start-events", "-start-drain", "10ms"}, io.Discard); err != nil || o.startDrain != 10*time.Millisecond {
		t.Errorf("-start-drain 10ms: %v, %v", o.startDrain, err)
	}
	for _, args := range [][]string{{"-start-events=all"}, {"-start-events", "-start-drain", "-1ms"}, {"-start-drain", "10ms"}} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// checkRestampBatchStartEvents is TestRestampBatchStartEvents for one
// -start-drain.
func checkRestampBatchStartEvents(t *testing.T, drain time.Duration) {
	tm := template(t, 300)
	st, err := newStartTemplate(tm, startsBatch, drain, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	// A span is announced with probability min(1, elapsed/drain): the
	// count of 300 is within five standard deviations of its mean.
	mean, variance := 0.0, 0.0
	for _, e := range tm.elapsed {
		p := 1.0
		if drain > 0 {
			p = min(1, float64(e)/float64(drain))
		}
		mean += p
		variance += p * (1 - p)
	}
	if d := float64(len(st.span)) - mean; d*d > 25*variance+1e-9 {
		t.Fatalf("template announces %d spans, expected %.1f ± %.1f", len(st.span), mean, math.Sqrt(variance))
	}
	if drain > 0 && (len(st.span) == tm.Spans || len(st.span) == 0) {
		t.Fatalf("template announces %d of %d spans at drain %v", len(st.span), tm.Spans, drain)
	}
	spanBuf := append([]byte(nil), tm.Data...)
	startBuf := append([]byte(nil), st.Data...)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for seq := uint64(1); seq <= 2; seq++ {
		tm.restamp(spanBuf, 7, seq, now.Add(time.Duration(seq)*time.Second))
		st.restamp(startBuf, spanBuf)
		spans, records := decode(t, spanBuf), decodeStarts(t, startBuf)
		if records.Len() != st.Records || st.Records != 3 {
			t.Fatalf("%d records, template says %d; want one per span name, 3", records.Len(), st.Records)
		}
		type entry struct {
			probe string
			e     contract.StartEntry
		}
		got := map[pcommon.SpanID]entry{}
		for _, lr := range records.All() {
			probe, _ := lr.Attributes().Get(contract.AttrProbe)
			for _, e := range startsOf(t, lr) {
				got[e.SpanID] = entry{probe.Str(), e}
			}
		}
		if len(got) != len(st.span) {
			t.Fatalf("%d entries for %d spans announced", len(got), len(st.span))
		}

		found := 0 // the entries of the request's spans
		for i, sp := range spans.All() {
			g, ok := got[sp.SpanID()]
			if !ok && tm.elapsed[i] >= drain {
				t.Fatalf("span %d of elapsed %v not announced at drain %v: it runs past every drain", i, tm.elapsed[i], drain)
			}
			if ok {
				found++
			}
			if ok && (g.probe != sp.Name() || g.e.TraceID != sp.TraceID() || g.e.Start != int64(sp.StartTimestamp())) {
				t.Fatalf("span %d: entry %+v, want probe %q, trace %v, start %v", i, g, sp.Name(), sp.TraceID(), sp.StartTimestamp())
			}
		}
		if found != len(got) {
			t.Fatalf("%d entries for spans not in the request", len(got)-found)
		}
	}
}
