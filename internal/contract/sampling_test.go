// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"math"
	"testing"
)

// TestAdjustedCount: the thresholds of the examples of OpenTelemetry
// "TraceState: Probability Sampling" (th:0 always, th:8 one in 2, th:c one
// in 4, th:fd70a4 about one in 100), and tracestates without a valid
// threshold, which count as one (ok false).
func TestAdjustedCount(t *testing.T) {
	for _, c := range []struct {
		ts   string
		want float64
		ok   bool
	}{
		{"ot=th:0", 1, true},
		{"ot=th:8", 2, true},
		{"ot=th:c", 4, true},
		{"ot=th:C", 4, true},
		{"ot=th:fd70a4", 100.0027, true},
		{"ot=rv:cdef0123456789;th:c", 4, true},
		{"vendor=x, ot=th:e;rv:f0000000000001 ,other=y", 8, true},
		{"ot=th:ffffffffffffff", math.Exp2(56), true},
		{"", 0, false},
		{"vendor=th:c", 0, false},
		{"ot=rv:abcdef01234567", 0, false},
		{"ot=th:", 0, false},
		{"ot=th:fffffffffffffff", 0, false}, // 15 digits
		{"ot=th:xyz", 0, false},
	} {
		got, ok := AdjustedCount(c.ts)
		if ok != c.ok || math.Abs(got-c.want) > 1e-4*c.want {
			t.Errorf("AdjustedCount(%q) = %v, %v; want %v, %v", c.ts, got, ok, c.want, c.ok)
		}
	}
	var sink float64
	if n := testing.AllocsPerRun(100, func() { sink, _ = AdjustedCount("a=b, ot=rv:fe000000000000;th:fd70a4") }); n != 0 || sink == 0 {
		t.Errorf("AdjustedCount allocates %v times", n)
	}
}

// TestThresholdAgainstRandomness: OpenTelemetry "TraceState: Probability
// Sampling" keeps a span when its randomness value rv ≥ th ("Decision
// algorithm") and asks every stage to erase a threshold its span's rv
// contradicts ("General requirements"). A span with rv < th counts as one;
// rv = th was kept; an rv that is not 14 hex digits ("TraceState Handling",
// "Explicit randomness value rv") is ignored. The first case is the forged
// span that counted 2²⁰ failures: th:ffffffffffffff with a low rv.
func TestThresholdAgainstRandomness(t *testing.T) {
	for _, c := range []struct {
		ts   string
		want uint64
		ok   bool
	}{
		{"ot=th:ffffffffffffff;rv:00000000000000", 0, false},
		{"ot=rv:0123456789abcd;th:ffffffffffffff", 0, false},
		{"ot=th:c;rv:bfffffffffffff", 0, false},
		{"ot=th:c;rv:c0000000000000", 0xc0000000000000, true},
		{"ot=th:c;rv:ffffffffffffff", 0xc0000000000000, true},
		{"ot=th:0;rv:00000000000000", 0, true},
		{"ot=th:c;rv:0000000000000", 0xc0000000000000, true},   // 13 digits: ignored
		{"ot=th:c;rv:000000000000000", 0xc0000000000000, true}, // 15 digits: ignored
		{"ot=th:c;rv:zzzzzzzzzzzzzz", 0xc0000000000000, true},  // not hex: ignored
		{"ot=th:c;th:0;rv:80000000000000", 0, false},           // the first th counts
	} {
		got, ok := Threshold(c.ts)
		if ok != c.ok || got != c.want {
			t.Errorf("Threshold(%q) = %#x, %v; want %#x, %v", c.ts, got, ok, c.want, c.ok)
		}
	}
}

// TestWeight: stochastic rounding keeps whole counts whole and the mean of
// a fractional one: over 100,000 span ids the mean of Weight(10/3) is 10/3
// within 4 standard errors (σ of one draw ≤ 1/2); a ≤ 1 is 1.
func TestWeight(t *testing.T) {
	for _, a := range []float64{math.NaN(), -3, 0, 0.5, 1} {
		if w := Weight(a, 7); w != 1 {
			t.Errorf("Weight(%v) = %d, want 1", a, w)
		}
	}
	if w := Weight(4, 12345); w != 4 {
		t.Errorf("Weight(4) = %d", w)
	}
	const n = 100_000
	a := 10.0 / 3
	var sum int64
	for k := range uint64(n) {
		w := Weight(a, k)
		if w != 3 && w != 4 {
			t.Fatalf("Weight(%v) = %d, want 3 or 4", a, w)
		}
		sum += w
	}
	if mean := float64(sum) / n; math.Abs(mean-a) > 4*0.5/math.Sqrt(n) {
		t.Errorf("mean weight %v, want %v", mean, a)
	}
	first := Weight(a, 99)
	for range 10 {
		if w := Weight(a, 99); w != first {
			t.Fatalf("Weight(%v, 99) = %d, then %d: not a function of its key", a, first, w)
		}
	}
}

// TestThresholdTraceState: a threshold written back reads the same, in the
// spec's shortest form.
func TestThresholdTraceState(t *testing.T) {
	for ts, want := range map[string]string{"ot=th:c": "ot=th:c", "ot=th:0": "ot=th:0", "ot=th:fd70a400": "ot=th:fd70a4",
		"ot=th:ffffffffffffff": "ot=th:ffffffffffffff", "a=b,ot=rv:80000000000001;th:08": "ot=th:08"} {
		th, ok := Threshold(ts)
		if !ok {
			t.Fatalf("Threshold(%q): none", ts)
		}
		if got := ThresholdTraceState(th); got != want {
			t.Errorf("ThresholdTraceState(Threshold(%q)) = %q, want %q", ts, got, want)
		}
	}
}
