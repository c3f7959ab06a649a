// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found in a .dq source, at a position.
type Error struct {
	Filename string
	Pos      Pos
	Msg      string
}

// Error formats the error as "FILE:LINE:COL: message" (without "FILE:" when
// the source has no name), the form compilers use so that editors can jump
// to it.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Filename != "" {
		b.WriteString(e.Filename)
		b.WriteByte(':')
	}
	b.WriteString(e.Pos.String())
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is the list of every problem found in one source, sorted by
// position. A nil or empty ErrorList is no error: use Err to turn it into an
// error value.
type ErrorList []*Error

// Error prints every error in the list on its own line.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	for i, e := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Err returns nil for an empty list and the list itself otherwise.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// sort orders the list by position, keeping the order of errors at the same
// position (the first one found explains the rest).
func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.before(l[j].Pos) })
}

// errorSink collects errors for one source.
type errorSink struct {
	filename string
	list     ErrorList
}

func (s *errorSink) errorf(pos Pos, format string, args ...any) {
	s.list = append(s.list, &Error{Filename: s.filename, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}
