// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/embedded"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// recorder is an SDK log processor that keeps a copy of every record.
type recorder struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (*recorder) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*recorder) Shutdown(context.Context) error                         { return nil }
func (*recorder) ForceFlush(context.Context) error                       { return nil }

func (r *recorder) OnEmit(_ context.Context, rec *sdklog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

func (r *recorder) all() []sdklog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdklog.Record(nil), r.records...)
}

// setup returns a tracer whose provider runs a SpanProcessor made with
// opts, emitting through an SDK LoggerProvider into the returned recorder.
// Both providers are shut down when the test ends.
func setup(t *testing.T, sampler sdktrace.Sampler, opts ...Option) (trace.Tracer, *SpanProcessor, *recorder) {
	t.Helper()
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	p, err := NewSpanProcessor(lp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(p))
	t.Cleanup(func() {
		ctx := context.Background()
		if err := tp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := lp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return tp.Tracer("test"), p, rec
}

// recordOnly samples no span but keeps every span recording: the SDK then
// calls OnStart for spans that are never exported.
type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

// wantEvent is a start event the test expects for a span.
type wantEvent struct {
	span  trace.Span
	start time.Time
	probe string
	name  string
}

// checkEvents checks that the records are exactly the start events of
// want, in that order, each with every field of the contract.
func checkEvents(t *testing.T, got []sdklog.Record, want []wantEvent) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		r := got[i]
		sc := w.span.SpanContext()
		if r.EventName() != startEventName {
			t.Errorf("record %d: EventName %q, want %q", i, r.EventName(), startEventName)
		}
		if r.TraceID() != sc.TraceID() || r.SpanID() != sc.SpanID() {
			t.Errorf("record %d: ids %s/%s, want the span's %s/%s", i, r.TraceID(), r.SpanID(), sc.TraceID(), sc.SpanID())
		}
		if !r.Timestamp().Equal(w.start) || !r.ObservedTimestamp().Equal(w.start) {
			t.Errorf("record %d: timestamp %v, observed %v, want the span's start %v", i, r.Timestamp(),
				r.ObservedTimestamp(), w.start)
		}
		attrs := map[attribute.Key]string{}
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			attrs[kv.Key] = kv.Value.Type().String() + ":" + kv.Value.AsString()
			return true
		})
		wantAttrs := map[attribute.Key]string{attrProbe: "STRING:" + w.probe, attrSpanName: "STRING:" + w.name}
		if len(attrs) != len(wantAttrs) || attrs[attrProbe] != wantAttrs[attrProbe] ||
			attrs[attrSpanName] != wantAttrs[attrSpanName] {
			t.Errorf("record %d: attributes %v, want %v", i, attrs, wantAttrs)
		}
		if r.InstrumentationScope().Name != ScopeName {
			t.Errorf("record %d: scope %q, want %q", i, r.InstrumentationScope().Name, ScopeName)
		}
	}
}

// TestDefaultSelector starts spans of every kind, with and without a
// deltaq.probe attribute, and checks that exactly the server spans and the
// spans carrying a non-empty string deltaq.probe get a start event, with the
// right probe, ids, timestamp and span name.
func TestDefaultSelector(t *testing.T) {
	tr, p, rec := setup(t, sdktrace.AlwaysSample())
	t0 := time.Date(2026, 11, 24, 5, 0, 0, 123456789, time.UTC)
	start := func(name string, i int, opts ...trace.SpanStartOption) (trace.Span, time.Time) {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		_, s := tr.Start(context.Background(), name, append(opts, trace.WithTimestamp(at))...)
		return s, at
	}
	server, serverAt := start("GET /items", 0, trace.WithSpanKind(trace.SpanKindServer))
	start("db.query", 1, trace.WithSpanKind(trace.SpanKindClient))
	start("work", 2)
	tagged, taggedAt := start("work", 3, trace.WithAttributes(attribute.String("k", "v"),
		attribute.String(attrProbe, "checkout")))
	start("work", 4, trace.WithAttributes(attribute.String(attrProbe, "")))
	start("work", 5, trace.WithAttributes(attribute.Int(attrProbe, 7)))
	start("queue", 6, trace.WithSpanKind(trace.SpanKindConsumer))
	taggedServer, taggedServerAt := start("POST /pay", 7, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String(attrProbe, "pay")))

	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, rec.all(), []wantEvent{
		{server, serverAt, "GET /items", "GET /items"},
		{tagged, taggedAt, "checkout", "work"},
		{taggedServer, taggedServerAt, "pay", "POST /pay"},
	})
	if p.Emitted() != 3 || p.Dropped() != 0 {
		t.Errorf("Emitted %d, Dropped %d; want 3, 0", p.Emitted(), p.Dropped())
	}
}

// TestUnsampledSpans checks that a span that is recording but not sampled,
// which the SDK never exports, gets no start event: its instance would
// time out for want of a span.
func TestUnsampledSpans(t *testing.T) {
	tr, p, rec := setup(t, recordOnly{})
	_, s := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
	if !s.IsRecording() || s.SpanContext().IsSampled() {
		t.Fatalf("span recording %v, sampled %v; want recording and not sampled", s.IsRecording(),
			s.SpanContext().IsSampled())
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.all()); n != 0 || p.Emitted() != 0 {
		t.Errorf("%d records, Emitted %d; want none", n, p.Emitted())
	}
}

// TestWithSpanNames checks that only the spans of the given names are
// selected, of any kind, with their names as probes.
func TestWithSpanNames(t *testing.T) {
	tr, p, rec := setup(t, sdktrace.AlwaysSample(), WithSpanNames("worker_1", "worker_2"))
	var want []wantEvent
	for i, name := range []string{"worker_1", "GET /items", "worker_2", "worker_3", "worker_1"} {
		opts := []trace.SpanStartOption{trace.WithAttributes(attribute.String(attrProbe, "other"))}
		if i == 1 {
			opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
		}
		_, s := tr.Start(context.Background(), name, opts...)
		if name == "worker_1" || name == "worker_2" {
			want = append(want, wantEvent{s, s.(sdktrace.ReadOnlySpan).StartTime(), name, name})
		}
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, rec.all(), want)
}

// TestWithSelector checks that a selector of the application's chooses the
// spans and names their probes.
func TestWithSelector(t *testing.T) {
	sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
		name, ok := strings.CutPrefix(s.Name(), "probe:")
		return name, ok
	}
	tr, p, rec := setup(t, sdktrace.AlwaysSample(), WithSelector(sel))
	_, a := tr.Start(context.Background(), "probe:a")
	tr.Start(context.Background(), "b", trace.WithSpanKind(trace.SpanKindServer))
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, rec.all(), []wantEvent{{a, a.(sdktrace.ReadOnlySpan).StartTime(), "a", "probe:a"}})
}

// TestOptionErrors checks that every bad argument is refused, naming it.
func TestOptionErrors(t *testing.T) {
	lp := sdklog.NewLoggerProvider()
	for _, tc := range []struct {
		lp   log.LoggerProvider
		opt  Option
		want string
	}{
		{nil, nil, "deltaqstart: nil LoggerProvider"},
		{lp, WithQueueSize(0), "deltaqstart: WithQueueSize: must be in [1, 262144], got 0"},
		{lp, WithQueueSize(1<<18 + 1), "deltaqstart: WithQueueSize: must be in [1, 262144], got 262145"},
		{lp, WithSpanNames(), "deltaqstart: WithSpanNames: no name given"},
		{lp, WithSpanNames("a", ""), "deltaqstart: WithSpanNames: an empty name"},
		{lp, WithSelector(nil), "deltaqstart: WithSelector: nil selector"},
		{lp, WithDrainInterval(time.Millisecond - 1), "deltaqstart: WithDrainInterval: must be in [1ms, 1s], got 999.999µs"},
		{lp, WithDrainInterval(2 * time.Second), "deltaqstart: WithDrainInterval: must be in [1ms, 1s], got 2s"},
	} {
		var opts []Option
		if tc.opt != nil {
			opts = append(opts, tc.opt)
		}
		p, err := NewSpanProcessor(tc.lp, opts...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v, %v; want error %q", p, err, tc.want)
		}
	}
}

// blockingProvider hands out a blockingLogger.
type blockingProvider struct {
	embedded.LoggerProvider
	*blockingLogger
}

// blockingLogger's Emit signals entered and then waits until release is
// closed: a logger that cannot keep up.
type blockingLogger struct {
	embedded.Logger
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	emitted []log.Record
}

func newBlockingProvider() blockingProvider {
	return blockingProvider{blockingLogger: &blockingLogger{entered: make(chan struct{}, 1), release: make(chan struct{})}}
}

func (b blockingProvider) Logger(string, ...log.LoggerOption) log.Logger { return b.blockingLogger }

func (*blockingLogger) Enabled(context.Context, log.EnabledParameters) bool { return true }

func (b *blockingLogger) Emit(_ context.Context, r log.Record) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	b.mu.Lock()
	b.emitted = append(b.emitted, r)
	b.mu.Unlock()
}

func (b *blockingLogger) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.emitted)
}

// startServerSpans starts n sampled server spans through p in a goroutine
// and fails the test if that takes 10 s: OnStart must never wait for the
// logger.
func startServerSpans(t *testing.T, p *SpanProcessor, n int) {
	t.Helper()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)).Tracer("test")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			tr.Start(context.Background(), "op", trace.WithSpanKind(trace.SpanKindServer))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("starting %d spans blocked behind a blocked logger", n)
	}
}

// TestQueueFull blocks the logger on the first event, fills the queue of 4,
// and checks that the spans started beyond it are dropped and counted
// without blocking; once the logger is released, exactly the first event
// and the 4 queued are emitted.
func TestQueueFull(t *testing.T) {
	lp := newBlockingProvider()
	p, err := NewSpanProcessor(lp, WithQueueSize(4))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	<-lp.entered // the goroutine holds the first event, in Emit
	startServerSpans(t, p, 4+10)
	if p.Dropped() != 10 || p.Emitted() != 0 {
		t.Errorf("with the logger blocked: Dropped %d, Emitted %d; want 10, 0", p.Dropped(), p.Emitted())
	}
	close(lp.release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Dropped() != 10 || p.Emitted() != 5 || lp.count() != 5 {
		t.Errorf("after Shutdown: Dropped %d, Emitted %d, records %d; want 10, 5, 5", p.Dropped(), p.Emitted(),
			lp.count())
	}
}

// TestShutdownDrains queues 50 events behind a blocked logger, checks that
// Shutdown waits for them (and gives up with ctx's error when ctx ends
// first), emits all of them once released, and that spans started after
// Shutdown are ignored.
func TestShutdownDrains(t *testing.T) {
	lp := newBlockingProvider()
	p, err := NewSpanProcessor(lp, WithQueueSize(100))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	<-lp.entered
	startServerSpans(t, p, 50)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with the logger blocked: %v, want %v", err, context.DeadlineExceeded)
	}
	close(lp.release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Emitted() != 51 || lp.count() != 51 || p.Dropped() != 0 {
		t.Errorf("after Shutdown: Emitted %d, records %d, Dropped %d; want 51, 51, 0", p.Emitted(), lp.count(),
			p.Dropped())
	}
	startServerSpans(t, p, 3)
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush after Shutdown: %v", err)
	}
	if p.Emitted() != 51 || p.Dropped() != 0 || p.queued() != 0 {
		t.Errorf("spans started after Shutdown: Emitted %d, Dropped %d, queued %d; want 51, 0, 0", p.Emitted(),
			p.Dropped(), p.queued())
	}
}

// exporter is an SDK log exporter that counts the records it exported.
type exporter struct {
	mu sync.Mutex
	n  int
}

func (e *exporter) Export(_ context.Context, rs []sdklog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n += len(rs)
	return nil
}
func (*exporter) Shutdown(context.Context) error   { return nil }
func (*exporter) ForceFlush(context.Context) error { return nil }

func (e *exporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// TestFlushReachesTheExporter checks that ForceFlush and Shutdown flush the
// LoggerProvider too: with a batch processor that would export only after
// an hour, the events are exported by the time they return.
func TestFlushReachesTheExporter(t *testing.T) {
	exp := &exporter{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp,
		sdklog.WithExportInterval(time.Hour))))
	defer lp.Shutdown(context.Background())
	p, err := NewSpanProcessor(lp)
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 3)
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 3 {
		t.Errorf("after ForceFlush the exporter has %d records, want 3", exp.count())
	}
	startServerSpans(t, p, 2)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 5 {
		t.Errorf("after Shutdown the exporter has %d records, want 5", exp.count())
	}
}

// waitEmitted waits until p has emitted n events, and fails the test if that
// takes 10 s.
func waitEmitted(t *testing.T, p *SpanProcessor, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Emitted() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Emitted %d after 10 s, want %d", p.Emitted(), n)
		}
	}
}

// TestDrainWithoutFlush checks that queued events are emitted without a
// flush: every drain interval (here 5 ms), and, with a drain interval of an
// hour, as soon as the queue is half full (4 of 8) but not before.
func TestDrainWithoutFlush(t *testing.T) {
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	p, err := NewSpanProcessor(lp, WithDrainInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	waitEmitted(t, p, 1)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	c := defaultConfig()
	c.queueSize, c.interval = 8, time.Hour
	p = newSpanProcessor(lp, c)
	go p.run()
	defer p.Shutdown(context.Background())
	startServerSpans(t, p, 3)
	time.Sleep(50 * time.Millisecond)
	if p.Emitted() != 0 {
		t.Fatalf("3 events of 8 queued, no tick: Emitted %d, want 0", p.Emitted())
	}
	startServerSpans(t, p, 1)
	waitEmitted(t, p, 4)
	if n := len(rec.all()); n != 5 {
		t.Errorf("%d records, want 5", n)
	}
}

// quarterSampler keeps every span and records in its tracestate the
// threshold of one in four (ot=th:c), as a consistent probability sampler
// does for the spans it keeps.
type quarterSampler struct{}

func (quarterSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	ts, err := trace.SpanContextFromContext(p.ParentContext).TraceState().Insert("ot", "th:c")
	if err != nil {
		panic(err)
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts}
}
func (quarterSampler) Description() string { return "quarterSampler" }

// TestStartEventCarriesTheSamplingThreshold: the start event of a span
// whose tracestate has an OpenTelemetry entry carries it (deltaq.tracestate),
// so that the collector counts the span's timeout with its adjusted count;
// a span without one gets no such attribute.
func TestStartEventCarriesTheSamplingThreshold(t *testing.T) {
	for _, c := range []struct {
		sampler sdktrace.Sampler
		want    string
	}{{quarterSampler{}, "ot=th:c"}, {sdktrace.AlwaysSample(), ""}} {
		tr, p, rec := setup(t, c.sampler)
		_, s := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
		s.End()
		if err := p.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		recs := rec.all()
		if len(recs) != 1 {
			t.Fatalf("%s: %d records, want 1", c.sampler.Description(), len(recs))
		}
		got := ""
		recs[0].WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == attrTraceState {
				got = kv.Value.AsString()
			}
			return true
		})
		if got != c.want {
			t.Errorf("%s: deltaq.tracestate %q, want %q", c.sampler.Description(), got, c.want)
		}
	}
}
