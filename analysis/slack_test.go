// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// TestQTASlack: 10 instances: 6 at 5.5 ms, in the analysis bucket [a₁,
// b₁) = [5.439, 5.505) ms, 2 at 15.5 ms, in [a₂, b₂) = [15.466, 15.598) ms,
// 2 timeouts. F(10 ms) = 0.6 and F(16 ms) = 0.8. The analysis grid of the
// probe's 100 ms dMax is 32.768 µs (deltaq.AnalysisWidth), which divides
// both buckets (2 and 4 bins): a bucket's instances are read uniform over
// it.
//   - (10 ms, 0.5): slack 0.1; Q(0.5) = a₁ + (0.5/0.6)·(b₁ − a₁).
//   - (16 ms, 0.7): slack 0.1; Q(0.7) = a₂ + ((0.7 − 0.6)/0.2)·(b₂ − a₂),
//     the smallest margin.
//   - (20 ms, 0.9) added: F(20 ms) = 0.8, slack −0.1, the headline; 0.9 is
//     above the tangible mass 0.8, so its margin, and the headline margin,
//     are unknown.
func TestQTASlack(t *testing.T) {
	ins := concat(n(6, ok("p", 500*time.Millisecond, 5500*time.Microsecond)),
		n(2, ok("p", 500*time.Millisecond, 15500*time.Microsecond)),
		n(2, timedOut("p", 100*time.Millisecond)))
	ms := func(x float64) float64 { return x / 1000 }
	pts := []QTAPoint{{10 * time.Millisecond, 0.5}, {16 * time.Millisecond, 0.7}}
	cfg := Config{Probes: map[string]ProbeConfig{"p": {QTA: QTA{Points: pts}}}}
	s := probeOf(t, single(t, cfg, ins), "p").Slack
	if s == nil {
		t.Fatal("no slack")
	}
	a1, b1 := fineBucket(t, 5500*time.Microsecond)
	a2, b2 := fineBucket(t, 15500*time.Microsecond)
	q1, q2 := a1+0.5/0.6*(b1-a1), a2+0.5*(b2-a2)
	want := []PointSlack{
		{Delay: ms(10), P: 0.5, Slack: 0.1, DelayMargin: ms(10) - q1, MarginOK: true},
		{Delay: ms(16), P: 0.7, Slack: 0.1, DelayMargin: ms(16) - q2, MarginOK: true},
	}
	for i, w := range want {
		g := s.Points[i]
		if g.Delay != w.Delay || g.P != w.P || math.Abs(g.Slack-w.Slack) > 1e-9 || math.Abs(g.DelayMargin-w.DelayMargin) > 1e-12 || g.MarginOK != w.MarginOK {
			t.Errorf("point %d = %+v, want %+v", i, g, w)
		}
	}
	if math.Abs(s.Min-0.1) > 1e-9 || !s.MarginOK || math.Abs(s.MinMargin-(ms(16)-q2)) > 1e-12 {
		t.Errorf("headline: min slack %v, min margin %v (ok %v); want 0.1, %v", s.Min, s.MinMargin, s.MarginOK, ms(16)-q2)
	}
	// The pessimistic reading puts each bucket's instances at its upper
	// edge, wherever the grid cuts it: the first bucket's 0.6 reaches 0.5
	// at b₁, the second's 0.2 reaches 0.7 at b₂ (the grid's pessimistic
	// bound, each of its bins' instances at the bin's upper edge, read q₂,
	// the middle of the bucket, where the instances need not be).
	for i, want := range []float64{ms(10) - b1, ms(16) - b2} {
		g := s.Points[i]
		if g.Holds != deltaq.HoldsPessimistic || !g.PessimisticMarginOK || math.Abs(g.PessimisticMargin-want) > 1e-9 {
			t.Errorf("point %d: holds %v, pessimistic margin %v (ok %v), want pessimistic, %v", i, g.Holds, g.PessimisticMargin, g.PessimisticMarginOK, want)
		}
	}

	cfg.Probes["p"] = ProbeConfig{QTA: QTA{Points: append(pts, QTAPoint{20 * time.Millisecond, 0.9})}}
	s = probeOf(t, single(t, cfg, ins), "p").Slack
	if math.Abs(s.Min+0.1) > 1e-12 || s.MarginOK || s.Points[2].MarginOK {
		t.Errorf("with (20 ms, 0.9): min slack %v, margin ok %v / %v; want −0.1, unknown", s.Min, s.MarginOK, s.Points[2].MarginOK)
	}
	// No QTA points, or no instance: no slack.
	cfg.Probes["p"] = ProbeConfig{QTA: QTA{MaxFailure: 0.5}}
	if s := probeOf(t, single(t, cfg, ins), "p").Slack; s != nil {
		t.Errorf("slack %+v without QTA points", s)
	}
}

// TestSlackTrendLeastSquares: hand-made series.
//   - 0.5, 0.4, 0.3, 0.1 at 0, 1, 2, 4 s (a window missing at 3 s) lie on
//     0.5 − 0.1·t: slope −0.1/s, fitted 0.1 at 4 s, zero 1 s later.
//   - 0.3, 0.1, 0.3, 0.1 at 0 … 3 s: x − x̄ = −1.5, −0.5, 0.5, 1.5 and
//     y − ȳ = 0.1, −0.1, 0.1, −0.1, so the slope is Σ(x−x̄)(y−ȳ)/Σ(x−x̄)² =
//     −0.2/5 = −0.04/s and the fitted value at 3 s is ȳ + 1.5·slope = 0.2 −
//     0.06 = 0.14, zero 0.14/0.04 = 3.5 s later.
//   - 0.2, 0.1, −0.1: the fitted value at the last is below zero: violation
//     now (ȳ = 0.0667, slope −0.15, fitted −0.0833).
//   - 0.1, 0.2, 0.3: rising: no violation projected.
//   - fewer than w windows: no trend.
func TestSlackTrendLeastSquares(t *testing.T) {
	cases := []struct {
		name   string
		secs   []float64
		slacks []float64
		w      int
		want   SlackTrend
	}{
		{"line with a gap", []float64{0, 1, 2, 4}, []float64{0.5, 0.4, 0.3, 0.1}, 4, SlackTrend{OK: true, Windows: 4, Slope: -0.1, Fitted: 0.1, Projected: true, TimeToViolation: time.Second}},
		{"noisy", []float64{0, 1, 2, 3}, []float64{0.3, 0.1, 0.3, 0.1}, 4, SlackTrend{OK: true, Windows: 4, Slope: -0.04, Fitted: 0.14, Projected: true, TimeToViolation: 3500 * time.Millisecond}},
		{"violated", []float64{0, 1, 2}, []float64{0.2, 0.1, -0.1}, 3, SlackTrend{OK: true, Windows: 3, Slope: -0.15, Fitted: -0.25 / 3, Projected: true}},
		{"rising", []float64{0, 1, 2}, []float64{0.1, 0.2, 0.3}, 3, SlackTrend{OK: true, Windows: 3, Slope: 0.1, Fitted: 0.3}},
		{"too few", []float64{0, 1}, []float64{0.3, 0.1}, 3, SlackTrend{Windows: 2}},
		// Only the last w windows count: 0.9 is forgotten.
		{"window", []float64{0, 1, 2, 3}, []float64{0.9, 0.3, 0.2, 0.1}, 3, SlackTrend{OK: true, Windows: 3, Slope: -0.1, Fitted: 0.1, Projected: true, TimeToViolation: time.Second}},
	}
	for _, c := range cases {
		h := slackHistory{w: c.w}
		for i, s := range c.secs {
			h.push(t0.Add(time.Duration(s*1e9)), c.slacks[i], 0)
		}
		got := h.trend(0, 0)
		w := c.want
		if got.OK != w.OK || got.Windows != w.Windows || math.Abs(got.Slope-w.Slope) > 1e-12 || math.Abs(got.Fitted-w.Fitted) > 1e-12 ||
			got.Projected != w.Projected || (got.TimeToViolation-w.TimeToViolation).Abs() > time.Microsecond {
			t.Errorf("%s: trend %+v, want %+v", c.name, got, w)
		}
	}
	// The noisy series' residuals are 0.04, −0.12, 0.12, −0.04: s² =
	// 0.032/2 = 0.016 and the slope's standard error √(s²/Sxx) = √(0.016/5).
	h := slackHistory{w: 4}
	for i, y := range []float64{0.3, 0.1, 0.3, 0.1} {
		h.push(t0.Add(time.Duration(i)*time.Second), y, 0)
	}
	if got := h.trend(0, 0); math.Abs(got.StdErr-math.Sqrt(0.016/5)) > 1e-12 || got.Significant {
		t.Errorf("noisy: standard error %v, want %v, not significant", got.StdErr, math.Sqrt(0.016/5))
	}
	// A window's binomial variance is a floor under the residual's: a
	// perfect line of 0.01 binomial variance per window has the standard
	// error √(0.01/Sxx).
	h = slackHistory{w: 4}
	for i, y := range []float64{0.4, 0.3, 0.2, 0.1} {
		h.push(t0.Add(time.Duration(i)*time.Second), y, 0.01)
	}
	if got := h.trend(0, 0); math.Abs(got.StdErr-math.Sqrt(0.01/5)) > 1e-12 {
		t.Errorf("line with binomial noise: standard error %v, want %v", got.StdErr, math.Sqrt(0.01/5))
	}
}

// TestSlackTrendTrigger: one QTA point (10 ms, 0.5); window k has 1000
// instances, (s + 0.5)·1000 of them at 5 ms, so its slack is s. W = 5,
// horizon 1.5 s, confidence 0.99 (Student's t of 3 degrees of freedom,
// 4.54). The slacks fall by 0.1 a window (a second) from 0.45 to 0.05: at
// window 3 the line reaches 0 at the horizon, not significantly below;
// at window 4 it is at 0.05 and reaches −0.1 at the horizon, whose upper
// bound (binomial standard deviations of about 0.016 a window) is below
// zero: it fires, with the time to violation 0.5 s. Back at 0.45 the
// line rises and the trigger re-arms; the second fall fires it again on
// its last window (11).
func TestSlackTrendTrigger(t *testing.T) {
	slacks := []float64{0.45, 0.35, 0.25, 0.15, 0.05, 0.45, 0.45, 0.45, 0.35, 0.25, 0.15, 0.05}
	var windows [][]Instance
	for _, s := range slacks {
		fast := int(math.Round((s + 0.5) * 1000))
		windows = append(windows, concat(n(fast, ok("p", 500*time.Millisecond, 5*time.Millisecond)),
			n(1000-fast, ok("p", 500*time.Millisecond, 50*time.Millisecond))))
	}
	cfg := Config{Probes: map[string]ProbeConfig{"p": {
		QTA:      QTA{Points: []QTAPoint{{10 * time.Millisecond, 0.5}}},
		Triggers: Triggers{SlackTrend: SlackTrendTrigger{Horizon: 1500 * time.Millisecond, Windows: 5}},
	}}}
	evs := runWindows(t, cfg, windows)
	if got := fired(evs, "p", TriggerSlackTrend); !slices.Equal(got, []int{4, 11}) {
		t.Fatalf("slack_trend fired in windows %v, want [4 11]", got)
	}
	e := evs[4][0]
	if math.Abs(e.Observed+0.1) > 1e-9 || e.Required != 0 || (e.Delay-500*time.Millisecond).Abs() > time.Microsecond {
		t.Errorf("event = %+v, want observed −0.1, required 0, delay 0.5s", e)
	}
	if got := fired(evs, "p", TriggerQTA); len(got) != 0 {
		t.Errorf("the qta trigger (off) fired in %v", got)
	}
	if TriggerSlackTrend.String() != "slack_trend" {
		t.Errorf("String = %q", TriggerSlackTrend.String())
	}
}
