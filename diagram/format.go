// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"bytes"
	"strconv"
	"strings"
)

// LineWidth is the width the formatter aims at: a statement longer than this
// on one line has its operators broken over several lines, one branch per
// line.
const LineWidth = 80

// indentUnit is one level of indentation of a broken operator.
const indentUnit = "    "

// Format returns the canonical text of d:
//
//   - one definition per line, `name = a -> s:b -> f:x(c, d);`, with single
//     spaces around '=' and '->' and after ','; probabilities in their
//     shortest decimal form;
//   - a definition longer than LineWidth is broken inside its operators, one
//     branch per line, indented by four spaces per level;
//   - comments are kept: comment lines before a definition stay before it, a
//     comment after its ';' stays on its line, and comments written inside a
//     definition are moved to the lines just before it;
//   - empty lines between definitions and comments are kept, at most one in a
//     row, none at the start or end.
//
// Format works on any Diagram that parsed without syntax errors. Parsing its
// output yields the same diagram (apart from positions and the placement of
// comments inside definitions), and formatting is idempotent.
func Format(d *Diagram) []byte {
	f := &formatter{}
	for _, def := range d.Defs {
		if def == nil {
			continue
		}
		for _, c := range def.Doc {
			f.line(c.Text, c.BlankBefore)
		}
		blank := def.BlankBefore
		for _, c := range def.Inner {
			f.line(c.Text, blank)
			blank = false
		}
		f.definition(def, blank)
	}
	for _, c := range d.Trailing {
		f.line(c.Text, c.BlankBefore)
	}
	return f.buf.Bytes()
}

type formatter struct {
	buf   bytes.Buffer
	lines int // lines written so far
}

// line writes one whole line, after an empty line if blank is set and
// something was written before.
func (f *formatter) line(text string, blank bool) {
	if blank && f.lines > 0 {
		f.buf.WriteByte('\n')
	}
	f.buf.WriteString(text)
	f.buf.WriteByte('\n')
	f.lines++
}

func (f *formatter) definition(def *Definition, blank bool) {
	var b strings.Builder
	b.WriteString(def.Name)
	b.WriteString(" = ")
	if def.Chain != nil {
		writeChain(&b, def.Chain, 0, len(def.Name)+3, 1)
	}
	b.WriteByte(';')
	if def.LineComment != nil {
		b.WriteByte(' ')
		b.WriteString(def.LineComment.Text)
	}
	f.line(b.String(), blank)
}

// writeChain writes c starting at column col (0-based) at indentation level
// depth; tail is the width of what must follow on the same line (';', ','
// or ')').
func writeChain(b *strings.Builder, c *Chain, depth, col, tail int) {
	flat := flatChain(c)
	if col+len(flat)+tail <= LineWidth {
		b.WriteString(flat)
		return
	}
	for k, e := range c.Elems {
		if k > 0 {
			b.WriteString(" -> ")
			col += 4
		}
		op, isOp := e.(*Operator)
		last := k == len(c.Elems)-1
		elemTail := 4 // " ->"
		if last {
			elemTail = tail
		}
		fe := flatComponent(e)
		if !isOp || col+len(fe)+elemTail <= LineWidth {
			b.WriteString(fe)
			col += len(fe)
			continue
		}
		// Broken operator: header, one branch per line, closing parenthesis
		// back at the operator's indentation.
		b.WriteString(operatorHead(op))
		b.WriteString("(\n")
		inner := strings.Repeat(indentUnit, depth+1)
		for i, br := range op.Branches {
			b.WriteString(inner)
			t := 1 // ','
			if i == len(op.Branches)-1 {
				t = 0
			}
			writeChain(b, br, depth+1, len(inner), t)
			if t == 1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		outer := strings.Repeat(indentUnit, depth)
		b.WriteString(outer)
		b.WriteByte(')')
		col = len(outer) + 1
	}
}

func flatChain(c *Chain) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for k, e := range c.Elems {
		if k > 0 {
			b.WriteString(" -> ")
		}
		b.WriteString(flatComponent(e))
	}
	return b.String()
}

func flatComponent(e Component) string {
	switch e := e.(type) {
	case *Outcome:
		return e.Name
	case *ProbeRef:
		return "s:" + e.Name
	case *Operator:
		var b strings.Builder
		b.WriteString(operatorHead(e))
		b.WriteByte('(')
		for i, br := range e.Branches {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(flatChain(br))
		}
		b.WriteByte(')')
		return b.String()
	}
	return ""
}

// operatorHead returns `k:name` or `p:name[p1, p2]`.
func operatorHead(op *Operator) string {
	var b strings.Builder
	b.WriteByte(op.Kind.Letter())
	b.WriteByte(':')
	b.WriteString(op.Name)
	if op.Probs != nil {
		b.WriteByte('[')
		for i, p := range op.Probs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatNumber(p.Value))
		}
		b.WriteByte(']')
	}
	return b.String()
}

// formatNumber writes a probability in the shortest decimal form that
// parses back to the same float64, without an exponent (the grammar has
// none).
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// String returns the canonical one-line text of a chain.
func (c *Chain) String() string { return flatChain(c) }
