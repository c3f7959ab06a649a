// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"errors"
	"fmt"
	"sort"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// plan is a validated diagram compiled for evaluation: the probes, and the
// definitions as trees of probe indices in dependency order, so that
// Evaluate visits each probe once and looks nothing up by name except its
// inputs.
type plan struct {
	probes []Probe
	index  map[string]int
	defs   []compiledDef // dependency order: every s: target comes first
}

type compiledDef struct {
	probe int
	chain []node
}

type nodeKind uint8

const (
	nodeOutcome nodeKind = iota + 1
	nodeRef
	nodeOp
)

// node is one component: for nodeOutcome and nodeRef, probe is the index of
// the outcome's or the referenced definition's probe; for nodeOp, the
// operator's.
type node struct {
	kind     nodeKind
	probe    int
	pos      Pos
	op       OpKind
	weights  []float64
	branches [][]node
}

// compile builds the plan of a diagram that passed every check.
func (v *validator) compile() *plan {
	p := &plan{index: map[string]int{}}
	add := func(pr Probe) {
		p.index[pr.Name] = len(p.probes)
		p.probes = append(p.probes, pr)
	}
	for _, def := range v.defOrder {
		add(Probe{Name: def.Name, Kind: DefinitionProbe, Pos: def.NamePos})
	}
	for _, op := range v.opOrder {
		add(Probe{Name: op.Name, Kind: OperatorProbe, Op: op.Kind, Pos: op.Pos})
	}
	for _, o := range v.outcomeOrder {
		add(Probe{Name: o.Name, Kind: OutcomeProbe, Pos: o.NamePos})
	}
	var chain func(c *Chain) []node
	chain = func(c *Chain) []node {
		ns := make([]node, len(c.Elems))
		for i, e := range c.Elems {
			switch e := e.(type) {
			case *Outcome:
				ns[i] = node{kind: nodeOutcome, probe: p.index[e.Name], pos: e.NamePos}
			case *ProbeRef:
				ns[i] = node{kind: nodeRef, probe: p.index[e.Name], pos: e.Pos}
			case *Operator:
				n := node{kind: nodeOp, probe: p.index[e.Name], pos: e.Pos, op: e.Kind}
				for _, pr := range e.Probs {
					n.weights = append(n.weights, pr.Value)
				}
				for _, b := range e.Branches {
					n.branches = append(n.branches, chain(b))
				}
				ns[i] = n
			}
		}
		return ns
	}
	_, out, _ := v.deps()
	for _, scc := range tarjan(out) {
		// Validation found no cycle, so every component is one definition.
		def := v.defOrder[scc[0]]
		p.defs = append(p.defs, compiledDef{probe: p.index[def.Name], chain: chain(def.Chain)})
	}
	return p
}

// Source says where the ΔQ used for a reference s:x came from.
type Source int

const (
	// Unavailable: x had neither an observed nor a calculated ΔQ.
	Unavailable Source = iota
	// Observed: the caller supplied an observed ΔQ for x.
	Observed
	// Calculated: x had no observed ΔQ, so its calculated ΔQ was used.
	Calculated
)

// String returns "observed", "calculated" or "unavailable".
func (s Source) String() string {
	switch s {
	case Observed:
		return "observed"
	case Calculated:
		return "calculated"
	}
	return "unavailable"
}

// RefUse records which ΔQ one reference s:Name contributed.
type RefUse struct {
	Name   string
	Pos    Pos // position of the 's' of the reference
	Source Source
}

// Result is the outcome of evaluating one probe.
type Result struct {
	Probe
	// DeltaQ is the probe's calculated ΔQ; valid only when OK. For an
	// outcome probe it is the observed ΔQ that was supplied, since an
	// outcome has no structure to calculate from.
	DeltaQ deltaq.DeltaQ
	// OK reports whether DeltaQ could be calculated.
	OK bool
	// Missing lists, sorted, the probes (outcomes, or definitions referenced
	// with s:) whose ΔQ was needed and neither supplied nor calculable. A
	// missing input leaves the probe uncalculated: it is never taken as zero
	// delay.
	Missing []string
	// Refs lists the s: references inside the probe's expression (for an
	// operator: inside its branches), in source order, with the source of
	// the ΔQ each contributed.
	Refs []RefUse
	// Err is set when an operator failed (for instance a result above
	// deltaq.MaxBins), here or in a probe this one depends on.
	Err error
}

// Evaluation holds the results of one Evaluate call, one per probe, in the
// order of Diagram.Probes.
type Evaluation struct {
	Results []Result
	// Missing is the union of the Missing lists of every result, sorted.
	Missing []string

	index map[string]int
}

// Result returns the result of the named probe.
func (e *Evaluation) Result(name string) (*Result, bool) {
	i, ok := e.index[name]
	if !ok {
		return nil, false
	}
	return &e.Results[i], true
}

// ErrNotValidated is returned by Evaluate for a diagram that has not passed
// Validate.
var ErrNotValidated = errors.New("diagram: diagram has not been validated")

// Evaluate computes the calculated ΔQ of every probe from the observed ΔQs
// in inputs, keyed by probe name (names the diagram does not use are
// ignored). It walks the diagram with the ΔQ operators of thesis 2.1.7:
//
//   - a chain c₁ -> c₂ -> … is the convolution ΔQ₁ ⊗ ΔQ₂ ⊗ … (eq. 2.2);
//   - a:x(b₁, …) is Π ΔQᵢ, f:x(b₁, …) is 1 − Π(1 − ΔQᵢ) and
//     p:x[p₁, …](b₁, …) is Σ pᵢ ΔQᵢ on the CDFs (eqs. 2.3 to 2.5);
//   - an outcome contributes its observed ΔQ;
//   - a reference s:x contributes x's observed ΔQ when inputs has one, else
//     x's calculated ΔQ (thesis 3.4), and the result says which (Refs).
//
// The calculated ΔQ of an operator always comes from its branches; its
// observed ΔQ, if supplied, serves only for comparison by the caller.
// Definitions are evaluated once each, in the dependency order fixed by
// Validate. Operands of different bin widths are coarsened to the coarsest
// by the deltaq operators, and a convolution's result covers the sum of its
// operands' dMax.
//
// A probe whose inputs are incomplete is reported with OK false and the
// missing names; Evaluate itself fails only for a diagram that was not
// validated. It does not modify the diagram, so concurrent calls are safe.
func (d *Diagram) Evaluate(inputs map[string]deltaq.DeltaQ) (*Evaluation, error) {
	p := d.plan
	if p == nil {
		return nil, ErrNotValidated
	}
	ev := &evaluator{p: p, inputs: inputs, res: make([]Result, len(p.probes)), missing: make([][]int, len(p.probes))}
	for i := range p.probes {
		ev.res[i].Probe = p.probes[i]
	}
	for i, pr := range p.probes {
		if pr.Kind != OutcomeProbe {
			continue
		}
		ev.res[i].DeltaQ, ev.res[i].OK, ev.missing[i], ev.res[i].Err = ev.input(i)
	}
	for _, cd := range p.defs {
		ev.open = append(ev.open[:0], cd.probe)
		v := ev.chain(cd.chain)
		ev.set(cd.probe, v)
	}
	out := &Evaluation{Results: ev.res, index: p.index}
	var all []int
	for i := range ev.res {
		ev.res[i].Missing = ev.names(ev.missing[i])
		all = mergeSorted(all, ev.missing[i])
	}
	out.Missing = ev.names(all)
	return out, nil
}

// value is the partial result of evaluating part of an expression.
type value struct {
	dq      deltaq.DeltaQ
	ok      bool
	missing []int // probe indices, sorted, unique
	err     error
}

type evaluator struct {
	p       *plan
	inputs  map[string]deltaq.DeltaQ
	res     []Result
	missing [][]int
	open    []int // probes whose expression is being walked (definition, then operators)
}

// input returns the supplied ΔQ of probe i.
// A zero DeltaQ is not a ΔQ: it is an error, not a missing input.
func (ev *evaluator) input(i int) (dq deltaq.DeltaQ, ok bool, missing []int, err error) {
	dq, ok = ev.inputs[ev.p.probes[i].Name]
	if !ok {
		return deltaq.DeltaQ{}, false, []int{i}, nil
	}
	if dq.Bins() == 0 || !(dq.Width() > 0) {
		return deltaq.DeltaQ{}, false, nil, fmt.Errorf("input ΔQ of %s is not a valid ΔQ", ev.p.probes[i].Name)
	}
	return dq, true, nil, nil
}

func (ev *evaluator) set(i int, v value) {
	r := &ev.res[i]
	r.DeltaQ, r.OK, r.Err = v.dq, v.ok, v.err
	ev.missing[i] = v.missing
}

func (ev *evaluator) names(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = ev.p.probes[i].Name
	}
	sort.Strings(out)
	return out
}

// chain evaluates c₁ -> c₂ -> … as the convolution of its elements. Every
// element is evaluated even after one fails, so that the operators inside
// get their own results and the missing list is complete.
func (ev *evaluator) chain(ns []node) value {
	var acc value
	for k := range ns {
		v := ev.node(&ns[k])
		if k == 0 {
			acc = v
			continue
		}
		acc.missing = mergeSorted(acc.missing, v.missing)
		if acc.err == nil {
			acc.err = v.err
		}
		if !acc.ok || !v.ok {
			acc.ok = false
			acc.dq = deltaq.DeltaQ{}
			continue
		}
		dq, err := deltaq.Convolve(acc.dq, v.dq)
		if err != nil {
			acc = value{missing: acc.missing, err: fmt.Errorf("sequence at %s: %w", ns[k].pos, err)}
			continue
		}
		acc.dq = dq
	}
	if acc.err != nil || len(acc.missing) > 0 {
		acc.ok = false
		acc.dq = deltaq.DeltaQ{}
	}
	return acc
}

func (ev *evaluator) node(n *node) value {
	switch n.kind {
	case nodeOutcome:
		r := &ev.res[n.probe]
		return value{dq: r.DeltaQ, ok: r.OK, err: r.Err, missing: ev.missing[n.probe]}
	case nodeRef:
		return ev.ref(n)
	case nodeOp:
		return ev.operator(n)
	}
	return value{err: fmt.Errorf("unknown node at %s", n.pos)}
}

// ref evaluates s:x: x's observed ΔQ if supplied, else its calculated one
// (already computed: definitions are visited in dependency order).
func (ev *evaluator) ref(n *node) value {
	use := RefUse{Name: ev.p.probes[n.probe].Name, Pos: n.pos}
	var v value
	if dq, ok, _, err := ev.input(n.probe); ok {
		use.Source = Observed
		v = value{dq: dq, ok: true}
	} else if err != nil {
		v = value{err: err}
	} else if r := &ev.res[n.probe]; r.OK {
		use.Source = Calculated
		v = value{dq: r.DeltaQ, ok: true}
	} else {
		v = value{err: r.Err, missing: ev.missing[n.probe]}
		if r.Err == nil && len(v.missing) == 0 {
			v.missing = []int{n.probe}
		}
	}
	for _, i := range ev.open {
		ev.res[i].Refs = append(ev.res[i].Refs, use)
	}
	return v
}

// operator evaluates the branches of an operator and combines their CDFs.
func (ev *evaluator) operator(n *node) value {
	ev.open = append(ev.open, n.probe)
	dqs := make([]deltaq.DeltaQ, len(n.branches))
	var out value
	ok := true
	for k, b := range n.branches {
		v := ev.chain(b)
		out.missing = mergeSorted(out.missing, v.missing)
		if out.err == nil {
			out.err = v.err
		}
		ok = ok && v.ok
		dqs[k] = v.dq
	}
	ev.open = ev.open[:len(ev.open)-1]
	if ok && out.err == nil && len(out.missing) == 0 {
		var dq deltaq.DeltaQ
		var err error
		switch n.op {
		case AllToFinish:
			dq, err = deltaq.AllToFinish(dqs...)
		case FirstToFinish:
			dq, err = deltaq.FirstToFinish(dqs...)
		case Choice:
			dq, err = deltaq.Choice(n.weights, dqs)
		default:
			err = errors.New("unknown operator kind")
		}
		if err != nil {
			pr := ev.p.probes[n.probe]
			out.err = fmt.Errorf("%c:%s at %s: %w", pr.Op.Letter(), pr.Name, pr.Pos, err)
		} else {
			out.dq, out.ok = dq, true
		}
	}
	ev.set(n.probe, out)
	return out
}

// mergeSorted returns the sorted union of two sorted lists of unique ints.
// It returns one of its arguments when the other is empty (lists are never
// modified in place, so sharing is safe).
func mergeSorted(a, b []int) []int {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}
