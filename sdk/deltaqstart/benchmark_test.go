// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"testing"
	"time"

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

// BenchmarkEmit measures the draining goroutine's work per start event:
// emitting it through an SDK LoggerProvider with a batch processor, whose
// exporter only counts the records.
func BenchmarkEmit(b *testing.B) {
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(&exporter{})))
	defer lp.Shutdown(context.Background())
	p := newSpanProcessor(lp, defaultConfig())
	ev := event{traceID: trace.TraceID{1}, spanID: trace.SpanID{1}, start: time.Now(), probe: "GET /items",
		name: "GET /items"}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p.emit(&ev)
	}
}
