// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unsetenv removes name from the environment for the test (t.Setenv cannot
// unset) and restores it afterwards.
func unsetenv(t *testing.T, name string) {
	t.Helper()
	t.Setenv(name, "") // registers the restore
	if err := os.Unsetenv(name); err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeDemoConfig reads examples/demo/collector.yaml as the collector
// does: its diagram_file is ${env:DELTAQ_DIAGRAM:-examples/demo/mm1k.dq},
// which a plain YAML read took for a file name ("open
// ${env:DELTAQ_DIAGRAM:-examples/demo/mm1k.dq}: no such file or
// directory"). Unset, the default applies; set, the variable does.
func TestAnalyzeDemoConfig(t *testing.T) {
	traces, err := filepath.Abs(analyzeTraces)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("../..") // the demo's relative paths are relative to the repository
	unsetenv(t, "DELTAQ_DIAGRAM")
	status, stdout, stderr := runCmd("analyze", "--config", "examples/demo/collector.yaml", traces)
	if status != exitOK || strings.Contains(stderr, "${env:") {
		t.Fatalf("analyze of examples/demo/collector.yaml: status %d\nstderr: %s", status, stderr)
	}
	if !strings.Contains(stdout, "no span matched any probe") {
		t.Errorf("stdout: want the demo's probes, which these traces do not have, reported as unmatched; got\n%s", stdout)
	}

	t.Setenv("DELTAQ_DIAGRAM", "no/such/diagram.dq")
	status, _, stderr = runCmd("analyze", "--config", "examples/demo/collector.yaml", traces)
	if status != exitFail || !strings.Contains(stderr, "no/such/diagram.dq") {
		t.Errorf("DELTAQ_DIAGRAM=no/such/diagram.dq: status %d, stderr %q; want a failure naming that file", status, stderr)
	}
}

// TestAnalyzeConfigMerge gives --config twice: the second file is merged
// over the first as the collector merges them, key by key (a list is
// replaced whole), and ${env:NAME:-default} and ${NAME} expand.
func TestAnalyzeConfigMerge(t *testing.T) {
	over := filepath.Join(t.TempDir(), "over.yaml")
	err := os.WriteFile(over, []byte(`
exporters:
  deltaq:
    interval: ${env:DELTAQ_TEST_INTERVAL:-3s}
    probes:
      e2e:
        qta:
          points: [{delay: "${DELTAQ_TEST_DELAY}", p: 0.8}]
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	unsetenv(t, "DELTAQ_TEST_INTERVAL")
	t.Setenv("DELTAQ_TEST_DELAY", "4ms")
	status, stdout, stderr := runCmd("analyze", "--json", "--config", analyzeConfig, "--config", over, analyzeTraces)
	if status != exitOK {
		t.Fatalf("status %d\nstderr: %s", status, stderr)
	}
	for _, want := range []string{
		`"interval": 3`,              // the default of ${env:…:-3s}
		`"delay": 0.004`, `"p": 0.8`, // the second file's QTA point, from ${DELTAQ_TEST_DELAY}
		`"max_failure": 0.1`, // kept from the first file
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("merged configuration: output lacks %s\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, `"delay": 0.02`) {
		t.Errorf("the first file's QTA points survived the merge; a list is replaced whole")
	}

	// A location that does not exist is named.
	status, _, stderr = runCmd("analyze", "--config", analyzeConfig, "--config", "no-such.yaml", analyzeTraces)
	if status != exitFail || !strings.Contains(stderr, "no-such.yaml") {
		t.Errorf("missing second file: status %d, stderr %q", status, stderr)
	}
}
