// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// The differential test of the calculated ΔQ the engine reports: seeded
// random outcome diagrams over outcomes of random layouts (uniform bins of
// several widths and log-linear buckets, some with a dMax below the
// system's and some above), fed instances of random delays (on bin edges,
// beyond their probe's dMax, failures). The system's calculated ΔQ is what
// the operators make of the outcomes' instances (Haeri et al., "Mind Your
// Outcomes: The ΔQSD Paradigm for Quality-Centric Systems Development",
// 2022), each instance at its own delay as long as it lies within the
// outcome's analysis range (the largest dMax of the outcome and of the
// wholes it enters), up to the system's dMax. A Monte Carlo simulation
// draws an instance of every outcome and combines them (a sequence adds,
// a first-to-finish takes the least, an all-to-finish the greatest, a
// choice picks a branch), and the reported bounds must contain its CDF,
// within the DKW half-width of its sample (as in the diagram package's
// TestEvaluateDifferential), and the reported calculated ΔQ must lie
// within its bounds.

// calcNode is a component of a random diagram.
type calcNode struct {
	leaf     string // an outcome, or "" for an operator
	op       byte   // 'a', 'f' or 'p'
	weights  []int  // a choice's, in tenths
	branches [][]*calcNode
}

type calcGen struct {
	r      *rand.Rand
	leaves []string
	ops    int
}

func (g *calcGen) chain(depth int) []*calcNode {
	c := make([]*calcNode, 1+g.r.IntN(2))
	for i := range c {
		if depth == 0 || len(g.leaves) >= 6 || g.r.IntN(2) == 0 {
			g.leaves = append(g.leaves, fmt.Sprintf("o%d", len(g.leaves)+1))
			c[i] = &calcNode{leaf: g.leaves[len(g.leaves)-1]}
			continue
		}
		n := &calcNode{op: "afp"[g.r.IntN(3)]}
		for range 2 {
			n.branches = append(n.branches, g.chain(depth-1))
		}
		if n.op == 'p' {
			w := 1 + g.r.IntN(9)
			n.weights = []int{w, 10 - w}
		}
		c[i] = n
	}
	return c
}

func (g *calcGen) write(b *strings.Builder, c []*calcNode) {
	for i, n := range c {
		if i > 0 {
			b.WriteString(" -> ")
		}
		if n.leaf != "" {
			b.WriteString(n.leaf)
			continue
		}
		g.ops++
		fmt.Fprintf(b, "%c:x%d", n.op, g.ops)
		if n.op == 'p' {
			fmt.Fprintf(b, "[%g, %g]", float64(n.weights[0])/10, float64(n.weights[1])/10)
		}
		b.WriteString("(")
		for j, br := range n.branches {
			if j > 0 {
				b.WriteString(", ")
			}
			g.write(b, br)
		}
		b.WriteString(")")
	}
}

// calcSample draws one delay of a chain from the outcomes' delays (+Inf
// for a failure).
func calcSample(r *rand.Rand, c []*calcNode, delays map[string][]float64) float64 {
	s := 0.0
	for _, n := range c {
		switch {
		case n.leaf != "":
			d := delays[n.leaf]
			s += d[r.IntN(len(d))]
		case n.op == 'a':
			s += math.Max(calcSample(r, n.branches[0], delays), calcSample(r, n.branches[1], delays))
		case n.op == 'f':
			s += math.Min(calcSample(r, n.branches[0], delays), calcSample(r, n.branches[1], delays))
		default:
			if r.IntN(10) < n.weights[0] {
				s += calcSample(r, n.branches[0], delays)
			} else {
				s += calcSample(r, n.branches[1], delays)
			}
		}
	}
	return s
}

// calcLayout returns a random layout for a probe: uniform bins over a dMax
// of 20 to 200 ms, or log-linear buckets up to 100 ms or 1 s.
func calcLayout(r *rand.Rand) ProbeConfig {
	if r.IntN(4) == 0 {
		high := []time.Duration{100 * time.Millisecond, time.Second}[r.IntN(2)]
		return ProbeConfig{Binning: &deltaq.BinningConfig{Kind: deltaq.BinningLogLinear, Factor: 10, Low: high / 100, High: high, Steps: 10}}
	}
	dmax := []time.Duration{20, 30, 50, 100, 200}[r.IntN(5)] * time.Millisecond
	return ProbeConfig{DMax: dmax, Bins: []int{4, 10, 30, 100, 1000}[r.IntN(5)]}
}

func layoutDMax(pc ProbeConfig) int64 {
	if pc.Binning != nil {
		return int64(pc.Binning.High)
	}
	return int64(pc.DMax)
}

func TestCalculatedDifferential(t *testing.T) {
	const (
		perOutcome = 1500  // instances of each outcome
		samples    = 30000 // simulated instances of the system
	)
	eps := math.Sqrt(math.Log(2/1e-9) / (2 * samples))
	statistical(t)
	seeds := 24
	if testing.Short() {
		seeds = 8
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0xca1c))
		g := &calcGen{r: r}
		root := g.chain(1 + r.IntN(3))
		var b strings.Builder
		b.WriteString("system = ")
		g.write(&b, root)
		b.WriteString(";\n")
		src := b.String()

		cfg := Config{Diagram: src, Probes: map[string]ProbeConfig{"system": calcLayout(r)}}
		sysMax := layoutDMax(cfg.Probes["system"])
		var ins []Instance
		delays := map[string][]float64{}
		var desc strings.Builder
		for _, name := range g.leaves {
			pc := calcLayout(r)
			cfg.Probes[name] = pc
			own := layoutDMax(pc)
			// The outcome's analysis range: its wholes are the system and
			// operators, which have no layout here.
			rng := max(own, sysMax)
			width := float64(own) / float64(max(pc.Bins, 100))
			fail := []float64{0, 0, 0.1, 0.5, 1}[r.IntN(5)]
			kind := r.IntN(4)
			fmt.Fprintf(&desc, "  %s: layout %+v, kind %d, failures %g\n", name, pc, kind, fail)
			for range perOutcome {
				var d float64 // ns
				switch kind {
				case 0: // exponential, some beyond dMax
					d = r.ExpFloat64() * float64(own) / 3
				case 1: // on the edges of the outcome's bins, up to twice its dMax
					d = float64(1+r.IntN(2*max(pc.Bins, 100))) * width
				case 2: // a few constant delays
					d = float64(own) * []float64{0.1, 0.5, 1, 1.5}[r.IntN(4)]
				default: // uniform up to its analysis range and a little beyond
					d = r.Float64() * 1.1 * float64(rng)
				}
				d = math.Round(d)
				in := Instance{Probe: name, Outcome: Success, Start: 0, End: int64(d)}
				truth := d / 1e9
				switch {
				case r.Float64() < fail:
					in.Outcome, in.End, truth = Failure, 1, math.Inf(1)
				case d > float64(rng):
					truth = math.Inf(1)
				}
				ins = append(ins, in)
				delays[name] = append(delays[name], truth)
			}
		}
		// A few instances of the system itself: its calculated ΔQ does not
		// read them.
		for k := range 5 {
			ins = append(ins, Instance{Probe: "system", Outcome: Success, Start: 0, End: int64(k+1) * sysMax / 8})
		}
		what := func() string { return fmt.Sprintf("seed %d: %s%s", seed, src, desc.String()) }

		p := probeOf(t, single(t, cfg, ins), "system")
		if p.Calculated == nil || p.Bounds == nil {
			t.Fatalf("%s: no calculated ΔQ or no bounds", what())
		}
		sim := make([]float64, samples)
		for i := range sim {
			sim[i] = calcSample(r, root, delays)
		}
		sort.Float64s(sim)
		if msg := checkCalculated(sim, *p.Calculated, *p.Bounds, float64(sysMax)/1e9, eps); msg != "" {
			t.Fatalf("%s: %s", what(), msg)
		}
	}
}

// ecdf returns the fraction of sorted samples ≤ t (< t when !incl), a
// sample within a relative 1e-9 of t taken as on it.
func ecdf(sorted []float64, t float64, incl bool) float64 {
	lim := t * (1 - 1e-9)
	if incl {
		lim = t * (1 + 1e-9)
	}
	return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > lim })) / float64(len(sorted))
}

// checkCalculated checks, up to the system's dMax, that the bounds contain
// the simulated CDF sim within eps and that calc lies within the bounds,
// and returns what is wrong, or "".
func checkCalculated(sim []float64, calc deltaq.DeltaQ, b deltaq.Bounds, dmax, eps float64) string {
	bp, bo := b.Pessimistic, b.Optimistic
	upper := func(x float64) float64 {
		if b.Strict {
			return bo.CDF(x * (1 - 1e-7))
		}
		return bo.CDF(x)
	}
	w := bp.Width()
	for k := 1; float64(k)*w <= dmax*(1+1e-9) && k <= bp.Bins(); k++ {
		tk := float64(k) * w
		in, below := ecdf(sim, tk, true), ecdf(sim, tk, false)
		if p := bp.CDF(tk); p > in+eps {
			return fmt.Sprintf("at %g the pessimistic bound %g is above the simulated CDF %g (ε %.3g)", tk, p, in, eps)
		}
		if o := upper(tk); in > o+eps {
			return fmt.Sprintf("at %g the simulated CDF %g is above the optimistic bound %g (ε %.3g)", tk, in, o, eps)
		}
		if o := bo.CDF(tk * (1 - 1e-7)); below > o+eps {
			return fmt.Sprintf("at %g⁻ the simulated CDF %g is above the optimistic bound %g (ε %.3g)", tk, below, o, eps)
		}
	}
	for k := 1; k <= calc.Bins(); k++ {
		tk := float64(k) * calc.Width()
		if tk > dmax*(1+1e-9) {
			break
		}
		c := calc.CDF(tk)
		// The bounds are steps at their own edges: the calculated CDF at
		// tk, read between two of them, lies between the pessimistic bound
		// at tk and the optimistic one at the next edge.
		next := math.Ceil(tk/w-1e-9) * w
		if p, o := bp.CDF(tk), bo.CDF(next); c < p-1e-9 || c > o+1e-9 {
			return fmt.Sprintf("at %g the calculated CDF %g is outside its bounds [%g, %g]", tk, c, p, o)
		}
	}
	return ""
}

// TestCalculatedLongChain: a chain of 20 stages, each mostly fast but with
// one instance at 990 ms, a timeout of its own 100 ms dMax within the
// job's 1 s. Every stage reaches 990 ms, so each is read on the diagram's
// grid in 4096 bins, and their sequence spans 20·4096 bins, more than
// deltaq.MaxBins: the job had no calculated ΔQ and no bounds at all. On a
// grid coarse enough for the sequence, its bounds must contain the
// simulated composition of the stages' instances.
func TestCalculatedLongChain(t *testing.T) {
	const stages = 20
	var names []string
	var ins []Instance
	delays := map[string][]float64{}
	var root []*calcNode
	for i := range stages {
		n := fmt.Sprintf("s%d", i)
		names = append(names, n)
		root = append(root, &calcNode{leaf: n})
		for k := range 50 {
			d := int64(k+1) * int64(time.Millisecond) / 10
			ins = append(ins, Instance{Probe: n, Outcome: Success, Start: 0, End: d})
			delays[n] = append(delays[n], float64(d)/1e9)
		}
		ins = append(ins, Instance{Probe: n, Outcome: Success, Start: 0, End: int64(990 * time.Millisecond)})
		delays[n] = append(delays[n], 0.99)
	}
	ins = append(ins, Instance{Probe: "job", Outcome: Success, Start: 0, End: int64(50 * time.Millisecond)})
	cfg := Config{Diagram: "job = " + strings.Join(names, " -> ") + ";", Probes: map[string]ProbeConfig{"job": {DMax: time.Second, Bins: 100}}}
	for _, n := range names {
		cfg.Probes[n] = ProbeConfig{DMax: 100 * time.Millisecond, Bins: 100}
	}
	p := probeOf(t, single(t, cfg, ins), "job")
	if p.Calculated == nil || p.Bounds == nil {
		t.Fatalf("a chain of %d stages reaching 990 ms: calculated ΔQ %v, bounds %v; want both", stages, p.Calculated, p.Bounds)
	}
	const samples = 30000
	r := rand.New(rand.NewPCG(1, 2))
	sim := make([]float64, samples)
	for i := range sim {
		sim[i] = calcSample(r, root, delays)
	}
	sort.Float64s(sim)
	eps := math.Sqrt(math.Log(2/1e-9) / (2 * samples))
	if msg := checkCalculated(sim, *p.Calculated, *p.Bounds, 1, eps); msg != "" {
		t.Fatal(msg)
	}
}
