// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// analyzeConnector is testdata/analyze/collector.yaml with one component:
// the deltaq connector matches the probes itself, with no processor.
const analyzeConnector = "testdata/analyze/connector.yaml"

// TestAnalyzeConnectorOnly: a configuration whose only deltaq component is
// the connector is analysed as the connector analyses it, matching its
// probes in the spans: the same report, window by window, as the processor
// of collector.yaml gives (a span longer than dMax a timeout, one with
// status ERROR a failure), with or without --connector; naming a processor
// that is not there is still an error.
func TestAnalyzeConnectorOnly(t *testing.T) {
	for _, format := range [][]string{nil, {"--json"}} {
		want := runOK(t, append(append([]string{"analyze"}, format...), "--config", analyzeConfig, analyzeTraces)...)
		for _, extra := range [][]string{nil, {"--connector", "deltaq"}} {
			args := append(append(append([]string{"analyze"}, format...), extra...), "--config", analyzeConnector, analyzeTraces)
			if got := runOK(t, args...); got != want {
				t.Errorf("%v: the connector's analysis differs from the processor's:\n%s\nwant:\n%s", args, got, want)
			}
		}
	}
	out := analyzeJSON(t, "--config", analyzeConnector, analyzeTraces)
	if e := out.Probes["e2e"]; out.Counted != 123 || e.Success != 40 || e.Timeout != 1 || e.Failure != 2 {
		t.Errorf("counted %d, e2e %+v; want 123, and 40 + 1 timeout + 2 failures", out.Counted, e)
	}
	status, _, stderr := runCmd("analyze", "--config", analyzeConnector, "--processor", "deltaq", analyzeTraces)
	if status != exitFail || !strings.Contains(stderr, `no processors section "deltaq"`) {
		t.Errorf("--processor deltaq: status %d, stderr %q", status, stderr)
	}
}

// TestAnalyzeRefusesProbeMatchedTwice: a probe that both the processor and
// the connector match is refused, as the collector refuses it, by analyze
// and by slo.
func TestAnalyzeRefusesProbeMatchedTwice(t *testing.T) {
	cfg := writeTemp(t, "twice.yaml", `
processors:
  deltaq:
    probes: [{name: a, dmax: 50ms, bins: 50}]
connectors:
  deltaq:
    probes:
      a: {match: {}, dmax: 50ms, bins: 50, qta: {points: [{delay: 10ms, p: 0.5}], max_failure: 0.1}}
`)
	want := `probe "a" is matched in the spans by both the deltaq processor "deltaq" and the deltaq connector "deltaq"`
	for _, args := range [][]string{{"analyze", "--config", cfg, analyzeTraces}, {"slo", "--config", cfg}} {
		status, _, stderr := runCmd(args...)
		if status != exitFail || !strings.Contains(stderr, want) {
			t.Errorf("%s: status %d, stderr %q, want %q", args[0], status, stderr, want)
		}
	}
}

// TestAnalyzeRefusesMisspelledProbe: a QTA, and an outcome of the diagram,
// set for a probe one slip away from one a deltaq processor of the
// configuration defines are refused by analyze and slo, with the probe
// meant, as the collector refuses them (each processor it makes checks the
// probes of the exporters and connectors once its own are registered):
// also a probe of a processor other than the one read (--processor), but
// not one of a processor in no pipeline, which the collector does not make.
func TestAnalyzeRefusesMisspelledProbe(t *testing.T) {
	const yaml = `
processors:
  deltaq:
    probes: {Checkout: {dmax: 50ms, bins: 50}}
  deltaq/other:
    probes: {payment: {dmax: 50ms, bins: 50}}
exporters:
  deltaq:
    endpoint: localhost:4317
    diagram: "e2e = Checkout -> paymnet;"
    probes:
      checkout: {qta: {points: [{delay: 10ms, p: 0.5}]}}
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [deltaq]
      exporters: [deltaq]
    traces/other:
      receivers: [otlp]
      processors: [deltaq/other]
      exporters: [debug]
`
	cfg := writeTemp(t, "misspelled.yaml", yaml)
	wants := []string{
		`exporters::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)`,
		`probes["checkout"]: no deltaq processor, connector probe or diagram defines probe checkout (did you mean Checkout?)`,
	}
	for _, args := range [][]string{{"analyze", "--config", cfg, analyzeTraces}, {"slo", "--config", cfg}} {
		status, _, stderr := runCmd(args...)
		if status != exitFail {
			t.Errorf("%s: status %d, want %d", args[0], status, exitFail)
		}
		assertContainsAll(t, args[0], stderr, wants...)
	}
	// deltaq/other in no pipeline: payment is no processor's probe, and
	// paymnet is taken for a probe of another collector, as the collector
	// takes it.
	unused := writeTemp(t, "unused.yaml", strings.Replace(yaml, "      processors: [deltaq/other]\n", "", 1))
	status, _, stderr := runCmd("slo", "--config", unused)
	if status != exitFail || strings.Contains(stderr, "paymnet") || !strings.Contains(stderr, wants[1]) {
		t.Errorf("deltaq/other in no pipeline: status %d, stderr %q; want only checkout refused", status, stderr)
	}
}

// TestSLOTakesEveryProcessorsLayouts: a connector fed by two deltaq
// processors takes each probe's layout from the processor that configures
// it, as the collector's registry of layouts gives it, not only from the
// processor read (--processor): slo writes the SLI of payment, whose
// layout deltaq/b gives, from its buckets, and analyze does not take
// payment for a probe nothing counts. A broken processor of the pipelines
// is refused, as the collector refuses it.
func TestSLOTakesEveryProcessorsLayouts(t *testing.T) {
	const yaml = `
processors:
  deltaq:
    probes: {checkout: {dmax: 2s, bins: 200}}
  deltaq/b:
    probes: {payment: {dmax: 1s, bins: 100}}
connectors:
  deltaq/x:
    probes:
      checkout: {qta: {points: [{delay: 200ms, p: 0.5}]}}
      payment: {qta: {points: [{delay: 100ms, p: 0.5}]}}
service:
  pipelines:
    traces/a: {receivers: [otlp], processors: [deltaq], exporters: [deltaq/x]}
    traces/b: {receivers: [otlp], processors: [deltaq/b], exporters: [deltaq/x]}
    metrics: {receivers: [deltaq/x], exporters: [debug]}
`
	cfg := writeTemp(t, "two.yaml", yaml)
	status, stdout, stderr := runCmd("slo", "--config", cfg, "--connector", "deltaq/x")
	if want := `deltaq_observed_seconds_bucket{deltaq_probe="payment", le="0.1"}`; status != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("slo: status %d, output lacks %s:\n%s\n%s", status, want, stdout, stderr)
	}
	status, _, stderr = runCmd("analyze", "--config", cfg, "--connector", "deltaq/x", analyzeTraces)
	if status != exitOK || strings.Contains(stderr, "nothing of the configuration counts") {
		t.Errorf("analyze: status %d, stderr %q", status, stderr)
	}
	broken := writeTemp(t, "broken.yaml", strings.Replace(yaml, "bins: 100}", "bins: 1001}", 1))
	want := `processors::deltaq/b: probes["payment"].bins: must be in [1, 1000], got 1001`
	for _, args := range [][]string{{"analyze", "--config", broken, "--connector", "deltaq/x", analyzeTraces}, {"slo", "--config", broken, "--connector", "deltaq/x"}} {
		if status, _, stderr := runCmd(args...); status != exitFail || !strings.Contains(stderr, want) {
			t.Errorf("%s, deltaq/b broken: status %d, stderr %q, want %q", args[0], status, stderr, want)
		}
	}
}

// TestConnectorOnlyConfigs: the repository's connector-only configuration
// and the README's "Adding ΔQ to an existing collector" pipeline pass
// deltaq check --config, give deltaq slo its rules and deltaq analyze its
// instances: checkout spans of service shop, inventory spans, payment
// spans of which those with an HTTP status of 500 or more fail in the
// example (its failure rule) and those with status ERROR in both.
func TestConnectorOnlyConfigs(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readmeConfig := readmeBlock(t, string(readme), "exporters: [otlp_grpc, deltaq]")
	traces := connectorTraces(t)
	// The example matches the server spans "GET /checkout" alone, the
	// README's every span of that name: the client's too.
	for _, c := range []struct {
		name, path               string
		checkouts, paymentFailed int64
	}{
		{"examples/collector.yaml", "../../examples/collector.yaml", 10, 3},
		{"README", writeTemp(t, "readme.yaml", readmeConfig), 20, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runOK(t, "check", "--config", c.path)
			if out != "connectors::deltaq: ok, fed by no deltaq processor (its own probes only)\n" {
				t.Errorf("check: %q", out)
			}
			rules := runOK(t, "slo", "--config", c.path)
			assertContainsAll(t, "slo", rules, `probe="checkout"`, "within-200ms", "within-1s")
			var res analyzeOut
			if err := json.Unmarshal([]byte(runOK(t, "analyze", "--json", "--config", c.path, traces)), &res); err != nil {
				t.Fatal(err)
			}
			ch, inv, pay := res.Probes["checkout"], res.Probes["inventory"], res.Probes["payment"]
			if ch.Count != c.checkouts || ch.Timeout != c.checkouts/10 || ch.Success != ch.Count-ch.Timeout {
				t.Errorf("checkout %d = %d + %d timeouts, want %d with one timeout (3 s > dMax 2 s) in ten", ch.Count, ch.Success, ch.Timeout, c.checkouts)
			}
			if inv.Count != 10 || inv.Success != 10 {
				t.Errorf("inventory %d = %d successes, want 10", inv.Count, inv.Success)
			}
			if pay.Count != 10 || pay.Failure != c.paymentFailed || pay.Success != 10-c.paymentFailed {
				t.Errorf("payment %d = %d + %d failures, want 10 with %d failures", pay.Count, pay.Success, pay.Failure, c.paymentFailed)
			}
		})
	}
}

// readmeBlock returns the yaml block of the README that holds the text
// want, without the indentation of the list item it is part of.
func readmeBlock(t *testing.T, readme, want string) string {
	t.Helper()
	for _, m := range regexp.MustCompile("(?s)\n( *)```yaml\n(.*?)\n *```").FindAllStringSubmatch(readme, -1) {
		if strings.Contains(m[2], want) {
			return regexp.MustCompile("(?m)^"+m[1]).ReplaceAllString(m[2], "")
		}
	}
	t.Fatalf("README.md has no yaml block with %q", want)
	return ""
}

// connectorTraces writes a trace file of 10 checkouts of service shop
// (server spans "GET /checkout", of 100 ms, the last of 3 s), each with an
// inventory span of 20 ms and a payment span of 50 ms: payments 0 and 1
// answer HTTP 503, payment 2 has status ERROR. The service's other spans
// ("GET /health", a client span "GET /checkout") are no instances.
func connectorTraces(t *testing.T) string {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "shop")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	base := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	add := func(i int, name string, kind ptrace.SpanKind, d time.Duration) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetName(name)
		s.SetKind(kind)
		s.SetTraceID(pcommon.TraceID{byte(i + 1)})
		s.SetSpanID(pcommon.SpanID{byte(spans.Len())})
		start := base.Add(time.Duration(i) * time.Second)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
		return s
	}
	for i := range 10 {
		d := 100 * time.Millisecond
		if i == 9 {
			d = 3 * time.Second
		}
		add(i, "GET /checkout", ptrace.SpanKindServer, d)
		add(i, "GET /checkout", ptrace.SpanKindClient, d)
		add(i, "GET /health", ptrace.SpanKindServer, time.Millisecond)
		add(i, "inventory", ptrace.SpanKindInternal, 20*time.Millisecond)
		pay := add(i, "payment", ptrace.SpanKindInternal, 50*time.Millisecond)
		switch i {
		case 0, 1:
			pay.Attributes().PutInt("http.response.status_code", 503)
		case 2:
			pay.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, "shop.json", string(b)+"\n")
}

// runOK runs the command line and returns its stdout, failing the test
// unless it succeeds.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	status, stdout, stderr := runCmd(args...)
	if status != exitOK {
		t.Fatalf("deltaq %s: status %d\n%s", strings.Join(args, " "), status, stderr)
	}
	return stdout
}
