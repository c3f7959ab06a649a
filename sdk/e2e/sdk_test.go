// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/outcome"
	"github.com/deltaq-otel/deltaq/sdk/deltaqstart"
)

// gateEnv must be set for the test to run: it needs the built collector.
const gateEnv = "DELTAQ_SDK_E2E"

// The probe of testdata/collector.yaml, the name of its spans, and the
// processor's timer period. The probe is not named after its spans, so the
// start events carry both (deltaq.probe and deltaq.span.name) and the
// synthetic timeout spans must take the span name.
const (
	probe    = "op"
	spanName = "GET /op"
	dMax     = 200 * time.Millisecond
	tick     = 10 * time.Millisecond
)

// What the application does: successes spans of op that end within 1 to
// 21 ms, each with a child span that no probe matches, and timeouts spans of
// op that never end.
const (
	successes = 30
	timeouts  = 5
	service   = "e2e-sdk"
)

// transit bounds the time a synthetic timeout span takes from the
// processor's timer to the test's receiver (one unqueued OTLP/gRPC export
// on loopback); it only keeps a busy machine from failing the test, the
// bound checked is start + dMax + tick + transit.
const transit = 100 * time.Millisecond

// TestStartEventsThroughCollector runs the built collector with
// testdata/collector.yaml and, in the test, an application on the
// OpenTelemetry Go SDK exporting spans and logs over OTLP/gRPC, with
// deltaqstart's span processor announcing the spans of op, selected by
// name. It checks that
//  1. each span of op that never ends comes back as exactly one synthetic
//     timeout span, with the span's ids, start and name, the application's
//     service.name and end = start + dMax, arriving no earlier than start +
//     dMax and no later than one tick (plus transit) after;
//  2. the spans that ended come back as successes, none late, and the span
//     of no probe unmarked; no start event passes the processor;
//  3. the connector counts exactly the successes and timeouts, no failure;
//  4. no start event was dropped in the application, and the collector
//     exits 0 on SIGTERM having logged no error.
func TestStartEventsThroughCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "deltaqstart's end-to-end test")
	arrivals := &arrivalLog{at: map[pcommon.SpanID]time.Time{}}
	sink := otlptest.Start(t, otlptest.Options{Traces: arrivals.note})
	col := e2etest.StartCollector(t, "collector", otelcol, []string{"testdata/collector.yaml"}, "DELTAQ_SINK="+sink.Addr())
	col.WaitReady(t)
	began := time.Now()

	app := newApp(t, col.Addr)
	stalled, ended := app.run()

	// 1. The timeouts, due by the last start + dMax + one tick.
	sink.Until(t, "the synthetic timeout spans", 10*time.Second, func() bool {
		return arrivals.count() >= timeouts
	})
	checkTimeouts(t, sink, arrivals, stalled)

	// 3. The counts: the window holding the last instance closes within one
	// interval of it; then one more window, which must add nothing.
	var got map[string]int64
	sink.Until(t, "the outcome counts", 10*time.Second, func() bool {
		got = outcomes(sink)
		return got[outcome.Success] >= successes && got[outcome.Timeout] >= timeouts
	})
	time.Sleep(1500 * time.Millisecond)
	got = outcomes(sink)
	want := map[string]int64{outcome.Success: successes, outcome.Timeout: timeouts, outcome.Failure: 0}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s{%s=%s}: %d, want %d (all: %v)", outcome.MetricOutcomes, outcome.AttrOutcome, k, got[k], n, got)
		}
	}

	// 2. The spans that ended, and the logs.
	checkEnded(t, sink, ended)

	// 4. The application and the collector.
	app.shutdown(t)
	if d, e := app.starts.Dropped(), app.starts.Emitted(); d != 0 || e != successes+timeouts {
		t.Errorf("deltaqstart: Dropped %d, Emitted %d; want 0, %d", d, e, successes+timeouts)
	}
	col.StopCleanly(t)
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// --- the application ------------------------------------------------------------

// app is the instrumented application: the SDK's tracer and logger
// providers exporting to the collector every 20 ms, far below dMax.
type app struct {
	tp     *sdktrace.TracerProvider
	lp     *sdklog.LoggerProvider
	starts *deltaqstart.SpanProcessor
}

func newApp(t *testing.T, collector string) *app {
	t.Helper()
	ctx := context.Background()
	res := resource.NewSchemaless(semconv.ServiceName(service))
	logExp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(collector), otlploggrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	traceExp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(collector), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	a := &app{lp: sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(logExp, sdklog.WithExportInterval(20*time.Millisecond))))}
	selectOp := func(s sdktrace.ReadOnlySpan) (string, bool) { return probe, s.Name() == spanName }
	if a.starts, err = deltaqstart.NewSpanProcessor(a.lp, deltaqstart.WithSelector(selectOp)); err != nil {
		t.Fatal(err)
	}
	a.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(a.starts),
		sdktrace.WithBatcher(traceExp, sdktrace.WithBatchTimeout(20*time.Millisecond)))
	return a
}

// run starts the spans: every seventh span of op is left running, the
// others end after 1 + 5·(i mod 5) ms with a child span inside. It returns
// the spans left running and those that ended, by span id.
func (a *app) run() (stalled, ended map[pcommon.SpanID]sdktrace.ReadOnlySpan) {
	tr := a.tp.Tracer("e2e")
	stalled, ended = map[pcommon.SpanID]sdktrace.ReadOnlySpan{}, map[pcommon.SpanID]sdktrace.ReadOnlySpan{}
	for i := range successes + timeouts {
		ctx, s := tr.Start(context.Background(), spanName, trace.WithSpanKind(trace.SpanKindServer))
		id := pcommon.SpanID(s.SpanContext().SpanID())
		if i%7 == 0 {
			stalled[id] = s.(sdktrace.ReadOnlySpan)
			continue
		}
		_, child := tr.Start(ctx, "db.query", trace.WithSpanKind(trace.SpanKindClient))
		time.Sleep(time.Millisecond + time.Duration(i%5)*5*time.Millisecond)
		child.End()
		s.End()
		ended[id] = s.(sdktrace.ReadOnlySpan)
		ended[pcommon.SpanID(child.SpanContext().SpanID())] = child.(sdktrace.ReadOnlySpan)
	}
	return stalled, ended
}

// shutdown shuts the tracer provider down first (which emits the start
// events still queued), then the logger provider.
func (a *app) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.tp.Shutdown(ctx); err != nil {
		t.Errorf("TracerProvider.Shutdown: %v", err)
	}
	if err := a.lp.Shutdown(ctx); err != nil {
		t.Errorf("LoggerProvider.Shutdown: %v", err)
	}
}

// --- what the sink got -----------------------------------------------------------

// arrivalLog notes when each synthetic timeout span reached the sink.
type arrivalLog struct {
	mu sync.Mutex
	at map[pcommon.SpanID]time.Time
}

// note is the sink's hook for trace requests (called under its lock).
func (l *arrivalLog) note(td ptrace.Traces) otlptest.Reply {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for sp := range otlprecv.Spans(td) {
		if v, ok := sp.Attributes().Get(outcome.AttrSynthetic); ok && v.Bool() {
			if _, seen := l.at[sp.SpanID()]; !seen {
				l.at[sp.SpanID()] = now
			}
		}
	}
	return otlptest.Reply{}
}

func (l *arrivalLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at)
}

func (l *arrivalLog) of(id pcommon.SpanID) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.at[id]
	return at, ok
}

// checkTimeouts checks every synthetic span against the span left running
// with its ids, and when it arrived.
func checkTimeouts(t *testing.T, sink *otlptest.Receiver, arrivals *arrivalLog, stalled map[pcommon.SpanID]sdktrace.ReadOnlySpan) {
	t.Helper()
	seen := map[pcommon.SpanID]int{}
	var latest time.Duration
	for _, td := range sink.Traces() {
		for _, rs := range td.ResourceSpans().All() {
			svc, _ := rs.Resource().Attributes().Get(string(semconv.ServiceNameKey))
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					if v, ok := sp.Attributes().Get(outcome.AttrSynthetic); !ok || !v.Bool() {
						continue
					}
					seen[sp.SpanID()]++
					s, ok := stalled[sp.SpanID()]
					if !ok {
						t.Errorf("a synthetic timeout span %s %s for no span left running", sp.Name(), sp.SpanID())
						continue
					}
					start := s.StartTime()
					if sp.TraceID() != pcommon.TraceID(s.SpanContext().TraceID()) || sp.Name() != spanName ||
						svc.AsString() != service || sp.StartTimestamp().AsTime() != start.UTC() ||
						sp.EndTimestamp().AsTime() != start.Add(dMax).UTC() || str(sp, outcome.AttrProbe) != probe ||
						str(sp, outcome.AttrOutcome) != outcome.Timeout {
						t.Errorf("synthetic span %s: %s of %q, trace %s, %v–%v, attributes %v; want %s of %q, trace %s, %v–%v",
							sp.SpanID(), sp.Name(), svc.AsString(), sp.TraceID(), sp.StartTimestamp(), sp.EndTimestamp(),
							sp.Attributes().AsRaw(), spanName, service, s.SpanContext().TraceID(),
							pcommon.NewTimestampFromTime(start), pcommon.NewTimestampFromTime(start.Add(dMax)))
					}
					at, _ := arrivals.of(sp.SpanID())
					late := at.Sub(start.Add(dMax))
					latest = max(latest, late)
					if late < 0 || late > tick+transit {
						t.Errorf("synthetic span %s arrived %v after start + dMax, want within [0, %v + %v]",
							sp.SpanID(), late, tick, transit)
					}
				}
			}
		}
	}
	for id := range stalled {
		if seen[id] != 1 {
			t.Errorf("span %s left running: %d synthetic timeout spans, want 1", id, seen[id])
		}
	}
	t.Logf("the timeouts arrived at most %v after start + dMax (timer tick %v)", latest, tick)
}

// checkEnded checks the spans that ended as the processor passed them on:
// those of op successes (deltaq.probe, no outcome, not late), the others
// unmarked, each once; and that no log record (a start event) got through.
func checkEnded(t *testing.T, sink *otlptest.Receiver, ended map[pcommon.SpanID]sdktrace.ReadOnlySpan) {
	t.Helper()
	seen := map[pcommon.SpanID]int{}
	for _, td := range sink.Traces() {
		for sp := range otlprecv.Spans(td) {
			if _, ok := sp.Attributes().Get(outcome.AttrSynthetic); ok {
				continue
			}
			seen[sp.SpanID()]++
			s, ok := ended[sp.SpanID()]
			switch {
			case !ok:
				t.Errorf("span %s %s reached the sink but never ended", sp.Name(), sp.SpanID())
			case s.Name() == spanName && (str(sp, outcome.AttrProbe) != probe || str(sp, outcome.AttrOutcome) != "" ||
				str(sp, outcome.AttrLate) != ""):
				t.Errorf("span %s of %s: attributes %v, want a success (%s = %s alone)", sp.SpanID(), probe,
					sp.Attributes().AsRaw(), outcome.AttrProbe, probe)
			case s.Name() != spanName && str(sp, outcome.AttrProbe) != "":
				t.Errorf("span %s %s of no probe got %v", sp.Name(), sp.SpanID(), sp.Attributes().AsRaw())
			}
		}
	}
	for id, s := range ended {
		if seen[id] != 1 {
			t.Errorf("span %s %s reached the sink %d times, want once", s.Name(), id, seen[id])
		}
	}
	if n := sink.Counts().LogRecords; n != 0 {
		t.Errorf("%d log records passed the processor, want none (it consumes the start events)", n)
	}
}

// outcomes is the latest deltaq.outcomes (cumulative) of the probe, by
// outcome.
func outcomes(sink *otlptest.Receiver) map[string]int64 {
	got, at := map[string]int64{}, map[string]pcommon.Timestamp{}
	for _, md := range sink.Metrics() {
		for m := range otlprecv.Metrics(md) {
			if m.Name() != outcome.MetricOutcomes {
				continue
			}
			for _, dp := range m.Sum().DataPoints().All() {
				p, _ := dp.Attributes().Get(outcome.AttrProbe)
				o, _ := dp.Attributes().Get(outcome.AttrOutcome)
				if p.AsString() == probe && dp.Timestamp() >= at[o.AsString()] {
					at[o.AsString()] = dp.Timestamp()
					got[o.AsString()] = dp.IntValue()
				}
			}
		}
	}
	return got
}

func str(sp ptrace.Span, key string) string {
	if v, ok := sp.Attributes().Get(key); ok {
		return v.AsString()
	}
	return ""
}
