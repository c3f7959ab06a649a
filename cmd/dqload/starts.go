// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// The forms of start events dqload sends (-start-events).
const (
	// startsSingle: one log record a span (contract.StartEventName).
	startsSingle = "single"
	// startsBatch: one log record a span name, the starts of its spans in
	// one bytes attribute (contract.StartsEventName).
	startsBatch = "batch"
)

// startTemplate is a marshalled OTLP ExportLogsServiceRequest announcing
// the spans of a spanTemplate as an application announces its spans when
// they start (sdk/deltaqstart): one start event (contract.StartEventName)
// per span, or, in the batch form, one record (contract.StartsEventName)
// per span name with an entry per span; and the byte offsets of each
// announced span's ids and start in it. restamp copies them from a
// restamped traces request, so that the events announce exactly the spans
// sent after them, at a few copies per span.
type startTemplate struct {
	// Data is the request in protobuf wire format.
	Data []byte
	// Records is the number of log records in it.
	Records int

	spans *spanTemplate
	// span holds the index in spans of each span announced (its length is
	// the number announced), and traceID, spanID and ts the offsets into
	// Data of its ids and start.
	span                []int
	traceID, spanID, ts []int
}

// newStartTemplate builds the start events of t's spans, in the given form,
// with pdata: the span's trace and span ids, its start, and its name as
// contract.AttrProbe. With drain > 0 it announces only the spans that an
// SDK draining its starts every drain would announce, those still running
// at its first drain after they start (sdk/deltaqstart leaves out the start
// of a span that ends before then): a span of elapsed time e whose start
// falls at a phase drawn uniformly from [0, drain) before that drain, with
// rng, is announced when e reaches it, so with probability min(1, e/drain).
// It finds each span's fields in the marshalled request by their bytes,
// which are the template's random values, hence unique; in a batch entry
// the span id and start follow the trace id.
func newStartTemplate(t *spanTemplate, form string, drain time.Duration, rng *rand.Rand) (*startTemplate, error) {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(t.Data); err != nil {
		return nil, fmt.Errorf("start events: the span template does not decode: %w", err)
	}
	spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	var announced []int
	i := 0
	spans.RemoveIf(func(ptrace.Span) bool {
		keep := drain <= 0 || t.elapsed[i] >= time.Duration(rng.Int64N(int64(drain)))
		if keep {
			announced = append(announced, i)
		}
		i++
		return !keep
	})
	if len(announced) == 0 {
		return nil, fmt.Errorf("start events: none of the template's %d spans runs past a drain of %v", t.Spans, drain)
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "dqload")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("github.com/deltaq-otel/deltaq/cmd/dqload")
	if form == startsBatch {
		appendBatchStarts(sl.LogRecords(), spans)
	} else {
		appendSingleStarts(sl.LogRecords(), spans)
	}
	data, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		return nil, err
	}
	st := &startTemplate{Data: data, Records: sl.LogRecords().Len(), spans: t, span: announced}
	var u [8]byte
	for _, sp := range spans.All() {
		tid, sid := sp.TraceID(), sp.SpanID()
		binary.LittleEndian.PutUint64(u[:], uint64(sp.StartTimestamp()))
		var off [3]int
		for i, b := range [][]byte{tid[:], sid[:], u[:]} {
			if form == startsBatch && i > 0 {
				off[i] = off[0] + [3]int{0, 16, 24}[i]
				continue
			}
			if off[i], err = findOnce(data, b); err != nil {
				return nil, fmt.Errorf("start events: %w", err)
			}
		}
		st.traceID = append(st.traceID, off[0])
		st.spanID = append(st.spanID, off[1])
		st.ts = append(st.ts, off[2])
	}
	return st, nil
}

// appendSingleStarts appends a start event per span of spans to records.
func appendSingleStarts(records plog.LogRecordSlice, spans ptrace.SpanSlice) {
	records.EnsureCapacity(spans.Len())
	for _, sp := range spans.All() {
		lr := records.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTraceID(sp.TraceID())
		lr.SetSpanID(sp.SpanID())
		lr.SetTimestamp(sp.StartTimestamp())
		lr.Attributes().PutStr(contract.AttrProbe, sp.Name())
	}
}

// appendBatchStarts appends a batch start event per span name of spans to
// records, in the order the names first appear, each with an entry per
// span of that name.
func appendBatchStarts(records plog.LogRecordSlice, spans ptrace.SpanSlice) {
	entries := map[string][]byte{}
	var names []string
	for _, sp := range spans.All() {
		if _, ok := entries[sp.Name()]; !ok {
			names = append(names, sp.Name())
		}
		entries[sp.Name()] = contract.AppendStart(entries[sp.Name()], sp.TraceID(), sp.SpanID(), uint64(sp.StartTimestamp()))
	}
	for _, name := range names {
		lr := records.AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.Attributes().PutStr(contract.AttrProbe, name)
		lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[name])
	}
}

// restamp writes into buf (a copy of st.Data) the trace and span ids and
// the start of each span of spans, a traces request restamped from st's
// span template.
func (st *startTemplate) restamp(buf, spans []byte) {
	t := st.spans
	for i, j := range st.span {
		copy(buf[st.traceID[i]:st.traceID[i]+len(pcommon.TraceID{})], spans[t.traceID[j]:])
		copy(buf[st.spanID[i]:st.spanID[i]+len(pcommon.SpanID{})], spans[t.spanID[j]:])
		copy(buf[st.ts[i]:st.ts[i]+8], spans[t.start[j]:])
	}
}
