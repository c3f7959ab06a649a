// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// gateEnv must be set for the test to run: it needs the built collector.
const gateEnv = "DELTAQ_CONNECTOR_E2E"

// The probe of testdata/collector.yaml: spans named op, dMax = 1 s in 100
// bins of 10 ms.
const (
	probe    = "op"
	bins     = 100
	binWidth = 10 * time.Millisecond
)

// What the test sends: successes spans of op, each with its start event;
// timeouts start events of op whose spans never come; one span that is no
// probe's and one ordinary log record.
const (
	successes = 40
	timeouts  = 7
)

// contractAttrs are the span attributes only the deltaq processor writes
// (internal/contract): none may reach the tracing backend.
var contractAttrs = []string{contract.AttrProbe, contract.AttrOutcome, contract.AttrDMaxNs, contract.AttrBins,
	contract.AttrSynthetic, contract.AttrLate}

// TestConnectorThroughCollector runs the built collector with
// testdata/collector.yaml — traces and logs to a tracing and log backend and
// to the deltaq connector alone, which matches the spans and takes the
// start events itself, the connector's metrics and logs to a sink — and
// with testdata/processor.yaml — traces to the backend, a copy through the
// deltaq processor into the connector, start events into the same
// processor — and checks, of each, that
//  1. the sink gets deltaq.outcomes with exactly the successes and timeouts
//     sent and no failure, the successes in the bucket of their delay of
//     deltaq.observed (one cumulative stream: its last point holds them
//     all) with the sum of their delays and nothing above dMax, and a
//     failure trigger record (deltaq.trigger);
//  2. the tracing backend gets exactly the spans sent, as sent: no deltaq.*
//     attribute of the processor, no synthetic timeout span; the log backend
//     gets the ordinary log record, and the start events as sent when the
//     connector alone reads them (the processor consumes them);
//  3. the collector logs no error and exits 0 on SIGTERM.
func TestConnectorThroughCollector(t *testing.T) {
	for _, c := range []struct {
		config          string
		startEventsPass bool
	}{
		{"testdata/collector.yaml", true},
		{"testdata/processor.yaml", false},
	} {
		t.Run(c.config, func(t *testing.T) { throughCollector(t, c.config, c.startEventsPass) })
	}
}

// throughCollector is TestConnectorThroughCollector with one configuration:
// traces and logs to backend, the ΔQ output to sink.
func throughCollector(t *testing.T, config string, startEventsPass bool) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	backend := otlptest.Start(t, otlptest.Options{})
	sink := otlptest.Start(t, otlptest.Options{})
	col := e2etest.StartCollector(t, "collector", otelcol, []string{config},
		"DELTAQ_BACKEND="+backend.Addr(), "DELTAQ_SINK="+sink.Addr())
	col.WaitReady(t)
	began := time.Now()

	sent := send(t, col.Addr)

	// 1. The ΔQ output. The timeouts are reported dMax after their start
	// events; the windows close one interval after their end.
	var out sinkState
	e2etest.Until(t, "the outcomes and the trigger in the sink", 30*time.Second, func() bool {
		out = fold(sink.Metrics(), sink.Logs())
		return out.outcomes[contract.Success] >= successes && out.outcomes[contract.Timeout] >= timeouts &&
			out.failureTrigger
	}, col.Proc)
	t.Logf("ΔQ output complete after %v: %d metric and %d log requests, outcomes %v",
		time.Since(began).Round(time.Millisecond), len(sink.Metrics()), len(sink.Logs()), out.outcomes)
	checkOutput(t, out, sent)

	// 2. The backends. A synthetic span would have been made before its
	// timeout was counted; the batch processor before the backend flushes
	// every 100 ms.
	records := 1
	if startEventsPass {
		records += successes + timeouts
	}
	backend.WaitFor(t, otlptest.Counts{Spans: len(sent.spans), LogRecords: records}, 10*time.Second)
	time.Sleep(time.Second)
	checkBackend(t, backend, sent, startEventsPass)

	// 3. A clean stop.
	col.StopCleanly(t)
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// sent is what the test sent: the spans and the start events by span id,
// and the delay of every success.
type sent struct {
	spans  map[pcommon.SpanID]ptrace.Span
	starts map[pcommon.SpanID]plog.LogRecord
	delays []time.Duration
}

// send sends over OTLP/gRPC to addr the start events of every instance with
// an ordinary log record, then the spans of the successes and one span of no
// probe. A success's delay is k·10 ms + 5 ms, the middle of bin k, for k
// below 50: the span arrives long before its start event's deadline (start
// + 1 s).
func send(t *testing.T, addr string) sent {
	t.Helper()
	conn := otlptest.Dial(t, addr)
	now := time.Now()
	s := sent{spans: map[pcommon.SpanID]ptrace.Span{}, starts: map[pcommon.SpanID]plog.LogRecord{}}

	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty()
	lrs.Resource().Attributes().PutStr("service.name", "e2e-shop")
	records := lrs.ScopeLogs().AppendEmpty().LogRecords()
	app := records.AppendEmpty()
	app.Body().SetStr("an ordinary log record")
	app.SetTimestamp(pcommon.NewTimestampFromTime(now))

	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "e2e-shop")
	spans := rs.ScopeSpans().AppendEmpty().Spans()

	for i := range successes + timeouts {
		tid, sid := ids(i)
		delay := time.Duration(i*7%50)*binWidth + binWidth/2
		start := now.Add(-delay)
		ev := records.AppendEmpty()
		ev.SetEventName(contract.StartEventName)
		ev.SetTraceID(tid)
		ev.SetSpanID(sid)
		ev.Attributes().PutStr(contract.AttrProbe, probe)
		s.starts[sid] = ev
		if i >= successes {
			ev.SetTimestamp(pcommon.NewTimestampFromTime(now))
			continue
		}
		ev.SetTimestamp(pcommon.NewTimestampFromTime(start))
		sp := spans.AppendEmpty()
		sp.SetName(probe)
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		sp.Attributes().PutStr("http.route", "/op")
		s.spans[sid] = sp
		s.delays = append(s.delays, delay)
	}
	other := spans.AppendEmpty()
	tid, sid := ids(successes + timeouts)
	other.SetName("db.query")
	other.SetTraceID(tid)
	other.SetSpanID(sid)
	other.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-3 * time.Millisecond)))
	other.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
	s.spans[sid] = other

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(ld)); err != nil {
		t.Fatalf("sending the start events: %v", err)
	}
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatalf("sending the spans: %v", err)
	}
	return s
}

// ids returns the trace and span ids of the i-th instance: distinct, never
// zero.
func ids(i int) (pcommon.TraceID, pcommon.SpanID) {
	tid := pcommon.TraceID{0xe2, 0xe, byte(i >> 8), byte(i), 1}
	sid := pcommon.SpanID{0xe2, byte(i >> 8), byte(i), 1}
	return tid, sid
}

// sinkState is the connector's output for the probe, folded over every
// request the sink got.
type sinkState struct {
	// outcomes is the latest deltaq.outcomes (cumulative) by outcome.
	outcomes   map[string]int64
	outcomesAt pcommon.Timestamp
	// buckets sums the deltaq.observed bucket counts of every window; sum
	// their sums. bad notes a window whose bounds are not the probe's bins.
	buckets []uint64
	sum     float64
	windows int
	// observedAt and observedStart are the time and the start time of the
	// newest deltaq.observed point.
	observedAt, observedStart pcommon.Timestamp
	bad                       []string
	// failureTrigger is set once a deltaq.trigger record of kind failure
	// for the probe arrived.
	failureTrigger bool
}

func fold(mds []pmetric.Metrics, lds []plog.Logs) sinkState {
	s := sinkState{outcomes: map[string]int64{}, buckets: make([]uint64, bins+1)}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			switch m.Name() {
			case contract.MetricOutcomes:
				for _, dp := range m.Sum().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == probe && dp.Timestamp() >= s.outcomesAt {
						s.outcomesAt = dp.Timestamp()
						s.outcomes[str(dp.Attributes(), contract.AttrOutcome)] = dp.IntValue()
					}
				}
			case contract.MetricObserved:
				for _, dp := range m.Histogram().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == probe {
						s.addWindow(dp)
					}
				}
			}
		}
	}
	for _, ld := range lds {
		for lr := range otlprecv.LogRecords(ld) {
			a := lr.Attributes()
			if lr.EventName() == contract.EventTrigger && str(a, contract.AttrProbe) == probe &&
				str(a, contract.AttrTrigger) == "failure" {
				s.failureTrigger = true
			}
		}
	}
	return s
}

// addWindow reads one window's deltaq.observed point, whose bounds must be
// the bin edges 10 ms, 20 ms, …, 1 s; the newest point of the stream, which
// must keep one start time, holds the counts of all the windows.
func (s *sinkState) addWindow(dp pmetric.HistogramDataPoint) {
	s.windows++
	if s.observedStart != 0 && dp.StartTimestamp() != s.observedStart {
		s.bad = append(s.bad, "a second stream (another start time)")
	}
	s.observedStart = dp.StartTimestamp()
	if dp.Timestamp() < s.observedAt {
		return
	}
	s.observedAt = dp.Timestamp()
	b, c := dp.ExplicitBounds(), dp.BucketCounts()
	if b.Len() != bins || c.Len() != bins+1 {
		s.bad = append(s.bad, "a window with other bounds than the probe's bins")
		return
	}
	for i := range bins {
		if want := float64(i+1) * binWidth.Seconds(); math.Abs(b.At(i)-want) > 1e-12 {
			s.bad = append(s.bad, "a window with other bounds than the probe's bins")
			return
		}
	}
	for i := range bins + 1 {
		s.buckets[i] = c.At(i)
	}
	s.sum = dp.Sum()
}

// checkOutput compares the folded output with what was sent.
func checkOutput(t *testing.T, out sinkState, s sent) {
	t.Helper()
	want := map[string]int64{contract.Success: successes, contract.Timeout: timeouts, contract.Failure: 0}
	for k, n := range want {
		if out.outcomes[k] != n {
			t.Errorf("%s{%s=%s}: %d, want %d (all: %v)", contract.MetricOutcomes, contract.AttrOutcome, k,
				out.outcomes[k], n, out.outcomes)
		}
	}
	checkBuckets(t, out, s)
}

// checkBuckets checks that each success is in the bucket of its bin
// (delays are bin middles), with the sum of their delays, and that nothing
// is above dMax (the timeouts are in deltaq.outcomes).
func checkBuckets(t *testing.T, out sinkState, s sent) {
	t.Helper()
	for _, bad := range out.bad {
		t.Errorf("%s: %s", contract.MetricObserved, bad)
	}
	wantBuckets := make([]uint64, bins+1)
	var wantSum float64
	for _, d := range s.delays {
		wantBuckets[int(d/binWidth)]++
		wantSum += d.Seconds()
	}
	for i := range wantBuckets {
		if out.buckets[i] != wantBuckets[i] {
			t.Errorf("%s: bucket %d holds %d instances over %d windows, want %d", contract.MetricObserved, i,
				out.buckets[i], out.windows, wantBuckets[i])
		}
	}
	if math.Abs(out.sum-wantSum) > 1e-9 {
		t.Errorf("%s: sum of delays %.9f s, want %.9f s", contract.MetricObserved, out.sum, wantSum)
	}
}

// checkBackend checks that the tracing and log backend got exactly what was
// sent, the start events only when they pass (startEventsPass), each once.
func checkBackend(t *testing.T, backend *otlptest.Receiver, s sent, startEventsPass bool) {
	t.Helper()
	seen := map[pcommon.SpanID]int{}
	for _, td := range backend.Traces() {
		for sp := range otlprecv.Spans(td) {
			seen[sp.SpanID()]++
			for _, k := range contractAttrs {
				if _, ok := sp.Attributes().Get(k); ok {
					t.Errorf("span %s %s reached the tracing backend with %s", sp.Name(), sp.SpanID(), k)
				}
			}
			want, ok := s.spans[sp.SpanID()]
			if !ok {
				t.Errorf("span %s %s reached the tracing backend but was not sent (attributes %v)",
					sp.Name(), sp.SpanID(), sp.Attributes().AsRaw())
				continue
			}
			if !sameSpan(sp, want) {
				t.Errorf("span %s: the tracing backend got %s %v %v–%v, sent %s %v %v–%v", sp.SpanID(),
					sp.Name(), sp.Attributes().AsRaw(), sp.StartTimestamp(), sp.EndTimestamp(),
					want.Name(), want.Attributes().AsRaw(), want.StartTimestamp(), want.EndTimestamp())
			}
		}
	}
	for sid := range s.spans {
		if seen[sid] != 1 {
			t.Errorf("span %s: the tracing backend got it %d times, want once", sid, seen[sid])
		}
	}
	var records []string
	events := map[pcommon.SpanID]int{}
	for _, ld := range backend.Logs() {
		for lr := range otlprecv.LogRecords(ld) {
			if ev, ok := s.starts[lr.SpanID()]; ok && lr.EventName() == contract.StartEventName {
				events[lr.SpanID()]++
				if lr.TraceID() != ev.TraceID() || lr.Timestamp() != ev.Timestamp() || !lr.Attributes().Equal(ev.Attributes()) {
					t.Errorf("start event %s: the log backend got %v %v, sent %v %v", lr.SpanID(),
						lr.Timestamp(), lr.Attributes().AsRaw(), ev.Timestamp(), ev.Attributes().AsRaw())
				}
				continue
			}
			records = append(records, lr.EventName()+"/"+lr.Body().AsString())
		}
	}
	if len(records) != 1 || records[0] != "/an ordinary log record" {
		t.Errorf("the log backend got %q, want the ordinary log record", records)
	}
	want := 0
	if startEventsPass {
		want = 1
	}
	for sid := range s.starts {
		if events[sid] != want {
			t.Errorf("start event %s: the log backend got it %d times, want %d", sid, events[sid], want)
		}
	}
}

func sameSpan(a, b ptrace.Span) bool {
	return a.Name() == b.Name() && a.TraceID() == b.TraceID() && a.Kind() == b.Kind() &&
		a.StartTimestamp() == b.StartTimestamp() && a.EndTimestamp() == b.EndTimestamp() &&
		a.Attributes().Equal(b.Attributes()) && a.Status().Code() == b.Status().Code()
}

func str(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}
