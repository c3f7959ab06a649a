// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/slo"
)

// qooSLOConfig has probes a (a QTA and a qoo requirement), b (a qoo
// requirement alone) and c (a QTA alone), windows of 2 s.
const qooSLOConfig = `
processors:
  deltaq:
    probes:
      - {name: a, dmax: 100ms, bins: 50}
      - {name: b, dmax: 100ms, bins: 50}
      - {name: c, dmax: 100ms, bins: 50}
connectors:
  deltaq:
    interval: 2s
    probes:
      a:
        qta: {max_failure: 0.01}
        qoo: &qoo
          rop: {points: [{p: 0.5, delay: 20ms}], max_failure: 0.01}
          cpup: {points: [{p: 0.5, delay: 60ms}], max_failure: 0.2}
      b:
        qoo: *qoo
      c:
        qta: {max_failure: 0.01}
`

// TestSLOQoO: --qoo gives every probe with a qoo requirement a time-slice
// objective on its score, counted at the connector's interval, a probe
// without a QTA included; PROBE=SCORE:TARGET sets one probe's; naming a
// probe without a requirement, or a malformed objective, is an error that
// says which.
func TestSLOQoO(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(cfg, []byte(qooSLOConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	status, stdout, stderr := runCmd("slo", "--config", cfg, "--qoo", "80:0.99", "--qoo", "b=90:0.999")
	if status != exitOK {
		t.Fatalf("status %d\n%s", status, stderr)
	}
	for _, want := range []string{
		`labels: {deltaq_probe: "a", deltaq_slo: "qoo-80", deltaq_qoo_min: "80"}`,
		`labels: {deltaq_probe: "b", deltaq_slo: "qoo-90", deltaq_qoo_min: "90"}`,
		`deltaq_qoo_score_percent{deltaq_probe="a", deltaq_series="observed"}) < 2))[4m59s999ms:2s]`,
		`deltaq_slo: "success"`,
		"alert: " + slo.AlertQoOName,
		slo.DefaultQoORunbookURL,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the rules lack %q", want)
		}
	}
	if strings.Contains(stdout, `deltaq_probe: "c", deltaq_slo: "qoo`) {
		t.Error("probe c has no qoo requirement, yet a QoO objective")
	}
	// A runbook of one's own is every alert's.
	if _, stdout, _ := runCmd("slo", "--config", cfg, "--qoo", "80:0.99", "--runbook-url", "https://runbooks.example/dq"); strings.Contains(stdout, slo.DefaultQoORunbookURL) {
		t.Error("--runbook-url left the QoO alerts at the default runbook")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--qoo", "c=80:0.99"}, `probe "c" has no qoo requirement`},
		{[]string{"--qoo", "80"}, "want SCORE:TARGET"},
		{[]string{"--qoo", "80:0.9", "--qoo", "70:0.9"}, "a bare --qoo is given twice"},
		{[]string{"--qoo", "=80:0.9"}, "no probe before ="},
	} {
		status, _, stderr := runCmd(append([]string{"slo", "--config", cfg}, c.args...)...)
		if status == exitOK || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: status %d, stderr %q; want an error with %q", c.args, status, stderr, c.want)
		}
	}
	// A bare --qoo where no probe has a requirement applied to nothing,
	// without a word.
	if status, _, stderr := runCmd("slo", "--config", analyzeConfig, "--qoo", "80:0.99"); status == exitOK || !strings.Contains(stderr, "--qoo: no probe has a qoo requirement") {
		t.Errorf("bare --qoo, no requirement: status %d, stderr %q", status, stderr)
	}
}
