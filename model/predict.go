// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/suggest"
	"github.com/deltaq-otel/deltaq/whatif"
)

// ReportQuantiles are the quantiles validation and predictions compare.
var ReportQuantiles = []float64{0.5, 0.9, 0.95, 0.99}

// Evaluate evaluates the model's diagram d on inputs and returns the
// calculated ΔQ of each root operation, in the order of m.Roots.
func (m *Model) Evaluate(d *diagram.Diagram, inputs map[string]deltaq.DeltaQ) ([]deltaq.DeltaQ, error) {
	ev, err := d.Evaluate(inputs)
	if err != nil {
		return nil, err
	}
	out := make([]deltaq.DeltaQ, len(m.Roots))
	for k, root := range m.Roots {
		r, ok := ev.Result(root)
		switch {
		case !ok:
			return nil, fmt.Errorf("model: the diagram has no probe %s for root operation %s", root, root)
		case r.Err != nil:
			return nil, fmt.Errorf("model: %s: %w", root, r.Err)
		case !r.OK:
			return nil, fmt.Errorf("model: %s: no ΔQ for %s", root, strings.Join(r.Missing, ", "))
		}
		out[k] = r.DeltaQ
	}
	return out, nil
}

// Validation compares the predicted and the observed end-to-end ΔQ of one
// root operation.
type Validation struct {
	Root      string `json:"root"`
	Operation string `json:"operation"`
	Instances uint64 `json:"instances"`
	// BinWidth of the root operation's ΔQs, in seconds.
	BinWidth float64 `json:"bin_width"`
	// KS is the Kolmogorov–Smirnov distance between the two CDFs, up to
	// the shorter dMax (deltaq.Distance).
	KS float64 `json:"ks"`
	// ResolvedKS is the part of KS that the model's resolution does not
	// explain (resolvedKS): 0 for a prediction off by less than a sketch
	// bucket and half a bin at every delay, as constant delays are.
	ResolvedKS float64 `json:"ks_beyond_resolution"`
	Predicted  Summary `json:"predicted"`
	Observed   Summary `json:"observed"`
	// The two ΔQs compared.
	PredictedDQ, ObservedDQ deltaq.DeltaQ `json:"-"`
}

// Summary is what a report shows of a ΔQ: quantiles (nil when out of
// reach), failure mass and mean delay of the successes, in seconds.
type Summary struct {
	Quantiles []*float64 `json:"quantiles"` // at ReportQuantiles
	Failure   float64    `json:"failure"`
	Mean      *float64   `json:"mean"`
}

// Summarize returns the Summary of dq.
func Summarize(dq deltaq.DeltaQ) Summary {
	s := Summary{Failure: math.Round(dq.Intangible()*1e9) / 1e9}
	for _, q := range ReportQuantiles {
		if v, ok := dq.Quantile(q); ok {
			s.Quantiles = append(s.Quantiles, &v)
		} else {
			s.Quantiles = append(s.Quantiles, nil)
		}
	}
	if v, ok := dq.Mean(); ok {
		s.Mean = &v
	}
	return s
}

// evaluateLearned evaluates d with the model's learned inputs, which it
// returns too.
func (m *Model) evaluateLearned(d *diagram.Diagram) (map[string]deltaq.DeltaQ, []deltaq.DeltaQ, error) {
	in, err := m.Inputs()
	if err != nil {
		return nil, nil, err
	}
	out, err := m.Evaluate(d, in)
	return in, out, err
}

// Validate evaluates the model and compares each root operation's
// predicted ΔQ with its observed one.
func (m *Model) Validate(d *diagram.Diagram) ([]Validation, error) {
	_, pred, err := m.evaluateLearned(d)
	if err != nil {
		return nil, err
	}
	out := make([]Validation, len(m.Roots))
	for k, root := range m.Roots {
		n, _ := m.Node(root)
		w := m.Width(n)
		obs, err := n.Duration.DeltaQ(w)
		if err != nil {
			return nil, fmt.Errorf("model: observed duration of %s: %w", root, err)
		}
		ks, err := deltaq.Distance(pred[k], obs)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", root, err)
		}
		out[k] = Validation{Root: root, Operation: n.Key(), Instances: n.Instances, KS: ks, ResolvedKS: resolvedKS(pred[k], obs, w), BinWidth: w,
			Predicted: Summarize(pred[k]), Observed: Summarize(obs), PredictedDQ: pred[k], ObservedDQ: obs}
	}
	return out, nil
}

// resolvedKS is the largest gap between the predicted and the observed CDF
// that the model's resolution does not explain: at every bin edge x, each
// CDF against the other's at x + δ(x), with δ(x) = x/128 + w/2. A sketch
// bucket is at most 1/128 of its delays (sketchSub), so the exclusive times'
// buckets add up to at most x/128 over a path that takes x, and half a bin
// of width w covers the two ΔQs' grids spreading a delay over different
// halves of a bin. A constant delay observed and predicted within that sits
// in different bins of the two ΔQs and makes KS large (0.48 for one of
// 10 ms), yet is no sign of dependence. Two bins, the first choice, hid
// dependence at 100 bins (TestResolvedKSPower).
func resolvedKS(pred, obs deltaq.DeltaQ, w float64) float64 {
	d := 0.0
	for i := 1; i <= max(pred.Bins(), obs.Bins()); i++ {
		x := float64(i) * w
		dx := x/sketchSub + w/2
		d = max(d, pred.CDF(x)-obs.CDF(x+dx), obs.CDF(x)-pred.CDF(x+dx))
	}
	return d
}

// Targets returns the nodes an intervention applies to.
func (m *Model) Targets(iv whatif.Intervention) ([]*Node, error) {
	if n, ok := m.Node(iv.Target); ok {
		return []*Node{n}, nil
	}
	var out []*Node
	for i := range m.Nodes {
		if m.Nodes[i].Key() == iv.Target {
			out = append(out, &m.Nodes[i])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no node has this operation (service.operation) or probe; %s", iv.Target, suggest.Known(iv.Target, m.targetNames(), 6))
	}
	return out, nil
}

// targetNames returns what an intervention may name: every node's
// operation (service.operation) and probe, each once.
func (m *Model) targetNames() []string {
	var names []string
	for i := range m.Nodes {
		for _, n := range []string{m.Nodes[i].Key(), m.Nodes[i].Probe} {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// Load is the extra attempts a resilience pattern costs at one node.
type Load struct {
	// Probe is the node's, Intervention the expression as given.
	Probe        string `json:"probe"`
	Intervention string `json:"intervention"`
	// PerCall is the expected attempts beyond the first per call of the
	// node (whatif.Intervention.ExtraAttempts); PerRequest the same per
	// instance of its root operation: PerCall times the calls of the node
	// per root instance, the product of CallsPerParent from the node up.
	PerCall    float64 `json:"per_call"`
	PerRequest float64 `json:"per_request"`
}

// Apply changes inputs (from Inputs) by the interventions, in order, and
// returns the load of the resilience patterns among them. Two on one node
// compose. An intervention on the call (removal, a resilience pattern)
// replaces the node's whole span, its calls included (its probe): for a
// node with calls, the span's ΔQ the diagram d calculates from the inputs
// so far; interventions given after it on the nodes it calls, or on its
// own exclusive time, would no longer change it: they are an error, so
// give those first.
func (m *Model) Apply(d *diagram.Diagram, inputs map[string]deltaq.DeltaQ, ivs []whatif.Intervention) ([]Load, error) {
	var loads []Load
	onCall := map[string]string{} // probe → the intervention on its whole span
	for _, iv := range ivs {
		nodes, err := m.Targets(iv)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if iv.OnCall() && n.Parent == "" {
				return nil, fmt.Errorf("%s: %s is a root operation; only calls can be removed or wrapped in a resilience pattern", iv.Target, n.Probe)
			}
			if by, call, ok := m.replacedBy(n, onCall, !iv.OnCall() && !n.Leaf()); ok {
				within := n.Probe
				if call == n.Probe {
					within = "its exclusive time"
				}
				return nil, fmt.Errorf("%s=%s: %s, given before, stands for the whole span of %s, %s included: this would change nothing; give it first", iv.Target, iv.Text, by, call, within)
			}
			x, err := m.partOf(d, inputs, n, iv.OnCall())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", iv.Target, err)
			}
			y, err := iv.Transform(x)
			if err != nil {
				return nil, fmt.Errorf("%s=%s: %w", iv.Target, iv.Text, err)
			}
			if iv.Pattern == whatif.Retry || iv.Pattern == whatif.Hedge {
				per := iv.ExtraAttempts(x)
				loads = append(loads, Load{Probe: n.Probe, Intervention: iv.Target + "=" + iv.Text, PerCall: per, PerRequest: per * m.callsPerRoot(n)})
			}
			// Every ΔQ of a root's calls has the root's bin width.
			if iv.OnCall() {
				inputs[n.Probe] = y
				onCall[n.Probe] = iv.Target + "=" + iv.Text
			} else {
				inputs[n.Outcome] = y
			}
		}
	}
	return loads, nil
}

// replacedBy returns the intervention in onCall on a call that node n is
// within, and that call's probe: a call of one of n's ancestors, or with
// self n's own (for an intervention on the exclusive time of a node with
// calls).
func (m *Model) replacedBy(n *Node, onCall map[string]string, self bool) (by, call string, ok bool) {
	if by, ok := onCall[n.Probe]; ok && self {
		return by, n.Probe, true
	}
	for k := 0; n.Parent != "" && k <= len(m.Nodes); k++ {
		if by, ok := onCall[n.Parent]; ok {
			return by, n.Parent, true
		}
		p, ok := m.Node(n.Parent)
		if !ok {
			break
		}
		n = p
	}
	return "", "", false
}

// partOf returns the ΔQ an intervention on node n changes: its exclusive
// time, or with call its whole span (its probe's input if one was set, else
// its exclusive time for a leaf, else the diagram's calculation).
func (m *Model) partOf(d *diagram.Diagram, inputs map[string]deltaq.DeltaQ, n *Node, call bool) (deltaq.DeltaQ, error) {
	key := n.Outcome
	if call {
		key = n.Probe
	}
	if x, ok := inputs[key]; ok {
		return x, nil
	}
	if !call || n.Leaf() {
		return deltaq.DeltaQ{}, fmt.Errorf("no exclusive time for %s", n.Probe)
	}
	ev, err := d.Evaluate(inputs)
	if err != nil {
		return deltaq.DeltaQ{}, err
	}
	r, ok := ev.Result(n.Probe)
	switch {
	case !ok:
		return deltaq.DeltaQ{}, fmt.Errorf("the diagram has no probe %s", n.Probe)
	case r.Err != nil:
		return deltaq.DeltaQ{}, fmt.Errorf("%s: %w", n.Probe, r.Err)
	case !r.OK:
		return deltaq.DeltaQ{}, fmt.Errorf("%s: no ΔQ for %s", n.Probe, strings.Join(r.Missing, ", "))
	}
	return r.DeltaQ, nil
}

// callsPerRoot returns the mean calls of node n per instance of its root
// operation: the product of CallsPerParent from n up to the root.
func (m *Model) callsPerRoot(n *Node) float64 {
	c := 1.0
	for k := 0; n.Parent != "" && k <= len(m.Nodes); k++ {
		c *= n.CallsPerParent
		p, ok := m.Node(n.Parent)
		if !ok {
			break
		}
		n = p
	}
	return c
}

// Prediction is the end-to-end ΔQ of one root operation before and after
// the interventions, with the load of the resilience patterns on its nodes.
type Prediction struct {
	Root          string
	Operation     string
	Before, After deltaq.DeltaQ
	Loads         []Load
}

// Predict evaluates the diagram d of the model without and with the
// interventions; an evaluation that fails with them names them.
func (m *Model) Predict(d *diagram.Diagram, ivs []whatif.Intervention) ([]Prediction, error) {
	in, before, err := m.evaluateLearned(d)
	if err != nil {
		return nil, err
	}
	loads, err := m.Apply(d, in, ivs)
	if err != nil {
		return nil, err
	}
	after, err := m.Evaluate(d, in)
	if err != nil {
		// The model evaluated without them: they made it fail (a
		// sequence beyond MaxBins bins).
		sets := make([]string, len(ivs))
		for k, iv := range ivs {
			sets[k] = iv.Target + "=" + iv.Text
		}
		return nil, fmt.Errorf("with %s: %w", strings.Join(sets, ", "), err)
	}
	out := make([]Prediction, len(m.Roots))
	for k, r := range m.Roots {
		n, _ := m.Node(r)
		out[k] = Prediction{Root: r, Operation: n.Key(), Before: before[k], After: after[k]}
		for _, ld := range loads {
			if m.rootOf(ld.Probe) == r {
				out[k].Loads = append(out[k].Loads, ld)
			}
		}
	}
	return out, nil
}

// rootOf returns the root probe of a node's probe.
func (m *Model) rootOf(probe string) string {
	for k := 0; k <= len(m.Nodes); k++ {
		n, ok := m.Node(probe)
		if !ok || n.Parent == "" {
			return probe
		}
		probe = n.Parent
	}
	return probe
}
