// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

// The programs the test runs (Prometheus and the collectors), and the
// Prometheus HTTP API it reads.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

// --- Prometheus ------------------------------------------------------------------

// prometheus is a running Prometheus and its HTTP API.
type prometheus struct {
	*e2etest.Proc
	base string // http://127.0.0.1:PORT
}

// prometheusConfig is the test's prometheus.yml: rules and scrapes every
// second, the repository's collector alert rules, its alert rules on the ΔQ
// metrics for a collector and those for the gateway of deploy/kubernetes
// (groups every 5 s), and the telemetry of the collector whose backend is
// unreachable, under the job name of examples/prometheus/prometheus.yml.
const prometheusConfig = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
  - %q
  - %q
scrape_configs:
  - job_name: otelcol-deltaq-telemetry
    static_configs:
      - targets: [%q]
`

// startPrometheus starts Prometheus with the remote-write receiver and
// native histograms on, scraping telemetry (host:port), and waits until it
// is ready.
func startPrometheus(t *testing.T, telemetry string) *prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus (2.42 or later) is not on PATH: %v (Debian: apt-get install prometheus)", err)
	}
	rules := ruleFile(t, filepath.Join("..", "prometheus", "rules", "collector-alerts.yml"))
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	text := fmt.Appendf(nil, prometheusConfig, rules, ruleFile(t, shippedRules), ruleFile(t, gatewayRules), telemetry)
	if err := os.WriteFile(config, text, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := e2etest.FreeAddr(t)
	p := &prometheus{base: "http://" + addr}
	p.Proc = e2etest.Start(t, "prometheus", exec.Command(bin, "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--web.enable-remote-write-receiver", "--enable-feature=native-histograms"))
	e2etest.Until(t, "Prometheus ready on "+addr, 30*time.Second, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, p.Proc)
	return p
}

// panics returns, from Prometheus's log, the request and error of every
// HTTP request whose handler panicked (a remote write Prometheus could not
// store answers the collector with a broken connection, and the
// collector drops the whole request).
func (p *prometheus) panics() []string {
	var out []string
	for _, line := range p.Lines() {
		l := line.Text
		if i := strings.Index(l, "msg=\"panic while serving request\""); i >= 0 {
			l = l[i:]
			if j := strings.Index(l, " stack="); j >= 0 {
				l = l[:j]
			}
			out = append(out, l)
		}
	}
	return out
}

// sample is one element of an instant vector: a float value, or a native
// histogram.
type sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []any             `json:"value"`
	Histogram []json.RawMessage `json:"histogram"`
}

// float returns the sample's float value.
func (s sample) float(t *testing.T) float64 {
	t.Helper()
	if len(s.Value) != 2 {
		t.Fatalf("sample %v has no float value", s.Metric)
	}
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("sample %v: value %v: %v", s.Metric, s.Value[1], err)
	}
	return v
}

// nativeHistogram is a native histogram as the query API returns it.
type nativeHistogram struct {
	Count   string  `json:"count"`
	Sum     string  `json:"sum"`
	Buckets [][]any `json:"buckets"` // [boundary rule, lower, upper, count]
}

// bucket is one bucket of a nativeHistogram: (lower, upper] when rule is 0.
type bucket struct {
	rule         int
	lower, upper float64
	count        float64
}

// native returns the sample's native histogram buckets.
func (s sample) native(t *testing.T) []bucket {
	t.Helper()
	if len(s.Histogram) != 2 {
		t.Fatalf("sample %v is not a native histogram", s.Metric)
	}
	var h nativeHistogram
	if err := json.Unmarshal(s.Histogram[1], &h); err != nil {
		t.Fatalf("sample %v: histogram: %v", s.Metric, err)
	}
	bs := make([]bucket, len(h.Buckets))
	for i, raw := range h.Buckets {
		if len(raw) != 4 {
			t.Fatalf("sample %v: bucket %v: want [rule, lower, upper, count]", s.Metric, raw)
		}
		rule, _ := raw[0].(float64)
		b := bucket{rule: int(rule)}
		for j, dst := range []*float64{&b.lower, &b.upper, &b.count} {
			str, _ := raw[j+1].(string)
			v, err := strconv.ParseFloat(str, 64)
			if err != nil {
				t.Fatalf("sample %v: bucket %v: %v", s.Metric, raw, err)
			}
			*dst = v
		}
		bs[i] = b
	}
	return bs
}

// query evaluates q as an instant query at Prometheus's present time and
// returns the vector, or the error Prometheus reported.
func (p *prometheus) query(q string) ([]sample, error) {
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/query?"+url.Values{"query": {q}}.Encode(), &out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s: %s", q, out.Error)
	}
	if out.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: result type %s, want vector", q, out.Data.ResultType)
	}
	return out.Data.Result, nil
}

// mustQuery is query that fails the test on an error.
func (p *prometheus) mustQuery(t *testing.T, q string) []sample {
	t.Helper()
	v, err := p.query(q)
	if err != nil {
		t.Fatalf("query: %v", err)
	}
	return v
}

// value evaluates q, which must return exactly one float sample.
func (p *prometheus) value(t *testing.T, q string) float64 {
	t.Helper()
	v := p.mustQuery(t, q)
	if len(v) != 1 {
		t.Fatalf("%s: %d samples %v, want 1", q, len(v), v)
	}
	return v[0].float(t)
}

// byLabel evaluates q and returns its float samples by the value of label.
func (p *prometheus) byLabel(t *testing.T, q, label string) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, s := range p.mustQuery(t, q) {
		m[s.Metric[label]] = s.float(t)
	}
	return m
}

// alert is one alert of /api/v1/alerts.
type alert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt string            `json:"activeAt"`
}

// alerts returns the pending and firing alerts.
func (p *prometheus) alerts() ([]alert, error) {
	var out struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	err := p.get("/api/v1/alerts", &out)
	return out.Data.Alerts, err
}

func (p *prometheus) get(path string, into any) error {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, strings.TrimSpace(e2etest.LastLines(string(b), 3)), err)
	}
	return nil
}

// --- the collectors ----------------------------------------------------------------

// startCollector starts the collector otelcol with service.instance.id
// instance, sending its ΔQ metrics to remote (Prometheus's base URL), with
// the overlays applied over testdata/collector.yaml.
func startCollector(t *testing.T, otelcol, instance, remote string, env []string, overlays ...string) *e2etest.Collector {
	t.Helper()
	return e2etest.StartCollector(t, "collector-"+instance, otelcol, append([]string{"testdata/collector.yaml"}, overlays...),
		append(env, "DELTAQ_PROMETHEUS="+remote, "DELTAQ_INSTANCE="+instance)...)
}
