// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"strings"
	"testing"
)

// assertContainsAll reports, for each of wants that text lacks, that what
// (the output, the frame) lacks it, with the whole text.
func assertContainsAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, text)
		}
	}
}

// analyzeConfigWith writes a collector configuration for analyze with one
// probe, a (10ms, 10 bins), and the deltaq exporter's one option, a line
// such as "history: 20", and returns its path.
func analyzeConfigWith(t *testing.T, name, option string) string {
	t.Helper()
	return writeTemp(t, name, `
processors:
  deltaq:
    probes: [{name: a, dmax: 10ms, bins: 10}]
exporters:
  deltaq:
    `+option+"\n")
}
