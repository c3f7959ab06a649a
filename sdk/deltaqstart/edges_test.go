// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/embedded"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TestStartsOutsideUnixNanos: a start event carries its span's start in
// Unix nanoseconds, unsigned. A span started before 1970 had its start
// wrap around to a time in the 2500s (uint64 of a negative UnixNano),
// which the collector refuses as a start far in its future; the epoch
// itself is 0, which it reads as no timestamp, and a start after 2262 has
// no UnixNano at all. Such starts are dropped and counted; the first and
// last nanoseconds that can be sent go out as they are, in either form.
func TestStartsOutsideUnixNanos(t *testing.T) {
	unsendable := []time.Time{
		time.Unix(-1, 0),
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, math.MaxInt64).Add(time.Nanosecond),
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	sendable := []time.Time{time.Unix(0, 1), time.Unix(0, math.MaxInt64), time.Now()}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), f.opts...)
			for _, at := range unsendable {
				tr.Start(context.Background(), "op", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at))
			}
			var want []wantEvent
			for _, at := range sendable {
				_, s := tr.Start(context.Background(), "op", trace.WithSpanKind(trace.SpanKindServer),
					trace.WithTimestamp(at))
				want = append(want, wantEvent{s, at, "op", "op"})
			}
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), want)
			if p.Dropped() != uint64(len(unsendable)) || p.Emitted() != uint64(len(sendable)) {
				t.Errorf("Dropped %d, Emitted %d; want %d, %d", p.Dropped(), p.Emitted(), len(unsendable), len(sendable))
			}
		})
	}
}

// flushCounter is an SDK LoggerProvider that counts the calls of its
// ForceFlush.
type flushCounter struct {
	*sdklog.LoggerProvider
	flushes atomic.Int32
}

func (f *flushCounter) ForceFlush(ctx context.Context) error {
	f.flushes.Add(1)
	return f.LoggerProvider.ForceFlush(ctx)
}

// TestForceFlushAfterShutdown: after Shutdown, ForceFlush does nothing and
// returns nil, as the SDK's span processors do (sdktrace's batch span
// processor: "Do nothing after Shutdown"); it flushed the LoggerProvider,
// which the application may have shut down or be shutting down by then.
// A done ctx is still its error.
func TestForceFlushAfterShutdown(t *testing.T) {
	lp := &flushCounter{LoggerProvider: sdklog.NewLoggerProvider()}
	defer lp.Shutdown(context.Background())
	p, err := NewSpanProcessor(lp)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := lp.flushes.Load(); n != 1 {
		t.Fatalf("Shutdown flushed the provider %d times, want 1", n)
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush after Shutdown: %v, want nil", err)
	}
	if n := lp.flushes.Load(); n != 1 {
		t.Errorf("ForceFlush after Shutdown flushed the provider (%d flushes in all, want 1)", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.ForceFlush(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ForceFlush with a done ctx: %v, want %v", err, context.Canceled)
	}
}

// handOver is a LoggerProvider whose loggers hand each record to the SDK
// LoggerProvider inner and then wait until release is closed: a logger
// that took the record and is slow to return.
type handOver struct {
	embedded.LoggerProvider
	inner   log.LoggerProvider
	entered chan struct{}
	release chan struct{}
}

type handOverLogger struct {
	embedded.Logger
	inner log.Logger
	h     *handOver
}

func (h *handOver) Logger(name string, opts ...log.LoggerOption) log.Logger {
	return &handOverLogger{inner: h.inner.Logger(name, opts...), h: h}
}

func (l *handOverLogger) Emit(ctx context.Context, r log.Record) {
	l.inner.Emit(ctx, r)
	select {
	case l.h.entered <- struct{}{}:
	default:
	}
	<-l.h.release
}

func (l *handOverLogger) Enabled(ctx context.Context, p log.EnabledParameters) bool {
	return l.inner.Enabled(ctx, p)
}

// TestShutdownDeadlineDrops: when Shutdown's ctx ends before the queue is
// drained, Shutdown returns and the application shuts the LoggerProvider
// down; what the goroutine emits after that is lost. It was emitted all
// the same, and counted in Emitted: 51 emitted, 1 exported. What is left
// when Shutdown gives up is dropped and counted instead: Emitted is what
// was handed to the logger before, and reaches the exporter.
func TestShutdownDeadlineDrops(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			exp := &exporter{}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp,
				sdklog.WithExportInterval(time.Hour))))
			h := &handOver{inner: lp, entered: make(chan struct{}, 1), release: make(chan struct{})}
			p, err := NewSpanProcessor(h, append([]Option{WithQueueSize(100)}, f.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			startServerSpans(t, p, 1)
			<-h.entered // the first start is handed over; its Emit has not returned
			startServerSpans(t, p, 50)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Shutdown with the logger blocked: %v, want %v", err, context.DeadlineExceeded)
			}
			if err := lp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			close(h.release)
			<-p.done
			if p.Emitted() != uint64(exp.count()) || p.Emitted() != 1 || p.Dropped() != 50 {
				t.Errorf("Emitted %d, exported %d, Dropped %d; want 1, 1, 50", p.Emitted(), exp.count(), p.Dropped())
			}
		})
	}
}
