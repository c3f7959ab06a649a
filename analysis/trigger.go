// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"time"
)

// Triggers and re-arming.
//
// A trigger fires once when its condition becomes true, and not again while
// the condition holds. It re-arms after the condition has been false in
// Config.RearmWindows consecutive windows (default 1). A window that cannot
// decide a condition — no instance, so no observed ΔQ; for divergence no
// calculated ΔQ, or a withheld divergence; for slack_trend fewer than W
// windows with a slack — neither fires the trigger nor counts towards
// re-arming.
// The conditions, per probe:
//
//   - qta: F_obs(dₖ) < pₖ for some QTA point (dₖ, pₖ): fewer instances than
//     agreed completed by dₖ (draft 5.6.2, "Percentiles"); with
//     Triggers.Confidence, only when an exact binomial test finds the
//     breach significant for the window's instances, each of the QTA's m
//     points at 1/m of the level (ProbeResult.QTABreachP);
//   - failure: failure ratio > MaxFailure, i.e. success(ΔQ_obs) <
//     success(QTA) (draft 5.6.2, "Failure"); with Triggers.Confidence,
//     only when significant likewise;
//   - load: instances in the window > MaxInstances (draft 5.6.1);
//   - divergence: the divergence test's p-value is below α and the
//     distance above MaxDivergence (0 by default) in DivergenceTrigger.Windows
//     consecutive windows that have a test (a window without one neither
//     breaks nor extends the run);
//   - slack_trend: the least-squares line of the minimum QTA slack over
//     the last W windows falls significantly and is significantly below
//     zero at the horizon (SlackTrend.Significant).

// condition is the value of a trigger's condition in one window.
type condition int8

const (
	// unknown: the window cannot decide the condition (no observed ΔQ; for
	// divergence no calculated ΔQ, or a divergence withheld because a probe
	// is under-resolved; for slack_trend too few windows with a slack). It
	// neither fires a trigger nor counts towards re-arming it.
	unknown condition = iota
	condFalse
	condTrue
)

// trigger is the firing state of one trigger of one probe.
//
// A trigger starts armed. When its condition is true in a window and it is
// armed, it fires once and disarms. It re-arms after its condition has been
// false in rearm consecutive windows; a true window resets that count, and a
// window that cannot decide the condition (unknown) leaves it as it is. So
// while a condition holds the trigger fires once, not in every window.
type trigger struct {
	disarmed bool
	falseRun int
}

// step advances the state by one window and reports whether the trigger
// fires.
func (t *trigger) step(c condition, rearm int) bool {
	switch c {
	case condTrue:
		t.falseRun = 0
		if !t.disarmed {
			t.disarmed = true
			return true
		}
	case condFalse:
		if t.disarmed {
			t.falseRun++
			if t.falseRun >= rearm {
				t.disarmed = false
				t.falseRun = 0
			}
		}
	}
	return false
}

// WorstInstance returns the instance a trigger's record links to by its own
// trace context: for a failure trigger the window's first failure, else its
// first timeout (both make the failure ratio); for every other trigger the
// window's worst instance (WorstInstances.Worst). It reports false when the
// window named none.
func (t *TriggerEvent) WorstInstance() (Exemplar, bool) {
	if t.Kind == TriggerFailure {
		return firstOf(t.Worst.Failures, t.Worst.Timeouts, t.Worst.Slowest)
	}
	return t.Worst.Worst()
}

// firing is what a trigger's condition says of one window: the condition,
// and what a firing reports — the value observed, the value required, and
// for a QTA point or a slack trend a delay.
type firing struct {
	c                  condition
	observed, required float64
	delay              time.Duration
}

// triggers steps the probe's triggers, each on its condition below, and
// appends those that fire.
func (a *analyzer) triggers(r *Result, pr *ProbeResult, s *probeState) {
	t := s.cfg.Triggers
	fire := func(k TriggerKind, f firing) {
		if s.trig[k].step(f.c, a.cfg.RearmWindows) {
			r.Triggers = append(r.Triggers, TriggerEvent{
				Probe: pr.Name, Kind: k, Time: r.End,
				Observed: f.observed, Required: f.required, Delay: f.delay,
				Worst: pr.Worst,
			})
		}
	}
	if t.QTA && s.qta != nil {
		fire(TriggerQTA, qtaCondition(pr, s))
	}
	if t.Failure && s.qta != nil {
		fire(TriggerFailure, failureCondition(pr, s))
	}
	if t.MaxInstances > 0 {
		n := pr.Counts.Total()
		fire(TriggerLoad, firing{condOf(n > t.MaxInstances), float64(n), float64(t.MaxInstances), 0})
	}
	if s.div.alpha > 0 {
		fire(TriggerDivergence, divergenceCondition(pr, s))
	}
	if h := t.SlackTrend.Horizon; h > 0 && s.qta != nil && len(s.qta.Points) > 0 {
		fire(TriggerSlackTrend, slackTrendCondition(pr, h))
	}
}

// significant reports whether a breach of p-value p counts: always without
// triggers::confidence, else when significant at 1 − confidence.
func significant(s *probeState, p float64) bool {
	c := s.cfg.Triggers.Confidence
	return c == 0 || p < 1-c
}

// qtaCondition: a point of the QTA broken (significantly, with
// confidence); it reports the worst point, the largest shortfall
// P − F_obs(Delay).
func qtaCondition(pr *ProbeResult, s *probeState) firing {
	if pr.QTACheck == nil {
		return firing{}
	}
	worst := -1
	for i, pc := range pr.QTACheck.Points {
		if !pc.OK && (worst < 0 || pc.Shortfall > pr.QTACheck.Points[worst].Shortfall) {
			worst = i
		}
	}
	f := firing{c: condOf(worst >= 0 && significant(s, pr.QTABreachP))}
	if worst >= 0 {
		pc := pr.QTACheck.Points[worst]
		f.observed, f.required, f.delay = pc.Observed, pc.P, s.cfg.QTA.Points[worst].Delay
	}
	return f
}

// failureCondition: the failure ratio above the QTA's max_failure
// (significantly, with confidence).
func failureCondition(pr *ProbeResult, s *probeState) firing {
	f := firing{required: s.qta.MaxFailure}
	if pr.QTACheck != nil {
		f.c = condOf(!pr.QTACheck.FailureOK && significant(s, pr.FailureBreachP))
		f.observed = pr.QTACheck.Failure
	}
	return f
}

// divergenceCondition: the observed ΔQ significantly diverges from the
// calculated one, by more than the floor, in windows consecutive windows;
// it steps the run of significant windows.
func divergenceCondition(pr *ProbeResult, s *probeState) firing {
	f := firing{observed: pr.DivergenceTest.P, required: s.div.alpha}
	if !pr.HasDivergence {
		return f
	}
	ks := pr.DivergenceTest
	if ks.P < s.div.alpha && ks.Distance > s.div.floor {
		s.div.run = min(s.div.run+1, s.div.windows)
	} else {
		s.div.run = 0
	}
	f.c = condOf(s.div.run >= s.div.windows)
	return f
}

// slackTrendCondition: the trend of the QTA's minimum slack significantly
// crosses zero within the horizon h; it reports the line's lowest value
// over [now, now + h] and the time to the violation.
func slackTrendCondition(pr *ProbeResult, h time.Duration) firing {
	if pr.Slack == nil || !pr.Slack.Trend.OK {
		return firing{}
	}
	tr := pr.Slack.Trend
	return firing{c: condOf(tr.Significant), observed: math.Min(tr.Fitted, tr.Fitted+tr.Slope*h.Seconds()), delay: tr.TimeToViolation}
}

func condOf(b bool) condition {
	if b {
		return condTrue
	}
	return condFalse
}
