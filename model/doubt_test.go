// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"strings"
	"testing"
	"time"
)

// TestDoubts: each kind of doubt appears above its threshold with its
// likely cause, and none below.
func TestDoubts(t *testing.T) {
	ok := Stats{Spans: 1000, Traces: 100, Learned: 100}
	if d := Doubts(ok, nil, []Validation{{Operation: "f.op", KS: 0.05, ResolvedKS: 0.05}}, time.Second); d != nil {
		t.Errorf("a sound model: doubts %+v", d)
	}
	// A large KS distance that the model's resolution explains (constant
	// delays in different bins of the two ΔQs) is no doubt.
	if d := Doubts(ok, nil, []Validation{{Operation: "f.op", KS: 0.48, ResolvedKS: 0}}, time.Second); d != nil {
		t.Errorf("KS within the resolution: doubts %+v", d)
	}
	for _, c := range []struct {
		name  string
		st    Stats
		ks    float64
		whats []string
	}{
		{"spans missing", Stats{Spans: 1000, Traces: 100, Learned: 90, Excluded: 10, Incoherence: Incoherence{MissingParent: 10}}, 0,
			[]string{"10.0 % of the traces (10 of 100) are incoherent", "spans missing"}},
		{"grace too short", Stats{Spans: 1000, Traces: 130, Learned: 90, Excluded: 40, Reopened: 30, Incoherence: Incoherence{NoRoot: 30, MissingParent: 40}}, 0,
			[]string{"are incoherent", "grace too short: 30 traces received spans after they were closed", "--grace 1s"}},
		{"end before start", Stats{Spans: 1000, Traces: 100, Learned: 90, Excluded: 10, Incoherence: Incoherence{NegativeDuration: 12}}, 0,
			[]string{"10.0 % of the traces (10 of 100) are incoherent", "12 spans that end before they start", "wrong timestamps"}},
		{"cycles", Stats{Spans: 1000, Traces: 100, Learned: 90, Excluded: 10, Incoherence: Incoherence{Cycle: 20}}, 0,
			[]string{"20 spans in cycles", "parent links in a cycle"}},
		// Spans whose parent links form a cycle have no root: the learner
		// counts their trace without a root too, and that is no span missing.
		{"cycles without a root", Stats{Spans: 1000, Traces: 100, Learned: 90, Excluded: 10, Incoherence: Incoherence{Cycle: 20, NoRoot: 10}}, 0,
			[]string{"20 spans in cycles", "parent links in a cycle"}},
		{"clocks skewed", Stats{Spans: 1000, Traces: 100, Learned: 100, Incoherence: Incoherence{OutsideParent: 60}}, 0,
			[]string{"6.0 % of the spans (60) start before or end after their parent", "clocks skewed"}},
		{"dependence", ok, 0.25, []string{"prediction of f.op is far from what was observed: KS distance 0.250", "not independent"}},
		{"evicted", Stats{Spans: 1000, Traces: 100, Learned: 100, Evicted: 20}, 0, []string{"20 traces were closed before their grace ended", "--max-open"}},
		// Traces left out by the bounds of the model: 90 % of them,
		// and --strict passed.
		{"node limit", Stats{Spans: 1000, Traces: 100, Learned: 10, NodeCap: 90}, 0,
			[]string{"90.0 % of the traces (90 of 100) were left out beyond the model's node limit", "span names that hold values"}},
		{"too deep", Stats{Spans: 1000, Traces: 100, Learned: 80, TooDeep: 20}, 0,
			[]string{"20.0 % of the traces (20 of 100) were left out deeper than the depth limit", "--max-depth"}},
		// A trace cut at MaxSpansPerTrace is learned without its last
		// calls: its parents' exclusive times hold them (no doubt said so).
		{"spans dropped", Stats{Spans: 20000, Traces: 1, Learned: 1, SpansDropped: 10000}, 0,
			[]string{"50.0 % of the spans (10000) were dropped from traces with more spans than a trace may have", "exclusive times"}},
	} {
		ds := Doubts(c.st, nil, []Validation{{Operation: "f.op", Instances: c.st.Learned, KS: c.ks, ResolvedKS: c.ks}}, time.Second)
		var all []string
		for _, d := range ds {
			all = append(all, d.What+"; "+d.Cause)
		}
		text := strings.Join(all, "\n")
		for _, w := range c.whats {
			if !strings.Contains(text, w) {
				t.Errorf("%s: doubts\n%s\nlack %q", c.name, text, w)
			}
		}
	}
}
