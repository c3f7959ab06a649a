// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"strconv"

	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// MaxNesting is the deepest nesting of operators inside operators that Parse
// accepts. Deeper sources are rejected with an error at the operator that
// goes too deep, so that neither the parser nor the recursive walks over the
// AST (formatting, evaluation) can exhaust the stack on hostile input. Real
// diagrams nest a handful of levels.
const MaxNesting = 256

// Parse parses and validates a .dq source. filename is used only in error
// positions.
//
// The grammar (thesis 5.3.2, with the ';' terminators its text lost, and with
// the single letters a, f, p, s keywords only when a ':' follows them, so that
// outcomes may have those names):
//
//	diagram    = { definition } .
//	definition = name "=" chain ";" .
//	chain      = component { "->" component } .
//	component  = operator | probe_ref | outcome .
//	operator   = ( "a" | "f" | "p" ) ":" name [ "[" number { "," number } "]" ]
//	             "(" chain { "," chain } ")" .
//	probe_ref  = "s" ":" name .
//	outcome    = name .
//	name       = ( letter | "_" ) { letter | digit | "_" } .   (ASCII)
//	number     = digit { digit } [ "." digit { digit } ] .
//
// Comments run from '#' or '//' to the end of the line. A definition named
// "system" describes the whole system.
//
// On error Parse returns a list (textpos.ErrorList) holding every error it
// found, sorted by position and printed as FILE:LINE:COL: message, whose
// Unwrap gives each as a *go/scanner.Error, together with the part of
// the diagram it could parse (which must not be evaluated). Syntax errors
// are reported first: the semantic checks of Validate run only on a source
// without syntax errors, since a statement that failed to parse would make
// them report names as undefined.
func Parse(filename string, src []byte) (*Diagram, error) {
	d, errs := parseSyntax(filename, src)
	if len(errs) > 0 {
		return d, errs
	}
	if err := d.Validate(); err != nil {
		return d, err
	}
	return d, nil
}

// ParseSyntax parses a .dq source without the semantic checks of Validate,
// which is all the formatter needs. The Diagram it returns cannot be
// evaluated until Validate succeeds on it.
func ParseSyntax(filename string, src []byte) (*Diagram, error) {
	d, errs := parseSyntax(filename, src)
	return d, errs.Err()
}

// bailout unwinds the parser when it must stop (nesting limit).
type bailout struct{}

type parser struct {
	sc   *scanner
	errs *errorSink

	tok  token // current token
	peek token // the token after it

	nest int // operator nesting depth of the current position

	spans []defSpan // source extent of each parsed definition
}

// defSpan is where a definition lies, for attaching comments.
type defSpan struct {
	start, end int // byte offsets of the name and just after ';'
	endLine    int // line of the ';'
	startLine  int
}

// stmtErr is the panic value that abandons the current statement.
type stmtErr struct{}

func parseSyntax(filename string, src []byte) (d *Diagram, errs textpos.ErrorList) {
	sink := &errorSink{filename: filename, firstPerLine: true}
	p := &parser{sc: newScanner(src, sink), errs: sink}
	d = &Diagram{Filename: filename}
	p.tok = p.sc.next()
	p.peek = p.sc.next()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(bailout); !ok {
					panic(r)
				}
			}
		}()
		for p.tok.kind != tokEOF {
			if def := p.definition(); def != nil {
				d.Defs = append(d.Defs, def)
			}
		}
	}()
	attachComments(d, p.spans, p.sc.comments)
	// Only the first syntax error of each line: the later ones are nearly
	// always consequences of the first.
	sink.list.RemoveMultiples()
	return d, sink.list
}

func (p *parser) advance() {
	p.tok = p.peek
	p.peek = p.sc.next()
}

// fail reports "expected WHAT, found TOKEN" at the current token and
// abandons the statement. An illegal token was already reported by the
// scanner and is not reported twice.
func (p *parser) fail(what string) {
	if p.tok.kind != tokIllegal {
		p.errs.errorf(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	panic(stmtErr{})
}

func (p *parser) expect(k tokenKind, what string) Pos {
	pos := p.tok.pos
	if p.tok.kind != k {
		p.fail(what)
	}
	p.advance()
	return pos
}

// definition parses one statement. On a syntax error it reports it, skips to
// the end of the statement and returns nil.
func (p *parser) definition() (def *Definition) {
	start := p.tok.pos
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stmtErr); !ok {
				panic(r)
			}
			p.sync(start.Offset)
			def = nil
		}
	}()
	if p.tok.kind != tokIdent {
		p.fail("definition name")
	}
	def = &Definition{Name: p.tok.lit, NamePos: p.tok.pos}
	p.advance()
	p.expect(tokAssign, "'='")
	p.nest = 0
	def.Chain = p.chain()
	end := p.expect(tokSemi, "'->' or ';'")
	p.spans = append(p.spans, defSpan{start: start.Offset, startLine: start.Line, end: end.Offset + 1, endLine: end.Line})
	return def
}

// sync skips to just after the next ';', or to the start of the next
// statement (a name followed by '='), or to the end of the source. It always
// moves past at least one token so that parsing makes progress.
func (p *parser) sync(stmtStart int) {
	for p.tok.kind != tokEOF {
		switch {
		case p.tok.kind == tokSemi:
			p.advance()
			return
		case p.tok.kind == tokIdent && p.peek.kind == tokAssign && p.tok.pos.Offset > stmtStart:
			return
		}
		p.advance()
	}
}

// chain parses component { "->" component }.
func (p *parser) chain() *Chain {
	c := &Chain{Elems: []Component{p.component()}}
	for p.tok.kind == tokArrow {
		p.advance()
		c.Elems = append(c.Elems, p.component())
	}
	return c
}

// component parses an operator, a probe reference or an outcome. A name is a
// keyword only when ':' follows it.
func (p *parser) component() Component {
	if p.tok.kind != tokIdent {
		p.fail("outcome, s:name or operator")
	}
	if p.peek.kind == tokLParen || p.peek.kind == tokLBrack {
		// `race(b, c)`: an operator written without its kind.
		name, written := p.tok.lit, "(…)"
		if p.peek.kind == tokLBrack {
			written = "[…]"
		}
		p.errs.errorf(p.tok.pos, "%s%s is no operator: write f:%s(…) (first-to-finish), a:%s(…) (all-to-finish) or p:%s[p1, …](…) (probabilistic choice)",
			name, written, name, name, name)
		panic(stmtErr{})
	}
	if p.peek.kind != tokColon {
		o := &Outcome{Name: p.tok.lit, NamePos: p.tok.pos}
		p.advance()
		return o
	}
	kw := p.tok
	switch kw.lit {
	case "s":
		p.advance() // s
		p.advance() // :
		if p.tok.kind != tokIdent {
			p.fail("probe name after 's:'")
		}
		r := &ProbeRef{Pos: kw.pos, Name: p.tok.lit, NamePos: p.tok.pos}
		p.advance()
		return r
	case "a", "f", "p":
		return p.operator()
	}
	p.errs.errorf(kw.pos, "unknown operator %q: expected a:, f:, p: or s:", kw.lit+":")
	panic(stmtErr{})
}

// operator parses kind ":" name [ "[" numbers "]" ] "(" chains ")".
func (p *parser) operator() *Operator {
	op := &Operator{Pos: p.tok.pos, Kind: opKindOf(p.tok.lit)}
	letter := p.tok.lit
	p.advance() // letter
	p.advance() // :
	if p.tok.kind != tokIdent {
		p.fail("operator name after '" + letter + ":'")
	}
	op.Name, op.NamePos = p.tok.lit, p.tok.pos
	p.advance()

	p.nest++
	if p.nest > MaxNesting {
		p.errs.errorf(op.Pos, "operators nested deeper than %d levels", MaxNesting)
		panic(bailout{})
	}
	if p.tok.kind == tokLBrack {
		p.advance()
		op.Probs = commaList(p, p.prob)
		p.expect(tokRBrack, "',' or ']'")
	}
	if p.tok.kind != tokLParen {
		if op.Kind == Choice && op.Probs == nil {
			p.fail("'[' or '('")
		}
		p.fail("'('")
	}
	p.advance()
	op.Branches = commaList(p, p.chain)
	p.expect(tokRParen, "'->', ',' or ')'")
	p.nest--
	return op
}

// commaList parses item {',' item}: an operator's probabilities or branches.
func commaList[T any](p *parser, item func() T) []T {
	items := []T{item()}
	for p.tok.kind == tokComma {
		p.advance()
		items = append(items, item())
	}
	return items
}

// prob parses one probability literal.
func (p *parser) prob() *Prob {
	if p.tok.kind != tokNumber {
		p.fail("probability")
	}
	v, err := strconv.ParseFloat(p.tok.lit, 64)
	if err != nil {
		// Only a range error is possible for digits[.digits].
		p.errs.errorf(p.tok.pos, "number %s is out of range", p.tok.lit)
		panic(stmtErr{})
	}
	pr := &Prob{Pos: p.tok.pos, Value: v}
	p.advance()
	return pr
}

// attachComments gives every comment to the definition it belongs with:
// comment lines before a definition are its Doc, comments inside it are
// Inner, a comment after its ';' on the same line is its LineComment, and
// comments after the last definition are the diagram's Trailing comments.
// It also records blank lines before comments and definitions.
func attachComments(d *Diagram, spans []defSpan, comments []*Comment) {
	ci := 0
	lastLine := 0 // last line holding something already placed
	blank := func(line int) bool { return lastLine > 0 && line > lastLine+1 }
	for k, def := range d.Defs {
		sp := spans[k]
		for ci < len(comments) && comments[ci].Pos.Offset < sp.start {
			c := comments[ci]
			ci++
			if k > 0 && d.Defs[k-1].LineComment == nil && len(def.Doc) == 0 && c.Pos.Line == spans[k-1].endLine {
				d.Defs[k-1].LineComment = c
				continue
			}
			c.BlankBefore = blank(c.Pos.Line)
			def.Doc = append(def.Doc, c)
			lastLine = c.Pos.Line
		}
		def.BlankBefore = blank(sp.startLine)
		for ci < len(comments) && comments[ci].Pos.Offset < sp.end {
			def.Inner = append(def.Inner, comments[ci])
			ci++
		}
		lastLine = sp.endLine
	}
	for ; ci < len(comments); ci++ {
		c := comments[ci]
		if n := len(d.Defs); n > 0 && len(d.Trailing) == 0 && d.Defs[n-1].LineComment == nil && c.Pos.Line == spans[n-1].endLine {
			d.Defs[n-1].LineComment = c
			continue
		}
		c.BlankBefore = blank(c.Pos.Line)
		d.Trailing = append(d.Trailing, c)
		lastLine = c.Pos.Line
	}
}
