// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

// The programs the test runs (Prometheus and the collectors), and the
// Prometheus HTTP API it reads.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is one program the test started. It is killed by process id when
// the test ends (and by the kernel should the test binary die first); its
// output stays in a file of the test's temporary directory and is printed
// when the test failed.
type process struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// startProcess runs path with args and the extra environment env.
func startProcess(t *testing.T, name string, env []string, path string, args ...string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("starting %s (%s): %v", name, path, err)
	}
	go func() { p.err = p.cmd.Wait(); out.Close(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("----- output of %s (pid %d):\n%s", name, p.cmd.Process.Pid, tail(b, 80))
		}
	})
	return p
}

// tail returns the last n lines of b.
func tail(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, nil)
}

// alive fails the test if the process has exited.
func (p *process) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("%s exited: %v (output in %s)", p.name, p.err, p.log)
	default:
	}
}

// freePort returns a loopback port nobody listened on a moment ago. Closed
// at once, it is also the test's unreachable endpoint.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// poll checks cond every 250 ms until it holds; it fails the test after
// timeout, or when one of procs exits. The timeout only turns a hang into a
// failure.
func poll(t *testing.T, what string, timeout time.Duration, cond func() bool, procs ...*process) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		for _, p := range procs {
			p.alive(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// --- Prometheus ------------------------------------------------------------------

// prometheus is a running Prometheus and its HTTP API.
type prometheus struct {
	*process
	base string // http://127.0.0.1:PORT
}

// prometheusConfig is the test's prometheus.yml: rules and scrapes every
// second, the repository's collector alert rules, and the telemetry of the
// collector whose backend is unreachable, under the job name of
// examples/prometheus/prometheus.yml.
const prometheusConfig = `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
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
	rules, err := filepath.Abs(filepath.Join("..", "prometheus", "rules", "collector-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, prometheusConfig, rules, telemetry), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	p := &prometheus{base: "http://" + addr}
	p.process = startProcess(t, "prometheus", nil, bin, "--config.file="+config,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr,
		"--web.enable-remote-write-receiver", "--enable-feature=native-histograms")
	poll(t, "Prometheus ready on "+addr, 30*time.Second, func() bool {
		resp, err := http.Get(p.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, p.process)
	return p
}

// panics returns, from Prometheus's log, the request and error of every
// HTTP request whose handler panicked (a remote write Prometheus could not
// store answers the collector with a broken connection, and the
// collector drops the whole request).
func (p *prometheus) panics() []string {
	b, _ := os.ReadFile(p.log)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
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
		return fmt.Errorf("GET %s: %s: %w", path, strings.TrimSpace(string(tail(b, 3))), err)
	}
	return nil
}

// --- the collectors ----------------------------------------------------------------

// collector is a built collector running testdata/collector.yaml and
// overlays; addr is its OTLP/gRPC receiver.
type collector struct {
	*process
	addr string
}

// startCollector starts the collector with service.instance.id instance,
// sending its ΔQ metrics to remote (Prometheus's base URL), with the
// overlays applied over testdata/collector.yaml, and waits for its OTLP
// port.
func startCollector(t *testing.T, instance, remote string, env []string, overlays ...string) *collector {
	t.Helper()
	otelcol := os.Getenv("OTELCOL")
	if otelcol == "" {
		otelcol = filepath.Join("..", "..", "bin", "otelcol-deltaq")
	}
	if _, err := os.Stat(otelcol); err != nil {
		t.Fatalf("collector binary: %v (run make build, or set OTELCOL)", err)
	}
	args := []string{"--config=testdata/collector.yaml"}
	for _, o := range overlays {
		args = append(args, "--config="+o)
	}
	c := &collector{addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	env = append(env, "DELTAQ_OTLP_GRPC="+c.addr, "DELTAQ_PROMETHEUS="+remote, "DELTAQ_INSTANCE="+instance)
	c.process = startProcess(t, "collector-"+instance, env, otelcol, args...)
	return c
}

// waitReady waits until the collector accepts connections on its OTLP port.
func (c *collector) waitReady(t *testing.T) {
	t.Helper()
	poll(t, c.name+"'s OTLP port "+c.addr, 30*time.Second, func() bool {
		conn, err := net.DialTimeout("tcp", c.addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, c.process)
}
