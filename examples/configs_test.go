// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exampleConfigs returns the configurations make validate-configs gives the
// built collector (EXAMPLE_CONFIGS in mk/collector.mk), each file of an
// A+B pair on its own, as paths from the repository's root.
func exampleConfigs(t *testing.T) []string {
	t.Helper()
	mk, err := os.ReadFile("../mk/collector.mk")
	if err != nil {
		t.Fatal(err)
	}
	// The assignment and its continuation lines, each ending in a backslash.
	def := regexp.MustCompile(`(?m)^EXAMPLE_CONFIGS\s*:=((?:.*\\\n)*.*)$`).FindSubmatch(mk)
	if def == nil {
		t.Fatal("mk/collector.mk defines no EXAMPLE_CONFIGS")
	}
	var paths []string
	for _, f := range strings.Fields(strings.ReplaceAll(string(def[1]), "\\", " ")) {
		paths = append(paths, strings.Split(f, "+")...)
	}
	return paths
}

// collectorSection is the top-level service: block of a collector
// configuration; a Sloth spec's service: is a name, on the same line.
var collectorSection = regexp.MustCompile(`(?m)^service:\s*(#.*)?$`)

// TestCollectorConfigsValidated: every collector configuration in examples/
// is validated by the built collector in make validate-configs, alone or
// merged under or over another; the end-to-end tests' testdata, which those
// tests run, excepted. Every file EXAMPLE_CONFIGS names exists.
func TestCollectorConfigsValidated(t *testing.T) {
	listed := exampleConfigs(t)
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == "testdata":
			return filepath.SkipDir
		case d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if collectorSection.Match(b) {
			found = append(found, "examples/"+filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("no collector configuration found in examples/")
	}
	for _, path := range found {
		if !slices.Contains(listed, path) {
			t.Errorf("%s is not in EXAMPLE_CONFIGS (mk/collector.mk): make validate-configs does not check it", path)
		}
	}
	for _, path := range listed {
		if _, err := os.Stat(filepath.Join("..", path)); err != nil {
			t.Errorf("EXAMPLE_CONFIGS names %s: %v", path, err)
		}
	}
}
