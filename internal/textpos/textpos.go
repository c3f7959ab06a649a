// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package textpos holds the errors of the project's small languages — the
// outcome diagrams of package diagram, the distributions of dist and the
// interventions of whatif — at the line and column of the text the user
// typed. An error is go/scanner's Error at a go/token Position, printed
// "FILE:LINE:COL: message", or "LINE:COL: message" for a text without a
// name; the errors of one text come as an ErrorList sorted by position.
package textpos // import "github.com/deltaq-otel/deltaq/internal/textpos"

import (
	"cmp"
	"fmt"
	"go/scanner"
	"go/token"
	"slices"
	"strings"
)

// ErrorList is the errors found in one text. It is go/scanner's ErrorList
// but for two things: it prints every error, one a line, where go/scanner's
// prints the first and a count, since a user fixes them all at once; and
// its Sort keeps the order in which errors at one position were found (the
// first explains the rest), where go/scanner's orders those by message. A
// nil or empty ErrorList is no error: Err turns it into an error value.
type ErrorList []*scanner.Error

// Add appends an error at pos.
func (l *ErrorList) Add(pos token.Position, msg string) {
	*l = append(*l, &scanner.Error{Pos: pos, Msg: msg})
}

// Sort orders the list by file name, line and column.
func (l ErrorList) Sort() {
	slices.SortStableFunc(l, func(a, b *scanner.Error) int {
		return cmp.Or(strings.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Column, b.Pos.Column))
	})
}

// RemoveMultiples sorts the list and keeps only the first error of each
// line: a parser's later errors on a line are nearly always consequences
// of the first.
func (l *ErrorList) RemoveMultiples() {
	l.Sort()
	*l = slices.CompactFunc(*l, func(a, b *scanner.Error) bool {
		return a.Pos.Filename == b.Pos.Filename && a.Pos.Line == b.Pos.Line
	})
}

// Error prints every error of the list on its own line.
func (l ErrorList) Error() string {
	if len(l) == 0 {
		return "no errors"
	}
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Unwrap returns the errors of the list, so that errors.As finds a
// *scanner.Error in it.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Position returns the position of the byte at offset in text, a text
// without a file name: its line and its column, counted in bytes from 1 as
// go/token counts them. An offset beyond the text is taken as its end.
func Position(text string, offset int) token.Position {
	f := token.NewFileSet().AddFile("", -1, len(text))
	if text != "" { // the lines of no content would be none, not one
		f.SetLinesForContent([]byte(text))
	}
	return f.PositionFor(f.Pos(min(max(offset, 0), len(text))), false)
}

// Errorf returns an ErrorList of one error at the byte at offset in text.
func Errorf(text string, offset int, format string, args ...any) error {
	return ErrorList{{Pos: Position(text, offset), Msg: fmt.Sprintf(format, args...)}}
}
