// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlpjson_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/globtest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// librarySrc is the Erlang library's source, relative to this package.
const librarySrc = "../../erlang/dqsd_otel/src"

// checkModule drives dqsd_otel through its public API and prints one line
// per span, "span Name TraceId SpanId", so that the test knows which ids to
// expect. The spans cover a root with attributes of every OTLP type, a child
// that lasts at least 20 ms, a failure with a reason and an exception in
// with_span; each start is flushed while its span runs, so that its start
// event is sent.
const checkModule = `-module(otlpjson_check).
-export([main/0]).

main() ->
    ok = application:set_env(dqsd_otel, endpoint, os:getenv("DQSD_ENDPOINT")),
    ok = application:set_env(dqsd_otel, service_name, <<"otlpjson-check">>),
    ok = application:set_env(dqsd_otel, batch_interval_ms, 60000),
    ok = application:set_env(dqsd_otel, start_events, list_to_atom(os:getenv("DQSD_START_EVENTS"))),
    {ok, _} = application:ensure_all_started(dqsd_otel),
    Root = dqsd_otel:start_span(<<"root">>,
                                #{<<"str">> => <<"\"quoted\" \\ ", 16#394/utf8, "Q">>,
                                  <<"int">> => 9007199254740993,
                                  <<"neg">> => -9223372036854775808,
                                  <<"double">> => 0.125,
                                  <<"bool">> => true,
                                  <<"array">> => [1, <<"two">>, 3.5],
                                  <<"kv">> => #{<<"inner">> => false}}),
    print(<<"root">>, Root),
    undefined = dqsd_otel:set_current_span(Root),
    Child = dqsd_otel:start_span(<<"child">>),
    print(<<"child">>, Child),
    Failed = dqsd_otel:start_span(<<"failed">>),
    print(<<"failed">>, Failed),
    %% The start events go while their spans run: a start whose span ends
    %% in the same export round is not sent.
    ok = dqsd_otel:flush(),
    timer:sleep(20),
    ok = dqsd_otel:end_span(Child),
    ok = dqsd_otel:fail_span(Failed, <<"queue full">>),
    {'EXIT', {badarith, _}} =
        (catch dqsd_otel:with_span(<<"raised">>, fun() ->
                                                        print(<<"raised">>, dqsd_otel:current_span()),
                                                        ok = dqsd_otel:flush(),
                                                        erlang:error(badarith)
                                                end)),
    Root = dqsd_otel:set_current_span(undefined),
    ok = dqsd_otel:end_span(Root),
    ok = dqsd_otel:flush(),
    io:format("done~n"),
    halt(0).

print(Name, Ctx) ->
    io:format("span ~s ~s ~s~n", [Name, dqsd_otel:trace_id(Ctx), dqsd_otel:span_id(Ctx)]).
`

// spanIDs are the ids the Erlang side printed for one span.
type spanIDs struct{ trace, span string }

// collector is an OTLP/HTTP endpoint that keeps the bodies it received.
type collector struct {
	mu     sync.Mutex
	bodies map[string][][]byte
	errs   []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.errs = append(c.errs, r.URL.Path+": "+err.Error())
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		c.errs = append(c.errs, r.URL.Path+": Content-Type "+ct)
	}
	if r.Method != http.MethodPost {
		c.errs = append(c.errs, r.URL.Path+": method "+r.Method)
	}
	c.bodies[r.URL.Path] = append(c.bodies[r.URL.Path], body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// TestDqsdOtelDecodes runs the Erlang library against a local endpoint and
// decodes what it sent with the collector's pdata unmarshalers, with the
// start events in each of their forms.
func TestDqsdOtelDecodes(t *testing.T) {
	erl, err := exec.LookPath("erl")
	if err != nil {
		t.Skip("erl not on PATH: this check needs Erlang/OTP (CI installs erlang-nox)")
	}
	erlc, err := exec.LookPath("erlc")
	if err != nil {
		t.Fatalf("erl is on PATH but erlc is not: %v", err)
	}
	ebin := compileLibrary(t, erlc)
	for _, form := range []string{"batch", "per_span"} {
		t.Run(form, func(t *testing.T) { checkDqsdOtel(t, erl, ebin, form) })
	}
}

// checkDqsdOtel runs the check module with the start events in form.
func checkDqsdOtel(t *testing.T, erl, ebin, form string) {
	c := &collector{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(c)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, erl, "-noshell", "-pa", ebin, "-s", "otlpjson_check", "main")
	cmd.Env = append(os.Environ(), "DQSD_ENDPOINT="+srv.URL, "DQSD_START_EVENTS="+form)
	before := time.Now()
	out, err := cmd.CombinedOutput()
	after := time.Now()
	if err != nil {
		t.Fatalf("erl: %v\n%s", err, out)
	}
	ids := parseIDs(t, out)

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.errs {
		t.Errorf("request: %s", e)
	}
	spans := decodeTraces(t, c.bodies["/v1/traces"])
	events := decodeLogs(t, c.bodies["/v1/logs"], before, after)

	names := []string{"root", "child", "failed", "raised"}
	if len(spans) != len(names) {
		t.Fatalf("got %d spans, want %d", len(spans), len(names))
	}
	if len(events) != len(names) {
		t.Fatalf("got %d start events, want %d", len(events), len(names))
	}
	root := ids["root"]
	for _, name := range names {
		want, ok := ids[name]
		if !ok {
			t.Fatalf("erl printed no ids for %q:\n%s", name, out)
		}
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no span %q decoded", name)
		}
		if got := s.TraceID().String(); got != want.trace || got != root.trace {
			t.Errorf("%s: trace id %s, want %s (the root's)", name, got, want.trace)
		}
		if got := s.SpanID().String(); got != want.span {
			t.Errorf("%s: span id %s, want %s", name, got, want.span)
		}
		wantParent := root.span
		if name == "root" {
			wantParent = ""
		}
		if got := spanIDString(s.ParentSpanID()); got != wantParent {
			t.Errorf("%s: parent span id %q, want %q", name, got, wantParent)
		}
		if s.Kind() != ptrace.SpanKindInternal {
			t.Errorf("%s: kind %v, want Internal", name, s.Kind())
		}
		start, end := s.StartTimestamp().AsTime(), s.EndTimestamp().AsTime()
		if start.Before(before) || end.After(after) || end.Before(start) {
			t.Errorf("%s: span [%v, %v] not within the run [%v, %v]", name, start, end, before, after)
		}

		// The start event: same ids, the span name as probe, the start as time.
		ev, ok := events[want.span]
		if !ok {
			t.Fatalf("%s: no start event with span id %s", name, want.span)
		}
		if ev.Batch != (form == "batch") {
			t.Errorf("%s: a start event in a batch record %v, want %v", name, ev.Batch, form == "batch")
		}
		if got := ev.TraceID.String(); got != want.trace {
			t.Errorf("%s: event trace id %s, want %s", name, got, want.trace)
		}
		if ev.Probe != name {
			t.Errorf("%s: event %s = %q, want %q", name, contract.AttrProbe, ev.Probe, name)
		}
		if ev.Time != s.StartTimestamp() {
			t.Errorf("%s: event time %d, span start %d: want equal", name, ev.Time, s.StartTimestamp())
		}
	}

	checkRootAttributes(t, spans["root"].Attributes())

	if d := spans["child"].EndTimestamp() - spans["child"].StartTimestamp(); d < pcommon.Timestamp(20*time.Millisecond) {
		t.Errorf("child lasted %v, want at least the 20 ms it slept", time.Duration(d))
	}
	for _, name := range []string{"root", "child"} {
		if code := spans[name].Status().Code(); code != ptrace.StatusCodeUnset {
			t.Errorf("%s: status %v, want Unset", name, code)
		}
	}
	for name, msg := range map[string]string{"failed": "queue full", "raised": "error:badarith"} {
		s := spans[name]
		if s.Status().Code() != ptrace.StatusCodeError || s.Status().Message() != msg {
			t.Errorf("%s: status %v %q, want Error %q", name, s.Status().Code(), s.Status().Message(), msg)
		}
		if v, ok := s.Attributes().Get("deltaq.failed"); !ok || v.Type() != pcommon.ValueTypeBool || !v.Bool() {
			t.Errorf("%s: deltaq.failed = %v, want true", name, v.AsRaw())
		}
	}
	if ev := spans["raised"].Events(); ev.Len() != 1 || ev.At(0).Name() != "exception" {
		t.Errorf("raised: want one exception event, got %d", ev.Len())
	}
}

// checkRootAttributes checks one attribute of every OTLP value type,
// including an integer above 2^53 that a float64 JSON number would round.
func checkRootAttributes(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	want := map[string]any{
		"str":    "\"quoted\" \\ ΔQ",
		"int":    int64(9007199254740993),
		"neg":    int64(-9223372036854775808),
		"double": 0.125,
		"bool":   true,
		"array":  []any{int64(1), "two", 3.5},
		"kv":     map[string]any{"inner": false},
	}
	types := map[string]pcommon.ValueType{
		"str": pcommon.ValueTypeStr, "int": pcommon.ValueTypeInt, "neg": pcommon.ValueTypeInt,
		"double": pcommon.ValueTypeDouble, "bool": pcommon.ValueTypeBool,
		"array": pcommon.ValueTypeSlice, "kv": pcommon.ValueTypeMap,
	}
	if attrs.Len() != len(want) {
		t.Errorf("root has %d attributes, want %d: %v", attrs.Len(), len(want), attrs.AsRaw())
	}
	for k, w := range want {
		v, ok := attrs.Get(k)
		if !ok {
			t.Errorf("root: attribute %q missing", k)
			continue
		}
		if v.Type() != types[k] {
			t.Errorf("root: %q has type %v, want %v", k, v.Type(), types[k])
		}
		if got := v.AsRaw(); !equalRaw(got, w) {
			t.Errorf("root: %q = %#v, want %#v", k, got, w)
		}
	}
}

func equalRaw(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalRaw(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalRaw(x[k], y[k]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// compileLibrary builds the library and the check module into a temporary
// ebin directory, independent of the Erlang Makefile's build.
func compileLibrary(t *testing.T, erlc string) string {
	t.Helper()
	ebin := t.TempDir()
	srcs := globtest.Glob(t, filepath.Join(librarySrc, "*.erl"))
	check := filepath.Join(ebin, "otlpjson_check.erl")
	if err := os.WriteFile(check, []byte(checkModule), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-o", ebin, "-I", librarySrc}, srcs...)
	args = append(args, check)
	if out, err := exec.Command(erlc, args...).CombinedOutput(); err != nil {
		t.Fatalf("erlc: %v\n%s", err, out)
	}
	app, err := os.ReadFile(filepath.Join(librarySrc, "dqsd_otel.app.src"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ebin, "dqsd_otel.app"), app, 0o644); err != nil {
		t.Fatal(err)
	}
	return ebin
}

func parseIDs(t *testing.T, out []byte) map[string]spanIDs {
	t.Helper()
	ids := map[string]spanIDs{}
	done := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "span":
			ids[f[1]] = spanIDs{trace: f[2], span: f[3]}
		case len(f) == 1 && f[0] == "done":
			done = true
		}
	}
	if !done {
		t.Fatalf("erl did not finish:\n%s", out)
	}
	return ids
}

// decodeTraces unmarshals every /v1/traces body and returns the spans by name.
func decodeTraces(t *testing.T, bodies [][]byte) map[string]ptrace.Span {
	t.Helper()
	spans := map[string]ptrace.Span{}
	for _, b := range bodies {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalJSON(b); err != nil {
			t.Fatalf("ptraceotlp: %v\n%s", err, b)
		}
		rss := req.Traces().ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			rs := rss.At(i)
			if v, ok := rs.Resource().Attributes().Get("service.name"); !ok || v.Str() != "otlpjson-check" {
				t.Errorf("resource service.name = %v, want otlpjson-check", v.AsRaw())
			}
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				if ss.Scope().Name() != "dqsd_otel" {
					t.Errorf("scope name %q, want dqsd_otel", ss.Scope().Name())
				}
				for k := 0; k < ss.Spans().Len(); k++ {
					s := ss.Spans().At(k)
					spans[s.Name()] = s
				}
			}
		}
	}
	return spans
}

// decodeLogs unmarshals every /v1/logs body and returns the starts its
// start events announce by span id; the records' own times, a span's start
// or the export's, must fall in the run [before, after].
func decodeLogs(t *testing.T, bodies [][]byte, before, after time.Time) map[string]otlptest.SpanStart {
	t.Helper()
	var lds []plog.Logs
	for _, b := range bodies {
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalJSON(b); err != nil {
			t.Fatalf("plogotlp: %v\n%s", err, b)
		}
		lds = append(lds, req.Logs())
		for lr := range otlprecv.LogRecords(req.Logs()) {
			if at := lr.Timestamp().AsTime(); at.Before(before) || at.After(after) || lr.ObservedTimestamp() != lr.Timestamp() {
				t.Errorf("%s record at %v, observed %v, want both in the run [%v, %v]", lr.EventName(), at,
					lr.ObservedTimestamp().AsTime(), before, after)
			}
			// Severity INFO, as sdk/deltaqstart's: a pipeline keeping the
			// records from INFO up drops those without one.
			if lr.SeverityNumber() != plog.SeverityNumberInfo {
				t.Errorf("%s record of severity %v, want INFO", lr.EventName(), lr.SeverityNumber())
			}
		}
	}
	events := map[string]otlptest.SpanStart{}
	for _, s := range otlptest.StartsOf(t, lds) {
		events[s.SpanID.String()] = s
	}
	return events
}

// spanIDString is the hex form of a span id, "" for the empty id.
func spanIDString(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return id.String()
}
