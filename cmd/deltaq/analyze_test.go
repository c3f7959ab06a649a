package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, want := range []string{
		"123 instances",
		"e2e: 43 instances: 40 success, 1 timeout, 2 failure",
		"0.99=unreachable",
		"qta         FAIL: F(2ms) = 0.125 < 0.5",
		"qta         pass: F(20ms) = 0.9302 ≥ 0.5",
		"calculated  0.25=",
		"divergence",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
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
		{"not JSON", []string{"--config", analyzeConfig, writeTemp(t, "bad.json", "{\"resourceSpans\": [")}, exitFail, "document 1"},
		{"bad diagram", []string{"--config", writeTemp(t, "c.yaml", `
processors:
  deltaq:
    probes: [{name: a, dmax: 10ms, bins: 10}]
exporters:
  deltaq:
    diagram: "e2e = a -> ;"
`), analyzeTraces}, exitFail, "exporters::deltaq"},
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
