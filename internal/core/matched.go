// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// SpanProbes are the probes an observer finds in the spans themselves, with
// no deltaq processor: the deltaq connector's probes with a match. Their
// instances need no real-time timeout, since each is judged from its own
// span: a span longer than the probe's dMax is a timeout (the engine
// classifies it under the probe's configured layout), else a failure when
// the probe's failure rule holds, else a success.
type SpanProbes struct {
	// Matcher finds the probes of a span; its rules are in the order of
	// Names and Failures.
	Matcher *spanmatch.Matcher
	// Names are the probes' names.
	Names []string
	// Failures are the probes' failure rules.
	Failures []spanmatch.Failure
	// Auto holds, for a probe with `dmax: auto`, its auto-ranging options
	// and bins; nil for a probe whose configuration gives its layout.
	// Empty: none.
	Auto []*AutoProbe
}

// AutoProbe is a probe matched in the spans that chooses its own dMax
// (internal/autorange).
type AutoProbe struct {
	Options autorange.Options
	Bins    int
}

// spanProbes are an observer's SpanProbes with each probe resolved in its
// engine (analysis.Engine.Ref), so that an instance is counted without a
// look-up of its probe's name.
type spanProbes struct {
	*SpanProbes
	// byName finds a probe by name, for the start events.
	byName map[string]int32
	// dMaxNs are the probes' dMax in nanoseconds, which a start event's
	// deadline is set by.
	dMaxNs []int64
	// ranges are the auto probes' ranges, nil for the others (autoprobes.go).
	ranges []*autorange.Range
	// starts is the start-event path (starts.go); nil when the observer
	// takes no start events. clock is the observer's clock.
	starts *starts
	clock  func() time.Time
	refs   []analysis.ProbeRef
	// resolved[i] is false for a probe the engine gave no reference, whose
	// instances are added by name (none: the connector's Validate requires
	// a dMax and bins of every probe with a match).
	resolved []bool
}

// resolve returns sp with its probes resolved in e, and the ranges of its
// auto probes; nil when sp is nil.
func resolve(sp *SpanProbes, e *analysis.Engine, ranges []*autorange.Range, clock func() time.Time) *spanProbes {
	if sp == nil {
		return nil
	}
	n := len(sp.Names)
	r := &spanProbes{SpanProbes: sp, byName: make(map[string]int32, n), dMaxNs: make([]int64, n), clock: clock,
		refs: make([]analysis.ProbeRef, n), resolved: make([]bool, n), ranges: ranges}
	for i, name := range sp.Names {
		r.refs[i], r.resolved[i] = e.Ref(name)
		r.byName[name] = int32(i)
		l, _ := e.Layout(name)
		r.dMaxNs[i] = l.DMaxNs
	}
	return r
}

// matches reports whether sp matches probe name in the spans itself; false
// for a nil sp. Of such a probe, a deltaq.probe attribute is not read: no
// processor of the collector maps it (a probe is matched in one place), so
// the attribute is the application's or an upstream collector's, and the
// span counts once, by its match.
func (sp *spanProbes) matches(name string) bool {
	if sp == nil {
		return false
	}
	_, ok := sp.byName[name]
	return ok
}

// dMax returns the dMax in force of probe i in nanoseconds.
func (sp *spanProbes) dMax(i int32) int64 {
	if sp.ranges != nil && sp.ranges[i] != nil {
		return sp.ranges[i].DMax()
	}
	return sp.dMaxNs[i]
}

// maxHitsOnStack is the number of probes one span can match before the
// list of its probes leaves the stack (an allocation per such span).
const maxHitsOnStack = 8

// addMatched adds an instance of every probe of sp that the span belongs
// to, and records the service of each in bs, once per probe of a resource
// (marks); res is the span's resource.
//
// While start events are in use, the span ends the instance its start event
// announced (endSpan), whatever its times: it came, so the instance is no
// timeout. If that instance's timeout was counted already, the span is late
// and not counted again for its probe; if the instance is of a probe the
// span does not match, it is counted as mismatched and nothing more (the
// span's probes are those its match selects). A span without a start or an
// end time, or that ends before it starts, is malformed for each probe
// that counts it. sb is the batch's hold of the start events' tracker.
func (sp *spanProbes) addMatched(b analysis.Batch, span ptrace.Span, res *spanmatch.Resource, bs *batchServices, marks *probeMarks, sb *spanBatch) {
	var buf [maxHitsOnStack]int32
	hits := sp.Matcher.AppendMatches(buf[:0], span, res)
	if len(hits) == 0 {
		return
	}
	var in analysis.Instance
	timed := spanInstance(span, &in)
	ended, timedOut := sp.endSpan(&in, sb)
	if ended >= 0 && !slices.Contains(hits, ended) {
		sp.starts.mismatched(ended, hits, span)
	}
	late := int32(-1) // the probe of an instance whose timeout was counted already
	if timedOut {
		late = ended
	}
	if !timed {
		for _, i := range hits {
			if i != late {
				b.Malformed()
			}
		}
		return
	}
	service := res.ServiceName()
	for _, i := range hits {
		// A late span's delay is a delay too, in place of its instance's
		// timeout, which the range counted as censored (expire); one that
		// ends before it starts is none (the engine counts it malformed).
		if sp.ranges != nil && sp.ranges[i] != nil && in.End >= in.Start {
			if i == late {
				sp.ranges[i].Uncensor(in.End - in.Start)
			} else {
				sp.ranges[i].Observe(in.End - in.Start)
			}
		}
		if i == late {
			continue
		}
		in.Probe, in.Outcome = sp.Names[i], analysis.Success
		if sp.Failures[i].Holds(span) {
			in.Outcome = analysis.Failure
		}
		if sp.resolved[i] {
			b.AddTo(sp.refs[i], &in)
		} else {
			b.Add(&in)
		}
		if service != "" && marks.first(int(i)) {
			bs.add(in.Probe, service)
		}
	}
}

// spanInstance fills in what an instance of a probe matched in span takes
// from the span: start, end, trace and span ids, and the adjusted count of
// a sampled span, as the instances the processor marks are weighted
// (readInstance). It returns false for a span without a start or an end
// time, which is no instance (malformed): in then holds the span's ids
// alone, by which it still ends the instance of its start event (endSpan).
// in is zero; the probe and the outcome are the caller's.
func spanInstance(span ptrace.Span, in *analysis.Instance) bool {
	// Field by field: a composite literal is built aside and then copied,
	// a stall that a profile of a loaded collector shows.
	in.TraceID, in.SpanID = [16]byte(span.TraceID()), [8]byte(span.SpanID())
	start, end := span.StartTimestamp(), span.EndTimestamp()
	if start == 0 || end == 0 || start > math.MaxInt64 || end > math.MaxInt64 {
		return false
	}
	in.Start, in.End = int64(start), int64(end)
	// The attribute is looked up only for a span whose tracestate carries
	// a threshold.
	if ts := span.TraceState().AsRaw(); ts != "" {
		if a, ok := contract.AdjustedCount(ts); ok {
			if v, has := span.Attributes().Get(contract.AttrSamplingPriority); !has || !samplingPriority(v) {
				in.Weight = contract.Weight(a, binary.LittleEndian.Uint64(in.SpanID[:]))
			}
		}
	}
	return true
}

// probeMarks records, for the spans of one resource, the probes of a
// SpanProbes already noted in a batchServices, so that a resource's
// service is noted once per probe rather than once per span. The marks of
// the first 256 probes live in the array, on the caller's stack; the others
// are noted every time (batchServices.add skips a pair it holds).
type probeMarks struct {
	words [4]uint64
}

// first marks probe i and reports whether it was not marked yet; always
// true past the array.
func (m *probeMarks) first(i int) bool {
	w, bit := i/64, uint64(1)<<(i%64)
	if w >= len(m.words) {
		return true
	}
	if m.words[w]&bit != 0 {
		return false
	}
	m.words[w] |= bit
	return true
}
