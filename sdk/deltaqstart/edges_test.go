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
