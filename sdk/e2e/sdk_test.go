// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/sdk/deltaqstart"
)

// gateEnv must be set for the test to run: it needs the built collector.
const gateEnv = "DELTAQ_SDK_E2E"

// The probe of testdata/collector.yaml, the name of its spans, and the
// connector's timer period. The probe is not named after its spans: the
// start events name the probe (deltaq.probe), and the connector matches the
// spans by name.
const (
	probe    = "op"
	spanName = "GET /op"
	dMax     = 200 * time.Millisecond
	tick     = 10 * time.Millisecond
)

// What the application does: successes spans of op that end within 1 to
// 21 ms, each with a child span that no probe matches; stalled spans of op
// that never end; late spans of op that end lateBy after their dMax.
const (
	successes = 30
	stalled   = 5
	late      = 2
	lateBy    = 150 * time.Millisecond
	service   = "e2e-sdk"
)

// slack bounds how long after the timer's tick a timeout shows in the
// collector's telemetry (the scrape itself, a busy machine); the bound
// checked is start + dMax + tick + slack.
const slack = 100 * time.Millisecond

// The connector's self-telemetry the test reads.
const (
	metricStartEvents   = "otelcol_connector_deltaq_start_events"
	metricStartTimeouts = "otelcol_connector_deltaq_start_timeouts"
	metricLateSpans     = "otelcol_connector_deltaq_late_spans"
	metricInFlight      = "otelcol_connector_deltaq_in_flight"
)

// TestStartEventsThroughCollector runs the built collector with
// testdata/collector.yaml — the deltaq connector alone, in the traces and
// the logs pipelines — and, in the test, an application on the
// OpenTelemetry Go SDK exporting spans and logs over OTLP/gRPC, with
// deltaqstart's span processor announcing the spans of op, selected by
// name. It checks that
//  1. each span of op that never ends, and each that ends after its dMax, is
//     counted as a timeout in real time: the connector's
//     start_timeouts{probe="op"} passes k no earlier than the k-th start +
//     dMax and no later than one tick (plus slack) after, scraped every few
//     milliseconds;
//  2. the connector's output counts exactly the successes and timeouts, no
//     failure, each timeout in the window of its start + dMax (a late span
//     is not counted again), and the timeouts' exemplars name those spans;
//  3. the backend gets every span that ended and every start event sent,
//     as sent: the connector only reads them; a span that ended before its
//     start event was drained has none (elided), the spans that time out
//     each have one;
//  4. the connector's telemetry accounts for every start event sent and
//     every late span, no start event was dropped in the application, each
//     was sent or elided, and the collector exits 0 on SIGTERM having logged
//     no error.
func TestStartEventsThroughCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "deltaqstart's end-to-end test")
	sink := otlptest.Start(t, otlptest.Options{})
	telemetry := e2etest.FreeAddr(t)
	col := e2etest.StartCollector(t, "collector", otelcol, []string{"testdata/collector.yaml"},
		"DELTAQ_SINK="+sink.Addr(), "DELTAQ_TELEMETRY_PORT="+e2etest.Port(telemetry))
	col.WaitReady(t)
	e2etest.WaitListening(t, telemetry, 30*time.Second, col.Proc)
	began := time.Now()

	watch := e2etest.WatchTelemetry(telemetry, 2*time.Millisecond, func(tm e2etest.Telemetry) float64 {
		return tm.Sum(metricStartTimeouts, map[string]string{"probe": probe})
	})
	defer watch.Stop()
	app := newApp(t, col.Addr)
	run := app.run()

	// 1. The timeouts in real time, due by the last start + dMax + one tick.
	deadlines := run.deadlines()
	e2etest.Until(t, "the timeouts in the connector's telemetry", 10*time.Second, func() bool {
		return watch.Last() >= float64(stalled+late)
	}, col.Proc)
	run.lateEnded.Wait()
	time.Sleep(2 * tick)
	readings := watch.Stop()
	latest := e2etest.CheckOnTime(t, metricStartTimeouts, readings, deadlines, tick+slack)
	t.Logf("%d scrapes: the timeouts showed at most %v after start + dMax (timer tick %v)", len(readings),
		latest.Round(time.Millisecond), tick)

	// 2. The output: the window holding the last deadline closes within one
	// interval of it; then one more window, which must add nothing.
	var got map[string]int64
	sink.Until(t, "the outcome counts", 10*time.Second, func() bool {
		got = outcomes(sink.Metrics())
		return got[contract.Success] >= successes && got[contract.Timeout] >= stalled+late
	})
	time.Sleep(1500 * time.Millisecond)
	checkOutput(t, sink.Metrics(), deadlines, run)

	// 3. The backend, once every span that ended and every start event sent
	// is in. Every span has ended or been drained long since: no start event
	// is emitted or elided any more.
	sink.WaitFor(t, otlptest.Counts{Spans: len(run.ended)}, 10*time.Second)
	sent := int(app.starts.Emitted())
	sink.Until(t, "every start event sent", 10*time.Second, func() bool {
		return len(otlptest.StartsOf(t, sink.Logs())) >= sent
	})
	checkBackend(t, sink, run, sent)

	// 4. The telemetry, the application and the collector.
	checkTelemetry(t, e2etest.Scrape(t, telemetry), sent)
	app.shutdown(t)
	if d, e, el := app.starts.Dropped(), app.starts.Emitted(), app.starts.Elided(); d != 0 ||
		e != uint64(sent) || e+el != successes+stalled+late {
		t.Errorf("deltaqstart: Dropped %d, Emitted %d, Elided %d; want 0, %d before the shutdown, %d in all", d, e, el,
			sent, successes+stalled+late)
	}
	t.Logf("%d start events sent, %d elided (their spans ended before the drain)", sent, app.starts.Elided())
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

// run is what the application did: the spans of op by kind, and every span
// that ended (or will: the late ones end lateEnded), by span id.
type run struct {
	stalled, late, ops map[pcommon.SpanID]sdktrace.ReadOnlySpan
	ended              map[pcommon.SpanID]sdktrace.ReadOnlySpan
	lateEnded          *sync.WaitGroup
}

// run starts the spans of op: every seventh of the first 35 is left
// running, the 11th and 25th end lateBy after their dMax, the others end
// after 1 + 5·(i mod 5) ms with a child span inside.
func (a *app) run() run {
	tr := a.tp.Tracer("e2e")
	r := run{stalled: map[pcommon.SpanID]sdktrace.ReadOnlySpan{}, late: map[pcommon.SpanID]sdktrace.ReadOnlySpan{},
		ops: map[pcommon.SpanID]sdktrace.ReadOnlySpan{}, ended: map[pcommon.SpanID]sdktrace.ReadOnlySpan{},
		lateEnded: &sync.WaitGroup{}}
	for i := range successes + stalled + late {
		ctx, s := tr.Start(context.Background(), spanName, trace.WithSpanKind(trace.SpanKindServer))
		id := pcommon.SpanID(s.SpanContext().SpanID())
		r.ops[id] = s.(sdktrace.ReadOnlySpan)
		switch {
		case i%7 == 0 && i < 7*stalled:
			r.stalled[id] = s.(sdktrace.ReadOnlySpan)
			continue
		case i%14 == 10:
			r.late[id], r.ended[id] = s.(sdktrace.ReadOnlySpan), s.(sdktrace.ReadOnlySpan)
			r.lateEnded.Add(1)
			time.AfterFunc(dMax+lateBy, func() { s.End(); r.lateEnded.Done() })
			continue
		}
		_, child := tr.Start(ctx, "db.query", trace.WithSpanKind(trace.SpanKindClient))
		time.Sleep(time.Millisecond + time.Duration(i%5)*5*time.Millisecond)
		child.End()
		s.End()
		r.ended[id] = s.(sdktrace.ReadOnlySpan)
		r.ended[pcommon.SpanID(child.SpanContext().SpanID())] = child.(sdktrace.ReadOnlySpan)
	}
	return r
}

// deadlines are the start + dMax of the spans that time out (stalled and
// late), in order.
func (r run) deadlines() []time.Time {
	var d []time.Time
	for _, m := range []map[pcommon.SpanID]sdktrace.ReadOnlySpan{r.stalled, r.late} {
		for _, s := range m {
			d = append(d, s.StartTime().Add(dMax))
		}
	}
	slices.SortFunc(d, time.Time.Compare)
	return d
}

// timedOut reports whether the span of id is one that times out.
func (r run) timedOut(id pcommon.SpanID) bool {
	_, s := r.stalled[id]
	_, l := r.late[id]
	return s || l
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

// --- the connector's telemetry -----------------------------------------------------

// checkTelemetry checks the connector's counters at the end: every start
// event sent (sent) was read, tracked or found after its span, none
// refused; the late spans were recognised; nothing is left started.
func checkTelemetry(t *testing.T, tm e2etest.Telemetry, sent int) {
	t.Helper()
	result := func(r string) float64 { return tm.Sum(metricStartEvents, map[string]string{"result": r}) }
	if n := result("tracked") + result("after_end"); n != float64(sent) || result("tracked") < stalled+late {
		t.Errorf("%s: tracked %.0f + after_end %.0f, want %d, at least %d tracked", metricStartEvents,
			result("tracked"), result("after_end"), sent, stalled+late)
	}
	for _, r := range []string{"duplicate", "unknown_probe", "invalid"} {
		if n := result(r); n != 0 {
			t.Errorf("%s{result=%q} = %.0f, want 0", metricStartEvents, r, n)
		}
	}
	if n := tm.Sum(metricLateSpans, map[string]string{"probe": probe}); n != late {
		t.Errorf("%s{probe=%q} = %.0f, want %d", metricLateSpans, probe, n, late)
	}
	if n := tm.Sum(metricInFlight, map[string]string{"state": "started"}); n != 0 {
		t.Errorf("%s{state=started} = %.0f, want 0", metricInFlight, n)
	}
}

// --- what the sink got -----------------------------------------------------------

// outcomes is the latest deltaq.outcomes (cumulative) of the probe, by
// outcome.
func outcomes(mds []pmetric.Metrics) map[string]int64 {
	got, at := map[string]int64{}, map[string]pcommon.Timestamp{}
	for dp := range outcomePoints(mds) {
		o := str(dp.Attributes(), contract.AttrOutcome)
		if dp.Timestamp() >= at[o] {
			at[o] = dp.Timestamp()
			got[o] = dp.IntValue()
		}
	}
	return got
}

// outcomePoints are the deltaq.outcomes points of the probe.
func outcomePoints(mds []pmetric.Metrics) func(func(pmetric.NumberDataPoint) bool) {
	return func(yield func(pmetric.NumberDataPoint) bool) {
		for _, md := range mds {
			for m := range otlprecv.Metrics(md) {
				if m.Name() != contract.MetricOutcomes {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == probe && !yield(dp) {
						return
					}
				}
			}
		}
	}
}

// checkOutput checks the connector's output: the exact counts; each
// window's cumulative timeouts, at its end, those whose start + dMax is
// before it; the exemplars of the timeout points name spans that timed out.
func checkOutput(t *testing.T, mds []pmetric.Metrics, deadlines []time.Time, r run) {
	t.Helper()
	got := outcomes(mds)
	want := map[string]int64{contract.Success: successes, contract.Timeout: stalled + late, contract.Failure: 0}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s{%s=%s}: %d, want %d (all: %v)", contract.MetricOutcomes, contract.AttrOutcome, k, got[k], n, got)
		}
	}
	windows, exemplars := 0, 0
	for dp := range outcomePoints(mds) {
		if str(dp.Attributes(), contract.AttrOutcome) != contract.Timeout {
			continue
		}
		end := dp.Timestamp().AsTime()
		n := 0
		for _, d := range deadlines {
			if d.Before(end) {
				n++
			}
		}
		windows++
		if dp.IntValue() != int64(n) {
			t.Errorf("%s{%s=%s} at the window ending %v: %d, want %d (the instances whose start + dMax is before it)",
				contract.MetricOutcomes, contract.AttrOutcome, contract.Timeout, end, dp.IntValue(), n)
		}
		for _, ex := range dp.Exemplars().All() {
			exemplars++
			if !r.timedOut(ex.SpanID()) {
				t.Errorf("a timeout exemplar names span %s, which did not time out", ex.SpanID())
			}
		}
	}
	if exemplars == 0 {
		t.Errorf("no exemplar on the timeout points of %d windows", windows)
	}
}

// checkBackend checks that the backend got every span that ended once, as
// sent (no deltaq.* attribute, no span that did not end), and the sent
// starts once each, as entries of batch start events, with their spans' ids
// and starts: those of the spans that time out, and of others up to sent in
// all.
func checkBackend(t *testing.T, sink *otlptest.Receiver, r run, sent int) {
	t.Helper()
	seen := map[pcommon.SpanID]int{}
	for _, td := range sink.Traces() {
		for sp := range otlprecv.Spans(td) {
			seen[sp.SpanID()]++
			s, ok := r.ended[sp.SpanID()]
			switch {
			case !ok:
				t.Errorf("span %s %s reached the backend but never ended", sp.Name(), sp.SpanID())
			case sp.Name() != s.Name() || sp.EndTimestamp().AsTime() != s.EndTime().UTC() || sp.Attributes().Len() != 0:
				t.Errorf("span %s: the backend got %s ending %v with %v; sent %s ending %v with none", sp.SpanID(),
					sp.Name(), sp.EndTimestamp(), sp.Attributes().AsRaw(), s.Name(), s.EndTime())
			}
		}
	}
	for id, s := range r.ended {
		if seen[id] != 1 {
			t.Errorf("span %s %s reached the backend %d times, want once", s.Name(), id, seen[id])
		}
	}
	events := map[pcommon.SpanID]int{}
	for _, st := range otlptest.StartsOf(t, sink.Logs()) {
		s, ok := r.ops[st.SpanID]
		if !st.Batch || !ok || st.TraceID != pcommon.TraceID(s.SpanContext().TraceID()) ||
			st.Time.AsTime() != s.StartTime().UTC() || st.Probe != probe || st.Threshold != 0 {
			t.Errorf("start %+v of span %s: want an entry of a batch start event of a span of %s, as sent", st, st.SpanID, probe)
		}
		events[st.SpanID]++
	}
	n := 0
	for id := range r.ops {
		n += events[id]
		if events[id] > 1 || events[id] == 0 && r.timedOut(id) {
			t.Errorf("span %s (timed out: %v): %d start events reached the backend, want 1 (0 or 1 for a span "+
				"that ended in time)", id, r.timedOut(id), events[id])
		}
	}
	if n != sent {
		t.Errorf("%d starts of the spans of %s reached the backend, want the %d sent", n, probe, sent)
	}
}

func str(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}
