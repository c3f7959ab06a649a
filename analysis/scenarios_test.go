// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// TestWhatIfKnownAnswer evaluates `job = a -> b` on point masses: every a
// at 10.5 ms, in the analysis bucket [a₀, a₁) = [10.486, 10.617) ms, every
// b at 20.5 ms, in [b₀, b₁) = [20.447, 20.709) ms. The diagram's grid is
// 8.192 µs (deltaq.AnalysisWidth of b₁), which divides both buckets, so
// each input is uniform over its bucket and every composition is, within a
// grid bin w of each end, the sum of the supports, symmetric about its
// centre (the convolution of two uniforms is a trapezium):
//
//   - calculated: a ⊗ b on [a₀ + b₀, a₁ + b₁];
//   - faster (b: 0.5*X): b′ uniform on [b₀/2, b₁/2): a ⊗ b′ on [a₀ + b₀/2,
//     a₁ + b₁/2];
//   - slow_a (a: 2*X + never 10%): 2a on [2a₀, 2a₁) with 10 % never
//     completing: 0.9 of the mass on [2a₀ + b₀, 2a₁ + b₁], 0.1 intangible.
//     It sees the observed b, not faster's b′: each scenario starts from
//     the window's observations.
//
// `other = c` takes no intervened outcome and gets no what-if ΔQ; neither
// do the outcomes.
func TestWhatIfKnownAnswer(t *testing.T) {
	cfg := Config{
		Diagram: "job = a -> b;\nother = c;",
		WhatIf: map[string]map[string]string{
			"faster": {"b": "0.5*X"},
			"slow_a": {"a": "2*X + never 10%"},
		},
	}
	var ins []Instance
	for i := range 100 {
		end := time.Duration(i) * time.Millisecond
		ins = append(ins, ok("a", end, 10500*time.Microsecond), ok("b", end, 20500*time.Microsecond), ok("c", end, time.Millisecond))
	}
	r := single(t, cfg, ins)
	job := probeOf(t, r, "job")
	if job.Calculated == nil {
		t.Fatal("job: no calculated ΔQ")
	}
	a0, a1 := fineBucket(t, 10500*time.Microsecond)
	b0, b1 := fineBucket(t, 20500*time.Microsecond)
	wantSupport(t, "calculated", *job.Calculated, a0+b0, a1+b1, 1)
	if len(job.WhatIf) != 2 || job.WhatIf[0].Scenario != "faster" || job.WhatIf[1].Scenario != "slow_a" {
		t.Fatalf("job: what-if %+v, want faster then slow_a", job.WhatIf)
	}
	for _, w := range job.WhatIf {
		if w.Err != nil || w.DeltaQ == nil {
			t.Fatalf("%s: %v", w.Scenario, w.Err)
		}
	}
	faster, slow := *job.WhatIf[0].DeltaQ, *job.WhatIf[1].DeltaQ
	wantSupport(t, "faster", faster, a0+b0/2, a1+b1/2, 1)
	wantSupport(t, "slow_a", slow, 2*a0+b0, 2*a1+b1, 0.9)
	if f := slow.Intangible(); math.Abs(f-0.1) > 1e-9 {
		t.Errorf("slow_a: failure %v, want 0.1", f)
	}
	for _, n := range []string{"other", "a", "b", "c"} {
		if w := probeOf(t, r, n).WhatIf; w != nil {
			t.Errorf("%s: what-if %+v, want none", n, w)
		}
	}
}

// wantSupport fails unless dq's tangible mass is mass, all of it within
// [lo, hi] (seconds) up to two bins either side, and its quantile of half
// that mass within two bins of the centre (lo + hi)/2: the known answer for
// a composition of uniform inputs.
func wantSupport(t *testing.T, what string, dq deltaq.DeltaQ, lo, hi, mass float64) {
	t.Helper()
	w := dq.Width()
	if f := dq.CDF(lo - 2*w); f > 1e-9 {
		t.Errorf("%s: F(%v) = %v, want 0 below the support [%v, %v]", what, lo-2*w, f, lo, hi)
	}
	if f := dq.CDF(hi + 2*w); math.Abs(f-mass) > 1e-9 {
		t.Errorf("%s: F(%v) = %v, want %v above the support [%v, %v]", what, hi+2*w, f, mass, lo, hi)
	}
	if q, ok := dq.Quantile(mass / 2); !ok || math.Abs(q-(lo+hi)/2) > 2*w {
		t.Errorf("%s: median of the tangible mass %v (%v), want %v within %v", what, q, ok, (lo+hi)/2, 2*w)
	}
}

// TestWhatIfLeavesTheObservationsAlone: the calculated ΔQ of the next
// window, and of the window itself, are those without the scenario.
func TestWhatIfLeavesTheObservationsAlone(t *testing.T) {
	base := Config{Interval: time.Second, Diagram: "job = a -> b;"}
	with := base
	with.WhatIf = map[string]map[string]string{"x": {"a": "remove", "b": "exp(5ms)"}}
	run := func(cfg Config) []*Result {
		e := newEngine(t, cfg, at(0))
		var out []*Result
		for w := range 3 {
			for i := range 50 {
				end := time.Duration(w)*time.Second + time.Duration(i)*time.Millisecond
				addAll(e, ok("a", end, time.Duration(5+i%7)*time.Millisecond), ok("b", end, time.Duration(11+i%3)*time.Millisecond))
			}
			for _, r := range e.Advance(at(time.Duration(w+2) * time.Second)) {
				if r.End.After(t0) { // not the empty window before t0
					out = append(out, r)
				}
			}
		}
		return out
	}
	plain, scen := run(base), run(with)
	if len(plain) != 3 || len(scen) != 3 {
		t.Fatalf("windows: %d and %d, want 3", len(plain), len(scen))
	}
	for k := range plain {
		p, s := probeOf(t, plain[k], "job"), probeOf(t, scen[k], "job")
		if p.Calculated == nil || s.Calculated == nil || !slices.Equal(p.Calculated.PDF(), s.Calculated.PDF()) {
			t.Fatalf("window %d: the calculated ΔQ changed with the scenario", k)
		}
		if len(s.WhatIf) != 1 || s.WhatIf[0].DeltaQ == nil {
			t.Fatalf("window %d: what-if %+v", k, s.WhatIf)
		}
		// a removed: job is b′ = exp(5 ms) (shifted by the half bin of
		// a's point at 0, the convolution's convention), whose mean is
		// about 5 ms, where the observed b alone is at least 11 ms.
		if m, ok := s.WhatIf[0].DeltaQ.Mean(); !ok || m > 0.008 {
			t.Errorf("window %d: what-if mean %v, want about 5 ms", k, m)
		}
	}
}

// TestWhatIfWithoutAnInputHasNoEntry: a window without b has no calculated
// ΔQ for job, and no what-if ΔQ either, even for a scenario that
// substitutes b: a scenario changes observations, it does not invent them.
func TestWhatIfWithoutAnInputHasNoEntry(t *testing.T) {
	cfg := Config{Diagram: "job = a -> b;", WhatIf: map[string]map[string]string{"x": {"b": "point(1ms)"}}}
	r := single(t, cfg, []Instance{ok("a", 0, time.Millisecond)})
	if job := probeOf(t, r, "job"); job.Calculated != nil || job.WhatIf != nil {
		t.Errorf("job: calculated %v, what-if %+v, want neither", job.Calculated, job.WhatIf)
	}
}

// TestWhatIfFailureIsReported: a factor that needs more than
// deltaq.MaxBins bins fails in the window, and the probe says so rather
// than dropping the scenario.
func TestWhatIfFailureIsReported(t *testing.T) {
	cfg := Config{Diagram: "job = a -> b;", WhatIf: map[string]map[string]string{"huge": {"a": "100000*X"}}}
	r := single(t, cfg, []Instance{ok("a", 0, 90*time.Millisecond), ok("b", 0, time.Millisecond)})
	job := probeOf(t, r, "job")
	if len(job.WhatIf) != 1 || job.WhatIf[0].Err == nil || job.WhatIf[0].DeltaQ != nil {
		t.Fatalf("what-if %+v, want one failed entry", job.WhatIf)
	}
	if msg := job.WhatIf[0].Err.Error(); !strings.Contains(msg, "probe a: 100000*X") || !strings.Contains(msg, "MaxBins") {
		t.Errorf("error %q does not name the probe, the expression and the cause", msg)
	}
}

func TestWhatIfConfigErrors(t *testing.T) {
	const d = "job = a -> s:sub;\nsub = b -> f:race(c, e);"
	wi := func(m map[string]map[string]string) Config { return Config{Diagram: d, WhatIf: m} }
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no diagram", Config{WhatIf: map[string]map[string]string{"x": {"a": "X"}}}, `whatif: needs an outcome diagram (diagram or diagram_file)`},
		{"empty name", wi(map[string]map[string]string{"": {"a": "X"}}), `whatif: a scenario has an empty name`},
		{"no intervention", wi(map[string]map[string]string{"idle": {}}), `whatif["idle"]: no intervention (want outcome probe: expression)`},
		{"unknown probe", wi(map[string]map[string]string{"new_db": {"db": "0.5*X"}}), `whatif["new_db"]["db"]: the outcome diagram has no probe db`},
		{"misspelled probe", Config{Diagram: "checkout = payment -> email;", WhatIf: map[string]map[string]string{"s": {"paymnet": "X"}}}, `whatif["s"]["paymnet"]: the outcome diagram has no probe paymnet (did you mean payment?)`},
		{"definition", wi(map[string]map[string]string{"fast_sub": {"sub": "0.5*X"}}), `whatif["fast_sub"]["sub"]: probe sub is a definition of the diagram; interventions apply to its outcomes`},
		{"operator", wi(map[string]map[string]string{"r": {"race": "X"}}), `whatif["r"]["race"]: probe race is a operator`},
		{"bad expression", wi(map[string]map[string]string{"faster_payment": {"b": "0.5*Y"}}), `whatif["faster_payment"]["b"]: 1:1: "0.5*Y" is neither A*X+B nor a distribution`},
		{"bad failure", wi(map[string]map[string]string{"flaky": {"c": "X + never 150%"}}), `whatif["flaky"]["c"]: 1:11: failure 150% must be a percentage in [0, 100]`},
		{"empty expression", wi(map[string]map[string]string{"x": {"c": " "}}), `whatif["x"]["c"]: 1:1: empty expression`},
	}
	many := map[string]map[string]string{}
	for i := range MaxWhatIfScenarios + 1 {
		many[strings.Repeat("s", i+1)] = map[string]string{"a": "X"}
	}
	cases = append(cases, struct {
		name string
		cfg  Config
		want string
	}{"too many", wi(many), `whatif: 17 scenarios are more than the maximum 16`})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, c.want)
			}
			if _, nerr := New(c.cfg, t0); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("New: %v, want Check's error", nerr)
			}
		})
	}
	// A diagram that does not parse is reported once, without a second
	// error from its scenarios.
	bad := Config{Diagram: "job = a ->;", WhatIf: map[string]map[string]string{"x": {"zz": "X"}}}
	if err := bad.Check(); err == nil || strings.Contains(err.Error(), "whatif") {
		t.Errorf("Check = %v, want the diagram's error alone", err)
	}
	good := wi(map[string]map[string]string{"mix": {"a": "0.5*X+1ms", "b": "remove", "c": "exp(5ms) + never 1%", "e": "X"}})
	if err := good.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestWhatIfTouches: a scenario reaches the definitions and operators its
// outcomes can enter, through s: references too (diagramInputs).
func TestWhatIfTouches(t *testing.T) {
	cfg := Config{Diagram: "job = a -> s:sub;\nsub = b -> f:race(c, e);\nlone = g;",
		WhatIf: map[string]map[string]string{"x": {"c": "X"}, "y": {"a": "X"}}}
	cc, err := cfg.compile()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"x": "job race sub", "y": "job"}
	for _, sc := range cc.whatIf {
		var got []string
		for _, n := range []string{"job", "lone", "race", "sub"} {
			if sc.touches[n] {
				got = append(got, n)
			}
		}
		if strings.Join(got, " ") != want[sc.name] {
			t.Errorf("%s touches %v, want %s", sc.name, got, want[sc.name])
		}
	}
}
