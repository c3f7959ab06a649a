// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// mergeWorkload returns seeded instances of probes a and b over the given
// windows of one second: successes of random delays (some beyond dMax,
// which become timeouts), failures and timeouts.
func mergeWorkload(seed uint64, windows int) []Instance {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []Instance
	for w := range windows {
		for i := range 300 {
			probe := "a"
			if i%3 == 0 {
				probe = "b"
			}
			end := time.Duration(w)*time.Second + time.Duration(r.IntN(1000))*time.Millisecond
			switch r.IntN(20) {
			case 0:
				out = append(out, failed(probe, end))
			case 1:
				out = append(out, timedOut(probe, end-testDMax-time.Millisecond))
			default:
				out = append(out, ok(probe, end, time.Duration(r.ExpFloat64()*20e6)))
			}
		}
	}
	return out
}

// TestGatewayMergeEqualsOneEngine: three agents each see a third of the
// instances; a gateway merges their windows (AddWindow of WindowOf) and
// reports, window for window, exactly what one engine that saw every
// instance reports: counts, bin counts, sums, the observed ΔQ and its
// quantiles, the band, the QTA verdict.
func TestGatewayMergeEqualsOneEngine(t *testing.T) {
	const windows = 6
	qta := QTA{Points: []QTAPoint{{Delay: 20 * time.Millisecond, P: 0.6}}, MaxFailure: 0.1}
	cfg := Config{Interval: time.Second, Lag: time.Second, History: 4,
		Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins, QTA: qta}, "b": {DMax: testDMax, Bins: testBins}}}
	single := newEngine(t, cfg, t0)
	gateway := newEngine(t, cfg, t0)
	agents := make([]*Engine, 3)
	acfg := cfg
	acfg.WindowCounts = true // agents that send their windows
	for i := range agents {
		agents[i] = newEngine(t, acfg, t0)
	}
	ins := mergeWorkload(7, windows)
	addAll(single, ins...)
	for i := range ins {
		addAll(agents[i%3], ins[i])
	}

	var want, got []*Result
	for w := 1; w <= windows+1; w++ {
		now := at(time.Duration(w) * time.Second)
		want = append(want, single.Advance(now)...)
		for i, a := range agents {
			for _, r := range a.Advance(now) {
				for j := range r.Probes {
					if win, ok := WindowOf(r, &r.Probes[j], fmt.Sprintf("agent-%d", i)); ok {
						if c := gateway.AddWindow(&win); c != ContributionAccepted {
							t.Fatalf("window %v of %s from agent %d: %v", r.Start, win.Probe, i, c)
						}
					}
				}
			}
		}
		// The gateway closes a window once the agents' have arrived: its
		// lag is the agents' plus the transit, here one interval more.
		got = append(got, gateway.Advance(now.Add(-time.Second))...)
	}
	got = append(got, gateway.Advance(at(time.Duration(windows+2)*time.Second))...)
	if len(got) < windows || len(want) < windows {
		t.Fatalf("%d gateway and %d single windows, want at least %d", len(got), len(want), windows)
	}
	for w := range windows {
		g, s := got[w], want[w]
		if !g.Start.Equal(s.Start) {
			t.Fatalf("window %d: gateway %v, single %v", w, g.Start, s.Start)
		}
		if g.Contributors != 3 && sumCounts(s) > 0 {
			t.Errorf("window %d: %d contributors, want 3", w, g.Contributors)
		}
		for _, name := range []string{"a", "b"} {
			gp, sp := probeOf(t, g, name), probeOf(t, s, name)
			if gp.Counts != sp.Counts || !reflect.DeepEqual(gp.BinCounts, sp.BinCounts) {
				t.Errorf("window %d probe %s: gateway %+v %v, single %+v %v", w, name, gp.Counts, gp.BinCounts, sp.Counts, sp.BinCounts)
			}
			if diff := gp.SuccessSum - sp.SuccessSum; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("window %d probe %s: success sum %v, want %v", w, name, gp.SuccessSum, sp.SuccessSum)
			}
			if !reflect.DeepEqual(gp.Quantiles, sp.Quantiles) {
				t.Errorf("window %d probe %s: quantiles %+v, want %+v", w, name, gp.Quantiles, sp.Quantiles)
			}
			if (gp.QTACheck == nil) != (sp.QTACheck == nil) || (gp.QTACheck != nil && gp.QTACheck.OK != sp.QTACheck.OK) {
				t.Errorf("window %d probe %s: QTA verdicts differ", w, name)
			}
			if (gp.Band == nil) != (sp.Band == nil) || (gp.Band != nil && !reflect.DeepEqual(gp.Band.Mean, sp.Band.Mean)) {
				t.Errorf("window %d probe %s: bands differ", w, name)
			}
		}
	}
	if st := gateway.Stats(); st.Contributions[ContributionAccepted] == 0 || st.Counted != single.Stats().Counted {
		t.Errorf("gateway counted %d instances in %d windows, single %d", st.Counted, st.Contributions[ContributionAccepted], single.Stats().Counted)
	}
}

func sumCounts(r *Result) int64 {
	var n int64
	for i := range r.Probes {
		n += r.Probes[i].Counts.Total()
	}
	return n
}

// TestAddWindowRefusals: a contribution that cannot be merged exactly is
// refused, its instances counted as dropped, and nothing is mixed.
func TestAddWindowRefusals(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: time.Second,
		Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins}}}
	e := newEngine(t, cfg, at(2*time.Second))
	win := func(start time.Duration, bins int) Window {
		return Window{Probe: "a", Start: at(start), End: at(start + time.Second), DMaxNs: int64(testDMax), Bins: bins,
			BinCounts: make([]uint64, bins), Timeouts: 2, Source: "x"}
	}
	cases := []struct {
		name string
		w    Window
		want Contribution
	}{
		{"accepted", win(time.Second, testBins), ContributionAccepted},
		{"late: window 0 closed at 1 s + lag", win(0, testBins), ContributionLate},
		{"early", win(10*time.Second, testBins), ContributionEarly},
		{"misaligned start", func() Window { w := win(time.Second, testBins); w.Start = w.Start.Add(time.Millisecond); return w }(), ContributionMisaligned},
		{"another interval", func() Window { w := win(time.Second, testBins); w.End = w.End.Add(time.Second); return w }(), ContributionMisaligned},
		{"another layout", func() Window { w := win(time.Second, 50); w.BinCounts = make([]uint64, 50); return w }(), ContributionLayoutMismatch},
		{"counts that do not fit", func() Window { w := win(time.Second, testBins); w.BinCounts = w.BinCounts[:3]; return w }(), ContributionInvalid},
		{"no probe", func() Window { w := win(time.Second, testBins); w.Probe = ""; return w }(), ContributionInvalid},
	}
	for _, c := range cases {
		w := c.w
		if got := e.AddWindow(&w); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	st := e.Stats()
	if st.Counted != 2 {
		t.Errorf("counted %d instances, want the accepted window's 2", st.Counted)
	}
	if st.Dropped[DropTooLate] != 2 || st.Dropped[DropTooEarly] != 2 || st.Dropped[DropLayoutMismatch] != 2 {
		t.Errorf("drops %v", st.Dropped)
	}
	for c := ContributionAccepted; c < numContributions; c++ {
		if c.String() == "" || c.String()[0] == 'C' {
			t.Errorf("contribution %d has no name", c)
		}
	}
}

// TestDuplicatesAcrossReload: a window an agent delivers again after a
// configuration reload (Adopt) is still a duplicate, whatever probes the
// new configuration adds or removes and whatever index it gives the
// window's probe (the prints are keyed by the probe's key, which it
// keeps); the window of another probe that takes the index, or the key
// the probe had, is no duplicate of it. An idle word again is a duplicate
// too: the idle agents are kept with their starts, not by prints.
func TestDuplicatesAcrossReload(t *testing.T) {
	mk := func(probes ...string) Config {
		cfg := Config{Interval: time.Second, Lag: time.Second, Probes: map[string]ProbeConfig{}}
		for _, p := range probes {
			cfg.Probes[p] = ProbeConfig{DMax: testDMax, Bins: testBins}
		}
		return cfg
	}
	win := func() Window {
		counts := make([]uint64, testBins)
		counts[4] = 3
		return Window{Probe: "b", Start: at(time.Second), End: at(2 * time.Second), DMaxNs: int64(testDMax), Bins: testBins,
			BinCounts: counts, SuccessSum: 3 * 4.5 * float64(testDMax) / float64(testBins) / 1e9, Source: "x", SourceStart: 100}
	}
	for _, c := range []struct {
		name     string
		old, new Config
		want     Contribution
	}{
		{"the same configuration", mk("a", "b"), mk("a", "b"), ContributionDuplicate},
		{"a probe added after them", mk("a", "b"), mk("a", "b", "c"), ContributionDuplicate},
		{"a probe added before them: b's index taken by another", mk("a", "b"), mk("0", "a", "b"), ContributionDuplicate},
		{"a probe removed before b: b's index moves down", mk("a", "b"), mk("b"), ContributionDuplicate},
		{"b removed: carried unconfigured", mk("a", "b"), mk("a"), ContributionDuplicate},
	} {
		old := newEngine(t, c.old, at(2*time.Second))
		w := win()
		if got := old.AddWindow(&w); got != ContributionAccepted {
			t.Fatalf("%s: the first delivery %v", c.name, got)
		}
		if got := old.AddIdle("quiet", at(time.Second), at(2*time.Second), 7); got != ContributionIdle {
			t.Fatalf("%s: the idle word %v", c.name, got)
		}
		e := newEngine(t, c.new, at(2*time.Second))
		e.Adopt(old)
		w = win()
		if got := e.AddWindow(&w); got != c.want {
			t.Errorf("%s: the window again after the reload %v, want %v", c.name, got, c.want)
		}
		if got := e.AddIdle("quiet", at(time.Second), at(2*time.Second), 7); got != ContributionDuplicate {
			t.Errorf("%s: the idle word again %v, want duplicate", c.name, got)
		}
		// The same agent's window of each other probe, of b's index
		// before or after the reload, counts.
		for name := range c.new.Probes {
			if name == "b" {
				continue
			}
			w = win()
			w.Probe = name
			if got := e.AddWindow(&w); got != ContributionAccepted {
				t.Errorf("%s: the agent's window of %s %v, want accepted", c.name, name, got)
			}
		}
	}
}

// TestDuplicateWindowsCountOnce: an agent's window delivered twice (an
// exporter's retry of a request the gateway had taken) counts once, the
// repeat refused as duplicate and its instances neither counted nor
// dropped; the same window from another agent, a window of the same agent
// restarted under its name (a later start), windows of no named agent and
// windows without a start (older agents) all count.
func TestDuplicateWindowsCountOnce(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: time.Second,
		Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins}}}
	e := newEngine(t, cfg, at(2*time.Second))
	win := func(source string, start int64) Window {
		counts := make([]uint64, testBins)
		counts[4] = 3
		w := float64(testDMax) / float64(testBins) / 1e9
		return Window{Probe: "a", Start: at(time.Second), End: at(2 * time.Second), DMaxNs: int64(testDMax), Bins: testBins,
			BinCounts: counts, SuccessSum: 3 * 4.5 * w, Timeouts: 1, Source: source, SourceStart: start}
	}
	for _, c := range []struct {
		name string
		w    Window
		want Contribution
	}{
		{"first", win("x", 100), ContributionAccepted},
		{"the same again", win("x", 100), ContributionDuplicate},
		{"another agent's alike", win("y", 100), ContributionAccepted},
		{"the same agent restarted", win("x", 200), ContributionAccepted},
		{"no agent named", win("", 100), ContributionAccepted},
		{"no agent named, again", win("", 100), ContributionAccepted},
		{"an older agent's, without a start", win("z", 0), ContributionAccepted},
		{"the older agent's again", win("z", 0), ContributionAccepted},
	} {
		w := c.w
		if got := e.AddWindow(&w); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	st := e.Stats()
	if st.Counted != 7*4 || st.Dropped != (Drops{}) || st.Contributions[ContributionDuplicate] != 1 {
		t.Errorf("counted %d, dropped %v, contributions %v: want 28 counted (7 windows of 4), none dropped, one duplicate",
			st.Counted, st.Dropped, st.Contributions)
	}
	// The next window starts afresh.
	w := win("x", 100)
	w.Start, w.End = at(2*time.Second), at(3*time.Second)
	if got := e.AddWindow(&w); got != ContributionAccepted {
		t.Errorf("the next window's: %v, want accepted", got)
	}
}
