// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log/noop"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// idSpan is a started span under a span id the benchmark chooses: one span,
// in cache as an application's span is at its start, announced under a
// distinct span id at each OnStart, as distinct spans are.
type idSpan struct {
	sdktrace.ReadWriteSpan
	sc trace.SpanContext
}

func (s *idSpan) SpanContext() trace.SpanContext { return s.sc }

// spanContexts returns n sampled span contexts of distinct random span ids
// in the trace of sc.
func spanContexts(sc trace.SpanContext, n int) []trace.SpanContext {
	out := make([]trace.SpanContext, n)
	for i := range out {
		var id trace.SpanID
		binary.LittleEndian.PutUint64(id[:], rand.Uint64())
		out[i] = sc.WithSpanID(id)
	}
	return out
}

// BenchmarkOnStart measures OnStart on the application's path, called
// directly on a started span (the SDK calls it so for every recording span):
// spans selected by DefaultSelector (a server span with three attributes at
// start) and by WithSpanNames, and spans neither selects (an internal span
// with three attributes; for WithSpanNames another name). The span takes a
// distinct span id at each call (idSpan), from a set as large as the queue.
//
// Each selected case runs twice. "queued": no draining goroutine runs; the
// queue is drained, untimed, whenever it is full, so every event is queued
// and the figures are OnStart's own, with the index of queued events up to
// half full. "emitting": the draining goroutine
// runs, emitting to a no-op logger on the other core; it cannot keep up with
// a loop of OnStart calls, so some events are dropped (dropped/op), and the
// goroutine's own allocations (one context per event) count in allocs/op.
func BenchmarkOnStart(b *testing.B) {
	attrs := trace.WithAttributes(attribute.String("http.route", "/items"), attribute.Int("n", 1),
		attribute.Bool("b", true))
	server := trace.WithSpanKind(trace.SpanKindServer)
	names := WithSpanNames("GET /items", "worker_1")
	for _, bc := range []struct {
		name    string
		opt     Option
		span    string
		kind    trace.SpanStartOption
		drained bool // by the draining goroutine, else untimed
	}{
		{"default/selected/queued", nil, "GET /items", server, false},
		{"default/selected/emitting", nil, "GET /items", server, true},
		{"default/unselected", nil, "db.query", trace.WithSpanKind(trace.SpanKindInternal), true},
		{"names/selected/queued", names, "GET /items", server, false},
		{"names/selected/emitting", names, "GET /items", server, true},
		{"names/unselected", names, "db.query", server, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := defaultConfig()
			if bc.opt != nil {
				if err := bc.opt(&c); err != nil {
					b.Fatal(err)
				}
			}
			p := newSpanProcessor(noop.NewLoggerProvider(), c)
			if bc.drained {
				go p.run()
				defer p.Shutdown(context.Background())
			}
			tp := sdktrace.NewTracerProvider()
			defer tp.Shutdown(context.Background())
			_, s := tp.Tracer("bench").Start(context.Background(), bc.span, bc.kind, attrs)
			rw := &idSpan{ReadWriteSpan: s.(sdktrace.ReadWriteSpan)}
			ids := spanContexts(s.SpanContext(), c.queueSize)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if !bc.drained && len(p.queue) == cap(p.queue) {
					b.StopTimer()
					p.drain()
					b.StartTimer()
				}
				rw.sc = ids[i%len(ids)]
				p.OnStart(ctx, rw)
			}
			b.StopTimer()
			b.ReportMetric(float64(p.Dropped())/float64(b.N), "dropped/op")
		})
	}
}

// nopProcessor stands for the application's exporting span processor: the
// SDK snapshots a span at its end only when some processor is registered.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }

// BenchmarkSpanStartEnd measures what the SpanProcessor adds to the whole
// life of a span in the SDK (Start, then End), against the same provider
// without it; both have a span processor that does nothing in place of the
// exporting one. A selected span ends at once, so its start event is
// elided: the draining goroutine has nothing to emit.
func BenchmarkSpanStartEnd(b *testing.B) {
	for _, bc := range []struct {
		name string
		with bool
		kind trace.SpanKind
	}{
		{"without", false, trace.SpanKindServer},
		{"with/selected", true, trace.SpanKindServer},
		{"with/unselected", true, trace.SpanKindInternal},
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(nopProcessor{})}
			if bc.with {
				p, err := NewSpanProcessor(noop.NewLoggerProvider())
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, sdktrace.WithSpanProcessor(p))
			}
			tp := sdktrace.NewTracerProvider(opts...)
			defer tp.Shutdown(context.Background())
			tr := tp.Tracer("bench")
			ctx := context.Background()
			kind := trace.WithSpanKind(bc.kind)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_, s := tr.Start(ctx, "GET /items", kind)
				s.End()
			}
		})
	}
}

// BenchmarkOnStartDrain measures the whole path of a start event but the
// export: OnStart on the application's path, then the draining goroutine's
// work, the queue drained every 1024 events (as at a drain interval with
// 100,000 selected spans a second), into an SDK LoggerProvider with a batch
// processor whose exporter only counts the starts; per event. The batch
// form with the events of one probe, of 8 probes in turn, and of one probe
// with a sampling threshold on every span; then a record per span
// (WithRecordPerSpan).
func BenchmarkOnStartDrain(b *testing.B) {
	for _, bc := range []struct {
		name    string
		probes  int
		sampled bool // every span with ot=th:c
		perSpan bool
	}{
		{"batch/1_probe", 1, false, false},
		{"batch/8_probes", 8, false, false},
		{"batch/thresholds", 1, true, false},
		{"record_per_span", 1, false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			exp := &exporter{}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
			defer lp.Shutdown(context.Background())
			c := defaultConfig()
			c.perSpan = bc.perSpan
			p := newSpanProcessor(lp, c) // no draining goroutine: the loop drains
			var sampler sdktrace.Sampler = sdktrace.AlwaysSample()
			if bc.sampled {
				sampler = quarterSampler{}
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler))
			defer tp.Shutdown(context.Background())
			var spans []sdktrace.ReadWriteSpan
			for i := range bc.probes {
				_, s := tp.Tracer("bench").Start(context.Background(), fmt.Sprintf("GET /items/%d", i),
					trace.WithSpanKind(trace.SpanKindServer))
				spans = append(spans, s.(sdktrace.ReadWriteSpan))
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p.OnStart(ctx, spans[i%len(spans)])
				if len(p.queue) == 1024 {
					p.drain()
				}
			}
			p.drain()
			b.StopTimer()
			if p.Dropped() != 0 || p.Emitted() != uint64(b.N) {
				b.Fatalf("Dropped %d, Emitted %d; want 0, %d", p.Dropped(), p.Emitted(), b.N)
			}
		})
	}
}

// capture is a span processor that keeps what the SDK hands OnEnd: a
// snapshot of each span at its end.
type capture struct {
	nopProcessor
	ended []sdktrace.ReadOnlySpan
}

func (c *capture) OnEnd(s sdktrace.ReadOnlySpan) { c.ended = append(c.ended, s) }

// benchSpans starts and ends n distinct sampled spans of kind, and returns
// each as OnStart gets it (the span) and as OnEnd gets it (its snapshot at
// its end).
func benchSpans(b *testing.B, n int, kind trace.SpanKind) ([]sdktrace.ReadWriteSpan, []sdktrace.ReadOnlySpan) {
	b.Helper()
	c := &capture{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("bench")
	started := make([]sdktrace.ReadWriteSpan, n)
	for i := range started {
		_, s := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(kind))
		started[i] = s.(sdktrace.ReadWriteSpan)
	}
	for _, s := range started {
		s.End()
	}
	if len(c.ended) != n {
		b.Fatalf("%d snapshots, want %d", len(c.ended), n)
	}
	return started, c.ended
}

// benchBlock is the number of spans the OnEnd benchmarks start between two
// drains: half of DefaultQueueSize, the queue length at which OnStart wakes
// the draining goroutine.
const benchBlock = DefaultQueueSize / 2

// BenchmarkOnEnd measures OnEnd on the application's path, called with the
// snapshot the SDK hands it (one of 64 in turn), for a span that was not
// selected (an internal span under DefaultSelector): the SDK calls OnEnd
// for every recording span. "queue_empty": nothing is queued;
// "queue_half_full": the starts of benchBlock − 1 other spans are queued,
// as just before the draining goroutine is woken. No draining goroutine
// runs. "reference/span_context" is not OnEnd but what reading the span's
// context costs any OnEnd: the SDK's snapshot has methods on its value, so
// each call copies the whole snapshot.
func BenchmarkOnEnd(b *testing.B) {
	for _, bc := range []struct {
		name      string
		queued    int
		reference bool
	}{{"unselected/queue_empty", 0, false}, {"unselected/queue_half_full", benchBlock - 1, false},
		{"reference/span_context", 0, true}} {
		b.Run(bc.name, func(b *testing.B) {
			p := newSpanProcessor(noop.NewLoggerProvider(), defaultConfig())
			others, _ := benchSpans(b, bc.queued, trace.SpanKindServer)
			for _, s := range others {
				p.OnStart(context.Background(), s)
			}
			_, ended := benchSpans(b, 64, trace.SpanKindInternal)
			sampled := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if bc.reference {
					if ended[i%len(ended)].SpanContext().IsSampled() {
						sampled++
					}
					continue
				}
				p.OnEnd(ended[i%len(ended)])
			}
			b.StopTimer()
			if bc.reference && sampled != b.N {
				b.Fatalf("%d spans sampled, want %d", sampled, b.N)
			}
		})
	}
}

// BenchmarkOnStartEnd measures OnStart and OnEnd of a selected span (a
// server span under DefaultSelector), per span: benchBlock distinct spans
// start, then end, then the queue is drained, untimed ("ended_before_drain":
// each start event is still queued when its span ends), or benchBlock spans
// start, the queue is drained, untimed, then they end ("ended_after_drain":
// each start event has been emitted when its span ends). No draining
// goroutine runs; the drain emits to a no-op logger.
func BenchmarkOnStartEnd(b *testing.B) {
	for _, bc := range []struct {
		name        string
		drainBefore bool // the drain comes between the starts and the ends
	}{{"ended_before_drain", false}, {"ended_after_drain", true}} {
		b.Run(bc.name, func(b *testing.B) {
			p := newSpanProcessor(noop.NewLoggerProvider(), defaultConfig())
			started, ended := benchSpans(b, benchBlock, trace.SpanKindServer)
			ctx := context.Background()
			drain := func() {
				b.StopTimer()
				p.drain()
				b.StartTimer()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += benchBlock {
				k := min(benchBlock, b.N-done)
				for _, s := range started[:k] {
					p.OnStart(ctx, s)
				}
				if bc.drainBefore {
					drain()
				}
				for _, s := range ended[:k] {
					p.OnEnd(s)
				}
				if !bc.drainBefore {
					drain()
				}
			}
			b.StopTimer()
			if p.Dropped() != 0 {
				b.Fatalf("Dropped %d, want 0", p.Dropped())
			}
		})
	}
}
