// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
)

// misspelledConfig is a newcomer's first configuration: the diagram names
// an outcome paymnet where the processor defines payment, and a QTA is set
// for chekout where it defines checkout.
const misspelledConfig = `
receivers:
  otlp: {protocols: {grpc: {endpoint: 127.0.0.1:0}}}
processors:
  deltaq:
    probes:
      - {name: checkout, match: {span_name: GET /checkout}, dmax: 2s, bins: 200}
      - {name: inventory, dmax: 500ms, bins: 100}
      - {name: payment, dmax: 1s, bins: 100}
connectors:
  deltaq:
    diagram: "checkout = inventory -> paymnet;"
    probes:
      chekout: {qta: {points: [{delay: 200ms, p: 0.5}]}}
exporters:
  debug: {}
service:
  pipelines:
    traces/deltaq: {receivers: [otlp], processors: [deltaq], exporters: [deltaq]}
    metrics/deltaq: {receivers: [deltaq], exporters: [debug]}
`

// TestValidateNamesMisspelledProbes: the built collector's own validate
// command refuses the misspellings, naming the probes meant; with them
// corrected it accepts the configuration.
func TestValidateNamesMisspelledProbes(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	fixed := strings.NewReplacer("paymnet", "payment", "chekout", "checkout").Replace(misspelledConfig)
	for path, text := range map[string]string{bad: misspelledConfig, good: fixed} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(otelcol, "validate", "--config="+bad).CombinedOutput()
	if err == nil {
		t.Fatalf("validate accepted the misspelled probes:\n%s", out)
	}
	for _, want := range []string{
		"connectors::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)",
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
	if out, err := exec.Command(otelcol, "validate", "--config="+good).CombinedOutput(); err != nil {
		t.Errorf("validate refused the corrected configuration: %v\n%s", err, out)
	}
}
