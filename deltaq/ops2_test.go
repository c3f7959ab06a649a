package deltaq

import (
	"errors"
	"math"
	"testing"
)

func TestScale(t *testing.T) {
	d := mk(t)(Uniform(0, 1, 0.25, 4))
	s := mk(t)(Scale(d, 0.8))
	for i := 1; i <= 4; i++ {
		x := float64(i) * 0.25
		if !near(s.CDF(x), 0.8*d.CDF(x), 1e-15) {
			t.Fatalf("Scale: F(%v) = %v, want 0.8·%v", x, s.CDF(x), d.CDF(x))
		}
	}
	if !near(s.Intangible(), 0.2, 1e-15) {
		t.Fatalf("Scale intangible %v", s.Intangible())
	}
	for _, j := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := Scale(d, j); err == nil {
			t.Errorf("Scale by %v accepted", j)
		}
	}
}

func TestECDFArithmetic(t *testing.T) {
	a := mk(t)(New(1, []float64{0.5, 0.5}))
	b := mk(t)(New(1, []float64{0.25, 0.25, 0.25}))
	add := mk2(t)(AddECDF(a, b))
	sub := mk2(t)(SubECDF(a, b))
	mul := mk2(t)(MulECDF(a, b))
	// Edges 1, 2, 3: F_A = 0.5, 1, 1 (flat beyond its dMax); F_B = 0.25, 0.5, 0.75.
	wantAdd := []float64{0.75, 1.5, 1.75}
	wantSub := []float64{0.25, 0.5, 0.25}
	wantMul := []float64{0.125, 0.5, 0.75}
	for i := range wantAdd {
		if !near(add.Values[i], wantAdd[i], 1e-15) || !near(sub.Values[i], wantSub[i], 1e-15) || !near(mul.Values[i], wantMul[i], 1e-15) {
			t.Fatalf("add %v sub %v mul %v", add.Values, sub.Values, mul.Values)
		}
	}
	if got := add.At(1.5); !near(got, 1.125, 1e-15) {
		t.Errorf("Curve.At(1.5) = %v, want 1.125", got)
	}
	if got := add.At(10); got != 1.75 {
		t.Errorf("Curve.At beyond the end = %v", got)
	}
	atf := mk(t)(AllToFinish(a, b))
	for i, v := range atf.CDFEdges(nil) {
		if !near(v, mul.Values[i], 1e-15) {
			t.Fatalf("MulECDF and AllToFinish differ at edge %d", i)
		}
	}
}

func mk2(t testing.TB) func(Curve, error) Curve {
	return func(c Curve, err error) Curve {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func TestMergeEqualsUnion(t *testing.T) {
	x := []float64{0.0001, 0.0012, 0.0035, 0.0099}
	y := []float64{0.0005, 0.0042}
	a := mk(t)(FromInstances(1e-3, 10, x, 1, 0))
	b := mk(t)(FromInstances(1e-3, 10, y, 0, 2))
	u := mk(t)(FromInstances(1e-3, 10, append(append([]float64{}, x...), y...), 1, 2))
	m := mk(t)(Merge(a, b))
	if m.Count() != 9 || u.Count() != 9 {
		t.Fatalf("counts %d %d", m.Count(), u.Count())
	}
	if dd, _ := Distance(m, u); dd > 1e-15 {
		t.Fatalf("Merge differs from the union by %v", dd)
	}
	analytic := mk(t)(Point(0, 1e-3, 10))
	if _, err := Merge(a, analytic); err == nil {
		t.Error("Merge with a count-less ΔQ accepted")
	}
	other := mk(t)(FromInstances(1e-3, 11, x, 0, 0))
	if _, err := Merge(a, other); err == nil {
		t.Error("Merge of different shapes accepted")
	}
}

func TestTimeTransform(t *testing.T) {
	u := mk(t)(Uniform(0, 1, 0.1, 10))
	// 2·U(0,1) = U(0,2): F(t) = t/2, 20 bins.
	d := mk(t)(TimeTransform(u, 2, 0))
	if d.Bins() != 20 {
		t.Fatalf("bins %d, want 20", d.Bins())
	}
	for i := 1; i <= 20; i++ {
		x := float64(i) / 10
		if !near(d.CDF(x), x/2, 1e-12) {
			t.Fatalf("2·U: F(%v) = %v", x, d.CDF(x))
		}
	}
	// U + 0.3 = U(0.3, 1.3).
	d = mk(t)(TimeTransform(u, 1, 0.3))
	want := mk(t)(Uniform(0.3, 1.3, 0.1, 13))
	if dd, _ := Distance(d, want); dd > 1e-12 {
		t.Fatalf("U + 0.3 off by %v", dd)
	}
	// Half as slow and 0.2 s earlier: 0.5·U − 0.2 = U(−0.2, 0.3) clamped:
	// 40 % at zero (in bin 0), then uniform to 0.3.
	d = mk(t)(TimeTransform(u, 0.5, -0.2))
	if !near(d.CDF(0.1), 0.6, 1e-12) || !near(d.CDF(0.3), 1, 1e-12) {
		t.Fatalf("0.5·U − 0.2: F(0.1) = %v, F(0.3) = %v", d.CDF(0.1), d.CDF(0.3))
	}
	// Intangible mass is kept.
	e := mk(t)(Exponential(1, 0.05, 40))
	d = mk(t)(TimeTransform(e, 3, 0.1))
	if !near(d.Intangible(), e.Intangible(), 1e-12) {
		t.Fatalf("intangible changed from %v to %v", e.Intangible(), d.Intangible())
	}
	// a = 0: everything at b. 0.25 s is the edge between bins 4 and 5 of
	// 0.05 s: the mass goes to the bin that edge closes, (0.2, 0.25] s, as
	// Point(0.25) would put it, so F(0.25) is the whole tangible mass.
	d = mk(t)(TimeTransform(e, 0, 0.25))
	if q, ok := d.Quantile(0.5); !ok || q < 0.2 || q > 0.25 {
		t.Fatalf("0·X + 0.25: median %v", q)
	}
	if got := d.CDF(0.25); !near(got, e.Tangible(), 1e-15) {
		t.Fatalf("0·X + 0.25: F(0.25) = %v, want %v", got, e.Tangible())
	}
	for _, ab := range [][2]float64{{-1, 0}, {math.NaN(), 0}, {1, math.Inf(1)}, {math.Inf(1), 0}} {
		if _, err := TimeTransform(e, ab[0], ab[1]); err == nil {
			t.Errorf("TimeTransform(%v, %v) accepted", ab[0], ab[1])
		}
	}
	if _, err := TimeTransform(e, 1e6, 0); err == nil {
		t.Error("TimeTransform beyond MaxBins accepted")
	}
}

func TestDeconvolveKnownAnswer(t *testing.T) {
	// Known part: a point in bin 2 (midpoint 2.5 w). Target: everything by
	// 10 w. The latest rest is a point in bin 6: 2.5 w + 6.5 w = 9 w, half
	// in bin 8 and half in bin 9, complete by 10 w; a point in bin 7 would
	// leave half of the mass beyond 10 w.
	const w = 1.0
	known := mk(t)(Point(2.5, w, 12))
	target := mk(t)(Steps([]Step{{10, 1}}, w, 12))
	x := mk(t)(Deconvolve(target, known))
	p := x.PDF()
	if !near(p[6], 1, 1e-12) {
		t.Fatalf("budget pdf %v, want all in bin 6", p)
	}
	whole := mk(t)(Convolve(known, x))
	if c := mustCmp(t)(Compare(whole, target)); !c.LessEq() {
		t.Fatalf("known ⊗ budget misses the target: %+v", c)
	}
}

func mustCmp(t testing.TB) func(Comparison, error) Comparison {
	return func(c Comparison, err error) Comparison {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

func TestDeconvolveMeetsTarget(t *testing.T) {
	// A 10-bin exponential path segment against the thesis QTA (§2.1.6).
	const w = 1e-3
	known := mk(t)(Exponential(0.004, w, 20))
	q, err := ThesisQTA(0.015, 0.025, 0.035, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	target := mk(t)(q.DeltaQ(w, 60))
	x := mk(t)(Deconvolve(target, known))
	whole := mk(t)(ConvolveDirect(known, x))
	c := mustCmp(t)(Compare(whole, target))
	if c.Hazard > 1e-9 {
		t.Fatalf("known ⊗ budget has a hazard %v at %v", c.Hazard, c.HazardAt)
	}
	chk, err := q.Check(whole)
	if err != nil || !chk.Points[0].OK || !chk.Points[1].OK || !chk.Points[2].OK {
		t.Fatalf("QTA points fail: %+v %v", chk, err)
	}
	// The budget is not trivially "instant": its mass is later than bin 0.
	if m, ok := x.Mean(); !ok || m < 0.005 {
		t.Fatalf("budget mean %v, %v: suspiciously early", m, ok)
	}
}

func TestDeconvolveInfeasible(t *testing.T) {
	// The known part fails 20 % of the time; the target allows 10 %.
	known := mk(t)(New(1, []float64{0.8}))
	target := mk(t)(Steps([]Step{{5, 0.9}}, 1, 10))
	if _, err := Deconvolve(target, known); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("Deconvolve = %v, want ErrInfeasible", err)
	}
	// The known part alone is too slow.
	slow := mk(t)(Point(7.5, 1, 10))
	target = mk(t)(Steps([]Step{{5, 0.5}}, 1, 10))
	if _, err := Deconvolve(target, slow); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("Deconvolve = %v, want ErrInfeasible", err)
	}
}

func TestCompare(t *testing.T) {
	early := mk(t)(Point(0.5, 1, 4))
	late := mk(t)(Point(2.5, 1, 4))
	c := mustCmp(t)(Compare(early, late))
	if c.Relation != Less || !c.LessEq() || !near(c.Slack, 1, 1e-15) || c.SlackAt != 1 || c.Hazard != 0 {
		t.Fatalf("early vs late: %+v", c)
	}
	c = mustCmp(t)(Compare(late, early))
	if c.Relation != Greater || c.LessEq() || !near(c.Hazard, 1, 1e-15) || c.HazardAt != 1 || c.FirstHazard != 1 {
		t.Fatalf("late vs early: %+v", c)
	}
	if c := mustCmp(t)(Compare(early, early)); c.Relation != Equal || !c.LessEq() {
		t.Fatalf("self: %+v", c)
	}
	// Crossing CDFs: a wide uniform against a point in the middle.
	wide := mk(t)(Uniform(0, 4, 1, 4))
	mid := mk(t)(Point(1.5, 1, 4))
	c = mustCmp(t)(Compare(wide, mid))
	if c.Relation != Incomparable || c.Slack <= 0 || c.Hazard <= 0 {
		t.Fatalf("crossing: %+v", c)
	}
	// Failure alone makes a hazard beyond dMax.
	lossy := mk(t)(Scale(early, 0.9))
	c = mustCmp(t)(Compare(lossy, early))
	if c.Relation != Greater || !near(c.Hazard, 0.1, 1e-15) {
		t.Fatalf("lossy: %+v", c)
	}
	for _, r := range []Relation{Equal, Less, Greater, Incomparable} {
		if r.String() == "?" {
			t.Errorf("relation %d has no symbol", r)
		}
	}
}

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

func TestBand(t *testing.T) {
	// Ten ΔQs of one bin with F = 0.1·j (j = 0 … 9) at the edge: μ = 0.45,
	// s = √(Σ(x−μ)²/9) = 0.30277, t(0.975, 9) = 2.262157 (Student t tables,
	// e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2), half-width t·s/√10.
	var win []DeltaQ
	for j := 0; j < 10; j++ {
		win = append(win, mk(t)(New(1, []float64{0.1 * float64(j)})))
	}
	b, err := Band(win)
	if err != nil {
		t.Fatal(err)
	}
	s := math.Sqrt(0.825 / 9)
	h := 2.262157 * s / math.Sqrt(10)
	if b.K != 10 || !near(b.Mean[0], 0.45, 1e-15) || !near(b.Lower[0], 0.45-h, 1e-6) || !near(b.Upper[0], 0.45+h, 1e-6) {
		t.Fatalf("band %+v, want 0.45 ± %v", b, h)
	}
	// K = 1: no spread can be estimated; the band is [0, 1].
	b, _ = Band(win[4:5])
	if b.Lower[0] != 0 || b.Upper[0] != 1 {
		t.Fatalf("K = 1 band %+v, want [0, 1]", b)
	}
	// K = 2: t(0.975, 1) = 12.7062 (same tables); F = 0.49 and 0.51 give
	// s = √0.0002 and the band 0.5 ± 12.7062·s/√2.
	b2, _ := Band([]DeltaQ{mk(t)(New(1, []float64{0.49})), mk(t)(New(1, []float64{0.51}))})
	h2 := 12.7062047 * math.Sqrt(0.0002) / math.Sqrt(2)
	if !near(b2.Lower[0], 0.5-h2, 1e-7) || !near(b2.Upper[0], 0.5+h2, 1e-7) {
		t.Fatalf("K = 2 band %v %v, want 0.5 ± %v", b2.Lower, b2.Upper, h2)
	}
	// Different bin counts: the shorter CDF stays flat beyond its dMax.
	b3, _ := Band([]DeltaQ{mk(t)(New(1, []float64{0.5})), mk(t)(New(1, []float64{0.2, 0.2}))})
	if len(b3.Mean) != 2 || !near(b3.Mean[0], 0.35, 1e-15) || !near(b3.Mean[1], 0.45, 1e-15) {
		t.Fatalf("mixed-length band mean %v, want [0.35 0.45]", b3.Mean)
	}
	// Identical ΔQs: zero width.
	b, _ = Band([]DeltaQ{win[3], win[3], win[3]})
	if b.Lower[0] != b.Mean[0] || b.Upper[0] != b.Mean[0] {
		t.Fatalf("identical window band %+v", b)
	}
	// Reuse allocates nothing.
	var dst ConfidenceBand
	_ = BandInto(&dst, win)
	if n := testing.AllocsPerRun(10, func() { _ = BandInto(&dst, win) }); n != 0 {
		t.Errorf("BandInto allocates %v", n)
	}
	if _, err := Band(nil); err == nil {
		t.Error("empty window accepted")
	}
	m, err := b.MeanDeltaQ()
	if err != nil || !near(m.CDF(1), 0.3, 1e-15) {
		t.Fatalf("MeanDeltaQ %v %v", m, err)
	}
}
