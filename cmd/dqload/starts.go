// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// startTemplate is a marshalled OTLP ExportLogsServiceRequest holding one
// start event (contract.StartEventName) per span of a spanTemplate, as an
// application announces its spans when they start (sdk/deltaqstart), and
// the byte offsets of each event's ids and timestamp in it. restamp copies
// them from a restamped traces request, so that the events announce exactly
// the spans sent after them, at a few copies per span.
type startTemplate struct {
	// Data is the request in protobuf wire format.
	Data []byte

	spans               *spanTemplate
	traceID, spanID, ts []int // offsets into Data
}

// newStartTemplate builds the start events of t's spans with pdata: the
// span's trace and span ids, its start as the timestamp and its name as
// contract.AttrProbe. It finds each event's fields in the marshalled request
// by their bytes, which are the template's random values, hence unique.
func newStartTemplate(t *spanTemplate) (*startTemplate, error) {
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(t.Data); err != nil {
		return nil, fmt.Errorf("start events: the span template does not decode: %w", err)
	}
	spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "dqload")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("github.com/deltaq-otel/deltaq/cmd/dqload")
	records := sl.LogRecords()
	records.EnsureCapacity(spans.Len())
	for _, sp := range spans.All() {
		lr := records.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTraceID(sp.TraceID())
		lr.SetSpanID(sp.SpanID())
		lr.SetTimestamp(sp.StartTimestamp())
		lr.Attributes().PutStr(contract.AttrProbe, sp.Name())
	}
	data, err := plogotlp.NewExportRequestFromLogs(ld).MarshalProto()
	if err != nil {
		return nil, err
	}
	st := &startTemplate{Data: data, spans: t}
	var u [8]byte
	for _, sp := range spans.All() {
		tid, sid := sp.TraceID(), sp.SpanID()
		binary.LittleEndian.PutUint64(u[:], uint64(sp.StartTimestamp()))
		var off [3]int
		for i, b := range [][]byte{tid[:], sid[:], u[:]} {
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

// restamp writes into buf (a copy of st.Data) the trace and span ids and
// the start of each span of spans, a traces request restamped from st's
// span template.
func (st *startTemplate) restamp(buf, spans []byte) {
	t := st.spans
	for i := range t.Spans {
		copy(buf[st.traceID[i]:st.traceID[i]+len(pcommon.TraceID{})], spans[t.traceID[i]:])
		copy(buf[st.spanID[i]:st.spanID[i]+len(pcommon.SpanID{})], spans[t.spanID[i]:])
		copy(buf[st.ts[i]:st.ts[i]+8], spans[t.start[i]:])
	}
}
