// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"fmt"
	gotoken "go/token" // diagram's own tokens are its scanner's

	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// errorSink collects the errors of one source, as a textpos.ErrorList: each
// printed "FILE:LINE:COL: message" (without "FILE:" when the source has no
// name), the form compilers use so that editors can jump to it.
type errorSink struct {
	filename string
	list     textpos.ErrorList
	// firstPerLine: only the first error of a line is reported (the
	// parser's, textpos.ErrorList.RemoveMultiples), so errorf drops one
	// on the line of the last added and not before it: a source with an
	// illegal character at every byte (a binary file) holds one error a
	// line, not one a byte.
	firstPerLine bool
}

func (s *errorSink) errorf(pos Pos, format string, args ...any) {
	if n := len(s.list); s.firstPerLine && n > 0 {
		if last := s.list[n-1].Pos; last.Line == pos.Line && last.Column <= pos.Column {
			return
		}
	}
	s.list.Add(gotoken.Position{Filename: s.filename, Offset: pos.Offset, Line: pos.Line, Column: pos.Column},
		fmt.Sprintf(format, args...))
}
