// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"slices"
	"strings"
	"testing"
)

// TestReadWrapped: the OTLP JSON that trace backends wrap is read: Tempo's
// trace by id ({"batches": [resourceSpans...]}, its /api/traces/ID, or
// {"trace": request}, its /api/v2/traces/ID) and
// Jaeger's API v3 ({"result": request}, its /api/v3/traces/ID), laid out
// over lines or not; a request with resourceSpans and no span is read as
// one, as is an empty one.
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
	got, err := readAll(t, writeTemp(t, "t.json", "{}\n"+`{"resourceSpans":[{"scopeSpans":[]}]}`+"\n"), bounds(1<<20, 1<<20))
	if want := []string{"", ""}; err != nil || !slices.Equal(got, want) {
		t.Errorf("requests without spans: got %q, %v; want %q", got, err, want)
	}
}

// TestReadForeign: JSON of other trace formats, which the unmarshaler read
// as requests without spans or refused with a message about its parser,
// is refused naming the file, the line and what it looks like: Jaeger's
// JSON (its UI's download), Zipkin's JSON v2 (an array of spans, also
// beyond the bound), OTLP JSON of before scopeSpans, any other object, an
// array of requests, and ids in base64.
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
		{"array of requests", `[{"resourceSpans":[]}]`, `t.json:1: a JSON array, starting "[{\"resourceSpans\":[]}]": not read`},
		{"base64 ids", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AAAAAAAAAAAAAAAAAAAAAQ==","spanId":"AAAAAAAAAAE=","name":"a"}]}]}]}`,
			"(OTLP JSON trace and span ids are hex, 32 and 16 digits; not base64, as protobuf's generic JSON writes them)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, writeTemp(t, "t.json", tc.content), bounds(1<<20, len(zipkin)-1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
