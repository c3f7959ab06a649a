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

// misspelledConfig is a newcomer's first configuration
// (testdata/newcomer-collector.yaml, which `deltaq check --config` is
// tested with too): the diagram names an outcome paymnet where the
// processor defines payment, and a QTA is set for chekout where it defines
// checkout.
func misspelledConfig(t *testing.T) string {
	b, err := os.ReadFile("../../../testdata/newcomer-collector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestValidateNamesMisspelledProbes: the built collector's own validate
// command refuses the misspellings, naming the probes meant; with them
// corrected it accepts the configuration.
func TestValidateNamesMisspelledProbes(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yaml")
	misspelled := misspelledConfig(t)
	fixed := strings.NewReplacer("paymnet", "payment", "chekout", "checkout").Replace(misspelled)
	for path, text := range map[string]string{bad: misspelled, good: fixed} {
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

// TestValidateNamesMisspelledOutcomeConnectorOnly: in a collector whose
// only deltaq component is the connector (examples/collector.yaml), no
// processor runs the reference checks, and the connector's own Validate
// refuses the misspelled outcome that start would refuse.
func TestValidateNamesMisspelledOutcomeConnectorOnly(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	example, err := os.ReadFile("../../../examples/collector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const line = "checkout = inventory -> payment;"
	if !strings.Contains(string(example), line) {
		t.Fatalf("examples/collector.yaml lacks the diagram %q", line)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(string(example), line, "checkout = inventory -> paymnet;", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(otelcol, "validate", "--config="+bad).CombinedOutput()
	want := "connectors::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)"
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("validate: %v, output lacks %q:\n%s", err, want, out)
	}
}

// nearNamesConfig has two deltaq processors defining checkout and
// checkouts, one edit apart, each in a pipeline of its own ending at the
// connector, which sets a QTA on both.
const nearNamesConfig = `receivers:
  otlp:
    protocols: {grpc: {endpoint: 127.0.0.1:0}}
processors:
  deltaq:
    probes: {checkout: {dmax: 50ms, bins: 50}}
  deltaq/b:
    probes: {checkouts: {dmax: 50ms, bins: 50}}
connectors:
  deltaq:
    probes:
      checkouts: {qta: {points: [{delay: 10ms, p: 0.5}]}}
      checkout: {qta: {points: [{delay: 10ms, p: 0.5}]}}
exporters:
  debug: {}
service:
  pipelines:
    traces/a: {receivers: [otlp], processors: [deltaq], exporters: [deltaq]}
    traces/b: {receivers: [otlp], processors: [deltaq/b], exporters: [deltaq]}
    metrics: {receivers: [deltaq], exporters: [debug]}
`

// TestValidateAcceptsNearNamesOfTwoProcessors: the built collector made
// the two processors in an order of its own, and when it made the one
// defining checkouts first, its check took the connector's checkout for a
// misspelling: validate refused the valid configuration now and then. It
// accepts it every time now (each run a fresh process), and still refuses
// a real misspelling of one of the two.
func TestValidateAcceptsNearNamesOfTwoProcessors(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	misspelled := strings.Replace(nearNamesConfig, "      checkout: {qta", "      chekout: {qta", 1)
	for path, text := range map[string]string{good: nearNamesConfig, bad: misspelled} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for range 8 {
		if out, err := exec.Command(otelcol, "validate", "--config="+good).CombinedOutput(); err != nil {
			t.Fatalf("validate refused the configuration: %v\n%s", err, out)
		}
	}
	out, err := exec.Command(otelcol, "validate", "--config="+bad).CombinedOutput()
	if err == nil {
		t.Fatalf("validate accepted the misspelled probe:\n%s", out)
	}
	// The probes suggested are those of the processors made by then:
	// checkout, or checkout and checkouts.
	if want := `probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout`; !strings.Contains(string(out), want) {
		t.Errorf("validate's output lacks %q:\n%s", want, out)
	}
}
