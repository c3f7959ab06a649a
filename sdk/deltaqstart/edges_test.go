// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"math"
	"testing"
	"time"

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
