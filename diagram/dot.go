// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// WriteDOT writes d as a Graphviz digraph, drawn left to right:
//
//   - each definition is a cluster labelled with its name;
//   - an outcome is an ellipse, a reference s:x a dashed box;
//   - an operator is a dashed cluster labelled `f:x (first-to-finish)` (and so
//     on) holding a fork point, its branches, and a join point; the edges
//     out of a probabilistic choice's fork carry the branch probabilities;
//   - arrows follow the causal order of each chain.
//
// Node identifiers (n1, n2, …) are numbered in source order, so the output
// is deterministic. Render it with `dot -Tsvg`.
func WriteDOT(w io.Writer, d *Diagram) error {
	g := &dotWriter{}
	name := d.Filename
	if name == "" {
		name = "diagram"
	}
	fmt.Fprintf(&g.buf, "digraph %s {\n", dotQuote(name))
	g.buf.WriteString("\trankdir=LR;\n")
	g.buf.WriteString("\tfontname=\"Helvetica\";\n")
	g.buf.WriteString("\tnode [fontname=\"Helvetica\"];\n")
	g.buf.WriteString("\tedge [fontname=\"Helvetica\"];\n")
	for _, def := range d.Defs {
		if def == nil {
			continue
		}
		fmt.Fprintf(&g.buf, "\tsubgraph %s {\n", dotQuote("cluster_def_"+def.Name))
		fmt.Fprintf(&g.buf, "\t\tlabel=%s;\n", dotQuote(def.Name))
		if def.Chain != nil {
			g.chain(def.Chain, 2)
		}
		g.buf.WriteString("\t}\n")
	}
	g.buf.WriteString("}\n")
	_, err := w.Write(g.buf.Bytes())
	return err
}

type dotWriter struct {
	buf bytes.Buffer
	n   int
}

func (g *dotWriter) node(indent int, attrs string) string {
	g.n++
	id := fmt.Sprintf("n%d", g.n)
	fmt.Fprintf(&g.buf, "%s%s [%s];\n", tabs(indent), id, attrs)
	return id
}

func (g *dotWriter) edge(indent int, from, to, attrs string) {
	if attrs != "" {
		fmt.Fprintf(&g.buf, "%s%s -> %s [%s];\n", tabs(indent), from, to, attrs)
		return
	}
	fmt.Fprintf(&g.buf, "%s%s -> %s;\n", tabs(indent), from, to)
}

// chain draws a chain and returns its entry and exit nodes.
func (g *dotWriter) chain(c *Chain, indent int) (entry, exit string) {
	if c == nil || len(c.Elems) == 0 {
		id := g.node(indent, "label=\"?\"")
		return id, id
	}
	for _, e := range c.Elems {
		in, out := g.component(e, indent)
		if entry == "" {
			entry = in
		} else {
			g.edge(indent, exit, in, "")
		}
		exit = out
	}
	return entry, exit
}

func (g *dotWriter) component(e Component, indent int) (entry, exit string) {
	switch e := e.(type) {
	case *Outcome:
		id := g.node(indent, "label="+dotQuote(e.Name)+", shape=ellipse")
		return id, id
	case *ProbeRef:
		id := g.node(indent, "label="+dotQuote("s:"+e.Name)+", shape=box, style=dashed")
		return id, id
	case *Operator:
		fmt.Fprintf(&g.buf, "%ssubgraph %s {\n", tabs(indent), dotQuote("cluster_op_"+e.Name))
		in := indent + 1
		label := fmt.Sprintf("%c:%s (%s)", e.Kind.Letter(), e.Name, e.Kind)
		fmt.Fprintf(&g.buf, "%slabel=%s;\n%sstyle=dashed;\n", tabs(in), dotQuote(label), tabs(in))
		fork := g.node(in, "label=\"\", shape=circle, width=0.15")
		var ends []string
		for i, b := range e.Branches {
			bin, bout := g.chain(b, in)
			attrs := ""
			if e.Kind == Choice && i < len(e.Probs) {
				attrs = "label=" + dotQuote(formatNumber(e.Probs[i].Value))
			}
			g.edge(in, fork, bin, attrs)
			ends = append(ends, bout)
		}
		join := g.node(in, "label=\"\", shape=doublecircle, width=0.12")
		for _, end := range ends {
			g.edge(in, end, join, "")
		}
		fmt.Fprintf(&g.buf, "%s}\n", tabs(indent))
		return fork, join
	}
	id := g.node(indent, "label=\"?\"")
	return id, id
}

func tabs(n int) string { return strings.Repeat("\t", n) }

// dotQuote returns s as a DOT double-quoted string.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
