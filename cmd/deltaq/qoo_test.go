// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/report"
)

// draftQoOFlag is the requirement of the worked example of "Quality of
// Outcome" (draft-ietf-ippm-qoo-10, section 3.4).
const draftQoOFlag = "p99:200ms/500ms,p99.9:300ms/600ms,loss:1%/5%"

func TestParseQoO(t *testing.T) {
	r, err := parseQoO("loss:1%/5%, p99.9:300ms/600ms, p99:200ms/500ms")
	if err != nil {
		t.Fatal(err)
	}
	want := []deltaq.QoOLatency{{Percentile: 0.99, ROP: 0.2, CPUP: 0.5}, {Percentile: 0.999, ROP: 0.3, CPUP: 0.6}}
	// p99.9 is 0.999 exactly (99.9/100 is 0.9990000000000001).
	if len(r.Latency) != 2 || r.Latency[0] != want[0] || r.Latency[1].Percentile != 0.999 ||
		r.Latency[1].ROP != 0.3 || r.Latency[1].CPUP != 0.6 || r.ROPLoss != 0.01 || r.CPUPLoss != 0.05 {
		t.Errorf("parsed %+v, want %+v and loss 1 %%/5 %%", r, want)
	}
	// p0 is the least delay, which the QoO draft lists among the
	// percentiles (section 3.1.1).
	if r, err := parseQoO("p0:1ms/5ms,p50:2ms/10ms,loss:0/1"); err != nil || len(r.Latency) != 2 || r.Latency[0].Percentile != 0 || r.Latency[0].CPUP != 0.005 {
		t.Errorf("p0: %+v, %v; want percentile 0 first, CPUP 5 ms", r, err)
	}
	for _, c := range []struct{ in, want string }{
		{"p99:200ms/500ms", "no loss:ROP/CPUP item"},
		{"p-1:1ms/2ms,loss:0/1", "want p and a percentage in [0, 100]"},
		{"p99:200ms,loss:0/1", "want pP:ROP/CPUP or loss:ROP/CPUP"},
		{"q99:1ms/2ms,loss:0/1", `"q99" is neither a percentile such as p99 nor loss`},
		{"p120:1ms/2ms,loss:0/1", "want p and a percentage in [0, 100]"},
		{"p99:2ms/1ms,loss:0/1", `"p99:2ms/1ms": the CPUP delay 1ms is not longer than the ROP delay 2ms`},
		{"p99.9:2ms/1ms,loss:0/1", `"p99.9:2ms/1ms": the CPUP delay`},
		{"p99:1ms/2ms,loss:5%/1%", `"loss:5%/1%": the CPUP ratio 1% is not larger than the ROP ratio 5%`},
		{"p99:1ms/2ms,loss:0/150%", `ratio "150%": want a fraction in [0, 1] or a percentage`},
		{"p99:1/2ms,loss:0/1", "ROP delay"},
		{"p99:1ms/2ms,loss:0/1,loss:0/1", "loss given twice"},
	} {
		if _, err := parseQoO(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--qoo %s: %v, want %q", c.in, err, c.want)
		}
	}
}

// TestParseQoOFractionPercentile: P is a percentage, and a configuration
// writes the same percentile as a fraction (p: 0.99, the connector's
// README); p0.99, that fraction after the p, was read as the 0.99th
// percentile without a word. A P in (0, 1) is refused with the percentage
// to write; p0 (the least delay) and p1 (the 1st percentile) are kept,
// and the help says so.
func TestParseQoOFractionPercentile(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"p0.99:200ms/500ms,loss:0/1", `"p0.99:200ms/500ms": percentile "p0.99": P is a percentage, not a fraction: write p99 for the 99th percentile (a configuration's p: 0.99)`},
		{"p99:200ms/500ms,p0.999:300ms/600ms,loss:0/1", `percentile "p0.999": P is a percentage, not a fraction: write p99.9 for the 99.9th percentile (a configuration's p: 0.999)`},
		{"p0.5:1ms/2ms,loss:0/1", `write p50 for the 50th percentile`},
		// p0.1 would be refused too: no form to write but the range.
		{"p0.001:1ms/2ms,loss:0/1", `percentile "p0.001": P is a percentage, not a fraction: want p0 or P in [1, 100], e.g. p99`},
		{"p1e-1:1ms/2ms,loss:0/1", `percentile "p1e-1": P is a percentage, not a fraction: want p0 or P in [1, 100]`},
	} {
		if _, err := parseQoO(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--qoo %s: %v, want %q", c.in, err, c.want)
		}
	}
	r, err := parseQoO("p0:1ms/2ms,p1:2ms/3ms,p99:3ms/4ms,loss:0/1")
	if err != nil || len(r.Latency) != 3 || r.Latency[0].Percentile != 0 || r.Latency[1].Percentile != 0.01 || r.Latency[2].Percentile != 0.99 {
		t.Errorf("p0, p1, p99: %+v, %v; want percentiles 0, 0.01, 0.99", r, err)
	}
	status, _, stderr := runCmd("eval", writeTemp(t, "a.dq", "system = a;\n"), "--outcome", "a=point(1ms)", "--qoo", "p0.99:200ms/500ms,loss:0/1")
	if status != exitUsage || !strings.Contains(stderr, "write p99 for the 99th percentile") {
		t.Errorf("eval --qoo p0.99:…: status %d, stderr %q", status, stderr)
	}
	for _, cmd := range []string{"eval", "whatif"} {
		_, help, _ := runCmd("help", cmd)
		assertContainsAll(t, "deltaq help "+cmd, help, "p99 is a configuration's p: 0.99", "(0, 1) such as p0.99 is refused")
	}
}

// TestParseQoOOrder: thresholds in the wrong order are refused in the
// terms they were written in, naming the items: the delays as written
// (20us, not 1.9999999999999998e-05s) and which threshold falls between
// which percentiles.
func TestParseQoOOrder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"p99:20us/10us,loss:0/1", `"p99:20us/10us": the CPUP delay 10us is not longer than the ROP delay 20us: the score falls from 100 at ROP to 0 at CPUP`},
		{"p99:5ms/5ms,loss:0/1", `"p99:5ms/5ms": the CPUP delay 5ms is not longer than the ROP delay 5ms`},
		{"p99:5ms/30ms,p50:10ms/20ms,loss:0/1", `"p99:5ms/30ms": the ROP delay 5ms is shorter than that of "p50:10ms/20ms", 10ms: a higher percentile is never a shorter delay`},
		{"p50:1ms/20ms,p99:5ms/15ms,loss:0/1", `"p99:5ms/15ms": the CPUP delay 15ms is shorter than that of "p50:1ms/20ms", 20ms`},
		{"p99:1ms/2ms,loss:0.1/0.1", `"loss:0.1/0.1": the CPUP ratio 0.1 is not larger than the ROP ratio 0.1: the loss score falls from 100 at ROP to 0 at CPUP`},
	} {
		_, err := parseQoO(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--qoo %s: %v, want %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "e-0") {
			t.Errorf("--qoo %s: %v, a delay in exponent form", c.in, err)
		}
	}
}

// TestParseQoODuplicatePercentile: a percentile given twice is refused
// with the two items that give it, as the configuration's qoo option
// refuses it ("given twice"), not as percentiles out of order between
// entries the user never numbered, nor as delays falling from a
// percentile to itself.
func TestParseQoODuplicatePercentile(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"p99:1ms/2ms,p99:3ms/4ms,loss:0/1", `"p99:3ms/4ms": p99 is given twice ("p99:1ms/2ms" too): give each percentile once`},
		{"p50:1ms/2ms,p99:5ms/9ms,p99.0:3ms/4ms,loss:0/1", `"p99.0:3ms/4ms": p99 is given twice ("p99:5ms/9ms" too)`},
	} {
		_, err := parseQoO(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--qoo %s: %v, want %q", c.in, err, c.want)
			continue
		}
		for _, not := range []string{"entry", "must increase", "delays fall"} {
			if strings.Contains(err.Error(), not) {
				t.Errorf("--qoo %s: %v, which says %q", c.in, err, not)
			}
		}
	}
}

// TestEvalQoODraftExample gives eval an outcome whose completed instances
// have their 99th and 99.9th percentiles at 350 and 375 ms, 2 % of them
// lost: the measurement of the worked example of "Quality of Outcome"
// (draft-ietf-ippm-qoo-10, section 3.4), which scores latency 50, loss 75,
// QoO 50.
func TestEvalQoODraftExample(t *testing.T) {
	path := writeTemp(t, "checkout.dq", "system = checkout;\n")
	status, stdout, stderr := runCmd("eval", path, "--qoo", draftQoOFlag, "--outcome",
		"checkout=choice(0.9702:uniform(0ms,350ms), 0.00882:uniform(350ms,375ms), 0.00098:uniform(375ms,400ms), 0.02:never)")
	if status != exitOK || !strings.Contains(stdout, "  QoO        50 (latency 50 at p99, loss 75)\n") {
		t.Errorf("status %d\nstdout:\n%s\nstderr:\n%s", status, stdout, stderr)
	}
}

// TestEvalQoOKnownAnswers scores composed ΔQs whose percentiles are known
// in closed form.
func TestEvalQoOKnownAnswers(t *testing.T) {
	// Two exponential stages of mean θ = 5 ms in sequence: Erlang-2,
	// F(t) = 1 − e^{−t/θ}(1 + t/θ), nothing lost. Its median 8.392 ms and
	// 90th percentile 19.45 ms against ROP {50 %, 5 ms}, {90 %, 10 ms} and
	// CPUP {50 %, 15 ms}, {90 %, 30 ms}: m₅₀ = 0.661, m₉₀ = 0.528.
	const theta = 0.005
	erlang := func(p float64) float64 { // the p-quantile, by bisection
		lo, hi := 0.0, 1.0
		for range 200 {
			mid := (lo + hi) / 2
			if 1-math.Exp(-mid/theta)*(1+mid/theta) < p {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	m50, m90 := 1-(erlang(0.5)-0.005)/0.010, 1-(erlang(0.9)-0.010)/0.020
	probes := evalQoOJSON(t, filepath.Join(examples, "mm1k.dq"), "--outcome", "worker_1=exp(5ms)", "--outcome", "worker_2=exp(5ms)",
		"--qoo", "p50:5ms/15ms,p90:10ms/30ms,loss:1%/5%")
	q := probes["system"]
	// The bins are 120 µs; a quantile read between edges moves by far
	// less, 0.02 ms here, 0.1 point of the score.
	if q == nil || q.Latency == nil || math.Abs(*q.Latency-100*math.Min(m50, m90)) > 0.1 || loss(q) != 100 || q.Score != *q.Latency {
		t.Errorf("Erlang-2: %+v, want latency %.4g (the 90th), loss 100", q, 100*math.Min(m50, m90))
	}
	// lossy_choice: 0.75 of a ⊗ b, a, b ~ U[1 s, 2 s] (triangular on
	// [2 s, 4 s], median 3 s), 0.25 never. Over the completed instances
	// the median is 3 s — not the 0.5 quantile of the whole ΔQ, 3.184 s —
	// and the loss is 0.25: against ROP {50 %, 2 s}, 1 % and CPUP
	// {50 %, 4 s}, 50 %: latency 50, loss 1 − 0.24/0.49 = 51.02.
	probes = evalQoOJSON(t, filepath.Join(examples, "lossy_choice.dq"), "--outcome", "a=uniform(1s,2s)", "--outcome", "b=uniform(1s,2s)",
		"--outcome", "lost=never", "--qoo", "p50:2s/4s,loss:1%/50%")
	q = probes["system"]
	if q == nil || q.Latency == nil || math.Abs(*q.Latency-50) > 1e-6 || math.Abs(loss(q)-100*(1-0.24/0.49)) > 1e-6 || q.Score != *q.Latency {
		t.Errorf("lossy choice: %+v, want latency 50, loss 51.02, QoO 50", q)
	}
}

// evalQoOJSON runs deltaq eval --json and returns the qoo of each probe.
func evalQoOJSON(t *testing.T, args ...string) map[string]*report.QoO {
	t.Helper()
	status, stdout, stderr := runCmd(append([]string{"eval", "--json"}, args...)...)
	if status != exitOK {
		t.Fatalf("eval %v: status %d, stderr %s", args, status, stderr)
	}
	var out struct {
		Probes map[string]struct {
			QoO *report.QoO `json:"qoo"`
		} `json:"probes"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	scores := map[string]*report.QoO{}
	for n, p := range out.Probes {
		scores[n] = p.QoO
	}
	return scores
}

// TestWhatifQoO asks what a twice slower payment does to the checkout's
// Quality of Outcome: the score falls; an intervention that changes
// nothing leaves it as it was.
func TestWhatifQoO(t *testing.T) {
	dir := t.TempDir()
	if status, out, stderr := runCmd("model", checkoutFile, "-o", dir); status != exitOK {
		t.Fatalf("status %d\n%s%s", status, out, stderr)
	}
	req := "p50:2ms/10ms,p99:10ms/40ms,loss:0.5%/5%"
	roots := func(set string) map[string]whatifRoot {
		status, out, stderr := runCmd("whatif", dir, "--json", "--set", set, "--qoo", req)
		var js struct {
			Roots map[string]whatifRoot `json:"roots"`
		}
		if err := json.Unmarshal([]byte(out), &js); status != exitOK || err != nil {
			t.Fatalf("--set %s: status %d, %v\n%s", set, status, err, stderr)
		}
		return js.Roots
	}
	same := roots("pay.charge=1*X")["frontend_checkout"]
	if same.QoOBefore == nil || same.QoOAfter == nil || same.QoOBefore.Score != same.QoOAfter.Score {
		t.Errorf("1*X: QoO %+v before, %+v after; want equal", same.QoOBefore, same.QoOAfter)
	}
	// The checkout loses 1 % of its requests: loss 1 − 0.005/0.045 = 88.9.
	if l := loss(same.QoOBefore); math.Abs(l-100*(1-0.005/0.045)) > 1e-6 {
		t.Errorf("loss component %v, want 88.89 (1 %% lost)", l)
	}
	slow := roots("pay.charge=2*X")["frontend_checkout"]
	if !(slow.QoOAfter.Score < slow.QoOBefore.Score-1) || loss(slow.QoOAfter) != loss(slow.QoOBefore) {
		t.Errorf("2*X: QoO %+v before, %+v after; want a lower score, the same loss", slow.QoOBefore, slow.QoOAfter)
	}
	status, out, stderr := runCmd("whatif", dir, "--set", "pay.charge=2*X", "--qoo", req)
	row := "  QoO        " + strings.Repeat(" ", 12-len(report.FormatScore(slow.QoOBefore.Score))) + report.FormatScore(slow.QoOBefore.Score) +
		" " + strings.Repeat(" ", 12-len(report.FormatScore(slow.QoOAfter.Score))) + report.FormatScore(slow.QoOAfter.Score) + "\n"
	if status != exitOK || !strings.Contains(out, row) {
		t.Errorf("text: status %d, want the row %q in\n%s%s", status, row, out, stderr)
	}
}

// TestAnalyzeQoO scores the analyze fixture's e2e probe against ROP
// {50 %, 5 ms}, 1 % and CPUP {50 %, 15 ms}, 50 %. Its 40 completed
// requests take 5 + (i mod 8) ms, five of each from 5 to 12 ms, so their
// median is 8 ms: latency 1 − 3/10 = 70; 3 of 43 failed or timed out: loss
// 1 − (3/43 − 0.01)/0.49 = 87.8 ("Quality of Outcome",
// draft-ietf-ippm-qoo-10, section 3.3). The median is read at the analysis
// resolution, within the width of its bucket (1/64 of 8 ms, 0.066 ms, so
// 0.66 of a point on the 10 ms between ROP and CPUP). The windows of one
// request score nothing: a median needs two instances.
func TestAnalyzeQoO(t *testing.T) {
	src, err := os.ReadFile(analyzeConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(src), "          points: [{delay: 20ms, p: 0.5}]\n          max_failure: 0.1\n",
		"          points: [{delay: 20ms, p: 0.5}]\n          max_failure: 0.1\n"+
			"        qoo:\n          rop: {points: [{p: 0.5, delay: 5ms}], max_failure: 0.01}\n"+
			"          cpup: {points: [{p: 0.5, delay: 15ms}], max_failure: 0.5}\n", 1)
	if cfg == string(src) {
		t.Fatal("the fixture's e2e QTA moved: update this test")
	}
	path := writeTemp(t, "collector.yaml", cfg)
	status, stdout, stderr := runCmd("analyze", "--config", path, "--lag", "4s", analyzeTraces)
	wantLoss := 100 * (1 - (3.0/43-0.01)/0.49)
	const tol = 100 * 0.065536 / 10 // a bucket at 4.2–8.4 ms, over CPUP − ROP
	line := regexp.MustCompile(`\n  qoo         observed ([0-9.]+) \(latency ([0-9.]+) at p50, loss ` + regexp.QuoteMeta(report.FormatScore(wantLoss)) + `\); calculated `)
	m := line.FindStringSubmatch(stdout)
	if status != exitOK || m == nil || !closeTo(m[1], 70, tol) || !strings.Contains(stdout, "divergence  qoo\n") ||
		!strings.Contains(stdout, "  -           withheld\n") {
		t.Errorf("status %d, want %v with a score of 70 ± %.2f, a qoo column and withheld windows in\n%s%s", status, line, tol, stdout, stderr)
	}
	var out struct {
		Probes map[string]struct {
			QoO *struct {
				Observed   *report.QoO `json:"observed"`
				Calculated *report.QoO `json:"calculated"`
			} `json:"qoo"`
		} `json:"probes"`
		Windows []struct {
			Probes map[string]struct {
				QoO string `json:"qoo"`
			} `json:"probes"`
		} `json:"windows"`
	}
	status, stdout, stderr = runCmd("analyze", "--json", "--config", path, "--lag", "4s", analyzeTraces)
	if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
		t.Fatalf("--json: status %d, %v\n%s", status, err, stderr)
	}
	q := out.Probes["e2e"].QoO
	if q == nil || q.Observed == nil || math.Abs(q.Observed.Score-70) > tol || math.Abs(loss(q.Observed)-wantLoss) > 1e-6 || q.Calculated == nil || out.Probes["a"].QoO != nil {
		t.Errorf("JSON qoo of e2e %+v, want observed 70 and loss %v, a calculated score, none for a", q, wantLoss)
	}
	// The first window's ten requests take 5 to 12 ms, median 7 ms: 80.
	if len(out.Windows) == 0 || !closeTo(out.Windows[0].Probes["e2e"].QoO, 80, tol) {
		t.Errorf("windows %+v, want the first e2e scoring 80", out.Windows)
	}
}

// closeTo reports whether the score s, as printed, is within tol of want.
func closeTo(s string, want, tol float64) bool {
	v, err := strconv.ParseFloat(s, 64)
	return err == nil && math.Abs(v-want) <= tol
}

// loss is the loss component of a JSON score, NaN without one.
func loss(q *report.QoO) float64 {
	if q == nil || q.Loss == nil {
		return math.NaN()
	}
	return *q.Loss
}

// TestAnalyzeQoORateOverTheSamplingPeriod: the whole input's QoO rate is
// its completed instances over its sampling period, from the first
// instance's start to the last one's end. 10 requests start every 100 ms
// and take 50 ms each: 10 / 0.95 s = 10.53 a second, below a min_rate of
// 11 (score 0 by its rate) and above one of 10.5 (100). Over the span of
// their ends, 0.9 s, it was 11.1 a second, above both. The probe is the
// connector's alone, matched in the spans (the main path).
func TestAnalyzeQoORateOverTheSamplingPeriod(t *testing.T) {
	const ms = int64(1e6)
	var spans []string
	for i := range 10 {
		start := int64(i) * 100 * ms
		spans = append(spans, spanJSON(i, "a", start, start+50*ms, false))
	}
	traces := writeTemp(t, "traces.json", requestLine(spans...))
	for _, c := range []struct {
		minRate   string
		rate      float64
		wantScore float64
	}{{"11", 0, 0}, {"10.5", 100, 100}} {
		cfg := writeTemp(t, "collector.yaml", `
connectors:
  deltaq:
    probes:
      a:
        match: {span_name: a}
        dmax: 100ms
        bins: 100
        qoo:
          rop: {points: [{p: 0.5, delay: 80ms}], max_failure: 0.01}
          cpup: {points: [{p: 0.5, delay: 90ms}], max_failure: 0.05}
          min_rate: `+c.minRate+"\n")
		status, stdout, stderr := runCmd("analyze", "--json", "--config", cfg, traces)
		var out struct {
			Probes map[string]struct {
				QoO *struct {
					Observed *report.QoO `json:"observed"`
				} `json:"qoo"`
			} `json:"probes"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); status != exitOK || err != nil {
			t.Fatalf("min_rate %s: status %d, %v\n%s", c.minRate, status, err, stderr)
		}
		q := out.Probes["a"].QoO
		if q == nil || q.Observed == nil || q.Observed.Rate == nil || *q.Observed.Rate != c.rate || q.Observed.Score != c.wantScore {
			got, _ := json.Marshal(q)
			t.Errorf("min_rate %s: qoo %s, want a rate component of %v and a score of %v (10.53 a second)", c.minRate, got, c.rate, c.wantScore)
		}
	}
}
