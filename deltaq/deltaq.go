// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Parameters of the thesis's bin layout (thesis §5.1.1, (5.3)):
// dMax = DeltaBase·2ⁿ·N with n ∈ [MinExponent, MaxExponent] and
// N ∈ [1, MaxThesisBins]. N ∈ [1, 1000] is the thesis's range (§4.1.2);
// n ∈ [−10, 10] is the range the project's design fixes. The processor's
// configuration checks its exponent and bins against these.
const (
	// DeltaBase is Δbase, the base bin width of 1 ms, in seconds.
	DeltaBase = 1e-3
	// MinExponent is the smallest exponent n of the bin width Δbase·2ⁿ.
	MinExponent = -10
	// MaxExponent is the largest exponent n of the bin width Δbase·2ⁿ.
	MaxExponent = 10
	// MaxThesisBins is the largest bin count N of the thesis parameterisation.
	MaxThesisBins = 1000
	// MaxBins is the hard limit on the bin count of any ΔQ, including the
	// result of a convolution (which has N_A + N_B bins).
	MaxBins = 1 << 16
)

// Tolerances used throughout the package.
const (
	// massTol is the slack allowed on a total probability mass above one
	// before it is rejected (accumulated rounding of sums of many bins).
	massTol = 1e-9
	// widthTol is the relative tolerance under which two bin widths are equal.
	widthTol = 1e-9
	// cdfTol is the absolute tolerance used when comparing CDF values.
	cdfTol = 1e-12
)

// ErrEmpty is returned when a ΔQ is requested from no instances at all: an
// empty window says nothing about delay and must not be read as a ΔQ whose
// mass sits at zero delay.
var ErrEmpty = errors.New("deltaq: no outcome instances")

// ErrTooManyBins is what errors.Is finds in the error of an operation whose
// result would hold more than MaxBins bins (a convolution spans the sum of
// its operands' ranges): fewer, wider bins fit.
var ErrTooManyBins = errors.New("deltaq: result above MaxBins bins")

// tooManyBins is the error of a convolution whose result would hold more
// than MaxBins bins.
type tooManyBins struct {
	op   string
	a, b int
}

func (e *tooManyBins) Error() string {
	return fmt.Sprintf("deltaq: %s: result of %d + %d bins exceeds MaxBins = %d", e.op, e.a, e.b, MaxBins)
}

func (e *tooManyBins) Is(target error) bool { return target == ErrTooManyBins }

// DeltaQ is an immutable improper delay distribution: N bins of width w
// holding masses pᵢ ≥ 0 with Σpᵢ ≤ 1, the rest 1 − Σpᵢ being the intangible
// mass (failure and timeout). See the package documentation, and
// docs/design.md ("The ΔQ value"), for the binning convention. The zero
// value is not a valid ΔQ: its reading methods return zeros and operators
// reject it with an error.
type DeltaQ struct {
	width float64
	pdf   []float64
	// cum[i] = Σ_{j≤i} pⱼ: the CDF at the right edge of bin i for Spread
	// and UpperEdges, at its left edge for LowerEdges.
	cum   []float64
	count int64
	at    Placement
}

// Placement says where the mass of a bin lies within it.
type Placement uint8

const (
	// Spread: the mass of bin i is spread uniformly over (i·w, (i+1)·w],
	// the convention for observed ΔQs (see docs/design.md, "The ΔQ value").
	Spread Placement = iota
	// UpperEdges: the mass of bin i is a point mass at its upper edge
	// (i+1)·w. Point gives it for a delay on an edge, and it is the
	// pessimistic bound of a binned ΔQ (Pessimistic).
	UpperEdges
	// LowerEdges: the mass of bin i is a point mass at its lower edge
	// i·w. Point(0) gives it, and it is the optimistic bound of a binned
	// ΔQ (Optimistic).
	LowerEdges
)

// String returns "spread", "upper edges" or "lower edges".
func (p Placement) String() string {
	switch p {
	case UpperEdges:
		return "upper edges"
	case LowerEdges:
		return "lower edges"
	}
	return "spread"
}

// ThesisWidth returns the bin width w = Δbase·2ⁿ of the thesis
// parameterisation (5.3), checking n ∈ [MinExponent, MaxExponent] and
// bins ∈ [1, MaxThesisBins]. The corresponding dMax is w·bins.
func ThesisWidth(exponent, bins int) (float64, error) {
	if exponent < MinExponent || exponent > MaxExponent {
		return 0, fmt.Errorf("deltaq: exponent %d outside [%d, %d]", exponent, MinExponent, MaxExponent)
	}
	if bins < 1 || bins > MaxThesisBins {
		return 0, fmt.Errorf("deltaq: bin count %d outside [1, %d]", bins, MaxThesisBins)
	}
	return math.Ldexp(DeltaBase, exponent), nil
}

// WidthFor returns the bin width w = dmax/bins for a ΔQ of bins bins
// covering [0, dmax]. dmax must be finite and positive and bins within
// [1, MaxBins].
func WidthFor(dmax float64, bins int) (float64, error) {
	if !(dmax > 0) || math.IsInf(dmax, 0) {
		return 0, fmt.Errorf("deltaq: dMax %v must be finite and > 0", dmax)
	}
	if err := checkBins(bins); err != nil {
		return 0, err
	}
	w := dmax / float64(bins)
	if !(w > 0) {
		return 0, fmt.Errorf("deltaq: dMax %v over %d bins gives a zero width", dmax, bins)
	}
	return w, nil
}

func checkWidth(width float64) error {
	if !(width > 0) || math.IsInf(width, 0) {
		return fmt.Errorf("deltaq: bin width %v must be finite and > 0", width)
	}
	return nil
}

func checkBins(bins int) error {
	if bins < 1 || bins > MaxBins {
		return fmt.Errorf("deltaq: bin count %d outside [1, %d]", bins, MaxBins)
	}
	return nil
}

func checkShape(width float64, bins int) error {
	if err := checkWidth(width); err != nil {
		return err
	}
	if err := checkBins(bins); err != nil {
		return err
	}
	if math.IsInf(width*float64(bins), 0) {
		return fmt.Errorf("deltaq: dMax = %v·%d overflows", width, bins)
	}
	return nil
}

func checkDelay(name string, d float64) error {
	if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
		return fmt.Errorf("deltaq: %s %v must be finite and ≥ 0", name, d)
	}
	return nil
}

// snapInt returns x, or the integer within a relative 1e-9 of it (within
// 1e-9 near zero): the tolerance with which a quotient of widths or times
// that is a whole number in exact arithmetic is taken as one.
func snapInt(x float64) float64 {
	// ⌊x + ½⌋ rather than math.Round, whose call would keep snapInt from
	// being inlined into the CDF's look-up: the two differ only where x is
	// half-way, far from any whole number.
	if r := math.Floor(x + 0.5); math.Abs(x-r) <= 1e-9*max(1, math.Abs(r)) {
		return r
	}
	return x
}

// binIndex returns the upper-inclusive bin of a delay d ≥ 0 given as
// x = d/w: ⌈x⌉ − 1 for x > 0 (bin i covers (i·w, (i+1)·w]) and 0 for x = 0.
// An x within a relative 1e-9 of an integer is taken as that integer, so
// that delays given as exact multiples of the width (0.003 s on 1 ms bins,
// where 0.003/0.001 rounds to 2.9999999999999996, or 0.005/0.001 to
// 5.000000000000001) land in the bin they close despite rounding. The
// result is a float64 so that huge or infinite x can be compared with the
// bin count before any conversion to int; x = +Inf gives +Inf.
//
// Only an x just above an integer f, its nearest, moves (to bin f − 1):
// one nearest to the integer above, c, is in bin c − 1 = ⌊x⌋ anyway. So
// the bin is ⌊x⌋, less one when x − ⌊x⌋ is below one half and within the
// tolerance, and never below 0. Floor is an instruction on amd64 and
// arm64, where Round and Max are calls; the comparisons below give Max's
// results (NaN stays NaN, −0 becomes 0).
func binIndex(x float64) float64 {
	f := math.Floor(x)
	tol := 1e-9
	if f > 1 {
		tol *= f
	}
	// The tolerance first: it almost never holds, so the branch is
	// predicted, where x − ⌊x⌋ < 1/2 is a coin toss.
	if frac := x - f; frac <= tol && frac < 0.5 {
		f--
	}
	if f <= 0 {
		return 0
	}
	return f
}

// newPDF returns a zeroed pdf of n bins with room behind it for the
// cumulative sums, so that build allocates nothing more.
func newPDF(n int) []float64 { return make([]float64, n, 2*n) }

// build makes a DeltaQ from a pdf it takes ownership of, computing the
// cumulative sums (in the pdf's spare capacity when newPDF made it). It
// zeroes entries that are not > 0 and renormalises a total that rounding
// pushed above one. Callers guarantee finite entries.
func build(width float64, pdf []float64, count int64) DeltaQ {
	n := len(pdf)
	var cum []float64
	if cap(pdf) >= 2*n {
		cum = pdf[n : 2*n : 2*n]
		pdf = pdf[:n:n]
	} else {
		cum = make([]float64, n)
	}
	s := 0.0
	for i, p := range pdf {
		if !(p > 0) {
			p = 0
			pdf[i] = 0
		}
		s += p
		cum[i] = s
	}
	if s > 1 {
		// Only rounding can bring us here (inputs are validated); rescale so
		// the tangible mass is at most one.
		inv := 1 / s
		s = 0
		for i := range pdf {
			pdf[i] *= inv
			s += pdf[i]
			cum[i] = min(s, 1)
		}
	}
	return DeltaQ{width: width, pdf: pdf, cum: cum, count: count}
}

// New returns the ΔQ of bin width width whose bin masses are pdf (copied).
// Every mass must be finite and ≥ 0, the total at most 1 (a total up to
// 1 + 1e-9 is taken as rounding and renormalised to 1). The intangible mass
// is 1 − Σ pdf.
func New(width float64, pdf []float64) (DeltaQ, error) {
	if err := checkShape(width, len(pdf)); err != nil {
		return DeltaQ{}, err
	}
	p := newPDF(len(pdf))
	s := 0.0
	for i, v := range pdf {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return DeltaQ{}, fmt.Errorf("deltaq: New: mass %v of bin %d must be finite and ≥ 0", v, i)
		}
		p[i] = v
		s += v
	}
	if s > 1+massTol {
		return DeltaQ{}, fmt.Errorf("deltaq: New: total mass %v exceeds 1", s)
	}
	return build(width, p, 0), nil
}

// FromCDF returns the ΔQ of bin width width whose CDF at the right edge of
// bin i is cdf[i], i.e. pᵢ = cdf[i] − cdf[i−1]. The values must be finite,
// within [0, 1] and non-decreasing (decreases up to 1e-12 are taken as
// rounding and flattened).
func FromCDF(width float64, cdf []float64) (DeltaQ, error) {
	if err := checkShape(width, len(cdf)); err != nil {
		return DeltaQ{}, err
	}
	p := newPDF(len(cdf))
	prev := 0.0
	for i, v := range cdf {
		if math.IsNaN(v) || v < -cdfTol || v > 1+massTol {
			return DeltaQ{}, fmt.Errorf("deltaq: FromCDF: value %v at edge %d outside [0, 1]", v, i)
		}
		if v < prev-cdfTol {
			return DeltaQ{}, fmt.Errorf("deltaq: FromCDF: CDF decreases from %v to %v at edge %d", prev, v, i)
		}
		v = min(max(v, prev), 1) // math.Min and math.Max, inlined
		p[i] = v - prev
		prev = v
	}
	return build(width, p, 0), nil
}

// Never returns the ΔQ of an outcome that never completes: bins empty bins
// of width width, intangible mass 1.
func Never(width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	return build(width, newPDF(bins), 0), nil
}

// Point returns the ΔQ of a constant delay d: mass 1 in the bin that holds d
// under the package's upper-inclusive rule, bin ⌈d/w⌉ − 1 (bin 0 for d = 0).
// A d strictly inside a bin lands in bin ⌊d/w⌋, spread over that bin by the
// uniform-in-bin convention, as FromInstances and Steps give it. A d on a
// bin edge (within a relative 1e-9) is exact: a point mass at that edge
// (UpperEdges, or LowerEdges for d = 0), so that F(d) = 1 and F(t) = 0 for
// t < d, and points compose exactly: Point(2 ms) ⊗ Point(3 ms) on 1 ms bins
// is the point mass at 5 ms, F(5 ms) = 1 and median 5 ms. A delay
// of exactly dMax = bins·width is a success in the last bin (F(dMax) = 1);
// a delay beyond dMax is a timeout, and the result is then all intangible.
func Point(d, width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	if err := checkDelay("Point: delay", d); err != nil {
		return DeltaQ{}, err
	}
	p := newPDF(bins)
	// d·(1/w), as Histogram.Add computes it, so that a delay within
	// rounding of the tolerance's boundary still lands in the same bin.
	x := d * (1 / width)
	if i := binIndex(x); i < float64(bins) {
		p[int(i)] = 1
	}
	out := build(width, p, 0)
	switch r := snapInt(x); {
	case r != math.Floor(r):
		// Inside a bin: spread over it.
	case r == 0:
		out.at = LowerEdges
	default:
		out.at = UpperEdges
	}
	return out, nil
}

// Uniform returns the ΔQ of a delay uniform on [lo, hi]:
// pᵢ = |(i·w, (i+1)·w] ∩ [lo, hi]| / (hi − lo); the part of [lo, hi] beyond
// dMax is intangible. lo = hi is the point mass Point(lo).
func Uniform(lo, hi, width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	if err := checkDelay("Uniform: lo", lo); err != nil {
		return DeltaQ{}, err
	}
	if err := checkDelay("Uniform: hi", hi); err != nil {
		return DeltaQ{}, err
	}
	if hi < lo {
		return DeltaQ{}, fmt.Errorf("deltaq: Uniform: hi %v < lo %v", hi, lo)
	}
	if hi == lo {
		return Point(lo, width, bins)
	}
	p := newPDF(bins)
	span := hi - lo
	first := int(math.Min(math.Floor(lo/width), float64(bins)))
	for i := first; i < bins; i++ {
		a := math.Max(lo, float64(i)*width)
		b := math.Min(hi, float64(i+1)*width)
		if b <= a {
			if float64(i)*width >= hi {
				break
			}
			continue
		}
		p[i] = (b - a) / span
	}
	return build(width, p, 0), nil
}

// Exponential returns the ΔQ of an exponential delay of the given mean:
// pᵢ = e^{−i·w/mean} − e^{−(i+1)·w/mean}; the tail e^{−dMax/mean} beyond
// dMax is intangible (a timeout).
func Exponential(mean, width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	if !(mean > 0) || math.IsInf(mean, 0) {
		return DeltaQ{}, fmt.Errorf("deltaq: Exponential: mean %v must be finite and > 0", mean)
	}
	p := newPDF(bins)
	// pᵢ = e^{−i·w/mean}·(1 − e^{−w/mean}), with expm1 for small w/mean.
	q := -math.Expm1(-width / mean)
	for i := range p {
		p[i] = math.Exp(-float64(i)*width/mean) * q
	}
	return build(width, p, 0), nil
}

// Step is one point of a step CDF: the CDF reaches P at delay Delay.
type Step struct {
	Delay float64 // seconds, ≥ 0
	P     float64 // probability in [0, 1]
}

// Steps returns the ΔQ whose CDF is the step function through points: it
// reaches points[k].P at points[k].Delay and stays there until the next
// step. Points may come in any order; sorted by delay their probabilities
// must be non-decreasing and within [0, 1]. The increment of step k is placed
// in the bin that holds its delay under the package's upper-inclusive rule,
// the bin that ends at the first bin edge at or after the delay
// (bin ⌈Delay/w⌉ − 1, bin 0 for Delay = 0), so F(Delay) = P exactly when
// Delay is a bin edge and the CDF never lags the steps by more than a bin. A
// step beyond dMax adds to the intangible mass, as does 1 − max P.
func Steps(points []Step, width float64, bins int) (DeltaQ, error) {
	if err := checkShape(width, bins); err != nil {
		return DeltaQ{}, err
	}
	pts := make([]Step, len(points))
	copy(pts, points)
	for i, s := range pts {
		if err := checkDelay(fmt.Sprintf("Steps: delay of point %d", i), s.Delay); err != nil {
			return DeltaQ{}, err
		}
		if math.IsNaN(s.P) || s.P < 0 || s.P > 1 {
			return DeltaQ{}, fmt.Errorf("deltaq: Steps: probability %v of point %d outside [0, 1]", s.P, i)
		}
	}
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].Delay < pts[j].Delay })
	p := newPDF(bins)
	prev := 0.0
	for k, s := range pts {
		if s.P < prev {
			return DeltaQ{}, fmt.Errorf("deltaq: Steps: probability falls from %v to %v at delay %v (point %d after sorting)", prev, s.P, s.Delay, k)
		}
		if i := binIndex(s.Delay * (1 / width)); i < float64(bins) {
			p[int(i)] += s.P - prev
		}
		prev = s.P
	}
	return build(width, p, 0), nil
}

// FromInstances returns the observed ΔQ of a set of outcome instances
// (thesis §4.1.1): delays of the successes, plus counts of timeouts and
// failures. With n = len(delays) + timeouts + failures,
// pᵢ = #{d : i·w < d ≤ (i+1)·w}/n (d = 0 in bin 0; Histogram.Add states the
// rule and its rounding tolerance), so F((i+1)·w) is the fraction of
// instances with d ≤ (i+1)·w; a delay beyond dMax counts as a timeout.
// Negative or NaN delays and negative counts are errors; no instances at all
// is ErrEmpty. The result's Count is n.
func FromInstances(width float64, bins int, delays []float64, timeouts, failures int64) (DeltaQ, error) {
	h, err := NewHistogram(width, bins)
	if err != nil {
		return DeltaQ{}, err
	}
	if timeouts < 0 || failures < 0 {
		return DeltaQ{}, fmt.Errorf("deltaq: FromInstances: negative count (timeouts %d, failures %d)", timeouts, failures)
	}
	for i, d := range delays {
		if math.IsNaN(d) || d < 0 {
			return DeltaQ{}, fmt.Errorf("deltaq: FromInstances: delay %v of instance %d must be ≥ 0", d, i)
		}
		h.Add(d)
	}
	h.timeouts += timeouts
	h.failures += failures
	return h.DeltaQ()
}

// Width returns the bin width w in seconds.
func (d DeltaQ) Width() float64 { return d.width }

// Bins returns the number of bins N.
func (d DeltaQ) Bins() int { return len(d.pdf) }

// DMax returns dMax = N·w, the delay beyond which an outcome has timed out.
func (d DeltaQ) DMax() float64 { return d.width * float64(len(d.pdf)) }

// Count returns the number of outcome instances the ΔQ was observed from,
// 0 for a ΔQ built from a model or computed by an operator.
func (d DeltaQ) Count() int64 { return d.count }

// PDF returns a copy of the bin masses p₀ … p_{N−1}.
func (d DeltaQ) PDF() []float64 {
	out := make([]float64, len(d.pdf))
	copy(out, d.pdf)
	return out
}

// Tangible returns the total mass of the bins, Σpᵢ = F(dMax): the
// probability that the outcome completes within dMax.
func (d DeltaQ) Tangible() float64 {
	if len(d.cum) == 0 {
		return 0
	}
	return d.cum[len(d.cum)-1]
}

// Intangible returns the intangible mass 1 − Σpᵢ (thesis §2.1.2): the
// probability of failure or timeout. It is 1 for the zero value.
func (d DeltaQ) Intangible() float64 { return math.Max(0, 1-d.Tangible()) }

// CDF returns F(t), the probability that the outcome completes within delay
// t. For Spread masses it interpolates linearly inside a bin (uniform-in-bin
// convention): F(t) = 0 for t ≤ 0, F(t) = Σ_{j<i}pⱼ + pᵢ·(t − i·w)/w inside
// bin i, and F(t) = Σpᵢ for t ≥ dMax. For point masses at edges it is the
// step function F(t) = Σ{pᵢ : eᵢ ≤ t}, eᵢ the edge holding pᵢ, a t within a
// relative 1e-9 of an edge taken as on it. NaN t gives 0.
func (d DeltaQ) CDF(t float64) float64 {
	n := len(d.pdf)
	if d.at != Spread {
		if n == 0 || !(t >= 0) {
			return 0
		}
		// Edges k·w ≤ t: k = ⌊t/w⌋, with the edge tolerance.
		return d.edgeCDF(math.Floor(snapInt(t / d.width)))
	}
	i, f, where := locate(n, d.width, t)
	switch where {
	case beforeStart:
		return 0
	case pastEnd:
		return d.cum[n-1]
	}
	base := 0.0
	if i > 0 {
		base = d.cum[i-1]
	}
	return min(base+d.pdf[i]*f, d.cum[n-1]) // math.Min, inlined
}

// edgeCDF returns F(k·w) at the edge k (a whole number ≥ 0, possibly beyond
// the last edge N): exact for every placement at every edge.
func (d DeltaQ) edgeCDF(k float64) float64 {
	n := float64(len(d.pdf))
	if len(d.pdf) == 0 || k < 0 {
		return 0
	}
	if d.at == LowerEdges {
		return d.cum[int(min(k, n-1))]
	}
	if k < 1 {
		return 0
	}
	return d.cum[int(min(k, n)-1)]
}

// Pessimistic returns the pessimistic bound of d's binning: every bin's
// mass moved to its upper edge (UpperEdges), the slowest delays the
// instances of each bin can have had. Its CDF is at or below that of any
// distribution with d's bin masses, and equal to d's at every edge. A ΔQ
// whose masses already sit at edges is exact and is its own bound.
func (d DeltaQ) Pessimistic() DeltaQ {
	if d.at == Spread {
		d.at = UpperEdges
	}
	return d
}

// Optimistic returns the optimistic bound of d's binning: every bin's mass
// moved to its lower edge (LowerEdges), the fastest delays the instances of
// each bin can have had. Its CDF is at or above that of any distribution
// with d's bin masses. A ΔQ whose masses already sit at edges is exact and
// is its own bound, written at lower edges: a point at the upper edge of
// bin i is the point at the lower edge of bin i + 1 (a bin beyond dMax
// holds a point at dMax, within MaxBins). Coarsening (Rebin, when operands
// of different widths meet) moves a point at a lower edge down and one at
// an upper edge up, so only that form stays optimistic: Point(3 ms) on
// 1 ms bins, kept at its upper edge, would become a point at 4 ms on 2 ms
// bins, slower than the outcome it bounds.
//
// The operators are monotone in the stochastic order (a slower operand
// never makes a sequence, a first-to-finish, an all-to-finish or a choice
// faster), so composing the pessimistic bounds of the inputs by the same
// operators gives a ΔQ that is slower than the exact composition of any
// inputs within their bins, and the optimistic bounds one that is faster:
// an approximation with a direction, in the partial order of ΔQs that ΔQSD
// reasons with (Haeri et al., "Mind Your Outcomes", 2022). Sequences of
// edge masses are exact (Convolve), so the bounds carry no error of their
// own.
func (d DeltaQ) Optimistic() DeltaQ {
	switch d.at {
	case Spread:
		d.at = LowerEdges
	case UpperEdges:
		n := len(d.pdf)
		if d.pdf[n-1] > 0 && n < MaxBins {
			n++
		}
		p := newPDF(n)
		copy(p[1:], d.pdf)
		if n == len(d.pdf) {
			// No bin beyond: a point at dMax (with MaxBins bins) moves
			// down to the last lower edge, which keeps it a bound.
			p[n-1] += d.pdf[n-1]
		}
		out := build(d.width, p, d.count)
		out.at = LowerEdges
		return out
	}
	return d
}

// Placement returns where the mass of each bin lies: Spread for observed
// and most calculated ΔQs, at its upper or lower edge for point masses on
// edges and for the bounds Pessimistic and Optimistic.
func (d DeltaQ) Placement() Placement { return d.at }

// edgeSpread returns d as a Spread ΔQ with the same CDF at every edge k·w,
// k ≥ 1: the form the operators that read the CDF at right edges work on.
// Only a LowerEdges ΔQ changes: its bin i ≥ 1 moves to bin i − 1 and bin 0
// stays (its point at 0 is then read as within the first bin).
func (d DeltaQ) edgeSpread() DeltaQ {
	switch d.at {
	case UpperEdges:
		d.at = Spread
		return d
	case LowerEdges:
		p := newPDF(len(d.pdf))
		p[0] = d.pdf[0]
		for i := 1; i < len(d.pdf); i++ {
			p[i-1] += d.pdf[i]
		}
		return build(d.width, p, d.count)
	}
	return d
}

// Where a delay lies on a grid of bins, for locate.
const (
	inBin       = iota
	beforeStart // t ≤ 0, NaN, or no bins
	pastEnd     // t ≥ n·w
)

// locate places delay t on n bins of width w: in bin i = ⌊t/w⌋ at the
// fraction f = t/w − i of it, or before the first bin, or past the last.
// The CDF and the ECDF curves read their piecewise-linear values from it.
func locate(n int, w, t float64) (i int, f float64, where int) {
	if n == 0 || !(t > 0) {
		return 0, 0, beforeStart
	}
	x := t / w
	if x >= float64(n) {
		return 0, 0, pastEnd
	}
	i = int(x)
	return i, x - float64(i), inBin
}

// CDFEdges writes F((i+1)·w) for i = 0 … N−1, the CDF at the right edge of
// every bin, into dst (grown if too short) and returns it.
func (d DeltaQ) CDFEdges(dst []float64) []float64 {
	if cap(dst) < len(d.cum) {
		dst = make([]float64, len(d.cum))
	}
	dst = dst[:len(d.cum)]
	if d.at == LowerEdges {
		for i := range dst {
			dst[i] = d.edgeCDF(float64(i + 1))
		}
		return dst
	}
	copy(dst, d.cum)
	return dst
}

// CDFEdgesAt appends to dst F((i+1)·w) for each bin i of idx, 0 ≤ i < N:
// CDFEdges at those right edges alone, without the others.
func (d DeltaQ) CDFEdgesAt(dst []float64, idx []int) []float64 {
	for _, i := range idx {
		if d.at == LowerEdges {
			dst = append(dst, d.edgeCDF(float64(i+1)))
		} else {
			dst = append(dst, d.cum[i])
		}
	}
	return dst
}

// quantileUlps is the tolerance of Quantile, in units in the last place of
// q: a CDF value within 4·ε·q below q (ε = 2⁻⁵²) reaches q. A cumulative sum
// of bin masses carries about that much rounding (six masses of 1/12 sum to
// 0.49999999999999994), while the CDF of a window of n instances, counted
// (Histogram.DeltaQ), is k/n correctly rounded, which differs from a q it
// does not equal by far more than 4 ulps for any n below 2⁵⁰.
const quantileUlps = 4

// reaches reports whether a CDF value c reaches probability q, within
// quantileUlps.
func reaches(c, q float64) bool {
	return c >= q-quantileUlps*0x1p-52*q
}

// Least returns the least delay of the completed instances, as far as d
// knows it: the limit of Quantile(q) as q falls to 0, the left edge of the
// first bin with mass (its right edge for UpperEdges). For Spread masses
// the instances' least delay lies in that bin, (i·w, (i+1)·w], so it is
// known to within one bin, and Least is its lower bound. ok is false when
// nothing completed.
func (d DeltaQ) Least() (delay float64, ok bool) {
	for i, m := range d.pdf {
		if m > 0 {
			if d.at == UpperEdges {
				i++
			}
			return float64(i) * d.width, true
		}
	}
	return 0, false
}

// Quantile returns the smallest delay t with F(t) ≥ q (reading F within
// quantileUlps of q as reaching it). For Spread masses it interpolates
// inside the first bin i whose right edge reaches q, and the result lies in
// (i·w, (i+1)·w], the bin of the true quantile of the instances the ΔQ was
// counted from; for point masses at edges it is the first edge that
// reaches q. When q exceeds the tangible mass the quantile is unreachable:
// the outcome does not complete that often within dMax, and ok is false
// (the delay is then not dMax, it is unknown). q outside [0, 1] or NaN also
// gives ok = false.
func (d DeltaQ) Quantile(q float64) (delay float64, ok bool) {
	n := len(d.pdf)
	if n == 0 || math.IsNaN(q) || q < 0 || q > 1 {
		return 0, false
	}
	tot := d.cum[n-1]
	if q > tot+cdfTol {
		return 0, false
	}
	if q <= 0 {
		return 0, true
	}
	q = min(q, tot)
	// First bin whose cumulative mass reaches q.
	i := sort.Search(n, func(j int) bool { return reaches(d.cum[j], q) })
	i = min(i, n-1)
	switch d.at {
	case UpperEdges:
		return float64(i+1) * d.width, true
	case LowerEdges:
		return float64(i) * d.width, true
	}
	base := 0.0
	if i > 0 {
		base = d.cum[i-1]
	}
	frac := 1.0
	if d.pdf[i] > 0 {
		frac = min(max((q-base)/d.pdf[i], 0), 1)
	}
	// Keep the result inside bin i, (i·w, (i+1)·w], also when frac is
	// lost to rounding.
	lo, hi := float64(i)*d.width, float64(i+1)*d.width
	t := (float64(i) + frac) * d.width
	if t <= lo {
		t = math.Nextafter(lo, hi)
	}
	return math.Min(t, hi), true
}

// Mean returns the mean delay of the successful part, Σpᵢ·(i+½)·w / Σpᵢ
// (bin midpoints, the uniform-in-bin mean; the edges for point masses at
// edges). ok is false when no mass is
// tangible.
func (d DeltaQ) Mean() (mean float64, ok bool) {
	tot := d.Tangible()
	if !(tot > 0) {
		return 0, false
	}
	// Where the mass of bin i lies: its midpoint, or an edge.
	off := 0.5
	switch d.at {
	case UpperEdges:
		off = 1
	case LowerEdges:
		off = 0
	}
	s := 0.0
	for i, p := range d.pdf {
		s += p * (float64(i) + off)
	}
	return s / tot * d.width, true
}

// String summarises the ΔQ for logs and test failures.
func (d DeltaQ) String() string {
	if len(d.pdf) == 0 {
		return "ΔQ{}"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ΔQ{w=%gs N=%d dMax=%gs intangible=%.6g", d.width, len(d.pdf), d.DMax(), d.Intangible())
	if m, ok := d.Mean(); ok {
		fmt.Fprintf(&b, " mean=%gs", m)
	}
	if d.count > 0 {
		fmt.Fprintf(&b, " n=%d", d.count)
	}
	if d.at != Spread {
		fmt.Fprintf(&b, " at %s", d.at)
	}
	b.WriteString("}")
	return b.String()
}

// valid reports whether d is an initialised ΔQ, naming the operand in the
// error.
func (d DeltaQ) valid(op string, idx int) error {
	if len(d.pdf) == 0 || !(d.width > 0) {
		return fmt.Errorf("deltaq: %s: operand %d is the zero ΔQ (not built by a constructor)", op, idx)
	}
	return nil
}

// Truncate returns d cut to its first bins bins: the mass beyond the new
// dMax becomes intangible (a timeout), or, when bins exceeds d.Bins(), d
// extended with empty bins. Count is kept.
func Truncate(d DeltaQ, bins int) (DeltaQ, error) {
	if err := d.valid("Truncate", 0); err != nil {
		return DeltaQ{}, err
	}
	if err := checkShape(d.width, bins); err != nil {
		return DeltaQ{}, err
	}
	p := newPDF(bins)
	copy(p, d.pdf)
	out := build(d.width, p, d.count)
	out.at = d.at
	return out, nil
}
