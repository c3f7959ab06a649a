// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// otlpWant is what a JSON trace file holds, for messages.
const otlpWant = `OTLP JSON objects ({"resourceSpans": [...]}), as the collector's file exporter writes them`

// wrapped reads a JSON document that the unmarshaler read as a request
// without spans: the unmarshaler skips fields it does not know, so a trace
// backend's export read as nothing at all. The OTLP JSON that backends
// wrap is unwrapped: Tempo's trace by id holds the resourceSpans as
// "batches" (/api/traces/ID) or a request as "trace" (/api/v2/traces/ID,
// its TraceByIDResponse), Jaeger's API v3 (/api/v3/traces/ID) holds the
// request as "result". Other JSON is refused with what it looks like
// (foreignObject); a request with resourceSpans and no span is returned as
// read.
func (r *reader) wrapped(doc []byte, td ptrace.Traces) (ptrace.Traces, error) {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil || len(top) == 0 {
		return td, nil
	}
	if rs, ok := firstOf(top, "resourceSpans", "resource_spans"); ok {
		if bytes.Contains(rs, []byte(`"instrumentationLibrarySpans"`)) || bytes.Contains(rs, []byte(`"instrumentation_library_spans"`)) {
			return td, fmt.Errorf("OTLP JSON of an old OTLP version (instrumentationLibrarySpans, since replaced by scopeSpans): not read; want %s", otlpWant)
		}
		return td, nil
	}
	if b, ok := top["batches"]; ok && isArray(b) {
		return r.unmarshalJSON(slices.Concat([]byte(`{"resourceSpans":`), b, []byte(`}`)))
	}
	for _, key := range []string{"result", "trace"} {
		if b, ok := top[key]; ok && bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			return r.unmarshalJSON(b)
		}
	}
	return td, foreignObject(top)
}

// foreignObject is the error of a JSON object without resourceSpans: it
// names the trace format it looks like, or its keys.
func foreignObject(top map[string]json.RawMessage) error {
	if data, ok := top["data"]; ok && bytes.Contains(data, []byte(`"traceID"`)) {
		return fmt.Errorf("the JSON of Jaeger's UI and /api/traces (\"data\" with traceID and spans): not read; want %s", otlpWant)
	}
	_, spanContext := top["SpanContext"]
	_, context := top["context"]
	_, startTime := top["start_time"]
	switch {
	case spanContext:
		return fmt.Errorf("a span as OpenTelemetry Go's stdouttrace exporter prints it (\"SpanContext\"), not OTLP: not read; want %s", otlpWant)
	case context && startTime:
		return fmt.Errorf("a span as OpenTelemetry Python's ConsoleSpanExporter prints it (\"context\", \"start_time\"), not OTLP: not read; want %s", otlpWant)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 5 {
		keys = append(keys[:5], "…")
	}
	return fmt.Errorf("a JSON object without resourceSpans (its keys: %s): not read; want %s", strings.Join(keys, ", "), otlpWant)
}

// foreignArray is the error of a JSON array (doc, or its start when it is
// beyond the bound) where a request was expected. Its first element tells
// a Zipkin file: the array is not decoded, as it may be too long to be.
func foreignArray(doc []byte) error {
	head := doc[:min(len(doc), 4096)]
	if first, _, ok := bytes.Cut(head, []byte("}")); ok {
		if bytes.Contains(first, []byte(`"traceId"`)) && bytes.Contains(first, []byte(`"id"`)) {
			return fmt.Errorf("a JSON array of Zipkin spans (Zipkin's JSON v2, with traceId and id): not read; want %s (the collector's zipkin receiver and file exporter convert it)", otlpWant)
		}
	}
	return fmt.Errorf("a JSON array, starting %s: not read; want %s, one after another, not in an array", excerpt(doc), otlpWant)
}

// base64ID is a trace, span or parent span id in base64 (24 characters for
// 16 bytes, 12 for 8, padded), as a key and its value: protobuf's generic
// JSON mapping writes bytes so, and so do Tempo's /api/traces (grafana/tempo
// issue 5437) and tools built on that mapping, where OTLP JSON has hex. A
// key inside a JSON string has its quotes escaped, so only keys match.
var base64ID = regexp.MustCompile(`"(traceId|spanId|parentSpanId|trace_id|span_id|parent_span_id)"(\s*:\s*)"([A-Za-z0-9+/]{22}==|[A-Za-z0-9+/]{11}=)"`)

// unmarshalJSON decodes an OTLP JSON request; one the unmarshaler refuses
// that has ids in base64 is decoded again with them in hex, and an error
// then is past the ids.
func (r *reader) unmarshalJSON(doc []byte) (ptrace.Traces, error) {
	td, err := r.jsonU.UnmarshalTraces(doc)
	if err == nil || !base64ID.Match(doc) {
		return td, err
	}
	hexed := base64ID.ReplaceAllFunc(doc, func(m []byte) []byte {
		sub := base64ID.FindSubmatch(m)
		id, derr := base64.StdEncoding.DecodeString(string(sub[3]))
		if derr != nil {
			return m
		}
		return fmt.Appendf(nil, `"%s"%s"%x"`, sub[1], sub[2], id)
	})
	return r.jsonU.UnmarshalTraces(hexed)
}

// firstOf returns the value of the first of the keys that top has.
func firstOf(top map[string]json.RawMessage, keys ...string) (json.RawMessage, bool) {
	for _, k := range keys {
		if v, ok := top[k]; ok {
			return v, true
		}
	}
	return nil, false
}

// isArray reports whether a raw JSON value is an array.
func isArray(b json.RawMessage) bool {
	return bytes.HasPrefix(bytes.TrimSpace(b), []byte("["))
}
