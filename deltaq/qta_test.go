// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQTA(t *testing.T) {
	// Thesis §2.1.6: 25 % < 15 ms, 50 % < 25 ms, 75 % < 35 ms, 5 % may fail.
	q, err := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	// Uniform on [0, 40 ms) with 2 % failure: F(15) = 0.3675, F(25) = 0.6125,
	// F(35) = 0.8575; all hold.
	good := mk(t)(Scale(mk(t)(Uniform(0, 0.04, 1e-3, 50)), 0.98))
	chk, err := q.Check(good)
	if err != nil || !chk.OK || len(chk.Failed()) != 0 {
		t.Fatalf("good ΔQ fails: %+v %v", chk, err)
	}
	// Uniform on [0, 60 ms) with 10 % failure: F(15 ms) = 0.225 < 0.25 fails
	// by 0.025, F(25 ms) = 0.375 by 0.125, F(35 ms) = 0.525 by 0.225, and the
	// failure bound by 0.05.
	bad := mk(t)(Scale(mk(t)(Uniform(0, 0.06, 1e-3, 80)), 0.9))
	chk, err = q.Check(bad)
	if err != nil || chk.OK || chk.FailureOK || len(chk.Failed()) != 3 {
		t.Fatalf("bad ΔQ passes: %+v %v", chk, err)
	}
	for i, want := range []float64{0.025, 0.125, 0.225} {
		if !near(chk.Points[i].Shortfall, want, 1e-12) {
			t.Errorf("point %d shortfall %v, want %v", i, chk.Points[i].Shortfall, want)
		}
	}
	// Lateness: 25 % is reached at 0.25/0.9·60 ms = 16.67 ms.
	if p := chk.Points[0]; !p.Reachable || !near(p.ObservedDelay, 0.25/0.9*0.06, 1e-12) {
		t.Errorf("point 0 observed delay %v", p.ObservedDelay)
	}
	if !near(chk.FailureExcess, 0.05, 1e-12) {
		t.Errorf("failure excess %v", chk.FailureExcess)
	}
	for name, pts := range map[string][]Step{
		"decreasing": {{0.01, 0.5}, {0.02, 0.4}},
		"zero delay": {{0, 0.5}},
		"P > 1":      {{0.01, 1.5}},
		"P = 0":      {{0.01, 0}},
		"duplicate":  {{0.01, 0.5}, {0.01, 0.6}},
		"too much":   {{0.01, 0.99}},
	} {
		if _, err := NewQTA(pts, 0.05); err == nil {
			t.Errorf("QTA %s accepted", name)
		}
	}
	if _, err := NewQTA(nil, 1.5); err == nil {
		t.Error("QTA max failure 1.5 accepted")
	}
}

// TestCheckRead: CheckRead judges the failure bound by the ratio it is
// given, not by a curve, and the points by their readings. The thesis's
// QTA (§2.1.6, 5 % may fail) with every point read as holding: a ratio of
// 0.04 holds, 0.06 fails by 0.01, and a ratio outside [0, 1] is refused.
// CheckReadings is CheckRead of its ΔQ's intangible mass.
func TestCheckRead(t *testing.T) {
	q, err := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	read := func(s Step) PointReading { return PointReading{F: s.P, Pessimistic: s.P} }
	for _, c := range []struct {
		failure float64
		ok      bool
		excess  float64
	}{{0.04, true, 0}, {0.06, false, 0.01}} {
		chk, err := q.CheckRead(c.failure, read)
		if err != nil || chk.FailureOK != c.ok || chk.OK != c.ok || chk.Failure != c.failure || !near(chk.FailureExcess, c.excess, 1e-12) {
			t.Errorf("failure ratio %v: %+v, %v; want failure OK %v, excess %v", c.failure, chk, err, c.ok, c.excess)
		}
	}
	for _, f := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := q.CheckRead(f, read); err == nil {
			t.Errorf("failure ratio %v accepted", f)
		}
	}
	d := mk(t)(Scale(mk(t)(Uniform(0, 0.04, 1e-3, 50)), 0.94))
	a, err1 := q.CheckReadings(d, read)
	b, err2 := q.CheckRead(d.Intangible(), read)
	if err1 != nil || err2 != nil || a.Failure != b.Failure || a.FailureOK != b.FailureOK || a.OK != b.OK {
		t.Errorf("CheckReadings %+v (%v), CheckRead of its intangible mass %+v (%v)", a, err1, b, err2)
	}
}

// TestRequiredSteps: the thesis's QTA (§2.1.6: 25 % within 15 ms, 50 %
// within 25 ms, 75 % within 35 ms, "5 % of executions can timeout") as the
// step function below which a ΔQ of each dMax fails it.
func TestRequiredSteps(t *testing.T) {
	thesis, err := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	loose, _ := ThesisQTA(0.015, 0.025, 0.035, 0.25)
	bound, _ := NewQTA(nil, 0.1)
	anything, _ := NewQTA(nil, 1)
	for _, c := range []struct {
		name string
		q    QTA
		dmax float64
		want []Step
	}{
		{"every point within dMax, then the failure bound at dMax", thesis, 0.05,
			[]Step{{0.015, 0.25}, {0.025, 0.5}, {0.035, 0.75}, {0.05, 0.95}}},
		{"a point beyond dMax left out", thesis, 0.03,
			[]Step{{0.015, 0.25}, {0.025, 0.5}, {0.03, 0.95}}},
		{"every point beyond dMax", thesis, 0.01,
			[]Step{{0.01, 0.95}}},
		{"a point at dMax raised to the failure bound", thesis, 0.035,
			[]Step{{0.015, 0.25}, {0.025, 0.5}, {0.035, 0.95}}},
		{"the points reach 1 − MaxFailure: no last step", loose, 0.05,
			[]Step{{0.015, 0.25}, {0.025, 0.5}, {0.035, 0.75}}},
		{"no points: the failure bound alone", bound, 2,
			[]Step{{2, 0.9}}},
		{"no points and MaxFailure 1: no step", anything, 2,
			[]Step{}},
	} {
		got, err := c.q.RequiredSteps(c.dmax)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if got[i].Delay != c.want[i].Delay || !near(got[i].P, c.want[i].P, 1e-15) {
				t.Fatalf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
	for _, dmax := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := thesis.RequiredSteps(dmax); err == nil {
			t.Errorf("RequiredSteps(%v) accepted", dmax)
		}
	}
	if _, err := (QTA{Points: []Step{{0.02, 0.5}, {0.01, 0.6}}}).RequiredSteps(1); err == nil {
		t.Error("RequiredSteps of an invalid QTA accepted")
	}
}

// TestRequiredDeltaQ: the thesis's QTA on 50 bins of 1 ms has its CDF at
// the edges at 0 up to 14 ms, 0.25 from 15 ms, 0.5 from 25 ms, 0.75 from
// 35 ms and 0.95 at dMax = 50 ms: the exporter's QTA series.
func TestRequiredDeltaQ(t *testing.T) {
	q, _ := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	d := mk(t)(q.RequiredDeltaQ(1e-3, 50))
	edges := d.CDFEdges(nil)
	for i, f := range edges {
		ms := i + 1
		want := 0.0
		switch {
		case ms == 50:
			want = 0.95
		case ms >= 35:
			want = 0.75
		case ms >= 25:
			want = 0.5
		case ms >= 15:
			want = 0.25
		}
		if !near(f, want, 1e-15) {
			t.Fatalf("F(%d ms) = %v, want %v (edges %v)", ms, f, want, edges)
		}
	}
	if !near(d.Intangible(), 0.05, 1e-15) {
		t.Errorf("intangible %v, want 0.05", d.Intangible())
	}
	if _, err := q.RequiredDeltaQ(0, 50); err == nil {
		t.Error("zero width accepted")
	}
}

// TestRequiredStepsIsCheck: a ΔQ passes QTA.Check exactly when its CDF is
// at or above every corner of RequiredSteps at its own dMax, for random
// QTAs and ΔQs (points on both sides of dMax, failure bounds met or not).
func TestRequiredStepsIsCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	passed, failed := 0, 0
	for range 2000 {
		d := randomDQ(rng, 40, 1e-3)
		mf := 0.3 * rng.Float64()
		var pts []Step
		delay, p := 0.0, 0.0
		for range rng.IntN(4) {
			delay += 0.001 + 0.02*rng.Float64()
			p += (1 - mf - p) * rng.Float64()
			pts = append(pts, Step{delay, p})
		}
		q, err := NewQTA(pts, mf)
		if err != nil {
			continue
		}
		steps, err := q.RequiredSteps(d.DMax())
		if err != nil {
			t.Fatal(err)
		}
		above := true
		for _, s := range steps {
			above = above && d.CDF(s.Delay) >= s.P-1e-12
		}
		chk, err := q.Check(d)
		if err != nil {
			t.Fatal(err)
		}
		if chk.OK != above {
			t.Fatalf("Check %v but at or above the steps %v: ΔQ %v, QTA %+v, steps %v", chk.OK, above, d, q, steps)
		}
		if chk.OK {
			passed++
		} else {
			failed++
		}
	}
	if passed < 50 || failed < 50 {
		t.Fatalf("%d passed and %d failed: the cases do not cover both verdicts", passed, failed)
	}
}
