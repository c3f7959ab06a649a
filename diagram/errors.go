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
}

func (s *errorSink) errorf(pos Pos, format string, args ...any) {
	s.list.Add(gotoken.Position{Filename: s.filename, Offset: pos.Offset, Line: pos.Line, Column: pos.Column},
		fmt.Sprintf(format, args...))
}
