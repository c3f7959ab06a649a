package deltaq

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// ConfidenceBand is the per-bin mean of the CDFs of a window of K ΔQs with
// a 95 % confidence band (thesis §4.1.5, §5.1.3). All slices hold values at
// the bin edges (i+1)·Width, like DeltaQ.CDFEdges.
type ConfidenceBand struct {
	Width float64
	// K is the number of ΔQs in the window.
	K int
	// Mean is μᵢ = (1/K)·Σⱼ Fⱼ((i+1)·w), itself a CDF (thesis (5.7)).
	Mean []float64
	// Lower and Upper are μᵢ ∓ t(0.975, K−1)·sᵢ/√K clamped to [0, 1], with
	// sᵢ the sample standard deviation (K − 1 in the denominator). This is
	// the Student t interval the thesis's (5.9) misprints as μᵢ·σᵢ/√n. For
	// K = 1 nothing bounds the spread and the band is [0, 1].
	Lower, Upper []float64
}

// Band computes the confidence band of a window of ΔQs, typically the last
// K observed ΔQs of a probe. The window is aligned first (Align); K ≥ 1.
func Band(window []DeltaQ) (ConfidenceBand, error) {
	var b ConfidenceBand
	err := BandInto(&b, window)
	return b, err
}

// BandInto is Band writing into dst, reusing its slices when they are large
// enough: with a window of equal shapes it allocates nothing.
func BandInto(dst *ConfidenceBand, window []DeltaQ) error {
	if len(window) == 0 {
		return fmt.Errorf("deltaq: Band: empty window")
	}
	ds := window
	for i, d := range window {
		if err := d.valid("Band", i); err != nil {
			return err
		}
		if !sameWidth(d.width, window[0].width) {
			al, err := alignWidths("Band", window)
			if err != nil {
				return err
			}
			ds = al
			break
		}
	}
	n := 0
	for _, d := range ds {
		n = max(n, len(d.pdf))
	}
	k := len(ds)
	dst.Width, dst.K = ds[0].width, k
	dst.Mean = resize(dst.Mean, n)
	dst.Lower = resize(dst.Lower, n)
	dst.Upper = resize(dst.Upper, n)
	mean, lo, up := dst.Mean, dst.Lower, dst.Upper
	clear(mean)
	// Two passes (mean, then squared deviations) for accuracy; the sums of
	// squares live in up until the bounds are formed.
	for _, d := range ds {
		c := d.cum
		mm := mean[:len(c)]
		for i, v := range c {
			mm[i] += v
		}
		if last := c[len(c)-1]; len(c) < n {
			for i := len(c); i < n; i++ {
				mean[i] += last // flat beyond its dMax
			}
		}
	}
	inv := 1 / float64(k)
	for i := range mean {
		mean[i] = min(mean[i]*inv, 1)
	}
	if k == 1 {
		for i := range mean {
			lo[i], up[i] = 0, 1
		}
		return nil
	}
	clear(up)
	for _, d := range ds {
		c := d.cum
		mm, uu := mean[:len(c)], up[:len(c)]
		for i, v := range c {
			e := v - mm[i]
			uu[i] += e * e
		}
		if last := c[len(c)-1]; len(c) < n {
			for i := len(c); i < n; i++ {
				e := last - mean[i]
				up[i] += e * e
			}
		}
	}
	// half-width = t·s/√K with s² = Σ(x−μ)²/(K−1).
	f := studentT975(k-1) / math.Sqrt(float64(k)*float64(k-1))
	for i, ss := range up {
		h := f * math.Sqrt(ss)
		lo[i] = math.Max(mean[i]-h, 0)
		up[i] = math.Min(mean[i]+h, 1)
	}
	return nil
}

// MeanDeltaQ returns the window's mean CDF as a ΔQ.
func (b ConfidenceBand) MeanDeltaQ() (DeltaQ, error) {
	return FromCDF(b.Width, b.Mean)
}

func resize(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

var (
	tMu    sync.Mutex
	tCache = map[int]float64{}
)

// studentT975 returns t(0.975, ν), the 97.5 % quantile of Student's t
// distribution with ν degrees of freedom (memoised).
func studentT975(nu int) float64 {
	tMu.Lock()
	defer tMu.Unlock()
	if t, ok := tCache[nu]; ok {
		return t
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(0.975)
	if len(tCache) < 4096 {
		tCache[nu] = t
	}
	return t
}
