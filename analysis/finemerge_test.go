// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// agentWindows returns the first window of an agent engine whose probes
// p and q have the given layouts (nil: none configured: p's from its first
// instance), after counting ins, in the form a gateway merges.
func agentWindows(t *testing.T, probes map[string]ProbeConfig, ins []Instance, source string) []Window {
	t.Helper()
	e := newEngine(t, Config{Interval: time.Second, Probes: probes, WindowCounts: true}, t0)
	addAll(e, ins...)
	r := closeFirst(t, e)
	var ws []Window
	for i := range r.Probes {
		if w, ok := WindowOf(r, &r.Probes[i], source); ok {
			ws = append(ws, w)
		}
	}
	return ws
}

// TestWindowsMergeWithNothingToAgree: three agents count a probe in three
// layouts — 100 bins of 1 ms, 50 of 4 ms up to 200 ms, and log-linear
// buckets — and a gateway that pins nothing merges every window from the
// first: no window is refused or waits for a quorum, the counts are the
// sum of the agents' (successes and timeouts by the gateway's dMax, taken
// from the first window), and the analysis — read from the analysis
// counts, which add whatever the layouts — equals that of one engine that
// saw every instance.
func TestWindowsMergeWithNothingToAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 38))
	draw := func(n int, end time.Duration) []Instance {
		var ins []Instance
		for i := range n {
			d := time.Duration((8 + 4*rng.ExpFloat64()) * float64(time.Millisecond))
			ins = append(ins, ok("p", end+time.Duration(i)*time.Millisecond, d))
		}
		return append(ins, failed("p", end+500*time.Millisecond))
	}
	ll := deltaq.LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(time.Second), Steps: 10}
	layouts := []map[string]ProbeConfig{
		{"p": {DMax: 100 * time.Millisecond, Bins: 100}},
		{"p": {DMax: 200 * time.Millisecond, Bins: 50}},
		{"p": {Binning: &deltaq.BinningConfig{Kind: deltaq.BinningLogLinear, Factor: ll.Factor, Low: time.Duration(ll.Low), High: time.Duration(ll.High), Steps: ll.Steps}}},
	}
	cfg := Config{Interval: time.Second, Lag: time.Second, Quantiles: []float64{0.1, 0.5, 0.9}, Diagram: "job = p;"}
	gw := newEngine(t, cfg, t0)
	var all []Instance
	for i, l := range layouts {
		ins := draw(300, 100*time.Millisecond)
		all = append(all, ins...)
		for _, w := range agentWindows(t, l, ins, string(rune('a'+i))) {
			if c := gw.AddWindow(&w); c != ContributionAccepted {
				t.Fatalf("agent %d: window %v, want accepted from the first", i, c)
			}
		}
	}
	var merged *ProbeResult
	for _, r := range gw.Advance(at(3 * time.Second)) {
		if r.Start.Equal(t0) {
			merged = probeOf(t, r, "p")
		}
	}
	whole := newEngine(t, Config{Interval: time.Second, Quantiles: cfg.Quantiles, Diagram: cfg.Diagram,
		Probes: layouts[0]}, t0)
	addAll(whole, all...)
	want := probeOf(t, closeFirst(t, whole), "p")
	if merged == nil || merged.Counts != want.Counts || merged.Counts.Total() != 903 {
		t.Fatalf("merged counts %+v, one engine %+v, want 903 instances", merged, want.Counts)
	}
	if !slices.Equal(merged.FineCounts, want.FineCounts) || !slices.Equal(merged.FineIndex, want.FineIndex) {
		t.Error("the merged analysis counts are not one engine's")
	}
	for k, q := range want.Quantiles {
		if g := merged.Quantiles[k]; math.Abs(g.Observed-q.Observed) > 1e-12 || g.ObservedOK != q.ObservedOK {
			t.Errorf("quantile %v: merged %v, one engine %v", q.Q, g.Observed, q.Observed)
		}
	}
	if s := gw.Stats(); s.Dropped.Total() != 0 || s.Contributions[ContributionAccepted] != 3 {
		t.Errorf("gateway stats %+v: want three windows accepted, nothing dropped", s)
	}
}

// TestFineWindowChecks: a window's analysis counts must fit deltaq.Fine
// and its instances, and its weights must be possible; anything else is
// refused as invalid and changes nothing.
func TestFineWindowChecks(t *testing.T) {
	base := agentWindows(t, map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins}},
		[]Instance{traced(ok("p", 100*time.Millisecond, 3*time.Millisecond), 1, 4), failed("p", 200*time.Millisecond)}, "a")[0]
	if !base.Fine || len(base.FineIndex) != 1 || base.WeightSum != 5 || base.WeightSquares != 17 {
		t.Fatalf("window %+v: want analysis counts, Σw 5 and Σw² 17", base)
	}
	for name, mutate := range map[string]func(w *Window){
		"index beyond the buckets": func(w *Window) { w.FineIndex = []int{deltaq.NewFine().Buckets()} },
		"indices not increasing":   func(w *Window) { w.FineIndex, w.FineCounts = []int{5, 5}, []uint64{1, 1} },
		"a negative index":         func(w *Window) { w.FineIndex = []int{-1} },
		// The indices are checked increasing one by one and against the
		// buckets at the end: the last one beyond them.
		"the last index beyond": func(w *Window) {
			w.FineIndex, w.FineCounts = []int{1, deltaq.NewFine().Buckets()}, []uint64{1, 1}
		},
		"an index beyond, then one within": func(w *Window) {
			w.FineIndex, w.FineCounts = []int{deltaq.NewFine().Buckets() + 5, 3}, []uint64{1, 1}
		},
		"more completions":      func(w *Window) { w.FineCounts = []uint64{5} },
		"completions that wrap": func(w *Window) { w.FineIndex, w.FineCounts = []int{1, 2}, []uint64{math.MaxUint64, 2} },
		"a run that wraps":      func(w *Window) { w.FineIndex, w.FineCounts = nil, []uint64{math.MaxUint64, 0, 0, 0, 2} },
		"a run beyond the buckets": func(w *Window) {
			w.FineIndex, w.FineFirst, w.FineCounts = nil, deltaq.NewFine().Buckets()-1, []uint64{1, 0}
		},
		"a run before the buckets": func(w *Window) { w.FineIndex, w.FineFirst = nil, -1 },
		"lengths differ":           func(w *Window) { w.FineCounts = []uint64{1, 1} },
		"Σw not the count":         func(w *Window) { w.WeightSum = 4 },
		"Σw² below Σw":             func(w *Window) { w.WeightSquares = 4 },
		"Σw² above (Σw)²":          func(w *Window) { w.WeightSquares = 26 },
		"weights NaN":              func(w *Window) { w.WeightSquares = math.NaN() },
		"weights without counts":   func(w *Window) { w.Fine, w.FineIndex, w.FineCounts = false, nil, nil },
	} {
		gw := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
		w := base
		w.FineIndex, w.FineCounts = slices.Clone(base.FineIndex), slices.Clone(base.FineCounts)
		mutate(&w)
		if c := gw.AddWindow(&w); c != ContributionInvalid {
			t.Errorf("%s: %v, want invalid", name, c)
		}
		if s := gw.Stats(); s.Counted != 0 || s.UnconfiguredProbes != 0 {
			t.Errorf("%s: the refused window changed the engine: %+v", name, s)
		}
	}
}

// TestConvertedCountsBoundNoQTA: a window of another layout merges with
// display counts read from its analysis counts, each bucket at its upper
// edge; they say no more than the buckets do. Fifty successes of 7.28 ms,
// counted by an agent in 7 bins of 10/7 ms, lie in the analysis bucket
// [7.274496, 7.340032) ms, which straddles the gateway's bin edge 7.3 ms:
// the gateway cannot tell whether they completed within 7.3 ms. One engine
// that saw them knows they did (F(7.3 ms) = 1: the QTA of 90 % within 7.3
// ms holds). The gateway's reading must be bounded by what it knows — at
// least 0, at most 1 — and its breach test must not find a breach: the
// converted counts, read as exact, put F(7.3 ms) at 0 and the breach's
// p-value near 0.
func TestConvertedCountsBoundNoQTA(t *testing.T) {
	qta := QTA{Points: []QTAPoint{{Delay: 7300 * time.Microsecond, P: 0.9}}}
	gcfg := Config{Interval: time.Second, Lag: time.Second,
		Probes: map[string]ProbeConfig{"p": {DMax: 10 * time.Millisecond, Bins: 100, QTA: qta}}}
	var ins []Instance
	for i := range 50 {
		in := ok("p", 100*time.Millisecond+time.Duration(i)*time.Millisecond, 7280*time.Microsecond)
		in.DMaxNs, in.Bins = 0, 0
		ins = append(ins, in)
	}
	whole := newEngine(t, gcfg, t0)
	addAll(whole, ins...)
	want := probeOf(t, closeFirst(t, whole), "p")
	if want.QTACheck == nil || !want.QTACheck.OK || want.QTABreachP != 1 {
		t.Fatalf("one engine: QTA %+v, breach p %v; want it to hold, no breach", want.QTACheck, want.QTABreachP)
	}
	gw := newEngine(t, gcfg, t0)
	for _, w := range agentWindows(t, map[string]ProbeConfig{"p": {DMax: 10 * time.Millisecond, Bins: 7}}, ins, "a") {
		if c := gw.AddWindow(&w); c != ContributionAccepted {
			t.Fatalf("window %v", c)
		}
	}
	got := probeOf(t, closeFirst(t, gw), "p")
	if got.QTACheck == nil || len(got.QTACheck.Points) != 1 {
		t.Fatalf("gateway: QTA %+v", got.QTACheck)
	}
	pt := got.QTACheck.Points[0]
	if pt.Pessimistic != 0 || pt.Observed <= 0 || got.QTABreachP != 1 {
		t.Errorf("gateway: F(7.3 ms) read %v (pessimistic %v), breach p %v; want a reading within the bucket, above 0, the pessimistic 0 and no breach",
			pt.Observed, pt.Pessimistic, got.QTABreachP)
	}
	if !slices.Equal(got.FineCounts, want.FineCounts) || !slices.Equal(got.Quantiles, want.Quantiles) {
		t.Errorf("gateway: analysis counts %v and quantiles %+v, want one engine's %v and %+v", got.FineCounts, got.Quantiles, want.FineCounts, want.Quantiles)
	}
}
