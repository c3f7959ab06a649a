// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// spanTemplate is a marshalled OTLP ExportTraceServiceRequest of minimal spans
// and the byte offsets of each span's ids and timestamps in it. restamp
// rewrites those in place, so that every request carries fresh ids and
// current times at the cost of a few stores per span instead of building and
// marshalling a request.
type spanTemplate struct {
	// Data is the request in protobuf wire format.
	Data []byte
	// Spans is the number of spans in Data.
	Spans int

	traceID, spanID, start, end []int // offsets into Data
	elapsed                     []time.Duration
}

// maxSpans bounds a template so that span ids stay unique (see restamp).
const maxSpans = 1<<16 - 1

// templateConfig describes the spans of a template.
type templateConfig struct {
	Spans          int      // spans per request
	Names          []string // span names, used in turn
	MeanElapsed    time.Duration
	FailureRatio   float64 // share of spans with status ERROR
	ProbeAttribute bool    // also set deltaq.probe = name
}

// newTemplate builds a request of cfg.Spans spans with pdata, marshals it and
// locates each span's fields by searching for their (random, hence unique)
// bytes. It fails rather than guess if a value is not found exactly once.
func newTemplate(cfg templateConfig, rng *rand.Rand) (*spanTemplate, error) {
	if cfg.Spans < 1 || cfg.Spans > maxSpans {
		return nil, fmt.Errorf("spans per request must be in [1, %d], got %d", maxSpans, cfg.Spans)
	}
	if len(cfg.Names) == 0 {
		return nil, fmt.Errorf("at least one span name is needed")
	}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "dqload")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/deltaq-otel/deltaq/cmd/dqload")
	spans := ss.Spans()
	spans.EnsureCapacity(cfg.Spans)

	t := &spanTemplate{Spans: cfg.Spans}
	want := make([]spanFields, cfg.Spans)
	// Timestamps are random 63-bit values, so that the search finds them
	// exactly once; restamp overwrites them before anything is sent.
	for i := range want {
		w := &want[i]
		binary.LittleEndian.PutUint64(w.trace[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(w.trace[8:], rng.Uint64())
		binary.LittleEndian.PutUint64(w.span[:], rng.Uint64()|1)
		w.start = rng.Uint64() >> 1
		w.end = rng.Uint64() >> 1
		el := time.Duration(rng.ExpFloat64() * float64(cfg.MeanElapsed))
		t.elapsed = append(t.elapsed, el)

		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID(w.trace))
		sp.SetSpanID(pcommon.SpanID(w.span))
		name := cfg.Names[i%len(cfg.Names)]
		sp.SetName(name)
		sp.SetKind(ptrace.SpanKindInternal)
		sp.SetStartTimestamp(pcommon.Timestamp(w.start))
		sp.SetEndTimestamp(pcommon.Timestamp(w.end))
		if cfg.ProbeAttribute {
			sp.Attributes().PutStr(contract.AttrProbe, name)
		}
		if rng.Float64() < cfg.FailureRatio {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	data, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	if err != nil {
		return nil, err
	}
	t.Data = data
	if err := t.locate(want); err != nil {
		return nil, err
	}
	return t, nil
}

// spanFields are the values a template's span was built with, to be found
// in its wire format.
type spanFields struct {
	trace      [16]byte
	span       [8]byte
	start, end uint64
}

// locate records the offsets in t.Data of every span's fields.
func (t *spanTemplate) locate(want []spanFields) error {
	var u [8]byte
	for _, w := range want {
		var off [4]int
		var err error
		if off[0], err = findOnce(t.Data, w.trace[:]); err != nil {
			return err
		}
		if off[1], err = findOnce(t.Data, w.span[:]); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(u[:], w.start)
		if off[2], err = findOnce(t.Data, u[:]); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(u[:], w.end)
		if off[3], err = findOnce(t.Data, u[:]); err != nil {
			return err
		}
		t.traceID = append(t.traceID, off[0])
		t.spanID = append(t.spanID, off[1])
		t.start = append(t.start, off[2])
		t.end = append(t.end, off[3])
	}
	return nil
}

// findOnce returns the offset of b in data, and fails unless b occurs
// there exactly once.
func findOnce(data, b []byte) (int, error) {
	if n := bytes.Count(data, b); n != 1 {
		return 0, fmt.Errorf("template: a field's bytes occur %d times", n)
	}
	return bytes.Index(data, b), nil
}

// restamp writes into buf (a copy of t.Data) fresh ids derived from seq and
// timestamps ending at now: span i ends at now and started its template's
// elapsed time earlier. Trace ids are unique per (stream, seq, span); span
// ids too while stream < 2¹⁶, the template has < 2¹⁶ spans and seq < 2³², so a
// consumer keyed by span id never sees a repeat.
func (t *spanTemplate) restamp(buf []byte, stream uint32, seq uint64, now time.Time) {
	end := uint64(now.UnixNano())
	for i := range t.Spans {
		tid := buf[t.traceID[i]:]
		binary.BigEndian.PutUint32(tid[0:4], stream)
		binary.BigEndian.PutUint64(tid[4:12], seq)
		binary.BigEndian.PutUint32(tid[12:16], uint32(i))
		sid := buf[t.spanID[i]:]
		binary.BigEndian.PutUint16(sid[0:2], uint16(stream))
		binary.BigEndian.PutUint16(sid[2:4], uint16(i)+1)
		binary.BigEndian.PutUint32(sid[4:8], uint32(seq))
		binary.LittleEndian.PutUint64(buf[t.start[i]:], end-uint64(t.elapsed[i]))
		binary.LittleEndian.PutUint64(buf[t.end[i]:], end)
	}
}
