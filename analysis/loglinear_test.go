// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// issueLayout is the log-linear layout of the processor's example: 1ms to
// 10s by tens, 10 steps a magnitude.
var issueLayout = deltaq.LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}

// llquantizeEdges are issueLayout's bucket upper edges in seconds, as
// llquantize(x, 10, -3, 1, 10) lists its buckets ("Log/linear quantizations
// in DTrace"): [0, 1ms), then 1ms … 9ms, 10ms … 90ms, 100ms … 900ms and
// 1s … 9s, nine linear steps a magnitude, the last bucket ending at 10s.
func llquantizeEdges() []float64 {
	out := []float64{1e-3}
	for _, mag := range []int64{1e6, 1e7, 1e8, 1e9} { // ns
		for v := int64(2); v <= 10; v++ {
			out = append(out, float64(v*mag)/1e9)
		}
	}
	return out
}

// lookupLogLinear makes the probes named in ll log-linear, as a deltaq
// processor's `binning` does through the registry.
func lookupLogLinear(ll map[string]deltaq.LogLinear) func(string) (deltaq.Layout, bool) {
	return func(name string) (deltaq.Layout, bool) {
		l, ok := ll[name]
		return deltaq.Layout{DMaxNs: l.High, LogLinear: l}, ok
	}
}

// TestLogLinearProbeResolvesEveryMagnitude: delays spanning 1ms to 5s, 60 %
// of them between 1ms and 10ms (log-uniform) and 40 % between 10ms and 5s,
// observed by a log-linear probe (1ms to 10s by tens, 10 steps) and by a
// uniform probe of the same dMax and 1000 bins (10ms). Every quantile of the
// log-linear probe's observed ΔQ is within one bucket width of the sample's
// own quantile; the uniform probe reads the 60 % below 10ms as spread over
// its first bin, is under-resolved, and misses the low quantiles by more
// than the log-linear bucket there (1ms).
func TestLogLinearProbeResolvesEveryMagnitude(t *testing.T) {
	cfg := Config{
		LookupLayout: func(name string) (deltaq.Layout, bool) {
			if name == "ll" {
				return deltaq.Layout{DMaxNs: issueLayout.High, LogLinear: issueLayout}, true
			}
			return deltaq.Layout{DMaxNs: int64(10 * time.Second), Bins: 1000}, name == "uniform"
		},
	}
	r := rand.New(rand.NewPCG(3, 5))
	const n = 20000
	delays := make([]int64, n)
	var ins []Instance
	var sum float64
	for i := range delays {
		lo, hi := 1e-3, 1e-2
		if i%5 >= 3 {
			lo, hi = 1e-2, 5
		}
		d := int64(math.Exp(math.Log(lo)+r.Float64()*(math.Log(hi)-math.Log(lo))) * 1e9)
		delays[i] = d
		sum += float64(d) / 1e9
		for _, p := range []string{"ll", "uniform"} {
			// What the processor writes: a log-linear probe's spans carry
			// its dMax and no bins.
			in := Instance{Probe: p, Outcome: Success, Start: 0, End: d}
			if p == "ll" && i == 0 {
				in.DMaxNs = issueLayout.High
			}
			ins = append(ins, in)
		}
	}
	slices.Sort(delays)
	res := single(t, cfg, ins)
	ll, uni := probeOf(t, res, "ll"), probeOf(t, res, "uniform")

	if !slices.Equal(ll.Edges, llquantizeEdges()) {
		t.Fatalf("edges %v, want llquantize's %v", ll.Edges, llquantizeEdges())
	}
	if ll.Width != 1e-3 || ll.Bins != 10000 || ll.Observed == nil || ll.Observed.Bins() != 10000 {
		t.Fatalf("grid %g × %d, want the finest, 1ms × 10000", ll.Width, ll.Bins)
	}
	var total uint64
	for _, c := range ll.BinCounts {
		total += c
	}
	if len(ll.BinCounts) != len(ll.Edges) || total != n || ll.Counts != (Counts{Success: n}) ||
		math.Abs(ll.SuccessSum-sum) > 1e-6 {
		t.Fatalf("%d bucket counts of %d edges, total %d, counts %+v, sum %v; want %d successes summing to %v",
			len(ll.BinCounts), len(ll.Edges), total, ll.Counts, ll.SuccessSum, n, sum)
	}
	// The analysis reads neither display: the uniform probe's low
	// quantiles are as exact as the log-linear one's.
	if ll.UnderResolved || uni.UnderResolved {
		t.Errorf("under-resolved: log-linear %v, uniform %v; want false, false", ll.UnderResolved, uni.UnderResolved)
	}
	for k, q := range ll.Quantiles {
		if u := uni.Quantiles[k]; u != q {
			t.Errorf("quantile %v: log-linear probe %+v, uniform probe %+v: the analysis depends on the display", q.Q, q, u)
		}
	}

	edges := append([]float64{0}, ll.Edges...)
	var worstUniform, worstLogLinear float64
	for _, q := range []float64{0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75, 0.9, 0.99} {
		truth := float64(delays[int(math.Ceil(q*n))-1]) / 1e9
		j := sort.SearchFloat64s(edges, truth)
		if j < len(edges) && edges[j] == truth {
			j++
		}
		bucket := edges[j] - edges[j-1]
		got, ok := ll.Observed.Quantile(q)
		worstLogLinear = math.Max(worstLogLinear, math.Abs(got-truth)/bucket)
		if !ok || math.Abs(got-truth) > bucket {
			t.Errorf("log-linear q%g = %gs, sample %gs: more than the bucket width %gs apart", q, got, truth, bucket)
		}
		if q <= 0.5 {
			u, _ := uni.Observed.Quantile(q)
			worstUniform = math.Max(worstUniform, math.Abs(u-truth))
		}
	}
	t.Logf("log-linear: worst quantile error %.2f bucket widths; uniform: worst low-end error %gs", worstLogLinear, worstUniform)
	if worstUniform <= 1e-3 {
		t.Errorf("the uniform 10ms bins miss the low quantiles by at most %gs; want more than a 1ms bucket", worstUniform)
	}
}

// TestLogLinearProbeInADiagram: `job = a -> b` with a log-linear a (half
// its delays at 1.5ms, half at 2.5s) and a uniform b (all at 50ms, 1ms
// bins) still calculates: whatever their displays, both are composed on
// the diagram's analysis grid, and by hand the job completes by 100ms with
// probability ½ (a's fast half plus b's 50ms), not before 2s with more,
// and surely by 3.1s (a's slow half plus 50 ms). job, of no layout of its
// own, is shown on deltaq.AnalysisBins bins up to the largest dMax, a's
// 10 s.
func TestLogLinearProbeInADiagram(t *testing.T) {
	cfg := Config{
		Diagram:      "job = a -> b;",
		LookupLayout: lookupLogLinear(map[string]deltaq.LogLinear{"a": issueLayout}),
		Probes:       map[string]ProbeConfig{"b": {DMax: testDMax, Bins: testBins}},
	}
	var ins []Instance
	for i := range 100 {
		d := 1500 * time.Microsecond
		if i%2 == 1 {
			d = 2500 * time.Millisecond
		}
		ins = append(ins, Instance{Probe: "a", Outcome: Success, End: int64(d)},
			Instance{Probe: "b", Outcome: Success, End: int64(50 * time.Millisecond)})
	}
	job := probeOf(t, single(t, cfg, ins), "job")
	if job.Calculated == nil {
		t.Fatal("job has no calculated ΔQ")
	}
	c := job.Calculated
	if w := deltaq.AnalysisWidth(issueLayout.High); math.Abs(c.Width()-w) > 1e-15 {
		t.Errorf("calculated ΔQ of %d bins of %gs, want bins of %gs", c.Bins(), c.Width(), w)
	}
	for _, p := range []struct{ x, want float64 }{{0.1, 0.5}, {2, 0.5}, {3.1, 1}} {
		if got := c.CDF(p.x); math.Abs(got-p.want) > 1e-9 {
			t.Errorf("F_job(%gs) = %v, want %v", p.x, got, p.want)
		}
	}
}

// TestLogLinearSpansElsewhere: the spans of a log-linear probe carry its
// dMax and no bins. An engine that learns the probe's buckets from the
// registry counts them without calling them rebinned; one in another
// collector, with no layout for the probe, cannot follow them and refuses
// them, counted as invalid; and a log-linear probe's window goes to a
// gateway that pins the same buckets (Probes binning), which merges its
// bucket counts exactly.
func TestLogLinearSpansElsewhere(t *testing.T) {
	in := Instance{Probe: "ll", Outcome: Success, Start: 0, End: int64(3 * time.Millisecond), DMaxNs: issueLayout.High}
	here := newEngine(t, Config{LookupLayout: lookupLogLinear(map[string]deltaq.LogLinear{"ll": issueLayout})}, time.Time{})
	addAll(here, in, in)
	if st := here.Stats(); st.Counted != 2 || st.Rebinned != 0 {
		t.Errorf("registry: %+v, want 2 counted and none rebinned", st)
	}
	b := here.Begin()
	if a := testing.AllocsPerRun(1000, func() { b.Add(&in) }); a != 0 {
		t.Errorf("Add allocates %v times per instance of a log-linear probe", a)
	}
	b.End()
	l, ok := here.Layout("ll")
	if !ok || l.DMax() != 10*time.Second || l.Bins != 0 || l.LogLinear != issueLayout {
		t.Errorf("Layout = %+v, %v; want 10s, no bins, the buckets", l, ok)
	}
	res := here.Flush(time.Time{})
	p := probeOf(t, res[0], "ll")
	w, ok := WindowOf(res[0], p, "agent")
	if !ok || w.LogLinear != issueLayout || w.Bins != len(p.BinCounts) || w.DMaxNs != issueLayout.High {
		t.Fatalf("WindowOf = %+v, %v; want the log-linear window", w, ok)
	}
	bin := &deltaq.BinningConfig{Kind: deltaq.BinningLogLinear, Factor: issueLayout.Factor, Low: time.Duration(issueLayout.Low),
		High: time.Duration(issueLayout.High), Steps: issueLayout.Steps}
	gw := newEngine(t, Config{Probes: map[string]ProbeConfig{"ll": {Binning: bin}}}, time.Time{})
	if c := gw.AddWindow(&w); c != ContributionAccepted {
		t.Fatalf("the gateway's fate for the log-linear window: %v", c)
	}
	got := probeOf(t, gw.Flush(time.Time{})[0], "ll")
	if !reflect.DeepEqual(got.BinCounts, p.BinCounts) || got.Counts != p.Counts || got.SuccessSum != p.SuccessSum {
		t.Errorf("merged %v %+v %v, want %v %+v %v", got.BinCounts, got.Counts, got.SuccessSum, p.BinCounts, p.Counts, p.SuccessSum)
	}

	elsewhere := newEngine(t, Config{}, time.Time{})
	addAll(elsewhere, in)
	if st := elsewhere.Stats(); st.Counted != 0 || st.Dropped[DropInvalid] != 1 {
		t.Errorf("another collector: %+v, want the instance refused as invalid", st)
	}
}

// TestLogLinearBounds: a log-linear probe's bounds hold for its instances
// wherever they lie in their buckets. e2e = a -> b with a log-linear
// (issueLayout, grid of deltaq.MaxGridBins) and b on a uniform grid; 400
// traces whose delays are drawn log-uniformly over 1 ms to 1 s. At every
// grid edge t ≤ 1 s, the exact CDF of the composition of the two samples
// (all 400² sums aᵢ + bⱼ: the convolution of the empirical CDFs, which the
// calculated ΔQ approximates) lies between the calculated ΔQ's pessimistic
// bound and its optimistic bound read from the left (deltaq.Bounds,
// Strict), and the bounds' width is reported.
func TestLogLinearBounds(t *testing.T) {
	cfg := Config{
		Diagram:      "e2e = a -> b;",
		LookupLayout: lookupLogLinear(map[string]deltaq.LogLinear{"a": issueLayout}),
		Probes:       map[string]ProbeConfig{"b": {DMax: 10 * time.Second, Bins: 1000}, "e2e": {DMax: 20 * time.Second, Bins: 1000}},
	}
	r := rand.New(rand.NewPCG(5, 6))
	var ins []Instance
	var as, bs, sums []float64
	end := int64(time.Minute)
	for range 400 {
		a := time.Duration(math.Exp(math.Log(1e6) + r.Float64()*math.Log(1e3)))
		b := time.Duration(math.Exp(math.Log(1e6) + r.Float64()*math.Log(1e3)))
		ins = append(ins, Instance{Probe: "a", Outcome: Success, Start: end - int64(a), End: end},
			Instance{Probe: "b", Outcome: Success, Start: end - int64(b), End: end},
			Instance{Probe: "e2e", Outcome: Success, Start: end - int64(a+b), End: end})
		as, bs = append(as, a.Seconds()), append(bs, b.Seconds())
	}
	for _, x := range as {
		for _, y := range bs {
			sums = append(sums, x+y)
		}
	}
	sort.Float64s(sums)
	p := probeOf(t, single(t, cfg, ins), "e2e")
	if p.Bounds == nil {
		t.Fatal("no bounds")
	}
	w := p.Bounds.Pessimistic.Width()
	for k := 1; float64(k)*w <= 1; k++ {
		tt := float64(k) * w
		f := float64(sort.SearchFloat64s(sums, tt+1e-12)) / float64(len(sums))
		lo := p.Bounds.Pessimistic.CDF(tt)
		hi := p.Bounds.Optimistic.CDF(tt - w/2) // from the left, at a grid edge
		if f < lo-1e-12 || f > hi+1e-12 {
			t.Fatalf("exact F(%v) = %v outside the bounds [%v, %v]", tt, f, lo, hi)
		}
	}
	t.Logf("bounds' width %.3f on a %v s grid", p.BoundsWidth, w)
}
