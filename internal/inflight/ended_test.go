// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

func TestEndedRemembersForWindow(t *testing.T) {
	e := NewEnded(10, 100)
	e.Add(key(1), 1000)
	e.Add(key(2), 1050)
	if !e.Contains(key(1), 1000) || !e.Contains(key(2), 1050) || e.Contains(key(3), 1050) {
		t.Fatal("Contains wrong after two adds")
	}
	// Key 1 is recognised until 1000 + 100, not at it, whether or not Expire
	// has run.
	if !e.Contains(key(1), 1099) || e.Contains(key(1), 1100) || !e.Contains(key(2), 1100) {
		t.Fatal("window not exact")
	}
	if f := e.Expire(1100); f != 0 || e.Len() != 2 {
		t.Fatalf("Expire(1100) forgot %d, Len %d; want 0, 2 (key 2 is still inside its window)", f, e.Len())
	}
	// Once the newest key is past its window, the set is empty.
	if f := e.Expire(1150); f != 2 || e.Len() != 0 {
		t.Fatalf("Expire(1150) forgot %d, Len %d; want 2, 0", f, e.Len())
	}
	if e.Contains(key(2), 1150) {
		t.Fatal("key 2 recognised after Expire")
	}
}

func TestEndedKeepsFirstTime(t *testing.T) {
	e := NewEnded(10, 100)
	e.Add(key(1), 1000)
	e.Add(key(1), 1090) // the same span again: no refresh, no second entry
	if e.Len() != 1 {
		t.Fatalf("Len = %d, want 1", e.Len())
	}
	if e.Contains(key(1), 1100) {
		t.Fatal("a repeated key extended its window")
	}
}

// TestEndedBoundCuts: with capacity 4 each generation holds 2 keys; adding to
// a full current generation drops the previous one, and the cut counts the
// dropped keys still inside their window.
func TestEndedBoundCuts(t *testing.T) {
	e := NewEnded(4, 100)
	if e.Capacity() != 4 {
		t.Fatalf("Capacity = %d, want 4", e.Capacity())
	}
	for i, at := range []int64{0, 10, 20, 30} { // keys 1–4: two full generations
		if cut := e.Add(key(i+1), at); cut != 0 {
			t.Fatalf("Add(%d) cut %d before the bound", i+1, cut)
		}
	}
	if e.Len() != 4 {
		t.Fatalf("Len = %d, want 4", e.Len())
	}
	if cut := e.Add(key(5), 40); cut != 2 {
		t.Fatalf("Add(5) cut %d; want 2 (keys 1 and 2, inside their window)", cut)
	}
	for k, want := range map[int]bool{1: false, 2: false, 3: true, 4: true, 5: true} {
		if e.Contains(key(k), 40) != want {
			t.Errorf("Contains(%d) = %v, want %v", k, !want, want)
		}
	}
	// At 125 key 3 (20) is past its window and key 4 (30) is not: dropping
	// them cuts one.
	e.Add(key(6), 120)
	if cut := e.Add(key(7), 125); cut != 1 {
		t.Fatalf("Add(7) cut %d; want 1 (key 4 only)", cut)
	}
	if e.Len() > e.Capacity() {
		t.Fatalf("Len %d above Capacity %d", e.Len(), e.Capacity())
	}
}

func TestEndedSmallestCapacity(t *testing.T) {
	e := NewEnded(1, 100) // rounded up to 2
	if e.Capacity() != 2 {
		t.Fatalf("Capacity = %d, want 2", e.Capacity())
	}
	e.Add(key(1), 0)
	e.Add(key(2), 1)
	if cut := e.Add(key(3), 2); cut != 1 || e.Contains(key(1), 2) || !e.Contains(key(2), 2) || !e.Contains(key(3), 2) {
		t.Fatalf("Add(3) cut %d; want key 1 cut, keys 2 and 3 kept", cut)
	}
}

func TestEndedTimeNeverGoesBack(t *testing.T) {
	e := NewEnded(10, 100)
	e.Add(key(1), 1000)
	e.Add(key(2), 950) // a caller with an older clock reading: taken as 1000
	if !e.Contains(key(2), 1099) {
		t.Fatal("key 2 must count from 1000")
	}
}

// TestEndedClockBack: a clock gone back by more than the window (an NTP
// step) starts a generation at its time: a span added then is remembered
// for its window from its own time, and the spans added before the step
// are dropped, and counted, once. Taken as the time before the step, every
// span added until the clock was back there was held past its window, and
// every generation dropped counted whole in cut (ended_evictions).
func TestEndedClockBack(t *testing.T) {
	e := NewEnded(4, 30) // two generations of 2
	e.Add(key(1), 1000)
	e.Add(key(2), 1000)
	cut := 0
	for i, at := range []int64{100, 101, 140, 150, 190} { // 900 back
		cut += e.Add(key(10+i), at)
	}
	if e.Contains(key(10), 135) || !e.Contains(key(12), 165) || !e.Contains(key(14), 200) {
		t.Error("a span added after the step must be remembered for its window from its own time")
	}
	if cut != 2 {
		t.Errorf("cut %d, want the 2 spans added before the step, once", cut)
	}
	if !e.Contains(key(14), 219) || e.Contains(key(14), 220) {
		t.Error("key 14 is remembered until 190 + 30")
	}
}

func TestEndedWindowSaturates(t *testing.T) {
	e := NewEnded(2, math.MaxInt64)
	e.Add(key(1), 5)
	if !e.Contains(key(1), math.MaxInt64-1) || e.Expire(math.MaxInt64-1) != 0 {
		t.Fatal("forgotten before the saturated window")
	}
	e.Add(key(2), 6)
	if cut := e.Add(key(3), 7); cut != 1 {
		t.Fatalf("cut %d with an unbounded window, want 1", cut)
	}
}

// TestEndedAgainstHistory drives the set with random operations and checks it
// against the full history of what was added:
//   - sound: a key is recognised only if it was added less than a window ago;
//   - complete: a key added less than a window ago is recognised if fewer
//     than capacity/2 other keys have been added to the set since;
//   - bounded: Len ≤ Capacity, and Len is the number of keys the generations
//     hold;
//   - Add's cut is the number of keys it stopped recognising (other than the
//     one added), plus those it dropped from the previous generation that
//     the current one holds again (a span delivered twice); Expire stops
//     recognising none.
func TestEndedAgainstHistory(t *testing.T) {
	const capacity, window, universe = 40, 50, 120
	rng := rand.New(rand.NewPCG(3, 4))
	e := NewEnded(capacity, window)
	added := map[Key]int64{} // first time of the key's latest addition
	seqOf := map[Key]int{}   // insertion count when the key was added
	seq := 0
	now := int64(0)
	recognised := func() map[Key]bool {
		r := map[Key]bool{}
		for i := range universe {
			if e.Contains(key(i), now) {
				r[key(i)] = true
			}
		}
		return r
	}
	for step := range 20000 {
		before := recognised()
		for k := range before {
			if at, ok := added[k]; !ok || at+window <= now {
				t.Fatalf("step %d: %v recognised, added at %v, now %d", step, k, at, now)
			}
		}
		for k, at := range added {
			if at+window > now && seq-seqOf[k] < capacity/2 && !before[k] {
				t.Fatalf("step %d: key added at %d (%d insertions ago) not recognised at %d", step, at, seq-seqOf[k], now)
			}
		}
		switch op := rng.IntN(10); {
		case op < 7:
			k := key(rng.IntN(universe))
			_, _, inCur := e.cur.find(&k, digest(&k))
			twice := 0 // keys in both generations, inside their window
			for i, k2 := range e.prev.keys {
				if at, ok := e.cur.time(&k2, digest(&k2)); ok && at+window > now && e.prev.times[i]+window > now {
					twice++
				}
			}
			if at, ok := e.prev.time(&k, digest(&k)); ok && at+window > now && !inCur {
				twice++ // the key added is dropped from the previous generation
			}
			rotates := e.cur.len() >= e.half && !inCur
			cut := e.Add(k, now)
			if !inCur {
				added[k] = now
				seq++
				seqOf[k] = seq
			}
			after := recognised()
			lost := 0
			for k2 := range before {
				if !after[k2] && k2 != k {
					lost++
				}
			}
			if !rotates {
				twice = 0
			}
			if cut != lost+twice {
				t.Fatalf("step %d: Add cut %d, stopped recognising %d (+%d held twice)", step, cut, lost, twice)
			}
		default:
			now += rng.Int64N(15)
			before = recognised() // the clock moved
			e.Expire(now)
			after := recognised()
			if len(after) != len(before) {
				t.Fatalf("step %d: Expire stopped recognising %d keys inside their window", step, len(before)-len(after))
			}
		}
		if e.Len() > e.Capacity() {
			t.Fatalf("step %d: Len %d above Capacity %d", step, e.Len(), e.Capacity())
		}
		if n := len(e.cur.keys) + len(e.prev.keys); e.Len() != n {
			t.Fatalf("step %d: Len %d, the generations hold %d keys", step, e.Len(), n)
		}
	}
}

// TestEndedKeysWithOneDigest: keys that share a digest — by chance, or
// forged to — are remembered apart, each with its own time, in both
// generations, and a third of the digest, never added, is not recognised:
// a start event taken for one whose span ended would never time out.
func TestEndedKeysWithOneDigest(t *testing.T) {
	a := key(1)
	b, c := collide(a, 0xff), collide(a, 0xff00)
	if digest(&a) != digest(&b) || digest(&a) != digest(&c) {
		t.Fatal("the test's keys do not share a digest")
	}
	for _, order := range [][2]Key{{a, b}, {b, a}} {
		e := NewEnded(4, 100) // two keys a generation
		e.Add(order[0], 1000)
		e.Add(order[1], 1050)
		if e.Add(order[1], 1060) != 0 || e.Len() != 2 {
			t.Fatalf("Len %d after adding a key twice; want 2", e.Len())
		}
		if !e.Contains(order[0], 1099) || e.Contains(order[0], 1100) || !e.Contains(order[1], 1149) || e.Contains(c, 1050) {
			t.Fatal("keys of one digest confused in the current generation")
		}
		// Two more keys: the first two move to the previous generation.
		if cut := e.Add(key(2), 1060); cut != 0 {
			t.Fatalf("cut %d with nothing dropped", cut)
		}
		if !e.Contains(order[0], 1099) || !e.Contains(order[1], 1149) || e.Contains(c, 1060) || !e.Contains(key(2), 1060) {
			t.Fatal("keys of one digest confused in the previous generation")
		}
		e.Add(c, 1070)
		if !e.Contains(c, 1070) || e.Contains(c, 1170) {
			t.Fatal("the third key of the digest not remembered with its own time")
		}
		// A fifth key drops the previous generation: a and b, both inside
		// their window (b at 1050 + 100 > 1080; a at 1000 + 100 > 1080).
		if cut := e.Add(key(3), 1080); cut != 2 {
			t.Fatalf("cut %d, want the two keys of the digest", cut)
		}
		if e.Contains(order[0], 1080) || e.Contains(order[1], 1080) || !e.Contains(c, 1080) {
			t.Fatal("the dropped keys are still recognised, or the kept one is not")
		}
	}
}

func TestEndedDoesNotAllocateAtWorkingSize(t *testing.T) {
	e := NewEnded(1000, 100)
	n := 0
	step := func() {
		e.Add(key(n%5000), int64(n)) // a rotation every 500 adds
		e.Contains(key(n%3000), int64(n))
		e.Expire(int64(n))
		n++
	}
	for range 3000 { // both generations at their working size
		step()
	}
	if allocs := testing.AllocsPerRun(5000, step); allocs != 0 {
		t.Fatalf("allocs per run = %v, want 0", allocs)
	}
}

// BenchmarkEndedAdd adds new keys to a full set of 100,000: every 50,000th
// add drops a generation. B/key is the heap the set holds at that bound,
// after a collection, per key held: what a span remembered costs.
func BenchmarkEndedAdd(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e := NewEnded(100_000, 1e12)
	n := 0
	for ; n < 300_000; n++ {
		e.Add(key(n), int64(n))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perKey := float64(after.HeapAlloc-before.HeapAlloc) / float64(e.Len())
	b.ReportAllocs()
	for b.Loop() {
		e.Add(key(n), int64(n))
		n++
	}
	b.ReportMetric(perKey, "B/key") // after the loop, which resets reported metrics
}
