// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func testOptions() Options {
	o := DefaultOptions()
	o.MaxInFlight, o.LateWindow, o.MaxEnded, o.EndedWindow = 4, 100, 10, time.Duration(1000)
	return o
}

// TestTrackerLifecycle: a tracked instance is ended by its span, or times
// out at its due time and then makes its span late; a start event after its
// span (while start events are in use, whether the span ended an instance
// or not) and a repeated one are not tracked;
// a tracker given no start events is not Active and remembers nothing.
func TestTrackerLifecycle(t *testing.T) {
	tr := NewTracker(testOptions())
	if tr.Active() {
		t.Fatal("a new tracker is not Active")
	}
	if r := tr.End(key(9), 10); r.Found || tr.RememberedLen() != 0 {
		t.Fatalf("End before start events are in use = %+v, remembered %d; want nothing", r, tr.RememberedLen())
	}
	for n := 1; n <= 2; n++ {
		if r, _ := tr.Start(inst(n, 0, 50), 0); r != Tracked {
			t.Fatalf("Start(%d) = %v, want Tracked", n, r)
		}
	}
	if r, _ := tr.Start(inst(1, 0, 50), 0); r != Duplicate {
		t.Fatalf("repeated Start = %v, want Duplicate", r)
	}
	if !tr.Active() || !tr.Remembering() {
		t.Fatal("start events in use: Active and Remembering")
	}
	if r := tr.End(key(1), 20); !r.Found || r.State != Started {
		t.Fatalf("End(1) = %+v, want found, started", r)
	}
	if fired, _ := tr.Expire(49, nil); len(fired) != 0 {
		t.Fatalf("Expire(49) = %v, want none: due at 50", fired)
	}
	if fired, _ := tr.Expire(50, nil); len(fired) != 1 || fired[0].Key != key(2) {
		t.Fatalf("Expire(50) = %v, want instance 2", fired)
	}
	if r := tr.End(key(2), 60); !r.Found || r.State != TimedOut {
		t.Fatalf("End(2) after its timeout = %+v, want found, timed out", r)
	}
	// Span 3 ends first; its start event is then not tracked.
	if r := tr.End(key(3), 70); r.Found {
		t.Fatalf("End(3) = %+v, want not found", r)
	}
	if r, _ := tr.Start(inst(3, 60, 50), 80); r != AfterEnd {
		t.Fatalf("Start after the span = %v, want AfterEnd", r)
	}
	// The start events of 1 and 2 again (a retried request): after the
	// spans that ended their instances, in time and late.
	for n := 1; n <= 2; n++ {
		if r, _ := tr.Start(inst(n, 0, 50), 80); r != AfterEnd {
			t.Fatalf("Start(%d) again after its span = %v, want AfterEnd", n, r)
		}
	}
	if started, timedOut := tr.Counts(); started != 0 || timedOut != 0 {
		t.Fatalf("Counts = %d, %d; want 0, 0", started, timedOut)
	}
	// Due more than ended_window (1000) ago: stale, not tracked; due at
	// now − ended_window exactly, tracked (a timeout at the next Expire).
	if r, _ := tr.Start(inst(4, 0, 50), 1051); r != Stale {
		t.Fatalf("Start due 1001 ago = %v, want Stale", r)
	}
	if r, _ := tr.Start(inst(5, 0, 50), 1050); r != Tracked {
		t.Fatalf("Start due 1000 ago = %v, want Tracked", r)
	}
	if started, _ := tr.Counts(); started != 1 {
		t.Fatalf("%d started, want the one tracked", started)
	}
}

// TestTrackerFutureStart: a start more than ended_window (1000) after
// now is not tracked (a clock far ahead, or a forged time, up to the
// largest int64, which would never be due), and evicts nothing from a full
// table; one ended_window ahead exactly is tracked.
func TestTrackerFutureStart(t *testing.T) {
	tr := NewTracker(testOptions())
	for n := 1; n <= 4; n++ { // max_in_flight 4: full
		if r, _ := tr.Start(inst(n, 5000, 50), 5000); r != Tracked {
			t.Fatalf("Start(%d) = %v, want Tracked", n, r)
		}
	}
	for _, start := range []int64{6001, 1 << 62, math.MaxInt64 - 50} {
		r, ev := tr.Start(inst(10, start, 50), 5000)
		if r != Future || ev.Evicted {
			t.Fatalf("Start at %d, now 5000 = %v, evicted %v; want Future, nothing evicted", start, r, ev.Evicted)
		}
	}
	if started, _ := tr.Counts(); started != 4 {
		t.Fatalf("%d started, want the 4 tracked before", started)
	}
	// At the largest now the bound saturates rather than wraps.
	if r, _ := tr.Start(inst(11, math.MaxInt64-50, 50), math.MaxInt64-60); r != Tracked {
		t.Fatalf("Start 10 after now near the largest time = %v, want Tracked", r)
	}
	tr2 := NewTracker(testOptions())
	if r, _ := tr2.Start(inst(1, 6000, 50), 5000); r != Tracked {
		t.Fatalf("Start ended_window ahead exactly = %v, want Tracked", r)
	}
}

// TestTrackerForgottenTimeoutRemembered: with a late window (100) shorter
// than ended_window (1000), an instance forgotten at the end of its late
// window is remembered as ended, so that its start event delivered again
// before it is stale is not tracked (it timed out once already); with a
// late window at least ended_window such a start event is stale, and
// nothing is remembered.
func TestTrackerForgottenTimeoutRemembered(t *testing.T) {
	for _, late := range []time.Duration{100, 1000} {
		o := testOptions()
		o.LateWindow = late
		tr := NewTracker(o)
		tr.Start(inst(1, 0, 50), 0)
		if fired, _ := tr.Expire(50, nil); len(fired) != 1 {
			t.Fatalf("late window %d: Expire(50) = %v, want instance 1", late, fired)
		}
		if _, cut := tr.Expire(50+int64(late), nil); cut != 0 || tr.Len() != 0 {
			t.Fatalf("late window %d: %d tracked, %d cut after the late window; want 0, 0", late, tr.Len(), cut)
		}
		want, remembered := Stale, 0
		if late < o.EndedWindow {
			want, remembered = AfterEnd, 1
		}
		if n := tr.RememberedLen(); n != remembered {
			t.Fatalf("late window %d: %d remembered, want %d", late, n, remembered)
		}
		if r, _ := tr.Start(inst(1, 0, 50), 50+int64(late)+10); r != want {
			t.Fatalf("late window %d: the start event again = %v, want %v", late, r, want)
		}
		// Its span, after the late window: late while it is remembered
		// (it was counted a second time), an ordinary span when not.
		if r := tr.End(key(1), 50+int64(late)+20); r.Found != (remembered == 1) || r.Found && (r.State != TimedOut || r.Probe != 1) {
			t.Fatalf("late window %d: its span after the late window = %+v, want late (probe 1) only if remembered", late, r)
		}
	}
}

// TestTrackerEvictedTimeoutIsLate: a timed-out instance that max_in_flight
// evicts is remembered as timed out, so that its span is late and its
// start event delivered again is after its end; its span was counted as a
// new outcome, a second one, and its start event tracked again, to time
// out a second time.
func TestTrackerEvictedTimeoutIsLate(t *testing.T) {
	tr := NewTracker(testOptions()) // max_in_flight 4
	for n := 1; n <= 4; n++ {
		tr.Start(inst(n, 0, 50), 0)
	}
	if fired, _ := tr.Expire(50, nil); len(fired) != 4 {
		t.Fatalf("Expire(50) fired %d, want 4", len(fired))
	}
	r, ev := tr.Start(inst(5, 60, 50), 60)
	if r != Tracked || !ev.Evicted || ev.State != TimedOut || ev.Instance.Key != key(1) || ev.Cut != 0 {
		t.Fatalf("Start(5) = %v, %+v; want Tracked, timed-out instance 1 evicted, nothing cut", r, ev)
	}
	if e := tr.End(key(1), 70); !e.Found || e.State != TimedOut || e.Probe != 1 {
		t.Fatalf("End(1) = %+v, want its timed-out instance of probe 1: late", e)
	}
	if r, _ := tr.Start(inst(1, 0, 50), 80); r != AfterEnd {
		t.Fatalf("Start(1) again = %v, want AfterEnd", r)
	}
	// A span that ends no instance, evicted or tracked, is not late.
	if e := tr.End(key(9), 80); e.Found {
		t.Fatalf("End(9) = %+v, want nothing found", e)
	}
}

// TestTrackerMoveTo: a reload hands the instances (with their states) and
// the remembered spans to the new tracker; keep drops and renumbers.
func TestTrackerMoveTo(t *testing.T) {
	old := NewTracker(testOptions())
	for n := 1; n <= 3; n++ {
		old.Start(inst(n, 0, 50), 0)
	}
	old.Expire(50, nil) // all three time out
	old.Start(inst(4, 60, 50), 60)
	old.End(key(5), 60) // remembered
	nu := NewTracker(testOptions())
	m := old.MoveTo(nu, func(in *Instance) bool {
		in.Probe += 10
		return in.Key != key(1)
	}, 70)
	if m != (Moved{Instances: 3, Dropped: 1, Remembered: 1}) || nu.Len() != 3 || old.Len() != 0 {
		t.Fatalf("moved %+v, new holds %d, old %d; want 3 moved, 1 dropped, 1 remembered, none cut; 3, 0", m, nu.Len(), old.Len())
	}
	if r := nu.End(key(2), 70); !r.Found || r.State != TimedOut || r.Probe < 10 {
		t.Fatalf("End(2) = %+v, want the timed-out instance, renumbered", r)
	}
	if r, _ := nu.Start(inst(5, 50, 50), 70); r != AfterEnd {
		t.Fatalf("Start(5) = %v, want AfterEnd: the remembered span moved too", r)
	}
	if !nu.Remembering() {
		t.Fatal("start events were in use: the new tracker remembers spans too")
	}

	// A timed-out instance remembered (evicted) goes over renumbered, or,
	// when keep refuses its probe, as an ended span alone; in both paths
	// of the remembered spans (the set itself, and one key after the
	// other into another max_ended).
	for _, maxEnded := range []int{10, 20} {
		old := NewTracker(testOptions())
		for n := 1; n <= 4; n++ {
			old.Start(inst(n, 0, 50), 0) // probes 1, 2, 0, 1
		}
		old.Expire(50, nil)
		old.Start(inst(5, 60, 50), 60) // evicts 1 (probe 1)
		old.Start(inst(6, 60, 50), 60) // evicts 2 (probe 2)
		o := testOptions()
		o.MaxEnded = maxEnded
		nu := NewTracker(o)
		old.MoveTo(nu, func(in *Instance) bool {
			in.Probe += 10
			return in.Probe != 12
		}, 70)
		if e := nu.End(key(1), 70); !e.Found || e.State != TimedOut || e.Probe != 11 {
			t.Fatalf("max_ended %d: End(1) = %+v, want late, probe 11", maxEnded, e)
		}
		if e := nu.End(key(2), 70); e.Found {
			t.Fatalf("max_ended %d: End(2) = %+v, want not late: its probe was dropped", maxEnded, e)
		}
		if r, _ := nu.Start(inst(2, 0, 50), 70); r != AfterEnd {
			t.Fatalf("max_ended %d: Start(2) = %v, want AfterEnd: remembered as ended still", maxEnded, r)
		}
	}

	// With another max_ended or ended_window, the remembered spans move
	// too, the newest that the new bound holds.
	for _, change := range []func(*Options){
		func(o *Options) { o.MaxEnded = 4 },
		func(o *Options) { o.EndedWindow = 2000 },
	} {
		old := NewTracker(testOptions())
		old.Remember()
		for n := 1; n <= 6; n++ {
			old.End(key(n), int64(n))
		}
		o := testOptions()
		change(&o)
		nu := NewTracker(o)
		m := old.MoveTo(nu, func(*Instance) bool { return true }, 10)
		if old.RememberedLen() != 0 {
			t.Fatalf("%+v: the old tracker remembers %d spans, want none", o, old.RememberedLen())
		}
		first, want := 1, Moved{Remembered: 6}
		if o.MaxEnded == 4 {
			// 3 and 4 in the older generation, 5 and 6 in the newer; 1
			// and 2 cut inside their window.
			first, want = 3, Moved{Remembered: 4, Cut: 2}
		}
		if m != want {
			t.Fatalf("%+v: moved %+v, want %+v", o, m, want)
		}
		for n := 1; n <= 6; n++ {
			if r, _ := nu.Start(inst(n, 0, 50), 10); (r == AfterEnd) != (n >= first) {
				t.Fatalf("%+v: Start(%d) = %v, want AfterEnd for the spans from %d on", o, n, r, first)
			}
		}
	}
}

// TestTrackerMoveToSmallerMaxInFlight: a reload to a smaller
// max_in_flight evicts the oldest instances as tracking does, counted by
// state; a timed-out one is remembered as timed out, so that its span,
// coming after the reload, is late rather than a second outcome of an
// instance whose timeout was counted. It was forgotten: its span ended no
// instance and counted by its own duration.
func TestTrackerMoveToSmallerMaxInFlight(t *testing.T) {
	old := NewTracker(testOptions())
	old.Remember()
	old.Start(inst(1, 0, 50), 0)
	old.Expire(50, nil) // 1 times out
	old.Start(inst(2, 60, 50), 60)
	old.Start(inst(3, 60, 50), 60)
	o := testOptions()
	o.MaxInFlight = 1
	nu := NewTracker(o)
	m := old.MoveTo(nu, func(*Instance) bool { return true }, 70)
	if want := (Moved{Instances: 1, Evicted: [2]int{Started: 1, TimedOut: 1}, Remembered: 1}); m != want {
		t.Fatalf("moved %+v, want %+v", m, want)
	}
	if e := nu.End(key(1), 80); !e.Found || e.State != TimedOut || e.Probe != 1 {
		t.Fatalf("End(1) = %+v, want late, probe 1", e)
	}
	if e := nu.End(key(2), 80); e.Found {
		t.Fatalf("End(2) = %+v, want nothing found: evicted before its timeout", e)
	}
	if e := nu.End(key(3), 80); !e.Found || e.State != Started {
		t.Fatalf("End(3) = %+v, want the instance kept", e)
	}
}

// TestTrackerConcurrent: spans, start events and the timer from several
// goroutines leave the tracker consistent (run with -race).
func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(DefaultOptions())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 500 {
				k := g*1000 + n
				switch g % 2 {
				case 0:
					tr.Start(inst(k, int64(n), 10), int64(n))
					tr.End(key(k), int64(n+5))
				default:
					tr.Expire(int64(n), nil)
				}
			}
		}()
	}
	wg.Wait()
	if started, timedOut := tr.Counts(); started+timedOut != tr.Len() {
		t.Fatalf("Counts %d + %d, Len %d: inconsistent", started, timedOut, tr.Len())
	}
}

// TestOptionsCheck: the defaults pass, and each bound is enforced and named.
func TestOptionsCheck(t *testing.T) {
	o := DefaultOptions()
	if errs := o.Check(); len(errs) != 0 {
		t.Fatalf("defaults refused: %v", errs)
	}
	bad := Options{MaxInFlight: 0, TimerResolution: 0, TimeoutGrace: -1, LateWindow: 0, MaxEnded: 1, EndedWindow: 0}
	if errs := bad.Check(); len(errs) != 6 {
		t.Fatalf("Check of six bad options = %v, want six errors", errs)
	}
}

// BenchmarkTrackerStartEnd: the real-time timeout path's share of one
// instance, as the connector meets it: batches of 1000 start events, then
// their 1000 spans, the tracker held once a batch; the table holds one
// batch at a time.
func BenchmarkTrackerStartEnd(b *testing.B) {
	tr := NewTracker(DefaultOptions())
	insts := batchInstances(int64(time.Second))
	b.ReportAllocs()
	b.ResetTimer()
	tr.Remember()
	for n := 0; n < b.N; n += startBatch {
		nextRound(insts, n)
		l := tr.Lock()
		for i := range insts {
			l.Start(&insts[i], 1)
		}
		l.Unlock()
		l = tr.Lock()
		for i := range insts {
			l.End(insts[i].Key, 1)
		}
		l.Unlock()
	}
}

// BenchmarkTrackerStartEndLinked is BenchmarkTrackerStartEnd with a timer
// call between the batch of start events and the batch of spans, when the
// first instance of the batch, which ended at once, was due: the others
// join the wheel and the insertion order before their spans end them, as
// when probes of short and long dMax share a tracker.
func BenchmarkTrackerStartEndLinked(b *testing.B) {
	tr := NewTracker(DefaultOptions())
	insts := batchInstances(int64(time.Hour))
	b.ReportAllocs()
	b.ResetTimer()
	tr.Remember()
	now := int64(time.Second)
	for n := 0; n < b.N; n += startBatch {
		nextRound(insts, n)
		now += int64(time.Millisecond)
		insts[0].Start, insts[0].Deadline = now, now
		l := tr.Lock()
		for i := range insts {
			l.Start(&insts[i], now)
		}
		l.End(insts[0].Key, now)
		l.Unlock()
		tr.Expire(now, nil)
		l = tr.Lock()
		for i := 1; i < startBatch; i++ {
			l.End(insts[i].Key, now)
		}
		l.Unlock()
	}
}

// startBatch is the number of start events, and then of spans, a lock of
// BenchmarkTrackerStartEnd and BenchmarkTrackerStartEndLinked takes.
const startBatch = 1000

// nextRound gives the instances of a batch the keys of round n, none of
// an earlier round's: the spans that ended those are remembered, and
// their keys would start nothing.
func nextRound(insts []Instance, n int) {
	for i := range insts {
		binary.LittleEndian.PutUint64(insts[i].Key.TraceID[8:], uint64(n))
	}
}

// batchInstances returns a batch of instances of distinct keys, started at
// 0 with the given dMax.
func batchInstances(dmax int64) []Instance {
	insts := make([]Instance, startBatch)
	for i := range insts {
		insts[i] = *inst(i, 0, dmax)
		insts[i].Key.SpanID[1] = byte(i >> 8)
		insts[i].Key.SpanID[2] = byte(i)
	}
	return insts
}

// BenchmarkTrackerSteady is the tracker under steady traffic, per start
// and end: n instances in flight, keys random (ids are), due times spread
// over 10–20 s (probes of many dMax), each span ending a random instance
// in flight (spans do not end in the order they started), one batch of 100
// start events and one of 100 spans each 100 µs, and the timer every 10
// ms. What a binary heap of due times pays in sift-downs on the end of an
// instance, with n in flight, shows here and not in
// BenchmarkTrackerStartEnd.
//
// warm=true warms each batch of spans' keys first (Locked.Warm), 32 at a
// time, as the span path does, and reads ahead the free slots each 32
// starts will take (Locked.WarmFree), as a batch of start events does.
func BenchmarkTrackerSteady(b *testing.B) {
	for _, c := range []struct {
		n    int
		warm bool
	}{{1_000, false}, {1_000, true}, {10_000, false}, {10_000, true}, {100_000, false}, {100_000, true}} {
		n := c.n
		b.Run(fmt.Sprintf("inflight=%d/warm=%v", n, c.warm), func(b *testing.B) {
			o := DefaultOptions()
			o.MaxInFlight = 2 * n
			tr := NewTracker(o)
			tr.Remember()
			rng := rand.New(rand.NewPCG(3, 4))
			newInst := func(now int64) Instance {
				var in Instance
				binary.LittleEndian.PutUint64(in.Key.TraceID[:8], rng.Uint64())
				binary.LittleEndian.PutUint64(in.Key.TraceID[8:], rng.Uint64())
				binary.LittleEndian.PutUint64(in.Key.SpanID[:], rng.Uint64())
				in.Start, in.Deadline = now, now+int64(10*time.Second)+rng.Int64N(int64(10*time.Second))
				return in
			}
			now := int64(time.Hour)
			ring := make([]Instance, n)
			for i := range ring {
				ring[i] = newInst(now)
				tr.Start(&ring[i], now)
			}
			const batch = 100
			var pick [batch]int
			mark := make([]int, n) // the batch that picked each instance: none twice
			var fired []Instance
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				now += int64(100 * time.Microsecond)
				for i := range pick {
					j := rng.IntN(n)
					for mark[j] == done+1 {
						j = rng.IntN(n)
					}
					pick[i], mark[j] = j, done+1
				}
				l := tr.Lock()
				warm(l, c.warm, pick[:], ring)
				for _, j := range pick {
					l.End(ring[j].Key, now)
				}
				l.Unlock()
				for _, j := range pick {
					ring[j] = newInst(now)
				}
				l = tr.Lock()
				for i, j := range pick {
					if c.warm && i%32 == 0 {
						l.WarmFree(32) // as a batch of start events does
					}
					l.Start(&ring[j], now)
				}
				l.Unlock()
				if done%(100*batch) == 0 {
					fired, _ = tr.Expire(now, fired[:0])
				}
			}
		})
	}
}

// warm warms the keys of ring[pick], 32 at a time, when on.
func warm(l Locked, on bool, pick []int, ring []Instance) {
	if !on {
		return
	}
	var keys [32]Key
	for from := 0; from < len(pick); from += len(keys) {
		n := min(len(keys), len(pick)-from)
		for i := range n {
			keys[i] = ring[pick[from+i]].Key
		}
		l.Warm(keys[:n])
	}
}

// TestWarmChangesNothing: warming keys, tracked or not, before a table
// grows and after, and the free slots starts will take, changes no answer
// of the ends and starts that follow.
func TestWarmChangesNothing(t *testing.T) {
	o := DefaultOptions()
	tr := NewTracker(o)
	tr.Remember()
	now := int64(time.Hour)
	keys := make([]Key, 400)
	for i := range keys {
		binary.LittleEndian.PutUint64(keys[i].TraceID[8:], uint64(i+1)*0x9e3779b97f4a7c15)
		binary.LittleEndian.PutUint64(keys[i].SpanID[:], uint64(i+1))
	}
	l := tr.Lock()
	l.Warm(keys[:300]) // none tracked, the index at its smallest
	l.Warm(nil)
	for i := range keys[:200] {
		in := Instance{Key: keys[i], Probe: i % 3, Start: now, Deadline: now + int64(time.Second)}
		if r, _ := l.Start(&in, now); r != Tracked {
			t.Fatalf("start %d: %v, want Tracked", i, r)
		}
	}
	l.Warm(keys[:300]) // 200 tracked, 100 not
	for i := range keys[:300] {
		r := l.End(keys[i], now)
		if want := i < 200; r.Found != want || want && (r.State != Started || r.Probe != i%3) {
			t.Fatalf("end %d: found %v (state %v, probe %d), want %v (started, probe %d)", i, r.Found, r.State, r.Probe, want, i%3)
		}
	}
	// The 200 slots freed are taken again, by the instances of 100 other
	// spans (those ended are remembered: their starts come after them),
	// read ahead more or fewer than the free list holds, and by nothing
	// (WarmFree reads, never takes).
	l.WarmFree(0)
	l.WarmFree(500)
	for i := 300; i < len(keys); i++ {
		l.WarmFree(7)
		in := Instance{Key: keys[i], Probe: i % 3, Start: now, Deadline: now + int64(time.Second)}
		if r, _ := l.Start(&in, now); r != Tracked {
			t.Fatalf("start %d: %v, want Tracked", i, r)
		}
	}
	for i := range keys {
		r := l.End(keys[i], now)
		if want := i >= 300; r.Found != want || want && (r.State != Started || r.Probe != i%3) {
			t.Fatalf("end %d again: found %v (state %v, probe %d), want %v (started, probe %d)", i, r.Found, r.State, r.Probe, want, i%3)
		}
	}
	l.Unlock()
	if n := tr.Len(); n != 0 {
		t.Errorf("%d instances left, want 0", n)
	}
}
