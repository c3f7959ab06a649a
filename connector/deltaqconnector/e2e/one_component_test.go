// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// What the one-component test sends besides successes spans of op: spans
// of op with status ERROR, spans of op longer than dMax (half of them with
// status ERROR: a timeout whatever the status), and spans no probe
// matches.
const (
	failures    = 5
	slowSpans   = 6
	unmatchedOp = 3 // client spans named op, and spans of another name
)

// TestOneComponentThroughCollector runs the built collector with
// testdata/one-component.yaml — the connector as one more exporter of the
// traces pipeline, matching the spans of probe op itself, no processor —
// and checks that
//  1. the sink gets deltaq.outcomes with exactly the successes, failures
//     and timeouts sent, each judged from its own span (a span longer than
//     dMax is a timeout), the successes in the bucket of their delay of
//     deltaq.observed with the sum of their delays, and a failure trigger;
//  2. the tracing backend gets every span as sent: the connector only
//     reads them;
//  3. the collector logs no error and exits 0 on SIGTERM;
//  4. otelcol-deltaq validate refuses the configuration with a deltaq
//     processor that matches op too, naming the probe and both components.
func TestOneComponentThroughCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	backend := otlptest.Start(t, otlptest.Options{})
	sink := otlptest.Start(t, otlptest.Options{})
	col := e2etest.StartCollector(t, "collector", otelcol, []string{"testdata/one-component.yaml"},
		"DELTAQ_BACKEND="+backend.Addr(), "DELTAQ_SINK="+sink.Addr())
	col.WaitReady(t)
	began := time.Now()

	sent := sendSpans(t, col.Addr)

	var out sinkState
	e2etest.Until(t, "the outcomes and the trigger in the sink", 30*time.Second, func() bool {
		out = fold(sink.Metrics(), sink.Logs())
		return out.outcomes[contract.Success] >= successes && out.outcomes[contract.Failure] >= failures &&
			out.outcomes[contract.Timeout] >= slowSpans && out.failureTrigger
	}, col.Proc)
	t.Logf("ΔQ output complete after %v: outcomes %v", time.Since(began).Round(time.Millisecond), out.outcomes)
	checkOutcomes(t, out, sent)

	backend.WaitFor(t, otlptest.Counts{Spans: len(sent.spans)}, 10*time.Second)
	checkSpans(t, backend, sent)
	col.StopCleanly(t)

	cmd := exec.Command(otelcol, "validate", "--config=testdata/one-component.yaml", "--config=testdata/matched-twice.yaml")
	cmd.Env = append(cmd.Environ(), "DELTAQ_OTLP_GRPC=127.0.0.1:0", "DELTAQ_BACKEND=127.0.0.1:1", "DELTAQ_SINK=127.0.0.1:1")
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Errorf("otelcol-deltaq validate accepted a probe matched by both the processor and the connector")
	}
	for _, want := range []string{`probe "op" is matched in the spans by both`, `processor "deltaq"`, `connector "deltaq"`} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("otelcol-deltaq validate said %q, want it to contain %q", e2etest.LastLines(string(msg), 5), want)
		}
	}
}

// sendSpans sends over OTLP/gRPC to addr, in one request, the spans of
// the successes (delay k·10 ms + 5 ms, the middle of bin k, k below 50),
// the failures, the slow spans (1.5 s) and the unmatched spans.
func sendSpans(t *testing.T, addr string) sent {
	t.Helper()
	conn := otlptest.Dial(t, addr)
	now := time.Now()
	s := sent{spans: map[pcommon.SpanID]ptrace.Span{}}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "e2e-shop")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	add := func(i int, name string, kind ptrace.SpanKind, delay time.Duration, failed bool) {
		sp := spans.AppendEmpty()
		tid, sid := ids(i)
		sp.SetName(name)
		sp.SetKind(kind)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-delay)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		if failed {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		s.spans[sid] = sp
	}
	i := 0
	for ; i < successes; i++ {
		delay := time.Duration(i*7%50)*binWidth + binWidth/2
		add(i, probe, ptrace.SpanKindServer, delay, false)
		s.delays = append(s.delays, delay)
	}
	for range failures {
		add(i, probe, ptrace.SpanKindServer, 20*time.Millisecond, true)
		i++
	}
	for k := range slowSpans {
		add(i, probe, ptrace.SpanKindServer, 1500*time.Millisecond, k%2 == 0)
		i++
	}
	for k := range unmatchedOp {
		add(i, probe, ptrace.SpanKindClient, 20*time.Millisecond, false)
		add(i+1, "db.query", ptrace.SpanKindServer, time.Duration(k+1)*time.Millisecond, false)
		i += 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatalf("sending the spans: %v", err)
	}
	return s
}

// checkOutcomes compares the folded output with what sendSpans sent.
func checkOutcomes(t *testing.T, out sinkState, s sent) {
	t.Helper()
	want := map[string]int64{contract.Success: successes, contract.Failure: failures, contract.Timeout: slowSpans}
	for k, n := range want {
		if out.outcomes[k] != n {
			t.Errorf("%s{%s=%s}: %d, want %d (all: %v)", contract.MetricOutcomes, contract.AttrOutcome, k,
				out.outcomes[k], n, out.outcomes)
		}
	}
	checkBuckets(t, out, s)
}

// checkSpans checks that the tracing backend got every span once, as sent.
func checkSpans(t *testing.T, backend *otlptest.Receiver, s sent) {
	t.Helper()
	seen := map[pcommon.SpanID]int{}
	for _, td := range backend.Traces() {
		for sp := range otlprecv.Spans(td) {
			seen[sp.SpanID()]++
			if want, ok := s.spans[sp.SpanID()]; !ok || !sameSpan(sp, want) {
				t.Errorf("span %s %s reached the tracing backend other than sent", sp.Name(), sp.SpanID())
			}
		}
	}
	for sid := range s.spans {
		if seen[sid] != 1 {
			t.Errorf("span %s: the tracing backend got it %d times, want once", sid, seen[sid])
		}
	}
}
