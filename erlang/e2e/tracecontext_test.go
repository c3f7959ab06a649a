// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// The spans of erlang/examples/traced_http.escript: the handler's, and its
// child, which sleeps workMs by default; tracedMs in the requests of
// TestTraceContextFromGo, longer than dqsd_otel's batch interval (500 ms),
// so that their start events go while they run (a start whose span is
// queued in the same export round is not sent).
const (
	handlerName = "handle_work"
	computeName = "compute"
	workMs      = 20
	tracedMs    = 600
	serviceName = "traced-http-e2e"
	// The tracestate of the Go client's trace, which its own caller (Congo)
	// began: the example of the W3C Recommendation "Trace Context", section
	// "Relationship Between the Headers".
	clientTraceState = "congo=t61rcWkgMzE"
)

// OTLP span flags (opentelemetry-proto trace.proto, SpanFlags): the W3C
// sampled flag, and bit 8 (the parent's remoteness is known) with bit 9 (the
// parent is remote).
const (
	flagSampled      = 0x01
	flagHasIsRemote  = 0x100
	flagParentRemote = 0x200
)

// TestTraceContextFromGo runs the built collector with
// testdata/collector.yaml (OTLP in, everything on to a test receiver as the
// tracing backend) and erlang/examples/traced_http.escript, and sends the
// example three requests from Go:
//  1. one in a client span of the OpenTelemetry Go SDK (sdk/trace, exported
//     with otlptracegrpc to the collector), its context injected with the
//     W3C propagator (propagation.TraceContext). The handler's span must
//     arrive as the child of the Go span in the same trace, with the
//     tracestate as sent, its child span under it, its start event with its
//     ids, and the response must name the handler's span as the parent of a
//     downstream request;
//  2. one without trace context, and 3. one whose traceparent is in
//     uppercase hex, which the W3C format forbids: each handler span must
//     start a trace of its own.
//
// The example then exits 0 when its standard input is closed.
func TestTraceContextFromGo(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the Erlang end-to-end tests (they need Erlang/OTP too)")
	root, escript, ebin := prerequisites(t)
	backend := otlptest.Start(t, otlptest.Options{})
	grpcAddr := e2etest.FreeAddr(t)
	col, httpAddr := startCollector(t, root, otelcol, "erlang/e2e/testdata/collector.yaml",
		"DELTAQ_OTLP_GRPC="+grpcAddr, "DELTAQ_BACKEND="+backend.Addr())
	e2etest.WaitListening(t, httpAddr, 30*time.Second, col)
	e2etest.WaitListening(t, grpcAddr, 30*time.Second, col)
	svc, stdin, url := startTracedHTTP(t, escript, ebin, root, httpAddr)
	url = fmt.Sprintf("%s?ms=%d", url, tracedMs)

	// 1. The Go client's request, in its span, whose parent is the Go
	// service's own caller.
	tracer := goTracer(t, grpcAddr)
	ts, err := trace.ParseTraceState(clientTraceState)
	if err != nil {
		t.Fatal(err)
	}
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: randomTraceID(t), SpanID: randomSpanID(t), TraceFlags: trace.FlagsSampled, TraceState: ts,
		Remote: true,
	})
	ctx, span := tracer.Start(trace.ContextWithRemoteSpanContext(context.Background(), caller), "GET /work",
		trace.WithSpanKind(trace.SpanKindClient))
	traced := get(t, url, func(h http.Header) {
		propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
	})
	span.End() // exported at once (WithSyncer)
	client := span.SpanContext()

	// 2. and 3.: no trace context, and an invalid one.
	untraced := get(t, url, func(http.Header) {})
	invalid := get(t, url, func(h http.Header) {
		h.Set("traceparent", strings.ToUpper(fmt.Sprintf("00-%s-%s-01", client.TraceID(), client.SpanID())))
	})

	// One client span, three handler spans with a child each, and the
	// handlers' and children's start events.
	backend.WaitFor(t, otlptest.Counts{Spans: 7}, 20*time.Second)
	backend.Until(t, "the 6 start events", 20*time.Second, func() bool {
		return len(otlptest.StartsOf(t, backend.Logs())) >= 6
	})
	spans := spansByID(backend.Traces())
	events := startEvents(t, backend.Logs())

	// 1. One trace: Go client span → handler span → compute span.
	h := handlerOf(t, spans, traced)
	tid, sid := pcommon.TraceID(client.TraceID()), pcommon.SpanID(client.SpanID())
	if h.span.TraceID() != tid || h.span.ParentSpanID() != sid {
		t.Errorf("handler span: trace %s parent %s, want the Go span's trace %s and id %s",
			h.span.TraceID(), h.span.ParentSpanID(), tid, sid)
	}
	if got := h.span.TraceState().AsRaw(); got != clientTraceState {
		t.Errorf("handler span: tracestate %q, want %q as sent", got, clientTraceState)
	}
	if got, want := h.span.Flags(), uint32(flagSampled|flagHasIsRemote|flagParentRemote); got != want {
		t.Errorf("handler span: flags %#x, want %#x (sampled, remote parent)", got, want)
	}
	if h.service != serviceName {
		t.Errorf("handler span: service.name %q, want %q", h.service, serviceName)
	}
	goSpan, ok := spans[sid]
	if !ok || goSpan.span.TraceID() != tid || goSpan.span.ParentSpanID() != pcommon.SpanID(caller.SpanID()) {
		t.Fatalf("the Go span %s did not arrive in trace %s under its caller %s", sid, tid, caller.SpanID())
	}
	// The handler ran within the request: its duration is at least its
	// child's sleep and at most the Go span's (durations, unlike start
	// times, do not depend on the two clocks agreeing).
	hd := duration(h.span)
	if gd := duration(goSpan.span); hd < tracedMs*time.Millisecond || hd > gd {
		t.Errorf("handler span lasted %v, want between %d ms and the Go span's %v", hd, tracedMs, gd)
	}
	checkChild(t, spans, h)
	if want := fmt.Sprintf("00-%s-%s-01", tid, h.span.SpanID()); traced["traceparent"] != want {
		t.Errorf("downstream traceparent %q, want %q (the handler's span as parent)", traced["traceparent"], want)
	}
	if traced["tracestate"] != clientTraceState {
		t.Errorf("downstream tracestate %q, want %q", traced["tracestate"], clientTraceState)
	}
	if ev, ok := events[h.span.SpanID()]; !ok || ev != tid {
		t.Errorf("handler's start event: trace %s (found %v), want %s", ev, ok, tid)
	}
	t.Logf("one trace %s: Go span %s → %s %s (%v) → %s", tid, sid, handlerName, h.span.SpanID(),
		hd.Round(time.Microsecond), computeName)

	// 2. and 3.: new traces.
	for what, body := range map[string]map[string]string{"without trace context": untraced,
		"with an uppercase traceparent": invalid} {
		r := handlerOf(t, spans, body)
		if !r.span.ParentSpanID().IsEmpty() || r.span.TraceID() == tid || r.span.TraceID() == h.span.TraceID() {
			t.Errorf("request %s: handler span in trace %s with parent %s, want a new trace without parent",
				what, r.span.TraceID(), r.span.ParentSpanID())
		}
		if got, want := r.span.Flags(), uint32(flagSampled|flagHasIsRemote); got != want {
			t.Errorf("request %s: flags %#x, want %#x", what, got, want)
		}
		checkChild(t, spans, r)
	}
	if untraced["trace_id"] == invalid["trace_id"] {
		t.Errorf("two requests without a valid traceparent share trace %s", untraced["trace_id"])
	}

	// The example exits 0 when its input closes, having exported everything.
	if err := stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Wait(t, 15*time.Second); err != nil {
		t.Fatalf("traced_http exited with %v, want exit status 0", err)
	}
	if !strings.Contains(svc.Log(), "traced_http: done, flush ok") {
		t.Errorf("traced_http did not end with a successful flush:\n%s", svc.Log())
	}
}

// startTracedHTTP starts the example on a free port, exporting to the
// collector's OTLP/HTTP at httpAddr, and returns it, its standard input and
// its /work URL once it serves.
func startTracedHTTP(t *testing.T, escript, ebin, root, httpAddr string) (*e2etest.Proc, io.WriteCloser, string) {
	t.Helper()
	cmd := exec.Command(escript, filepath.Join(root, "erlang", "examples", "traced_http.escript"),
		"--endpoint", "http://"+httpAddr, "--port", "0", "--work-ms", fmt.Sprint(workMs),
		"--service-name", serviceName)
	cmd.Env = append(os.Environ(), "DQSD_OTEL_EBIN="+ebin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := e2etest.Start(t, "traced_http", cmd)
	listening := regexp.MustCompile(`^traced_http: listening on (http://127\.0\.0\.1:\d+)$`)
	var base string
	e2etest.Until(t, "traced_http to listen", 30*time.Second, func() bool {
		for _, l := range p.Lines() {
			if m := listening.FindStringSubmatch(l.Text); m != nil {
				base = m[1]
				return true
			}
		}
		return false
	}, p)
	t.Logf("traced_http (pid %d) on %s", p.Pid(), base)
	return p, stdin, base + "/work"
}

// get sends a GET with the headers set by header and returns the response
// body's fields: "key=value" and "name: value" lines.
func get(t *testing.T, url string, header func(http.Header)) map[string]string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	header(req.Header)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, body)
	}
	f := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok {
			f[k] = v
		} else if k, v, ok := strings.Cut(l, "="); ok {
			f[k] = v
		}
	}
	return f
}

// goTracer returns a tracer of the OpenTelemetry Go SDK whose spans are
// exported, each when it ends, over OTLP/gRPC to grpcAddr; the provider
// shuts down when the test ends.
func goTracer(t *testing.T, grpcAddr string) trace.Tracer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(grpcAddr), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(sdkresource.NewSchemaless(attribute.String("service.name", "go-client-e2e"))))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	})
	return tp.Tracer("github.com/deltaq-otel/deltaq/erlang/e2e")
}

func duration(s ptrace.Span) time.Duration {
	return s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime())
}

// received is a span that reached the backend, with its service's name.
type received struct {
	span    ptrace.Span
	service string
}

// spansByID indexes the spans of the trace requests by span id.
func spansByID(tds []ptrace.Traces) map[pcommon.SpanID]received {
	m := map[pcommon.SpanID]received{}
	for _, td := range tds {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					m[s.SpanID()] = received{span: s, service: svc.AsString()}
				}
			}
		}
	}
	return m
}

// startEvents maps the span id of every start event to its trace id.
func startEvents(t *testing.T, lds []plog.Logs) map[pcommon.SpanID]pcommon.TraceID {
	m := map[pcommon.SpanID]pcommon.TraceID{}
	for _, s := range otlptest.StartsOf(t, lds) {
		m[s.SpanID] = s.TraceID
	}
	return m
}

// handlerOf returns the handler span a response names (trace_id, span_id).
func handlerOf(t *testing.T, spans map[pcommon.SpanID]received, body map[string]string) received {
	t.Helper()
	for id, r := range spans {
		if id.String() == body["span_id"] && r.span.TraceID().String() == body["trace_id"] &&
			r.span.Name() == handlerName {
			return r
		}
	}
	t.Fatalf("no %s span with the ids of the response %v", handlerName, body)
	return received{}
}

// checkChild checks that the handler span h has its compute child.
func checkChild(t *testing.T, spans map[pcommon.SpanID]received, h received) {
	t.Helper()
	for _, r := range spans {
		if r.span.Name() == computeName && r.span.ParentSpanID() == h.span.SpanID() {
			if r.span.TraceID() != h.span.TraceID() {
				t.Errorf("%s span in trace %s, its parent in %s", computeName, r.span.TraceID(), h.span.TraceID())
			}
			return
		}
	}
	t.Errorf("no %s span under %s %s", computeName, handlerName, h.span.SpanID())
}

func randomTraceID(t *testing.T) (id trace.TraceID) {
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return id
}

func randomSpanID(t *testing.T) (id trace.SpanID) {
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return id
}
