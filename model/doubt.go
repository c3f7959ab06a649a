// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/distribution"
)

// Doubt is a reason not to trust a model, in words, with its likely cause.
type Doubt struct {
	What  string `json:"what"`
	Cause string `json:"cause"`
}

// The thresholds of Doubts.
const (
	// DoubtIncoherentShare: incoherent or early-closed traces, as a share
	// of the traces closed.
	DoubtIncoherentShare = 0.05
	// DoubtOutsideShare: spans outside their parent, or dropped from
	// traces cut at MaxSpansPerTrace, as a share of spans.
	DoubtOutsideShare = 0.05
	// DoubtKS: the KS distance between a root's predicted and observed ΔQ.
	// Measured on models of independent parts it stays below 0.09 (the
	// shop corpus of the README, 0.079; 3,000 jobs of the workload's
	// delays topology, 0.021); the M/M/1/K tandem, whose parts are not
	// independent, gives 0.25.
	DoubtKS = 0.1
	// SamplingKS over √n bounds the distance by which the empirical CDF
	// of n instances strays from the true one, in 99 % of samples: the
	// Dvoretzky–Kiefer–Wolfowitz inequality (with Massart's constant),
	// P(sup |F_n − F| > ε) ≤ 2·e^(−2nε²), at 0.01: sqrt(ln(200)/2).
	// Independent stages are called dependent in none of 40 seeded
	// corpora at 10 to 1000 traces and 100 and 1000 bins; stages sharing
	// a slowness factor in 36–40 of 40 from 300 traces (TestFewTracesDoubt).
	SamplingKS = 1.628
)

// Doubts returns what makes a model learned with the counts st, the
// extreme outliers of its nodes (Model.Outliers), the validations v and the
// grace period unreliable, most fundamental first: a large share of
// incoherent traces (grace too short when traces got spans after they were
// closed, spans missing otherwise), traces closed early by the open-trace
// bound, traces left out beyond the node or depth limit, spans outside
// their parents (clocks skewed), spans dropped from
// traces too large (their parents' exclusive times hold them), durations far beyond
// the others (wrong timestamps), and predictions far from observation
// (dependence, a model learned from part of the traces, or too few
// traces to tell either from chance). No doubt is nil.
func Doubts(st Stats, outliers []Outlier, v []Validation, grace time.Duration) []Doubt {
	var out []Doubt
	inc := st.Incoherence
	traces := max(st.Traces, 1)
	bad := st.Excluded
	incoherent := float64(bad)/float64(traces) > DoubtIncoherentShare
	if incoherent {
		d := Doubt{What: fmt.Sprintf("%.1f %% of the traces (%d of %d) are incoherent: %d spans without their parent, %d traces without a root, %d spans in cycles, %d spans that end before they start",
			100*float64(bad)/float64(traces), bad, st.Traces, inc.MissingParent, inc.NoRoot, inc.Cycle, inc.NegativeDuration)}
		switch {
		case st.Reopened > 0:
			d.Cause = fmt.Sprintf("grace too short: %d traces received spans after they were closed, so the file lists spans of one trace more than --grace %v of trace time apart; raise --grace", st.Reopened, grace)
		case inc.MissingParent == 0 && inc.NoRoot == 0 && inc.NegativeDuration > 0:
			d.Cause = "wrong timestamps: spans that end before they start (a clock stepped back, or the instrumentation sets them wrongly)"
		case inc.MissingParent == 0 && inc.Cycle > 0:
			// A trace without a root whose every span has its parent is
			// one in a cycle: its NoRoot is no span missing.
			d.Cause = "parent links in a cycle: the instrumentation sets wrong parent span ids"
		default:
			d.Cause = "spans missing: the parents were never in the files (sampling that keeps parts of traces, lost exports, or a file left out)"
		}
		out = append(out, d)
	}
	if st.Evicted > 0 && float64(st.Evicted)/float64(traces) > DoubtIncoherentShare {
		out = append(out, Doubt{What: fmt.Sprintf("%d traces were closed before their grace ended", st.Evicted),
			Cause: "more traces open at once than --max-open: raise it, or write the file with each trace's spans together"})
	}
	if share := float64(st.NodeCap) / float64(traces); share > DoubtIncoherentShare {
		out = append(out, Doubt{What: fmt.Sprintf("%.1f %% of the traces (%d of %d) were left out beyond the model's node limit", 100*share, st.NodeCap, st.Traces),
			Cause: "more operations in their calling contexts than the model holds (MaxNodes): span names that hold values (GET /item/123 rather than GET /item/{id}) make an operation of each; name spans by their route"})
	}
	if share := float64(st.TooDeep) / float64(traces); share > DoubtIncoherentShare {
		out = append(out, Doubt{What: fmt.Sprintf("%.1f %% of the traces (%d of %d) were left out deeper than the depth limit", 100*share, st.TooDeep, st.Traces),
			Cause: "calls within calls deeper than --max-depth: raise it, or recursion in the traced system"})
	}
	if spans := max(st.Spans, 1); float64(inc.OutsideParent)/float64(spans) > DoubtOutsideShare {
		out = append(out, Doubt{What: fmt.Sprintf("%.1f %% of the spans (%d) start before or end after their parent", 100*float64(inc.OutsideParent)/float64(spans), inc.OutsideParent),
			Cause: "clocks skewed between hosts: each span is timed by its own host's clock, and the exclusive times are clipped to the parents'"})
	}
	if spans := max(st.Spans, 1); float64(st.SpansDropped)/float64(spans) > DoubtOutsideShare {
		out = append(out, Doubt{What: fmt.Sprintf("%.1f %% of the spans (%d) were dropped from traces with more spans than a trace may have (MaxSpansPerTrace)", 100*float64(st.SpansDropped)/float64(spans), st.SpansDropped),
			Cause: "traces larger than the learner keeps: the calls beyond are missing from the model, and the exclusive times of the spans that made them include those calls"})
	}
	if d, ok := outlierDoubt(outliers); ok {
		out = append(out, d)
	}
	prior := len(out) // the doubts on the traces, not on another root's prediction
	for _, val := range v {
		if val.KS <= DoubtKS || val.ResolvedKS <= DoubtKS {
			continue // within the model's resolution
		}
		d := Doubt{What: fmt.Sprintf("the prediction of %s is far from what was observed: KS distance %.3f (above %g; %.3f beyond the model's resolution)", val.Operation, val.KS, DoubtKS, val.ResolvedKS),
			Cause: "the parts are not independent (queueing, shared resources: ΔQSD's independence hypothesis fails), or their times depend on the load"}
		switch bound := SamplingKS / math.Sqrt(float64(max(val.Instances, 1))); {
		case incoherent || prior > 0:
			d.Cause = "the model was learned from part of the traces or from distorted ones (see above)"
		case val.ResolvedKS <= bound:
			d.Cause = fmt.Sprintf("too few traces to tell: the observed ΔQ of %d instances strays from the true one by up to %.3f by chance (%g/√n, the Dvoretzky–Kiefer–Wolfowitz bound at 99 %%), independent parts or not; learn from more traces",
				val.Instances, bound, SamplingKS)
		}
		out = append(out, d)
	}
	return out
}

// maxOutlierNodes is how many nodes with extreme outliers a doubt names.
const maxOutlierNodes = 3

// outlierDoubt is the doubt of the extreme outliers, naming the nodes
// that have the most.
func outlierDoubt(outliers []Outlier) (Doubt, bool) {
	if len(outliers) == 0 {
		return Doubt{}, false
	}
	spans := uint64(0)
	for _, o := range outliers {
		spans += o.Spans
	}
	named := slices.Clone(outliers)
	slices.SortStableFunc(named, func(a, b Outlier) int { return cmp.Compare(b.Spans, a.Spans) })
	var parts []string
	for k, o := range named {
		if k == maxOutlierNodes {
			parts = append(parts, fmt.Sprintf("%d more operations", len(named)-k))
			break
		}
		parts = append(parts, fmt.Sprintf("%d of the %d of %s last %s to %s, the others at most %s", o.Spans, o.Of, o.Operation,
			distribution.FormatDuration(o.From), distribution.FormatDuration(o.Longest), distribution.FormatDuration(o.Rest)))
	}
	return Doubt{
		What: fmt.Sprintf("%d spans last implausibly long, over %d times the others or beyond 9.7 h (%s); they are left out of the bins and counted as timeouts",
			spans, ExtremeGap, strings.Join(parts, "; ")),
		Cause: "wrong timestamps (a clock not set or stepped, a time in the far future) or spans ended long after their work; if such durations are real, learn them apart from the others",
	}, true
}
