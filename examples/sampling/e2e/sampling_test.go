// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// The client's sampling probability: ot=th:c, adjusted count exactly 4.
const probability = 0.25

// clientRun is what the client wrote: its unsampled totals by phase and
// outcome, and the spans its sampler kept.
type clientRun struct {
	Totals  map[string]map[string]float64 `json:"totals"`
	Sampled []struct {
		Phase      string  `json:"phase"`
		TraceID    string  `json:"traceId"`
		SpanID     string  `json:"spanId"`
		DelayMs    float64 `json:"delayMs"`
		Failed     bool    `json:"failed"`
		TraceState string  `json:"traceState"`
	} `json:"sampled"`
}

func TestSampledClientThroughPrometheus(t *testing.T) {
	otelcol := e2etest.Gate(t, "DELTAQ_SAMPLING_E2E", "the sampling end-to-end test (Prometheus and npm on PATH)")
	client := installClient(t)
	prom := startPrometheus(t)
	records := otlptest.Start(t, otlptest.Options{})
	in := e2etest.FreeAddr(t)
	cmd := e2etest.CollectorCmd(otelcol, []string{"testdata/collector.yaml"},
		"DELTAQ_OTLP_HTTP="+in, "DELTAQ_PROMETHEUS="+prom, "DELTAQ_LOGS="+records.Addr())
	col := e2etest.Start(t, "collector", cmd)
	e2etest.WaitListening(t, in, 30*time.Second, col)

	// Three seconds of fast spans, three of half slowed ones, about 250
	// spans a second.
	out := filepath.Join(t.TempDir(), "run.json")
	node := exec.Command("node", "client.mjs", "http://"+in+"/v1/traces", strconv.FormatFloat(probability, 'g', -1, 64), "3", "3", "400", out)
	node.Dir = client
	if b, err := node.CombinedOutput(); err != nil {
		t.Fatalf("client: %v\n%s", err, b)
	}
	var run clientRun
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &run); err != nil {
		t.Fatal(err)
	}
	kept := map[string]int{} // by outcome
	byTrace := map[string]int{}
	for i, s := range run.Sampled {
		if s.TraceState != "ot=th:c" {
			t.Fatalf("span %s: tracestate %q, want the sampler's ot=th:c", s.SpanID, s.TraceState)
		}
		oc := "success"
		if s.Failed {
			oc = "failure"
		}
		kept[oc]++
		byTrace[s.TraceID] = i
	}
	t.Logf("client: totals %v, kept %v", run.Totals, kept)

	checkCounts(t, prom, run, kept, col)
	checkExemplars(t, prom, run, byTrace)
	checkTrigger(t, records, run, byTrace, col)
}

// checkCounts: Prometheus's outcome counters are exactly 4 × the spans the
// client kept, and within 4 standard errors of its unsampled totals: an
// estimate 4·K of N instances, K ~ Binomial(N, 1/4), has the standard
// error √(N·(1−p)/p).
func checkCounts(t *testing.T, prom string, run clientRun, kept map[string]int, col *e2etest.Proc) {
	t.Helper()
	var got map[string]float64
	e2etest.Until(t, "the outcome counters to count every span kept", 20*time.Second, func() bool {
		got = byOutcome(t, prom, `sum by (deltaq_outcome) (deltaq_outcomes_total{deltaq_probe="work"})`)
		return got["success"] == 4*float64(kept["success"]) && got["failure"] == 4*float64(kept["failure"])
	}, col)
	for _, oc := range []string{"success", "failure"} {
		n := run.Totals["fast"][oc] + run.Totals["slow"][oc]
		se := math.Sqrt(n * (1 - probability) / probability)
		if math.Abs(got[oc]-n) > 4*se {
			t.Errorf("%s: Prometheus counts %v, the client started %v: off by more than 4 standard errors (%.1f)", oc, got[oc], n, se)
		}
		t.Logf("%s: %v counted for %v started (standard error %.1f)", oc, got[oc], n, se)
	}
	count := byOutcome(t, prom, `sum(deltaq_observed_seconds_count{deltaq_probe="work"})`)[""]
	if count != 4*float64(kept["success"]) {
		t.Errorf("deltaq_observed_seconds_count = %v, want 4 × %d successes kept", count, kept["success"])
	}
}

// checkExemplars: the exemplars of the observed histogram's buckets name
// spans the client kept, with their delays, and cover the slowed ones too;
// the failure counter's exemplars name failed spans.
func checkExemplars(t *testing.T, prom string, run clientRun, byTrace map[string]int) {
	t.Helper()
	ex := exemplars(t, prom, `deltaq_observed_seconds_bucket{deltaq_probe="work"}`)
	if len(ex) == 0 {
		t.Fatal("no exemplar on deltaq_observed_seconds_bucket")
	}
	slow := 0
	for _, e := range ex {
		i, ok := byTrace[e.Labels["trace_id"]]
		if !ok {
			t.Fatalf("exemplar %v: a trace the client did not keep", e)
		}
		s := run.Sampled[i]
		v, _ := strconv.ParseFloat(e.Value, 64)
		if e.Labels["span_id"] != s.SpanID || math.Abs(v-s.DelayMs/1e3) > 1e-6 {
			t.Errorf("exemplar %v: the client's span %s took %v ms", e, s.SpanID, s.DelayMs)
		}
		if s.DelayMs >= 60 {
			slow++
		}
	}
	if slow == 0 {
		t.Errorf("%d exemplars, none of a slowed span: they do not cover the distribution", len(ex))
	}
	fx := exemplars(t, prom, `deltaq_outcomes_total{deltaq_probe="work",deltaq_outcome="failure"}`)
	for _, e := range fx {
		if i, ok := byTrace[e.Labels["trace_id"]]; !ok || !run.Sampled[i].Failed || e.Value != "4" {
			t.Errorf("failure exemplar %v: want a failed span the client kept, value 4 (its adjusted count)", e)
		}
	}
	t.Logf("%d bucket exemplars (%d of slowed spans), %d failure exemplars", len(ex), slow, len(fx))
}

// checkTrigger: the QTA trigger of the slowed phase names, slowest first,
// trace ids of slowed spans the client kept.
func checkTrigger(t *testing.T, records *otlptest.Receiver, run clientRun, byTrace map[string]int, col *e2etest.Proc) {
	t.Helper()
	var ids []any
	e2etest.Until(t, "a deltaq.trigger record", 20*time.Second, func() bool {
		for _, ld := range records.Logs() {
			for _, rl := range ld.ResourceLogs().All() {
				for _, sl := range rl.ScopeLogs().All() {
					for _, lr := range sl.LogRecords().All() {
						if lr.EventName() != contract.EventTrigger {
							continue
						}
						if v, ok := lr.Attributes().Get(contract.AttrSlowestTraceIDs); ok && v.Type() == pcommon.ValueTypeSlice {
							ids = v.Slice().AsRaw()
							return true
						}
					}
				}
			}
		}
		return false
	}, col)
	if len(ids) == 0 || len(ids) > 5 {
		t.Fatalf("deltaq.trace_ids.slowest %v: want 1 to worst_instances (5) ids", ids)
	}
	for _, id := range ids {
		i, ok := byTrace[fmt.Sprint(id)]
		if !ok || run.Sampled[i].DelayMs < 60 {
			t.Errorf("trigger names trace %v: want a slowed span the client kept", id)
		}
	}
	t.Logf("the trigger names %v", ids)
}

// installClient installs the client's packages from its lock file (npm ci)
// into a temporary directory and returns it.
func installClient(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatalf("npm is not on PATH: %v (Debian: apt-get install npm)", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("client", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The packages come from the registry: a refused or dropped connection
	// is tried again, twice, before the test gives up.
	const attempts = 3
	for i := 1; ; i++ {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		npm.Dir = dir
		b, err := npm.CombinedOutput()
		if err == nil {
			return dir
		}
		if i == attempts {
			t.Fatalf("npm ci, %d attempts: %v\n%s", attempts, err, b)
		}
		t.Logf("npm ci, attempt %d of %d: %v\n%s", i, attempts, err, b)
		time.Sleep(time.Duration(i) * 5 * time.Second)
	}
}

// startPrometheus starts Prometheus with the remote-write receiver and
// exemplar storage on, and returns its base URL once it is ready.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (2.42 or later) is not on PATH: %v (Debian: apt-get install prometheus)", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, []byte("global: {scrape_interval: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := e2etest.FreeAddr(t)
	p := e2etest.Start(t, "prometheus", exec.Command(bin, "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--web.enable-remote-write-receiver", "--enable-feature=exemplar-storage"))
	base := "http://" + addr
	e2etest.Until(t, "Prometheus ready on "+addr, 30*time.Second, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, p)
	return base
}

// byOutcome evaluates q and returns its samples by deltaq_outcome.
func byOutcome(t *testing.T, prom, q string) map[string]float64 {
	t.Helper()
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	get(t, prom+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), &out)
	m := map[string]float64{}
	for _, r := range out.Data.Result {
		if len(r.Value) == 2 {
			v, _ := strconv.ParseFloat(fmt.Sprint(r.Value[1]), 64)
			m[r.Metric["deltaq_outcome"]] = v
		}
	}
	return m
}

// exemplar is one exemplar of /api/v1/query_exemplars.
type exemplar struct {
	Labels map[string]string `json:"labels"`
	Value  string            `json:"value"`
}

// exemplars returns the exemplars of the series of q over the last ten
// minutes.
func exemplars(t *testing.T, prom, q string) []exemplar {
	t.Helper()
	now := time.Now()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   []struct {
			Exemplars []exemplar `json:"exemplars"`
		} `json:"data"`
	}
	get(t, prom+"/api/v1/query_exemplars?"+url.Values{"query": {q},
		"start": {strconv.FormatInt(now.Add(-10*time.Minute).Unix(), 10)}, "end": {strconv.FormatInt(now.Unix()+1, 10)}}.Encode(), &out)
	if out.Status != "success" {
		t.Fatalf("query_exemplars %s: %s", q, out.Error)
	}
	var all []exemplar
	for _, s := range out.Data {
		all = append(all, s.Exemplars...)
	}
	return all
}

func get(t *testing.T, u string, into any) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}
