// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"encoding/binary"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// addTraces adds the outcome instances among the spans of td: those a
// deltaq processor mapped (deltaq.probe) to a probe sp does not match, and
// those of the probes sp finds in the spans themselves when sp is not nil.
// It records in bs the service.name of the resource each probe's instances
// came from.
func addTraces(b analysis.Batch, td ptrace.Traces, bs *batchServices, sp *spanProbes) {
	var in analysis.Instance
	var sb spanBatch // the start events' tracker, held from its first use
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		res := spanmatch.NewResource(rss.At(i).Resource())
		var marks probeMarks
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			sb.spans, sb.warmed = spans, 0
			for k := 0; k < spans.Len(); k++ {
				sb.at = k
				span := spans.At(k)
				if isInstance, timed := readInstance(span, &in); isInstance && !sp.matches(in.Probe) {
					if !timed {
						b.Malformed()
					} else {
						b.Add(&in)
						if service := res.ServiceName(); service != "" {
							bs.add(in.Probe, service)
						}
					}
				}
				if sp != nil {
					sp.addMatched(b, span, &res, bs, &marks, &sb)
				}
			}
		}
	}
	sb.release()
}

// readInstance reads the outcome attributes of a span in one pass over its
// attributes. It returns false for a span that is not an instance (no
// deltaq.probe) or is late; timed is false for an instance whose span has
// no start or no end time (zero, or past the largest int64 that the
// analysis's times are), which the caller counts as malformed, as it does
// a span its probes match (spanInstance): read as it is, a start of zero
// made a delay of decades, counted as a timeout in the window open now.
// A span with a probe and no deltaq.outcome is a success: the processor
// leaves the outcome off successes, to spare the common case a pdata
// allocation, and it removes the contract attributes spans arrive with, so
// a bare deltaq.probe is its own. An explicit
// "success", as earlier processors wrote, is read the same. A span with a
// probe and a deltaq.outcome that is not a string or not a known value is
// returned with Outcome 0, for the engine to count as invalid. The layout
// attributes (deltaq.dmax_ns, deltaq.bins) are read when present and left
// zero otherwise: the processor writes them only on timeouts and on the
// first span of each probe in a batch (older processors on every span), and
// the engine classifies every instance under its probe's layout from the
// span's own start and end (the contract in internal/contract).
//
// The instance carries the span's trace and span ids, and its adjusted
// count from the span's W3C tracestate (contract.AdjustedCount), rounded
// stochastically to a whole count (contract.Weight); a span without a
// threshold, or with a sampling.priority > 0, counts as one.
func readInstance(span ptrace.Span, in *analysis.Instance) (isInstance, timed bool) {
	attrs := span.Attributes()
	if attrs.Len() == 0 {
		return false, false // no deltaq.probe: most spans a connector matches itself
	}
	*in = analysis.Instance{}
	var hasProbe, hasOutcome, late, priority, synthetic bool
	for k, v := range attrs.All() {
		switch k {
		case contract.AttrProbe:
			if v.Type() == pcommon.ValueTypeStr {
				in.Probe, hasProbe = v.Str(), true
			}
		case contract.AttrOutcome:
			hasOutcome = true
			if v.Type() == pcommon.ValueTypeStr {
				in.Outcome, _ = analysis.ParseOutcome(v.Str())
			}
		case contract.AttrDMaxNs:
			if v.Type() == pcommon.ValueTypeInt {
				in.DMaxNs = v.Int()
			}
		case contract.AttrBins:
			if v.Type() == pcommon.ValueTypeInt {
				in.Bins = int(v.Int())
			}
		case contract.AttrLate:
			late = v.Type() == pcommon.ValueTypeBool && v.Bool()
		case contract.AttrSynthetic:
			synthetic = v.Type() == pcommon.ValueTypeBool && v.Bool()
		case contract.AttrSamplingPriority:
			priority = samplingPriority(v)
		}
	}
	if !hasProbe || late {
		return false, false
	}
	if !hasOutcome {
		in.Outcome = analysis.Success
	}
	start, end := span.StartTimestamp(), span.EndTimestamp()
	if start == 0 || end == 0 || start > math.MaxInt64 || end > math.MaxInt64 {
		return true, false
	}
	in.Start, in.End = int64(start), int64(end)
	// A timeout the processor judged from a span that did end (not its
	// synthetic span) ended at End: a completion at the analysis resolution.
	in.Ended = in.Outcome == analysis.Timeout && !synthetic && in.End >= in.Start
	in.TraceID = [16]byte(span.TraceID())
	in.SpanID = [8]byte(span.SpanID())
	// Weight 0 counts one: a span without sampling information.
	if ts := span.TraceState().AsRaw(); ts != "" && !priority {
		if a, ok := contract.AdjustedCount(ts); ok {
			in.Weight = contract.Weight(a, binary.LittleEndian.Uint64(in.SpanID[:]))
		}
	}
	return true, true
}

// samplingPriority reports whether a sampling.priority value keeps its span
// whatever the sampling probability: a number > 0, as an int, a double or a
// string, the forms contrib's probabilistic sampler accepts. Such a span
// counts as one.
func samplingPriority(v pcommon.Value) bool {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int() > 0
	case pcommon.ValueTypeDouble:
		return v.Double() > 0
	case pcommon.ValueTypeStr:
		f, err := strconv.ParseFloat(v.Str(), 64)
		return err == nil && f > 0
	}
	return false
}
