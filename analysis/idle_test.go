// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// idleConfig is a gateway's configuration: a, pinned, with a QTA and a
// Quality of Outcome requirement with a minimum rate (a window without
// instances scores 0 on it); b configured without a layout (it takes the
// first window's).
func idleConfig() Config {
	const ms = time.Millisecond
	qoo := QoOConfig{
		ROP:     QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 20 * ms}, {P: 0.9, Delay: 50 * ms}}, MaxFailure: 0.1},
		CPUP:    QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 60 * ms}, {P: 0.9, Delay: 90 * ms}}, MaxFailure: 0.5},
		MinRate: 20,
	}
	return Config{Interval: time.Second, Lag: time.Second, History: 4,
		Probes: map[string]ProbeConfig{
			"a": {DMax: testDMax, Bins: testBins, QoO: qoo,
				QTA: QTA{Points: []QTAPoint{{Delay: 20 * ms, P: 0.6}}, MaxFailure: 0.1}},
			"b": {},
		}}
}

// TestIdleAgentCounts: an agent that says it saw no instance in a window
// (AddIdle) counts among its contributors beside the agents whose windows
// were merged, once however it counted; an agent that says nothing (down,
// or its word lost) does not.
func TestIdleAgentCounts(t *testing.T) {
	e := newEngine(t, idleConfig(), t0)
	win := func(source string, k int) *Window {
		counts := make([]uint64, testBins)
		counts[4] = 3
		w := float64(testDMax) / float64(testBins) / 1e9
		return &Window{Probe: "a", Start: at(time.Duration(k) * time.Second), End: at(time.Duration(k+1) * time.Second),
			DMaxNs: int64(testDMax), Bins: testBins, BinCounts: counts, SuccessSum: 3 * 4.5 * w, Source: source, SourceStart: 1}
	}
	idle := func(source string, k int) {
		t.Helper()
		if c := e.AddIdle(source, at(time.Duration(k)*time.Second), at(time.Duration(k+1)*time.Second), 1); c != ContributionIdle {
			t.Fatalf("%s idle in window %d: %v", source, k, c)
		}
	}
	add := func(w *Window) {
		t.Helper()
		if c := e.AddWindow(w); c != ContributionAccepted {
			t.Fatalf("%s's window %v: %v", w.Source, w.Start, c)
		}
	}
	var got []int
	advance := func(k int) {
		for _, r := range e.Advance(at(time.Duration(k+2) * time.Second)) {
			got = append(got, r.Contributors)
		}
	}
	// Window 0: one busy agent, one idle. Window 1: both idle. Window 2:
	// the second agent says nothing. Window 3: neither does. Window 4: an
	// agent's word and its window both (it counts once).
	add(win("busy", 0))
	idle("quiet", 0)
	advance(0)
	idle("busy", 1)
	idle("quiet", 1)
	advance(1)
	idle("busy", 2)
	advance(2)
	advance(3)
	add(win("busy", 4))
	idle("busy", 4)
	advance(4)
	// The window before 0, open at the engine's start, had no one.
	if want := []int{0, 2, 2, 1, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("contributors %v, want %v", got, want)
	}
	st := e.Stats()
	if st.Counted != 6 || st.Dropped != (Drops{}) || st.Contributions[ContributionIdle] != 5 || st.Contributions[ContributionAccepted] != 2 {
		t.Errorf("counted %d, dropped %v, contributions %v: want the two windows' 6 instances, 2 accepted, 5 idle",
			st.Counted, st.Dropped, st.Contributions)
	}
}

// TestIdleRefusals: an idle word of no agent, of a name too long, of
// bounds that are no open window of the engine, or delivered again (the
// same agent and start), is refused as a window would be; the same agent
// restarted (a later start) and an agent of no start count. Idle agents
// take places of their own, up to max_agents: they never refuse a busy
// agent's window.
func TestIdleRefusals(t *testing.T) {
	cfg := idleConfig()
	cfg.Gateway.MaxAgents = 3
	e := newEngine(t, cfg, at(2*time.Second))
	k1, k2 := at(time.Second), at(2*time.Second)
	for _, c := range []struct {
		name        string
		source      string
		start, end  time.Time
		sourceStart int64
		want        Contribution
	}{
		{"an agent", "x", k1, k2, 100, ContributionIdle},
		{"the same again", "x", k1, k2, 100, ContributionDuplicate},
		{"the agent restarted", "x", k1, k2, 200, ContributionIdle},
		{"no start", "y", k1, k2, 0, ContributionIdle},
		{"no start, again", "y", k1, k2, 0, ContributionIdle},
		{"no agent named", "", k1, k2, 100, ContributionInvalid},
		{"a name too long", strings.Repeat("n", MaxSourceLength+1), k1, k2, 100, ContributionAgentInvalid},
		{"half a window", "x", k1.Add(500 * time.Millisecond), k2.Add(500 * time.Millisecond), 100, ContributionMisaligned},
		{"two windows", "x", k1, k2.Add(time.Second), 100, ContributionMisaligned},
		{"a closed window", "x", at(0), k1, 100, ContributionLate},
		{"far ahead", "x", at(100 * time.Second), at(101 * time.Second), 100, ContributionEarly},
		{"a third agent", "z", k1, k2, 100, ContributionIdle},
		{"a fourth, beyond max_agents", "w", k1, k2, 100, ContributionAgentLimit},
	} {
		if got := e.AddIdle(c.source, c.start, c.end, c.sourceStart); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Three busy agents' windows all merge beside the three idle ones.
	for _, src := range []string{"p", "q", "r"} {
		counts := make([]uint64, testBins)
		counts[0] = 1
		w := Window{Probe: "a", Start: k1, End: k2, DMaxNs: int64(testDMax), Bins: testBins, BinCounts: counts,
			SuccessSum: 0.0005, Source: src, SourceStart: 1}
		if got := e.AddWindow(&w); got != ContributionAccepted {
			t.Errorf("busy agent %s: %v, want accepted", src, got)
		}
	}
	r := e.Advance(at(3 * time.Second))
	if len(r) != 1 || r[0].Contributors != 6 {
		t.Fatalf("%d windows, want 1 of 6 contributors (3 busy, 3 idle): %+v", len(r), r)
	}
	if st := e.Stats(); st.Counted != 3 || st.Dropped != (Drops{}) {
		t.Errorf("counted %d, dropped %v: the idle words count no instance and drop none", st.Counted, st.Dropped)
	}
	if ContributionIdle.String() != "idle" {
		t.Errorf("ContributionIdle is %q", ContributionIdle.String())
	}
}

// TestIdleChangesNoAnalysis: two agents send their windows (WindowOf) to
// two gateways, and, for each window they close without instances, their
// idle word (AddIdle) to the first gateway alone. Agent 0 sees every
// instance of windows 0 to 2, agent 1 none; neither sees any in the
// window before (open at their start) and in the two after. The two
// gateways' results are the same in every
// field — counts, ΔQs, quantiles, QTA verdicts, bands, Quality of Outcome
// scores (a's minimum rate scores its windows without instances 0 on
// both), the probes tracked, b's layout — but for the contributors: two
// in every window with the idle words; without them one in the windows of
// instances, else none.
func TestIdleChangesNoAnalysis(t *testing.T) {
	const windows = 6
	withIdle := newEngine(t, idleConfig(), t0)
	without := newEngine(t, idleConfig(), t0)
	acfg := idleConfig()
	acfg.WindowCounts = true
	acfg.Probes["c"] = ProbeConfig{DMax: testDMax, Bins: testBins} // a probe the gateways do not name
	agents := []*Engine{newEngine(t, acfg, t0), newEngine(t, acfg, t0)}
	addAll(agents[0], mergeWorkload(11, 3)...)

	var got, want []*Result
	for w := 1; w <= windows+1; w++ {
		now := at(time.Duration(w) * time.Second)
		for i, a := range agents {
			source := fmt.Sprintf("agent-%d", i)
			for _, r := range a.Advance(now) {
				sent := false
				for j := range r.Probes {
					if win, ok := WindowOf(r, &r.Probes[j], source); ok {
						sent = true
						for _, g := range []*Engine{withIdle, without} {
							wc := win
							if c := g.AddWindow(&wc); c != ContributionAccepted {
								t.Fatalf("window %v of %s from %s: %v", r.Start, win.Probe, source, c)
							}
						}
					}
				}
				if !sent {
					if c := withIdle.AddIdle(source, r.Start, r.End, 1); c != ContributionIdle {
						t.Fatalf("%s idle in %v: %v", source, r.Start, c)
					}
				}
			}
		}
		got = append(got, withIdle.Advance(now.Add(-time.Second))...)
		want = append(want, without.Advance(now.Add(-time.Second))...)
	}
	if len(got) != windows || len(want) != windows {
		t.Fatalf("%d and %d windows, want %d", len(got), len(want), windows)
	}
	for w := range windows {
		g, o := *got[w], *want[w]
		k := int(g.Start.Sub(t0) / time.Second)
		busy := k >= 0 && k < 3
		wantC := 0
		if busy {
			wantC = 1
		}
		if g.Contributors != 2 || o.Contributors != wantC {
			t.Errorf("window %d: contributors %d with the idle words, %d without; want 2 and %d", k, g.Contributors, o.Contributors, wantC)
		}
		g.Contributors, o.Contributors, g.SteadyContributors, o.SteadyContributors = 0, 0, 0, 0
		if !reflect.DeepEqual(g, o) {
			t.Errorf("window %d: the results differ:\nwith the idle words %+v\nwithout %+v", k, g, o)
		}
		a := probeOf(t, &g, "a")
		if busy && a.Counts.Total() == 0 {
			t.Errorf("window %d: no instance of a", k)
		}
		if !busy && (a.Counts.Total() != 0 || a.QoO == nil || !a.QoO.Observed.OK || a.QoO.Observed.QoO.Score != 0) {
			t.Errorf("window %d without instances: a's counts %+v, QoO %+v: want none, and the score 0 of a rate below min_rate", k, a.Counts, a.QoO)
		}
	}
	if g, o := withIdle.Stats(), without.Stats(); g.Probes != o.Probes || g.Counted != o.Counted || g.Dropped != o.Dropped {
		t.Errorf("stats with the idle words %+v, without %+v", g, o)
	}
}

// TestIdleCarriedAcrossReload: the idle agents of the windows open at a
// configuration reload (Adopt) still count when those windows close in the
// new engine, beside the agents whose windows were merged.
func TestIdleCarriedAcrossReload(t *testing.T) {
	cfg := idleConfig()
	old := newEngine(t, cfg, t0)
	counts := make([]uint64, testBins)
	counts[0] = 1
	w := Window{Probe: "a", Start: at(0), End: at(time.Second), DMaxNs: int64(testDMax), Bins: testBins, BinCounts: counts,
		SuccessSum: 0.0005, Source: "busy", SourceStart: 1}
	if c := old.AddWindow(&w); c != ContributionAccepted {
		t.Fatalf("busy's window: %v", c)
	}
	if c := old.AddIdle("quiet", at(0), at(time.Second), 1); c != ContributionIdle {
		t.Fatalf("quiet's word: %v", c)
	}
	e := newEngine(t, cfg, at(500*time.Millisecond))
	e.Adopt(old)
	res := e.Advance(at(2 * time.Second))
	if len(res) == 0 {
		t.Fatal("no window closed")
	}
	if r := res[len(res)-1]; !r.Start.Equal(at(0)) || r.Contributors != 2 {
		t.Errorf("window from %v of %d contributors: want window 0 of 2", r.Start, r.Contributors)
	}
}

// TestIdleWordsBounded: a sender that claims, in one window, a million
// idle words of one agent, each of another start (a restart apiece), and
// words of ten thousand agents holds about nothing: one entry an agent,
// at most max_agents agents a window (the rest agent_limit), whatever the
// starts. Before, every start of a word was kept (a print a word, to tell
// a repeat): the million words grew the heap by about 40 MB until the
// window closed, and a sender at line rate could grow it without bound.
func TestIdleWordsBounded(t *testing.T) {
	e := newEngine(t, idleConfig(), at(2*time.Second))
	k1, k2 := at(time.Second), at(2*time.Second)
	base := liveHeap()
	const starts, sources = 1 << 20, 10_000
	for i := range starts {
		if c := e.AddIdle("x", k1, k2, int64(i+1)); c != ContributionIdle {
			t.Fatalf("word %d of x: %v, want idle", i, c)
		}
	}
	for i := range sources {
		want := ContributionIdle
		if i >= DefaultMaxAgents-1 {
			want = ContributionAgentLimit
		}
		if c := e.AddIdle(fmt.Sprintf("agent-%d", i), k1, k2, 1); c != want {
			t.Fatalf("agent-%d: %v, want %v", i, c, want)
		}
	}
	grown := int64(liveHeap()) - int64(base)
	if grown > 1<<20 {
		t.Errorf("%d idle words of one agent and %d agents' words in one window grew the heap by %d bytes, want at most 1 MiB",
			starts, sources, grown)
	}
	if c := e.AddIdle("x", k1, k2, starts); c != ContributionDuplicate {
		t.Errorf("the last word of x again: %v, want duplicate", c)
	}
	r := e.Advance(at(3 * time.Second))
	if len(r) != 1 || r[0].Contributors != DefaultMaxAgents {
		t.Fatalf("want one window of %d contributors (max_agents): %d windows %+v", DefaultMaxAgents, len(r), r)
	}
	t.Logf("the heap grew by %d bytes", grown)
}

// TestIdleWordRepeatedAfterRestart: an agent's idle word delivered again
// (a relay's retry) after the word of the same agent restarted under its
// name is a duplicate, as a window would be (its print holds its start):
// before, the slot kept the start of the last word alone, and the repeat
// counted as idle.
func TestIdleWordRepeatedAfterRestart(t *testing.T) {
	e := newEngine(t, idleConfig(), at(2*time.Second))
	k1, k2 := at(time.Second), at(2*time.Second)
	for _, c := range []struct {
		name  string
		start int64
		want  Contribution
	}{
		{"the word", 100, ContributionIdle},
		{"the restarted agent's", 200, ContributionIdle},
		{"the first again", 100, ContributionDuplicate},
		{"the restarted agent's again", 200, ContributionDuplicate},
	} {
		if got := e.AddIdle("x", k1, k2, c.start); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	st := e.Stats()
	if st.Contributions[ContributionIdle] != 2 || st.Contributions[ContributionDuplicate] != 2 {
		t.Errorf("contributions %v: want 2 idle, 2 duplicate", st.Contributions)
	}
	if r := e.Advance(at(3 * time.Second)); len(r) != 1 || r[0].Contributors != 1 {
		t.Fatalf("want one window of one contributor: %+v", r)
	}
}

// TestAgentsSharingAName: two agents running at once under one name (one
// service.instance.id) count as one contributor, as agents are counted by
// name (README, "Scaling out"), but both windows merge — they differ in
// their start — and the window names the name as shared
// (Result.SharedSources), which the gateway warns about. An agent
// restarted under its name in the window (its start in the window) gives
// two starts too, but is no shared name, nor are two starts of one name
// with windows of different probes (two connectors of one collector) or
// idle words alone; an agent restarted under a new name is two
// contributors, one of them up throughout the window
// (SteadyContributors).
func TestAgentsSharingAName(t *testing.T) {
	cfg := idleConfig()
	cfg.Probes["c"] = ProbeConfig{DMax: testDMax, Bins: testBins}
	e := newEngine(t, cfg, at(9*time.Second))
	win := func(probe, source string, k int, start int64) *Window {
		counts := make([]uint64, testBins)
		counts[4] = 3
		w := float64(testDMax) / float64(testBins) / 1e9
		return &Window{Probe: probe, Start: at(time.Duration(k) * time.Second), End: at(time.Duration(k+1) * time.Second),
			DMaxNs: int64(testDMax), Bins: testBins, BinCounts: counts, SuccessSum: 3 * 4.5 * w, Source: source, SourceStart: start}
	}
	add := func(w *Window) {
		t.Helper()
		if c := e.AddWindow(w); c != ContributionAccepted {
			t.Fatalf("%s's window %v of start %d: %v", w.Source, w.Start, w.SourceStart, c)
		}
	}
	idle := func(source string, k int, start int64) {
		t.Helper()
		if c := e.AddIdle(source, at(time.Duration(k)*time.Second), at(time.Duration(k+1)*time.Second), start); c != ContributionIdle {
			t.Fatalf("%s idle in window %d: %v", source, k, c)
		}
	}
	long := at(0).UnixNano() // up since second 0
	// Window 9: "node" is two agents of starts long and long+1, each with
	// a window of a (and one of c); "other" is one agent, "pair" one
	// collector of two connectors begun a microsecond apart, one of a
	// probe, one of the other.
	add(win("c", "node", 9, long+1))
	add(win("a", "node", 9, long+1))
	add(win("a", "node", 9, long))
	add(win("a", "other", 9, long))
	add(win("a", "pair", 9, long))
	add(win("c", "pair", 9, long+1000))
	// Window 10: "node" again; "mixed" two agents of which one sees c
	// alone, the other a and c, the first's window first; "other"
	// restarts under its name at 10.4 s, and "third" under a new name
	// ("third-2") at 10.6 s.
	add(win("a", "node", 10, long))
	add(win("a", "node", 10, long+1))
	add(win("c", "mixed", 10, long+5))
	add(win("a", "mixed", 10, long))
	add(win("c", "mixed", 10, long))
	add(win("a", "other", 10, long))
	add(win("a", "other", 10, at(10*time.Second+400*time.Millisecond).UnixNano()))
	idle("third", 10, long)
	idle("third-2", 10, at(10*time.Second+600*time.Millisecond).UnixNano())
	// Window 11: the two agents of "node" idle.
	idle("node", 11, long)
	idle("node", 11, long+1)
	var got []*Result
	for s := 11; s <= 13; s++ {
		got = append(got, e.Advance(at(time.Duration(s)*time.Second))...)
	}
	type summary struct {
		Start, Contributors, Steady int
		Shared                      []string
		Successes                   int64
	}
	var sums []summary
	for _, r := range got {
		if r.Start.Before(at(9 * time.Second)) {
			continue // open at the engine's start, empty
		}
		sums = append(sums, summary{int(r.Start.Sub(t0) / time.Second), r.Contributors, r.SteadyContributors, r.SharedSources,
			probeOf(t, r, "a").Counts.Success})
	}
	want := []summary{
		{9, 3, 3, []string{"node"}, 12},
		{10, 5, 4, []string{"mixed", "node"}, 15},
		{11, 1, 1, nil, 0},
	}
	if !reflect.DeepEqual(sums, want) {
		t.Errorf("windows %+v\nwant %+v", sums, want)
	}
}
