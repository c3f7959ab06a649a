// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"encoding/binary"
	"math"
	"testing"
)

// floatsFrom reads little-endian float64s (any bit pattern, NaN and Inf
// included) from raw.
func floatsFrom(raw []byte) []float64 {
	out := make([]float64, 0, len(raw)/8)
	for len(raw) >= 8 {
		out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
		raw = raw[8:]
	}
	return out
}

// FuzzConstructors feeds arbitrary parameters to every constructor: each
// must either return an error or a well-formed ΔQ, never panic or NaN.
func FuzzConstructors(f *testing.F) {
	f.Add(1e-3, 0.0015, 0.004, 10, []byte{})
	f.Add(0.0, -1.0, math.NaN(), 0, []byte{1, 2, 3})
	f.Add(1e-9, 1e9, math.Inf(1), MaxBins+1, make([]byte, 24))
	f.Fuzz(func(t *testing.T, width, x, y float64, bins int, raw []byte) {
		if bins > MaxBins+10 || bins < -10 {
			bins = bins % (MaxBins + 10)
		}
		if len(raw) > 1<<12 {
			raw = raw[:1<<12] // bound the cost of one run
		}
		fs := floatsFrom(raw)
		check := func(name string, d DeltaQ, err error) {
			if err == nil {
				checkInvariants(t, name, d)
			}
		}
		d, err := New(width, fs)
		check("New", d, err)
		d, err = FromCDF(width, fs)
		check("FromCDF", d, err)
		d, err = Never(width, bins)
		check("Never", d, err)
		d, err = Point(x, width, bins)
		check("Point", d, err)
		if err == nil {
			// One binning rule: a single instance at x lands where Point
			// puts x (a timeout when Point is all intangible).
			if o, err := FromInstances(width, bins, []float64{x}, 0, 0); err != nil {
				t.Fatalf("FromInstances(%v) failed where Point succeeded: %v", x, err)
			} else if pp, po := d.PDF(), o.PDF(); len(pp) != len(po) {
				t.Fatalf("Point(%v) has %d bins, FromInstances %d", x, len(pp), len(po))
			} else {
				for i := range pp {
					if pp[i] != po[i] {
						t.Fatalf("Point(%v) pdf %v, FromInstances %v", x, pp, po)
					}
				}
			}
		}
		d, err = Uniform(x, y, width, bins)
		check("Uniform", d, err)
		d, err = Exponential(x, width, bins)
		check("Exponential", d, err)
		var steps []Step
		for i := 0; i+1 < len(fs); i += 2 {
			steps = append(steps, Step{fs[i], fs[i+1]})
		}
		d, err = Steps(steps, width, bins)
		check("Steps", d, err)
		d, err = FromInstances(width, bins, fs, int64(len(raw)%3), int64(len(raw)%2))
		check("FromInstances", d, err)
		if h, err := NewHistogram(width, bins); err == nil {
			for _, v := range fs {
				h.Add(v)
			}
			if d, err := h.DeltaQ(); err == nil {
				checkInvariants(t, "Histogram", d)
			}
		}
		if w, err := WidthFor(x, bins); err == nil && !(w > 0) {
			t.Fatalf("WidthFor(%v, %d) = %v", x, bins, w)
		}
		if w, err := ThesisWidth(bins%32, bins); err == nil && !(w > 0) {
			t.Fatalf("ThesisWidth = %v", w)
		}
		if q, err := NewQTA(steps, y); err == nil {
			if d, err := q.RequiredDeltaQ(1e-3, 100); err == nil {
				checkInvariants(t, "QTA.RequiredDeltaQ", d)
				if d.Intangible() > q.MaxFailure+1e-9 {
					t.Fatalf("QTA.RequiredDeltaQ intangible %v above MaxFailure %v", d.Intangible(), q.MaxFailure)
				}
			}
		}
	})
}

// decodeDQ reads a small ΔQ from data: a width exponent, a bin count, the
// bin weights and a tangible fraction, one byte each. It returns the rest.
func decodeDQ(data []byte) (DeltaQ, []byte) {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	w := math.Ldexp(1e-3, int(next()%5)-2)
	n := 1 + int(next()%80)
	p := make([]float64, n)
	s := 0.0
	for i := range p {
		p[i] = float64(next())
		s += p[i]
	}
	tangible := float64(next()) / 255
	if s > 0 {
		for i := range p {
			p[i] *= tangible / s
		}
	}
	d, err := New(w, p)
	if err != nil {
		panic(err) // the decoder only builds valid input
	}
	return d, data
}

// FuzzOperators runs every operator on ΔQs decoded from arbitrary bytes and
// arbitrary float parameters: errors are allowed, panics, NaN and malformed
// results are not.
func FuzzOperators(f *testing.F) {
	f.Add([]byte{2, 3, 10, 20, 30, 200, 1, 2, 5, 250, 128}, 0.5, 2.0, 0.001)
	f.Add([]byte{0, 0, 0, 0}, math.NaN(), math.Inf(1), -1.0)
	f.Add([]byte{4, 79, 255, 255, 255, 255, 0, 79, 1, 1, 1, 1, 255}, 1.0, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, data []byte, x, y, z float64) {
		if len(data) > 1<<10 {
			data = data[:1<<10]
		}
		a, rest := decodeDQ(data)
		b, rest := decodeDQ(rest)
		c, _ := decodeDQ(rest)
		type result struct {
			name string
			f    func() (DeltaQ, error)
		}
		ops := []result{
			{"Convolve", func() (DeltaQ, error) { return Convolve(a, b) }},
			{"ConvolveDirect", func() (DeltaQ, error) { return ConvolveDirect(a, b) }},
			{"ConvolveFFT", func() (DeltaQ, error) { return ConvolveFFT(a, b) }},
			{"FirstToFinish", func() (DeltaQ, error) { return FirstToFinish(a, b, c) }},
			{"AllToFinish", func() (DeltaQ, error) { return AllToFinish(a, b, c) }},
			{"Choice", func() (DeltaQ, error) { return Choice([]float64{x, 1 - x}, []DeltaQ{a, b}) }},
			{"Scale", func() (DeltaQ, error) { return Scale(a, x) }},
			{"Rebin", func() (DeltaQ, error) { return Rebin(a, y) }},
			{"Truncate", func() (DeltaQ, error) { return Truncate(a, int(z*100)) }},
			{"TimeTransform", func() (DeltaQ, error) { return TimeTransform(a, y, z) }},
			{"Deconvolve", func() (DeltaQ, error) { return Deconvolve(a, b) }},
			{"Merge", func() (DeltaQ, error) { return Merge(a, b) }},
		}
		for _, op := range ops {
			d, err := op.f()
			if err == nil {
				checkInvariants(t, op.name, d)
			}
		}
		fd, err1 := ConvolveDirect(a, b)
		ff, err2 := ConvolveFFT(a, b)
		if err1 == nil && err2 == nil {
			pd, pf := fd.PDF(), ff.PDF()
			for i := range pd {
				if math.Abs(pd[i]-pf[i]) > 1e-9 {
					t.Fatalf("bin %d: direct %v, FFT %v", i, pd[i], pf[i])
				}
			}
		}
		if dist, err := Distance(a, b); err == nil {
			if math.IsNaN(dist) || dist < 0 || dist > 1 {
				t.Fatalf("Distance = %v", dist)
			}
			if back, _ := Distance(b, a); back != dist {
				t.Fatalf("Distance not symmetric: %v and %v", dist, back)
			}
		}
		if self, err := Distance(a, a); err != nil || self != 0 {
			t.Fatalf("Distance to itself = %v, %v", self, err)
		}
		if cmp, err := Compare(a, b); err == nil && (math.IsNaN(cmp.Slack+cmp.Hazard) || cmp.Slack < 0 || cmp.Hazard < 0) {
			t.Fatalf("Compare = %+v", cmp)
		}
		for _, op := range []func(DeltaQ, DeltaQ) (Curve, error){AddECDF, SubECDF, MulECDF} {
			if cv, err := op(a, b); err == nil {
				for _, v := range cv.Values {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Fatalf("ECDF arithmetic gave %v", v)
					}
				}
			}
		}
		if bd, err := Band([]DeltaQ{a, b, c}); err == nil {
			for i := range bd.Mean {
				if math.IsNaN(bd.Lower[i] + bd.Mean[i] + bd.Upper[i]) {
					t.Fatalf("Band NaN at %d", i)
				}
			}
		}
		if q, err := NewQTA([]Step{{math.Abs(x), math.Abs(y)}}, math.Abs(z)); err == nil {
			if chk, err := q.Check(a); err == nil {
				for _, p := range chk.Points {
					if math.IsNaN(p.Observed + p.Shortfall + p.ObservedDelay) {
						t.Fatalf("QTA check NaN: %+v", chk)
					}
				}
			}
		}
	})
}
