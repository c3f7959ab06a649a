// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/globtest"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
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
	// b always takes 3.5 ms: the analysis bucket [lo, hi) that holds it
	// (deltaq.FineLayout), uniform inside it, so its median is halfway
	// and its 0.25-quantile a quarter of the way through the bucket.
	lo, hi := fineBucket(t, 3_500_000)
	if q := b.Quantiles["0.5"]; q == nil || math.Abs(*q-(lo+hi)/2) > 1e-12 {
		t.Errorf("b median = %v, want %v, halfway through 3.5 ms's bucket", q, (lo+hi)/2)
	}
	if q := b.Quantiles["0.25"]; q == nil || math.Abs(*q-(lo+(hi-lo)/4)) > 1e-12 {
		t.Errorf("b 0.25-quantile = %v, want %v", q, lo+(hi-lo)/4)
	}
	// e2e: 3 of 43 failed, so the 0.99 quantile is out of reach: null.
	if q, ok := e.Quantiles["0.99"]; !ok || q != nil {
		t.Errorf("e2e 0.99 quantile = %v, want null (unreachable)", q)
	}
	if e.FailureRatio == nil || math.Abs(*e.FailureRatio-3.0/43) > 1e-12 {
		t.Errorf("e2e failure ratio %v, want 3/43", e.FailureRatio)
	}
	// QTA of a: half within 2 ms; only the 1.5 ms eighth is: F(2 ms) = 1/8.
	if a.QTA == nil || a.QTA.Pass || len(a.QTA.Points) != 1 || math.Abs(a.QTA.Points[0].Observed-0.125) > 1e-12 {
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

// TestAnalyzePlot: --plot writes a ΔQ plot and a plot over time per probe,
// PNG images of the plots' size, and lists them (on stderr with --json,
// whose stdout stays JSON).
func TestAnalyzePlot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "plots")
	status, stdout, stderr := runCmd("analyze", "--json", "--config", analyzeConfig, "--plot", dir, analyzeTraces)
	if status != exitOK || !json.Valid([]byte(stdout)) {
		t.Fatalf("status %d, stderr %s, stdout %s", status, stderr, stdout)
	}
	for _, name := range []string{"a", "b", "e2e"} {
		for _, file := range []string{name + ".png", name + ".windows.png"} {
			path := filepath.Join(dir, file)
			assertPNG(t, path)
			assertContainsAll(t, "stderr", stderr, "wrote "+path+"\n")
		}
	}
	// In text mode the list ends the output.
	status, stdout, _ = runCmd("analyze", "--config", analyzeConfig, "--plot", dir, analyzeTraces)
	if status != exitOK || !strings.HasSuffix(stdout, "wrote "+filepath.Join(dir, "e2e.windows.png")+"\n") {
		t.Errorf("status %d, the text output does not end with the files written:\n%s", status, stdout)
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
			"bad.json:1: record 1 at byte 0 of the file is cut short (the document that starts here has no end)"},
		{"bad line", []string{"--config", analyzeConfig, writeTemp(t, "lines.json", "{\"resourceSpans\": []}\n\n{\"resourceSpans\": [}\n")}, exitFail,
			"lines.json:3: "},
		{"empty file", []string{"--config", analyzeConfig, writeTemp(t, "empty.json", "\n \n")}, exitFail, "empty.json: no traces"},
		{"bad diagram", []string{"--config", analyzeConfigWith(t, "c.yaml", `diagram: "e2e = a -> ;"`), analyzeTraces}, exitFail, "exporters::deltaq"},
		// The exporter's bounds hold offline too, though analyze never asks
		// for the endpoint that Validate wants.
		{"history out of bounds", []string{"--config", analyzeConfigWith(t, "h.yaml", "history: 1000000000"), analyzeTraces}, exitFail, `history: 1000000000 is above the maximum 1000`},
		{"duration without unit", []string{"--config", writeTemp(t, "d.yaml", `
processors:
  deltaq:
    probes: [{name: a, dmax: 500, bins: 10}]
exporters:
  deltaq: {}
`), analyzeTraces}, exitFail, "probes[0].dmax: 500 has no unit"},
		// A connector's problem as check prints it, at its path, without the
		// decoder's framing ("decoding failed due to the following
		// error(s): '' …", which it had).
		{"connector option", []string{"--config", writeTemp(t, "q.yaml", `
connectors:
  deltaq:
    probes:
      job:
        match: {span_name: job}
        dmax: 1s
        bins: 10
        qoo:
          rop: {points: [{delay: 1ms}], max_failure: 0.01}
          cpup: {points: [{p: 0.5, delay: 5ms}], max_failure: 0.1}
`), analyzeTraces}, exitFail, `q.yaml: connectors::deltaq: probes["job"].qoo.rop.points[0].p: is missing`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, stderr := runCmd(append([]string{"analyze"}, c.args...)...)
			if strings.Contains(stderr, "decoding failed") {
				t.Errorf("stderr %q has the decoder's framing", stderr)
			}
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
	for _, e := range globtest.ReadDir(t, dir) {
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

	// Collect at a quarter of the live heap's growth rather than the
	// default's doubling, and read the live heap as the collector last
	// marked it (/gc/heap/live:bytes), not the heap in use: its peak is
	// what analyze holds, not how much garbage it made before a collector
	// slowed by other test binaries on the machine caught up with it
	// (sampling HeapAlloc, a run beside other tests once read 15.0 MB
	// against 13.7 MB).
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	base := live[0].Value.Uint64()
	// Sample the live heap while analyze runs: its peak is what a reader
	// of the whole file would show.
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
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

// windowsConfig: probe a (10 ms, 10 bins of 1 ms) with a QTA, windows of 2 s
// (lag one interval), and the connector's section rather than an
// exporter's: analyze takes the connector "deltaq" when there is no
// exporter "deltaq".
const windowsConfig = `
processors:
  deltaq:
    probes: [{name: a, match: {span_name: a}, dmax: 10ms, bins: 10}]
connectors:
  deltaq:
    interval: 2s
    probes:
      a:
        qta: {points: [{delay: 3ms, p: 0.5}], max_failure: 0.5}
`

// t0 is 2026-11-21T12:00:00Z, a multiple of 2 s since the Unix epoch.
const t0 = int64(1795262400) * 1e9

// spanJSON is one span of a request line: name, start and end in ns after
// t0, status ERROR when failed.
func spanJSON(i int, name string, start, end int64, failed bool) string {
	status := `{}`
	if failed {
		status = `{"code":2}`
	}
	return fmt.Sprintf(`{"traceId":"%032x","spanId":"%016x","name":%q,"kind":1,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","status":%s}`,
		i+1, i+1, name, t0+start, t0+end, status)
}

// requestLine is one export request of the file exporter holding spans.
func requestLine(spans ...string) string {
	return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}` + "\n"
}

// windowTraces writes the traces of TestAnalyzeWindows, one request per line
// in the order of their ends, as a collector receives them:
//
//	[t0, t0+2s):    4 successes of 2.5 ms
//	[t0+2s, t0+4s): 3 successes of 5.5 ms, one of them started in the
//	                window before (windows go by end time), and 1 failure
//	[t0+4s, t0+6s): nothing
//	[t0+6s, t0+8s): 1 span of 30 ms, a timeout (dMax 10 ms), ending at
//	                start + dMax
//
// and a last span ending at t0+0.5s, read when [t0, t0+2s) has closed (at
// t0+4s: its end plus the lag): too late for the windows.
func windowTraces(t *testing.T) string {
	const ms = int64(1e6)
	var b strings.Builder
	i := 0
	span := func(name string, start, end int64, failed bool) string {
		i++
		return spanJSON(i, name, start, end, failed)
	}
	b.WriteString(requestLine(span("a", 100*ms-2500000, 100*ms, false), span("other", 0, 150*ms, false)))
	b.WriteString(requestLine(span("a", 200*ms-2500000, 200*ms, false), span("a", 300*ms-2500000, 300*ms, false)))
	b.WriteString(requestLine(span("a", 1500*ms-2500000, 1500*ms, false)))
	b.WriteString(requestLine(span("a", 1996*ms, 2001*ms+500000, false), span("other", 1000*ms, 2100*ms, false)))
	b.WriteString(requestLine(span("a", 2500*ms-5500000, 2500*ms, false), span("a", 3000*ms-5500000, 3000*ms, false)))
	b.WriteString(requestLine(span("a", 3499*ms, 3500*ms, true)))
	b.WriteString(requestLine(span("a", 6470*ms, 6500*ms, false), span("other", 6000*ms, 6600*ms, false)))
	b.WriteString(requestLine(span("a", 499*ms, 500*ms, false)))
	return writeTemp(t, "windows.json", b.String())
}

type windowsOut struct {
	Counted        int64            `json:"counted"`
	Interval       float64          `json:"interval"`
	Lag            float64          `json:"lag"`
	WindowsDropped map[string]int64 `json:"windows_dropped"`
	WindowsEmpty   int              `json:"windows_empty"`
	Windows        []struct {
		Start, End string
		Probes     map[string]struct {
			Count, Success, Timeout, Failure int64
			Quantiles                        map[string]*float64 `json:"quantiles"`
			FailureRatio                     float64             `json:"failure_ratio"`
			QTAPass                          *bool               `json:"qta_pass"`
		} `json:"probes"`
	} `json:"windows"`
}

// TestAnalyzeWindows: the windows of the configured interval, by end time,
// aligned on multiples of it, with counts, quantiles, failure ratios and
// QTA verdicts computed by hand; a span read after its window closed is
// too late for the windows but counts in the whole input.
func TestAnalyzeWindows(t *testing.T) {
	cfg, traces := writeTemp(t, "c.yaml", windowsConfig), windowTraces(t)
	status, stdout, stderr := runCmd("analyze", "--json", "--config", cfg, traces)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	var out windowsOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Counted != 10 || out.Interval != 2 || out.Lag != 2 || out.WindowsEmpty != 1 || out.WindowsDropped["too_late"] != 1 {
		t.Errorf("counted %d, interval %v, lag %v, empty %d, dropped %v; want 10, 2, 2, 1 and 1 too_late",
			out.Counted, out.Interval, out.Lag, out.WindowsEmpty, out.WindowsDropped)
	}
	wantStarts := []string{"2026-11-21T12:00:00Z", "2026-11-21T12:00:02Z", "2026-11-21T12:00:06Z"}
	if len(out.Windows) != len(wantStarts) {
		t.Fatalf("%d windows, want %d: %s", len(out.Windows), len(wantStarts), stdout)
	}
	for i, w := range out.Windows {
		if w.Start != wantStarts[i] {
			t.Errorf("window %d starts at %s, want %s", i, w.Start, wantStarts[i])
		}
	}
	near := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	// Window 0: four 2.5 ms successes, in the analysis bucket [lo, hi),
	// read uniform in it: median halfway, 0.95-quantile 95 % of the way;
	// F(3 ms) = 1 ≥ 0.5.
	w0 := out.Windows[0].Probes["a"]
	if w0.Count != 4 || w0.Success != 4 || w0.FailureRatio != 0 || w0.QTAPass == nil || !*w0.QTAPass {
		t.Errorf("window 0: %+v", w0)
	}
	lo, hi := fineBucket(t, 2_500_000)
	near("window 0 median", w0.Quantiles["0.5"], lo+0.5*(hi-lo))
	near("window 0 0.95-quantile", w0.Quantiles["0.95"], lo+0.95*(hi-lo))
	// Window 1: three 5.5 ms successes and a failure: the CDF rises from 0
	// to 3/4 across 5.5 ms's bucket, so the median lies 0.5/0.75 of the way
	// through it; 0.95 is above the tangible 3/4: unreachable. F(3 ms) = 0
	// < 0.5: the QTA fails.
	lo, hi = fineBucket(t, 5_500_000)
	w1 := out.Windows[1].Probes["a"]
	if w1.Count != 4 || w1.Success != 3 || w1.Failure != 1 || w1.FailureRatio != 0.25 || w1.QTAPass == nil || *w1.QTAPass {
		t.Errorf("window 1: %+v", w1)
	}
	near("window 1 median", w1.Quantiles["0.5"], lo+0.5/0.75*(hi-lo))
	if q, ok := w1.Quantiles["0.95"]; !ok || q != nil {
		t.Errorf("window 1 0.95-quantile %v, want null (unreachable)", q)
	}
	// Window 3: the timeout, ending at t0 + 6.47 s + 10 ms.
	if w3 := out.Windows[2].Probes["a"]; w3.Count != 1 || w3.Timeout != 1 || w3.FailureRatio != 1 {
		t.Errorf("window 3: %+v", w3)
	}

	status, stdout, _ = runCmd("analyze", "--config", cfg, traces)
	if status != exitOK {
		t.Fatalf("status %d", status)
	}
	assertContainsAll(t, "text", stdout,
		"10 instances, ending from 2026-11-21T12:00:00.100Z to 2026-11-21T12:00:06.480Z",
		"windows of 2s by span end time, closed 2s after their end: 3 with instances, 1 without (not shown); 1 instances ended in a window already closed",
		"window start (UTC)        probe  instances  success  timeout  failure  q0.5         q0.95        qta\n",
		"2026-11-21T12:00:00.000Z  a      4          4        0        0        2.507ms      2.521ms      pass\n",
		"2026-11-21T12:00:02.000Z  a      4          3        0        1        5.483ms      unreachable  FAIL\n",
		"2026-11-21T12:00:06.000Z  a      1          0        1        0        unreachable  unreachable  FAIL\n",
		"the whole input as one window:",
		"a: 10 instances: 8 success, 1 timeout, 1 failure",
	)

	// --interval overrides the configured interval: one window of 10 s
	// holds every instance, the late one included.
	var one windowsOut
	_, stdout, _ = runCmd("analyze", "--json", "--interval", "10s", "--config", cfg, traces)
	if err := json.Unmarshal([]byte(stdout), &one); err != nil || len(one.Windows) != 1 || one.Windows[0].Probes["a"].Count != 10 {
		t.Errorf("--interval 10s: %v, %s", err, stdout)
	}
}

// TestAnalyzeWindowQuantilesLongDMax: the window table's quantiles are
// read from the analysis counts, as the whole input's and the connector's
// are, whatever the probe's dMax: window 0 of TestAnalyzeWindows, its four
// 2.5 ms successes under a dMax of 10 s, has its median halfway through
// 2.5 ms's analysis bucket and its 0.95-quantile 95 % of the way, as under
// 10 ms. Read from the window's Analysis ΔQ, on a grid of 4.2 ms bins, the
// median was 2.097 ms.
func TestAnalyzeWindowQuantilesLongDMax(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", strings.Replace(windowsConfig, "dmax: 10ms, bins: 10", "dmax: 10s, bins: 10", 1))
	status, stdout, stderr := runCmd("analyze", "--json", "--config", cfg, windowTraces(t))
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	var out windowsOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || len(out.Windows) == 0 {
		t.Fatalf("%v: %s", err, stdout)
	}
	w0 := out.Windows[0].Probes["a"]
	lo, hi := fineBucket(t, 2_500_000)
	for _, c := range []struct {
		q    string
		want float64
	}{{"0.5", lo + 0.5*(hi-lo)}, {"0.95", lo + 0.95*(hi-lo)}} {
		got := w0.Quantiles[c.q]
		if w0.Count != 4 || got == nil {
			t.Errorf("window 0 (%d instances): no %s-quantile, want %v", w0.Count, c.q, c.want)
		} else if math.Abs(*got-c.want) > 1e-12 {
			t.Errorf("window 0: %s-quantile %v, want %v", c.q, *got, c.want)
		}
	}
}

// TestAnalyzeConfiguredQuantiles: with quantiles configured, the window
// table shows them rather than the median and 0.95.
func TestAnalyzeConfiguredQuantiles(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", windowsConfig+"    quantiles: [0.25, 0.75]\n")
	status, stdout, stderr := runCmd("analyze", "--config", cfg, windowTraces(t))
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	// Window 0: a quarter and three quarters of the way through 2.5 ms's
	// analysis bucket [2.490, 2.523) ms.
	assertContainsAll(t, "text", stdout, "q0.25        q0.75 ", "2.499ms      2.515ms ")
}

// TestAnalyzeUnmatched: a configuration whose probes match no span says so
// and lists the most frequent span names, by count then name.
// TestAnalyzeWarnsOfUnproducedProbes: a diagram outcome that nothing of
// the configuration counts has no instance in the traces; analyze says so
// (a collector warns of it at start), and still analyses the rest. It
// printed "zz: 0 instances" without a word.
func TestAnalyzeWarnsOfUnproducedProbes(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", `
connectors:
  deltaq:
    diagram: "e2e = a -> zz;"
    probes:
      a: {match: {}, dmax: 50ms, bins: 50}
      e2e: {match: {}, dmax: 50ms, bins: 50}
`)
	status, _, stderr := runCmd("analyze", "--config", cfg, analyzeTraces)
	want := "deltaq analyze: warning: " + cfg + ": connectors::deltaq: nothing of the configuration counts this probe of the diagram or probes (no deltaq processor's probe, none the connector matches): zz\n"
	if status != exitOK || stderr != want {
		t.Errorf("status %d\nstderr %q\nwant   %q", status, stderr, want)
	}
	if _, _, stderr := runCmd("analyze", "--config", analyzeConfig, analyzeTraces); strings.Contains(stderr, "warning") {
		t.Errorf("every probe counted: %s", stderr)
	}
}

// TestAnalyzeNoSpans: requests without spans are analysed with a warning
// (the analysis of nothing came without); JSON that is not OTLP, which the
// unmarshaler reads as such requests, is refused naming its line, by
// analyze and by model alike.
func TestAnalyzeNoSpans(t *testing.T) {
	status, _, stderr := runCmd("analyze", "--config", analyzeConfig, writeTemp(t, "empty.json", `{"resourceSpans": []}`+"\n"))
	if status != exitOK || !strings.Contains(stderr, "deltaq analyze: warning: the files hold no span: an OTLP trace file holds resourceSpans") {
		t.Errorf("status %d, stderr %q", status, stderr)
	}
	foo := writeTemp(t, "foo.json", `{"resourceSpans": []}`+"\n"+`{"foo": "bar"}`+"\n")
	want := foo + `:2: a JSON object without resourceSpans (its keys: foo): not read; want OTLP JSON objects`
	if status, _, stderr := runCmd("analyze", "--config", analyzeConfig, foo); status != exitFail || !strings.Contains(stderr, want) {
		t.Errorf("analyze: status %d, stderr %q, want %q", status, stderr, want)
	}
	if status, _, stderr := runCmd("model", "-o", t.TempDir(), foo); status != exitFail || !strings.Contains(stderr, want) {
		t.Errorf("model: status %d, stderr %q, want %q", status, stderr, want)
	}
}

func TestAnalyzeUnmatched(t *testing.T) {
	cfg := analyzeConfigWith(t, "c.yaml", "history: 20")
	var spans []string
	for i := range 12 {
		// "GET /health" 4 times, "b" 3 times, "c" and "d" twice, "e" once.
		spans = append(spans, spanJSON(i, []string{"GET /health", "b", "c", "GET /health", "d", "b", "GET /health", "c", "d", "b", "GET /health", "e"}[i], 0, 1e6, false))
	}
	traces := writeTemp(t, "t.json", requestLine(spans[:5]...)+requestLine(spans[5:]...))
	status, stdout, stderr := runCmd("analyze", "--config", cfg, traces)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	assertContainsAll(t, "text", stdout, "0 instances\n\nno span matched any probe: 12 spans read; the most frequent span names:\n"+
		"         4  GET /health\n         3  b\n         2  c\n         2  d\n         1  e\n")
	if strings.Contains(stdout, "windows of") {
		t.Errorf("no windows are shown without instances:\n%s", stdout)
	}
	status, stdout, _ = runCmd("analyze", "--json", "--config", cfg, traces)
	type nameCount struct {
		Name  string `json:"name"`
		Count int64  `json:"count"`
	}
	var out struct {
		Unmatched *struct {
			Spans          int64       `json:"spans"`
			SpanNames      []nameCount `json:"span_names"`
			UntrackedSpans int64       `json:"untracked_spans"`
		} `json:"unmatched"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil || out.Unmatched == nil {
		t.Fatalf("status %d, %v: %s", status, err, stdout)
	}
	if u := out.Unmatched; u.Spans != 12 || len(u.SpanNames) != 5 || u.SpanNames[0] != (nameCount{"GET /health", 4}) || u.UntrackedSpans != 0 {
		t.Errorf("unmatched %+v", u)
	}
}

// TestAnalyzeSections: the analysis comes from the exporter named by
// --exporter, the connector named by --connector, or the connector
// "deltaq" when there is no exporter "deltaq" and none was asked for; the
// two flags exclude each other; each names a deltaq component.
func TestAnalyzeSections(t *testing.T) {
	// With components of other types, which no flag reads as deltaq's.
	others := strings.NewReplacer("processors:\n", "processors:\n  batch: {}\n", "connectors:\n", "connectors:\n  spanmetrics: {}\n")
	both := writeTemp(t, "c.yaml", others.Replace(windowsConfig)+`
exporters:
  deltaq/x:
    interval: 3s
`)
	for _, c := range []struct {
		args     []string
		interval float64
	}{
		{nil, 2},
		{[]string{"--exporter", "deltaq/x"}, 3},
		{[]string{"--connector", "deltaq"}, 2},
	} {
		var out windowsOut
		status, stdout, stderr := runCmd(append(append([]string{"analyze", "--json", "--config", both}, c.args...), windowTraces(t))...)
		if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil || out.Interval != c.interval {
			t.Errorf("%v: status %d, %v, interval %v (want %v), stderr %s", c.args, status, err, out.Interval, c.interval, stderr)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--exporter", "deltaq/x", "--connector", "deltaq"}, "--exporter and --connector are exclusive"},
		// A component of another type, or no ID: its section was read as
		// a deltaq component's ("processors::batch: probes: at least one
		// probe is required"; spanmetrics' analysed no probe).
		{[]string{"--processor", "batch"}, "--processor batch: a component of type batch: want deltaq or deltaq/NAME"},
		{[]string{"--connector", "spanmetrics"}, "--connector spanmetrics: a component of type spanmetrics: want deltaq or deltaq/NAME"},
		{[]string{"--exporter", "deltaq/"}, "--exporter deltaq/: not a component ID ("},
		// A mistyped ID: the deltaq components it has are named.
		{[]string{"--connector", "deltaq/y"}, `no connectors section "deltaq/y"; it has exporters::deltaq/x, connectors::deltaq`},
		{[]string{"--exporter", "deltaq/y"}, `no exporters section "deltaq/y" (its connectors section "deltaq" is read with --connector deltaq)`},
		// Asked for by name, the exporter is not replaced by the connector
		// (it was, silently).
		{[]string{"--exporter", "deltaq"}, `no exporters section "deltaq" (its connectors section "deltaq" is read with --connector deltaq)`},
		{[]string{"--format", "xml"}, `--format "xml": want auto, json or proto`},
		{[]string{"--interval", "-1s"}, "--interval -1s: want a positive duration"},
		// Given, zero is no default: it was taken for the configured one.
		{[]string{"--interval", "0s"}, "--interval 0s: want a positive duration"},
		// A flag's value is the flag's problem, not the file's.
		{[]string{"--interval", "1ns"}, "deltaq analyze: --interval 1ns (with "},
		{[]string{"--lag", "100s"}, "--lag 1m40s (with "},
	} {
		_, _, stderr := runCmd(append(append([]string{"analyze", "--config", both}, c.args...), analyzeTraces)...)
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q, want %q", c.args, stderr, c.want)
		}
	}
}

// TestAnalyzeProtoTruncated: analyze reads a proto file with zstd records
// like the JSON one, and analyses the records before a truncated last one,
// with a warning naming it.
func TestAnalyzeProtoTruncated(t *testing.T) {
	var tds []ptrace.Traces
	err := tracefile.Read(analyzeTraces, tracefile.Options{}, func(td ptrace.Traces) error {
		tds = append(tds, td)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, offsets := zstdProtoRecords(t, tds)
	whole := writeTemp(t, "traces.pb.zst", string(b))
	if out := analyzeJSON(t, "--config", analyzeConfig, whole); out.Counted != 123 || out.Probes["e2e"].Failure != 2 {
		t.Errorf("proto zstd: counted %d, e2e %+v; want 123 as from JSON", out.Counted, out.Probes["e2e"])
	}
	cut := writeTemp(t, "cut.pb.zst", string(b[:len(b)-10]))
	status, stdout, stderr := runCmd("analyze", "--json", "--config", analyzeConfig, cut)
	var out analyzeOut
	if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
		t.Fatalf("status %d, %v, stderr %s", status, err, stderr)
	}
	// The last record holds the last four requests (a, b, e2e, health each).
	if out.Counted != 123-12 {
		t.Errorf("counted %d, want 111 (the last record's 12 instances lost)", out.Counted)
	}
	assertContainsAll(t, "stderr", stderr, fmt.Sprintf("deltaq analyze: warning: %s: record 10 at byte %d of the file is cut short", cut, offsets[9]))
}

// zstdProtoRecords returns the file the collector's file exporter writes
// with format proto and compression zstd (each request's protobuf as one
// zstd frame, preceded by the frame's length as 4 bytes, big-endian), and
// the offset of each record.
func zstdProtoRecords(t *testing.T, tds []ptrace.Traces) (file []byte, offsets []int) {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, td := range tds {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		z := enc.EncodeAll(b, nil)
		offsets = append(offsets, len(file))
		file = append(binary.BigEndian.AppendUint32(file, uint32(len(z))), z...)
	}
	return file, offsets
}

// TestAnalyzeLagHint: the shipped traces are not in end-time order, so
// with the configured lag of one interval 60 of their 123 instances end in
// windows already closed. The table says so with the lag that would count
// them, and --lag with that value leaves none too late.
func TestAnalyzeLagHint(t *testing.T) {
	status, stdout, stderr := runCmd("analyze", "--config", analyzeConfig, analyzeTraces)
	const hint = "60 instances ended in a window already closed (too_late, not counted in the windows): --lag 3.804s would count them"
	if status != exitOK || !strings.Contains(stdout, hint) {
		t.Fatalf("status %d, stderr %q; stdout does not contain %q:\n%s", status, stderr, hint, stdout)
	}
	status, stdout, _ = runCmd("analyze", "--lag", "3.804s", "--config", analyzeConfig, analyzeTraces)
	if status != exitOK || strings.Contains(stdout, "too_late") || !strings.Contains(stdout, "closed 3.804s after their end") {
		t.Errorf("with --lag 3.804s: status %d\n%s", status, stdout)
	}
	status, _, stderr = runCmd("analyze", "--lag", "17s", "--config", analyzeConfig, analyzeTraces)
	if status != exitFail || !strings.Contains(stderr, `lag: 17s is more than 16 intervals`) {
		t.Errorf("--lag 17s at 1s windows: status %d, stderr %q", status, stderr)
	}
}

// fineBucket returns the edges, in seconds, of the analysis-resolution
// bucket [lo, hi) that holds a delay of d ns (deltaq.FineLayout).
func fineBucket(t *testing.T, d int64) (lo, hi float64) {
	t.Helper()
	edges, err := deltaq.FineLayout().Edges()
	if err != nil {
		t.Fatal(err)
	}
	j := deltaq.LogLinearBucket(edges, d)
	return float64(edges[j]) / 1e9, float64(edges[j+1]) / 1e9
}

// TestAnalyzeMarkedSpanOfAMatchedProbeCountsOnce: a span that the
// connector's probe matches and that carries that probe's deltaq.probe
// (the attribute of an upstream collector's processor, recorded with the
// span) counts once, by its match, as the connector counts it (the
// attribute of a probe it matches is not read); it counted twice.
func TestAnalyzeMarkedSpanOfAMatchedProbeCountsOnce(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", `
connectors:
  deltaq:
    probes:
      job: {match: {span_name: job}, dmax: 10ms, bins: 10}
`)
	traces := writeTemp(t, "marked.json", `{"resourceSpans":[{"scopeSpans":[{"spans":[`+
		`{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"job","kind":1,`+
		`"startTimeUnixNano":"1795262400000000000","endTimeUnixNano":"1795262400002000000","status":{},"attributes":[`+
		`{"key":"deltaq.probe","value":{"stringValue":"job"}}]},`+
		`{"traceId":"02000000000000000000000000000001","spanId":"0200000000000000","name":"job","kind":1,`+
		`"startTimeUnixNano":"1795262400000000000","endTimeUnixNano":"1795262400003000000","status":{}}`+
		`]}]}]}`+"\n")
	out := analyzeJSON(t, "--config", cfg, traces)
	if p := out.Probes["job"]; out.Counted != 2 || p.Count != 2 || p.Success != 2 {
		t.Errorf("counted %d, job %+v; want the two spans once each", out.Counted, p)
	}
}

// TestAnalyzeSpanAhead: one span ending an hour after the spans read
// before and after it (its host's clock is wrong) is dropped from the
// windows as too early, as the collector that recorded it dropped it, and
// said so; the spans after it still count in their windows, where it used
// to close every window at once and leave them too late.
func TestAnalyzeSpanAhead(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		start := int64(i) * 250e6
		b.WriteString(requestLine(spanJSON(i, "a", start, start+2e6, false)))
		if i == 10 {
			b.WriteString(requestLine(spanJSON(100, "a", 3600e9, 3600e9+2e6, false)))
		}
	}
	cfg, traces := writeTemp(t, "c.yaml", windowsConfig), writeTemp(t, "t.json", b.String())
	var out windowsOut
	if err := json.Unmarshal([]byte(runOK(t, "analyze", "--json", "--config", cfg, traces)), &out); err != nil {
		t.Fatal(err)
	}
	var inWindows int64
	for _, w := range out.Windows {
		inWindows += w.Probes["a"].Count
	}
	if out.Counted != 41 || inWindows != 40 || len(out.WindowsDropped) != 1 || out.WindowsDropped["too_early"] != 1 {
		t.Errorf("counted %d, %d in the windows, dropped %v; want 41, 40 and 1 too_early", out.Counted, inWindows, out.WindowsDropped)
	}
	text := runOK(t, "analyze", "--config", cfg, traces)
	if want := "; 1 instances ended beyond the windows open when they were read"; !strings.Contains(text, want) {
		t.Errorf("the text does not say %q:\n%s", want, text)
	}
}

// TestAnalyzeClockIsInstancesEnds: the windows' clock is the latest end of
// an instance read, a span a probe matches or the processor maps: spans of
// no probe, here one ending 5 s after the first instance (when the window
// of [t0, t0+2s) has closed by its lag of 2 s, were the clock every span's
// end), do not move it, and an instance of that window read after them
// counts in it, as the help and the README say.
func TestAnalyzeClockIsInstancesEnds(t *testing.T) {
	const ms = int64(1e6)
	traces := writeTemp(t, "t.json", requestLine(spanJSON(0, "a", 0, 500*ms, false))+
		requestLine(spanJSON(1, "other", 4000*ms, 5000*ms, false))+
		requestLine(spanJSON(2, "a", 900*ms, 1000*ms, false)))
	status, stdout, stderr := runCmd("analyze", "--json", "--config", writeTemp(t, "c.yaml", windowsConfig), traces)
	var out windowsOut
	if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
		t.Fatalf("status %d, %v, stderr %s", status, err, stderr)
	}
	if len(out.Windows) != 1 || out.Windows[0].Probes["a"].Count != 2 || len(out.WindowsDropped) != 0 {
		t.Errorf("windows %+v, dropped %v; want the two instances of a in the first window, none dropped", out.Windows, out.WindowsDropped)
	}
}

// TestAnalyzeProcessorOfThePipeline: without a processor named deltaq
// among them, the one deltaq processor of the traces pipelines that send
// to the connector maps the spans, as in the collector: it was made and
// given none, and analyze counted no instance of its probes without a
// word (or mapped them with the processor deltaq of another pipeline). Of
// several, none is chosen, and those given no spans are named, as they are
// beside the processor --processor reads.
func TestAnalyzeProcessorOfThePipeline(t *testing.T) {
	const ms = int64(1e6)
	traces := writeTemp(t, "t.json", requestLine(spanJSON(0, "a", 0, 5*ms, false), spanJSON(1, "b", 0, 5*ms, false)))
	config := func(procs string) string {
		return writeTemp(t, "c.yaml", `
processors:
  deltaq/x:
    probes: [{name: a, dmax: 10ms, bins: 10}]
  deltaq/y:
    probes: [{name: b, dmax: 10ms, bins: 10}]
connectors:
  deltaq:
    interval: 2s
    probes:
      a: {qta: {points: [{delay: 5ms, p: 0.5}], max_failure: 0.1}}
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [`+procs+`]
      exporters: [deltaq]
    metrics:
      receivers: [deltaq]
      exporters: [debug]
`)
	}
	for _, c := range []struct {
		procs string
		args  []string
		want  map[string]int64
		idle  string
	}{
		{"deltaq/x", nil, map[string]int64{"a": 1}, ""},
		{"deltaq/x, deltaq/y", nil, nil, "the deltaq processors deltaq/x, deltaq/y, which feed it, are given no spans here"},
		{"deltaq/x, deltaq/y", []string{"--processor", "deltaq/y"}, map[string]int64{"b": 1}, "the deltaq processor deltaq/x, which feeds it, is given no spans here"},
	} {
		status, stdout, stderr := runCmd(append(append([]string{"analyze", "--json", "--config", config(c.procs)}, c.args...), traces)...)
		var out struct {
			Probes map[string]struct{ Count int64 } `json:"probes"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
			t.Fatalf("%s %v: status %d, %v, stderr %s", c.procs, c.args, status, err, stderr)
		}
		got := map[string]int64{}
		for name, p := range out.Probes {
			if p.Count > 0 {
				got[name] = p.Count
			}
		}
		if len(got) != len(c.want) || !maps.Equal(got, c.want) {
			t.Errorf("%s %v: instances %v, want %v", c.procs, c.args, got, c.want)
		}
		if c.idle == "" && stderr != "" || !strings.Contains(stderr, c.idle) {
			t.Errorf("%s %v: stderr %q, want %q", c.procs, c.args, stderr, c.idle)
		}
		// deltaq slo makes every processor alike, and reads the layouts.
		if status, _, stderr := runCmd("slo", "--config", config(c.procs)); status != exitOK {
			t.Errorf("slo, %s: status %d, %s", c.procs, status, stderr)
		}
	}
	// Two connectors, each fed by a processor of its own pipeline.
	two := writeTemp(t, "two.yaml", `
processors:
  deltaq:
    probes: [{name: a, dmax: 10ms, bins: 10}]
  deltaq/y:
    probes: [{name: b, dmax: 10ms, bins: 10}]
connectors:
  deltaq/a: {interval: 2s}
  deltaq/b: {interval: 2s}
service:
  pipelines:
    traces/a: {receivers: [otlp], processors: [deltaq], exporters: [deltaq/a]}
    traces/b: {receivers: [otlp/b], processors: [deltaq/y], exporters: [deltaq/b]}
    metrics: {receivers: [deltaq/a, deltaq/b], exporters: [debug]}
`)
	for conn, probe := range map[string]string{"deltaq/a": "a", "deltaq/b": "b"} {
		status, stdout, stderr := runCmd("analyze", "--json", "--config", two, "--connector", conn, traces)
		var out struct {
			Probes map[string]struct{ Count int64 } `json:"probes"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil || stderr != "" {
			t.Fatalf("--connector %s: status %d, %v, stderr %s", conn, status, err, stderr)
		}
		for name, p := range out.Probes {
			if want := map[bool]int64{true: 1}[name == probe]; p.Count != want {
				t.Errorf("--connector %s: %d instances of %s, want %d", conn, p.Count, name, want)
			}
		}
	}
}
