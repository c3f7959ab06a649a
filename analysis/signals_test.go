// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// twoStage is a run of a job = a -> b through an engine: one-second
// windows of n traces, each trace's stage delays drawn by stages, every
// probe on bins of width dMax/bins (dMax 200 ms).
type twoStage struct {
	seed       uint64
	bins, n    int
	windows    int
	stages     func(*rand.Rand) (a, b float64)
	triggers   Triggers
	qta        QTA
	failJob    float64 // probability that a job fails
	jobQuantQs []float64
}

// twoStageRun is what a run measured.
type twoStageRun struct {
	tested, significant     int // windows with a divergence test; p < α
	fires                   [numTriggers]int
	firstFire               [numTriggers]int // window, −1: never
	qtaBroken, firstBroken  int              // windows whose raw QTA verdict fails; the first, −1
	detectable, boundsWidth float64          // means over the tested windows
	slackStdErr             float64          // mean over the windows with a trend
}

// issueStage is a stage of the known-answer table: 10 ms + Exp(2 ms).
func issueStage(rng *rand.Rand) float64 { return 0.010 + 0.002*rng.ExpFloat64() }

// independentIssue draws the two stages independently: the job is exactly
// a ⊗ b (ΔQSD's independence hypothesis holds).
func independentIssue(rng *rand.Rand) (float64, float64) { return issueStage(rng), issueStage(rng) }

// dependentIssue scales both stages of a trace by one slowness factor
// s ~ U(0.5, 2): the stages are positively dependent and the job is wider
// than a ⊗ b.
func dependentIssue(rng *rand.Rand) (float64, float64) {
	s := 0.5 + 1.5*rng.Float64()
	return s * issueStage(rng), s * issueStage(rng)
}

func (c twoStage) run(t *testing.T) twoStageRun {
	t.Helper()
	dmax := 200 * time.Millisecond
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: "job = a -> b;", Probes: map[string]ProbeConfig{}, Quantiles: c.jobQuantQs}
	for _, p := range []string{"a", "b"} {
		cfg.Probes[p] = ProbeConfig{DMax: dmax, Bins: c.bins}
	}
	cfg.Probes["job"] = ProbeConfig{DMax: dmax, Bins: c.bins, QTA: c.qta, Triggers: c.triggers}
	e := newEngine(t, cfg, at(time.Second))
	rng := rand.New(rand.NewPCG(c.seed, uint64(c.n*c.bins)))
	out := twoStageRun{firstBroken: -1}
	for k := range out.firstFire {
		out.firstFire[k] = -1
	}
	alpha := c.triggers.Divergence.Alpha
	ins := make([]Instance, 0, 3*c.n)
	trends := 0
	for w := range c.windows {
		ins = ins[:0]
		for i := range c.n {
			end := at(time.Duration(w)*time.Second + time.Duration(i)*time.Second/time.Duration(c.n+1)).UnixNano()
			a, b := c.stages(rng)
			oc := Success
			if c.failJob > 0 && rng.Float64() < c.failJob {
				oc = Failure
			}
			ins = append(ins,
				Instance{Probe: "a", Outcome: Success, Start: end - int64(a*1e9), End: end},
				Instance{Probe: "b", Outcome: Success, Start: end - int64(b*1e9), End: end},
				Instance{Probe: "job", Outcome: oc, Start: end - int64((a+b)*1e9), End: end})
		}
		addAll(e, ins...)
		res := e.Advance(at(time.Duration(w+2) * time.Second))
		if len(res) != 1 {
			t.Fatalf("window %d: %d results", w, len(res))
		}
		p := probeOf(t, res[0], "job")
		if p.HasDivergence {
			out.tested++
			if p.DivergenceTest.P < alpha {
				out.significant++
			}
			out.detectable += p.DetectableDivergence
			out.boundsWidth += p.BoundsWidth
		}
		if p.QTACheck != nil && !p.QTACheck.OK {
			out.qtaBroken++
			if out.firstBroken < 0 {
				out.firstBroken = w
			}
		}
		if p.Slack != nil && p.Slack.Trend.OK {
			trends++
			out.slackStdErr += p.Slack.Trend.StdErr
		}
		for _, ev := range res[0].Triggers {
			if ev.Probe != "job" {
				continue
			}
			if out.fires[ev.Kind] == 0 {
				out.firstFire[ev.Kind] = w
			}
			out.fires[ev.Kind]++
		}
	}
	if out.tested > 0 {
		out.detectable /= float64(out.tested)
		out.boundsWidth /= float64(out.tested)
	}
	if trends > 0 {
		out.slackStdErr /= float64(trends)
	}
	return out
}

// issueTriggers are the triggers of the known-answer table: divergence
// {alpha: 0.01, windows: 3, pool: 5, paired: true}.
var issueTriggers = Triggers{Divergence: DivergenceTrigger{Alpha: 0.01, Windows: 3, Pool: 5, Paired: true}}

// TestDivergenceBeyondBinning is the known answer of the divergence test
// at coarse bins: a job = a -> b of stages 10 ms + Exp(2 ms), 200 traces a
// second, the test pooled over 5 windows and paired, α = 0.01. Measured
// before the test read the calculated ΔQ's bounds (the issue that asked
// for them): on 2 ms bins 14 triggers in 300 windows with independent
// stages, where ΔQSD expects none, and 17 with dependent ones.
//
// Independent stages, at 2, 1 and 0.5 ms bins and n = 50 and 200: the
// fraction of windows with p < α must be at most α + 3·√(α(1−α)/W) and the
// trigger (3 consecutive significant windows) must not fire. Dependent
// stages (one slowness factor U(0.5, 2) per trace): most windows are
// significant at n = 200 on every bin width, and the power is logged for
// n = 50. 300 windows a case (100 with -short).
func TestDivergenceBeyondBinning(t *testing.T) {
	windows := 300
	if testing.Short() {
		windows = 100
	}
	const alpha = 0.01
	bound := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(windows))
	for _, bins := range []int{100, 200, 400} {
		for _, n := range []int{50, 200} {
			ind := twoStage{seed: 31, bins: bins, n: n, windows: windows, stages: independentIssue, triggers: issueTriggers}.run(t)
			dep := twoStage{seed: 32, bins: bins, n: n, windows: windows, stages: dependentIssue, triggers: issueTriggers}.run(t)
			w := 200.0 / float64(bins)
			rate := float64(ind.significant) / float64(ind.tested)
			power := float64(dep.significant) / float64(dep.tested)
			t.Logf("bins %.1f ms, n = %3d: independent p < 0.01 in %.4f of %d windows, %d triggers; dependent %.3f, %d triggers (first in window %d); bounds' width %.3f, detectable divergence %.3f",
				w, n, rate, ind.tested, ind.fires[TriggerDivergence], power, dep.fires[TriggerDivergence], dep.firstFire[TriggerDivergence], ind.boundsWidth, ind.detectable)
			if rate > bound || ind.fires[TriggerDivergence] != 0 {
				t.Errorf("bins %.1f ms, n = %d, independent: false rejection rate %.4f (bound %.4f), %d triggers", w, n, rate, bound, ind.fires[TriggerDivergence])
			}
			if n == 200 && power < 0.5 {
				t.Errorf("bins %.1f ms, n = %d, dependent: power %.3f, want most windows significant", w, n, power)
			}
		}
	}
}
