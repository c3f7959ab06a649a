// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"math"
	"strconv"
	"strings"
)

// probTolerance is how far the probabilities of a choice may sum from 1.
const probTolerance = 1e-9

// ProbeKind says what a probe observes.
type ProbeKind int

const (
	// DefinitionProbe observes a definition `name = chain;` (the system
	// included) from the start of its chain to its end.
	DefinitionProbe ProbeKind = iota + 1
	// OperatorProbe observes an operator from its start event to its end
	// event (thesis 3.4.1).
	OperatorProbe
	// OutcomeProbe observes one outcome.
	OutcomeProbe
)

// String returns "definition", "operator" or "outcome".
func (k ProbeKind) String() string {
	switch k {
	case DefinitionProbe:
		return "definition"
	case OperatorProbe:
		return "operator"
	case OutcomeProbe:
		return "outcome"
	}
	return "unknown"
}

// Probe is one observation point of a diagram. Probe names are unique within
// a diagram: every definition, every operator and every distinct outcome name
// has one (thesis 3.4.1).
type Probe struct {
	Name string
	Kind ProbeKind
	// Op is the operator's kind for an OperatorProbe, else 0.
	Op OpKind
	// Pos is where the probe is defined: a definition's name, an operator's
	// kind letter, an outcome's first occurrence.
	Pos Pos
}

// Probes returns the probes of a validated diagram: definitions, then
// operators, then outcomes, each group in source order. It returns nil for a
// diagram that has not been validated. The slice is shared: do not modify
// it.
func (d *Diagram) Probes() []Probe {
	if d.plan == nil {
		return nil
	}
	return d.plan.probes
}

// Probe returns the probe of the given name.
func (d *Diagram) Probe(name string) (Probe, bool) {
	if d.plan == nil {
		return Probe{}, false
	}
	i, ok := d.plan.index[name]
	if !ok {
		return Probe{}, false
	}
	return d.plan.probes[i], true
}

// Validate checks the semantic rules of an outcome diagram and, when they
// hold, prepares it for Evaluate. It reports, as a list sorted by position
// (as Parse does):
//
//   - a name defined twice (definitions and operators share one name space,
//     since each names a probe);
//   - an outcome that has the name of a definition or an operator;
//   - a reference s:x to something that is not a definition;
//   - cycles of references (thesis 4.3.3), printed as `a -> b -> a`;
//   - an operator with fewer than two branches (thesis 4.3.2);
//   - probabilities on an operator other than p:, a p: without them, a count
//     of probabilities different from the count of branches, a probability
//     outside (0, 1), or probabilities whose sum differs from 1 by more than
//     1e-9;
//   - operators nested deeper than MaxNesting.
//
// Parse calls Validate; call it again after changing a Diagram.
func (d *Diagram) Validate() error {
	d.plan = nil
	for i, def := range d.Defs {
		if def == nil {
			sink := &errorSink{filename: d.Filename}
			sink.errorf(Pos{}, "definition %d is nil", i)
			return sink.list
		}
	}
	v := &validator{
		d:        d,
		errs:     &errorSink{filename: d.Filename},
		defs:     map[string]*Definition{},
		ops:      map[string]*Operator{},
		outcomes: map[string]*Outcome{},
	}
	v.collect()
	v.check()
	v.cycles()
	if len(v.errs.list) > 0 {
		v.errs.list.Sort()
		return v.errs.list
	}
	d.plan = v.compile()
	return nil
}

type validator struct {
	d    *Diagram
	errs *errorSink

	defs     map[string]*Definition
	ops      map[string]*Operator
	outcomes map[string]*Outcome // first occurrence

	defOrder     []*Definition // first definition of each name, source order
	opOrder      []*Operator
	outcomeOrder []*Outcome
}

// walk calls f on every component of c in source order, descending into
// operators down to MaxNesting levels (a hand-built AST may be deeper than
// Parse allows; the excess is reported, not walked).
func (v *validator) walk(c *Chain, depth int, f func(Component, int)) {
	if c == nil {
		return
	}
	for _, e := range c.Elems {
		f(e, depth)
		if op, ok := e.(*Operator); ok {
			if depth+1 > MaxNesting {
				continue
			}
			for _, b := range op.Branches {
				v.walk(b, depth+1, f)
			}
		}
	}
}

// collect records every name with its first definition and reports
// duplicates.
func (v *validator) collect() {
	for _, def := range v.d.Defs {
		if !isName(def.Name) {
			v.errs.errorf(def.NamePos, "invalid definition name %q", def.Name)
		}
		if prev, ok := v.defs[def.Name]; ok {
			v.errs.errorf(def.NamePos, "duplicate definition of %s (first defined at %s)", def.Name, prev.NamePos)
			continue
		}
		v.defs[def.Name] = def
		v.defOrder = append(v.defOrder, def)
	}
	for _, def := range v.d.Defs {
		if def.Chain == nil || len(def.Chain.Elems) == 0 {
			v.errs.errorf(def.NamePos, "definition %s has an empty chain", def.Name)
			continue
		}
		v.walk(def.Chain, 0, func(c Component, depth int) {
			switch c := c.(type) {
			case *Operator:
				if depth+1 > MaxNesting {
					v.errs.errorf(c.Pos, "operators nested deeper than %d levels", MaxNesting)
				}
				if prev, ok := v.defs[c.Name]; ok {
					v.errs.errorf(c.NamePos, "operator name %s is already used by the definition at %s", c.Name, prev.NamePos)
					return
				}
				if prev, ok := v.ops[c.Name]; ok {
					v.errs.errorf(c.NamePos, "operator name %s is already used by the operator at %s", c.Name, prev.Pos)
					return
				}
				v.ops[c.Name] = c
				v.opOrder = append(v.opOrder, c)
			case *Outcome:
				if _, ok := v.outcomes[c.Name]; !ok {
					v.outcomes[c.Name] = c
					v.outcomeOrder = append(v.outcomeOrder, c)
				}
			}
		})
	}
}

// check reports the per-component rules once every name is known.
func (v *validator) check() {
	for _, def := range v.d.Defs {
		v.walk(def.Chain, 0, func(c Component, _ int) {
			switch c := c.(type) {
			case nil:
				v.errs.errorf(def.NamePos, "definition %s has a nil component", def.Name)
			case *Outcome:
				if !isName(c.Name) {
					v.errs.errorf(c.NamePos, "invalid outcome name %q", c.Name)
				} else if prev, ok := v.defs[c.Name]; ok {
					v.errs.errorf(c.NamePos, "outcome %s has the name of the definition at %s; write s:%s to use its probe", c.Name, prev.NamePos, c.Name)
				} else if prev, ok := v.ops[c.Name]; ok {
					v.errs.errorf(c.NamePos, "outcome %s has the name of the operator at %s", c.Name, prev.Pos)
				}
			case *ProbeRef:
				if _, ok := v.defs[c.Name]; ok {
					return
				}
				if !isName(c.Name) {
					v.errs.errorf(c.Pos, "invalid probe name %q", c.Name)
					return
				}
				switch {
				case v.ops[c.Name] != nil:
					v.errs.errorf(c.Pos, "s:%s refers to an operator; only definitions can be referenced with s:", c.Name)
				case v.outcomes[c.Name] != nil:
					v.errs.errorf(c.Pos, "undefined probe s:%s (%s is an outcome: write it without s:)", c.Name, c.Name)
				default:
					v.errs.errorf(c.Pos, "undefined probe s:%s", c.Name)
				}
			case *Operator:
				v.checkOperator(c)
			default:
				v.errs.errorf(c.Position(), "unknown component %T", c)
			}
		})
	}
}

// isName reports whether s is a name of the grammar:
// [A-Za-z_][A-Za-z0-9_]*. Parsed names always are; hand-built ones are
// checked so that Format's output parses.
func isName(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isLetter(s[i]) && !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func (v *validator) checkOperator(op *Operator) {
	if !isName(op.Name) {
		v.errs.errorf(op.NamePos, "invalid operator name %q", op.Name)
	}
	if op.Kind != AllToFinish && op.Kind != FirstToFinish && op.Kind != Choice {
		v.errs.errorf(op.Pos, "operator %s has no kind (a:, f: or p:)", op.Name)
		return
	}
	title := string(op.Kind.Letter()) + ":" + op.Name
	if n := len(op.Branches); n < 2 {
		v.errs.errorf(op.Pos, "%s has %d %s; an operator needs at least 2", title, n, plural(n, "branch", "branches"))
	}
	for _, b := range op.Branches {
		if b == nil || len(b.Elems) == 0 {
			v.errs.errorf(op.Pos, "%s has an empty branch", title)
		}
	}
	if op.Kind != Choice {
		if op.Probs != nil {
			v.errs.errorf(op.Pos, "%s takes no probabilities; only p: operators do", title)
		}
		return
	}
	if op.Probs == nil {
		v.errs.errorf(op.Pos, "%s needs one probability per branch: p:%s[p1, p2, ...](...)", title, op.Name)
		return
	}
	inRange := true
	sum := 0.0
	for _, p := range op.Probs {
		if !(p.Value > 0 && p.Value < 1) {
			v.errs.errorf(p.Pos, "probability %s is outside (0, 1)", formatNumber(p.Value))
			inRange = false
		}
		sum += p.Value
	}
	if len(op.Probs) != len(op.Branches) {
		v.errs.errorf(op.Pos, "%s has %d %s for %d %s", title,
			len(op.Probs), plural(len(op.Probs), "probability", "probabilities"),
			len(op.Branches), plural(len(op.Branches), "branch", "branches"))
		return
	}
	if inRange && math.Abs(sum-1) > probTolerance {
		v.errs.errorf(op.Pos, "probabilities of %s sum to %s, not 1", title, strconv.FormatFloat(sum, 'g', 12, 64))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// deps returns, for each definition in defOrder, the indices of the
// definitions its chain references with s:, each once, in source order,
// with the position of the first such reference.
func (v *validator) deps() (idx map[string]int, out [][]int, at [][]Pos) {
	idx = make(map[string]int, len(v.defOrder))
	for i, def := range v.defOrder {
		idx[def.Name] = i
	}
	out = make([][]int, len(v.defOrder))
	at = make([][]Pos, len(v.defOrder))
	for i, def := range v.defOrder {
		seen := map[int]bool{}
		v.walk(def.Chain, 0, func(c Component, _ int) {
			if r, ok := c.(*ProbeRef); ok {
				if j, ok := idx[r.Name]; ok && !seen[j] {
					seen[j] = true
					out[i] = append(out[i], j)
					at[i] = append(at[i], r.Pos)
				}
			}
		})
	}
	return idx, out, at
}

// cycles reports every cycle of s: references (thesis 4.3.3 forbids them),
// one per strongly connected component of the reference graph.
func (v *validator) cycles() {
	_, out, at := v.deps()
	for _, scc := range tarjan(out) {
		if len(scc) == 1 {
			self := false
			for _, j := range out[scc[0]] {
				self = self || j == scc[0]
			}
			if !self {
				continue
			}
		}
		// Start the printed cycle at the component's first definition in
		// source order and follow the shortest path back to it.
		start := scc[0]
		for _, i := range scc {
			if i < start {
				start = i
			}
		}
		path := shortestCycle(start, scc, out)
		names := make([]string, 0, len(path)+1)
		for _, i := range path {
			names = append(names, v.defOrder[i].Name)
		}
		names = append(names, v.defOrder[start].Name)
		pos := v.defOrder[start].NamePos
		next := path[0]
		if len(path) > 1 {
			next = path[1]
		}
		for k, j := range out[start] {
			if j == next {
				pos = at[start][k]
			}
		}
		v.errs.errorf(pos, "cycle of probes: %s", strings.Join(names, " -> "))
	}
}

// tarjan returns the strongly connected components of the graph out, each
// component listed after every component it has edges to (so the concatenation
// is a dependency order: a definition comes after those it references).
func tarjan(out [][]int) [][]int {
	n := len(out)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var sccs [][]int
	next := 0
	// Iterative depth-first search: a long chain of references must not
	// exhaust the goroutine stack.
	type frame struct{ v, edge int }
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			if f.edge < len(out[f.v]) {
				w := out[f.v][f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[f.v] {
					low[f.v] = index[w]
				}
				continue
			}
			u := f.v
			call = call[:len(call)-1]
			if len(call) > 0 {
				if p := call[len(call)-1].v; low[u] < low[p] {
					low[p] = low[u]
				}
			}
			if low[u] == index[u] {
				var scc []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					scc = append(scc, w)
					if w == u {
						break
					}
				}
				sccs = append(sccs, scc)
			}
		}
	}
	return sccs
}

// shortestCycle returns the nodes of a shortest cycle through start that
// stays inside the component scc, beginning with start.
func shortestCycle(start int, scc []int, out [][]int) []int {
	in := make(map[int]bool, len(scc))
	for _, i := range scc {
		in[i] = true
	}
	prev := map[int]int{}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, w := range out[u] {
			if !in[w] {
				continue
			}
			if w == start {
				var path []int
				for x := u; x != start; x = prev[x] {
					path = append(path, x)
				}
				path = append(path, start)
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if _, seen := prev[w]; !seen {
				prev[w] = u
				queue = append(queue, w)
			}
		}
	}
	return []int{start} // unreachable for a real component
}
