// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"math"
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

// TestDescribeQoOPercentile: the percentile that set the latency component
// is named as the user wrote it, p7 for the 7th (0.07), not the binary
// product 100 × 0.07 = 7.000000000000001, and p0 for the least delay
// however its zero is signed (a -0 parses as a valid percentile).
func TestDescribeQoOPercentile(t *testing.T) {
	for _, c := range []struct {
		p    float64
		want string
	}{
		{0.07, "at p7,"},
		{0.29, "at p29,"},
		{0.57, "at p57,"},
		{0.999, "at p99.9,"},
		{0.9999, "at p99.99,"},
		{0.001, "at p0.1,"},
		{1, "at p100,"},
		{0, "at p0,"},
		{math.Copysign(0, -1), "at p0,"},
	} {
		req := deltaq.QoORequirement{Latency: []deltaq.QoOLatency{{Percentile: c.p, ROP: 0.1, CPUP: 0.3}}, CPUPLoss: 1}
		q, err := req.Score(deltaq.QoOMeasurement{Latency: []float64{0.2}})
		if err != nil {
			t.Fatalf("p %v: %v", c.p, err)
		}
		if got := DescribeQoO(req, q); !strings.Contains(got, c.want) {
			t.Errorf("p %v: %q, want %q", c.p, got, c.want)
		}
	}
}

// TestDescribeQoOOptimalLatency: with every percentile at or better than
// its ROP the latency component is 100 ("Quality of Outcome",
// draft-ietf-ippm-qoo-10, section 3.3.2) and no percentile sets it; the
// text named the first one, "latency 100 at p0" for p0 and p99, as if the
// least delay were the worst percentile. A component below 100 still names
// the percentile that set it.
func TestDescribeQoOOptimalLatency(t *testing.T) {
	req := deltaq.QoORequirement{Latency: []deltaq.QoOLatency{{Percentile: 0, ROP: 0.01, CPUP: 0.02}, {Percentile: 0.99, ROP: 0.1, CPUP: 0.3}},
		ROPLoss: 0.01, CPUPLoss: 0.05}
	for _, c := range []struct {
		latency []float64
		want    string
	}{
		{[]float64{0.005, 0.05}, "100 (latency 100, loss 100)"},
		{[]float64{0.005, 0.2}, "50 (latency 50 at p99, loss 100)"},
		{[]float64{0.015, 0.05}, "50 (latency 50 at p0, loss 100)"},
	} {
		q, err := req.Score(deltaq.QoOMeasurement{Latency: c.latency})
		if err != nil {
			t.Fatal(err)
		}
		if got := DescribeQoO(req, q); got != c.want {
			t.Errorf("measured %v: %q, want %q", c.latency, got, c.want)
		}
	}
}
