// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// The differential test of the calculated ΔQ: seeded random outcome
// diagrams (sequences, first-to-finish, all-to-finish and choices nested
// up to four deep) over outcomes of random distributions, evaluated by
// Evaluate and by a Monte Carlo simulation of the same diagram that samples
// every outcome's true delay and combines the samples as the operators
// define it (Haeri et al., "Mind Your Outcomes: The ΔQSD Paradigm for
// Quality-Centric Systems Development", 2022): a sequence adds its delays,
// a first-to-finish takes the least, an all-to-finish the greatest, a
// choice picks a branch by its probability, and a failure (an outcome's
// intangible mass, or a delay beyond its dMax) is an infinite delay.
//
// With n samples the empirical CDF is within ε = √(ln(2/α)/(2n)) of the
// true one everywhere with probability at least 1 − α (the
// Dvoretzky–Kiefer–Wolfowitz inequality, Massart's constant). The test
// checks, at every bin edge t > 0 of the results:
//
//   - the bounds, the diagram evaluated on the outcomes' pessimistic and
//     optimistic ΔQs (as the analysis engine computes them), contain the
//     simulated CDF: F_pess(t) − ε ≤ F_mc(t) and F_mc(t⁻) ≤ F_opt + ε, read
//     from the left when every outcome is Spread (deltaq.Bounds.Strict);
//   - the calculated ΔQ lies within those bounds;
//   - where the calculation is exact at its edges (diffNode.exact), the
//     calculated CDF is within ε of the simulated one.

// diffSamples is the number of simulated instances of each diagram, and
// diffAlpha the probability that one diagram's empirical CDF leaves the DKW
// band of the true one.
const (
	diffSamples = 40000
	diffAlpha   = 1e-9
)

// dkw returns the DKW half-width for n samples at level diffAlpha.
func dkw(n int) float64 { return math.Sqrt(math.Log(2/diffAlpha) / (2 * float64(n))) }

// Exactness of a calculated ΔQ relative to the true distribution: the
// operators are exact at bin edges when their operands' masses are
// uniform within their bins or at edges (sequential composition splits a
// product of two uniform bins exactly in half between two bins, and the
// other operators combine CDFs edge by edge), and every operand is on one
// grid.
const (
	inexact   = iota
	atEdges   // exact at every bin edge, not in between
	uniformIn // exact at edges and uniform within every bin
	pointsAt  // point masses at edges: exact everywhere
)

// diffLeaf is an outcome with a true delay distribution and the ΔQ the
// code is given for it.
type diffLeaf struct {
	name   string
	dq     deltaq.DeltaQ
	exact  int
	sample func(r *rand.Rand) float64 // +Inf for a failure
	desc   string
}

// diffWidths are the outcomes' bin widths: whole multiples of each other
// and not (1.5 ms against 1 ms), so that Align's rebinning is exercised.
var diffWidths = []float64{0.5e-3, 1e-3, 1.5e-3, 2e-3, 3e-3}

// sampleBins samples a bin of the ΔQ whose cumulative masses are cum, or
// −1 for the intangible mass.
func sampleBins(r *rand.Rand, cum []float64) int {
	u := r.Float64()
	if i := sort.Search(len(cum), func(i int) bool { return cum[i] > u }); i < len(cum) {
		return i
	}
	return -1
}

// cutAt makes a delay beyond dMax a failure, as the ΔQ does.
func cutAt(d, dmax float64) float64 {
	if d > dmax*(1+1e-12) {
		return math.Inf(1)
	}
	return d
}

// randomLeaf returns an outcome of a random distribution on a random grid,
// its true distribution put where the ΔQ's constructor documents it.
func randomLeaf(t *testing.T, r *rand.Rand, name string, width float64) diffLeaf {
	bins := 2 + r.IntN(40)
	dmax := width * float64(bins)
	must := func(d deltaq.DeltaQ, err error) deltaq.DeltaQ {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	l := diffLeaf{name: name}
	switch k := r.IntN(9); k {
	case 0, 1: // an observed ΔQ: masses spread uniformly over their bins, some failure
		pdf := make([]float64, bins)
		tot := 0.0
		for i := range pdf {
			if r.IntN(3) > 0 {
				pdf[i] = r.Float64()
				tot += pdf[i]
			}
		}
		tangible := 1.0
		if r.IntN(2) == 0 {
			tangible = r.Float64()
		}
		for i := range pdf {
			if tot > 0 {
				pdf[i] *= tangible / tot
			}
		}
		l.dq = must(deltaq.New(width, pdf))
		p := l.dq.CDFEdges(nil)
		l.sample = func(r *rand.Rand) float64 {
			i := sampleBins(r, p)
			if i < 0 {
				return math.Inf(1)
			}
			// Uniform over (i·w, (i+1)·w].
			return (float64(i) + 1 - r.Float64()) * width
		}
		l.exact, l.desc = uniformIn, fmt.Sprintf("spread %v", l.dq)
	case 2: // a constant delay on a bin edge, 0 and dMax included, or beyond dMax
		e := r.IntN(bins + 2)
		d := float64(e) * width
		l.dq = must(deltaq.Point(d, width, bins))
		l.sample = func(*rand.Rand) float64 { return cutAt(d, dmax) }
		l.exact, l.desc = pointsAt, fmt.Sprintf("point(%g) %v", d, l.dq)
	case 3: // a constant delay inside a bin
		d := (float64(r.IntN(bins)) + 0.1 + 0.8*r.Float64()) * width
		l.dq = must(deltaq.Point(d, width, bins))
		l.sample = func(*rand.Rand) float64 { return d }
		l.exact, l.desc = atEdges, fmt.Sprintf("point(%g) %v", d, l.dq)
	case 4: // uniform, possibly reaching beyond dMax
		lo := r.Float64() * dmax
		hi := lo + r.Float64()*dmax
		l.dq = must(deltaq.Uniform(lo, hi, width, bins))
		l.sample = func(r *rand.Rand) float64 { return cutAt(lo+(hi-lo)*r.Float64(), dmax) }
		l.exact, l.desc = atEdges, fmt.Sprintf("uniform(%g, %g) %v", lo, hi, l.dq)
	case 5: // exponential, its tail beyond dMax a timeout
		mean := dmax * (0.05 + r.Float64())
		l.dq = must(deltaq.Exponential(mean, width, bins))
		l.sample = func(r *rand.Rand) float64 { return cutAt(r.ExpFloat64()*mean, dmax) }
		l.exact, l.desc = atEdges, fmt.Sprintf("exp(%g) %v", mean, l.dq)
	case 6: // never completes
		l.dq = must(deltaq.Never(width, bins))
		l.sample = func(*rand.Rand) float64 { return math.Inf(1) }
		l.exact, l.desc = pointsAt, fmt.Sprintf("never %v", l.dq)
	case 7: // observed instances, some on bin edges, some beyond dMax, timeouts and failures
		n := 1 + r.IntN(30)
		delays := make([]float64, n)
		for i := range delays {
			if r.IntN(3) == 0 {
				delays[i] = float64(1+r.IntN(bins+1)) * width
			} else {
				delays[i] = r.Float64() * 1.2 * dmax
			}
		}
		timeouts, failures := int64(r.IntN(3)), int64(r.IntN(2))
		l.dq = must(deltaq.FromInstances(width, bins, delays, timeouts, failures))
		all := int(int64(n) + timeouts + failures)
		l.sample = func(r *rand.Rand) float64 {
			if i := r.IntN(all); i < n {
				return cutAt(delays[i], dmax)
			}
			return math.Inf(1)
		}
		l.exact, l.desc = atEdges, fmt.Sprintf("instances %v %v", delays, l.dq)
	default: // a step CDF, steps on edges and inside bins
		var steps []deltaq.Step
		p := 0.0
		for range 1 + r.IntN(4) {
			p = math.Min(1, p+r.Float64()*0.6)
			d := r.Float64() * dmax * 1.1
			if r.IntN(2) == 0 {
				d = float64(1+r.IntN(bins)) * width
			}
			steps = append(steps, deltaq.Step{Delay: d, P: p})
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i].Delay < steps[j].Delay })
		// Keep the probabilities non-decreasing in delay order.
		for i := 1; i < len(steps); i++ {
			steps[i].P = math.Max(steps[i].P, steps[i-1].P)
		}
		l.dq = must(deltaq.Steps(steps, width, bins))
		l.sample = func(r *rand.Rand) float64 {
			u := r.Float64()
			for _, s := range steps {
				if u < s.P {
					return cutAt(s.Delay, dmax)
				}
			}
			return math.Inf(1)
		}
		l.exact, l.desc = atEdges, fmt.Sprintf("steps %v %v", steps, l.dq)
	}
	return l
}

// diffNode is a component of a random diagram: an outcome, or an operator
// over branches that are chains.
type diffNode struct {
	leaf     *diffLeaf
	op       OpKind
	name     string
	weights  []int // choice weights, in twentieths
	branches [][]*diffNode
	samples  []float64 // an operator's simulated delays
}

type diffGen struct {
	t       *testing.T
	r       *rand.Rand
	leaves  []*diffLeaf
	opNodes []*diffNode
	widths  []float64 // the widths this diagram draws from
	budget  int       // outcomes left to draw before components are outcomes only
}

func (g *diffGen) leaf() *diffNode {
	l := randomLeaf(g.t, g.r, fmt.Sprintf("o%d", len(g.leaves)+1), g.widths[g.r.IntN(len(g.widths))])
	g.leaves = append(g.leaves, &l)
	return &diffNode{leaf: &l}
}

// chain returns a chain of one to three components, operators only above
// depth 0.
func (g *diffGen) chain(depth int) []*diffNode {
	n := 1 + g.r.IntN(3)
	if depth <= 0 || len(g.leaves) >= g.budget {
		n = 1 + g.r.IntN(2)
	}
	out := make([]*diffNode, n)
	for i := range out {
		out[i] = g.component(depth)
	}
	return out
}

func (g *diffGen) component(depth int) *diffNode {
	if depth <= 0 || g.r.IntN(3) == 0 || len(g.leaves) >= g.budget {
		return g.leaf()
	}
	n := &diffNode{op: []OpKind{AllToFinish, FirstToFinish, Choice}[g.r.IntN(3)], name: fmt.Sprintf("x%d", len(g.opNodes)+1)}
	g.opNodes = append(g.opNodes, n)
	k := 2 + g.r.IntN(2)
	for range k {
		n.branches = append(n.branches, g.chain(depth-1))
	}
	if n.op == Choice {
		// k weights of whole twentieths, each ≥ 1, summing to 20.
		n.weights = make([]int, k)
		left := 20
		for i := range n.weights {
			w := left - (k - 1 - i)
			if i < k-1 {
				w = 1 + g.r.IntN(left-(k-1-i))
			}
			n.weights[i] = w
			left -= w
		}
	}
	return n
}

func writeDiffChain(b *strings.Builder, c []*diffNode) {
	for i, n := range c {
		if i > 0 {
			b.WriteString(" -> ")
		}
		if n.leaf != nil {
			b.WriteString(n.leaf.name)
			continue
		}
		fmt.Fprintf(b, "%c:%s", n.op.Letter(), n.name)
		if n.op == Choice {
			b.WriteString("[")
			for j, w := range n.weights {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.FormatFloat(float64(w)/20, 'f', -1, 64))
			}
			b.WriteString("]")
		}
		b.WriteString("(")
		for j, br := range n.branches {
			if j > 0 {
				b.WriteString(", ")
			}
			writeDiffChain(b, br)
		}
		b.WriteString(")")
	}
}

// sampleChain draws one delay of a chain: the sum of its components'.
func sampleChain(r *rand.Rand, c []*diffNode) float64 {
	s := 0.0
	for _, n := range c {
		s += sampleNode(r, n)
	}
	return s
}

func sampleNode(r *rand.Rand, n *diffNode) float64 {
	if n.leaf != nil {
		return n.leaf.sample(r)
	}
	x := sampleOp(r, n)
	n.samples = append(n.samples, x)
	return x
}

func sampleOp(r *rand.Rand, n *diffNode) float64 {
	switch n.op {
	case AllToFinish:
		m := 0.0
		for _, b := range n.branches {
			m = math.Max(m, sampleChain(r, b))
		}
		return m
	case FirstToFinish:
		m := math.Inf(1)
		for _, b := range n.branches {
			m = math.Min(m, sampleChain(r, b))
		}
		return m
	default:
		u := r.IntN(20)
		for i, w := range n.weights {
			if u < w {
				return sampleChain(r, n.branches[i])
			}
			u -= w
		}
		panic("weights do not sum to 20")
	}
}

// chainExact and nodeExact return how exact the calculation of a chain or
// component is (inexact … pointsAt), every outcome on one grid.
func chainExact(c []*diffNode) int {
	e := nodeExact(c[0])
	for _, n := range c[1:] {
		f := nodeExact(n)
		switch {
		case e == pointsAt:
			e = f
		case f == pointsAt:
		case e == uniformIn && f == uniformIn:
			// Two uniform bins sum to a triangle split in half between
			// two bins: exact at the edges, not uniform within.
			e = atEdges
		default:
			e = inexact
		}
	}
	return e
}

func nodeExact(n *diffNode) int {
	if n.leaf != nil {
		return n.leaf.exact
	}
	e := pointsAt
	for _, b := range n.branches {
		e = min(e, chainExact(b))
	}
	if e == uniformIn && n.op != Choice {
		// The product of linear CDFs is not linear within a bin.
		e = atEdges
	}
	return e
}

// mcCDF is the empirical CDF of sorted samples at t, counting the samples
// within a relative 1e-9 of t (sums of edges carry rounding) when incl.
func mcCDF(sorted []float64, t float64, incl bool) float64 {
	lim := t * (1 - 1e-9)
	if incl {
		lim = t * (1 + 1e-9)
	}
	return float64(sort.Search(len(sorted), func(i int) bool { return sorted[i] > lim })) / float64(len(sorted))
}

func TestEvaluateDifferential(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 40
	}
	exactChecked := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		// Half the diagrams on one grid, where the exactness of the
		// operators shows; the other half over several widths.
		widths := []float64{diffWidths[r.IntN(len(diffWidths))]}
		if seed%2 == 1 {
			widths = diffWidths
		}
		g := &diffGen{t: t, r: r, widths: widths, budget: 4 + r.IntN(9)}
		root := g.chain(1 + r.IntN(4))
		var b strings.Builder
		b.WriteString("system = ")
		writeDiffChain(&b, root)
		b.WriteString(";\n")
		src := b.String()
		what := func() string {
			var s strings.Builder
			fmt.Fprintf(&s, "seed %d: %s", seed, src)
			for _, l := range g.leaves {
				fmt.Fprintf(&s, "  %s = %s\n", l.name, l.desc)
			}
			return s.String()
		}
		d, err := Parse("diff.dq", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", what(), err)
		}
		inputs, pess, opt := map[string]deltaq.DeltaQ{}, map[string]deltaq.DeltaQ{}, map[string]deltaq.DeltaQ{}
		strict := true
		for _, l := range g.leaves {
			inputs[l.name], pess[l.name], opt[l.name] = l.dq, l.dq.Pessimistic(), l.dq.Optimistic()
			strict = strict && l.dq.Placement() == deltaq.Spread
		}
		evs := make([]*Evaluation, 3)
		for i, in := range []map[string]deltaq.DeltaQ{inputs, pess, opt} {
			if evs[i], err = d.Evaluate(in); err != nil {
				t.Fatal(err)
			}
		}
		// The system, and every operator on the samples of its own.
		sys := &diffNode{name: "system", branches: [][]*diffNode{root}}
		for range diffSamples {
			sys.samples = append(sys.samples, sampleChain(r, root))
		}
		nodes := append([]*diffNode{sys}, g.opNodes...)
		for _, n := range nodes {
			var dqs [3]deltaq.DeltaQ
			for i, ev := range evs {
				res, ok := ev.Result(n.name)
				if !ok || !res.OK {
					t.Fatalf("%s: %s not calculated: %v", what(), n.name, res.Err)
				}
				dqs[i] = res.DeltaQ
			}
			exact := len(widths) == 1
			if n == sys {
				exact = exact && chainExact(root) >= atEdges
			} else {
				exact = exact && nodeExact(n) >= atEdges
			}
			if exact {
				exactChecked++
			}
			if len(n.samples) < diffSamples/8 {
				// An operator inside choices, too seldom reached to say much.
				continue
			}
			sort.Float64s(n.samples)
			if msg := checkAgainstSamples(n.samples, dqs[0], dqs[1], dqs[2], strict, exact); msg != "" {
				t.Fatalf("%s: %s: %s", what(), n.name, msg)
			}
		}
	}
	if exactChecked < seeds/4 {
		t.Fatalf("only %d exact calculations to compare in %d diagrams", exactChecked, seeds)
	}
}

// checkAgainstSamples compares the calculated ΔQ calc and its bounds
// [bp, bo] with the sorted simulated delays at every edge of the three
// grids, and returns what is wrong, or "".
func checkAgainstSamples(samples []float64, calc, bp, bo deltaq.DeltaQ, strict, exact bool) string {
	diffEps := dkw(len(samples))
	upper := func(x float64) float64 {
		if strict {
			// F_opt(x⁻), edges within 1e-9 taken as on x.
			return bo.CDF(x * (1 - 1e-7))
		}
		return bo.CDF(x)
	}
	for _, grid := range []deltaq.DeltaQ{calc, bp, bo} {
		for k := 1; k <= grid.Bins(); k++ {
			tk := float64(k) * grid.Width()
			in, below := mcCDF(samples, tk, true), mcCDF(samples, tk, false)
			if p := bp.CDF(tk); p > in+diffEps {
				return fmt.Sprintf("at %g the pessimistic bound %g is above the simulated CDF %g (ε %.3g)", tk, p, in, diffEps)
			}
			if o := upper(tk); in > o+diffEps {
				return fmt.Sprintf("at %g the simulated CDF %g is above the optimistic bound %g (ε %.3g)", tk, in, o, diffEps)
			}
			if o := bo.CDF(tk * (1 - 1e-7)); below > o+diffEps {
				return fmt.Sprintf("at %g⁻ the simulated CDF %g is above the optimistic bound %g (ε %.3g)", tk, below, o, diffEps)
			}
			c := calc.CDF(tk)
			if p, o := bp.CDF(tk), bo.CDF(tk); c < p-1e-9 || c > o+1e-9 {
				return fmt.Sprintf("at %g the calculated CDF %g is outside its bounds [%g, %g]", tk, c, p, o)
			}
			if exact && grid.Width() == calc.Width() && math.Abs(c-in) > diffEps {
				return fmt.Sprintf("at %g the calculated CDF %g, simulated %g (ε %.3g)", tk, c, in, diffEps)
			}
		}
	}
	return ""
}
