// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

// Span is one finished span, as the learner needs it. Times are Unix
// nanoseconds of the span's own clock.
type Span struct {
	TraceID [16]byte
	SpanID  [8]byte
	// ParentID is the parent span's id; all zero for a root span.
	ParentID [8]byte
	Service  string
	Name     string
	Start    int64
	End      int64
	// Failed reports a span that ended with an error (status ERROR).
	Failed bool
}

// IsRoot reports whether the span has no parent.
func (s *Span) IsRoot() bool { return s.ParentID == [8]byte{} }

// Key returns the name of the span's operation as nodes and interventions
// use it: "service.operation".
func Key(service, operation string) string { return service + "." + operation }
