// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// runWindows feeds one window per element of windows (the instances are
// given relative to the window's start) and returns, per window, the
// triggers that fired.
func runWindows(t *testing.T, cfg Config, windows [][]Instance) [][]TriggerEvent {
	t.Helper()
	cfg.Interval, cfg.Lag = time.Second, time.Second
	e := newEngine(t, cfg, at(time.Second)) // window [0, 1s) is the oldest open
	var out [][]TriggerEvent
	for w, ins := range windows {
		shift := int64(w) * int64(time.Second)
		ins = slices.Clone(ins)
		for i := range ins {
			ins[i].Start += shift
			ins[i].End += shift
		}
		addAll(e, ins...)
		res := e.Advance(at(time.Duration(w+2) * time.Second))
		if len(res) != 1 || !res[0].Start.Equal(at(time.Duration(w)*time.Second)) {
			t.Fatalf("window %d did not close alone: %d results", w, len(res))
		}
		out = append(out, res[0].Triggers)
	}
	return out
}

// fired returns the indices of the windows in which a trigger of kind k
// fired for probe.
func fired(evs [][]TriggerEvent, probe string, k TriggerKind) []int {
	var w []int
	for i, es := range evs {
		for _, e := range es {
			if e.Probe == probe && e.Kind == k {
				w = append(w, i)
			}
		}
	}
	return w
}

// n copies of an instance.
func n(count int, in Instance) []Instance {
	out := make([]Instance, count)
	for i := range out {
		out[i] = in
	}
	return out
}

func concat(parts ...[]Instance) []Instance { return slices.Concat(parts...) }

func TestTriggerStateMachine(t *testing.T) {
	// T = condition true, F = false, U = unknown (the window cannot decide).
	cases := []struct {
		seq   string
		rearm int
		want  []int
	}{
		{"TTFTUTFT", 1, []int{0, 3, 7}},
		{"TFTFFT", 2, []int{0, 5}},
		{"TUFT", 1, []int{0, 3}},  // unknown neither fires nor re-arms…
		{"TFUFT", 2, []int{0, 4}}, // …nor breaks a run of false windows
		{"FFFF", 1, nil},          // never true, never fires
		{"TTTT", 1, []int{0}},     // fires once while the condition holds
		{"UUTU", 3, []int{2}},     // starts armed
		{"TFTFTFT", 1, []int{0, 2, 4, 6}},
	}
	for _, c := range cases {
		var tr trigger
		var got []int
		for i, ch := range c.seq {
			cond := map[rune]condition{'T': condTrue, 'F': condFalse, 'U': unknown}[ch]
			if tr.step(cond, c.rearm) {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s with rearm %d: fired in windows %v, want %v", c.seq, c.rearm, got, c.want)
		}
	}
}

// qtaCfg: half the instances within 10 ms, at most 10 % failing.
func qtaCfg(tr Triggers) Config {
	return Config{Probes: map[string]ProbeConfig{"p": {
		QTA:      QTA{Points: []QTAPoint{{Delay: 10 * time.Millisecond, P: 0.5}}, MaxFailure: 0.1},
		Triggers: tr,
	}}}
}

func TestQTATrigger(t *testing.T) {
	fast := ok("p", 500*time.Millisecond, 2*time.Millisecond)
	slow := ok("p", 500*time.Millisecond, 50*time.Millisecond)
	good := concat(n(8, fast), n(2, slow)) // F(10 ms) = 0.8 ≥ 0.5
	bad := concat(n(4, fast), n(6, slow))  // F(10 ms) = 0.4 < 0.5
	edge := concat(n(5, fast), n(5, slow)) // F(10 ms) = 0.5: meets the QTA exactly
	evs := runWindows(t, qtaCfg(Triggers{QTA: true}), [][]Instance{
		good, bad, bad, edge, bad, nil, good, bad,
	})
	// Fires when the condition becomes true (1), not while it holds (2),
	// re-arms after one false window (3), fires again (4); the empty window
	// (5) decides nothing, the false one (6) re-arms, and 7 fires.
	if got := fired(evs, "p", TriggerQTA); !slices.Equal(got, []int{1, 4, 7}) {
		t.Fatalf("qta trigger fired in windows %v, want [1 4 7]", got)
	}
	e := evs[1][0]
	if math.Abs(e.Observed-0.4) > 1e-12 || e.Required != 0.5 || e.Delay != 10*time.Millisecond {
		t.Errorf("event = %+v, want observed F(10ms) = 0.4, required 0.5 at 10ms", e)
	}
	if len(fired(evs, "p", TriggerFailure)) != 0 {
		t.Error("the failure trigger fired although it is off")
	}
}

func TestFailureTrigger(t *testing.T) {
	s := ok("p", 500*time.Millisecond, 2*time.Millisecond)
	f := failed("p", 500*time.Millisecond)
	to := timedOut("p", 300*time.Millisecond)
	evs := runWindows(t, qtaCfg(Triggers{Failure: true}), [][]Instance{
		concat(n(9, s), n(1, f)),           // 0.10: at the bound, not above
		concat(n(8, s), n(1, f), n(1, to)), // 0.20
		concat(n(7, s), n(3, to)),          // 0.30, still true
		n(10, s),                           // 0: re-arms
		concat(n(1, s), n(1, f)),           // 0.5
	})
	if got := fired(evs, "p", TriggerFailure); !slices.Equal(got, []int{1, 4}) {
		t.Fatalf("failure trigger fired in windows %v, want [1 4]", got)
	}
	if e := evs[1][0]; e.Observed < 0.2-1e-12 || e.Observed > 0.2+1e-12 || e.Required != 0.1 {
		t.Errorf("event = %+v, want observed 0.2, required 0.1", e)
	}
}

func TestLoadTrigger(t *testing.T) {
	s := ok("p", 500*time.Millisecond, 2*time.Millisecond)
	cfg := Config{Probes: map[string]ProbeConfig{"p": {Triggers: Triggers{MaxInstances: 5}}}, RearmWindows: 2}
	evs := runWindows(t, cfg, [][]Instance{
		n(5, s), // at the maximum: not above
		n(6, s), // fires
		n(3, s), // false 1
		n(9, s), // true again before re-arming: no fire, run reset
		n(1, s), // false 1
		nil,     // an empty window holds 0 instances: false 2, re-armed
		n(6, s), // fires
	})
	if got := fired(evs, "p", TriggerLoad); !slices.Equal(got, []int{1, 6}) {
		t.Fatalf("load trigger fired in windows %v, want [1 6]", got)
	}
	if e := evs[1][0]; e.Observed != 6 || e.Required != 5 {
		t.Errorf("event = %+v, want observed 6, required 5", e)
	}
}

// divergenceWindows returns the windows of TestDivergenceTrigger, k
// instances of every probe in each: a and b take 10.5 ms, in the analysis
// bucket [10.486, 10.617) ms; their sequence lies within [20.972,
// 21.234) ms, the bucket of 21 ms. An e2e of 21 ms, the exact sum, lies
// within the calculated ΔQ's bounds: no divergence beyond them (on 1 ms
// display bins the probes show a, b in bin 10, e2e in bin 21, whatever the
// analysis reads). One at 60 ms has divergence 1.
func divergenceWindows(k int) (stages, same, far, farAlone []Instance) {
	mk := func(probe string, delay time.Duration) Instance {
		return ok(probe, 500*time.Millisecond, delay)
	}
	stages = concat(n(k, mk("a", 10500*time.Microsecond)), n(k, mk("b", 10500*time.Microsecond)))
	same = concat(stages, n(k, mk("e2e", 21*time.Millisecond)))
	farAlone = n(k, mk("e2e", 60*time.Millisecond))
	far = concat(stages, farAlone)
	return stages, same, far, farAlone
}

// TestDivergenceTrigger: with max_divergence alone the trigger tests at
// DefaultDivergenceAlpha. 50 instances per probe: n = 50, m = (1/50 +
// 1/50)⁻¹ = 25, Nₑ = 50·25/75 = 16.7; a divergence of 1 is λ = √16.7 = 4.08,
// p = 2·e^{−2·16.7} ≈ 6e-15, far below 0.01.
func TestDivergenceTrigger(t *testing.T) {
	stages, same, far, farAlone := divergenceWindows(50)
	cfg := Config{Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{MaxDivergence: 0.2}}}}
	evs := runWindows(t, cfg, [][]Instance{
		same,
		far,      // fires
		stages,   // no observed e2e: unknown
		far,      // still disarmed
		same,     // re-arms
		farAlone, // no a, b: no calculated ΔQ: unknown
		far,      // fires
	})
	if got := fired(evs, "e2e", TriggerDivergence); !slices.Equal(got, []int{1, 6}) {
		t.Fatalf("divergence trigger fired in windows %v, want [1 6]", got)
	}
	if e := evs[1][0]; e.Observed > 1e-12 || e.Required != DefaultDivergenceAlpha {
		t.Errorf("event = %+v, want observed p ≈ 0, required α = %v", e, DefaultDivergenceAlpha)
	}
}

// TestDivergenceOfFewInstancesIsNotSignificant: the same divergence of 1
// on 2 instances per probe (n = 2, m = 1, Nₑ = 2/3, λ = 0.816, p = 0.52)
// is what two unlucky instances can do: the test does not fire, where the
// old fixed threshold did.
func TestDivergenceOfFewInstancesIsNotSignificant(t *testing.T) {
	_, same, far, _ := divergenceWindows(2)
	cfg := Config{Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{MaxDivergence: 0.2}}}}
	if got := fired(runWindows(t, cfg, [][]Instance{same, far, far}), "e2e", TriggerDivergence); len(got) != 0 {
		t.Fatalf("divergence trigger fired in windows %v on 2 instances", got)
	}
	r := single(t, cfg, far)
	p := probeOf(t, r, "e2e")
	ks := p.DivergenceTest
	if !p.HasDivergence || ks.Distance != 1 || ks.N != 2 || ks.M != 1 || math.Abs(ks.P-0.5175) > 1e-3 {
		// Q(√(2/3)) = 2·(e^{−4/3} − e^{−16/3} + e^{−12} …) = 2·(0.26360 − 0.00483 + 0.00001) = 0.5175.
		t.Errorf("test = %+v, want D 1, n 2, m 1, p 0.5175", ks)
	}
}

// TestDivergenceWindowsAndFloor: divergence::windows = 3 fires on the third
// consecutive significant window; a window without a test does not break
// the run, one that is not significant does. A max_divergence floor above
// the distance keeps a significant divergence from firing.
func TestDivergenceWindowsAndFloor(t *testing.T) {
	stages, same, far, _ := divergenceWindows(50)
	cfg := Config{Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{
		Divergence: DivergenceTrigger{Alpha: 0.001, Windows: 3},
	}}}}
	evs := runWindows(t, cfg, [][]Instance{far, far, same, far, stages, far, far, far})
	if got := fired(evs, "e2e", TriggerDivergence); !slices.Equal(got, []int{6}) {
		t.Fatalf("divergence trigger fired in windows %v, want [6] (the third of far, _, far, far)", got)
	}
	if e := evs[6][0]; e.Required != 0.001 {
		t.Errorf("event = %+v, want required 0.001", e)
	}
	cfg.Probes["e2e"] = ProbeConfig{Triggers: Triggers{MaxDivergence: 1, Divergence: DivergenceTrigger{Alpha: 0.001}}}
	if got := fired(runWindows(t, cfg, [][]Instance{far, far}), "e2e", TriggerDivergence); len(got) != 0 {
		t.Fatalf("divergence 1 fired above a floor of 1 in windows %v", got)
	}
}

// TestDivergencePooling: pooling 3 windows of 2 instances each tests 6
// against m = (Σ wₖ²/mₖ)⁻¹ = (3·(1/3)²/1)⁻¹ = 3 (wₖ = 1/3, mₖ = 1):
// Nₑ = 6·3/9 = 2, λ = √2, p = 0.0366 (deltaq's TestNewKSTest). The first
// window alone has p = 0.5175, the second pools 2 windows (n = 4, m = 2,
// Nₑ = 4/3, λ = 1.155, p = 0.1389), the fourth still 3.
func TestDivergencePooling(t *testing.T) {
	_, _, far, _ := divergenceWindows(2)
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{
		Divergence: DivergenceTrigger{Pool: 3},
	}}}}
	e := newEngine(t, cfg, at(time.Second))
	want := []struct {
		pooled int
		p      float64
	}{{1, 0.5175}, {2, 0.1389}, {3, 0.0366}, {3, 0.0366}}
	for w, wt := range want {
		ins := slices.Clone(far)
		for i := range ins {
			ins[i].Start += int64(w) * int64(time.Second)
			ins[i].End += int64(w) * int64(time.Second)
		}
		addAll(e, ins...)
		res := e.Advance(at(time.Duration(w+2) * time.Second))
		p := probeOf(t, res[0], "e2e")
		if p.DivergencePooled != wt.pooled || math.Abs(p.DivergenceTest.P-wt.p) > 1e-3 || p.DivergenceTest.Distance != 1 {
			t.Errorf("window %d: pooled %d, test %+v; want %d windows, D 1, p %v", w, p.DivergencePooled, p.DivergenceTest, wt.pooled, wt.p)
		}
	}
}

func TestSnapshotBeforeAndAfterTrigger(t *testing.T) {
	s := ok("p", 500*time.Millisecond, 2*time.Millisecond)
	cfg := Config{
		Probes:   map[string]ProbeConfig{"p": {Triggers: Triggers{MaxInstances: 1}}},
		Snapshot: SnapshotConfig{Enabled: true, Before: 2, After: 2 * time.Second}, // 2 windows
	}
	cfg.Interval, cfg.Lag = time.Second, time.Second
	e := newEngine(t, cfg, at(time.Second))
	var snaps []*Snapshot
	var completedIn []int
	for w, count := range []int{1, 1, 1, 2, 1, 3, 1, 1, 1} { // load fires in 3; 5 joins
		ins := n(count, s)
		for i := range ins {
			ins[i].Start += int64(w) * int64(time.Second)
			ins[i].End += int64(w) * int64(time.Second)
		}
		addAll(e, ins...)
		for _, r := range e.Advance(at(time.Duration(w+2) * time.Second)) {
			if len(r.Snapshots) > 0 {
				completedIn = append(completedIn, w)
			}
			snaps = append(snaps, r.Snapshots...)
		}
	}
	if len(snaps) != 1 || !slices.Equal(completedIn, []int{5}) {
		t.Fatalf("snapshots completed in windows %v, want one in window 5", completedIn)
	}
	sn := snaps[0]
	if len(sn.Windows) != 5 || !sn.Windows[0].Start.Equal(at(time.Second)) || !sn.Windows[4].Start.Equal(at(5*time.Second)) {
		var starts []string
		for _, w := range sn.Windows {
			starts = append(starts, fmt.Sprint(w.Start.Sub(t0)))
		}
		t.Errorf("snapshot windows start at %v, want 1s…5s (2 before, the trigger's, 2 after)", starts)
	}
	// The trigger of window 5 fired while the snapshot was recording: it
	// joins it instead of starting another.
	if len(sn.Triggers) != 2 || !sn.Triggers[0].Time.Equal(at(4*time.Second)) || !sn.Triggers[1].Time.Equal(at(6*time.Second)) {
		t.Errorf("snapshot triggers = %+v, want the load triggers of windows 3 and 5", sn.Triggers)
	}
	if sn.Windows[2].Probes[0].Counts.Success != 2 || sn.Windows[2].Probes[0].Observed == nil {
		t.Errorf("trigger window in the snapshot = %+v", sn.Windows[2].Probes[0])
	}
}

// TestDivergencePaired: with divergence::paired the calculated ΔQ of
// components measured on the probe's own instances counts as exact (m =
// +Inf): 2 instances of each probe, D = 1, Nₑ = n = 2, λ = √2, p = 0.0366.
// A component with fewer instances than the probe (a: 1, so the pairing
// is partial) falls back to the unpaired m = (1/1 + 1/2)⁻¹ = 2/3.
func TestDivergencePaired(t *testing.T) {
	_, _, far, _ := divergenceWindows(2)
	cfg := Config{Diagram: "e2e = a -> b;", Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{
		Divergence: DivergenceTrigger{Paired: true},
	}}}}
	ks := probeOf(t, single(t, cfg, far), "e2e").DivergenceTest
	if !math.IsInf(ks.M, 1) || ks.Effective != 2 || math.Abs(ks.P-0.0366) > 1e-4 {
		t.Errorf("paired: %+v, want m +Inf, Nₑ 2, p 0.0366", ks)
	}
	ks = probeOf(t, single(t, cfg, far[1:]), "e2e").DivergenceTest
	if math.Abs(ks.M-2.0/3) > 1e-12 {
		t.Errorf("partially paired: m = %v, want 2/3", ks.M)
	}
}
