// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"strings"
	"testing"
)

// draftExample is the requirement of the worked example of "Quality of
// Outcome" (IETF Internet-Draft draft-ietf-ippm-qoo-10, section 3.4): ROP
// {99 %, 200 ms}, {99.9 %, 300 ms}, 1 % loss; CPUP {99 %, 500 ms},
// {99.9 %, 600 ms}, 5 % loss; minimum throughput 4 (Mbps there).
func draftExample() QoORequirement {
	return QoORequirement{
		Latency: []QoOLatency{
			{Percentile: 0.99, ROP: 0.200, CPUP: 0.500},
			{Percentile: 0.999, ROP: 0.300, CPUP: 0.600},
		},
		ROPLoss: 0.01, CPUPLoss: 0.05,
		MinRate: 4,
	}
}

// TestQoODraftExample reproduces the worked example of "Quality of Outcome"
// (draft-ietf-ippm-qoo-10, section 3.4): measured 99 % = 350 ms,
// 99.9 % = 375 ms, 2 % loss, 28 Mbps → m1 = 0.5, m2 = 0.75, latency 50,
// loss 75, throughput 100, QoO = min(50, 75, 100) = 50.
func TestQoODraftExample(t *testing.T) {
	r := draftExample()
	q, err := r.Score(QoOMeasurement{Latency: []float64{0.350, 0.375}, Loss: 0.02, Rate: 28, HasRate: true})
	if err != nil {
		t.Fatal(err)
	}
	if !q.HasLatency || q.Latency != 50 || q.Worst != 0 {
		t.Errorf("latency %v (worst percentile %d), want 50 set by the 99th", q.Latency, q.Worst)
	}
	if q.Loss != 75 {
		t.Errorf("loss %v, want 75", q.Loss)
	}
	if !q.HasRate || q.Rate != 100 {
		t.Errorf("rate %v (%v), want 100", q.Rate, q.HasRate)
	}
	if q.Score != 50 {
		t.Errorf("QoO %v, want 50", q.Score)
	}
	// m2 alone: 1 − (375 − 300)/(600 − 300) = 0.75.
	r.Latency = r.Latency[1:]
	q, err = r.Score(QoOMeasurement{Latency: []float64{0.375}, Loss: 0.02})
	if err != nil || q.Latency != 75 || q.Score != 75 || q.HasRate {
		t.Errorf("99.9th alone: %+v %v, want latency 75, QoO 75, no rate", q, err)
	}
}

// TestQoODraftExampleFromDeltaQ reads the worked example's measurement
// from a ΔQ: 2 % of instances lost; of the completed ones 99 % uniformly
// within 350 ms, 0.9 % in (350, 375] ms and 0.1 % in (375, 400] ms, so that
// the 99th and 99.9th percentiles over the completed instances are 350 and
// 375 ms ("Quality of Outcome", draft-ietf-ippm-qoo-10, section 3.4).
func TestQoODraftExampleFromDeltaQ(t *testing.T) {
	pdf := make([]float64, 400) // 1 ms bins
	for i := range pdf {
		switch {
		case i < 350:
			pdf[i] = 0.98 * 0.99 / 350
		case i < 375:
			pdf[i] = 0.98 * 0.009 / 25
		default:
			pdf[i] = 0.98 * 0.001 / 25
		}
	}
	d := mk(t)(New(1e-3, pdf))
	q, m, err := draftExample().ScoreDeltaQ(d, 28, true)
	if err != nil {
		t.Fatal(err)
	}
	if !near(m.Latency[0], 0.350, 1e-9) || !near(m.Latency[1], 0.375, 1e-9) || !near(m.Loss, 0.02, 1e-12) {
		t.Fatalf("measured %+v, want 350 ms, 375 ms, 2 %%", m)
	}
	if !near(q.Latency, 50, 1e-6) || !near(q.Loss, 75, 1e-9) || !near(q.Score, 50, 1e-6) {
		t.Errorf("QoO %+v, want latency 50, loss 75, QoO 50", q)
	}
}

// TestQoOClamping checks both ends of the scale ("Quality of Outcome",
// draft-ietf-ippm-qoo-10, sections 3.3.2 and 3.3.3: clamp(0, m, 1)): at or
// better than ROP scores 100, never more; at or worse than CPUP scores 0,
// never less; a rate below the minimum forces 0 (section 3.3.4).
func TestQoOClamping(t *testing.T) {
	r := draftExample()
	cases := []struct {
		name                 string
		m                    QoOMeasurement
		latency, loss, score float64
	}{
		{"well inside ROP", QoOMeasurement{Latency: []float64{0.010, 0.020}, Loss: 0}, 100, 100, 100},
		{"exactly ROP", QoOMeasurement{Latency: []float64{0.200, 0.300}, Loss: 0.01}, 100, 100, 100},
		{"exactly CPUP", QoOMeasurement{Latency: []float64{0.500, 0.600}, Loss: 0.05}, 0, 0, 0},
		{"far beyond CPUP", QoOMeasurement{Latency: []float64{5, 9}, Loss: 1}, 0, 0, 0},
		{"one percentile beyond CPUP", QoOMeasurement{Latency: []float64{0.100, 0.700}, Loss: 0}, 0, 100, 0},
		{"loss only beyond CPUP", QoOMeasurement{Latency: []float64{0.100, 0.200}, Loss: 0.5}, 100, 0, 0},
	}
	for _, c := range cases {
		for _, rate := range []float64{4, 3.99} {
			c.m.Rate, c.m.HasRate = rate, true
			q, err := r.Score(c.m)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			score := c.score
			if rate < r.MinRate {
				score = 0
			}
			if q.Latency != c.latency || q.Loss != c.loss || q.Score != score {
				t.Errorf("%s at rate %v: latency %v, loss %v, QoO %v; want %v, %v, %v", c.name, rate, q.Latency, q.Loss, q.Score, c.latency, c.loss, score)
			}
		}
	}
}

// TestQoOUniform scores a ΔQ uniform on [0, 1 s] of which 2 % is lost:
// over the completed instances the p-th percentile of U(0, 1 s) is p
// seconds exactly (bin edges at every millisecond), so with ROP
// {50 %, 250 ms}, {90 %, 500 ms} and CPUP {50 %, 750 ms}, {90 %, 1.1 s}:
// m₅₀ = 1 − 250/500 = 0.5, m₉₀ = 1 − 400/600 = 1/3, latency 33.3; loss
// 1 − (0.02 − 0.01)/(0.05 − 0.01) = 0.75.
func TestQoOUniform(t *testing.T) {
	d := mk(t)(Scale(mk(t)(Uniform(0, 1, 1e-3, 1000)), 0.98))
	r := QoORequirement{
		Latency: []QoOLatency{{Percentile: 0.5, ROP: 0.25, CPUP: 0.75}, {Percentile: 0.9, ROP: 0.5, CPUP: 1.1}},
		ROPLoss: 0.01, CPUPLoss: 0.05,
	}
	q, m, err := r.ScoreDeltaQ(d, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if !near(m.Latency[0], 0.5, 1e-9) || !near(m.Latency[1], 0.9, 1e-9) {
		t.Errorf("percentiles %v, want 0.5 s and 0.9 s", m.Latency)
	}
	if !near(q.Latency, 100.0/3, 1e-6) || q.Worst != 1 || !near(q.Loss, 75, 1e-9) || !near(q.Score, 100.0/3, 1e-6) {
		t.Errorf("QoO %+v, want latency 33.33 (90th), loss 75", q)
	}
}

// TestQoOExponential scores an exponential delay of mean μ = 100 ms cut at
// dMax = 300 ms: the tail e^{−3} beyond dMax times out and is the loss, and
// the p-th percentile over the completed instances is the quantile of the
// truncated exponential, t = −μ·ln(1 − p·(1 − e^{−3})) (the exponential's
// CDF 1 − e^{−t/μ}). On 1 ms bins the ΔQ's CDF is exact at the edges and
// linear between, which moves a quantile by at most w²/(8μ) (the chord of
// a concave CDF over one bin, divided by the density).
func TestQoOExponential(t *testing.T) {
	const mu, w, dmax = 0.1, 1e-3, 0.3
	d := mk(t)(Exponential(mu, w, 300))
	tangible := 1 - math.Exp(-dmax/mu)
	r := QoORequirement{
		Latency: []QoOLatency{{Percentile: 0.5, ROP: 0.05, CPUP: 0.15}, {Percentile: 0.9, ROP: 0.1, CPUP: 0.3}},
		ROPLoss: 0.01, CPUPLoss: 0.1,
	}
	q, m, err := r.ScoreDeltaQ(d, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	tol := w * w / (8 * mu) * 1.01
	var want [2]float64
	for i, l := range r.Latency {
		exact := -mu * math.Log(1-l.Percentile*tangible)
		if !near(m.Latency[i], exact, tol) {
			t.Errorf("percentile %v: %v s, want %v s within %v", l.Percentile, m.Latency[i], exact, tol)
		}
		want[i] = 100 * (1 - (exact-l.ROP)/(l.CPUP-l.ROP))
	}
	loss := math.Exp(-dmax / mu)
	if !near(m.Loss, loss, 1e-12) {
		t.Errorf("loss %v, want e^-3 = %v", m.Loss, loss)
	}
	// 50th: t = −0.1·ln(1 − 0.5·0.9502) = 0.0645 s → 85.5; 90th:
	// t = −0.1·ln(1 − 0.9·0.9502) = 0.1932 s → 53.4; loss e^{−3} = 0.0498
	// → 55.8.
	wantLatency := math.Min(want[0], want[1])
	wantLoss := 100 * (1 - (loss-0.01)/(0.1-0.01))
	scoreTol := 100 * tol / 0.1 // the steepest percentile, 100 points over 100 ms
	if !near(q.Latency, wantLatency, scoreTol) || q.Worst != 1 || !near(q.Loss, wantLoss, 1e-9) || !near(q.Score, math.Min(wantLatency, wantLoss), scoreTol) {
		t.Errorf("QoO %+v, want latency %v (90th), loss %v", q, wantLatency, wantLoss)
	}
}

// TestQoONothingCompleted: with every instance lost no percentile can be
// read; the loss component scores the ΔQ, 0.
func TestQoONothingCompleted(t *testing.T) {
	d := mk(t)(Never(1e-3, 100))
	q, m, err := draftExample().ScoreDeltaQ(d, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.Latency != nil || q.HasLatency || m.Loss != 1 || q.Loss != 0 || q.Score != 0 {
		t.Errorf("nothing completed: %+v %+v, want no latency, loss 1, QoO 0", q, m)
	}
}

// TestQoOLeast: the 0th percentile, which the QoO draft lists among the
// percentiles a measurement reports (section 3.1.1), is the least delay of
// the completed instances. A ΔQ with no mass below 30 ms on 1 ms bins has
// its instances' least delay in (30, 31] ms: p0 reads 30 ms, the bin's
// lower edge (its upper edge once the masses are put there, Pessimistic),
// and scores it against ROP 20 ms and CPUP 40 ms: 1 − 10/20 = 50.
func TestQoOLeast(t *testing.T) {
	pdf := make([]float64, 100)
	pdf[30], pdf[31], pdf[60] = 0.25, 0.5, 0.2
	d := mk(t)(New(1e-3, pdf))
	r := QoORequirement{Latency: []QoOLatency{{Percentile: 0, ROP: 0.02, CPUP: 0.04}, {Percentile: 1, ROP: 0.05, CPUP: 0.1}},
		ROPLoss: 0.05, CPUPLoss: 0.5}
	if err := r.Validate(); err != nil {
		t.Fatalf("p0 refused: %v", err)
	}
	q, m, err := r.ScoreDeltaQ(d, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if !near(m.Latency[0], 0.030, 1e-12) || !near(m.Latency[1], 0.061, 1e-12) {
		t.Errorf("p0, p100: %v, want 30 ms and 61 ms", m.Latency)
	}
	if !near(q.Latency, 50, 1e-9) || q.Worst != 0 {
		t.Errorf("QoO %+v, want latency 50 set by p0", q)
	}
	if got, ok := d.Pessimistic().Least(); !ok || !near(got, 0.031, 1e-12) {
		t.Errorf("Least of the pessimistic bound %v %v, want 31 ms", got, ok)
	}
	if got, ok := d.Optimistic().Least(); !ok || !near(got, 0.030, 1e-12) {
		t.Errorf("Least of the optimistic bound %v %v, want 30 ms", got, ok)
	}
	// Least is the limit of the quantile as q falls to 0.
	if lo, _ := d.Quantile(1e-9); !(lo > 0.030 && lo-0.030 < 1e-9) {
		t.Errorf("Quantile(1e-9) %v, want just above Least's 30 ms", lo)
	}
	if _, ok := mk(t)(Never(1e-3, 10)).Least(); ok {
		t.Error("Least of a ΔQ where nothing completed is known")
	}
	if got := r.MinInstances(); got != 1 {
		t.Errorf("p0 and p100 need %d instances, want 1", got)
	}
}

func TestQoOMinInstances(t *testing.T) {
	for _, c := range []struct {
		ps   []float64
		want int64
	}{
		{nil, 1}, {[]float64{1}, 1}, {[]float64{0.5}, 2}, {[]float64{0.9, 1}, 10},
		{[]float64{0.5, 0.99}, 100}, {[]float64{0.99, 0.999}, 1000}, {[]float64{0.95}, 20},
	} {
		r := QoORequirement{ROPLoss: 0, CPUPLoss: 1}
		for i, p := range c.ps {
			r.Latency = append(r.Latency, QoOLatency{Percentile: p, ROP: float64(i), CPUP: float64(i + 1)})
		}
		if got := r.MinInstances(); got != c.want {
			t.Errorf("percentiles %v: %d instances, want %d", c.ps, got, c.want)
		}
	}
}

func TestQoOValidate(t *testing.T) {
	ok := draftExample()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(*QoORequirement)
		want string
	}{
		{"percentile above 1", func(r *QoORequirement) { r.Latency[1].Percentile = 99.9 }, "outside [0, 1]"},
		{"percentile below 0", func(r *QoORequirement) { r.Latency[0].Percentile = -0.5 }, "outside [0, 1]"},
		{"percentiles not increasing", func(r *QoORequirement) { r.Latency[1].Percentile = 0.99 }, "must increase"},
		{"CPUP not looser", func(r *QoORequirement) { r.Latency[0].CPUP = 0.2 }, "must be longer than the ROP delay"},
		{"delays falling", func(r *QoORequirement) { r.Latency[1].ROP, r.Latency[1].CPUP = 0.1, 0.4 }, "delays fall"},
		{"negative delay", func(r *QoORequirement) { r.Latency[0].ROP = -1 }, "finite and ≥ 0"},
		{"loss order", func(r *QoORequirement) { r.CPUPLoss = 0.01 }, "0 ≤ ROP 0.01 < CPUP 0.01 ≤ 1"},
		{"loss above 1", func(r *QoORequirement) { r.CPUPLoss = 5 }, "≤ 1"},
		{"rate", func(r *QoORequirement) { r.MinRate = math.Inf(1) }, "minimum rate"},
	}
	for _, c := range cases {
		r := draftExample()
		c.edit(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
		if _, err := r.Score(QoOMeasurement{Latency: []float64{0.3, 0.4}, Loss: 0.02}); err == nil {
			t.Errorf("%s: Score accepted an invalid requirement", c.name)
		}
	}
	if _, err := ok.Score(QoOMeasurement{Latency: []float64{0.3}, Loss: 0.02}); err == nil {
		t.Error("Score accepted one latency for two percentiles")
	}
	if _, err := ok.Score(QoOMeasurement{Loss: 1.5}); err == nil {
		t.Error("Score accepted a loss of 1.5")
	}
}
