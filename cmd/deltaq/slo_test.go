// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSLOExamplesUpToDate regenerates the checked-in SLO files from
// examples/demo/collector.yaml (make slo-rules) and compares them byte for
// byte.
func TestSLOExamplesUpToDate(t *testing.T) {
	t.Chdir("../..")
	unsetenv(t, "DELTAQ_DIAGRAM")
	dir := t.TempDir()
	for _, c := range []struct {
		format, file, tests string
	}{
		{"prometheus", "examples/prometheus/rules/deltaq-slo.yml", "examples/prometheus/tests/deltaq-slo.test.yml"},
		{"openslo", "examples/slo/deltaq.openslo.yaml", ""},
		{"sloth", "examples/slo/deltaq.sloth.yaml", ""},
	} {
		// The tests name the rules file by its path relative to them, so
		// write both at the same relative places under dir.
		out := filepath.Join(dir, c.file)
		args := []string{"slo", "--config", "examples/demo/collector.yaml", "--format", c.format, "-o", out}
		if c.tests != "" {
			args = append(args, "--tests", filepath.Join(dir, c.tests))
		}
		for _, f := range []string{c.file, c.tests} {
			if f != "" {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		if status, _, stderr := runCmd(args...); status != exitOK {
			t.Fatalf("deltaq %s: status %d\n%s", strings.Join(args, " "), status, stderr)
		}
		for _, f := range []string{c.file, c.tests} {
			if f == "" {
				continue
			}
			want, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what deltaq slo writes: run make slo-rules", f)
			}
		}
	}
}

// TestSLORefusals: a QTA point between two bin edges is refused with the
// nearest edges named (an error with --strict), dmax: auto has no fixed
// bucket bounds, and bad options are usage errors.
func TestSLORefusals(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	err := os.WriteFile(cfg, []byte(`
processors:
  deltaq:
    probes:
      - {name: a, dmax: 100ms, bins: 50}
      - {name: b, dmax: auto, bins: 100}
connectors:
  deltaq:
    probes:
      a:
        qta: {points: [{delay: 40ms, p: 0.5}, {delay: 41ms, p: 0.9}], max_failure: 0.05}
      b:
        qta: {points: [{delay: 10ms, p: 0.5}]}
      c:
        match: {}
        dmax: auto
        bins: 100
        qta: {points: [{delay: 10ms, p: 0.5}]}
      'd"\e':
        match: {}
        dmax: auto
        bins: 100
        qta: {points: [{delay: 10ms, p: 0.5}]}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := runCmd("slo", "--config", cfg)
	if status != exitOK {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	for _, want := range []string{
		`probe "a", objective within-41ms: 41ms is not a bucket bound of deltaq.observed (50 bins of 2ms up to 100ms): the nearest bin edges are 40ms and 42ms`,
		`probe "b", objective within-10ms: the bucket bounds of deltaq.observed are not fixed (dmax: auto in the processor)`,
		`probe "c", objective within-10ms: the bucket bounds of deltaq.observed are not fixed (dmax: auto in the connector)`,
		// The name quoted once, on stderr as in the header (its backslashes
		// are the quoting's, not escaped again).
		`probe "d\"\\e", objective within-10ms: the bucket bounds of deltaq.observed are not fixed (dmax: auto in the connector)`,
	} {
		if !strings.Contains(stderr, want) || !strings.Contains(stdout, want) {
			t.Errorf("stderr and the rules' header lack %q\nstderr: %s", want, stderr)
		}
	}
	if !strings.Contains(stdout, `le="0.04"`) || !strings.Contains(stdout, `deltaq_slo="success"`) {
		t.Errorf("rules lack the 40ms bucket or the success objective:\n%s", stdout)
	}
	if status, _, _ := runCmd("slo", "--config", cfg, "--strict"); status != exitFail {
		t.Errorf("--strict with refusals: status %d, want %d", status, exitFail)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("processors: {deltaq: {probes: [{name: a, dmax: 100ms, bins: 50}]}}\n"+
		"connectors: {deltaq: {probes: {a: {qta: {points: [{delay: 40ms, p: 1.5}]}}}}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The connector's own check, as the collector runs it.
	if status, _, stderr := runCmd("slo", "--config", bad); status != exitFail || !strings.Contains(stderr, `connectors::deltaq: probes["a"].qta.points[0].p: 1.5 is not in (0, 1]`) {
		t.Errorf("p = 1.5: status %d, stderr %q; want an error naming the probe's qta", status, stderr)
	}
	// The exporter's too: its interval, and an outcome of its diagram one
	// slip away from a probe it declares.
	for _, c := range []struct{ options, want string }{
		{`interval: 10ms, probes: {a: {dmax: 100ms, bins: 50, qta: {points: [{delay: 40ms, p: 0.5}]}}}`,
			`exporters::deltaq: interval: 10ms is below the minimum 100ms`},
		{`diagram: "e = a -> paymnt;", probes: {payment: {dmax: 100ms, bins: 50}, a: {dmax: 100ms, bins: 50, qta: {points: [{delay: 40ms, p: 0.5}]}}}`,
			`exporters::deltaq: diagram: outcome paymnt is not a probe any deltaq processor or the connector counts (did you mean payment?)`},
	} {
		exp := writeTemp(t, "exporter.yaml", "exporters: {deltaq: {endpoint: 127.0.0.1:4317, "+c.options+"}}\n")
		if status, _, stderr := runCmd("slo", "--config", exp); status != exitFail || !strings.Contains(stderr, c.want) {
			t.Errorf("exporter: status %d, stderr %q; want %q", status, stderr, c.want)
		}
	}
	for _, args := range [][]string{
		{"--period", "30x"}, {"--tiers", "critical:14.4:1h"}, {"--format", "pdf"}, {"--tests", "t.yml"}, {"--max-error-ratio", "1.5"},
	} {
		if status, _, stderr := runCmd(append([]string{"slo", "--config", cfg}, args...)...); status == exitOK {
			t.Errorf("%v: status %d, want an error; stderr %q", args, status, stderr)
		}
	}
}

// TestSLOExponential: with histogram: exponential the SLI is
// histogram_fraction, and the rules state its error at the histogram's
// scale: 1000 bins of 1 ms in at most 160 buckets take scale 4, buckets
// 2^(1/16) − 1 = 4.43 % wide (examples/README.md, "Reading ΔQ in PromQL").
func TestSLOExponential(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	err := os.WriteFile(cfg, []byte(`
processors:
  deltaq:
    probes: [{name: a, dmax: 1s, bins: 1000}]
connectors:
  deltaq:
    histogram: {exponential: {}}
    probes:
      a: {qta: {points: [{delay: 40ms, p: 0.5}], max_failure: 0.05}}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := runCmd("slo", "--config", cfg)
	if status != exitOK {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	for _, want := range []string{
		"histogram_fraction(0, 0.04, sum by (job, deltaq_probe) (rate(deltaq_observed_seconds{deltaq_probe=\"a\"}[5m])))",
		"(scale 4: buckets 4.43 % wide, (0.03881, 0.04053] s around it)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rules lack %q", want)
		}
	}
}

// TestSLOShortWindowOfLongIntervals: with windows of 1m and --period 7d,
// the first tier's short window, 1m10s, holds one of the probe's samples
// most of the time and two at a sixth of the evaluations, so rate() over it
// is there at some evaluations only and its for: 14s never holds: the
// tier is refused, and the second, whose factor it repeated (1.8× for a
// target of 0.5), alerts in its place.
func TestSLOShortWindowOfLongIntervals(t *testing.T) {
	cfg := writeTemp(t, "c.yaml", `
connectors:
  deltaq:
    interval: 1m
    probes:
      p:
        match: {}
        dmax: 100ms
        bins: 100
        qta: {points: [{delay: 20ms, p: 0.5}], max_failure: 0.1}
`)
	status, stdout, stderr := runCmd("slo", "--config", cfg, "--period", "7d")
	if status != exitOK {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	refused := `probe "p", objective within-20ms: tier critical:14.4:14m:1m10s: its short window 1m10s holds fewer than two of ` +
		`the probe's windows of 1m, the samples rate() needs: it would not alert; lengthen --period or the tier's windows`
	if !strings.Contains(stderr, refused) || !strings.Contains(stdout, refused) {
		t.Errorf("stderr and the rules' header lack %q\nstderr: %s", refused, stderr)
	}
	for _, want := range []string{
		// within-20ms: the second tier, at the first one's derived factor.
		`deltaq:slo_error_ratio:rate1h24m{deltaq_probe="p", deltaq_slo="within-20ms"} / 0.5 > 1.8`,
		// success (budget 0.1): the second tier at its own factor.
		`deltaq:slo_error_ratio:rate1h24m{deltaq_probe="p", deltaq_slo="success"} / 0.1 > 6`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rules lack %s", want)
		}
	}
	if strings.Contains(stdout, `deltaq_slo_window: "14m/1m10s"`) {
		t.Error("a tier reads the short window 1m10s")
	}
}

// TestSLOExporter reads the QTAs of a deltaq exporter (the default when the
// configuration has one), its probes' layouts from the processor: a has
// 1 ms bins, so its 2 ms point is the le="0.002" bucket.
func TestSLOExporter(t *testing.T) {
	status, stdout, stderr := runCmd("slo", "--config", analyzeConfig)
	if status != exitOK {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	for _, want := range []string{
		`deltaq_observed_seconds_bucket{deltaq_probe="a", le="0.002"}`,
		`deltaq_observed_seconds_bucket{deltaq_probe="e2e", le="0.02"}`,
		`labels: {deltaq_probe: "a", deltaq_slo: "success"}`,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("rules lack %s", want)
		}
	}
}

// TestSLOFlagErrors: the options' problems are the flags', found before
// the configuration is read, and usage errors (status 2); they were
// reported as the configuration file's, with status 1. A flag given empty
// or zero was taken for its default; -o - wrote a file named "-".
func TestSLOFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--period", "400d"}, "deltaq slo: period 400d: want 1m to 366d\n"},
		{[]string{"--period", "1h", "--interval", "1s"}, "(the default tiers, scaled to --period 1h: give --tiers for this period)"},
		{[]string{"--max-error-ratio", "0"}, "--max-error-ratio: given empty or zero; leave it out for the default"},
		// A percentage where the ratio goes: the fraction to write.
		{[]string{"--max-error-ratio", "90%"}, `invalid value "90%" for flag -max-error-ratio: 90% is a percentage; write the fraction 0.9`},
		{[]string{"--qoo", "80:99%"}, `target "99%" is a percentage; write the fraction 0.99`},
		{[]string{"--service", ""}, "--service: given empty or zero"},
		{[]string{"--runbook-url", ""}, "--runbook-url: given empty or zero"},
		{[]string{"-o", "r.yml", "--tests", "r.yml"}, "--tests r.yml: the rules file itself (-o)"},
		// A flag of another format than the one written was taken and
		// ignored: the rules have no service, OpenSLO no alert, neither
		// document an evaluation interval.
		{[]string{"--service", "shop"}, "--service: --format prometheus writes nothing of it (the documents' service: --format openslo or sloth)"},
		{[]string{"--format", "openslo", "--runbook-url", "https://runbooks.example/dq"}, "--runbook-url: --format openslo writes nothing of it (the alerts' runbook_url: --format prometheus or sloth)"},
		{[]string{"--format", "sloth", "--interval", "1m"}, "--interval: --format sloth writes nothing of it (the rule groups' evaluation interval: --format prometheus)"},
		{[]string{"--format", "openslo", "--interval", "1m"}, "--interval: --format openslo writes nothing of it"},
	} {
		status, _, stderr := runCmd(append([]string{"slo", "--config", analyzeConfig}, c.args...)...)
		if status != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stderr, analyzeConfig) {
			t.Errorf("%v: status %d, stderr %q; want %d and %q", c.args, status, stderr, exitUsage, c.want)
		}
	}
	// Several connectors, none named deltaq: the message names them.
	multi := writeTemp(t, "multi.yaml", `
connectors:
  deltaq/a: {probes: {a: {match: {}, dmax: 1s, bins: 10, qta: {points: [{delay: 100ms, p: 0.9}]}}}}
  deltaq/b: {probes: {b: {match: {}, dmax: 1s, bins: 10, qta: {points: [{delay: 100ms, p: 0.9}]}}}}
`)
	if _, _, stderr := runCmd("slo", "--config", multi); !strings.Contains(stderr, `; it has connectors::deltaq/a, connectors::deltaq/b`) {
		t.Errorf("several connectors: stderr %q", stderr)
	}
	status, stdout, stderr := runCmd("slo", "--config", analyzeConfig, "-o", "-")
	if status != exitOK || !strings.HasPrefix(stdout, "# Error budgets") {
		t.Errorf("-o -: status %d, stdout %.80q, stderr %s", status, stdout, stderr)
	}
}

// TestSLOLogLinearConnectorProbe: a probe the connector matches with
// log-linear buckets (binning) has fixed bucket bounds, its buckets' edges,
// from its first window: its QTA points on edges get exact rules (it was
// refused as "not fixed … it comes from its first instance"), and a point
// between edges is refused by deltaq check and deltaq slo alike.
func TestSLOLogLinearConnectorProbe(t *testing.T) {
	const cfg = `
connectors:
  deltaq:
    probes:
      checkout:
        match: {}
        binning: {kind: log-linear, factor: 10, low: 1ms, high: 10s, steps: 10}
        qta: {points: [{delay: 100ms, p: 0.5}, {delay: 300ms, p: 0.95}], max_failure: 0.05}
`
	status, stdout, stderr := runCmd("slo", "--config", writeTemp(t, "c.yaml", cfg))
	if status != exitOK || strings.Contains(stderr, "not fixed") {
		t.Fatalf("status %d\nstderr %s", status, stderr)
	}
	for _, le := range []string{`le="0.1"`, `le="0.3"`} {
		if !strings.Contains(stdout, `deltaq_probe="checkout", `+le) {
			t.Errorf("rules lack %s:\n%s", le, stdout)
		}
	}
	off := writeTemp(t, "off.yaml", strings.Replace(cfg, "delay: 300ms", "delay: 350ms", 1))
	const want = "350ms is not a bucket bound of deltaq.observed (37 log-linear buckets up to 10s): the nearest bin edges are 300ms and 400ms"
	if status, _, stderr := runCmd("check", "--config", off); status != exitFail || !strings.Contains(stderr, want) {
		t.Errorf("check: status %d\nstderr %s", status, stderr)
	}
	if _, _, stderr := runCmd("slo", "--config", off); !strings.Contains(stderr, want) {
		t.Errorf("slo: stderr %s", stderr)
	}
}

// TestSLOWindowsOnly: an agent with windows_only sends its windows alone,
// none of the deltaq.observed, deltaq.outcomes and deltaq.qoo.score series
// the rules read: its rules were written and never saw a sample, silent
// however the QTA broke. They are refused, pointing at the gateway; with
// emit_windows alone the agent's own series are there, and its rules too.
func TestSLOWindowsOnly(t *testing.T) {
	for _, c := range []struct {
		options string
		refused bool
	}{{"emit_windows: true, windows_only: true", true}, {"emit_windows: true", false}} {
		cfg := writeTemp(t, "agent.yaml", "connectors: {deltaq: {"+c.options+`, probes: {job: {match: {}, dmax: 200ms, bins: 100,
  qta: {points: [{delay: 40ms, p: 0.9}], max_failure: 0.01},
  qoo: {rop: {points: [{p: 0.5, delay: 20ms}]}, cpup: {points: [{p: 0.5, delay: 100ms}], max_failure: 1}}}}}}
`)
		status, stdout, stderr := runCmd("slo", "--config", cfg, "--qoo", "80:0.9")
		const want = "connectors::deltaq: windows_only: its metrics are its windows (deltaq.window) alone, " +
			"none of the series the rules read (deltaq.observed, deltaq.outcomes, deltaq.qoo.score): " +
			"generate the rules from the configuration of the gateway that merges the windows"
		if c.refused && (status != exitFail || !strings.Contains(stderr, want) || stdout != "") {
			t.Errorf("%s: status %d, stdout %d bytes, stderr %q; want the refusal %q", c.options, status, len(stdout), stderr, want)
		}
		if !c.refused && (status != exitOK || !strings.Contains(stdout, `deltaq_outcomes_total{deltaq_probe="job"}`) ||
			!strings.Contains(stdout, `deltaq_qoo_score_percent{deltaq_probe="job"`)) {
			t.Errorf("%s: status %d, stderr %q; want the rules of job", c.options, status, stderr)
		}
	}
}

// TestSLOTestsPathsMixed: the tests name the rules file by its path
// relative to them, which failed when one of -o and --tests was absolute
// and the other relative ("Rel: can't make /tmp/r.yml relative to ."),
// after the rules were written. Either way round, the tests' rule_files
// now lead from the tests' directory to the rules file.
func TestSLOTestsPathsMixed(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := writeTemp(t, "c.yaml", "connectors: {deltaq: {probes: {p: {match: {}, dmax: 100ms, bins: 100, qta: {max_failure: 0.01}}}}}\n")
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, tests string }{
		{filepath.Join(dir, "abs.yml"), "rel.test.yml"},
		{"rel.yml", filepath.Join(dir, "sub", "abs.test.yml")},
		{filepath.Join("sub", "r.yml"), filepath.Join(dir, "t.test.yml")},
	} {
		if status, _, stderr := runCmd("slo", "--config", cfg, "-o", c.out, "--tests", c.tests); status != exitOK {
			t.Errorf("-o %s --tests %s: status %d, stderr %q", c.out, c.tests, status, stderr)
			continue
		}
		raw, err := os.ReadFile(c.tests)
		if err != nil {
			t.Fatal(err)
		}
		_, after, _ := strings.Cut(string(raw), "rule_files:\n  - ")
		named, _, _ := strings.Cut(after, "\n")
		named, err = strconv.Unquote(named)
		if err != nil {
			t.Fatalf("-o %s --tests %s: rule_files entry: %v\n%s", c.out, c.tests, err, raw)
		}
		got, err := os.Stat(filepath.Join(filepath.Dir(c.tests), named))
		want, err2 := os.Stat(c.out)
		if err != nil || err2 != nil || !os.SameFile(got, want) {
			t.Errorf("-o %s --tests %s: the tests name %q, not the rules file (%v, %v)", c.out, c.tests, named, err, err2)
		}
	}
	// One file by two names is still one file.
	if status, _, stderr := runCmd("slo", "--config", cfg, "-o", "same.yml", "--tests", filepath.Join(dir, "same.yml")); status == exitOK ||
		!strings.Contains(stderr, "the rules file itself (-o)") {
		t.Errorf("-o same.yml --tests %s: status %d, stderr %q; want the tests refused as the rules file", filepath.Join(dir, "same.yml"), status, stderr)
	}
}
