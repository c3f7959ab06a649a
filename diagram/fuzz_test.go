// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// FuzzParse checks, for any input, that parsing does not panic, that every
// error has a position inside the source, that the formatted text of a
// syntactically valid source parses to the same diagram and formats to
// itself, and that a valid diagram can be drawn and evaluated. The seed
// corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte("probe = worker_1 -> worker_2;\nsystem = s:probe;\n"))
	f.Add([]byte("system = f:ftf(worker_1, worker_2);"))
	f.Add([]byte("x = p:c[0.75, 0.25](a -> b, s:y); y = a:z(s, f);"))
	f.Fuzz(fuzzParse)
}

func fuzzParse(t *testing.T, src []byte) {
	d, err := Parse("f.dq", src)
	if err != nil {
		var list textpos.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %T %v is not a non-empty ErrorList", err, err)
		}
		for _, e := range list {
			if !e.Pos.IsValid() || e.Pos.Offset > len(src) || e.Msg == "" {
				t.Fatalf("bad error %q at %+v for a source of %d bytes", e.Msg, e.Pos, len(src))
			}
		}
	}

	syn, serr := ParseSyntax("f.dq", src)
	if serr == nil {
		out := Format(syn)
		again, err := ParseSyntax("f.dq", out)
		if err != nil {
			t.Fatalf("formatted text does not parse: %v\nsource %q\nformatted %q", err, src, out)
		}
		if !equalDiagrams(syn, again) {
			t.Fatalf("parse(format(d)) != d\nsource %q\nformatted %q", src, out)
		}
		if a, b := commentTexts(syn), commentTexts(again); !slices.Equal(a, b) {
			t.Fatalf("comments changed by formatting: %q then %q\nsource %q", a, b, src)
		}
		if out2 := Format(again); !bytes.Equal(out, out2) {
			t.Fatalf("Format not idempotent\nsource %q\nfirst %q\nsecond %q", src, out, out2)
		}
		// Validation must agree on the source and its formatted text.
		if (syn.Validate() == nil) != (again.Validate() == nil) {
			t.Fatalf("validity changed by formatting\nsource %q\nformatted %q", src, out)
		}
	} else if err == nil {
		t.Fatalf("Parse accepted what ParseSyntax rejected: %v", serr)
	}

	if err != nil {
		return
	}
	var dot bytes.Buffer
	if err := WriteDOT(&dot, d); err != nil {
		t.Fatal(err)
	}
	if len(src) > 4096 {
		return // keep each run fast; evaluation is tested elsewhere
	}
	in := map[string]deltaq.DeltaQ{}
	u, _ := deltaq.Uniform(0.001, 0.003, 0.001, 4)
	for i, p := range d.Probes() {
		if p.Kind == OutcomeProbe && i%3 != 0 {
			in[p.Name] = u
		}
	}
	ev, err := d.Evaluate(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ev.Results {
		if r.OK && (r.Err != nil || len(r.Missing) > 0) {
			t.Fatalf("%s: OK with error %v or missing %v", r.Name, r.Err, r.Missing)
		}
		if !r.OK && r.Err == nil && len(r.Missing) == 0 {
			t.Fatalf("%s: not OK without a reason", r.Name)
		}
	}
}

// commentTexts lists every comment of d in source order.
func commentTexts(d *Diagram) []string {
	var out []string
	for _, def := range d.Defs {
		for _, c := range def.Doc {
			out = append(out, c.Text)
		}
		for _, c := range def.Inner {
			out = append(out, c.Text)
		}
		if def.LineComment != nil {
			out = append(out, def.LineComment.Text)
		}
	}
	for _, c := range d.Trailing {
		out = append(out, c.Text)
	}
	return out
}
