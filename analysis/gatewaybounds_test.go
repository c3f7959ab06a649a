// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// junkWindow returns an empty window of probe name for [start, start+1s)
// from source, of dMax dmax in bins uniform bins, with n successes in its
// last bin (sum: n delays at the bin's middle).
func junkWindow(name, source string, start, dmax time.Duration, bins int, n uint64) Window {
	w := Window{Probe: name, Start: at(start), End: at(start + time.Second), DMaxNs: int64(dmax), Bins: bins,
		BinIndex: []int{}, Source: source}
	if n > 0 {
		w.BinIndex, w.BinCounts = []int{bins - 1}, []uint64{n}
		w.SuccessSum = float64(n) * dmax.Seconds() * (float64(bins) - 0.5) / float64(bins)
	}
	return w
}

// TestForgedAgentsTakeNoPlaces: the attack of "Hostile inputs, third
// round" on a gateway of max_agents 64 (examples/scaling/gateway.yaml) —
// two forged agents agree a layout for a probe no configuration names, then
// 64 forged agents send empty windows of it into the open window — leaves
// the places to the agents of the configured probe: both real agents'
// windows are merged, nothing is refused or dropped, and the window's
// contributors are the two real agents, so that expected_agents 3 would
// see one missing. Before, every real agent's window was refused as
// agent_limit and its instances counted as invalid, while the window
// counted 64 contributors and no agent missing.
func TestForgedAgentsTakeNoPlaces(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: GatewayConfig{MaxAgents: 64},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	for _, src := range []string{"forger-a", "forger-b"} {
		w := junkWindow("junk", src, time.Second, testDMax, testBins, 0)
		e.AddWindow(&w)
	}
	if _, ok := e.Layout("junk"); !ok {
		t.Fatal("two agents' windows did not agree the junk probe's layout")
	}
	for i := range 64 {
		w := junkWindow("junk", fmt.Sprintf("forger-%d", i), time.Second, testDMax, testBins, 0)
		if c := e.AddWindow(&w); c != ContributionAccepted {
			t.Errorf("forger %d's window of junk: %v, want accepted (it takes no place)", i, c)
		}
	}
	for _, src := range []string{"agent-0", "agent-1"} {
		w := gwWindow(src, time.Second, testDMax, testBins)
		if c := e.AddWindow(&w); c != ContributionAccepted {
			t.Errorf("%s's window of job: %v, want accepted", src, c)
		}
	}
	st := e.Stats()
	if st.Contributions[ContributionAgentLimit] != 0 || st.Dropped.Total() != 0 || st.Counted != 8 {
		t.Errorf("%d windows refused as agent_limit, drops %v, %d instances counted; want 0, none, 8",
			st.Contributions[ContributionAgentLimit], st.Dropped, st.Counted)
	}
	r := e.Advance(at(4 * time.Second))
	last := r[len(r)-1]
	if !last.Start.Equal(at(time.Second)) || last.Contributors != 2 {
		t.Fatalf("window %v: %d contributors, want the 2 real agents", last.Start, last.Contributors)
	}
	if job := probeOf(t, last, "job"); job.Counts.Success != 6 || job.Counts.Timeout != 2 {
		t.Errorf("job: %+v, want the agents' 6 successes and 2 timeouts", job.Counts)
	}

	// The places of the configured probes still hold: a third agent of job
	// beyond max_agents 2 is refused, whatever the junk probe had.
	small := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second, Gateway: GatewayConfig{MaxAgents: 2},
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	for i, want := range []Contribution{ContributionAccepted, ContributionAccepted, ContributionAgentLimit} {
		w := gwWindow(fmt.Sprintf("agent-%d", i), time.Second, testDMax, testBins)
		if c := small.AddWindow(&w); c != want {
			t.Errorf("agent %d of job at max_agents 2: %v, want %v", i, c, want)
		}
	}
	// Its instances are dropped for the true reason.
	if d := small.Stats().Dropped; d[DropAgentLimit] == 0 || d[DropInvalid] != 0 {
		t.Errorf("drops %v: want the refused window's instances as agent_limit, none invalid", d)
	}
}

// liveHeap returns the bytes of the live heap, after two collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestUnconfiguredProbesBounded: the memory attack of "Hostile inputs,
// third round" — two forged agents sending, each second, one instance for
// each of 100 probes no configuration names, claiming dMax 24 h in 65,536
// bins — holds nothing: no agent's processor gives a probe that layout, so
// every window is refused as invalid and no probe is tracked (each such
// probe held about 18 MiB: 1.2 GB after 6 s, 3.44 GB after 28 s). Windows
// in what an agent can give (1000 bins up to 24 h) add at most
// gateway.max_unconfigured_probes (100) probes, the rest refused as
// unconfigured_limit (their instances dropped as probe_limit), whose heap
// stays within the documented budget, about (history + 8) × 8 B a bin
// and 20 KiB a probe; a tracked probe cannot be voted into a larger
// layout, nor can one that carries the analysis counts register it.
func TestUnconfiguredProbesBounded(t *testing.T) {
	const history, windows = 5, 10
	cfg := Config{Interval: time.Second, Lag: 2 * time.Second, History: history}
	e := newEngine(t, cfg, at(2*time.Second))
	base := liveHeap()
	next := time.Second // the next window's start
	send := func(probes, bins int, dmax time.Duration, want func(p int) Contribution) {
		t.Helper()
		for k := range windows {
			start := next
			next += time.Second
			for p := range probes {
				for _, src := range []string{"forger-a", "forger-b"} {
					w := junkWindow(fmt.Sprintf("junk-%d-%d", bins, p), src, start, dmax, bins, 1)
					if c := e.AddWindow(&w); c != want(p) && c != ContributionUnagreed {
						t.Fatalf("window %d of probe %d from %s (%d bins, dMax %v): %v, want %v", k, p, src, bins, dmax, c, want(p))
					}
				}
			}
			e.Advance(at(start + 3*time.Second))
		}
	}
	invalid := func(int) Contribution { return ContributionInvalid }
	send(100, 1<<16, 24*time.Hour, invalid)
	send(10, 100, 48*time.Hour, invalid) // beyond deltaq.MaxDMax
	if st := e.Stats(); st.UnconfiguredProbes != 0 || st.Counted != 0 {
		t.Fatalf("after the forged layouts: %d probes tracked, %d instances counted; want none", st.UnconfiguredProbes, st.Counted)
	}
	if grown := int64(liveHeap()) - int64(base); grown > 4<<20 {
		t.Errorf("the refused windows grew the heap by %d bytes", grown)
	}

	send(150, deltaq.MaxThesisBins, 24*time.Hour, func(p int) Contribution {
		if p < DefaultMaxUnconfiguredProbes {
			return ContributionAccepted
		}
		return ContributionUnconfiguredLimit
	})
	st := e.Stats()
	if st.UnconfiguredProbes != DefaultMaxUnconfiguredProbes || st.Contributions[ContributionUnconfiguredLimit] == 0 ||
		st.Dropped[DropProbeLimit] != st.Contributions[ContributionUnconfiguredLimit] {
		t.Errorf("%d probes tracked, %d windows refused as unconfigured_limit, %d instances as probe_limit; want %d, some, as many",
			st.UnconfiguredProbes, st.Contributions[ContributionUnconfiguredLimit], st.Dropped[DropProbeLimit], DefaultMaxUnconfiguredProbes)
	}
	budget := DefaultMaxUnconfiguredProbes * ((history+8)*8*deltaq.MaxThesisBins + 20<<10)
	if grown := int64(liveHeap()) - int64(base); grown > int64(budget)*3/2 {
		t.Errorf("%d probes of %d bins: the heap grew by %d bytes, more than 1.5 × the budget of %d", DefaultMaxUnconfiguredProbes,
			deltaq.MaxThesisBins, grown, budget)
	} else {
		t.Logf("%d probes of %d bins, history %d: the heap grew by %d bytes (budget %d)", DefaultMaxUnconfiguredProbes,
			deltaq.MaxThesisBins, history, grown, budget)
	}

	// A tracked probe: two agents voting for 65,536 bins change nothing,
	// nor does a window with analysis counts of a new probe in them.
	start := next
	for _, src := range []string{"forger-a", "forger-b"} {
		w := junkWindow("junk-1000-0", src, start, 24*time.Hour, 1<<16, 1)
		if c := e.AddWindow(&w); c != ContributionInvalid {
			t.Errorf("a vote for 65,536 bins from %s: %v, want invalid", src, c)
		}
	}
	if l, _ := e.Layout("junk-1000-0"); l.Bins != deltaq.MaxThesisBins {
		t.Errorf("the tracked probe moved to %d bins", l.Bins)
	}
	fine := junkWindow("fine", "agent", start, 24*time.Hour, 1<<16, 1)
	fine.Fine, fine.FineIndex, fine.FineCounts = true, []int{e.fine.Buckets() - 1}, []uint64{1}
	if c := e.AddWindow(&fine); c != ContributionInvalid {
		t.Errorf("a window with analysis counts in 65,536 bins: %v, want invalid", c)
	}
}

// TestRepeatedWindowsCannotWrapCounts: a gateway takes any number of
// windows of a probe — an agent may send one again, and windows of a probe
// no configuration names come from any number of agents — so the counts
// of a window are bounded by its totals, not by max_agents times
// MaxWindowInstances. One agent repeating a window of 2⁵⁰ timeouts in
// another layout than the probe's (read into it from the analysis counts)
// wrapped the window's timeouts to −9.2·10¹⁸ after 8192 copies; now the
// copy that would pass 2⁶³−1 is refused as invalid and the count stays
// 8191 · 2⁵⁰.
func TestRepeatedWindowsCannotWrapCounts(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second,
		Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, at(2*time.Second))
	const fit = math.MaxInt64 / MaxWindowInstances // 8191 copies fit
	for i := range fit + 2 {
		w := junkWindow("job", "agent", time.Second, 2*testDMax, testBins/2, 0)
		w.Timeouts = MaxWindowInstances
		w.Fine, w.FineIndex, w.FineCounts = true, []int{}, []uint64{}
		want := ContributionAccepted
		if i >= fit {
			want = ContributionInvalid
		}
		if c := e.AddWindow(&w); c != want {
			t.Fatalf("copy %d: %v, want %v", i, c, want)
		}
	}
	r := e.Advance(at(4 * time.Second))
	job := probeOf(t, r[len(r)-1], "job")
	if job.Counts.Timeout != fit*MaxWindowInstances || job.Counts.Success != 0 {
		t.Errorf("job's window: %+v, want %d timeouts", job.Counts, int64(fit*MaxWindowInstances))
	}
}

// TestSmallestProcessorLayoutMerges: the shortest dMax a deltaq processor
// gives a probe is its thesis form's 1 ms·2⁻¹⁰ with one bin, 977 ns
// (processor README, "Configuration"), below deltaq.MinDMax, the bound of
// a dmax written as a duration. A gateway that does not name the probe
// takes its agents' windows of it, as of any layout a processor gives;
// it refused them as invalid. Shorter still is no processor's.
func TestSmallestProcessorLayoutMerges(t *testing.T) {
	smallest := (time.Duration(deltaq.DeltaBase*1e9) + 1<<9) >> 10 // 10⁶·2⁻¹⁰ ns, rounded as the processor does
	if smallest != 977*time.Nanosecond {
		t.Fatalf("the thesis form's smallest dMax is %v, want 977ns", smallest)
	}
	e := newEngine(t, Config{Interval: time.Second, Lag: 2 * time.Second}, at(2*time.Second))
	for _, src := range []string{"agent-a", "agent-b"} {
		w := junkWindow("fast", src, time.Second, smallest, 1, 3)
		if c := e.AddWindow(&w); c != ContributionAccepted && c != ContributionUnagreed {
			t.Errorf("a window of dMax %v and 1 bin from %s: %v, want it taken", smallest, src, c)
		}
	}
	if l, ok := e.Layout("fast"); !ok || l.DMaxNs != int64(smallest) || l.Bins != 1 {
		t.Errorf("layout of the probe: %+v, %v; want dMax %v, 1 bin", l, ok, smallest)
	}
	w := junkWindow("faster", "agent-a", time.Second, smallest-1, 1, 3)
	if c := e.AddWindow(&w); c != ContributionInvalid {
		t.Errorf("a window of dMax %v: %v, want invalid", smallest-1, c)
	}
}
