// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// gwWindow returns a window of probe job for [start, start+1s) from
// source, of dMax dmax and bins bins, with 3 successes in bin 0 (sum: 3
// delays of half a bin) and one timeout.
func gwWindow(source string, start, dmax time.Duration, bins int) Window {
	c := make([]uint64, bins)
	c[0] = 3
	return Window{Probe: "job", Start: at(start), End: at(start + time.Second), DMaxNs: int64(dmax), Bins: bins,
		BinCounts: c, SuccessSum: 3 * dmax.Seconds() / float64(bins) / 2, Timeouts: 1, Source: source}
}

// gateway returns an engine with 1 s windows, lag 2 s, at 2 s, with no
// configured layout for job.
func gateway(t *testing.T, g GatewayConfig) *Engine {
	return newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: g}, at(2*time.Second))
}

// TestForgedWindowSetsNoLayout: the attack — one window of job
// with dMax 1 ms and 1 bin, sent before the agents — no longer fixes the
// probe's layout: it is one vote, short of the quorum of two agents; the
// agents' windows (100 ms, 100 bins) agree and are merged, and the forger's
// later windows are refused as another layout. Windows far in the past or
// future, or refused for another reason, are not even votes: two forged
// agents sending late windows set nothing.
func TestForgedWindowSetsNoLayout(t *testing.T) {
	e := gateway(t, GatewayConfig{})
	for _, src := range []string{"forger-1", "forger-2"} {
		for _, start := range []time.Duration{-100000 * time.Second, 100000 * time.Second} {
			w := gwWindow(src, start, time.Millisecond, 1)
			if c := e.AddWindow(&w); c != ContributionLate && c != ContributionEarly {
				t.Fatalf("a window 100,000 intervals away: %v", c)
			}
		}
		w := gwWindow(src, time.Second, time.Millisecond, 1)
		w.SuccessSum = math.NaN()
		if c := e.AddWindow(&w); c != ContributionInvalid {
			t.Fatalf("a window with a NaN sum: %v", c)
		}
	}
	if _, ok := e.Layout("job"); ok {
		t.Fatal("refused windows set a layout")
	}
	forged := gwWindow("forger-1", time.Second, time.Millisecond, 1)
	if c := e.AddWindow(&forged); c != ContributionUnagreed {
		t.Fatalf("the forged window: %v, want unagreed", c)
	}
	a := gwWindow("agent-a", time.Second, testDMax, testBins)
	if c := e.AddWindow(&a); c != ContributionUnagreed {
		t.Fatalf("the first agent's window: %v, want unagreed", c)
	}
	b := gwWindow("agent-b", time.Second, testDMax, testBins)
	if c := e.AddWindow(&b); c != ContributionAccepted {
		t.Fatalf("the second agent's window: %v, want accepted (agreed)", c)
	}
	if l, ok := e.Layout("job"); !ok || l.DMax() != testDMax || l.Bins != testBins {
		t.Fatalf("layout %v/%d, want the agents' %v/%d", l.DMax(), l.Bins, testDMax, testBins)
	}
	for _, src := range []string{"agent-a", "agent-b"} {
		w := gwWindow(src, 2*time.Second, testDMax, testBins)
		if c := e.AddWindow(&w); c != ContributionAccepted {
			t.Errorf("%s's next window: %v", src, c)
		}
	}
	forged = gwWindow("forger-1", 2*time.Second, time.Millisecond, 1)
	if c := e.AddWindow(&forged); c != ContributionLayoutMismatch {
		t.Errorf("the forger's next window: %v, want layout_mismatch", c)
	}
	res := e.Advance(at(5 * time.Second))
	var got []Counts
	for _, r := range res {
		got = append(got, probeOf(t, r, "job").Counts)
	}
	want := []Counts{{}, {Success: 3, Timeout: 1}, {Success: 6, Timeout: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("windows 0–2 counted %v, want %v", got, want)
	}
	st := e.Stats()
	if st.LayoutsAgreed != 1 || st.LayoutChanges != 0 {
		t.Errorf("layouts agreed %d, changed %d; want 1 and 0", st.LayoutsAgreed, st.LayoutChanges)
	}
	wantFates := Contributions{ContributionAccepted: 3, ContributionLate: 2, ContributionEarly: 2,
		ContributionInvalid: 2, ContributionUnagreed: 2, ContributionLayoutMismatch: 1}
	if st.Contributions != wantFates {
		t.Errorf("fates %v, want %v", st.Contributions, wantFates)
	}
}

// TestPinnedLayoutRefusesOthers: a layout from Config.Probes is never
// voted on, whatever number of agents propose another.
func TestPinnedLayoutRefusesOthers(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: GatewayConfig{LayoutQuorum: 1},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	for _, src := range []string{"a", "b", "c"} {
		w := gwWindow(src, time.Second, time.Millisecond, 1)
		if c := e.AddWindow(&w); c != ContributionLayoutMismatch {
			t.Errorf("%s: %v, want layout_mismatch", src, c)
		}
	}
	w := gwWindow("a", time.Second, testDMax, testBins)
	if c := e.AddWindow(&w); c != ContributionAccepted {
		t.Errorf("the pinned layout: %v", c)
	}
	if st := e.Stats(); st.LayoutsAgreed != 0 || st.LayoutChanges != 0 {
		t.Errorf("%+v", st)
	}
}

// TestAgreedLayoutMovesAtABoundary: two agents of an auto-ranged probe
// re-range at different windows. The gateway keeps the old layout until
// both propose the new one, then moves to it from the first window after
// the last one that holds counts of the old: no window mixes the two, the
// windows proposed early are refused (counted), and every window after the
// switch holds both agents' counts exactly.
func TestAgreedLayoutMovesAtABoundary(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 3 * time.Second}, at(3*time.Second))
	const newDMax, newBins = 50 * time.Millisecond, 10
	send := func(src string, w time.Duration, dmax time.Duration, bins int) Contribution {
		win := gwWindow(src, w, dmax, bins)
		return e.AddWindow(&win)
	}
	// Window 0: both agents in the old layout (agreed by the two).
	send("a", 0, testDMax, testBins)
	send("b", 0, testDMax, testBins)
	// Window 1: a has re-ranged, b not yet.
	if c := send("a", time.Second, newDMax, newBins); c != ContributionLayoutMismatch {
		t.Fatalf("a's early new layout: %v", c)
	}
	if c := send("b", time.Second, testDMax, testBins); c != ContributionAccepted {
		t.Fatalf("b's old layout: %v", c)
	}
	// Window 2: both in the new layout: agreed, from window 2 on.
	if c := send("a", 2*time.Second, newDMax, newBins); c != ContributionLayoutMismatch {
		t.Fatalf("a's new layout before the agreement: %v", c)
	}
	if c := send("b", 2*time.Second, newDMax, newBins); c != ContributionAccepted {
		t.Fatalf("b's new layout, agreed: %v", c)
	}
	if c := send("a", 2*time.Second, newDMax, newBins); c != ContributionAccepted {
		t.Fatalf("a's window 2 again: %v", c)
	}
	// A late window of the old layout cannot go into window 2 any more.
	if c := send("c", 2*time.Second, testDMax, testBins); c != ContributionLayoutMismatch {
		t.Fatalf("an old-layout window after the switch: %v", c)
	}
	res := e.Advance(at(6 * time.Second))
	var bins []int
	var counts []Counts
	for _, r := range res[len(res)-3:] {
		p := probeOf(t, r, "job")
		bins, counts = append(bins, p.Bins), append(counts, p.Counts)
	}
	if want := []int{testBins, testBins, newBins}; !reflect.DeepEqual(bins, want) {
		t.Errorf("windows 0–2 have %v bins, want %v", bins, want)
	}
	if want := []Counts{{Success: 3, Timeout: 1}, {Success: 3, Timeout: 1}, {Success: 6, Timeout: 2}}; !reflect.DeepEqual(counts, want) {
		t.Errorf("windows 0–2 counted %v, want %v", counts, want)
	}
	if st := e.Stats(); st.LayoutsAgreed != 2 || st.LayoutChanges != 1 {
		t.Errorf("layouts agreed %d, changed %d; want 2 and 1", st.LayoutsAgreed, st.LayoutChanges)
	}
}

// TestWindowValuesChecked: the attacks on the values — a NaN sum,
// 2⁶³−1 timeouts — and their kin are refused whole, and the running totals
// never run backwards.
func TestWindowValuesChecked(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second,
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	good := func() Window { return gwWindow("a", time.Second, testDMax, testBins) }
	cases := map[string]func(*Window){
		"NaN sum":                 func(w *Window) { w.SuccessSum = math.NaN() },
		"infinite sum":            func(w *Window) { w.SuccessSum = math.Inf(1) },
		"negative sum":            func(w *Window) { w.SuccessSum = -1 },
		"sum beyond the bins":     func(w *Window) { w.SuccessSum = 1 },
		"2⁶³−1 timeouts":          func(w *Window) { w.Timeouts = math.MaxInt64 },
		"negative failures":       func(w *Window) { w.Failures = -5 },
		"bins that overflow":      func(w *Window) { w.BinCounts[1], w.BinCounts[2] = math.MaxUint64, 2 },
		"too many instances":      func(w *Window) { w.Failures = MaxWindowInstances },
		"sparse out of order":     func(w *Window) { w.BinIndex, w.BinCounts = []int{3, 2}, []uint64{1, 1} },
		"sparse beyond the bins":  func(w *Window) { w.BinIndex, w.BinCounts = []int{testBins}, []uint64{1} },
		"sparse lengths disagree": func(w *Window) { w.BinIndex = []int{0} },
		"a layout of 0 bins":      func(w *Window) { w.Bins, w.BinCounts = 0, nil },
		"a probe name too long":   func(w *Window) { w.Probe = strings.Repeat("p", MaxProbeNameLength+1) },
	}
	for name, spoil := range cases {
		w := good()
		spoil(&w)
		if c := e.AddWindow(&w); c != ContributionInvalid {
			t.Errorf("%s: %v, want invalid", name, c)
		}
	}
	if st := e.Stats(); st.Counted != 0 || st.Contributions[ContributionInvalid] != int64(len(cases)) {
		t.Fatalf("refused windows counted: %+v", st)
	}
	// Windows at the bound are accepted, and the totals saturate.
	for k := range 3 {
		w := gwWindow("a", time.Duration(k+1)*time.Second, testDMax, testBins)
		w.Timeouts = MaxWindowInstances - 3
		if c := e.AddWindow(&w); c != ContributionAccepted {
			t.Fatalf("a window of MaxWindowInstances: %v", c)
		}
		e.Advance(at(time.Duration(k+4) * time.Second))
	}
	var c Counts
	c.Timeout = math.MaxInt64 - 1
	if !c.add(Counts{Timeout: 2, Success: 1}) || c.Timeout != math.MaxInt64 || c.Success != 1 || c.Total() != math.MaxInt64 {
		t.Errorf("saturating add: %+v", c)
	}
}

// TestSparseWindowEqualsDense: a window whose occupied bins are named
// (BinIndex) merges to what its dense form does.
func TestSparseWindowEqualsDense(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: 2 * time.Second,
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}
	dense, sparse := newEngine(t, cfg, at(2*time.Second)), newEngine(t, cfg, at(2*time.Second))
	d := gwWindow("a", time.Second, testDMax, testBins)
	d.BinCounts[40], d.BinCounts[99] = 2, 5
	d.SuccessSum += 2*0.0405 + 5*0.0995
	s := d
	s.BinIndex, s.BinCounts = []int{0, 40, 99}, []uint64{3, 2, 5}
	if c := dense.AddWindow(&d); c != ContributionAccepted {
		t.Fatal(c)
	}
	if c := sparse.AddWindow(&s); c != ContributionAccepted {
		t.Fatal(c)
	}
	a, b := probeOf(t, dense.Flush(at(time.Second))[1], "job"), probeOf(t, sparse.Flush(at(time.Second))[1], "job")
	if !reflect.DeepEqual(a.BinCounts, b.BinCounts) || a.Counts != b.Counts || a.SuccessSum != b.SuccessSum {
		t.Errorf("sparse %v %+v, dense %v %+v", b.BinCounts, b.Counts, a.BinCounts, a.Counts)
	}
}

// TestAgentsBounded: a source name longer than MaxSourceLength is refused;
// a window of an agent beyond Gateway.MaxAgents is refused while the
// agents already in the window go on, and in the next window each takes
// a place anew; anonymous windows never vote.
func TestAgentsBounded(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: GatewayConfig{MaxAgents: 2},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	long := gwWindow(strings.Repeat("x", 1<<20), time.Second, testDMax, testBins)
	if c := e.AddWindow(&long); c != ContributionAgentInvalid {
		t.Errorf("a 1 MiB source: %v", c)
	}
	for _, c := range []struct {
		src  string
		want Contribution
	}{{"a", ContributionAccepted}, {"b", ContributionAccepted}, {"c", ContributionAgentLimit}, {"a", ContributionAccepted}} {
		w := gwWindow(c.src, time.Second, testDMax, testBins)
		if got := e.AddWindow(&w); got != c.want {
			t.Errorf("%s: %v, want %v", c.src, got, c.want)
		}
	}
	if r := e.Advance(at(4 * time.Second)); r[len(r)-1].Contributors != 2 {
		t.Errorf("%d contributors, want 2", r[len(r)-1].Contributors)
	}

	// A window's agents are its own: once it closed, an agent of the last
	// window, found without a look-up while it was open (Engine.known),
	// takes a place anew, in either mode, and the limit holds again.
	single := newEngine(t, Config{Gateway: GatewayConfig{MaxAgents: 1},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(0))
	for round, srcs := range [][]string{{"a", "a", "b"}, {"a", "a", "b"}} {
		for i, src := range srcs {
			w := gwWindow(src, time.Second, testDMax, testBins)
			if got := single.AddWindow(&w); i == 2 && got != ContributionAgentLimit || i < 2 && got != ContributionAccepted {
				t.Errorf("single window %d, %s: %v", round, src, got)
			}
		}
		if r := single.Flush(at(0)); r[0].Contributors != 1 {
			t.Errorf("single window %d: %d contributors, want 1", round, r[0].Contributors)
		}
	}
	for k, srcs := range [][]string{{"a", "b", "c"}, {"c", "a", "b"}} {
		start := time.Duration(k+2) * time.Second
		e.Advance(at(start + 2*time.Second))
		for i, src := range srcs {
			w := gwWindow(src, start, testDMax, testBins)
			if got := e.AddWindow(&w); i == 2 && got != ContributionAgentLimit || i < 2 && got != ContributionAccepted {
				t.Errorf("window %v, %s: %v", start, src, got)
			}
		}
	}

	anon := gateway(t, GatewayConfig{LayoutQuorum: 1})
	w := gwWindow("", time.Second, testDMax, testBins)
	if c := anon.AddWindow(&w); c != ContributionUnagreed {
		t.Errorf("an anonymous window: %v, want unagreed", c)
	}
	if _, err := New(Config{Gateway: GatewayConfig{LayoutQuorum: 3, MaxAgents: 2}}, t0); err == nil {
		t.Error("a quorum above max_agents was accepted")
	}
	if _, err := New(Config{Gateway: GatewayConfig{MaxAgents: MaxAgents + 1}}, t0); err == nil {
		t.Error("max_agents above its bound was accepted")
	}
}

// TestUnagreedProbesAreNotTracked: windows of one forger naming probes no
// configuration names create no probe — no series, no place among
// max_probes — and their votes are forgotten once their windows close; a
// probe two agents agree on is tracked from the window that agreed.
func TestUnagreedProbesAreNotTracked(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second, MaxProbes: 3}, at(2*time.Second))
	for i := range 10 {
		w := gwWindow("forger", time.Second, testDMax, testBins)
		w.Probe = strings.Repeat("j", i+1)
		want := ContributionUnagreed
		if i >= 3 {
			want = ContributionProbeLimit // max_probes pending names
		}
		if c := e.AddWindow(&w); c != want {
			t.Errorf("junk probe %d: %v, want %v", i, c, want)
		}
	}
	if st := e.Stats(); st.Probes != 0 || st.UnconfiguredProbes != 0 {
		t.Errorf("the forger's windows made %d probes", st.Probes)
	}
	// The votes' windows close: the pending probes go, and their places
	// with them.
	r := e.Advance(at(3 * time.Second))
	if n := len(r[len(r)-1].Probes); n != 0 {
		t.Errorf("%d probes in the result", n)
	}
	for _, src := range []string{"a", "b"} {
		w := gwWindow(src, 2*time.Second, testDMax, testBins)
		w.Probe = "real"
		e.AddWindow(&w)
	}
	if st := e.Stats(); st.Probes != 1 || st.Counted != 4 || st.LayoutsAgreed != 1 {
		t.Errorf("after two agents agreed: %+v", st)
	}
}
