// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestRuleTestsSampleWithinShortestWindow: the generated tests of the QTA
// objectives sample their counters at least twice within the shortest
// window, and from above zero. Prometheus 3's ranges are open at their
// start, (t − w, t]: sampled once a step of the shortest window, as they
// were, a rate over it read one sample and was empty, so that no budget
// was left and no page fired, and 18 checks of the demo's tests failed.
// From 0, rate() would cut its extrapolation toward the range's start
// short where a counter would reach zero, for a counter growing faster in
// the range than before and not for the others, and the ratio would not
// be the model's.
func TestRuleTestsSampleWithinShortestWindow(t *testing.T) {
	for _, c := range []struct {
		tiers  string
		period time.Duration
	}{
		{"critical:14.4:1h:5m,warning:1:6h:30m", 7 * 24 * time.Hour},
		{"critical:14.4:30s:6s:2s,warning:1:8m:1m:10s", 20 * time.Minute},
		{"critical:14.4:14m:1m10s,warning:3:5h36m:28m", 7 * 24 * time.Hour},
	} {
		tiers := c.tiers
		ts, err := ParseTiers(tiers)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New([]Probe{{Name: "job", Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}},
			Options{Period: c.period, Tiers: ts, Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var file struct {
			Tests []struct {
				Name        string `yaml:"name"`
				Interval    string `yaml:"interval"`
				InputSeries []struct {
					Values string `yaml:"values"`
				} `yaml:"input_series"`
			} `yaml:"tests"`
		}
		if err := yaml.Unmarshal(p.RuleTests("rules.yml"), &file); err != nil {
			t.Fatal(err)
		}
		if len(file.Tests) != 6 {
			t.Fatalf("%s: %d test groups, want 6 (two objectives, three scenarios)", tiers, len(file.Tests))
		}
		for _, g := range file.Tests {
			iv, err := ParseDuration(g.Interval)
			if err != nil {
				t.Fatalf("%s: %s: interval %q: %v", tiers, g.Name, g.Interval, err)
			}
			if n := p.Windows[0] / iv; n < 2 {
				t.Errorf("%s: %s: sampled every %s, %d samples in the shortest window %s", tiers, g.Name, g.Interval, n,
					FormatDuration(p.Windows[0]))
			}
			for _, s := range g.InputSeries {
				first, _, _ := strings.Cut(s.Values, "+")
				if v, err := strconv.ParseFloat(first, 64); err != nil || !(v > 0) {
					t.Errorf("%s: %s: a counter starts at %q, not above 0", tiers, g.Name, first)
				}
			}
		}
	}
}

// TestScenarioRatioPerVersion: the model's error ratio over a window, as
// Prometheus 2 and 3 read it from counters sampled twice a step, worked
// out by hand: 0.1 a step up to step 4, 0.5 from step 5. Over 2 steps at
// step 5, Prometheus 2's range [3, 5] reads the increments of steps 4 and 5,
// (0.1 + 0.5)/2 = 0.3; Prometheus 3's (3, 5] from the sample at 3.5 on,
// half of step 4's, (0.05 + 0.5)/1.5 = 0.36667. At step 1 both read from
// the sample at 0, step 1 alone: 0.1; at 0 neither has a rate.
func TestScenarioRatioPerVersion(t *testing.T) {
	s := scenario{rh: 0.1, rb: 0.5, t0: 4, span: 10}
	for _, c := range []struct {
		t, w int
		rs   rangeStart
		want float64
	}{
		{5, 2, closedStart, 0.3},
		{5, 2, openStart, 0.55 / 1.5},
		{1, 2, closedStart, 0.1},
		{1, 2, openStart, 0.1},
		{2, 2, openStart, 0.1},
		{7, 1, openStart, 0.5},
		{5, 1, openStart, 0.5},
	} {
		if got := s.ratio(c.t, c.w, c.rs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ratio(%d, %d, %v) = %g, want %g", c.t, c.w, c.rs, got, c.want)
		}
	}
	if got := s.ratio(0, 2, openStart); !math.IsNaN(got) {
		t.Errorf("ratio at 0 = %g, want NaN (one sample)", got)
	}
}

// TestRuleTestsOddMillisecondWindow: a shortest window of an odd number of
// milliseconds cannot be sampled twice at whole milliseconds, which
// promtool's series are: its objectives' tests are left out, and the file
// says why, rather than sampled at a rounded interval the model does not
// count.
func TestRuleTestsOddMillisecondWindow(t *testing.T) {
	ts, err := ParseTiers("critical:14.4:1m:1001ms")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "job", Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}},
		Options{Period: time.Hour, Tiers: ts, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tests := string(p.RuleTests("rules.yml"))
	if !strings.Contains(tests, "(the shortest window 1s1ms does not split into 2 samples of whole milliseconds)") ||
		strings.Contains(tests, "input_series") {
		t.Errorf("the tests of a window of 1001 ms:\n%s", tests)
	}
}
