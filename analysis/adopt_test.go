// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"testing"
	"time"
)

// TestAdoptCarriesStateAcrossAReload: an engine made from the configuration
// a reload brings takes over the open windows, totals, band history and
// trigger states of the old one; the new QTA applies from the next window;
// a probe whose bins changed closes its open window in the old layout and
// starts afresh in the new one from its next window. No instance is lost
// or counted twice.
func TestAdoptCarriesStateAcrossAReload(t *testing.T) {
	qtaOf := func(p float64) QTA {
		return QTA{Points: []QTAPoint{{Delay: 10 * time.Millisecond, P: p}}}
	}
	oldCfg := Config{Interval: time.Second, History: 5, Probes: map[string]ProbeConfig{
		"a": {DMax: testDMax, Bins: testBins, QTA: qtaOf(0.9), Triggers: Triggers{QTA: true}},
		"b": {DMax: testDMax, Bins: testBins},
	}}
	old := newEngine(t, oldCfg, t0)
	// Windows 0–2 close in the old engine; a's delays of 20 ms break its
	// QTA (F(10 ms) = 0 < 0.9): the qta trigger fires once, in window 0.
	fired := 0
	for w := range 3 {
		base := time.Duration(w) * time.Second
		addAll(old, ok("a", base+100*time.Millisecond, 20*time.Millisecond), ok("b", base+100*time.Millisecond, 5*time.Millisecond))
		for _, r := range old.Advance(at(base + 2*time.Second)) {
			fired += len(r.Triggers)
		}
	}
	if fired != 1 {
		t.Fatalf("%d triggers fired before the reload, want 1", fired)
	}
	// Window 3 is open at the reload, with one instance of each probe.
	addAll(old, ok("a", 3*time.Second+100*time.Millisecond, 20*time.Millisecond), ok("b", 3*time.Second+200*time.Millisecond, 5*time.Millisecond))

	// The reload: a's QTA asks 90 % by 30 ms instead of 10 ms; b gets 50
	// bins instead of 100.
	newCfg := Config{Interval: time.Second, History: 5, Probes: map[string]ProbeConfig{
		"a": {DMax: testDMax, Bins: testBins, QTA: QTA{Points: []QTAPoint{{Delay: 30 * time.Millisecond, P: 0.9}}}, Triggers: Triggers{QTA: true}},
		"b": {DMax: testDMax, Bins: 50},
	}}
	e := newEngine(t, newCfg, at(3*time.Second+500*time.Millisecond))
	ad := e.Adopt(old)
	if len(ad.Carried) != 2 || ad.Fresh["b"] == "" || ad.Fresh["a"] != "" || ad.Reason != "" {
		t.Fatalf("adoption %+v, want a and b carried, b afresh from its next window", ad)
	}
	res := e.Advance(at(5 * time.Second))
	if len(res) != 1 || !res[0].Start.Equal(at(3*time.Second)) {
		t.Fatalf("got %d windows, want window 3 alone", len(res))
	}
	a := probeOf(t, res[0], "a")
	if a.Counts.Success != 1 || a.Totals.Success != 4 {
		t.Errorf("a: window %+v, totals %+v; want the open window's 1 and 4 in all", a.Counts, a.Totals)
	}
	if a.Band == nil || a.Band.K != 4 {
		t.Errorf("a: band %+v, want the 3 windows before the reload and this one", a.Band)
	}
	if a.QTACheck == nil || !a.QTACheck.OK {
		t.Errorf("a: the new QTA (F(30 ms) ≥ 0.9) holds for 20 ms delays: %+v", a.QTACheck)
	}
	if b := probeOf(t, res[0], "b"); b.Counts.Total() != 1 || b.Bins != testBins || b.Totals.Total() != 4 {
		t.Errorf("b's open window: %+v in %d bins (totals %+v), want its 1 instance in the old %d bins", b.Counts, b.Bins, b.Totals, testBins)
	}
	// b's next window takes the new layout, and its totals restart.
	addAll(e, ok("b", 5*time.Second+100*time.Millisecond, 5*time.Millisecond))
	res = e.Advance(at(7 * time.Second))
	if b := probeOf(t, res[len(res)-1], "b"); b.Counts.Total() != 1 || b.Bins != 50 || b.Totals.Total() != 1 {
		t.Errorf("b after the reload: %+v in %d bins (totals %+v), want 1 in 50 bins, totals afresh", b.Counts, b.Bins, b.Totals)
	}
	if st := e.Stats(); st.Counted != 1 {
		t.Errorf("the new engine counted %d instances itself, want the one added after the reload: the carried ones are the old engine's", st.Counted)
	}
}

// TestAdoptNothingAcrossIntervals: windows of two intervals do not line up.
func TestAdoptNothingAcrossIntervals(t *testing.T) {
	old := newEngine(t, Config{Interval: time.Second}, t0)
	addAll(old, ok("p", 100*time.Millisecond, time.Millisecond))
	e := newEngine(t, Config{Interval: 2 * time.Second}, t0)
	if ad := e.Adopt(old); ad.Reason == "" || len(ad.Carried) != 0 {
		t.Errorf("adoption %+v, want nothing carried and a reason", ad)
	}
}

// TestAdoptCarriesTheSlackHistory: the slack trend's history — each
// window's slack and its variance — goes to the engine of a reload, which
// reads the trend over the windows of both (it once kept the slacks and
// lost their variances, and the first trend after a reload indexed past
// them).
func TestAdoptCarriesTheSlackHistory(t *testing.T) {
	cfg := Config{Interval: time.Second, History: 5, Probes: map[string]ProbeConfig{
		"a": {DMax: testDMax, Bins: testBins, QTA: QTA{Points: []QTAPoint{{Delay: 30 * time.Millisecond, P: 0.5}}},
			Triggers: Triggers{SlackTrend: SlackTrendTrigger{Horizon: 10 * time.Second, Windows: 4}}},
	}}
	old := newEngine(t, cfg, t0)
	for w := range 3 {
		base := time.Duration(w) * time.Second
		addAll(old, ok("a", base+100*time.Millisecond, 20*time.Millisecond), ok("a", base+200*time.Millisecond, 25*time.Millisecond))
		old.Advance(at(base + 2*time.Second))
	}
	e := newEngine(t, cfg, at(3*time.Second+500*time.Millisecond))
	e.Adopt(old)
	trends := 0
	for w := 3; w < 6; w++ {
		base := time.Duration(w) * time.Second
		addAll(e, ok("a", base+100*time.Millisecond, 20*time.Millisecond), ok("a", base+200*time.Millisecond, 25*time.Millisecond))
		for _, r := range e.Advance(at(base + 2*time.Second)) {
			if a := probeOf(t, r, "a"); a.Slack != nil && a.Slack.Trend.OK {
				trends++
				if a.Slack.Trend.Windows != 4 || a.Slack.Trend.Significant {
					t.Errorf("window %v: trend %+v, want a line over 4 windows, not significant at a steady slack", r.Start, a.Slack.Trend)
				}
			}
		}
	}
	if trends == 0 {
		t.Error("no slack trend after the reload, over the windows of both engines")
	}
}

// TestAdoptSlackHistoryOfAnotherQTA: a reload that edits a probe's QTA
// points does not carry its slack history: each window's slack was
// measured against the old points. At a steady system, a QTA tightened
// from 50 % to 90 % by 30 ms moves the slack from 0.5 to 0.1 at once; the
// trend over the windows of both read that step as a fall, and
// deltaq.qta.time_to_violation projected a violation within 2 s, then
// 375 ms, then 167 ms, though the system had not changed.
func TestAdoptSlackHistoryOfAnotherQTA(t *testing.T) {
	config := func(p float64) Config {
		return Config{Interval: time.Second, History: 5, Probes: map[string]ProbeConfig{
			"a": {DMax: testDMax, Bins: testBins, QTA: QTA{Points: []QTAPoint{{Delay: 30 * time.Millisecond, P: p}}},
				Triggers: Triggers{SlackTrend: SlackTrendTrigger{Horizon: time.Minute, Windows: 4}}},
		}}
	}
	window := func(e *Engine, w int) []*Result {
		base := time.Duration(w) * time.Second
		for i := range 50 {
			addAll(e, ok("a", base+time.Duration(10+i)*time.Millisecond, 20*time.Millisecond))
		}
		return e.Advance(at(base + 2*time.Second))
	}
	old := newEngine(t, config(0.5), t0)
	for w := range 4 {
		window(old, w)
	}
	e := newEngine(t, config(0.9), at(4*time.Second+500*time.Millisecond))
	e.Adopt(old)
	trends := 0
	for w := 4; w < 9; w++ {
		for _, r := range window(e, w) {
			a := probeOf(t, r, "a")
			if len(r.Triggers) > 0 {
				t.Errorf("window %v: triggers %+v at a steady system", r.Start, r.Triggers)
			}
			if a.Slack != nil && a.Slack.Trend.OK {
				trends++
				if a.Slack.Trend.Projected || a.Slack.Trend.Slope != 0 {
					t.Errorf("window %v: trend %+v, want a flat line, no violation projected", r.Start, a.Slack.Trend)
				}
			}
		}
	}
	if trends == 0 {
		t.Error("no slack trend over the windows of the new QTA")
	}
}

// TestAdoptShorterLag: an engine of a shorter lag keeps fewer windows open
// than the one it adopts: it takes all of the old one's, closes those its
// own lag makes due at its first Advance, and counts every instance once.
// With a lag of 5 s cut to 1 s, it kept the first four of the old one's
// eight: windows 5 and 6 were dropped, their instances never counted.
func TestAdoptShorterLag(t *testing.T) {
	cfg := func(lag time.Duration) Config {
		return Config{Interval: time.Second, Lag: lag, Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins}}}
	}
	closed := int64(0)
	count := func(rs []*Result) {
		for _, r := range rs {
			closed += probeOf(t, r, "a").Counts.Total()
		}
	}
	old := newEngine(t, cfg(5*time.Second), t0)
	for w := range 7 {
		count(old.Advance(at(time.Duration(w)*time.Second + 50*time.Millisecond))) // window 0 closes at 6 s
		addAll(old, ok("a", time.Duration(w)*time.Second+100*time.Millisecond, time.Millisecond))
	}
	count(old.Advance(at(6*time.Second + 500*time.Millisecond)))
	if closed != 1 {
		t.Fatalf("%d instances closed before the reload, want window 0's", closed)
	}
	e := newEngine(t, cfg(time.Second), at(6*time.Second+600*time.Millisecond))
	if ad := e.Adopt(old); ad.Reason != "" || len(ad.Carried) != 1 {
		t.Fatalf("adoption %+v, want a carried", ad)
	}
	rs := e.Advance(at(6*time.Second + 700*time.Millisecond))
	if len(rs) != 4 || !rs[0].Start.Equal(at(time.Second)) {
		t.Fatalf("%d windows closed, want windows 1 to 4, due by the new lag", len(rs))
	}
	count(rs)
	count(e.Flush(at(7 * time.Second)))
	if closed != 7 {
		t.Errorf("%d instances counted, want the 7, once each", closed)
	}
}

// TestAdoptCarriesTheSnapshotInProgress: a snapshot that a trigger started
// before a reload, still recording its windows after the trigger's, is
// completed by the engine of the reload, under the ID the trigger's record
// named; and the windows before a trigger that fires after the reload
// include those closed before it. Both were dropped: the trigger named a
// snapshot no engine ever completed (no file), and the next snapshot began
// at the reload.
func TestAdoptCarriesTheSnapshotInProgress(t *testing.T) {
	cfg := Config{Interval: time.Second, History: 5,
		Snapshot: SnapshotConfig{Enabled: true, Before: 2, After: 2 * time.Second},
		Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins,
			QTA: QTA{Points: []QTAPoint{{Delay: 10 * time.Millisecond, P: 0.9}}}, Triggers: Triggers{QTA: true}}}}
	good, bad := 5*time.Millisecond, 20*time.Millisecond
	window := func(e *Engine, w int, delay time.Duration) []*Result {
		base := time.Duration(w) * time.Second
		addAll(e, ok("a", base+100*time.Millisecond, delay))
		return e.Advance(at(base + 2*time.Second))
	}
	old := newEngine(t, cfg, t0)
	window(old, 0, good)
	window(old, 1, good)
	rs := window(old, 2, bad) // the trigger: snapshot 1, windows 0 to 2, then 3 and 4
	if len(rs) != 1 || len(rs[0].Triggers) != 1 || rs[0].Triggers[0].SnapshotID != 1 {
		t.Fatalf("window 2: %+v, want a trigger of snapshot 1", rs)
	}
	window(old, 3, good)
	e := newEngine(t, cfg, at(4*time.Second+500*time.Millisecond))
	e.Adopt(old)
	rs = window(e, 4, good)
	if len(rs) != 1 || len(rs[0].Snapshots) != 1 {
		t.Fatalf("window 4 completes no snapshot: %+v", rs)
	}
	if s := rs[0].Snapshots[0]; s.ID != 1 || len(s.Windows) != 5 || !s.Windows[0].Start.Equal(t0) {
		t.Errorf("snapshot %d of %d windows from %v, want 1 of windows 0 to 4", s.ID, len(s.Windows), s.Windows[0].Start)
	}
	// Rearmed (rearm_windows 0: at once), the trigger fires again in
	// window 6: its snapshot holds windows 4 and 5 before it.
	window(e, 5, good)
	rs = window(e, 6, bad)
	if len(rs) != 1 || len(rs[0].Triggers) != 1 || rs[0].Triggers[0].SnapshotID != 2 {
		t.Fatalf("window 6: %+v, want a trigger of snapshot 2", rs)
	}
	window(e, 7, good)
	rs = window(e, 8, good)
	if len(rs) != 1 || len(rs[0].Snapshots) != 1 || len(rs[0].Snapshots[0].Windows) != 5 {
		t.Fatalf("window 8: %+v, want snapshot 2 of windows 4 to 8", rs)
	}
}

// TestAdoptResizesTheBandHistory: a reload that changes history keeps the
// last observed ΔQs behind the band that the new length holds, so that the
// band does not start again from one window (whose band is [0, 1]): four
// windows closed before the reload and the open one make a band over 3 of
// them under history 3, over all 5 under history 8.
func TestAdoptResizesTheBandHistory(t *testing.T) {
	for _, c := range []struct{ history, k int }{{3, 3}, {8, 5}, {5, 5}} {
		cfgOf := func(h int) Config {
			return Config{Interval: time.Second, History: h, Probes: map[string]ProbeConfig{"a": {DMax: testDMax, Bins: testBins}}}
		}
		old := newEngine(t, cfgOf(5), t0)
		for w := range 4 {
			base := time.Duration(w) * time.Second
			addAll(old, ok("a", base+100*time.Millisecond, time.Duration(10+w)*time.Millisecond))
			old.Advance(at(base + 2*time.Second))
		}
		addAll(old, ok("a", 4*time.Second+100*time.Millisecond, 20*time.Millisecond))
		e := newEngine(t, cfgOf(c.history), at(4*time.Second+500*time.Millisecond))
		if ad := e.Adopt(old); len(ad.Carried) != 1 {
			t.Fatalf("history %d: adoption %+v, want a carried", c.history, ad)
		}
		res := e.Advance(at(6 * time.Second))
		if len(res) != 1 {
			t.Fatalf("history %d: %d windows, want the open one", c.history, len(res))
		}
		a := probeOf(t, res[0], "a")
		if a.Band == nil || a.Band.K != c.k {
			t.Fatalf("history %d: band %+v, want one over %d windows", c.history, a.Band, c.k)
		}
		// The newest c.k windows' delays are 20 ms and, before it, 13,
		// 12, 11 and 10 ms: the mean CDF at 12 ms counts those of 10 to
		// 12 ms among them.
		in := 0
		for _, d := range []int{20, 13, 12, 11, 10}[:c.k] {
			if d <= 12 {
				in++
			}
		}
		if got, want := a.Band.Mean[11], float64(in)/float64(c.k); math.Abs(got-want) > 1e-12 {
			t.Errorf("history %d: mean F(12 ms) %v, want %v", c.history, got, want)
		}
	}
}
