// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// probeList renders the probes of a diagram as "kind:name@line:col" items.
func probeList(d *Diagram) string {
	var parts []string
	for _, p := range d.Probes() {
		k := p.Kind.String()
		if p.Kind == OperatorProbe {
			k = string(p.Op.Letter())
		}
		parts = append(parts, fmt.Sprintf("%s:%s@%s", k, p.Name, p.Pos))
	}
	return strings.Join(parts, " ")
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		want   string // canonical text (Format)
		probes string
	}{
		{
			name:   "thesis 4.3.1 probe and system",
			src:    "probe = worker_1 -> worker_2;\nsystem = s:probe;\n",
			want:   "probe = worker_1 -> worker_2;\nsystem = s:probe;\n",
			probes: "definition:probe@1:1 definition:system@2:1 outcome:worker_1@1:9 outcome:worker_2@1:21",
		},
		{
			name:   "outcomes named like keywords (thesis 5.3.2 limitation)",
			src:    "probe = s -> a -> f -> p;",
			want:   "probe = s -> a -> f -> p;\n",
			probes: "definition:probe@1:1 outcome:s@1:9 outcome:a@1:14 outcome:f@1:19 outcome:p@1:24",
		},
		{
			name:   "keyword letters as outcomes inside operators",
			src:    "x = f:g(s, a) -> p:c[0.5,0.5](f, p);",
			want:   "x = f:g(s, a) -> p:c[0.5, 0.5](f, p);\n",
			probes: "definition:x@1:1 f:g@1:5 p:c@1:18 outcome:s@1:9 outcome:a@1:12 outcome:f@1:31 outcome:p@1:34",
		},
		{
			name:   "space between keyword and colon",
			src:    "x = s : y -> f :z ( a , b ) ;\ny = q;",
			want:   "x = s:y -> f:z(a, b);\ny = q;\n",
			probes: "definition:x@1:1 definition:y@2:1 f:z@1:14 outcome:a@1:21 outcome:b@1:25 outcome:q@2:5",
		},
		{
			name:   "all operators nested, chains as branches",
			src:    "system = a:all(x -> y, f:ftf(u, v -> w)) -> p:ch[0.25, 0.75](m, n);",
			want:   "system = a:all(x -> y, f:ftf(u, v -> w)) -> p:ch[0.25, 0.75](m, n);\n",
			probes: "definition:system@1:1 a:all@1:10 f:ftf@1:24 p:ch@1:45 outcome:x@1:16 outcome:y@1:21 outcome:u@1:30 outcome:v@1:33 outcome:w@1:38 outcome:m@1:62 outcome:n@1:65",
		},
		{
			name:   "comments of both kinds, CRLF, system first",
			src:    "# top\r\nsystem = s:sub; // after\r\nsub = o; # o\r\n",
			want:   "# top\nsystem = s:sub; // after\nsub = o; # o\n",
			probes: "definition:system@2:1 definition:sub@3:1 outcome:o@3:7",
		},
		{
			// Old Mac line ends: a comment once ran to the end of the file.
			name:   "comments of both kinds, CR alone",
			src:    "# top\rsystem = s:sub; // after\rsub = o; # o\r",
			want:   "# top\nsystem = s:sub; // after\nsub = o; # o\n",
			probes: "definition:system@2:1 definition:sub@3:1 outcome:o@3:7",
		},
		{
			name:   "outcome used twice is one probe",
			src:    "x = o -> o; y = f:g(o, q);",
			want:   "x = o -> o;\ny = f:g(o, q);\n",
			probes: "definition:x@1:1 definition:y@1:13 f:g@1:17 outcome:o@1:5 outcome:q@1:24",
		},
		{
			name:   "empty source",
			src:    "  # nothing\n",
			want:   "# nothing\n",
			probes: "",
		},
		{
			name:   "probability spellings",
			src:    "x = p:c[0.10, 00.9](a, b);",
			want:   "x = p:c[0.1, 0.9](a, b);\n",
			probes: "definition:x@1:1 p:c@1:5 outcome:a@1:21 outcome:b@1:24",
		},
		{
			name:   "byte order mark",
			src:    "\xEF\xBB\xBFx = a;",
			want:   "x = a;\n",
			probes: "definition:x@1:1 outcome:a@1:5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("t.dq", []byte(tt.src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := string(Format(d)); got != tt.want {
				t.Errorf("Format:\n%s\nwant:\n%s", got, tt.want)
			}
			if got := probeList(d); got != tt.probes {
				t.Errorf("probes:\n got %s\nwant %s", got, tt.probes)
			}
		})
	}
}

func TestParseAST(t *testing.T) {
	d, err := Parse("t.dq", []byte("sys = a -> s:b -> p:c[0.3, 0.7](d, e -> f);\nb = g;"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Defs) != 2 || d.Defs[0].Name != "sys" || d.System() != nil {
		t.Fatalf("defs: %+v", d.Defs)
	}
	el := d.Defs[0].Chain.Elems
	if len(el) != 3 {
		t.Fatalf("chain has %d elements", len(el))
	}
	if o, ok := el[0].(*Outcome); !ok || o.Name != "a" || o.NamePos != (Pos{Offset: 6, Line: 1, Column: 7}) {
		t.Errorf("elem 0 = %#v", el[0])
	}
	if r, ok := el[1].(*ProbeRef); !ok || r.Name != "b" || r.Pos.Column != 12 || r.NamePos.Column != 14 {
		t.Errorf("elem 1 = %#v", el[1])
	}
	op, ok := el[2].(*Operator)
	if !ok || op.Kind != Choice || op.Name != "c" || len(op.Branches) != 2 || len(op.Probs) != 2 {
		t.Fatalf("elem 2 = %#v", el[2])
	}
	if op.Probs[0].Value != 0.3 || op.Probs[1].Value != 0.7 || op.Probs[1].Pos.Column != 28 {
		t.Errorf("probs = %v %v", *op.Probs[0], *op.Probs[1])
	}
	if got := op.Branches[1].String(); got != "e -> f" {
		t.Errorf("branch 1 = %q", got)
	}
	if d.Defs[1].NamePos.Line != 2 {
		t.Errorf("second definition at %v", d.Defs[1].NamePos)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // every error, one per line
	}{
		{"missing semicolon", "x = a -> b\ny = c;",
			"t.dq:2:1: expected '->' or ';', found name \"y\""},
		{"missing semicolon at end", "x = a",
			"t.dq:1:6: expected '->' or ';', found end of file"},
		// An operator without its kind reads as an outcome followed by
		// '(' (it said "expected '->' or ';', found '('").
		{"operator without its kind", "x = race(a, b);",
			"t.dq:1:5: race(…) is no operator: write f:race(…) (first-to-finish), a:race(…) (all-to-finish) or p:race[p1, …](…) (probabilistic choice)"},
		{"choice without its kind", "x = a -> pick[0.5, 0.5](b, c);\ny = d;",
			"t.dq:1:10: pick[…] is no operator: write f:pick(…) (first-to-finish), a:pick(…) (all-to-finish) or p:pick[p1, …](…) (probabilistic choice)"},
		{"missing equals", "x a;",
			"t.dq:1:3: expected '=', found name \"a\""},
		{"empty chain", "x = ;",
			"t.dq:1:5: expected outcome, s:name or operator, found ';'"},
		{"dangling arrow", "x = a -> ;",
			"t.dq:1:10: expected outcome, s:name or operator, found ';'"},
		{"statement starting with arrow", "-> a;",
			"t.dq:1:1: expected definition name, found '->'"},
		{"number as name", "1 = a;",
			"t.dq:1:1: expected definition name, found number 1"},
		{"unknown operator letter", "x = q:y(a, b);",
			"t.dq:1:5: unknown operator \"q:\": expected a:, f:, p: or s:"},
		{"s: without name", "x = s:(a);",
			"t.dq:1:7: expected probe name after 's:', found '('"},
		{"operator without name", "x = f:(a, b);",
			"t.dq:1:7: expected operator name after 'f:', found '('"},
		{"operator without parentheses", "x = a:y;",
			"t.dq:1:8: expected '(', found ';'"},
		{"choice without parentheses", "x = p:y;",
			"t.dq:1:8: expected '[' or '(', found ';'"},
		{"empty operator", "x = a:y();",
			"t.dq:1:9: expected outcome, s:name or operator, found ')'"},
		{"unclosed operator", "x = a:y(b, c;",
			"t.dq:1:13: expected '->', ',' or ')', found ';'"},
		{"empty probabilities", "x = p:y[](a, b);",
			"t.dq:1:9: expected probability, found ']'"},
		{"name as probability", "x = p:y[a, b](a, b);",
			"t.dq:1:9: expected probability, found name \"a\""},
		{"unclosed probabilities", "x = p:y[0.5 0.5](a, b);",
			"t.dq:1:13: expected ',' or ']', found number 0.5"},
		{"illegal character", "x = a % b;",
			"t.dq:1:7: illegal character '%'"},
		{"lone dash", "x = a - b;",
			"t.dq:1:7: expected '->', found '-' alone"},
		{"single slash", "x = a / b;",
			"t.dq:1:7: illegal character '/'"},
		{"non-ASCII name", "x = Δq;",
			"t.dq:1:5: illegal character 'Δ'"},
		{"invalid UTF-8", "x = \xff;",
			"t.dq:1:5: illegal UTF-8 encoding"},
		{"number without fraction digits", "x = p:c[1.](a, b);",
			"t.dq:1:11: expected digit after '.' in number"},
		{"number out of range", "x = p:c[" + strings.Repeat("9", 400) + "](a, b);",
			"t.dq:1:9: number " + strings.Repeat("9", 400) + " is out of range"},
		{"errors in several statements are all reported",
			"x = a -> ;\ny = b c;\nz = f:(d);\nw = ok;",
			"t.dq:1:10: expected outcome, s:name or operator, found ';'\n" +
				"t.dq:2:7: expected '->' or ';', found name \"c\"\n" +
				"t.dq:3:7: expected operator name after 'f:', found '('"},
		{"one error per line", "x = % $ a;",
			"t.dq:1:5: illegal character '%'"},
		{"recovery at the next definition without ';'", "x = a b\ny = %;",
			"t.dq:1:7: expected '->' or ';', found name \"b\"\n" +
				"t.dq:2:5: illegal character '%'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.dq", []byte(tt.src))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tt.want)
			}
			var list textpos.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, not ErrorList", err)
			}
			for _, e := range list {
				if !e.Pos.IsValid() {
					t.Errorf("error without position: %v", e)
				}
			}
		})
	}
}

// TestErrorPositionsCountSpace: an error's line and column are those of
// the source as written, its spaces and tabs counted as one column each.
func TestErrorPositionsCountSpace(t *testing.T) {
	src := "  x  =  a\t->  ;\n\ty = %;\n"
	_, err := Parse("t.dq", []byte(src))
	var list textpos.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("Parse: %v, want two errors", err)
	}
	for i, want := range []struct{ offset, line, col int }{{14, 1, 15}, {21, 2, 6}} {
		if p := list[i].Pos; p.Offset != want.offset || p.Line != want.line || p.Column != want.col || p.Filename != "t.dq" {
			t.Errorf("error %d (%s) at %+v, want offset %d, %d:%d", i, list[i].Msg, p, want.offset, want.line, want.col)
		}
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"cycle of two (thesis 4.3.3)", "probe = s:probe_2;\nprobe_2 = s:probe;",
			"t.dq:1:9: cycle of probes: probe -> probe_2 -> probe"},
		{"self reference", "a = x -> s:a;",
			"t.dq:1:10: cycle of probes: a -> a"},
		{"cycle of three printed from its first definition",
			"c = s:a;\nb = s:c;\na = o -> f:g(s:b, p);",
			"t.dq:1:5: cycle of probes: c -> a -> b -> c"},
		{"two separate cycles", "a = s:b; b = s:a; c = s:d; d = s:c;",
			"t.dq:1:5: cycle of probes: a -> b -> a\nt.dq:1:23: cycle of probes: c -> d -> c"},
		{"undefined reference", "x = s:nowhere;",
			"t.dq:1:5: undefined probe s:nowhere"},
		{"reference to an outcome", "x = o; y = s:o;",
			"t.dq:1:12: undefined probe s:o (o is an outcome: write it without s:)"},
		{"reference to an operator", "x = f:g(a, b); y = s:g;",
			"t.dq:1:20: s:g refers to an operator; only definitions can be referenced with s:"},
		{"duplicate definition", "x = a;\nx = b;",
			"t.dq:2:1: duplicate definition of x (first defined at 1:1)"},
		{"duplicate system", "system = a;\nsystem = b;",
			"t.dq:2:1: duplicate definition of system (first defined at 1:1)"},
		{"operator named like a definition", "x = f:y(a, b);\ny = c;",
			"t.dq:1:7: operator name y is already used by the definition at 2:1"},
		{"two operators of one name", "x = f:g(a, b) -> a:g(c, d);",
			"t.dq:1:20: operator name g is already used by the operator at 1:5"},
		{"outcome named like a definition", "probe = w; system = probe;",
			"t.dq:1:21: outcome probe has the name of the definition at 1:1; write s:probe to use its probe"},
		{"outcome named like an operator", "x = f:g(a, g);",
			"t.dq:1:12: outcome g has the name of the operator at 1:5"},
		{"one branch", "x = a:g(b);",
			"t.dq:1:5: a:g has 1 branch; an operator needs at least 2"},
		{"one branch of a choice", "x = p:g[0.5](b);",
			"t.dq:1:5: p:g has 1 branch; an operator needs at least 2\nt.dq:1:5: probabilities of p:g sum to 0.5, not 1"},
		{"probabilities on first-to-finish", "x = f:g[0.5, 0.5](a, b);",
			"t.dq:1:5: f:g takes no probabilities; only p: operators do"},
		{"choice without probabilities", "x = p:g(a, b);",
			"t.dq:1:5: p:g needs one probability per branch: p:g[p1, p2, ...](...)"},
		{"probability count", "x = p:g[0.2, 0.3, 0.5](a, b);",
			"t.dq:1:5: p:g has 3 probabilities for 2 branches"},
		{"probability of 1", "x = p:g[1, 0](a, b);",
			"t.dq:1:9: probability 1 is outside (0, 1)\nt.dq:1:12: probability 0 is outside (0, 1)"},
		{"probability above 1", "x = p:g[1.5, 0.5](a, b);",
			"t.dq:1:9: probability 1.5 is outside (0, 1)"},
		{"probabilities not summing to 1", "x = p:g[0.5, 0.4](a, b);",
			"t.dq:1:5: probabilities of p:g sum to 0.9, not 1"},
		{"all errors reported together",
			"x = s:y;\nz = a:g(b);\nx = c;",
			"t.dq:1:5: undefined probe s:y\nt.dq:2:5: a:g has 1 branch; an operator needs at least 2\nt.dq:3:1: duplicate definition of x (first defined at 1:1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse("t.dq", []byte(tt.src))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tt.want)
			}
			if _, err := d.Evaluate(nil); !errors.Is(err, ErrNotValidated) {
				t.Errorf("Evaluate on an invalid diagram: %v, want ErrNotValidated", err)
			}
		})
	}
}

func TestProbabilitySumTolerance(t *testing.T) {
	// 0.1 + 0.2 + 0.7 is 1 within rounding: accepted (tolerance 1e-9).
	if _, err := Parse("t.dq", []byte("x = p:g[0.1, 0.2, 0.7](a, b, c);")); err != nil {
		t.Errorf("0.1+0.2+0.7: %v", err)
	}
	// 1e-8 off is beyond the tolerance.
	_, err := Parse("t.dq", []byte("x = p:g[0.5, 0.49999999](a, b);"))
	if err == nil || !strings.Contains(err.Error(), "sum to 0.99999999, not 1") {
		t.Errorf("0.5+0.49999999: %v", err)
	}
}

func TestNestingLimit(t *testing.T) {
	nest := func(n int) string {
		return "x = " + strings.Repeat("f:o(a, ", n) + "b" + strings.Repeat(")", n) + ";"
	}
	// Operator names must be distinct, so build them with numbered names.
	nestNamed := func(n int) string {
		var b strings.Builder
		b.WriteString("x = ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "f:o%d(a, ", i)
		}
		b.WriteString("b")
		b.WriteString(strings.Repeat(")", n))
		b.WriteString(";")
		return b.String()
	}
	if _, err := Parse("t.dq", []byte(nestNamed(MaxNesting))); err != nil {
		t.Errorf("nesting %d: %v", MaxNesting, err)
	}
	src := nestNamed(MaxNesting + 1)
	_, err := Parse("t.dq", []byte(src))
	col := strings.Index(src, fmt.Sprintf("f:o%d(", MaxNesting)) + 1
	want := fmt.Sprintf("t.dq:1:%d: operators nested deeper than %d levels", col, MaxNesting)
	if err == nil || err.Error() != want {
		t.Errorf("nesting %d: %v, want %s", MaxNesting+1, err, want)
	}
	// A million levels: an error, not a stack overflow.
	_, err = Parse("t.dq", []byte(nest(1_000_000)))
	if err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("nesting 1e6: %v", err)
	}
}

func TestValidateHandBuilt(t *testing.T) {
	// A Diagram built in code is validated the same way; its errors have
	// no position to print.
	d := &Diagram{Defs: []*Definition{{
		Name: "x",
		Chain: &Chain{Elems: []Component{
			&Operator{Kind: FirstToFinish, Name: "g", Branches: []*Chain{{Elems: []Component{&Outcome{Name: "a"}}}}},
		}},
	}}}
	err := d.Validate()
	if err == nil || err.Error() != "f:g has 1 branch; an operator needs at least 2" {
		t.Errorf("Validate: %v", err)
	}
	d.Defs[0].Chain.Elems[0].(*Operator).Branches = append(d.Defs[0].Chain.Elems[0].(*Operator).Branches,
		&Chain{Elems: []Component{&Outcome{Name: "b"}}})
	if err := d.Validate(); err != nil {
		t.Errorf("Validate after the fix: %v", err)
	}
	if got := len(d.Probes()); got != 4 {
		t.Errorf("%d probes, want 4", got)
	}
}

func TestHandBuiltOddities(t *testing.T) {
	// Nil parts of a hand-built AST are errors, never panics.
	for _, d := range []*Diagram{
		{Defs: []*Definition{nil}},
		{Defs: []*Definition{{Name: "x"}}},
		{Defs: []*Definition{{Name: "x", Chain: &Chain{Elems: []Component{nil}}}}},
		{Defs: []*Definition{{Name: "x", Chain: &Chain{Elems: []Component{&Operator{Kind: AllToFinish, Name: "o", Branches: []*Chain{nil, {}}}}}}}},
		{Defs: []*Definition{{Name: "x", Chain: &Chain{Elems: []Component{&Operator{Name: "o"}}}}}},
		{Defs: []*Definition{{Name: "a b", Chain: &Chain{Elems: []Component{&Outcome{Name: "c"}}}}}},
		{Defs: []*Definition{{Name: "x", Chain: &Chain{Elems: []Component{&Outcome{Name: "1c"}}}}}},
		{Defs: []*Definition{{Name: "x", Chain: &Chain{Elems: []Component{&ProbeRef{Name: ""}}}}}},
	} {
		if err := d.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", d.Defs)
		}
		Format(d)
		var b strings.Builder
		if err := WriteDOT(&b, d); err != nil {
			t.Error(err)
		}
	}
}

// TestBinaryInputBounded: a file that is not a diagram at all (a binary
// given by mistake) has an illegal character at nearly every byte. Only
// the first error of a line is reported, and only those are kept while
// parsing: a 4 MiB line costs one error, not four million held until the
// end (a 30 MB binary took 2.5 GB and 7 s).
func TestBinaryInputBounded(t *testing.T) {
	src := []byte("x = a;\n" + strings.Repeat("\x01\xff", 2<<20) + "\ny = b;\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Parse("bin.dq", src)
	runtime.ReadMemStats(&after)
	var list textpos.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Error() != `bin.dq:2:1: illegal character '\x01'` {
		t.Fatalf("errors %v, want the first of line 2 alone", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("parsing 4 MiB of illegal characters allocated %d MiB, want at most 64", alloc>>20)
	}
	// The semantic checks still report every error of a line.
	if _, err := Parse("two.dq", []byte("x = s:a -> s:b;\n")); !errors.As(err, &list) || len(list) != 2 {
		t.Errorf("two undefined probes on a line: %v, want both", err)
	}
}
