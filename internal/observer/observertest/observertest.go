// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package observertest builds, for the tests of the observer and of the
// components around it, traces whose spans carry outcome instances as the
// deltaq processor writes them.
package observertest // import "github.com/deltaq-otel/deltaq/internal/observer/observertest"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// Span describes one outcome-instance span.
type Span struct {
	Probe string
	// Outcome is outcome.Success, outcome.Timeout or outcome.Failure; a
	// success is written as the processor writes it, with no deltaq.outcome.
	Outcome string
	// Start and End are the span's timestamps.
	Start, End time.Time
	// DMax and Bins are the instance's own layout (deltaq.dmax_ns,
	// deltaq.bins).
	DMax time.Duration
	Bins int
	// Late marks a span whose instance already timed out (deltaq.late).
	Late bool
}

// Traces returns traces holding one span per spec, with the deltaq.*
// attributes and an unrelated attribute, plus one span that is not an
// instance.
func Traces(specs ...Span) ptrace.Traces {
	td := ptrace.NewTraces()
	ss := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	other := ss.AppendEmpty()
	other.SetName("unrelated")
	other.Attributes().PutStr("http.method", "GET")
	for _, s := range specs {
		sp := ss.AppendEmpty()
		sp.SetName(s.Probe)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.End))
		a := sp.Attributes()
		a.PutStr("http.route", "/x")
		a.PutStr(outcome.AttrProbe, s.Probe)
		if s.Outcome != outcome.Success {
			a.PutStr(outcome.AttrOutcome, s.Outcome)
		}
		a.PutInt(outcome.AttrDMaxNs, int64(s.DMax))
		a.PutInt(outcome.AttrBins, int64(s.Bins))
		if s.Late {
			a.PutBool(outcome.AttrLate, true)
		}
		if s.Outcome == outcome.Timeout {
			a.PutBool(outcome.AttrSynthetic, true)
		}
	}
	return td
}
