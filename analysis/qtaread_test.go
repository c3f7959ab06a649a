// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// TestQTAPointOnDisplayEdge: display bins of 1 ms (dMax 100 ms, 100 bins)
// and the point (5 ms, p), 5 ms an edge of the bins. The analysis bucket
// that holds 5 ms is [a, b) = [4.980736, 5.046272) ms (deltaq.Fine: 64
// buckets of 65.536 µs over [4.194304, 8.388608) ms), and 5 ms lies
// 0.294 of the way into it.
//   - 50 instances at 4.99 ms and 50 at 20 ms: all 50 in the bucket
//     completed within 5 ms, as the display bin (4, 5] ms counts them:
//     F(5 ms) = 0.5 exactly. Read uniform within the bucket they would
//     make F(5 ms) = 0.5·0.294 = 0.147, and (5 ms, 0.5) would break.
//     It holds, for the pessimistic reading too, with slack 0 and
//     quantile 5 ms (the display bin's edge; the bucket's reading,
//     b, lies beyond it), margin 0.
//   - 50 at 5.01 ms, in the same bucket but the display bin (5, 6] ms:
//     F(5 ms) = 0, so (5 ms, 0.1) breaks with slack −0.1, where the
//     uniform reading 0.147 held; the breach test counts 0 of the 100
//     within 5 ms: p-value 0.9¹⁰⁰ (the binomial probability of no success
//     in 100 trials of 0.1).
func TestQTAPointOnDisplayEdge(t *testing.T) {
	a, b := fineBucket(t, 5*time.Millisecond)
	if a != 0.004980736 || b != 0.005046272 {
		t.Fatalf("the bucket of 5 ms is [%v, %v), want [4.980736, 5.046272) ms", a, b)
	}
	check := func(at time.Duration, p float64) *ProbeResult {
		cfg := Config{Probes: map[string]ProbeConfig{"p": {QTA: QTA{Points: []QTAPoint{{5 * time.Millisecond, p}}, MaxFailure: 0.5}}}}
		ins := concat(n(50, ok("p", 500*time.Millisecond, at)), n(50, ok("p", 500*time.Millisecond, 20*time.Millisecond)))
		return probeOf(t, single(t, cfg, ins), "p")
	}
	pr := check(4990*time.Microsecond, 0.5)
	pc, sl := pr.QTACheck.Points[0], pr.Slack.Points[0]
	if pc.Observed != 0.5 || !pc.OK || pc.Holds != deltaq.HoldsPessimistic || sl.Slack != 0 || pr.QTABreachP != 1 {
		t.Errorf("4.99 ms: F(5 ms) = %v (ok %v, holds %v), slack %v, breach p %v; want 0.5, holding for the pessimistic reading, slack 0, p 1",
			pc.Observed, pc.OK, pc.Holds, sl.Slack, pr.QTABreachP)
	}
	if !sl.MarginOK || math.Abs(sl.DelayMargin) > 1e-12 || !sl.PessimisticMarginOK || math.Abs(sl.PessimisticMargin) > 1e-12 {
		t.Errorf("4.99 ms: margin %v (%v), pessimistic %v (%v); want 0, 0", sl.DelayMargin, sl.MarginOK, sl.PessimisticMargin, sl.PessimisticMarginOK)
	}
	pr = check(5010*time.Microsecond, 0.1)
	pc, sl = pr.QTACheck.Points[0], pr.Slack.Points[0]
	if pc.Observed != 0 || pc.OK || pr.QTACheck.OK || math.Abs(sl.Slack+0.1) > 1e-12 || math.Abs(pr.QTABreachP-math.Pow(0.9, 100)) > 1e-12 {
		t.Errorf("5.01 ms: F(5 ms) = %v (ok %v), slack %v, breach p %v; want 0, broken, −0.1, %v",
			pc.Observed, pc.OK, sl.Slack, pr.QTABreachP, math.Pow(0.9, 100))
	}
}

// qtaLayout is a display layout of TestQTAReadingsBounded.
type qtaLayout struct {
	name string
	bins int              // uniform bins up to testDMax, or
	ll   deltaq.LogLinear // log-linear buckets
}

// TestQTAReadingsBounded: one QTA point (d, 0.5) read on display layouts
// of 2, 1 and 0.25 ms (dMax 100 ms) and on log-linear buckets (1 ms to
// 10 s, 10 steps a magnitude), at d = 5 ms (an edge of every layout),
// 5.3, 6.1 and 7.77 ms (inside bins and buckets) and 12.345 ms. Window k of
// 200 holds 300 instances of 1 ms + Exp(mean 2 to 10 ms, rising with k),
// whose F(d) sweeps across 0.5, and their true F(d) and 0.5-quantile are
// counted from the delays themselves. In every window and case:
//   - F(d) read is within the instances of d's analysis bucket of the truth
//     (the stated bound), and exact where d is an edge of uniform bins;
//     the pessimistic reading is at most the truth, and a point that holds
//     for it holds for the truth;
//   - the slack is negative exactly when the point fails, and the verdict
//     breaks exactly when the slack is negative (the failure bound holds);
//   - the breach test's p-value is at least that of the true count (it
//     never blames the resolution);
//   - the quantile read is within the analysis bucket of the true one, the
//     pessimistic quantile at or beyond it, and the delay margin has the
//     slack's sign (or is 0).
func TestQTAReadingsBounded(t *testing.T) {
	layouts := []qtaLayout{{"2ms", 50, deltaq.LogLinear{}}, {"1ms", 100, deltaq.LogLinear{}}, {"0.25ms", 400, deltaq.LogLinear{}}, {"loglinear", 0, issueLayout}}
	delays := []time.Duration{5 * time.Millisecond, 5300 * time.Microsecond, 6100 * time.Microsecond, 7770 * time.Microsecond, 12345 * time.Microsecond}
	cfg := Config{Probes: map[string]ProbeConfig{}}
	ll := map[string]deltaq.LogLinear{}
	name := func(l qtaLayout, d time.Duration) string { return fmt.Sprintf("%s@%v", l.name, d) }
	for _, l := range layouts {
		for _, d := range delays {
			cfg.Probes[name(l, d)] = ProbeConfig{QTA: QTA{Points: []QTAPoint{{d, 0.5}}, MaxFailure: 0.5}}
			if l.bins == 0 {
				ll[name(l, d)] = l.ll
			}
		}
	}
	cfg.LookupLayout = lookupLogLinear(ll)
	const windows, per = 200, 300
	rng := rand.New(rand.NewPCG(71, 3))
	var sample [][]int64
	var ins [][]Instance
	for k := range windows {
		mean := 2e6 + 8e6*float64(k)/windows
		ds := make([]int64, per)
		var w []Instance
		for i := range ds {
			ds[i] = int64(1e6 + mean*rng.ExpFloat64())
			for _, l := range layouts {
				for _, d := range delays {
					in := ok(name(l, d), 500*time.Millisecond, time.Duration(ds[i]))
					if l.bins > 0 {
						in.Bins = l.bins
					}
					w = append(w, in)
				}
			}
		}
		slices.Sort(ds)
		sample, ins = append(sample, ds), append(ins, w)
	}
	results := runResults(t, cfg, ins)
	for k, r := range results {
		for _, l := range layouts {
			for _, d := range delays {
				checkQTAReading(t, fmt.Sprintf("window %d, %s", k, name(l, d)), probeOf(t, r, name(l, d)), sample[k], d, l.bins > 0 && d%(testDMax/time.Duration(l.bins)) == 0)
			}
		}
	}
}

// checkQTAReading checks one probe's reading of its point (d, 0.5) against
// the truth of its sorted delays ds, ns; exact: d is an edge of its bins.
func checkQTAReading(t *testing.T, what string, pr *ProbeResult, ds []int64, d time.Duration, exact bool) {
	t.Helper()
	const p = 0.5
	nf := float64(len(ds))
	truth := float64(countUpTo(ds, int64(d))) / nf
	lo, hi := fineBucketNs(t, int64(d))
	bucket := float64(countUpTo(ds, hi-1)-countUpTo(ds, lo-1)) / nf
	pc, sl := pr.QTACheck.Points[0], pr.Slack.Points[0]
	switch {
	case exact && math.Abs(pc.Observed-truth) > 1e-12:
		t.Errorf("%s: F(d) = %v on an edge of the bins, want %v", what, pc.Observed, truth)
	case math.Abs(pc.Observed-truth) > bucket+1e-12:
		t.Errorf("%s: F(d) = %v, truth %v: off by more than its bucket's %v", what, pc.Observed, truth, bucket)
	case pc.Pessimistic > truth+1e-12 || (pc.Holds == deltaq.HoldsPessimistic && truth < p):
		t.Errorf("%s: pessimistic F(d) = %v (holds %v) above the truth %v", what, pc.Pessimistic, pc.Holds, truth)
	case (sl.Slack < 0) != !pc.OK || pr.QTACheck.OK != (pr.Slack.Min >= 0):
		t.Errorf("%s: slack %v (min %v) with the point ok %v, the verdict ok %v", what, sl.Slack, pr.Slack.Min, pc.OK, pr.QTACheck.OK)
	case pr.QTABreachP < breachP(int64(countUpTo(ds, int64(d))), int64(len(ds)), p, false)-1e-12:
		t.Errorf("%s: breach p-value %v below the true count's", what, pr.QTABreachP)
	}
	q := ds[int(math.Ceil(p*nf))-1]
	qlo, qhi := fineBucketNs(t, q)
	switch {
	case !sl.MarginOK || pc.ObservedDelay*1e9 < float64(qlo)-1 || pc.ObservedDelay*1e9 > float64(qhi)+1:
		t.Errorf("%s: quantile %v (ok %v), want within the bucket [%d, %d) ns of the true %d ns", what, pc.ObservedDelay, sl.MarginOK, qlo, qhi, q)
	case !sl.PessimisticMarginOK || pc.PessimisticDelay*1e9 < float64(q)-1:
		t.Errorf("%s: pessimistic quantile %v (ok %v) below the true %d ns", what, pc.PessimisticDelay, sl.PessimisticMarginOK, q)
	case sl.Slack < 0 && sl.DelayMargin > 0, sl.Slack > 0 && sl.DelayMargin < 0:
		t.Errorf("%s: slack %v and delay margin %v disagree", what, sl.Slack, sl.DelayMargin)
	}
}

// fineBucketNs returns the edges, ns, of the analysis bucket [lo, hi)
// that holds a delay of d ns.
func fineBucketNs(t *testing.T, d int64) (lo, hi int64) {
	t.Helper()
	edges, err := deltaq.FineLayout().Edges()
	if err != nil {
		t.Fatal(err)
	}
	j := deltaq.LogLinearBucket(edges, d)
	return edges[j], edges[j+1]
}

// countUpTo returns the number of the sorted delays ds at most d.
func countUpTo(ds []int64, d int64) int {
	i, _ := slices.BinarySearch(ds, d+1)
	return i
}

// runResults analyses the windows of instances as runWindows does and
// returns their results.
func runResults(t *testing.T, cfg Config, windows [][]Instance) []*Result {
	t.Helper()
	cfg.Interval, cfg.Lag = time.Second, time.Second
	e := newEngine(t, cfg, at(time.Second))
	var out []*Result
	for w, ins := range windows {
		shift := int64(w) * int64(time.Second)
		for i := range ins {
			ins[i].Start += shift
			ins[i].End += shift
		}
		addAll(e, ins...)
		res := e.Advance(at(time.Duration(w+2) * time.Second))
		if len(res) != 1 {
			t.Fatalf("window %d did not close alone: %d results", w, len(res))
		}
		out = append(out, res[0])
	}
	return out
}

// TestFailureRatioAtDMax: a window of 10,000 successes, 1000 of them at
// 99.8 ms, under a dMax of 100 ms, and 0 or 300 failures. The analysis
// bucket that holds 100 ms is [99.614, 100.663) ms (deltaq.Fine: 64 buckets
// of 1.048576 ms over [67.108864, 134.217728) ms), 37 % of it below dMax;
// read from the Analysis ΔQ, which cuts that bucket at dMax, 632 of the
// 1000 successes at 99.8 ms were failures, a ratio of 0.063 against a
// max_failure of 0.05, and the failure trigger fired at p = 2·10⁻⁹ on a
// window without a failure. The failure ratio the QTA check, its breach
// test and the QoO score's loss read must be that of the counts —
// failures and timeouts, every instance not completed within dMax (the
// thesis, section 3.3) — on uniform bins of every width and log-linear
// buckets.
func TestFailureRatioAtDMax(t *testing.T) {
	ll := &deltaq.BinningConfig{Kind: deltaq.BinningLogLinear, Factor: 10, Low: ms, High: 100 * ms, Steps: 10}
	layouts := map[string]ProbeConfig{"100 bins": {DMax: 100 * ms, Bins: 100}, "3 bins": {DMax: 100 * ms, Bins: 3}, "log-linear": {Binning: ll}}
	for _, failures := range []int{0, 300} {
		for name, lay := range layouts {
			p := lay
			p.QTA = QTA{MaxFailure: 0.05}
			p.Triggers = Triggers{Failure: true}
			p.QoO = QoOConfig{ROP: QoOThreshold{MaxFailure: 0.01}, CPUP: QoOThreshold{MaxFailure: 0.05}}
			var ins []Instance
			for i := range 10000 {
				d := 10 * ms
				if i%10 == 0 {
					d = 99800 * time.Microsecond
				}
				ins = append(ins, ok("p", 500*ms+time.Duration(i)*time.Microsecond/10, d))
			}
			for i := range failures {
				ins = append(ins, failed("p", 600*ms+time.Duration(i)*time.Microsecond))
			}
			r := single(t, Config{Probes: map[string]ProbeConfig{"p": p}}, ins)
			pr := probeOf(t, r, "p")
			want := float64(failures) / float64(10000+failures)
			c := pr.QTACheck
			if c == nil || math.Abs(c.Failure-want) > 1e-12 || !c.FailureOK || pr.FailureBreachP != 1 {
				t.Errorf("%d failures, %s: QTA check %+v, breach p %v; want failure ratio %v, held", failures, name, c, pr.FailureBreachP, want)
			}
			if len(r.Triggers) != 0 {
				t.Errorf("%d failures, %s: triggers %+v, want none", failures, name, r.Triggers)
			}
			wantLoss := 100 * (1 - math.Max(want-0.01, 0)/0.04)
			if q := pr.QoO; q == nil || !q.Observed.OK || math.Abs(q.Observed.Measured.Loss-want) > 1e-12 || math.Abs(q.Observed.QoO.Loss-wantLoss) > 1e-9 {
				t.Errorf("%d failures, %s: QoO %+v, want loss %v scoring %v", failures, name, q, want, wantLoss)
			}
		}
	}
}
