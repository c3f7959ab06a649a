// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package textpos

import (
	"errors"
	"go/scanner"
	"go/token"
	"testing"
)

// TestPosition: lines and columns count from 1, columns in bytes, and an
// offset at or beyond the end is the end, which go/token puts on the last
// line even after a final newline.
func TestPosition(t *testing.T) {
	const text = "ab\n  µs\n"
	for _, c := range []struct {
		offset, line, col int
	}{
		{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {7, 2, 5}, {8, 2, 6}, {9, 2, 7}, {99, 2, 7}, {-1, 1, 1},
	} {
		p := Position(text, c.offset)
		if p.Line != c.line || p.Column != c.col || p.Filename != "" {
			t.Errorf("Position(%q, %d) = %+v, want line %d column %d", text, c.offset, p, c.line, c.col)
		}
	}
	if p := Position("", 0); p.Line != 1 || p.Column != 1 {
		t.Errorf("Position of an empty text = %+v, want 1:1", p)
	}
}

func at(file string, line, col int) token.Position {
	return token.Position{Filename: file, Line: line, Column: col}
}

// TestErrorList: sorted by file, line and column with the order of one
// position kept, one error a line after RemoveMultiples, every error
// printed, and found by errors.As.
func TestErrorList(t *testing.T) {
	var l ErrorList
	if l.Err() != nil {
		t.Fatal("an empty list is an error")
	}
	l.Add(at("b.dq", 1, 1), "in b")
	l.Add(at("a.dq", 2, 5), "second at 2:5")
	l.Add(at("a.dq", 1, 9), "later on line 1")
	l.Add(at("a.dq", 2, 5), "z: first found at 2:5")
	l.Add(at("a.dq", 2, 5), "a: found last at 2:5")
	l.Add(at("a.dq", 1, 3), "first on line 1")
	l.Sort()
	want := "a.dq:1:3: first on line 1\na.dq:1:9: later on line 1\na.dq:2:5: second at 2:5\n" +
		"a.dq:2:5: z: first found at 2:5\na.dq:2:5: a: found last at 2:5\nb.dq:1:1: in b"
	if got := l.Err().Error(); got != want {
		t.Errorf("sorted:\n%s\nwant:\n%s", got, want)
	}
	l.RemoveMultiples()
	want = "a.dq:1:3: first on line 1\na.dq:2:5: second at 2:5\nb.dq:1:1: in b"
	if got := l.Error(); got != want {
		t.Errorf("one a line:\n%s\nwant:\n%s", got, want)
	}
	var e *scanner.Error
	if !errors.As(l.Err(), &e) || e.Msg != "first on line 1" {
		t.Errorf("errors.As found %v, want the first error", e)
	}
}

// TestErrorf: one error, printed LINE:COL for a text without a name.
func TestErrorf(t *testing.T) {
	err := Errorf("2 * X + 3m", 9, "expected a unit after %d", 3)
	var l ErrorList
	if !errors.As(err, &l) || len(l) != 1 || l[0].Pos.Offset != 9 {
		t.Fatalf("Errorf gave %#v", err)
	}
	if got, want := err.Error(), "1:10: expected a unit after 3"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
