// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// setupUndrained is setup without the draining goroutine: the test drains
// (p.drain), so that no drain falls between a span's start and its end
// unless the test puts it there. c is the configuration, opts applied to it;
// tpOpts are the TracerProvider's options.
func setupUndrained(t *testing.T, c config, tpOpts []sdktrace.TracerProviderOption, opts ...Option) (trace.Tracer,
	*SpanProcessor, *recorder) {
	t.Helper()
	for _, o := range opts {
		if err := o(&c); err != nil {
			t.Fatal(err)
		}
	}
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	p := newSpanProcessor(lp, c)
	tp := sdktrace.NewTracerProvider(append(tpOpts, sdktrace.WithSpanProcessor(p))...)
	t.Cleanup(func() {
		ctx := context.Background()
		go p.run() // for Shutdown, which waits for it
		if err := tp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := lp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return tp.Tracer("test"), p, rec
}

// checkCounts checks the processor's counters.
func checkCounts(t *testing.T, p *SpanProcessor, emitted, dropped, elided uint64) {
	t.Helper()
	if p.Emitted() != emitted || p.Dropped() != dropped || p.Elided() != elided {
		t.Errorf("Emitted %d, Dropped %d, Elided %d; want %d, %d, %d", p.Emitted(), p.Dropped(), p.Elided(), emitted,
			dropped, elided)
	}
}

// TestElision: a selected span that ends before the drain has no start
// event, and counts one elision; one that ends after the drain had its start
// event emitted by that drain, and its end changes nothing.
func TestElision(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setupUndrained(t, defaultConfig(), nil, f.opts...)
			server := trace.WithSpanKind(trace.SpanKindServer)
			_, ended := tr.Start(context.Background(), "GET /items", server)
			ended.End()
			p.drain()
			if n := len(rec.all()); n != 0 {
				t.Errorf("a span ended before the drain: %d records, want none", n)
			}
			checkCounts(t, p, 0, 0, 1)

			_, running := tr.Start(context.Background(), "GET /items", server)
			p.drain()
			running.End()
			p.drain()
			checkEvents(t, rec.all(), []wantEvent{
				{running, running.(sdktrace.ReadOnlySpan).StartTime(), "GET /items", "GET /items"},
			})
			checkCounts(t, p, 1, 0, 1)
		})
	}
}

// TestElisionInterleaved starts the spans of three probes, interleaved,
// some with a sampling threshold, and ends some of them, in another order,
// before the drain: the drain emits exactly the starts of the spans still
// running, in queuing order (within each probe for the batch form, whose
// records come in the order of the probes' first running spans — a before
// b, whose first span ended — none for the probe whose spans all ended),
// each with its own threshold.
func TestElisionInterleaved(t *testing.T) {
	names := []string{
		"b|ot=th:8", "a", "b", "c|ot=th:fff", "a", "b|ot=th:0", "c|ot=th:8", "b|ot=th:c", "a", "c", "b|ot=th:zz",
		"d", "a|ot=th:8", "d", "c|ot=th:8", "b",
	}
	// The spans that end before the drain, by index, in the order they end:
	// every span of probe d, and others in each probe, the first ones among
	// them.
	ends := []int{13, 0, 7, 4, 11, 3, 15, 9}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			sel := WithSelector(func(s sdktrace.ReadOnlySpan) (string, bool) {
				probe, _, _ := strings.Cut(s.Name(), "|")
				return probe, true
			})
			tr, p, rec := setupUndrained(t, defaultConfig(),
				[]sdktrace.TracerProviderOption{sdktrace.WithSampler(traceStateSampler{})}, append(f.opts, sel)...)
			spans := make([]trace.Span, len(names))
			for i, name := range names {
				_, spans[i] = tr.Start(context.Background(), name)
			}
			ended := map[int]bool{}
			for _, i := range ends {
				spans[i].End()
				ended[i] = true
			}
			p.drain()
			var want []wantEvent
			for i, s := range spans {
				if !ended[i] {
					probe, _, _ := strings.Cut(names[i], "|")
					want = append(want, wantEvent{s, s.(sdktrace.ReadOnlySpan).StartTime(), probe, names[i]})
				}
			}
			recs := rec.all()
			checkEvents(t, recs, want)
			checkCounts(t, p, uint64(len(want)), 0, uint64(len(ends)))
			if f.name != "batch" {
				return
			}
			if len(recs) != 3 {
				t.Fatalf("%d records, want 3: a, b, c (d's spans all ended)", len(recs))
			}
			thresholds := map[string]uint64{"b|ot=th:8": 0x80 << 48, "c|ot=th:8": 0x80 << 48, "a|ot=th:8": 0x80 << 48}
			got := decode(t, recs, time.Time{}, time.Time{})
			for i, probe := range []string{"a", "b", "c"} {
				if p := attrs(&recs[i])[attrProbe].AsString(); p != probe {
					t.Errorf("record %d: probe %s, want %s", i, p, probe)
				}
			}
			for _, d := range got {
				for i, s := range spans {
					if s.SpanContext().SpanID() == d.spanID && d.threshold != thresholds[names[i]] {
						t.Errorf("the start of %s: threshold %#x, want %#x", names[i], d.threshold, thresholds[names[i]])
					}
				}
			}
		})
	}
}

// sameSpanIDs gives every span the same span id, each in a trace of its own:
// the index finds the places of all of them for any one, and the queue's
// events tell them apart by their trace ids.
type sameSpanIDs struct {
	mu   sync.Mutex
	next byte
}

func (g *sameSpanIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.next++
	return trace.TraceID{15: g.next}, trace.SpanID{0: 1, 7: 1}
}

func (*sameSpanIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	return trace.SpanID{0: 1, 7: 1}
}

// TestDroppedIsNotElided: the end of a span whose start event was dropped
// (the queue full) is not an elision, and leaves the events queued alone,
// even when they have its span id; ending a span twice counts one elision.
func TestDroppedIsNotElided(t *testing.T) {
	for _, ids := range []struct {
		name string
		opts []sdktrace.TracerProviderOption
	}{{"random_ids", nil}, {"same_span_ids", []sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(&sameSpanIDs{})}}} {
		for _, f := range forms {
			t.Run(ids.name+"/"+f.name, func(t *testing.T) {
				c := defaultConfig()
				c.queueSize = 2
				tr, p, rec := setupUndrained(t, c, ids.opts, f.opts...)
				server := trace.WithSpanKind(trace.SpanKindServer)
				_, a := tr.Start(context.Background(), "a", server)
				_, b := tr.Start(context.Background(), "b", server)
				_, dropped := tr.Start(context.Background(), "c", server)
				checkCounts(t, p, 0, 1, 0)
				dropped.End()
				checkCounts(t, p, 0, 1, 0)
				b.End()
				p.OnEnd(b.(sdktrace.ReadOnlySpan)) // as a second end would
				checkCounts(t, p, 0, 1, 1)
				p.drain()
				checkEvents(t, rec.all(), []wantEvent{{a, a.(sdktrace.ReadOnlySpan).StartTime(), "a", "a"}})
				checkCounts(t, p, 1, 1, 1)
			})
		}
	}
}

// keyedIDs gives every span the same trace and span ids, as an id generator
// deriving them from a request's key does for the spans of one request.
type keyedIDs struct{}

func (keyedIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	return trace.TraceID{15: 7}, trace.SpanID{7: 9}
}
func (keyedIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return trace.SpanID{7: 9} }

// TestElisionSameIDs: spans that share their trace and span ids each have a
// start event of their own, and each one's end elides one of them: of three
// such spans, two ended before the drain, one start is emitted. The end of
// the second stopped at the first's event, already elided, and the second's
// start was emitted although its span had ended. Ending a span twice still
// elides one start.
func TestElisionSameIDs(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setupUndrained(t, defaultConfig(),
				[]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(keyedIDs{})}, f.opts...)
			server := trace.WithSpanKind(trace.SpanKindServer)
			_, a := tr.Start(context.Background(), "GET /items", server)
			_, b := tr.Start(context.Background(), "GET /items", server)
			_, running := tr.Start(context.Background(), "GET /items", server)
			a.End()
			checkCounts(t, p, 0, 0, 1)
			b.End()
			checkCounts(t, p, 0, 0, 2)
			p.drain()
			checkEvents(t, rec.all(), []wantEvent{
				{running, running.(sdktrace.ReadOnlySpan).StartTime(), "GET /items", "GET /items"},
			})
			checkCounts(t, p, 1, 0, 2)

			_, c := tr.Start(context.Background(), "GET /items", server)
			c.End()
			p.OnEnd(c.(sdktrace.ReadOnlySpan)) // as a second end would
			p.drain()
			checkCounts(t, p, 1, 0, 3)

			// Ended in the other order than they started: the end of the
			// second elides its own start, not the first's, whose span
			// still runs (its start is emitted at the drain).
			t0 := time.Now()
			_, d := tr.Start(context.Background(), "GET /items", server, trace.WithTimestamp(t0))
			_, e := tr.Start(context.Background(), "GET /items", server, trace.WithTimestamp(t0.Add(time.Millisecond)))
			e.End()
			p.drain()
			checkEvents(t, rec.all()[1:], []wantEvent{{d, t0, "GET /items", "GET /items"}})
			checkCounts(t, p, 2, 0, 4)
			d.End()
		})
	}
}

// TestElisionAcrossDrains starts two spans and ends one, 50 times, with a
// drain after each, on a queue of 4 (an index of 8 slots): each drain
// empties the index, which would otherwise fill after a few rounds and stop
// eliding.
func TestElisionAcrossDrains(t *testing.T) {
	c := defaultConfig()
	c.queueSize = 4
	tr, p, rec := setupUndrained(t, c, nil)
	var want []wantEvent
	for range 50 {
		_, ended := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
		_, running := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
		ended.End()
		p.drain()
		want = append(want, wantEvent{running, running.(sdktrace.ReadOnlySpan).StartTime(), "GET /items", "GET /items"})
	}
	checkEvents(t, rec.all(), want)
	checkCounts(t, p, 50, 0, 50)
}

// TestElisionConcurrent starts and ends spans from several goroutines while
// the draining goroutine drains every millisecond, every other span left
// running: under the race detector, OnEnd's lookups without the lock race
// with OnStart's insertions and the drains' resets. Every span left running
// has its start event emitted, exactly once; no start event is emitted
// twice; each selected span is emitted, or elided (only one that ended). With a
// small queue, some are dropped too, and the three counts still add up to
// the spans selected.
func TestElisionConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 4, 2000
	const big = 1 << 14 // more places than spans
	for _, queue := range []int{big, 16} {
		t.Run(fmt.Sprintf("queue_%d", queue), func(t *testing.T) {
			rec := &recorder{}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
			defer lp.Shutdown(context.Background())
			p, err := NewSpanProcessor(lp, WithQueueSize(queue), WithDrainInterval(time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
			tr := tp.Tracer("test")
			running := make([][]trace.Span, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range perGoroutine {
						_, s := tr.Start(context.Background(), fmt.Sprintf("probe %d", i%3),
							trace.WithSpanKind(trace.SpanKindServer))
						if i%2 == 0 {
							running[g] = append(running[g], s)
						} else {
							s.End()
						}
					}
				})
			}
			wg.Wait()
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Logf("Emitted %d, Dropped %d, Elided %d", p.Emitted(), p.Dropped(), p.Elided())
			seen := map[trace.SpanID]int{}
			for _, d := range decode(t, rec.all(), time.Time{}, time.Time{}) {
				seen[d.spanID]++
			}
			total := uint64(goroutines * perGoroutine)
			if p.Emitted()+p.Dropped()+p.Elided() != total || uint64(len(seen)) != p.Emitted() ||
				p.Elided() > total/2 {
				t.Errorf("Emitted %d, Dropped %d, Elided %d, distinct starts emitted %d; want Emitted + Dropped + "+
					"Elided = %d, Emitted distinct starts, at most %d elided", p.Emitted(), p.Dropped(), p.Elided(),
					len(seen), total, total/2)
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("span %s: %d start events, want 1", id, n)
				}
			}
			if queue == big {
				if p.Dropped() != 0 {
					t.Errorf("Dropped %d with a queue of %d, want 0", p.Dropped(), queue)
				}
				for _, ss := range running {
					for _, s := range ss {
						if seen[s.SpanContext().SpanID()] != 1 {
							t.Errorf("span %s, still running: no start event", s.SpanContext().SpanID())
						}
					}
				}
			}
		})
	}
}

// TestStartIndex checks the index alone: it finds every key added, in a
// half-full table, and, after a reset, none; a key added more than maxProbe
// times is found at most maxProbe times; the generation skips 0 when it
// comes round.
func TestStartIndex(t *testing.T) {
	var x startIndex
	x.init(1000)
	if len(x.slots) != 2048 {
		t.Fatalf("%d slots for a queue of 1000, want 2048", len(x.slots))
	}
	key := func(i int) uint64 { return uint64(i) * 0x2545f4914f6cdd1d } // distinct, of every tag
	places := func(k uint64) []int {
		var out []int
		for it := x.lookup(k); ; {
			pos, ok := it.next()
			if !ok {
				return out
			}
			out = append(out, pos)
		}
	}
	for i := range 1000 {
		x.add(key(i), i)
	}
	for i := range 1000 {
		found := false
		for _, pos := range places(key(i)) {
			found = found || pos == i
		}
		if !found {
			t.Fatalf("key %d not found at its place", i)
		}
	}
	x.reset()
	for i := range 1000 {
		if got := places(key(i)); len(got) != 0 {
			t.Fatalf("after reset, key %d found at %v", i, got)
		}
	}
	for i := range maxProbe + 10 {
		x.add(42, i)
	}
	if got := places(42); len(got) != maxProbe || got[maxProbe-1] != maxProbe-1 {
		t.Errorf("a key added %d times found at %v, want the first %d places", maxProbe+10, got, maxProbe)
	}
	x.gen.Store(math.MaxUint32)
	x.reset()
	if g := x.gen.Load(); g != 1 {
		t.Errorf("the generation after %d: %d, want 1", uint32(math.MaxUint32), g)
	}
}
