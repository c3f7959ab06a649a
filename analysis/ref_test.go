// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"testing"
	"time"
)

// TestAddToCountsAsAdd: an instance given to AddTo, with its probe's
// reference and no name, counts as the same instance given to Add: the
// same window, outcome (a success longer than dMax is a timeout), bin and
// drops; only probes whose layout Config.Probes fixes have a reference.
func TestAddToCountsAsAdd(t *testing.T) {
	cfg := func() Config {
		return Config{Interval: time.Second, Lag: time.Second, Probes: map[string]ProbeConfig{
			"p": {DMax: 100 * time.Millisecond, Bins: 10}, "q": {},
		}}
	}
	byName, byRef := newEngine(t, cfg(), at(time.Second)), newEngine(t, cfg(), at(time.Second))
	if _, found := byRef.Ref("q"); found {
		t.Error("Ref(q): a probe without a configured layout has no reference")
	}
	if _, found := byRef.Ref("other"); found {
		t.Error("Ref(other): an unconfigured probe has no reference")
	}
	ref, found := byRef.Ref("p")
	if !found {
		t.Fatal("Ref(p): no reference")
	}
	ins := []Instance{
		ok("p", 1200*time.Millisecond, 15*time.Millisecond),
		ok("p", 1300*time.Millisecond, 150*time.Millisecond), // longer than dMax: a timeout
		failed("p", 1400*time.Millisecond),
		{Probe: "p", Outcome: Success, Start: at(1500 * time.Millisecond).UnixNano(), End: at(1400 * time.Millisecond).UnixNano()}, // malformed
		ok("p", 9*time.Second, time.Millisecond), // too early
	}
	addAll(byName, ins...)
	b := byRef.Begin()
	for i := range ins {
		in := ins[i]
		in.Probe = ""
		b.AddTo(ref, &in)
	}
	b.End()
	if a, r := byName.Stats(), byRef.Stats(); a != r {
		t.Errorf("stats: Add %+v, AddTo %+v", a, r)
	}
	ra, rr := byName.Flush(at(3*time.Second)), byRef.Flush(at(3*time.Second))
	if len(ra) != len(rr) {
		t.Fatalf("%d windows by name, %d by reference", len(ra), len(rr))
	}
	for i := range ra {
		pa, pr := probeOf(t, ra[i], "p"), probeOf(t, rr[i], "p")
		if pa.Counts != pr.Counts || len(pa.BinCounts) != len(pr.BinCounts) {
			t.Errorf("window %d: Add %+v %v, AddTo %+v %v", i, pa.Counts, pa.BinCounts, pr.Counts, pr.BinCounts)
			continue
		}
		for j := range pa.BinCounts {
			if pa.BinCounts[j] != pr.BinCounts[j] {
				t.Errorf("window %d bin %d: Add %v, AddTo %v", i, j, pa.BinCounts[j], pr.BinCounts[j])
			}
		}
	}
	if c := probeOf(t, ra[1], "p").Counts; c != (Counts{Success: 1, Timeout: 1, Failure: 1}) {
		t.Errorf("window [1s, 2s): %+v, want a success, a timeout and a failure", c)
	}
	in := ok("p", 1200*time.Millisecond, time.Millisecond)
	b = byRef.Begin()
	defer b.End()
	if n := testing.AllocsPerRun(1000, func() { b.AddTo(ref, &in) }); n != 0 {
		t.Errorf("AddTo allocates %v times per instance", n)
	}
}
