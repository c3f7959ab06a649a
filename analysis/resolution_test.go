// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// signalWindows returns the windows a cell of the seeded signal tests runs:
// DELTAQ_SIGNAL_WINDOWS when set (the README's tables use 1000), else def
// (fewer with -short).
func signalWindows(t *testing.T, def int) int {
	if s := os.Getenv("DELTAQ_SIGNAL_WINDOWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 10 {
			t.Fatalf("DELTAQ_SIGNAL_WINDOWS=%q: want a count of at least 10", s)
		}
		return n
	}
	if testing.Short() {
		return def / 4
	}
	return def
}

// sharedQueueIssue gives both stages of a trace one wait z ~ Exp(4 ms) in
// a shared queue on top of the known-answer table's 10 ms + Exp(2 ms): the
// job is wider than a ⊗ b, by a Kolmogorov distance of 0.096 (simulated,
// 400,000 traces; the slowness factor's is 0.117).
func sharedQueueIssue(rng *rand.Rand) (float64, float64) {
	z := 0.004 * rng.ExpFloat64()
	return issueStage(rng) + z, issueStage(rng) + z
}

// TestDivergenceIndependentOfDisplay is the issue's table at the analysis
// resolution: job = a -> b of stages 10 ms + Exp(2 ms), the divergence test
// paired, pooled over 5 windows, α = 0.01, on 0.5, 2 and 4 ms display
// bins (400, 100 and 50 bins up to 200 ms), n = 200 and 1000 traces a
// window (and n = 50, whose power is logged). On the display bins the
// test had power 0.17 at 2 ms and n = 50
// against one slowness factor U(0.5, 2) per trace and none below n = 5000 at
// 4 ms against a shared queue. Every display sees the same traces (one
// seed per n), and the analysis reads none of them: the windows tested
// and significant must be the same at every display bin width, not merely
// within sampling error. The power must be high at n = 1000 for both
// dependences and at n = 200 for the slowness factor; independent stages
// must be significant in at most α + 3·√(α(1−α)/W) of the windows, and
// never fire the trigger (3 significant windows in a row).
func TestDivergenceIndependentOfDisplay(t *testing.T) {
	statistical(t)
	windows := signalWindows(t, 150)
	const alpha = 0.01
	bound := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(windows))
	cases := []struct {
		name   string
		stages func(*rand.Rand) (float64, float64)
		floor  map[int]float64 // minimum power by n
	}{
		{"independent", independentIssue, nil},
		{"slowness U(0.5, 2)", dependentIssue, map[int]float64{200: 0.9, 1000: 0.95}},
		{"shared queue Exp(4 ms)", sharedQueueIssue, map[int]float64{200: 0.9, 1000: 0.95}},
	}
	for _, c := range cases {
		for _, n := range []int{50, 200, 1000} {
			var first *twoStageRun
			for _, bins := range []int{400, 100, 50} {
				r := twoStage{seed: 38, bins: bins, n: n, windows: windows, stages: c.stages, triggers: issueTriggers, sameData: true}.run(t)
				rate := float64(r.significant) / float64(max(r.tested, 1))
				t.Logf("%-22s n = %4d, display bins %.1f ms: p < 0.01 in %.4f of %d windows, %d triggers; bounds' width %.4f",
					c.name, n, 200.0/float64(bins), rate, r.tested, r.fires[TriggerDivergence], r.boundsWidth)
				if first == nil {
					first = &r
				} else if r.tested != first.tested || r.significant != first.significant || r.fires != first.fires {
					t.Errorf("%s, n = %d: display bins of %.1f ms changed the analysis: %d of %d significant, against %d of %d",
						c.name, n, 200.0/float64(bins), r.significant, r.tested, first.significant, first.tested)
				}
				if r.tested < windows-5 {
					t.Errorf("%s, n = %d: %d windows tested of %d", c.name, n, r.tested, windows)
				}
				if c.floor == nil && (rate > bound || r.fires[TriggerDivergence] != 0) {
					t.Errorf("%s, n = %d: false rejection rate %.4f (bound %.4f), %d triggers", c.name, n, rate, bound, r.fires[TriggerDivergence])
				}
				if f, ok := c.floor[n]; ok && rate < f {
					t.Errorf("%s, n = %d: power %.3f, want at least %v", c.name, n, rate, f)
				}
			}
		}
	}
}

// TestStageDMaxBelowTheWhole: the stages' dMax below the job's — 16 ms and
// 20 ms under a job of 40 ms, as the demo's 100 ms under 200 ms — with
// independent stages of 10 ms + Exp(2 ms). A stage instance past 16 ms is
// a timeout of the stage (1 in 20 of them), yet completes within the job;
// composed as "never completes", it rejected independence in every window
// (0.2 ms bins, n = 1000). The whole's calculated ΔQ takes the stages'
// completions up to the job's dMax: the false rejection rate is at most α
// + 3·√(α(1−α)/W) at 0.2 and 2 ms display bins, n = 200 and 1000, and
// the stages' own windows still count their timeouts.
func TestStageDMaxBelowTheWhole(t *testing.T) {
	statistical(t)
	windows := signalWindows(t, 150)
	const alpha = 0.01
	bound := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(windows))
	for _, stage := range []time.Duration{16 * time.Millisecond, 20 * time.Millisecond} {
		for _, n := range []int{200, 1000} {
			for _, bins := range []int{200, 20} {
				r := twoStage{seed: 39, bins: bins, n: n, windows: windows, stages: independentIssue, triggers: issueTriggers,
					stageDMax: stage, jobDMax: 40 * time.Millisecond}.run(t)
				rate := float64(r.significant) / float64(max(r.tested, 1))
				t.Logf("stage dMax %v, job 40ms, n = %4d, display bins %.1f ms: p < 0.01 in %.4f of %d windows, %d triggers",
					stage, n, 40.0/float64(bins), rate, r.tested, r.fires[TriggerDivergence])
				if rate > bound || r.fires[TriggerDivergence] != 0 || r.tested < windows-5 {
					t.Errorf("stage dMax %v, n = %d, bins %d: false rejection rate %.4f (bound %.4f) in %d windows, %d triggers",
						stage, n, bins, rate, bound, r.tested, r.fires[TriggerDivergence])
				}
			}
		}
	}
}

// TestSampledDivergenceFalseAlarms: traces sampled one in 10 (each span of
// a kept trace with adjusted count 10, the stages and the job together):
// the test's n is the effective count, the spans, not the 10-fold counts,
// so independent stages are significant in at most α + 3·√(α(1−α)/W) of
// the windows at 200 and 2,000 traces a second, and the trigger never
// fires. With the weighted counts as n the test rejected in most windows.
func TestSampledDivergenceFalseAlarms(t *testing.T) {
	statistical(t)
	windows := signalWindows(t, 150)
	const alpha = 0.01
	bound := alpha + 3*math.Sqrt(alpha*(1-alpha)/float64(windows))
	for _, n := range []int{200, 2000} {
		r := twoStage{seed: 40, bins: 100, n: n, windows: windows, stages: independentIssue, triggers: issueTriggers, sample: 10}.run(t)
		rate := float64(r.significant) / float64(max(r.tested, 1))
		t.Logf("sampled 1 in 10, n = %4d traces a window: p < 0.01 in %.4f of %d windows, %d triggers", n, rate, r.tested, r.fires[TriggerDivergence])
		if rate > bound || r.fires[TriggerDivergence] != 0 || r.tested < windows/2 {
			t.Errorf("sampled, n = %d: false rejection rate %.4f (bound %.4f) in %d windows, %d triggers", n, rate, bound, r.tested, r.fires[TriggerDivergence])
		}
	}
}

// statistical skips a seeded statistical test under the race detector:
// it runs one goroutine, which the detector has nothing to check in, and
// takes minutes there; make test runs it without the detector too.
func statistical(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("a single-goroutine statistical test: run without -race")
	}
}
