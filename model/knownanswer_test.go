// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats"
)

// hypoexponentialCDF is the CDF of the sum of two independent exponential
// delays of means m1 ≠ m2: 1 − (m1·e^(−t/m1) − m2·e^(−t/m2))/(m1 − m2)
// (the hypoexponential distribution; Ross, "Introduction to Probability
// Models", section 5.2.4).
func hypoexponentialCDF(m1, m2, t float64) float64 {
	if t <= 0 {
		return 0
	}
	return 1 - (m1*math.Exp(-t/m1)-m2*math.Exp(-t/m2))/(m1-m2)
}

// TestFailureEndsTheSequence: a root calls A (Exp(2 ms)) then B (Exp(3
// ms)); A fails with probability 0.1, independently of its delay, and the
// root then fails at once without calling B (fail fast). The ΔQ of the
// system (ΔQSD: a failure in a sequence is the sequence's) is failure 0.1,
// and the successes take A + B, hypoexponential with mean 5 ms. The
// instances that failed in A called nothing after it: counted as a pattern
// of their own, "A only", the diagram chose it in 10 % of the instances,
// failing or not, so that 9 % of the predicted instances completed after
// A alone, which never happens: the predicted mean of the successes was
// 4.7 ms. The patterns are those of the instances that did not fail.
func TestFailureEndsTheSequence(t *testing.T) {
	const n, pFail, m1, m2 = 4000, 0.1, 2.0, 3.0
	rng := rand.New(rand.NewPCG(7, 7))
	var spans []Span
	failed := 0
	for tr := range uint64(n) {
		a, b := m1*rng.ExpFloat64(), m2*rng.ExpFloat64()
		if rng.Float64() < pFail {
			failed++
			r, fa := sp(tr+1, 1, 0, "R", 0, a), sp(tr+1, 2, 1, "A", 0, a)
			r.Failed, fa.Failed = true, true
			spans = append(spans, r, fa)
			continue
		}
		spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a, a+b))
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	f := float64(failed) / n
	if got := pred.Intangible(); math.Abs(got-f) > 1e-6 {
		t.Errorf("predicted failure %v, want the observed share %v", got, f)
	}
	// The mean of n draws of A + B has a standard error of
	// sqrt(2² + 3²)/sqrt(0.9 n) = 0.06 ms: 0.2 ms is over 3 of them.
	if mean, ok := pred.Mean(); !ok || math.Abs(mean*1e3-(m1+m2)) > 0.2 {
		t.Errorf("predicted mean of the successes %v ms, want %v ms (A then B)", mean*1e3, m1+m2)
	}
	// The tangible CDF against the closed form, within the
	// Dvoretzky–Kiefer–Wolfowitz bound for 3600 draws at 99.9 %:
	// sqrt(ln(2/0.001)/(2·3600)) = 0.032.
	for _, ms := range []float64{0.5, 1, 2, 4, 6, 10, 15} {
		got := pred.CDF(ms*1e-3) / (1 - f)
		if want := hypoexponentialCDF(m1, m2, ms); math.Abs(got-want) > 0.032 {
			t.Errorf("predicted P(done within %v ms | success) = %.4f, want %.4f (A + B)", ms, got, want)
		}
	}
}

// TestSkewedSequence: a root calls A (Exp(2 ms)) then B (Exp(3 ms)), B
// timed by a clock δ behind the root's and A's, so that B seems to start
// δ before A ends (a skew of a few microseconds between hosts, or a span
// ended just after the next call began). The ΔQ of the system is A then
// B, hypoexponential with mean 5 ms. Any overlap made B parallel to A, an
// all-to-finish of mean 2 + 3 − 2·3/5 = 3.8 ms (E[max] of two
// exponentials) for a skew of 5 µs. A child now joins the step it
// overlaps only when the overlap is at least half the shorter of the two:
// the composition whose extent is nearer the pair's (A + B − overlap), a
// sequence off by the overlap, an all-to-finish by the shorter less it.
func TestSkewedSequence(t *testing.T) {
	const n, m1, m2 = 3000, 2.0, 3.0
	for _, skew := range []float64{0.005, 0.02} { // ms
		rng := rand.New(rand.NewPCG(11, 11))
		var spans []Span
		for tr := range uint64(n) {
			a, b := m1*rng.ExpFloat64(), m2*rng.ExpFloat64()
			spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a-skew, a+b-skew))
		}
		m, d := build(t, Config{}, spans, 1000)
		root, _ := m.Node("svc_R")
		seq := [][]string{{"svc_A"}, {"svc_B"}}
		// A sequence unless A or B is shorter than twice the skew:
		// P = 1 − e^(−2δ/2)·e^(−2δ/3) = 3.3 % of the instances for
		// δ = 20 µs, 0.8 % for 5 µs; 5 % allows for sampling (3
		// standard deviations of the count above 3.3 %).
		if len(root.Patterns) == 0 || !slices.EqualFunc(root.Patterns[0].Steps, seq, slices.Equal[[]string]) ||
			float64(root.Patterns[0].Count) < 0.95*n {
			t.Errorf("skew %v ms: patterns %+v, want A then B in nearly every instance", skew, root.Patterns)
			continue
		}
		v, err := m.Validate(d)
		if err != nil {
			t.Fatal(err)
		}
		pred := v[0].PredictedDQ
		// Standard error of the mean of n draws: sqrt(2² + 3²)/sqrt(n)
		// = 0.066 ms.
		if mean, ok := pred.Mean(); !ok || math.Abs(mean*1e3-(m1+m2)) > 0.2 {
			t.Errorf("skew %v ms: predicted mean %v ms, want %v ms (A then B)", skew, mean*1e3, m1+m2)
		}
		// DKW at 99.9 % for 3000 draws: sqrt(ln(2000)/6000) = 0.036.
		for _, ms := range []float64{0.5, 1, 2, 4, 6, 10, 15} {
			if got, want := pred.CDF(ms*1e-3), hypoexponentialCDF(m1, m2, ms); math.Abs(got-want) > 0.036 {
				t.Errorf("skew %v ms: predicted P(done within %v ms) = %.4f, want %.4f (A + B)", skew, ms, got, want)
			}
		}
	}
}

// TestFewTracesDoubt: with few traces, the observed ΔQ is an empirical
// CDF of few instances, which strays from the true one by chance: of
// seeded corpora of 10 traces of two independent stages (Exp(2 ms) then
// Exp(3 ms)), nearly all raised the doubt on the prediction, each saying
// that the parts are not independent. The distance is within the
// Dvoretzky–Kiefer–Wolfowitz bound at 99 %, sqrt(ln(2/0.01)/2)/√n =
// 1.63/√n (0.52 for 10): the doubt stays, and says that there are too few
// traces to tell. Measured over 40 seeded corpora a cell, at 10, 30, 100,
// 300 and 1000 traces and 100 and 1000 bins: independent stages were
// called dependent in 0 of 40 in every cell (the doubt itself, "too few
// traces", in 36–40 of 40 at 10 traces, 15–19 at 30, none from 100);
// stages of 10 ms + Exp(2 ms) sharing one slowness factor U(0.5, 2) per
// trace (TestResolvedKSPower's) raised the doubt in 36–40 of 40 in every
// cell, and were called dependent in 0–1 of 40 up to 100 traces, where
// the bound hides the dependence, and 36–40 of 40 from 300.
func TestFewTracesDoubt(t *testing.T) {
	corpus := func(n, bins int, dependent bool, seed uint64) []Doubt {
		rng := rand.New(rand.NewPCG(seed, uint64(n)))
		var spans []Span
		for tr := range uint64(n) {
			a, b := 2*rng.ExpFloat64(), 3*rng.ExpFloat64()
			if dependent {
				f := 0.5 + 1.5*rng.Float64()
				a, b = f*(10+2*rng.ExpFloat64()), f*(10+2*rng.ExpFloat64())
			}
			spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a, a+b))
		}
		m, d := build(t, Config{}, spans, bins)
		v, err := m.Validate(d)
		if err != nil {
			t.Fatal(err)
		}
		return Doubts(m.Stats, nil, v, time.Second)
	}
	const seeds = 40
	for _, bins := range []int{100, 1000} {
		for _, n := range []int{10, 30, 100, 300, 1000} {
			for _, dependent := range []bool{false, true} {
				raised, called := 0, 0
				for seed := range uint64(seeds) {
					for _, d := range corpus(n, bins, dependent, seed) {
						raised++
						if strings.Contains(d.Cause, "not independent") {
							called++
						} else if !strings.Contains(d.Cause, "too few traces") {
							t.Errorf("%d traces, %d bins, seed %d: %s; %s", n, bins, seed, d.What, d.Cause)
						}
					}
				}
				switch {
				case !dependent && called > 0:
					t.Errorf("%d independent traces, %d bins: called dependent in %d of %d corpora, want none", n, bins, called, seeds)
				case !dependent && n == 10 && raised < seeds*3/4:
					t.Errorf("10 independent traces, %d bins: doubt in %d of %d corpora, want the model unsure", bins, raised, seeds)
				case dependent && raised < seeds*3/4:
					t.Errorf("%d dependent traces, %d bins: doubt in %d of %d corpora, want at least 30", n, bins, raised, seeds)
				case dependent && n >= 300 && called < seeds*3/4:
					t.Errorf("%d dependent traces, %d bins: called dependent in %d of %d corpora, want at least 30", n, bins, called, seeds)
				}
			}
		}
	}
}

// TestWrapperSpans: a chain of 30 spans, each of which only wraps its one
// call (1 µs of its own, half before the call, half after), over a leaf
// of Exp(10 ms): the root takes the leaf's time plus 30 µs, of CDF
// 1 − e^(−(t − 0.03 ms)/10 ms) and mean 10.03 ms. Each wrapper's
// exclusive time lies within the first bin (66 µs), whose mass a ΔQ
// spreads over the bin: half a bin each, 30 × 33 µs = 1 ms added to the
// predicted mean, a KS distance of 0.09 from the observed. Such a time,
// under a quarter of a bin on average, is a point at 0.
func TestWrapperSpans(t *testing.T) {
	const n, depth, leafMean, own = 3000, 30, 10.0, 0.001 // ms
	rng := rand.New(rand.NewPCG(3, 3))
	var spans []Span
	for tr := range uint64(n) {
		leaf := leafMean * rng.ExpFloat64()
		for k := range depth + 1 {
			lo := float64(k) * own / 2
			hi := lo + leaf + float64(depth-k)*own
			if k == depth {
				hi = lo + leaf
			}
			spans = append(spans, sp(tr+1, byte(k+1), byte(k), fmt.Sprintf("op%d", k), lo, hi))
		}
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	shift := depth * own
	// Standard error of the mean: 10 ms/√3000 = 0.18 ms.
	if mean, ok := pred.Mean(); !ok || math.Abs(mean*1e3-(leafMean+shift)) > 0.55 {
		t.Errorf("predicted mean %v ms, want %v ms", mean*1e3, leafMean+shift)
	}
	// DKW at 99.9 % for 3000 draws: 0.036.
	for _, ms := range []float64{1, 3, 7, 10, 15, 25, 40} {
		want := 1 - math.Exp(-(ms-shift)/leafMean)
		if got := pred.CDF(ms * 1e-3); math.Abs(got-want) > 0.036 {
			t.Errorf("predicted P(done within %v ms) = %.4f, want %.4f", ms, got, want)
		}
	}
}

// TestRecoveredFailure: a root calls A (Exp(2 ms)), which fails with
// probability 0.1, independently of its delay; the root recovers by
// calling C (Exp(1 ms)) and succeeds. The system never fails, and takes A
// or, in 10 % of the instances, A + C: CDF 0.9·(1 − e^(−t/2)) + 0.1·H(t),
// H the hypoexponential of means 2 and 1 ms. A's failures were its
// exclusive time's intangible mass, which the diagram makes the root's:
// it predicted a failure of 0.1 for a system that never fails. A failure
// is intangible where it originates only when it reaches the root; one
// that a caller recovered from took its time.
func TestRecoveredFailure(t *testing.T) {
	const n, pFail, mA, mC = 4000, 0.1, 2.0, 1.0
	rng := rand.New(rand.NewPCG(5, 5))
	var spans []Span
	recovered := 0
	for tr := range uint64(n) {
		a := mA * rng.ExpFloat64()
		fa := sp(tr+1, 2, 1, "A", 0, a)
		if rng.Float64() < pFail {
			recovered++
			fa.Failed = true
			c := mC * rng.ExpFloat64()
			spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+c), fa, sp(tr+1, 3, 1, "C", a, a+c))
			continue
		}
		spans = append(spans, sp(tr+1, 1, 0, "R", 0, a), fa)
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	if f := pred.Intangible(); f > 1e-6 {
		t.Errorf("predicted failure %v, want 0: the root recovered from every failure of A", f)
	}
	p := float64(recovered) / n
	// DKW at 99.9 % for 4000 draws: 0.031.
	for _, ms := range []float64{0.5, 1, 2, 4, 6, 10} {
		want := (1-p)*(1-math.Exp(-ms/mA)) + p*hypoexponentialCDF(mA, mC, ms)
		if got := pred.CDF(ms * 1e-3); math.Abs(got-want) > 0.031 {
			t.Errorf("predicted P(done within %v ms) = %.4f, want %.4f", ms, got, want)
		}
	}
}

// TestRecoveredFailureStopsShort: a root calls B, which calls A (Exp(2
// ms)) and then A2 (Exp(1 ms)), except in the 20 % of its instances that
// fail after A, without calling A2; the root recovers and succeeds. The
// system takes A, plus A2 in 80 % of the instances: CDF
// 0.8·H(t) + 0.2·(1 − e^(−t/2)), H the hypoexponential of means 2 and
// 1 ms. The patterns of the instances whose failure reached the root are
// left out (TestFailureEndsTheSequence); those of a failure recovered
// from are the time it took, and count.
func TestRecoveredFailureStopsShort(t *testing.T) {
	const n, pFail, mA, mA2 = 4000, 0.2, 2.0, 1.0
	rng := rand.New(rand.NewPCG(6, 6))
	var spans []Span
	short := 0
	for tr := range uint64(n) {
		a := mA * rng.ExpFloat64()
		if rng.Float64() < pFail {
			short++
			b := sp(tr+1, 2, 1, "B", 0, a)
			b.Failed = true
			spans = append(spans, sp(tr+1, 1, 0, "R", 0, a), b, sp(tr+1, 3, 2, "A", 0, a))
			continue
		}
		a2 := mA2 * rng.ExpFloat64()
		spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+a2), sp(tr+1, 2, 1, "B", 0, a+a2), sp(tr+1, 3, 2, "A", 0, a), sp(tr+1, 4, 2, "A2", a, a+a2))
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	p := float64(short) / n
	// DKW at 99.9 % for 4000 draws: 0.031.
	for _, ms := range []float64{0.5, 1, 2, 4, 6, 10} {
		want := (1-p)*hypoexponentialCDF(mA, mA2, ms) + p*(1-math.Exp(-ms/mA))
		if got := pred.CDF(ms * 1e-3); math.Abs(got-want) > 0.031 {
			t.Errorf("predicted P(done within %v ms) = %.4f, want %.4f", ms, got, want)
		}
	}
}

// TestRareSlowRoot: a request R, A (Exp(2 ms)) then B (Exp(3 ms)), in
// 99 % of the traces, and in 1 % a batch job of U(9 s, 11 s) of its own.
// One bin width for the model, the job's 99.9th percentile over 1000 bins
// (11 ms), held all of R in its first two bins: the predicted median of R
// was 11 ms for the hypoexponential's 4.1 ms. Each root operation has its
// own bins, the ΔQs of its calls with it.
func TestRareSlowRoot(t *testing.T) {
	const n, m1, m2 = 5000, 2.0, 3.0
	rng := rand.New(rand.NewPCG(12, 12))
	var spans []Span
	jobs := 0
	for tr := range uint64(n) {
		if tr%100 == 7 {
			jobs++
			spans = append(spans, sp(tr+1, 1, 0, "job", 0, 9000+2000*rng.Float64()))
			continue
		}
		a, b := m1*rng.ExpFloat64(), m2*rng.ExpFloat64()
		spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a, a+b))
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, val := range v {
		// DKW at 99.9 %: 0.028 for the 4950 requests, 0.27 for the 50
		// jobs.
		switch val.Root {
		case "svc_R":
			for _, ms := range []float64{1, 2, 4, 6, 10, 15} {
				if got, want := val.PredictedDQ.CDF(ms*1e-3), hypoexponentialCDF(m1, m2, ms); math.Abs(got-want) > 0.028 {
					t.Errorf("R: predicted P(done within %v ms) = %.4f, want %.4f (A + B)", ms, got, want)
				}
			}
		case "svc_job":
			for _, s := range []float64{9.5, 10, 10.5} {
				if got, want := val.PredictedDQ.CDF(s), (s-9)/2; math.Abs(got-want) > 0.27 {
					t.Errorf("job: predicted P(done within %v s) = %.4f, want %.4f", s, got, want)
				}
			}
		default:
			t.Errorf("root %s, want svc_R and svc_job", val.Root)
		}
	}
	if len(v) != 2 || jobs == 0 {
		t.Errorf("%d roots validated, %d jobs; want 2 roots", len(v), jobs)
	}
}

// TestTimeoutGivesUp: a root calls A (Exp(2 ms)) then B (Exp(1 ms)), but
// gives up on A at 5 ms: it fails there, and A runs on to its end, past
// the root's. The system fails with probability e^(−2.5); the others take
// A, below 5 ms, plus B, of mean E[A | A < 5] + 1 = 2 − 5·e^(−2.5)/(1 −
// e^(−2.5)) + 1 = 2.553 ms. The failure counted as the root's own, and
// A's time, clipped at 5 ms, as a completion: the model predicted a mean of
// 2.83 ms, within the doubt's KS bound, and counted A outside its parent
// as a skewed clock. A span that fails with a call still in flight gave up
// on it: the failure is the call's (a timeout), the one that ended last.
func TestTimeoutGivesUp(t *testing.T) {
	const n, mA, mB, limit = 4000, 2.0, 1.0, 5.0
	rng := rand.New(rand.NewPCG(13, 13))
	var spans []Span
	for tr := range uint64(n) {
		a, b := mA*rng.ExpFloat64(), mB*rng.ExpFloat64()
		if a > limit {
			r := sp(tr+1, 1, 0, "R", 0, limit)
			r.Failed = true
			spans = append(spans, r, sp(tr+1, 2, 1, "A", 0, a))
			continue
		}
		spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a, a+b))
	}
	m, d := build(t, Config{}, spans, 1000)
	if out := m.Stats.Incoherence.OutsideParent; out != 0 {
		t.Errorf("%d spans outside their parent, want 0: a call given up on is no skewed clock", out)
	}
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	pFail := math.Exp(-limit / mA)
	// The failure's share in 4000 draws has a standard error of 0.004.
	if f := pred.Intangible(); math.Abs(f-pFail) > 0.015 {
		t.Errorf("predicted failure %v, want e^(−2.5) = %v", f, pFail)
	}
	// Standard error of the mean of the successes: about
	// sqrt(1.4² + 1²)/sqrt(3670) = 0.03 ms.
	want := mA - limit*pFail/(1-pFail) + mB
	if mean, ok := pred.Mean(); !ok || math.Abs(mean*1e3-want) > 0.1 {
		t.Errorf("predicted mean of the successes %v ms, want %v ms", mean*1e3, want)
	}
}

// TestRetriedCall: a root calls A (Exp(2 ms)), which fails with
// probability 0.2, independently of its delay; after a failure the root
// calls A again, and fails when that fails too. The system fails with
// probability 0.2² = 0.04; the others take A (0.8) or A + A (0.16),
// Erlang(2, 2 ms): CDF 1 − e^(−t/2)·(1 + t/2). Both failures of a trace
// that failed counted as failures of A, the first too, from which the
// root had recovered: A's failures were 8 % of its calls for 3.3 %, and
// the predicted failure 0.077. A failed call after which its caller went
// on to another call was recovered from.
func TestRetriedCall(t *testing.T) {
	const n, pFail, mA = 5000, 0.2, 2.0
	rng := rand.New(rand.NewPCG(14, 14))
	var spans []Span
	failed := 0
	for tr := range uint64(n) {
		r := sp(tr+1, 1, 0, "R", 0, 0)
		at := 0.0
		trace := []Span{}
		for k := range 2 {
			a := mA * rng.ExpFloat64()
			s := sp(tr+1, byte(k+2), 1, "A", at, at+a)
			at += a
			s.Failed = rng.Float64() < pFail
			trace = append(trace, s)
			if !s.Failed {
				break
			}
			if k == 1 {
				r.Failed = true
				failed++
			}
		}
		r.End = int64(at * 1e6)
		spans = append(spans, r)
		spans = append(spans, trace...)
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	pred := v[0].PredictedDQ
	f := float64(failed) / n
	// The failure's share has a standard error of 0.003 in 5000 traces.
	if got := pred.Intangible(); math.Abs(got-f) > 0.01 {
		t.Errorf("predicted failure %v, want the observed %v (0.2² = 0.04)", got, f)
	}
	// DKW at 99.9 % for 4800 draws: 0.028.
	for _, ms := range []float64{0.5, 1, 2, 4, 6, 10} {
		erlang := 1 - math.Exp(-ms/mA)*(1+ms/mA)
		want := (0.8*(1-math.Exp(-ms/mA)) + 0.16*erlang) / 0.96
		if got := pred.CDF(ms*1e-3) / (1 - pred.Intangible()); math.Abs(got-want) > 0.028 {
			t.Errorf("predicted P(done within %v ms | success) = %.4f, want %.4f", ms, got, want)
		}
	}
}

// TestEncodeKeepsNames: model.json puts each array of numbers (a ΔQ's
// bins) on one line. The pattern that did so matched within strings too:
// an operation named "GET [1, 2]" was written "GET [1,2]", and whatif
// found no node of the name the spans have. It was also slow, 51 s for the
// 45 MB of a model of 10,000 nodes; the scan is linear and skips strings.
func TestEncodeKeepsNames(t *testing.T) {
	const name = "GET [1, 2]\n[3,\t4]"
	var spans []Span
	for tr := uint64(1); tr <= 10; tr++ {
		spans = append(spans, sp(tr, 1, 0, name, 0, 1+float64(tr)), sp(tr, 2, 1, "q", 0.5, 1))
	}
	m, _ := build(t, Config{}, spans, 20)
	js, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(js)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Nodes[0].Operation; got != name {
		t.Errorf("operation %q after Encode and Decode, want %q", got, name)
	}
	// The bins, on one line: "pdf": [0,0.1,…] with no white space.
	for _, line := range strings.Split(string(js), "\n") {
		if strings.Contains(line, `"pdf": [`) && (!strings.HasSuffix(strings.TrimRight(line, ","), "]") || strings.Contains(line, ", ")) {
			t.Errorf("bins not on one line: %q", line)
		}
	}
	if !reflect.DeepEqual(back.Nodes, m.Nodes) {
		t.Errorf("nodes differ after Encode and Decode:\n%+v\n%+v", back.Nodes, m.Nodes)
	}
}

// TestExtremeScales: a root R calls A then B, each U(50, 150) units of
// time, and has no time of its own; the sum is triangular on [100, 300]:
// CDF (t − 100)²/20000 below 200, 1 − (300 − t)²/20000 above. In
// nanoseconds, bins of 0.3 ns spread each 1 ns bucket over more bins than
// its duration gave it, the rest counted as timeouts: R's own time, 0 ns,
// was 70 % failure. In tens of seconds (a unit of 10 s, bins of 3 s), R's
// 0 ns bucket fell within the rounding of the first bin's edge and was
// lost: all of it failure, and every quantile unreachable.
func TestExtremeScales(t *testing.T) {
	for _, unit := range []float64{1e-6, 1e4} { // in ms: 1 ns, 10 s
		rng := rand.New(rand.NewPCG(15, 15))
		var spans []Span
		for tr := range uint64(3000) {
			// Whole nanoseconds, as spans have them.
			a := math.Round((50+100*rng.Float64())*unit*1e6) / 1e6
			b := math.Round((50+100*rng.Float64())*unit*1e6) / 1e6
			spans = append(spans, sp(tr+1, 1, 0, "R", 0, a+b), sp(tr+1, 2, 1, "A", 0, a), sp(tr+1, 3, 1, "B", a, a+b))
		}
		m, d := build(t, Config{}, spans, 1000)
		v, err := m.Validate(d)
		if err != nil {
			t.Fatal(err)
		}
		pred := v[0].PredictedDQ
		if f := pred.Intangible(); f > 1e-6 {
			t.Errorf("unit %v ms: predicted failure %v, want 0", unit, f)
		}
		// DKW at 99.9 % for 3000 draws, 0.036, and 0.01 for the whole
		// nanoseconds.
		for _, x := range []float64{130, 170, 200, 230, 270} {
			want := (x - 100) * (x - 100) / 20000
			if x > 200 {
				want = 1 - (300-x)*(300-x)/20000
			}
			if got := pred.CDF(x * unit * 1e-3); math.Abs(got-want) > 0.046 {
				t.Errorf("unit %v ms: predicted P(done within %v units) = %.4f, want %.4f", unit, x, got, want)
			}
		}
	}
}

// TestZeroLengthFailedLastCall: a root that fails after its last call, of
// no duration (a coarse clock), failed: the failure is the call's, which
// the root did not go on from. Read as a call the root went on after (its
// start, the same instant, is not before the call's end), the call counted
// as recovered and the root's own exclusive time took the failure.
func TestZeroLengthFailedLastCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	var spans []Span
	for tr := range uint64(200) {
		a := 1 + rng.ExpFloat64()
		r := sp(tr+1, 1, 0, "R", 0, a)
		r.Failed = true
		b := sp(tr+1, 3, 1, "B", a, a)
		b.Failed = true
		spans = append(spans, r, sp(tr+1, 2, 1, "A", 0, a), b)
	}
	m, _ := build(t, Config{}, spans, 100)
	mass := func(probe string) float64 {
		for _, n := range m.Nodes {
			if n.Outcome == probe {
				return floats.Sum(n.Exclusive.PDF)
			}
		}
		t.Fatalf("no node of outcome %s in %+v", probe, m.Nodes)
		return 0
	}
	if got := mass("svc_B"); got > 1e-9 {
		t.Errorf("B's exclusive time has tangible mass %v, want none: every B failed, and the root with it", got)
	}
	if got := mass("svc_R_self"); math.Abs(got-1) > 1e-9 {
		t.Errorf("R's own exclusive time has tangible mass %v, want 1: the failure is B's", got)
	}
}

// TestDoubtOfEachRoot: two root operations, each of two stages sharing a
// slowness factor per trace (TestFewTracesDoubt's dependence), over 1000
// traces each: both predictions are far from their observations, and each
// doubt says that the parts are not independent. The second's said it was
// learned from part of the traces, "see above", taking the first root's
// doubt for one on the traces.
func TestDoubtOfEachRoot(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	var spans []Span
	for tr := range uint64(2000) {
		root := []string{"R1", "R2"}[tr%2]
		f := 0.5 + 1.5*rng.Float64()
		a, b := f*(10+2*rng.ExpFloat64()), f*(10+2*rng.ExpFloat64())
		spans = append(spans, sp(tr+1, 1, 0, root, 0, a+b), sp(tr+1, 2, 1, root+"A", 0, a), sp(tr+1, 3, 1, root+"B", a, a+b))
	}
	m, d := build(t, Config{}, spans, 1000)
	v, err := m.Validate(d)
	if err != nil {
		t.Fatal(err)
	}
	ds := Doubts(m.Stats, nil, v, time.Second)
	if len(ds) != 2 {
		t.Fatalf("doubts %+v, want one a root", ds)
	}
	for _, d := range ds {
		if !strings.Contains(d.Cause, "not independent") {
			t.Errorf("%s: %s, want the parts not independent", d.What, d.Cause)
		}
	}
}
