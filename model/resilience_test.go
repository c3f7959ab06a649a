// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/whatif"
)

// montecarlo samples a model's root operation as the system it describes
// would run: every node's exclusive time drawn from its ΔQ (a bin by its
// mass, uniform within the bin (i·w, (i+1)·w], the intangible mass a
// failure), a pattern drawn by its frequency, the calls of a step in
// parallel (the last to finish ends the step), the steps in sequence; any
// failure fails the span. wrap replaces the span of a node by a resilience
// pattern around independent draws of it, counting the attempts.
type montecarlo struct {
	m        *Model
	rng      *rand.Rand
	wrap     map[string]whatif.Intervention
	attempts int // attempts of the wrapped nodes
	calls    int // calls of the wrapped nodes
}

// draw samples a Dist of the model: ok false for the intangible mass.
func (s *montecarlo) draw(d *Dist) (float64, bool) {
	u := s.rng.Float64()
	for i, p := range d.PDF {
		if u < p {
			return (float64(i) + 1 - s.rng.Float64()) * s.m.BinWidth, true
		}
		u -= p
	}
	return 0, false
}

// span samples the whole span of node n, its calls included.
func (s *montecarlo) span(n *Node) (float64, bool) {
	iv, wrapped := s.wrap[n.Probe]
	if !wrapped {
		return s.plain(n)
	}
	s.calls++
	d := math.Max(1, math.Round(iv.D/s.m.BinWidth)) * s.m.BinWidth
	switch iv.Pattern {
	case whatif.Timeout:
		s.attempts++
		x, ok := s.plain(n)
		return x, ok && x <= d
	case whatif.Retry:
		for j := 0; j <= iv.N; j++ {
			s.attempts++
			if x, ok := s.plain(n); ok && x <= d {
				return float64(j)*d + x, true
			}
		}
		return 0, false
	}
	// Hedge: the second attempt is sent at d unless the first answered.
	s.attempts++
	x, ok := s.plain(n)
	if ok && x <= d {
		return x, true
	}
	s.attempts++
	y, ok2 := s.plain(n)
	switch {
	case ok && ok2:
		return math.Min(x, d+y), true
	case ok:
		return x, true
	case ok2:
		return d + y, true
	}
	return 0, false
}

// plain samples node n's span without a pattern around it.
func (s *montecarlo) plain(n *Node) (float64, bool) {
	t, ok := s.draw(&n.Exclusive)
	if len(n.Patterns) == 0 {
		return t, ok
	}
	total := uint64(0)
	for _, p := range n.Patterns {
		total += p.Count
	}
	u := s.rng.Uint64N(total)
	k := 0
	for u >= n.Patterns[k].Count {
		u -= n.Patterns[k].Count
		k++
	}
	for _, step := range n.Patterns[k].Steps {
		longest := 0.0
		for _, c := range step {
			cn, _ := s.m.Node(c)
			d, cok := s.span(cn)
			ok = ok && cok
			longest = math.Max(longest, d)
		}
		t += longest
	}
	return t, ok
}

// TestResilienceAgainstMonteCarlo checks timeout(D), retry(N, D) and
// hedge(D) on the shop model, on a call with calls of its own (pay.charge,
// which calls bank.debit; 2 % of its instances fail) and on a leaf
// (stock.check): the end-to-end ΔQ the diagram predicts is within a KS
// distance of 0.008 of a Monte Carlo of the same model (200,000 requests:
// the Dvoretzky–Kiefer–Wolfowitz bound at 99.99 % is 0.0050; the rest is
// the binning of the convolutions; measured at most 0.0022), its failure
// mass within 0.005 (five standard errors of a share near 0.3), and the
// expected extra attempts per call (formulas in package whatif) within
// five standard errors of the Monte Carlo's count.
func TestResilienceAgainstMonteCarlo(t *testing.T) {
	l, err := NewLearner(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range shopTraces(4000, 11) {
		l.AddRecord(tr)
	}
	l.Finish()
	m, err := Build(l, 400)
	if err != nil {
		t.Fatal(err)
	}
	d, err := m.ParseDiagram()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := m.Node(m.Roots[0])
	const n = 200_000
	for k, text := range []string{
		"pay.charge=timeout(2ms)", "pay.charge=retry(2, 2ms)", "pay.charge=hedge(1.5ms)",
		"stock.check=timeout(1ms)", "stock.check=retry(3, 0.6ms)", "stock.check=hedge(0.8ms)",
	} {
		iv, err := whatif.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		preds, err := m.Predict(d, []whatif.Intervention{iv})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		after := preds[0].After
		target, _ := m.Targets(iv)
		mc := &montecarlo{m: m, rng: rand.New(rand.NewPCG(uint64(k), 5)), wrap: map[string]whatif.Intervention{target[0].Probe: iv}}
		var delays []float64
		failures := int64(0)
		for range n {
			if x, ok := mc.span(root); ok {
				delays = append(delays, x)
			} else {
				failures++
			}
		}
		sim, err := deltaq.FromInstances(m.BinWidth, after.Bins(), delays, 0, failures)
		if err != nil {
			t.Fatal(err)
		}
		ks, err := deltaq.Distance(after, sim)
		if err != nil {
			t.Fatal(err)
		}
		failMC := float64(failures) / n
		t.Logf("%s: KS %.4f, failure %.4f (Monte Carlo %.4f), median %.3f ms (Monte Carlo %.3f ms)", text, ks, after.Intangible(), failMC,
			quantile(t, after, 0.5)*1e3, quantile(t, sim, 0.5)*1e3)
		if ks > 0.008 || math.Abs(after.Intangible()-failMC) > 0.005 {
			t.Errorf("%s: KS %.4f (want ≤ 0.008), failure %.4f against %.4f", text, ks, after.Intangible(), failMC)
		}
		extraMC := float64(mc.attempts-mc.calls) / float64(mc.calls)
		loads := preds[0].Loads
		if iv.Pattern == whatif.Timeout {
			if len(loads) != 0 || mc.attempts != mc.calls {
				t.Errorf("%s: a timeout adds no attempt, got loads %+v", text, loads)
			}
			continue
		}
		// The attempts beyond the first are at most N per call: their
		// standard error is at most N/(2√calls).
		se := float64(max(iv.N, 1)) / (2 * math.Sqrt(float64(mc.calls)))
		if len(loads) != 1 || math.Abs(loads[0].PerCall-extraMC) > 5*se || math.Abs(loads[0].PerRequest-loads[0].PerCall) > 1e-12 {
			t.Errorf("%s: loads %+v, Monte Carlo %.4f extra attempts per call (±%.4f)", text, loads, extraMC, se)
		} else {
			t.Logf("%s: %.4f extra attempts per call (Monte Carlo %.4f)", text, loads[0].PerCall, extraMC)
		}
	}
}

func quantile(t *testing.T, dq deltaq.DeltaQ, q float64) float64 {
	t.Helper()
	v, ok := dq.Quantile(q)
	if !ok {
		return math.NaN()
	}
	return v
}

// TestResilienceKnownAnswers checks the patterns on a ΔQ of known form:
// uniform mass over 10 bins of 1 ms with 10 % failures, so that an attempt
// answers within D = 4 ms with s = 0.36 and q = 0.64.
func TestResilienceKnownAnswers(t *testing.T) {
	pdf := slices.Repeat([]float64{0.09}, 10)
	x, err := deltaq.New(0.001, pdf)
	if err != nil {
		t.Fatal(err)
	}
	const s, q = 0.36, 0.64
	for _, c := range []struct {
		text    string
		failure float64 // closed form, from the formulas of package whatif
		extra   float64
		cdf     map[float64]float64 // F_y(t) at some t
	}{
		{"timeout(4ms)", q, 0, map[float64]float64{0.004: s, 0.009: s}},
		// retry(2, 4ms): F(8ms) = s + q·s, F(12ms) = s + q·s + q²·s.
		{"retry(2, 4ms)", q * q * q, q + q*q, map[float64]float64{0.004: s, 0.008: s + q*s, 0.012: s + q*s + q*q*s}},
		// hedge(4ms): F(t) = 1 − (1 − F(t))(1 − F(t − 4ms)); at 6 ms
		// F = 0.54, F(2 ms) = 0.18.
		{"hedge(4ms)", 0.01, q, map[float64]float64{0.004: s, 0.006: 1 - (1-0.54)*(1-0.18), 0.014: 1 - 0.1*(1-0.9)}},
	} {
		iv, err := whatif.ParseExpr(c.text)
		if err != nil {
			t.Fatal(err)
		}
		y, err := iv.Transform(x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(y.Intangible()-c.failure) > 1e-9 || math.Abs(iv.ExtraAttempts(x)-c.extra) > 1e-12 {
			t.Errorf("%s: failure %v, extra %v; want %v, %v", c.text, y.Intangible(), iv.ExtraAttempts(x), c.failure, c.extra)
		}
		for at, want := range c.cdf {
			if got := y.CDF(at); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s: F(%v) = %v, want %v", c.text, at, got, want)
			}
		}
	}
}
