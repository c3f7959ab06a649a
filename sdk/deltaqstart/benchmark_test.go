// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log/noop"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkOnStart measures OnStart on the application's path, called
// directly on a started span (the SDK calls it so for every recording span):
// spans selected by DefaultSelector (a server span with three attributes at
// start) and by WithSpanNames, and spans neither selects (an internal span
// with three attributes; for WithSpanNames another name).
//
// Each selected case runs twice. "queued": no draining goroutine runs; the
// queue is emptied, untimed, whenever it is full, so every event is queued
// and the figures are OnStart's own. "emitting": the draining goroutine
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
			rw := s.(sdktrace.ReadWriteSpan)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if !bc.drained && len(p.queue) == cap(p.queue) {
					b.StopTimer()
					p.queue = p.queue[:0]
					b.StartTimer()
				}
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
// exporting one.
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
