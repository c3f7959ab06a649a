// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/dist"
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
	// KS is the Kolmogorov–Smirnov distance between the two CDFs, up to
	// the shorter dMax (deltaq.Distance).
	KS        float64 `json:"ks"`
	Predicted Summary `json:"predicted"`
	Observed  Summary `json:"observed"`
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

// Validate evaluates the model and compares each root operation's
// predicted ΔQ with its observed one.
func (m *Model) Validate(d *diagram.Diagram) ([]Validation, error) {
	in, err := m.Inputs()
	if err != nil {
		return nil, err
	}
	pred, err := m.Evaluate(d, in)
	if err != nil {
		return nil, err
	}
	out := make([]Validation, len(m.Roots))
	for k, root := range m.Roots {
		n, _ := m.Node(root)
		obs, err := n.Duration.DeltaQ(m.BinWidth)
		if err != nil {
			return nil, fmt.Errorf("model: observed duration of %s: %w", root, err)
		}
		ks, err := deltaq.Distance(pred[k], obs)
		if err != nil {
			return nil, fmt.Errorf("model: %s: %w", root, err)
		}
		out[k] = Validation{Root: root, Operation: n.Key(), Instances: n.Instances, KS: ks,
			Predicted: Summarize(pred[k]), Observed: Summarize(obs), PredictedDQ: pred[k], ObservedDQ: obs}
	}
	return out, nil
}

// Intervention is a what-if change of the exclusive time X of the nodes
// of one operation or probe.
type Intervention struct {
	// Target is "service.operation" (every node of that operation) or a
	// node's probe.
	Target string
	// Text is the expression as given.
	Text string
	// Remove removes the call: the node's whole span (its calls included)
	// takes no time and never fails.
	Remove bool
	// A and B make X′ = A·X + B (A = 1, B = 0 when Dist is set or the
	// expression does not say).
	A, B float64
	// Dist, when set, replaces X by this distribution.
	Dist dist.Dist
	// Fail injects failures: X′ never completes with this probability.
	Fail float64
}

// affineRE matches "[A*]X[+B]" with the spaces removed.
var affineRE = regexp.MustCompile(`^(?:([0-9.]+)\*)?X(?:\+(.+))?$`)

// failRE matches a trailing "+ never P%" with the spaces removed.
var failRE = regexp.MustCompile(`\+never([0-9.]+)%$`)

// InterventionHelp describes the expressions of ParseIntervention.
const InterventionHelp = `An intervention is TARGET=EXPR. TARGET is "service.operation" (every node of
that operation) or a node's probe name (model.json). EXPR changes the node's
exclusive time X:
  A*X + B          affine: A ≥ 0 times as slow, B ≥ 0 later (e.g. 0.5*X+1ms;
                   X, 2*X and X+3ms too; 0*X+5ms pins it to 5ms)
  DIST             substitution by a distribution of deltaq eval's language
                   (exp(5ms), uniform(1ms,3ms), …)
  EXPR + never P%  failure injection: X never completes with probability P %
  remove           the call is removed: the span and its calls take no time`

// ParseIntervention parses "TARGET=EXPR" (InterventionHelp).
func ParseIntervention(s string) (Intervention, error) {
	target, text, ok := strings.Cut(s, "=")
	target, text = strings.TrimSpace(target), strings.TrimSpace(text)
	if !ok || target == "" || text == "" {
		return Intervention{}, fmt.Errorf("want TARGET=EXPR, got %q", s)
	}
	iv, err := ParseExpr(text)
	if err != nil {
		return Intervention{}, fmt.Errorf("%s: %w", target, err)
	}
	iv.Target = target
	return iv, nil
}

// ParseExpr parses the EXPR of an intervention (InterventionHelp), without
// a target: the form a configuration that names the target elsewhere
// uses. Its errors do not name the target.
func ParseExpr(text string) (Intervention, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Intervention{}, fmt.Errorf("empty expression: want A*X+B, a distribution or remove")
	}
	iv := Intervention{Text: text, A: 1}
	if text == "remove" {
		iv.Remove = true
		return iv, nil
	}
	compact := strings.Join(strings.Fields(text), "")
	base := text
	if m := failRE.FindStringSubmatch(compact); m != nil {
		p, err := strconv.ParseFloat(m[1], 64)
		if err != nil || p < 0 || p > 100 {
			return Intervention{}, fmt.Errorf("failure %s%% must be a percentage in [0, 100]", m[1])
		}
		iv.Fail = p / 100
		compact = compact[:len(compact)-len(m[0])]
		base = compact
	}
	if m := affineRE.FindStringSubmatch(compact); m != nil {
		if m[1] != "" {
			a, err := strconv.ParseFloat(m[1], 64)
			if err != nil || math.IsInf(a, 0) {
				return Intervention{}, fmt.Errorf("factor %q is not a number ≥ 0", m[1])
			}
			iv.A = a
		}
		if m[2] != "" {
			b, err := dist.ParseDuration(m[2])
			if err != nil {
				return Intervention{}, fmt.Errorf("shift %q: %v", m[2], err)
			}
			iv.B = b
		}
		return iv, nil
	}
	d, err := dist.Parse(base)
	if err != nil {
		return Intervention{}, fmt.Errorf("%q is neither A*X+B nor a distribution: %v", base, err)
	}
	iv.Dist = d
	return iv, nil
}

// Transform returns the ΔQ X′ the intervention makes of the ΔQ x of one
// part, on x's bin width: for Remove, all of the mass at delay 0 (the call
// takes no time and never fails); for a substitution, the distribution
// built over its default dMax (dist.DefaultDMax); else A·x + B
// (deltaq.TimeTransform); then the injected failures, a choice between
// that and never. It is the one application of an intervention, shared by
// Model.Apply and the live what-if scenarios of package analysis.
func (iv Intervention) Transform(x deltaq.DeltaQ) (deltaq.DeltaQ, error) {
	w := x.Width()
	if iv.Remove {
		return deltaq.Point(0, w, 1)
	}
	var err error
	if iv.Dist != nil {
		bins := min(max(int(math.Ceil(dist.DefaultDMax([]dist.Dist{iv.Dist})/w)), 1), deltaq.MaxBins)
		if x, err = iv.Dist.Build(w, bins); err != nil {
			return deltaq.DeltaQ{}, err
		}
	} else if iv.A != 1 || iv.B != 0 {
		if x, err = deltaq.TimeTransform(x, iv.A, iv.B); err != nil {
			return deltaq.DeltaQ{}, err
		}
	}
	if iv.Fail > 0 {
		never, err := deltaq.Never(w, x.Bins())
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		return deltaq.Choice([]float64{1 - iv.Fail, iv.Fail}, []deltaq.DeltaQ{x, never})
	}
	return x, nil
}

// Targets returns the nodes an intervention applies to.
func (m *Model) Targets(iv Intervention) ([]*Node, error) {
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
		return nil, fmt.Errorf("%s: no node has this operation (service.operation) or probe", iv.Target)
	}
	return out, nil
}

// Apply changes inputs (from Inputs) by the interventions, in order; two
// on one node compose.
func (m *Model) Apply(inputs map[string]deltaq.DeltaQ, ivs []Intervention) error {
	for _, iv := range ivs {
		nodes, err := m.Targets(iv)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			// Removal replaces the node's whole span, its calls included
			// (its probe); the other interventions its exclusive time (its
			// outcome). Every ΔQ of the model has the bin width m.BinWidth.
			key := n.Outcome
			if iv.Remove {
				if n.Parent == "" {
					return fmt.Errorf("%s: %s is a root operation; only calls can be removed", iv.Target, n.Probe)
				}
				key = n.Probe
			}
			x, ok := inputs[n.Outcome]
			if !ok {
				return fmt.Errorf("%s: no exclusive time for %s", iv.Target, n.Probe)
			}
			y, err := iv.Transform(x)
			if err != nil {
				return fmt.Errorf("%s=%s: %w", iv.Target, iv.Text, err)
			}
			inputs[key] = y
		}
	}
	return nil
}

// Prediction is the end-to-end ΔQ of one root operation before and after
// the interventions.
type Prediction struct {
	Root          string
	Operation     string
	Before, After deltaq.DeltaQ
}

// Predict evaluates the diagram d of the model without and with the
// interventions.
func (m *Model) Predict(d *diagram.Diagram, ivs []Intervention) ([]Prediction, error) {
	in, err := m.Inputs()
	if err != nil {
		return nil, err
	}
	before, err := m.Evaluate(d, in)
	if err != nil {
		return nil, err
	}
	if err := m.Apply(in, ivs); err != nil {
		return nil, err
	}
	after, err := m.Evaluate(d, in)
	if err != nil {
		return nil, err
	}
	out := make([]Prediction, len(m.Roots))
	for k, r := range m.Roots {
		n, _ := m.Node(r)
		out[k] = Prediction{Root: r, Operation: n.Key(), Before: before[k], After: after[k]}
	}
	return out, nil
}
