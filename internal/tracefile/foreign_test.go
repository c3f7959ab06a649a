// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestReadWrapped: the OTLP JSON that trace backends wrap is read: Tempo's
// trace by id ({"batches": [resourceSpans...]}, its /api/traces/ID, or
// {"trace": request}, its /api/v2/traces/ID) and
// Jaeger's API v3 ({"result": request}, its /api/v3/traces/ID), laid out
// over lines or not; a request with resourceSpans and no span is read as
// one, as is an empty one, wrapped or not.
func TestReadWrapped(t *testing.T) {
	rs := `[{"resource":{},"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"a"},` +
		`{"traceId":"01000000000000000000000000000001","spanId":"0200000000000000","name":"b"}]}]}]`
	for name, content := range map[string]string{
		"tempo":           `{"batches":` + rs + "}\n" + `{"batches":` + rs + "}\n",
		"tempo, indented": "{\n  \"batches\": " + rs + "\n}\n{\"resourceSpans\":" + rs + "}",
		"jaeger v3":       `{"result":{"resourceSpans":` + rs + "}}\n" + `{"resourceSpans":` + rs + "}\n",
		"tempo v2":        `{"trace":{"resourceSpans":` + rs + `},"status":"COMPLETE"}` + "\n" + `{"resourceSpans":` + rs + "}\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, writeTemp(t, "t.json", content), bounds(1<<20, 1<<20))
			if want := []string{"a,b", "a,b"}; err != nil || !slices.Equal(got, want) {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	got, err := readAll(t, writeTemp(t, "t.json", "{}\n"+`{"resourceSpans":[{"scopeSpans":[]}]}`+"\n"+`{"result":{"resourceSpans":[]}}`+"\n"), bounds(1<<20, 1<<20))
	if want := []string{"", "", ""}; err != nil || !slices.Equal(got, want) {
		t.Errorf("requests without spans: got %q, %v; want %q", got, err, want)
	}
}

// TestReadBase64IDs: ids in base64, as Tempo's /api/traces writes them
// beside its "batches" (grafana/tempo issue 5437), are read as the bytes
// they encode, in spans, parents and links; a string holding such a key
// and value is left as it is.
func TestReadBase64IDs(t *testing.T) {
	// 0x0102…10 and 0x1112…18 in base64 (RFC 4648).
	const traceID, spanID, parentID = "AQIDBAUGBwgJCgsMDQ4PEA==", "ERITFBUWFxg=", "ISIjJCUmJyg="
	doc := `{"batches":[{"scopeSpans":[{"spans":[{"traceId":"` + traceID + `","spanId":"` + spanID + `","parentSpanId":"` + parentID +
		`","name":"a","attributes":[{"key":"k","value":{"stringValue":"\"spanId\":\"` + spanID + `\""}}],` +
		`"links":[{"traceId":"` + traceID + `", "spanId" : "` + parentID + `"}]}]}]}]}`
	var got []string
	err := Read(writeTemp(t, "t.json", doc+"\n"), bounds(1<<20, 1<<20), func(td ptrace.Traces) error {
		forEachSpan(td, func(s ptrace.Span) {
			attr, _ := s.Attributes().Get("k")
			l := s.Links().At(0)
			got = append(got, s.TraceID().String(), s.SpanID().String(), s.ParentSpanID().String(), attr.Str(), l.TraceID().String(), l.SpanID().String())
		})
		return nil
	})
	want := []string{"0102030405060708090a0b0c0d0e0f10", "1112131415161718", "2122232425262728", `"spanId":"` + spanID + `"`,
		"0102030405060708090a0b0c0d0e0f10", "2122232425262728"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestReadForeign: JSON of other trace formats, which the unmarshaler read
// as requests without spans or refused with a message about its parser,
// is refused naming the file, the line and what it looks like: Jaeger's
// JSON (its UI's download), Zipkin's JSON v2 (an array of spans, also
// beyond the bound), OTLP JSON of before scopeSpans, the console exporters'
// spans of OpenTelemetry Go and Python, any other object, text, an array of
// requests, and ids neither in hex nor in base64.
func TestReadForeign(t *testing.T) {
	zipkin := `[{"traceId":"0000000000000001","id":"0000000000000001","name":"a","timestamp":1795262400000000,"duration":1000,"localEndpoint":{"serviceName":"s"}}` +
		strings.Repeat(`,{"traceId":"0000000000000001","id":"0000000000000002","name":"b","timestamp":1795262400000000,"duration":1000}`, 20) + "]"
	for _, tc := range []struct{ name, content, want string }{
		{"jaeger", "\n" + `{"data":[{"traceID":"1","spans":[{"traceID":"1","spanID":"2","operationName":"a","startTime":1,"duration":2}],"processes":{}}],"total":0}`,
			`t.json:2: the JSON of Jaeger's UI and /api/traces ("data" with traceID and spans): not read; want OTLP JSON objects`},
		{"zipkin", zipkin, "t.json:1: a JSON array of Zipkin spans (Zipkin's JSON v2, with traceId and id): not read"},
		// Laid out over lines, it is longer than the bound.
		{"zipkin beyond the bound", strings.ReplaceAll(zipkin, ",", ",\n"), "t.json:1: a JSON array of Zipkin spans"},
		{"old OTLP", `{"resourceSpans":[{"instrumentationLibrarySpans":[{"spans":[{"name":"a"}]}]}]}`,
			"t.json:1: OTLP JSON of an old OTLP version (instrumentationLibrarySpans, since replaced by scopeSpans): not read"},
		{"other object", `{"resourceSpans":[]}` + "\n" + `{"spans":[{"name":"a"}],"service":"s"}`,
			"t.json:2: a JSON object without resourceSpans (its keys: service, spans): not read"},
		{"stdouttrace", "{\n\t\"Name\": \"a\",\n\t\"SpanContext\": {\"TraceID\": \"01\"},\n\t\"StartTime\": \"2026-11-21T12:00:00Z\"\n}\n",
			`t.json:1: a span as OpenTelemetry Go's stdouttrace exporter prints it ("SpanContext"), not OTLP: not read`},
		{"python console", "{\n    \"name\": \"a\",\n    \"context\": {\"trace_id\": \"0x01\"},\n    \"start_time\": \"2026-11-21T12:00:00.000000Z\"\n}\n",
			`t.json:1: a span as OpenTelemetry Python's ConsoleSpanExporter prints it ("context", "start_time"), not OTLP: not read`},
		// Detected as records: a length of 538 MB or more.
		{"text", "2026-11-21T12:00:00.000Z\tinfo\tTracesExporter\n", `t.json: record 1 at byte 0: length 842019382 is above 1 MiB: text that is not JSON (it starts "2026"), not read`},
		// JSON, but not an object: it was "text that is not JSON", or after
		// a line break "not a trace file of the file exporter, or a record
		// too large".
		{"null", "null\n", `t.json: record 1 at byte 0: length 1853189228 is above 1 MiB: a JSON value that is not an object (it starts "null"), not read`},
		{"number", "1234\n", `t.json: record 1 at byte 0: length 825373492 is above 1 MiB: a JSON value that is not an object (it starts "1234"), not read`},
		{"string", `"resourceSpans"` + "\n", `a JSON value that is not an object (it starts "\"res"), not read`},
		{"array of requests", `[{"resourceSpans":[]}]`, `t.json:1: a JSON array, starting "[{\"resourceSpans\":[]}]": not read`},
		// The error past the ids, not at them.
		{"base64 ids, a bad time", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"ERITFBUWFxg=","startTimeUnixNano":"x"}]}]}]}`,
			`t.json:1: ReadUint64: strconv.ParseUint: parsing "x"`},
		{"ids neither hex nor base64", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAAAAAAAAAAAAAAAAAAAAQ","spanId":"AAAAAAAAAAE=","name":"a"}]}]}]}`,
			"(OTLP JSON trace and span ids are 32 and 16 hex digits, or the base64 of 16 and 8 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, writeTemp(t, "t.json", tc.content), bounds(1<<20, len(zipkin)-1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
