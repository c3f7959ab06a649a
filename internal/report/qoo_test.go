// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

func TestFormatScore(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{50, "50"},
		{100.0 / 3, "33.33"},
		{100, "100"},
		{0, "0"},
		{85.189522044, "85.19"},
		// Below 100 is not optimal: never shown as 100.
		{99.996, "99.99"},
		{99.99999999, "99.99"},
		// No exponent, which analyze's and eval's columns do not expect.
		{2e-7, "0.0000002"},
		{0.00012345, "0.0001234"},
	} {
		if got := FormatScore(c.x); got != c.want {
			t.Errorf("FormatScore(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

// TestWriteQoOLatencyWithheld: a window of 95 completed instances and 20
// failures scored against a 99th percentile and loss ratios 0 and 0.1. Its
// loss 20/115 is beyond CPUP's 0.1, so the loss component is 0 ("Quality of
// Outcome", draft-ietf-ippm-qoo-10, section 3.3.3) and so is the score
// (section 3.3.1), given without the percentile that 95 completed instances
// cannot read (100 needed): the line says so, not that nothing completed.
func TestWriteQoOLatencyWithheld(t *testing.T) {
	req := deltaq.QoORequirement{Latency: []deltaq.QoOLatency{{Percentile: 0.99, ROP: 0.1, CPUP: 0.3}}, CPUPLoss: 0.1}
	q, err := req.Score(deltaq.QoOMeasurement{Loss: 20.0 / 115})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		completed float64
		want      string
	}{
		{95, "observed 0 (latency withheld, 95 completed instances, 100 needed, loss 0)"},
		{0, "observed 0 (latency —, nothing completed, loss 0)"},
	} {
		p := &analysis.ProbeResult{QoO: &analysis.QoOResult{Requirement: req, MinInstances: req.MinInstances(),
			Observed: analysis.QoOScore{Present: true, OK: true, Completed: c.completed, QoO: q}}}
		var b strings.Builder
		writeQoO(&b, p)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%v completed: %q, want %q", c.completed, b.String(), c.want)
		}
	}
}
