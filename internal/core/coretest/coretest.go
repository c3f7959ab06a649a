// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package coretest builds, for the tests of package core and of the
// components around it, traces whose spans carry outcome instances as the
// deltaq processor writes them.
package coretest // import "github.com/deltaq-otel/deltaq/internal/core/coretest"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Span describes one outcome-instance span.
type Span struct {
	Probe string
	// Outcome is contract.Success, contract.Timeout or contract.Failure; a
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
		a.PutStr(contract.AttrProbe, s.Probe)
		if s.Outcome != contract.Success {
			a.PutStr(contract.AttrOutcome, s.Outcome)
		}
		a.PutInt(contract.AttrDMaxNs, int64(s.DMax))
		a.PutInt(contract.AttrBins, int64(s.Bins))
		if s.Late {
			a.PutBool(contract.AttrLate, true)
		}
		if s.Outcome == contract.Timeout {
			a.PutBool(contract.AttrSynthetic, true)
		}
	}
	return td
}
