// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
)

func mustParse(t testing.TB, src string) *Diagram {
	t.Helper()
	d, err := Parse("t.dq", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustDQ(t testing.TB) func(deltaq.DeltaQ, error) deltaq.DeltaQ {
	return func(d deltaq.DeltaQ, err error) deltaq.DeltaQ {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func mustResult(t *testing.T, ev *Evaluation, name string) *Result {
	t.Helper()
	r, ok := ev.Result(name)
	if !ok {
		t.Fatalf("no result for %s", name)
	}
	return r
}

// TestEvaluateKnownAnswers checks the hand-computed results. With a
// and b uniform on [1, 2), a ⊗ b is the triangular distribution on [2, 4]:
// median 3, F(3.5) = 1 − (4 − 3.5)²/2 = 0.875. A choice that sends a
// quarter of the requests to an outcome that never completes scales the
// CDF: 0.75 · 0.875 = 0.65625, and its failure mass is 0.25 (thesis eq. 2.5).
func TestEvaluateKnownAnswers(t *testing.T) {
	must := mustDQ(t)
	const w = 0.01
	d := mustParse(t, "chain = a -> b;\nsystem = p:lossy[0.75, 0.25](s:chain, lost);")
	u := must(deltaq.Uniform(1, 2, w, 300))
	ev, err := d.Evaluate(map[string]deltaq.DeltaQ{"a": u, "b": u, "lost": must(deltaq.Never(w, 300))})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Missing) != 0 {
		t.Fatalf("missing %v", ev.Missing)
	}
	chain := mustResult(t, ev, "chain")
	if med, ok := chain.DeltaQ.Quantile(0.5); !ok || math.Abs(med-3) > w {
		t.Errorf("median of a -> b = %v, want 3", med)
	}
	if got := chain.DeltaQ.CDF(3.5); math.Abs(got-0.875) > 1e-9 {
		t.Errorf("P(a -> b ≤ 3.5) = %v, want 0.875", got)
	}
	for _, name := range []string{"system", "lossy"} {
		r := mustResult(t, ev, name)
		if got := r.DeltaQ.CDF(3.5); !r.OK || math.Abs(got-0.65625) > 1e-9 {
			t.Errorf("P(%s ≤ 3.5) = %v (ok %v), want 0.65625", name, got, r.OK)
		}
		if got := r.DeltaQ.Intangible(); math.Abs(got-0.25) > 1e-9 {
			t.Errorf("failure mass of %s = %v, want 0.25", name, got)
		}
	}
	sys := mustResult(t, ev, "system")
	if want := []RefUse{{Name: "chain", Pos: Pos{Offset: 45, Line: 2, Column: 30}, Source: Calculated}}; !reflect.DeepEqual(sys.Refs, want) {
		t.Errorf("system refs %+v, want %+v", sys.Refs, want)
	}
}

// TestEvaluateOperators checks all-to-finish and first-to-finish on two
// outcomes uniform on [0, 1): F(t) = t, so Π F = t² and 1 − Π(1 − F) =
// 1 − (1 − t)² (thesis eqs. 2.3 and 2.4); at t = 0.5: 0.25 and 0.75.
func TestEvaluateOperators(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "x = a:all(u, v);\ny = f:first(u, v);\nz = a:three(u, v, s:y);")
	u := must(deltaq.Uniform(0, 1, 0.01, 100))
	ev, err := d.Evaluate(map[string]deltaq.DeltaQ{"u": u, "v": u})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		probe string
		t, F  float64
	}{
		{"x", 0.5, 0.25}, {"all", 0.5, 0.25}, {"y", 0.5, 0.75}, {"first", 0.5, 0.75},
		// a:(u, v, FTF(u, v)) at 0.5: 0.5 · 0.5 · 0.75.
		{"z", 0.5, 0.1875},
	} {
		r := mustResult(t, ev, c.probe)
		if got := r.DeltaQ.CDF(c.t); !r.OK || math.Abs(got-c.F) > 1e-9 {
			t.Errorf("%s: F(%v) = %v (ok %v), want %v", c.probe, c.t, got, r.OK, c.F)
		}
	}
}

func TestEvaluateMissingInputs(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "chain = a -> b;\nsystem = f:race(s:chain, c) -> e;")
	u := must(deltaq.Uniform(1, 2, 0.01, 300))

	// b and e are missing: nothing that needs them is calculated, and
	// nothing is taken as zero delay.
	ev, err := d.Evaluate(map[string]deltaq.DeltaQ{"a": u, "c": u})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "e"}; !reflect.DeepEqual(ev.Missing, want) {
		t.Errorf("Missing %v, want %v", ev.Missing, want)
	}
	for name, want := range map[string][]string{"chain": {"b"}, "race": {"b"}, "system": {"b", "e"}, "b": {"b"}, "e": {"e"}} {
		r := mustResult(t, ev, name)
		if r.OK || r.DeltaQ.Bins() != 0 || !reflect.DeepEqual(r.Missing, want) || r.Err != nil {
			t.Errorf("%s: ok %v, bins %d, missing %v, err %v; want missing %v", name, r.OK, r.DeltaQ.Bins(), r.Missing, r.Err, want)
		}
	}
	for _, name := range []string{"a", "c"} {
		if r := mustResult(t, ev, name); !r.OK || r.Missing != nil {
			t.Errorf("%s: ok %v, missing %v", name, r.OK, r.Missing)
		}
	}
	if r := mustResult(t, ev, "race"); len(r.Refs) != 1 || r.Refs[0].Source != Unavailable {
		t.Errorf("race refs %+v, want chain unavailable", r.Refs)
	}

	// An observed ΔQ of chain stands in for its calculation: race and the
	// system become calculable although b is still missing.
	obs := must(deltaq.Point(1.5, 0.01, 300))
	ev, err = d.Evaluate(map[string]deltaq.DeltaQ{"a": u, "c": u, "e": u, "chain": obs})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustResult(t, ev, "chain"); r.OK || !reflect.DeepEqual(r.Missing, []string{"b"}) {
		t.Errorf("chain: ok %v, missing %v; want its own calculation to lack b", r.OK, r.Missing)
	}
	sys := mustResult(t, ev, "system")
	if !sys.OK || sys.Missing != nil || len(sys.Refs) != 1 || sys.Refs[0].Source != Observed {
		t.Errorf("system: ok %v missing %v refs %+v", sys.OK, sys.Missing, sys.Refs)
	}
	// FTF(point 1.5, U[1,2)) at 1.5: 1 − (1 − F_point(1.5))(1 − 0.5). The
	// point mass sits uniformly in the bin its delay closes, (1.49, 1.5]
	// (bins are upper-inclusive), so F_point(1.5) = 1 and the race is
	// complete by 1.5. At the edge before, 1.49, F_point = 0 and the race
	// is U's 0.49; the result is linear in between (uniform-in-bin), so
	// F(1.495) = (0.49 + 1)/2 = 0.745.
	race := mustResult(t, ev, "race").DeltaQ
	if got := race.CDF(1.5); math.Abs(got-1) > 1e-9 {
		t.Errorf("race F(1.5) = %v, want 1", got)
	}
	if got := race.CDF(1.495); math.Abs(got-0.745) > 1e-9 {
		t.Errorf("race F(1.495) = %v, want 0.745", got)
	}
	if want := []string{"b"}; !reflect.DeepEqual(ev.Missing, want) {
		t.Errorf("Missing %v, want %v", ev.Missing, want)
	}
}

func TestEvaluateObservedOverCalculated(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "probe = worker_1 -> worker_2;\nsystem = s:probe;")
	e := must(deltaq.Exponential(0.005, 0.0001, 1000))
	in := map[string]deltaq.DeltaQ{"worker_1": e, "worker_2": e}
	ev, err := d.Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	calc := mustResult(t, ev, "probe").DeltaQ
	if got := mustResult(t, ev, "system"); got.Refs[0].Source != Calculated || got.DeltaQ.CDF(0.01) != calc.CDF(0.01) {
		t.Errorf("system without observed probe: %+v", got.Refs)
	}
	// Erlang-2 with θ = 5 ms: F(10 ms) = 1 − 3e^{−2}.
	if got, want := calc.CDF(0.01), 1-3*math.Exp(-2); math.Abs(got-want) > 1e-4 {
		t.Errorf("worker_1 -> worker_2: F(10 ms) = %v, want %v", got, want)
	}
	observed := must(deltaq.Point(0.02, 0.0001, 1000))
	in["probe"] = observed
	ev, err = d.Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	sys := mustResult(t, ev, "system")
	if sys.Refs[0].Source != Observed || sys.DeltaQ.CDF(0.0201) != observed.CDF(0.0201) {
		t.Errorf("system with observed probe: %+v, F = %v", sys.Refs, sys.DeltaQ.CDF(0.0201))
	}
	// The probe's own calculated ΔQ is unchanged by its observation.
	if got := mustResult(t, ev, "probe").DeltaQ.CDF(0.01); got != calc.CDF(0.01) {
		t.Errorf("probe calculated changed: %v vs %v", got, calc.CDF(0.01))
	}
}

func TestEvaluateErrors(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "chain = a -> b;\nsystem = s:chain -> c;")
	// 40000 + 40000 bins exceeds deltaq.MaxBins: the convolution fails and
	// the failure propagates to everything that depends on it.
	big := must(deltaq.Uniform(0, 1, 1.0/40000, 40000))
	ev, err := d.Evaluate(map[string]deltaq.DeltaQ{"a": big, "b": big, "c": big})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chain", "system"} {
		if r := mustResult(t, ev, name); r.OK || r.Err == nil || r.Missing != nil {
			t.Errorf("%s: ok %v err %v missing %v; want an error", name, r.OK, r.Err, r.Missing)
		}
	}
	// A zero DeltaQ is not a ΔQ: an error, not a missing input.
	ev, err = d.Evaluate(map[string]deltaq.DeltaQ{"a": {}, "b": big, "c": big})
	if err != nil {
		t.Fatal(err)
	}
	if r := mustResult(t, ev, "a"); r.OK || r.Err == nil {
		t.Errorf("zero input: ok %v err %v", r.OK, r.Err)
	}
	if r := mustResult(t, ev, "system"); r.OK || r.Err == nil {
		t.Errorf("system over a zero input: ok %v err %v", r.OK, r.Err)
	}
	if _, ok := ev.Result("nope"); ok {
		t.Error("result for an unknown probe")
	}
}

func TestEvaluateMixedWidths(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "x = a -> b;")
	// U[1, 2) on 0.01 and on 0.02 bins: the sum is still triangular on [2, 4].
	ev, err := d.Evaluate(map[string]deltaq.DeltaQ{
		"a": must(deltaq.Uniform(1, 2, 0.01, 300)),
		"b": must(deltaq.Uniform(1, 2, 0.02, 150)),
		"z": must(deltaq.Never(1, 1)), // not in the diagram: ignored
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mustResult(t, ev, "x")
	if !r.OK || math.Abs(r.DeltaQ.CDF(3.5)-0.875) > 1e-9 || r.DeltaQ.Width() != 0.02 {
		t.Errorf("ok %v, F(3.5) = %v, width %v", r.OK, r.DeltaQ.CDF(3.5), r.DeltaQ.Width())
	}
}

func TestEvaluateConcurrent(t *testing.T) {
	must := mustDQ(t)
	d := mustParse(t, "c = a -> b; system = f:x(s:c, a);")
	u := must(deltaq.Uniform(1, 2, 0.01, 300))
	want, err := d.Evaluate(map[string]deltaq.DeltaQ{"a": u, "b": u})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := d.Evaluate(map[string]deltaq.DeltaQ{"a": u, "b": u})
			if err != nil || ev.Results[0].DeltaQ.CDF(3) != want.Results[0].DeltaQ.CDF(3) {
				t.Errorf("concurrent evaluation differs: %v", err)
			}
		}()
	}
	wg.Wait()
}

// benchDiagram is an 11-probe diagram of the kind the exporter evaluates
// once per window: two levels of sub-probes and one operator of each kind.
const benchDiagram = `backend = app -> p:cache[0.8, 0.2](cache_hit, db);
frontend = lb -> f:replicas(s:backend, a:fanout(backup, audit));
system = auth -> s:frontend;
`

// benchInputs returns observed ΔQs for every outcome of benchDiagram and 90
// unrelated probes, 1000 bins each, as an exporter would pass them.
func benchInputs(b *testing.B, d *Diagram) map[string]deltaq.DeltaQ {
	must := mustDQ(b)
	in := map[string]deltaq.DeltaQ{}
	for i, p := range d.Probes() {
		if p.Kind == OutcomeProbe {
			in[p.Name] = must(deltaq.Exponential(0.002*float64(i%4+1), 1e-4, 1000))
		}
	}
	for i := 0; i < 90; i++ {
		in[fmt.Sprintf("other_%d", i)] = must(deltaq.Exponential(0.005, 1e-4, 1000))
	}
	return in
}

// BenchmarkEvaluate measures one evaluation of benchDiagram over 1000-bin
// inputs: every probe calculated (5 convolutions, 3 operators).
func BenchmarkEvaluate(b *testing.B) {
	d := mustParse(b, benchDiagram)
	in := benchInputs(b, d)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Evaluate(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluateObservedSubprobes is BenchmarkEvaluate with observed ΔQs
// for the sub-probes backend and frontend, which s: references then use.
func BenchmarkEvaluateObservedSubprobes(b *testing.B) {
	d := mustParse(b, benchDiagram)
	in := benchInputs(b, d)
	must := mustDQ(b)
	in["backend"] = must(deltaq.Exponential(0.01, 1e-4, 1000))
	in["frontend"] = must(deltaq.Exponential(0.012, 1e-4, 1000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Evaluate(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse measures parsing and validating benchDiagram.
func BenchmarkParse(b *testing.B) {
	src := []byte(benchDiagram)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("bench.dq", src); err != nil {
			b.Fatal(err)
		}
	}
}
