// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"math"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/whatif"
)

// TestApply checks the interventions on a model whose root r (own time 1
// ms) calls a (3 ms) then b (5 ms), on 0.5 ms bins.
func TestApply(t *testing.T) {
	var spans []Span
	for tr := uint64(1); tr <= 10; tr++ {
		spans = append(spans, sp(tr, 1, 0, "r", 0, 9), sp(tr, 2, 1, "a", 0.5, 3.5), sp(tr, 3, 1, "b", 3.5, 8.5))
	}
	m, d := build(t, Config{}, spans, 18)
	if m.BinWidth != 0.0005 {
		t.Fatalf("bin width %v, want 9 ms / 18", m.BinWidth)
	}
	predict := func(sets ...string) deltaq.DeltaQ {
		t.Helper()
		var ivs []whatif.Intervention
		for _, s := range sets {
			iv, err := whatif.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			ivs = append(ivs, iv)
		}
		p, err := m.Predict(d, ivs)
		if err != nil {
			t.Fatal(err)
		}
		return p[0].After
	}
	// Every exclusive time is a constant on a bin edge: the known answer is
	// the ΔQ algebra's on the observed ΔQs of those constants, whose sum's
	// median reads 1.5 bins below the exact sum (the deltaq package's
	// convention for observations: each delay counts in the bin its edge
	// closes, spread over the bin).
	median := func(dq deltaq.DeltaQ) float64 {
		q, ok := dq.Quantile(0.5)
		if !ok {
			t.Fatalf("median unreachable: %v", dq)
		}
		return q
	}
	points := func(ms ...float64) float64 {
		obs := func(v float64) deltaq.DeltaQ {
			d, _ := deltaq.FromInstances(m.BinWidth, 100, []float64{v * 1e-3}, 0, 0)
			return d
		}
		acc := obs(ms[0])
		for _, v := range ms[1:] {
			p := obs(v)
			acc, _ = deltaq.Convolve(acc, p)
		}
		return median(acc)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.05*m.BinWidth {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	near("no intervention", median(predict()), points(1, 3, 5))
	near("b = 0.4·X + 1 ms (5 → 3 ms)", median(predict("svc.b=0.4*X+1ms")), points(1, 3, 3))
	// A removed part is the exact point mass at 0, a substituted
	// point(1ms) the exact point at 1 ms (deltaq.Point on an edge) and a
	// part pinned by 0·X + 10 ms the exact point at 10 ms, as point(10ms):
	// they shift the sum of the others exactly.
	near("a pinned to 10 ms", median(predict("svc_a=0*X+10ms")), points(1, 5)+0.010)
	near("b removed", median(predict("svc.b=remove")), points(1, 3))
	near("a substituted by point(1ms)", median(predict("svc.a=point(1ms)")), points(1, 5)+0.001)
	near("two on b compose: (2·X)·0.5 + 1 ms", median(predict("svc.b=2*X", "svc.b=0.5*X+1ms")), points(1, 3, 6))
	if f := predict("svc.a=X+never 5%", "svc.b=X+never 10%").Intangible(); math.Abs(f-(1-0.95*0.9)) > 1e-9 {
		t.Errorf("5 %% and 10 %% failures in sequence: %v, want 1 − 0.95·0.9", f)
	}
	if _, err := m.Predict(d, []whatif.Intervention{{Target: "svc.r", Remove: true}}); err == nil || !strings.Contains(err.Error(), "root") {
		t.Errorf("removing the root: err %v", err)
	}
	// a and b substituted by points 20 s late fit their 40000 bins each,
	// but not the sequence they are in: the error names the interventions
	// that made it too long.
	var ivs []whatif.Intervention
	for _, s := range []string{"svc.a=point(20s)", "svc.b=point(20s)"} {
		iv, err := whatif.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		ivs = append(ivs, iv)
	}
	if _, err := m.Predict(d, ivs); err == nil || !strings.Contains(err.Error(), "with svc.a=point(20s), svc.b=point(20s): ") || !strings.Contains(err.Error(), "MaxBins") {
		t.Errorf("a sequence beyond MaxBins bins: err %v", err)
	}
}

// TestContexts: the same operation called from two places is two nodes,
// the second named with _2; a span in a cycle of parent links, and a
// duplicate span id, are counted.
func TestContexts(t *testing.T) {
	var spans []Span
	for tr := uint64(1); tr <= 3; tr++ {
		spans = append(spans, sp(tr, 1, 0, "root", 0, 10),
			sp(tr, 2, 1, "cart", 1, 4), sp(tr, 3, 2, "db", 2, 3),
			sp(tr, 4, 1, "stock", 5, 9), sp(tr, 5, 4, "db", 6, 8))
	}
	spans = append(spans, sp(9, 1, 0, "root", 0, 10), sp(9, 2, 3, "x", 1, 2), sp(9, 3, 2, "y", 1, 2), sp(9, 3, 1, "dup", 1, 2))
	l := learnAll(t, Config{}, spans)
	if inc := l.Stats().Incoherence; inc.Cycle != 2 || inc.DuplicateSpan != 1 {
		t.Errorf("incoherence %+v, want 2 spans in a cycle and 1 duplicate", inc)
	}
	m, err := Build(l, 100)
	if err != nil {
		t.Fatal(err)
	}
	for probe, parent := range map[string]string{"svc_db": "svc_cart", "svc_db_2": "svc_stock"} {
		if n, ok := m.Node(probe); !ok || n.Parent != parent || n.Key() != "svc.db" {
			t.Errorf("node %s: %+v, want svc.db called by %s", probe, n, parent)
		}
	}
	iv, _ := whatif.Parse("svc.db=remove")
	if nodes, _ := m.Targets(iv); len(nodes) != 2 {
		t.Errorf("svc.db targets %d nodes, want both contexts", len(nodes))
	}
	if _, err := m.ParseDiagram(); err != nil {
		t.Fatal(err)
	}
}

func TestChoiceWeights(t *testing.T) {
	// 2/1000003 and 1/1000003 round to 2 and 1 millionths; the first
	// takes the rest.
	ps := []Pattern{{Count: 1_000_000}, {Count: 2}, {Count: 1}}
	w := choiceWeights(ps)
	if strings.Join(w, ",") != "0.999997,0.000002,0.000001" {
		t.Errorf("weights %v", w)
	}
	if w := choiceWeights([]Pattern{{Count: 2}, {Count: 1}}); strings.Join(w, ",") != "0.666667,0.333333" {
		t.Errorf("weights %v", w)
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"frontend.GET /checkout": "frontend_GET_checkout",
		"a..b--c":                "a_b_c",
		"9lives.x":               "n_9lives_x",
		"ΔQ.op":                  "Q_op",
		"...":                    "op",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := sanitize(strings.Repeat("a", 300)); len(got) != maxProbeName {
		t.Errorf("a 300-byte name became %d bytes", len(got))
	}
}

// TestEveryRootFailed: when every instance of a root operation failed
// (here because its call did), no successful duration of it sets the bins;
// its exclusive times do, not a 1 ns default, nor another root's shorter
// durations, beyond which every one of them is a timeout. Removing the
// failing call then leaves the root's own 3 ms, which complete.
func TestEveryRootFailed(t *testing.T) {
	for _, other := range []bool{false, true} {
		var spans []Span
		for tr := uint64(1); tr <= 10; tr++ {
			r, q := sp(tr, 1, 0, "r", 0, 5), sp(tr, 2, 1, "q", 1, 3)
			r.Failed, q.Failed = true, true
			spans = append(spans, r, q)
			if other { // a root that succeeds in 0.1 ms
				spans = append(spans, sp(100+tr, 1, 0, "b", 0, 0.1))
			}
		}
		m, d := build(t, Config{}, spans, 100)
		rn, _ := m.Node("svc_r")
		w := m.Width(rn)
		if w < 1e-5 || w > 1e-4 {
			t.Errorf("other root %v: bin width %v, want the root's 3 ms exclusive time over about 100 bins", other, w)
		}
		iv, err := whatif.Parse("svc.q=remove")
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.Predict(d, []whatif.Intervention{iv})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p {
			if r.Root != "svc_r" {
				continue
			}
			if f := r.After.Intangible(); f > 1e-9 {
				t.Errorf("other root %v: the failing call removed: failure %v, want 0", other, f)
			}
			if q, ok := r.After.Quantile(0.5); !ok || math.Abs(q-0.003) > 2*w {
				t.Errorf("other root %v: the failing call removed: median %v (%v), want 3 ms", other, q, ok)
			}
		}
	}
}
