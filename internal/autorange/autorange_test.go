// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package autorange

import (
	"math"
	"testing"
	"time"
)

// TestTailSketch: every delay lies in its bucket, below the bucket's upper
// edge by at most 1/8 of the delay (8 linear steps per power of two), and
// the buckets are in order.
func TestTailSketch(t *testing.T) {
	prev := -1
	for _, d := range []int64{0, 1, 15, 16, 17, 31, 32, 1000, 1_048_576, 1_499_000, 1e9, 1e12, math.MaxInt64 / 3, math.MaxInt64} {
		i := tailIndex.Bucket(d)
		if i < prev || i >= tailIndex.Buckets() {
			t.Fatalf("tailIndex.Bucket(%d) = %d after %d (of %d)", d, i, prev, tailIndex.Buckets())
		}
		prev = i
		up := tailUpper(i)
		if d < math.MaxInt64/2 && (up <= d || float64(up-d) > float64(d)/8+1) {
			t.Errorf("d = %d: bucket %d has upper edge %d, want in (d, d + d/8 + 1]", d, i, up)
		}
	}
	// 1.499 ms: 2²⁰ ≤ d < 2²¹, step 2¹⁷ ns, the 4th step: [11·2¹⁷, 12·2¹⁷).
	if got := tailUpper(tailIndex.Bucket(1_499_000)); got != 12<<17 {
		t.Errorf("upper edge for 1.499ms = %d, want 12·2¹⁷ = %d", got, 12<<17)
	}
}

// TestStep125: the smallest 1-2-5 step at or above x.
func TestStep125(t *testing.T) {
	for x, want := range map[int64]int64{1: 1, 2: 2, 3: 5, 6: 10, 10: 10, 11: 20, 3_145_728: 5_000_000, 2e9: 2e9, 2_000_000_001: 5e9} {
		if got := step125(x); got != want {
			t.Errorf("step125(%d) = %d, want %d", x, got, want)
		}
	}
}

// TestAutoRangeSustain: a single sample whose tail is out of range changes
// nothing; a censored tail (start events that timed out without a span)
// counts as beyond dMax; the dMax never leaves [dmax_min, dmax_max].
func TestAutoRangeSustain(t *testing.T) {
	a := New(Options{Min: 10 * time.Millisecond, Max: 2 * time.Second, Sample: 100, Period: time.Second}, 100)
	const sec = int64(time.Second)
	now := int64(1)
	a.since = now
	sample := func(d int64, n int) {
		for range n {
			a.Observe(d)
		}
	}
	step := func() (Change, bool) { now += sec; return a.Step(now) }

	sample(int64(time.Millisecond), 100)
	if ch, ok := step(); !ok || !ch.Learned || ch.To != int64(10*time.Millisecond) {
		t.Fatalf("first sample of 1ms: %+v %v, want learned and dmax_min 10ms (2·1.0625ms = 2.1ms is below it)", ch, ok)
	}
	sample(int64(100*time.Millisecond), 100)
	if _, ok := step(); ok {
		t.Fatal("one out-of-range sample changed the dMax")
	}
	sample(int64(time.Millisecond), 100)
	if _, ok := step(); ok {
		t.Fatal("an in-range sample changed the dMax")
	}
	sample(int64(100*time.Millisecond), 100)
	step()
	sample(int64(100*time.Millisecond), 100)
	// q = 104857600 ns (25·2²²); 2q = 209.7ms → 500ms.
	if ch, ok := step(); !ok || ch.To != int64(500*time.Millisecond) {
		t.Fatalf("two samples of 100ms: %+v %v, want dMax 500ms", ch, ok)
	}
	// Censored: all 100 instances timed out without a span twice; the
	// tail is 2·dMax = 1s, out of range; 2 s (clamped from 2·1s → 2s).
	for range 2 {
		for range 100 {
			a.Censor()
		}
		if ch, ok := step(); ok {
			if ch.To != int64(2*time.Second) {
				t.Fatalf("censored tail: %+v, want dmax_max 2s", ch)
			}
			return
		}
	}
	t.Fatal("two censored samples did not raise the dMax")
}

// TestAutoRangeAfterTheClockWentBack: a clock that steps back an hour
// during the learning phase delays the first choice by one period from
// the step, not by the hour it takes the clock to come back to the
// sample's start.
func TestAutoRangeAfterTheClockWentBack(t *testing.T) {
	a := New(Options{Min: 10 * time.Millisecond, Max: 2 * time.Second, Sample: 100, Period: time.Second}, 100)
	const sec = int64(time.Second)
	now := int64(1000 * time.Hour)
	a.Begin(now)
	for range 100 {
		a.Observe(int64(time.Millisecond))
	}
	now -= int64(time.Hour)
	if _, ok := a.Step(now); ok {
		t.Fatal("a choice at the step")
	}
	now += sec
	if ch, ok := a.Step(now); !ok || !ch.Learned || ch.To != int64(10*time.Millisecond) {
		t.Fatalf("a period after the step: %+v %v, want the first choice, 10ms", ch, ok)
	}
}

// extremeAttack feeds a to the alternating attack of the issue: every
// second perSecond spans of 10 ms, plus extreme spans of 50 s in the
// first two of every four seconds, for seconds seconds from now, one
// sample per second; it returns the changes of dMax it caused.
func extremeAttack(a *Range, now *int64, seconds, perSecond, extreme int) int {
	changes := 0
	for s := range seconds {
		for range perSecond {
			a.Observe(int64(10 * time.Millisecond))
		}
		if s%4 < 2 {
			for range extreme {
				a.Observe(int64(50 * time.Second))
			}
		}
		*now += int64(time.Second)
		if ch, ok := a.Step(*now); ok && !ch.Suppressed {
			changes++
		}
	}
	return changes
}

// TestAutoRangeResistsAFewExtremeSpans reproduces the attack on dmax: auto
// (1,200 spans a second of 10 ms plus 3 spans of 50 s in alternating pairs
// of 1 s samples, dmax_sample 100, dmax_period 1s): it moved dMax 12
// times in 28 s between 50 ms and 60 s, because the p99.9 of a sample of
// 1,203 is its 1,202nd delay, among the 3 extreme ones. Now the tail needs
// 10 instances beyond it: the probe learns 50 ms (the 10 ms delays fall
// in the sketch bucket [9·2²⁰, 10·2²⁰) ns, 2·q = 20.97 ms, next 1-2-5
// step 50 ms) and keeps it. An attacker who sends 12 extreme spans a
// second (1 % of the traffic, above the 10 the tail needs) moves it, but
// at most dmax_changes_per_hour = 6 times in any hour: the rest are
// suppressed and counted, and the hour after allows changes again.
func TestAutoRangeResistsAFewExtremeSpans(t *testing.T) {
	if r := math.Ceil(autoQuantile * 1203); r != 1202 {
		t.Fatalf("the p99.9 rank of 1203 is %v", r)
	}
	o := Options{Sample: 100, Period: time.Second}
	a := New(o, 100)
	now := int64(1)
	a.Step(now)
	if n := extremeAttack(a, &now, 28, 1200, 3); n != 1 || a.dMax.Load() != int64(50*time.Millisecond) {
		t.Errorf("3 extreme spans a second: %d changes, dMax %v; want the learnt 50ms only", n, time.Duration(a.dMax.Load()))
	}
	if a.suppressed.Load() != 0 {
		t.Errorf("%d changes suppressed, want none: the tail never moved", a.suppressed.Load())
	}

	a = New(o, 100)
	now = 1
	a.Step(now)
	n := extremeAttack(a, &now, 3600, 1200, 12)
	if n != DefaultChangesPerHour {
		t.Errorf("12 extreme spans a second for an hour: %d changes, want dmax_changes_per_hour = %d", n, DefaultChangesPerHour)
	}
	if a.suppressed.Load() == 0 {
		t.Error("no change was suppressed")
	}
	if n := extremeAttack(a, &now, 3600, 1200, 12); n > DefaultChangesPerHour {
		t.Errorf("the hour after: %d changes, more than %d", n, DefaultChangesPerHour)
	} else if n == 0 {
		t.Error("the hour after: no change allowed")
	}
}

// TestOptions: the defaults, and each bound named in its error.
func TestOptions(t *testing.T) {
	if errs := (Options{}).Check(); len(errs) != 0 {
		t.Fatalf("defaults refused: %v", errs)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Min: 2 * time.Second, Max: time.Second}, "dmax_min, dmax_max: dmax_min 2s is above dmax_max 1s"},
		{Options{Sample: 10}, "dmax_sample: must be in [100, 10000000], got 10"},
		{Options{Period: time.Millisecond}, "dmax_period: must be in [1s, 24h0m0s], got 1ms"},
		{Options{ChangesPerHour: 3601}, "dmax_changes_per_hour: must be in [1, 3600], got 3601"},
		{Options{ChangesPerHour: -1}, "dmax_changes_per_hour: must be in [1, 3600], got -1"},
	} {
		errs := c.o.Check()
		if len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.o, errs, c.want)
		}
	}
	if a := New(Options{ChangesPerHour: 2}, 10); a.ChangesPerHour() != 2 {
		t.Errorf("ChangesPerHour = %d, want 2", a.ChangesPerHour())
	}
}

// TestAdopt: a range in its learning phase takes over its predecessor's
// dMax within its bounds, and only then.
func TestAdopt(t *testing.T) {
	a := New(Options{Min: time.Millisecond, Max: time.Second}, 100)
	if a.Adopt(int64(2*time.Second), 1) {
		t.Fatal("adopted a dMax above dmax_max")
	}
	if !a.Adopt(int64(50*time.Millisecond), 7) || a.DMax() != int64(50*time.Millisecond) {
		t.Fatalf("Adopt: dMax %v, want 50ms", time.Duration(a.DMax()))
	}
	if ok, ref := a.Decided(); !ok || ref != 7 {
		t.Fatalf("Decided = %v, %d; want true, 7", ok, ref)
	}
	if a.Adopt(int64(20*time.Millisecond), 1) {
		t.Fatal("a decided range adopted again")
	}
}

// TestLateSpansTakeTheirTimeoutsPlace: an instance whose start event timed
// out (Censor) and whose span came late, after 1 s (Uncensor), counts once,
// by its delay. A probe that learnt 50 ms (10 ms delays) and whose delays
// then jump to 1 s, every instance timing out before its span comes, moves
// to 5 s in one change, as from the spans alone: 1 s lies in the sketch
// bucket [14·2²⁶, 15·2²⁶) ns, q = 1.00663296 s, 2·q = 2.01 s, next 1-2-5
// step 5 s. Counted twice, half of each sample was censored and the tail
// 2·dMax: it moved to 200 ms, the first of three changes to 5 s.
func TestLateSpansTakeTheirTimeoutsPlace(t *testing.T) {
	a := New(Options{Sample: 100, Period: time.Second}, 100)
	now := int64(1)
	a.Begin(now)
	for range 100 {
		a.Observe(int64(10 * time.Millisecond))
	}
	now += int64(time.Second)
	if ch, ok := a.Step(now); !ok || ch.To != int64(50*time.Millisecond) {
		t.Fatalf("first sample: %+v, want 50ms", ch)
	}
	for range 2 {
		for range 100 {
			a.Censor()
			a.Uncensor(int64(time.Second))
		}
		now += int64(time.Second)
		a.Step(now)
	}
	if got := time.Duration(a.DMax()); got != 5*time.Second || a.Changes().Load() != 2 {
		t.Errorf("dMax %v after %d changes, want 5s after 2 (learnt, then the jump)", got, a.Changes().Load())
	}
	// A late span whose timeout was counted in a sample closed since goes
	// into the current one, as a delay.
	a.Uncensor(int64(time.Second))
	if a.censored.Load() != 0 || a.tail[tailIndex.Bucket(int64(time.Second))].Load() != 1 {
		t.Errorf("censored %d, delays of 1s %d; want 0 and 1", a.censored.Load(), a.tail[tailIndex.Bucket(int64(time.Second))].Load())
	}
}
