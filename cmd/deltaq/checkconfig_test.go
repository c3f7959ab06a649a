// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"strings"
	"testing"
)

// newcomerConfig is testdata/newcomer-collector.yaml: the probe-naming
// mistakes of a first configuration (a misspelled outcome in the diagram, a
// QTA for a misspelled probe), which the collector's validate is tested
// with too.
var newcomerConfig = func() string {
	b, err := os.ReadFile("../../testdata/newcomer-collector.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestCheckConfigNamesUnknownProbes(t *testing.T) {
	path := writeTemp(t, "collector.yaml", newcomerConfig)
	status, stdout, stderr := runCmd("check", "--config", path)
	want := "deltaq check: connectors::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n" +
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)` + "\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d (want %d)\nstderr:\n%s\nwant:\n%s", status, exitFail, stderr, want)
	}
	if !strings.Contains(stdout, "processors::deltaq: ok, 3 probes") {
		t.Errorf("stdout %q lacks the processor's line", stdout)
	}
}

// TestCheckConfigExamples: every shipped collector configuration passes,
// and a second --config is merged over the first as the collector merges
// them (here, fixing the mistakes).
func TestCheckConfigExamples(t *testing.T) {
	bad := writeTemp(t, "collector.yaml", strings.Replace(newcomerConfig, "chekout:", "checkout:", 1))
	fix := writeTemp(t, "fix.yaml", "connectors:\n  deltaq:\n    diagram: \"checkout = inventory -> payment;\"\n")
	t.Chdir("../..") // the examples name their diagram files from the repository's root
	for _, path := range []string{"examples/collector.yaml", "examples/connector.yaml", "examples/exporter.yaml",
		"examples/demo/collector.yaml", "examples/erlang/collector.yaml", "examples/scaling/agent.yaml", "examples/scaling/gateway.yaml"} {
		if status, _, stderr := runCmd("check", "--config", path); status != exitOK {
			t.Errorf("%s: status %d: %s", path, status, stderr)
		}
	}
	status, stdout, stderr := runCmd("check", "--config", bad, "--config", fix)
	if status != exitOK || !strings.Contains(stdout, "connectors::deltaq: ok, fed by processors deltaq") {
		t.Errorf("merged: status %d\nstdout %s\nstderr %s", status, stdout, stderr)
	}
	if status, _, stderr := runCmd("check", "--config", bad, "x.dq"); status != exitUsage || !strings.Contains(stderr, "give either FILE.dq or --config") {
		t.Errorf("both: status %d, %s", status, stderr)
	}
}

// TestCheckConfigLayoutsAgree: a connector probe whose layout differs from
// the processor's that feeds it is refused, naming both layouts.
func TestCheckConfigLayoutsAgree(t *testing.T) {
	cfg := strings.Replace(newcomerConfig, "chekout: {qta:", "payment: {dmax: 2s, bins: 200}\n      checkout: {qta:", 1)
	cfg = strings.ReplaceAll(cfg, "paymnet", "payment")
	status, _, stderr := runCmd("check", "--config", writeTemp(t, "collector.yaml", cfg))
	want := `deltaq check: connectors::deltaq: probes["payment"]: dmax 2s, bins 200 differ from processors::deltaq's dmax 1s, bins 100; set the layout in one place (the processor's), or the same in both` + "\n"
	if status != exitFail || stderr != want {
		t.Errorf("status %d\nstderr %s\nwant   %s", status, stderr, want)
	}
}
