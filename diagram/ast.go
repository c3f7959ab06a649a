// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

// The AST is plain data: every node records where it came from, and the
// formatter (Format) and the DOT writer (WriteDOT) are separate functions over
// it. A Diagram returned by Parse without error is also validated and ready
// for Evaluate; a Diagram changed afterwards must be passed to Validate again.

// SystemName is the name of the definition that describes the whole system
// (thesis 5.3.2: `system = chain;`). It is optional.
const SystemName = "system"

// Diagram is a parsed .dq source: definitions in source order, with the
// comments that surround them.
type Diagram struct {
	// Filename is the name the source was parsed under; it prefixes error
	// positions.
	Filename string
	// Defs are the definitions `name = chain;` in source order. The system
	// definition, if any, is among them.
	Defs []*Definition
	// Trailing holds the comments after the last definition.
	Trailing []*Comment

	plan *plan // set by Validate; nil until the diagram is valid
}

// System returns the definition named SystemName, or nil.
func (d *Diagram) System() *Definition {
	for _, def := range d.Defs {
		if def.Name == SystemName {
			return def
		}
	}
	return nil
}

// Definition is one statement `Name = Chain;`. It defines a probe named Name
// whose calculated ΔQ is that of Chain (thesis 4.3.1).
type Definition struct {
	Name    string
	NamePos Pos
	Chain   *Chain

	// Doc holds the comment lines just before the definition.
	Doc []*Comment
	// Inner holds comments written inside the statement; the formatter moves
	// them to just before it.
	Inner []*Comment
	// LineComment is a comment after the ';' on the same line, or nil.
	LineComment *Comment
	// BlankBefore records an empty line just before the statement itself
	// (after its Doc comments, if any). The formatter keeps at most one.
	BlankBefore bool
}

// Chain is a sequential composition `c1 -> c2 -> …` of at least one
// component: its ΔQ is the convolution of theirs (thesis 2.1.7, eq. 2.2).
type Chain struct {
	Elems []Component
}

// Pos returns the position of the chain's first component.
func (c *Chain) Pos() Pos {
	if len(c.Elems) == 0 {
		return Pos{}
	}
	return c.Elems[0].Position()
}

// Component is one element of a chain: an *Outcome, a *ProbeRef or an
// *Operator.
type Component interface {
	// Position returns where the component starts.
	Position() Pos
	component()
}

// Outcome is a plain name: an outcome whose ΔQ is observed, never calculated
// (thesis 2.1.1, 4.3.1).
type Outcome struct {
	Name    string
	NamePos Pos
}

// ProbeRef is `s:Name`, a use of the probe of definition Name inside another
// definition (thesis 4.3.1). It contributes that probe's observed ΔQ when
// one is available, else its calculated ΔQ.
type ProbeRef struct {
	Pos     Pos // position of the 's'
	Name    string
	NamePos Pos
}

// OpKind is the kind of an operator.
type OpKind int

// The operators of thesis 2.1.7 and 4.3.2.
const (
	// AllToFinish, `a:name(…)`: all branches must finish, ΔQ = Π ΔQᵢ (eq. 2.4).
	AllToFinish OpKind = iota + 1
	// FirstToFinish, `f:name(…)`: the first branch to finish ends the
	// operator, ΔQ = 1 − Π(1 − ΔQᵢ) (eq. 2.3).
	FirstToFinish
	// Choice, `p:name[p₁, …](…)`: exactly one branch runs, branch i with
	// probability pᵢ, ΔQ = Σ pᵢ ΔQᵢ (eq. 2.5).
	Choice
)

// Letter returns the keyword letter of the operator: 'a', 'f' or 'p'.
func (k OpKind) Letter() byte {
	switch k {
	case AllToFinish:
		return 'a'
	case FirstToFinish:
		return 'f'
	case Choice:
		return 'p'
	}
	return '?'
}

// String returns "all-to-finish", "first-to-finish" or "probabilistic choice".
func (k OpKind) String() string {
	switch k {
	case AllToFinish:
		return "all-to-finish"
	case FirstToFinish:
		return "first-to-finish"
	case Choice:
		return "probabilistic choice"
	}
	return "unknown operator"
}

func opKindOf(letter string) OpKind {
	switch letter {
	case "a":
		return AllToFinish
	case "f":
		return FirstToFinish
	case "p":
		return Choice
	}
	return 0
}

// Operator is `a:Name(…)`, `f:Name(…)` or `p:Name[…](…)`. Each operator has a
// probe of its own name observing it from its start to its end event (thesis
// 3.4.1).
type Operator struct {
	Pos     Pos // position of the kind letter
	Kind    OpKind
	Name    string
	NamePos Pos
	// Probs are the branch probabilities of a Choice; nil for the others.
	Probs    []*Prob
	Branches []*Chain
}

// Prob is one probability literal of a Choice.
type Prob struct {
	Pos   Pos
	Value float64
}

// Comment is one '#' or '//' comment, up to the end of its line, without
// trailing white space.
type Comment struct {
	Pos  Pos
	Text string
	// BlankBefore records an empty line just before the comment.
	BlankBefore bool
}

// Position returns the position of the outcome's name.
func (o *Outcome) Position() Pos { return o.NamePos }

// Position returns the position of the 's' of `s:name`.
func (r *ProbeRef) Position() Pos { return r.Pos }

// Position returns the position of the operator's kind letter.
func (o *Operator) Position() Pos { return o.Pos }

func (*Outcome) component()  {}
func (*ProbeRef) component() {}
func (*Operator) component() {}
