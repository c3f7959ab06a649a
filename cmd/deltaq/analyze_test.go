// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The analyze fixture (testdata/analyze): 40 requests, each a span "a" of
// 1.5 + (i mod 8) ms, then "b" of 3.5 ms, and "e2e" covering both; two more
// e2e spans have status ERROR and one lasts 150 ms, beyond e2e's 100 ms
// dMax; 40 unrelated "GET /health" spans. One request per line, ten lines.
const (
	analyzeConfig = "testdata/analyze/collector.yaml"
	analyzeTraces = "testdata/analyze/traces.json"
)

type analyzeOut struct {
	Counted int64 `json:"counted"`
	Probes  map[string]struct {
		Count, Success, Timeout, Failure int64
		Quantiles                        map[string]*float64 `json:"quantiles"`
		FailureRatio                     *float64            `json:"failure_ratio"`
		QTA                              *struct {
			Pass   bool `json:"pass"`
			Points []struct {
				Delay, P, Observed float64
				OK                 bool
			} `json:"points"`
			FailureOK bool `json:"failure_ok"`
		} `json:"qta"`
		CalculatedQuantiles map[string]*float64 `json:"calculated_quantiles"`
		Divergence          *float64            `json:"divergence"`
	} `json:"probes"`
}

func analyzeJSON(t *testing.T, args ...string) analyzeOut {
	t.Helper()
	status, stdout, stderr := runCmd(append([]string{"analyze", "--json"}, args...)...)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	var out analyzeOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v in\n%s", err, stdout)
	}
	return out
}

func TestAnalyzeJSON(t *testing.T) {
	out := analyzeJSON(t, "--config", analyzeConfig, analyzeTraces)
	if out.Counted != 123 {
		t.Errorf("counted %d instances, want 40 a + 40 b + 43 e2e", out.Counted)
	}
	if len(out.Probes) != 3 {
		t.Errorf("probes %v, want a, b, e2e (the health checks are no probe)", out.Probes)
	}
	a, b, e := out.Probes["a"], out.Probes["b"], out.Probes["e2e"]
	if a.Count != 40 || a.Success != 40 || b.Count != 40 {
		t.Errorf("a: %+v, b: %+v", a, b)
	}
	// The processor classifies: status ERROR is a failure, 150 ms > dMax a
	// timeout.
	if e.Count != 43 || e.Success != 40 || e.Failure != 2 || e.Timeout != 1 {
		t.Errorf("e2e counts %d = %d + %d + %d, want 43 = 40 + 1 timeout + 2 failures", e.Count, e.Success, e.Timeout, e.Failure)
	}
	// b always takes 3.5 ms: bin [3, 4) ms, uniform inside it, so its
	// median is 3.5 ms and its 0.25-quantile 3.25 ms.
	if q := b.Quantiles["0.5"]; q == nil || math.Abs(*q-0.0035) > 1e-12 {
		t.Errorf("b median = %v, want 3.5 ms", q)
	}
	if q := b.Quantiles["0.25"]; q == nil || math.Abs(*q-0.00325) > 1e-12 {
		t.Errorf("b 0.25-quantile = %v, want 3.25 ms", q)
	}
	// e2e: 3 of 43 failed, so the 0.99 quantile is out of reach: null.
	if q, ok := e.Quantiles["0.99"]; !ok || q != nil {
		t.Errorf("e2e 0.99 quantile = %v, want null (unreachable)", q)
	}
	if e.FailureRatio == nil || math.Abs(*e.FailureRatio-3.0/43) > 1e-12 {
		t.Errorf("e2e failure ratio %v, want 3/43", e.FailureRatio)
	}
	// QTA of a: half within 2 ms; only the 1.5 ms eighth is: F(2 ms) = 1/8.
	if a.QTA == nil || a.QTA.Pass || len(a.QTA.Points) != 1 || a.QTA.Points[0].Observed != 0.125 {
		t.Errorf("a QTA = %+v, want a fail with F(2ms) = 0.125", a.QTA)
	}
	if e.QTA == nil || !e.QTA.Pass || !e.QTA.FailureOK {
		t.Errorf("e2e QTA = %+v, want a pass (F(20ms) = 40/43, failure 3/43 ≤ 0.1)", e.QTA)
	}
	if b.QTA != nil {
		t.Errorf("b has no QTA but reports %+v", b.QTA)
	}
	// e2e = a -> b: calculated quantiles and a divergence; the others have
	// none.
	if e.CalculatedQuantiles == nil || e.Divergence == nil {
		t.Errorf("e2e: calculated %v, divergence %v", e.CalculatedQuantiles, e.Divergence)
	} else if q := e.CalculatedQuantiles["0.5"]; q == nil || *q < 0.007 || *q > 0.010 {
		// a is uniform over 1–9 ms (mean 5 ms) and b is 3.5 ms: the median
		// of the sum lies between 7 and 10 ms.
		t.Errorf("e2e calculated median %v, want 7–10 ms", q)
	}
	if a.Divergence != nil || a.CalculatedQuantiles != nil {
		t.Errorf("a is an outcome: no calculated ΔQ, got %v %v", a.CalculatedQuantiles, a.Divergence)
	}
}

// TestAnalyzeSingleDocument: an indented single JSON document is read like
// the file exporter's one-per-line form.
func TestAnalyzeSingleDocument(t *testing.T) {
	raw, err := os.ReadFile(analyzeTraces)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(raw, []byte("\n"))
	var buf bytes.Buffer
	if err := json.Indent(&buf, first, "", "  "); err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "one.json", buf.String())
	out := analyzeJSON(t, "--config", analyzeConfig, path)
	// The first line holds requests 0–3: 4 a, 4 b, 4 e2e.
	if out.Counted != 12 || out.Probes["e2e"].Count != 4 {
		t.Errorf("single document: %d instances, e2e %d; want 12 and 4", out.Counted, out.Probes["e2e"].Count)
	}
}

func TestAnalyzeText(t *testing.T) {
	status, stdout, stderr := runCmd("analyze", "--config", analyzeConfig, analyzeTraces)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	assertContainsAll(t, "output", stdout,
		"123 instances",
		"e2e: 43 instances: 40 success, 1 timeout, 2 failure",
		"0.99=unreachable",
		"qta         FAIL: F(2ms) = 0.125 < 0.5",
		"qta         pass: F(20ms) = 0.9302 ≥ 0.5",
		"calculated  0.25=",
		"divergence",
	)
}

func TestAnalyzePlot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots")
	analyzeJSON(t, "--config", analyzeConfig, "--plot", dir, analyzeTraces)
	for _, name := range []string{"a", "b", "e2e"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".png"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 1000 {
			t.Errorf("%s.png is not a PNG image (%d bytes)", name, len(b))
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		status int
		want   string
	}{
		{"no config", []string{analyzeTraces}, exitUsage, "--config is required"},
		{"no traces", []string{"--config", analyzeConfig}, exitUsage, "no trace files"},
		{"missing processor", []string{"--config", analyzeConfig, "--processor", "deltaq/other", analyzeTraces}, exitFail, `no processors section "deltaq/other"`},
		{"not JSON", []string{"--config", analyzeConfig, writeTemp(t, "bad.json", "{\"resourceSpans\": [")}, exitFail,
			"bad.json:1: the document that starts here has no end"},
		{"bad line", []string{"--config", analyzeConfig, writeTemp(t, "lines.json", "{\"resourceSpans\": []}\n\n{\"resourceSpans\": [}\n")}, exitFail,
			"lines.json:3: "},
		{"empty file", []string{"--config", analyzeConfig, writeTemp(t, "empty.json", "\n \n")}, exitFail, "empty.json: no traces"},
		{"bad diagram", []string{"--config", analyzeConfigWith(t, "c.yaml", `diagram: "e2e = a -> ;"`), analyzeTraces}, exitFail, "exporters::deltaq"},
		// The exporter's bounds hold offline too, though analyze never asks
		// for the endpoint that Validate wants.
		{"history out of bounds", []string{"--config", analyzeConfigWith(t, "h.yaml", "history: 1000000000"), analyzeTraces}, exitFail, `"history": 1000000000 is above the maximum 1000`},
		{"duration without unit", []string{"--config", writeTemp(t, "d.yaml", `
processors:
  deltaq:
    probes: [{name: a, dmax: 500, bins: 10}]
exporters:
  deltaq: {}
`), analyzeTraces}, exitFail, "probes[0].dmax: 500 has no unit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, stderr := runCmd(append([]string{"analyze"}, c.args...)...)
			if status != c.status || !strings.Contains(stderr, c.want) {
				t.Errorf("status %d (want %d), stderr %q (want %q)", status, c.status, stderr, c.want)
			}
		})
	}
}

// TestAnalyzeEscapesProbeNames: a probe name with terminal control sequences,
// configured in the collector configuration and carried by span data (the
// outcome attributes of a span that arrives already mapped), never reaches
// the output raw: the text shows it escaped, --json escapes it the JSON way,
// and the plot's file name keeps only safe characters.
func TestAnalyzeEscapesProbeNames(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", `
processors:
  deltaq:
    probes:
      - {name: "evil\x1b[2J\x1b]0;x\a", match: {span_name: "evil\x1b[2J\x1b]0;x\a"}, dmax: 10ms, bins: 10}
exporters:
  deltaq:
    probes:
      "evil\x1b[2J\x1b]0;x\a":
        qta: {points: [{delay: 5ms, p: 0.5}], max_failure: 0.1}
        triggers: {qta: true}
`)
	// One span matched by name (2 ms), one arriving with the outcome
	// attributes of a probe named like it with a bidi override (3 ms).
	traces := writeTemp(t, "evil.json", `{"resourceSpans":[{"scopeSpans":[{"spans":[`+
		`{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"evil\u001b[2J\u001b]0;x\u0007","kind":1,`+
		`"startTimeUnixNano":"1795262400000000000","endTimeUnixNano":"1795262400002000000","status":{}},`+
		`{"traceId":"02000000000000000000000000000001","spanId":"0200000000000000","name":"other","kind":1,`+
		`"startTimeUnixNano":"1795262400000000000","endTimeUnixNano":"1795262400003000000","status":{},"attributes":[`+
		`{"key":"deltaq.probe","value":{"stringValue":"spoof\u202e\u001b[31m"}},{"key":"deltaq.outcome","value":{"stringValue":"success"}},`+
		`{"key":"deltaq.dmax_ns","value":{"intValue":"10000000"}},{"key":"deltaq.bins","value":{"intValue":"10"}}]}`+
		`]}]}]}`+"\n")
	dir := filepath.Join(t.TempDir(), "plots")
	status, stdout, stderr := runCmd("analyze", "--config", cfg, "--plot", dir, traces)
	assertNoControls(t, "stdout", stdout)
	assertNoControls(t, "stderr", stderr)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	if !strings.Contains(stdout, "\n"+evilEscaped+": 1 instances: 1 success") {
		t.Errorf("stdout lacks the escaped probe name:\n%s", stdout)
	}
	if strings.Contains(stdout, "spoof") && !strings.Contains(stdout, `spoof\u202e\x1b[31m`) {
		t.Errorf("stdout shows the spoofed probe unescaped:\n%s", stdout)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		assertNoControls(t, "plot file name", e.Name())
	}
	if _, err := os.Stat(filepath.Join(dir, "evil__2J__0_x_.png")); err != nil {
		t.Errorf("plot of the evil probe: %v", err)
	}
	// encoding/json escapes the C0 controls; the rest of --json is left to
	// it.
	status, stdout, _ = runCmd("analyze", "--json", "--config", cfg, traces)
	if strings.ContainsAny(stdout, "\x1b\a") {
		t.Errorf("--json output holds raw ESC or BEL:\n%q", stdout)
	}
	var out analyzeOut
	if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
		t.Fatalf("--json: status %d, %v", status, err)
	}
	if p, ok := out.Probes[evilName]; !ok || p.Count != 1 {
		t.Errorf("--json probes %v, want %q with one instance", out.Probes, evilName)
	}
}

// spanLines writes n spans as the collector's file exporter would, perLine
// spans per line (one export request each): span i is named a, b, e2e or
// "GET /health" by i mod 4, lasts 1 + (i mod 40)·0.1 ms and has one
// attribute, http.route. It returns the file's size.
func spanLines(t *testing.T, path string, n, perLine int) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	names := []string{"a", "b", "e2e", "GET /health"}
	const t0 = 1795262400000000000
	for i := 0; i < n; i += perLine {
		w.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"shop"}}]},"scopeSpans":[{"scope":{"name":"shop"},"spans":[`)
		for j := i; j < min(i+perLine, n); j++ {
			if j > i {
				w.WriteByte(',')
			}
			start := int64(t0) + int64(j)*1_000_000
			end := start + 1_000_000 + int64(j%40)*100_000
			fmt.Fprintf(w, `{"traceId":"%032x","spanId":"%016x","name":%q,"kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d",`+
				`"attributes":[{"key":"http.route","value":{"stringValue":"/api/v1/items/{id}"}}],"status":{}}`,
				j+1, j+1, names[j%4], start, end)
		}
		w.WriteString("]}]}]}\n")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestAnalyzeMemoryBounded: analyze streams its input. 200 000 spans (about
// 50 MB of JSON lines) are analysed while the live heap grows by less than a
// quarter of the file's size; reading the file whole, as analyze once did,
// holds the file and then every decoded span at the same time (several times
// the file's size).
func TestAnalyzeMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 50 MB file")
	}
	path := filepath.Join(t.TempDir(), "big.json")
	const spans = 200_000
	size := spanLines(t, path, spans, 500)
	if size < 45<<20 {
		t.Fatalf("generated %d bytes, want about 50 MB", size)
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	// Sample the live heap while analyze runs: its peak is what a reader
	// of the whole file would show.
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	status, stdout, stderr := runCmd("analyze", "--json", "--config", analyzeConfig, path)
	close(stop)
	peak := <-done
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	var out analyzeOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	// Three spans in four are instances of a, b or e2e: 50 000 each.
	if out.Counted != 150_000 || out.Probes["e2e"].Count != 50_000 {
		t.Errorf("counted %d, e2e %d; want 150000 and 50000", out.Counted, out.Probes["e2e"].Count)
	}
	growth := int64(peak) - int64(base)
	t.Logf("file %d MB, heap growth at peak %.1f MB", size>>20, float64(growth)/(1<<20))
	if growth > size/4 {
		t.Errorf("heap grew by %d bytes analysing a %d-byte file, want < %d (a quarter)", growth, size, size/4)
	}
}

// readAll reads a trace file with readTraceFile and returns the span names of
// every document, one string per document.
func readAll(t *testing.T, path string, maxLine, maxDoc int) ([]string, error) {
	t.Helper()
	var docs []string
	err := readTraceFile(path, maxLine, maxDoc, func(td ptrace.Traces) error {
		var names []string
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				for k := 0; k < sss.At(j).Spans().Len(); k++ {
					names = append(names, sss.At(j).Spans().At(k).Name())
				}
			}
		}
		docs = append(docs, strings.Join(names, ","))
		return nil
	})
	return docs, err
}

// TestReadTraceFileLayouts: the same documents read alike from JSON lines
// (with blank lines, CRLF line ends and no final line break), from indented
// documents, and from several documents on one line, with strings holding
// brackets, quotes and backslashes that the splitter must skip.
func TestReadTraceFileLayouts(t *testing.T) {
	doc := func(names ...string) string {
		var spans []string
		for i, n := range names {
			b, _ := json.Marshal(n)
			spans = append(spans, fmt.Sprintf(`{"traceId":"%032x","spanId":"%016x","name":%s,"startTimeUnixNano":"1","endTimeUnixNano":"2"}`, i+1, i+1, b))
		}
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
	}
	d1, d2 := doc("a", `b}]"{\`), doc("c", "d", "e\n[")
	indent := func(s string) string {
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := []string{`a,b}]"{\`, "c,d,e\n["}
	for name, content := range map[string]string{
		"lines":          d1 + "\n" + d2 + "\n",
		"blank and CRLF": "\r\n" + d1 + "\r\n\r\n  \n" + d2,
		"indented":       indent(d1) + "\n" + indent(d2) + "\n",
		"indented, CRLF": strings.ReplaceAll(indent(d1)+"\n\n"+indent(d2), "\n", "\r\n"),
		"one line":       d1 + " " + d2 + "\n",
		"split mid-line": indent(d1) + d2 + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, writeTemp(t, "t.json", content), 1<<20, 1<<20)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
}

// TestReadTraceFileErrors: errors name the file and the line, and the bounds
// hold: a line or a document beyond its bound is refused there.
func TestReadTraceFileErrors(t *testing.T) {
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"a"}]}]}]}`
	long := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"` +
		strings.Repeat("x", 300) + `"}]}]}]}`
	// An indented document of 400 bytes or more whose lines are all short.
	var indented bytes.Buffer
	json.Indent(&indented, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[`+
		strings.Repeat(`{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"a"},`, 4)+
		`{}]}]}]}`), "", "  ")
	for _, tc := range []struct {
		name, content string
		want          string
	}{
		{"bad third line", good + "\n" + good + "\n{\"resourceSpans\": [}\n" + good + "\n", "t.json:3: "},
		{"truncated last line", good + "\n" + good[:40], "t.json:2: "},
		{"line too long", good + "\n" + long + "\n", "t.json:2: line longer than 256 bytes"},
		{"no line break at all", strings.Repeat(good, 10), "t.json:1: line longer than 256 bytes"},
		{"document too long", "\n" + indented.String() + "\n", "t.json:2: document longer than 300 bytes"},
		{"unclosed document", "{\n\"resourceSpans\": [\n", "t.json:1: the document that starts here has no end"},
		{"no traces", "\n\n", "t.json: no traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, writeTemp(t, "t.json", tc.content), 256, 300)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// An error of the consumer stops the reading and names the line.
	path := writeTemp(t, "t.json", good+"\n"+good+"\n"+good+"\n")
	n := 0
	err := readTraceFile(path, 1<<20, 1<<20, func(ptrace.Traces) error {
		if n++; n == 2 {
			return errors.New("refused")
		}
		return nil
	})
	if err == nil || !strings.HasSuffix(err.Error(), "t.json:2: refused") || n != 2 {
		t.Errorf("consumer error: %v after %d documents, want t.json:2: refused after 2", err, n)
	}
}
