package analysis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/diagram"
)

// Delays of 10.5 ms and the like sit inside a 1 ms bin, so the expected bin
// does not depend on which side of an edge a bin includes.

// forged is an instance that claims dMax 1 ns and one bin: as the first
// instance of a window, it used to fix the window's layout and turn every
// real success into a timeout.
func forged(probe string, end time.Duration) Instance {
	in := timedOut(probe, end-time.Nanosecond)
	in.DMaxNs, in.Bins = 1, 1
	return in
}

// TestForgedLayoutCannotTurnSuccessesIntoTimeouts: per window, one forged
// span with dmax_ns = 1 arrives first, then 100 real 10.5 ms successes. The
// probe's layout comes from the exporter's configuration, from the
// processor's (LookupLayout), or — for a probe no configuration names —
// from its first instance; in every case each window holds the 100
// successes in bin 10 of the 100 × 1 ms layout, and the forged timeout,
// whose 1 ns dMax is shorter than the probe's 100 ms, is refused.
func TestForgedLayoutCannotTurnSuccessesIntoTimeouts(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		first []Instance // before the first window
	}{
		{"exporter probes", Config{Probes: map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins}}}, nil},
		{"processor layout", Config{LookupLayout: func(name string) (time.Duration, int, bool) {
			return testDMax, testBins, name == "p"
		}}, nil},
		{"first instance", Config{}, []Instance{ok("p", 500*time.Millisecond, 10500*time.Microsecond)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Interval, c.cfg.Lag = time.Second, time.Second
			e := newEngine(t, c.cfg, at(2*time.Second))
			addAll(e, c.first...)
			e.Advance(at(3 * time.Second))
			for w := 2; w < 7; w++ {
				base := time.Duration(w) * time.Second
				ins := []Instance{forged("p", base+10*time.Millisecond)}
				for i := range 100 {
					ins = append(ins, ok("p", base+time.Duration(20+i)*time.Millisecond, 10500*time.Microsecond))
				}
				addAll(e, ins...)
				rs := e.Advance(at(base + 2*time.Second))
				if len(rs) != 1 {
					t.Fatalf("window %d: %d results", w, len(rs))
				}
				p := probeOf(t, rs[0], "p")
				if p.Counts != (Counts{Success: 100}) || p.Bins != testBins || p.BinCounts[10] != 100 {
					t.Fatalf("window %d: counts %+v, %d bins, bin 10 holds %d; want 100 successes in bin 10 of %d",
						w, p.Counts, p.Bins, p.BinCounts[10], testBins)
				}
			}
			if st := e.Stats(); st.Dropped[DropLayoutMismatch] != 5 {
				t.Errorf("stats %+v, want the 5 forged timeouts refused as layout_mismatch", st)
			}
		})
	}
}

// TestInstancesOfAnotherLayoutAreReclassified: the probe is configured with
// dMax 100 ms and 100 bins here; two other collectors send instances of
// the same probe with their own layouts (50 ms × 50 and 200 ms × 400).
// Each instance is classified under the probe's layout from its own start
// and end.
func TestInstancesOfAnotherLayoutAreReclassified(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: time.Second,
		Probes: map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins}}}
	e := newEngine(t, cfg, at(time.Second))
	short := func(in Instance) Instance { in.DMaxNs, in.Bins = int64(50*time.Millisecond), 50; return in }
	long := func(in Instance) Instance { in.DMaxNs, in.Bins = int64(200*time.Millisecond), 400; return in }
	to := func(in Instance) Instance { in.Outcome = Timeout; return in }
	fl := func(in Instance) Instance { in.Outcome = Failure; return in }
	addAll(e,
		// Ours: 3.5 ms, bin 3.
		ok("p", 100*time.Millisecond, 3500*time.Microsecond),
		// 50 ms collector: 20.5 ms is a success in bin 20 of ours; its
		// timeout (after 50 ms) might have ended within our 100 ms:
		// refused.
		short(ok("p", 200*time.Millisecond, 20500*time.Microsecond)),
		short(timedOut("p", 300*time.Millisecond)),
		// 200 ms collector: 30.25 ms is a success in bin 30; 150 ms is
		// beyond our dMax, a success or a failure then is a timeout
		// here, at start + 100 ms; its timeouts (after 200 ms) are ours
		// too.
		long(ok("p", 400*time.Millisecond, 30250*time.Microsecond)),
		long(ok("p", 700*time.Millisecond, 150*time.Millisecond)),
		long(fl(ok("p", 750*time.Millisecond, 150*time.Millisecond))),
		long(to(timedOut("p", 100*time.Millisecond))),
		// A success beyond dMax of our own layout: a timeout as well
		// (the processor classifies so), not rebinned.
		ok("p", 800*time.Millisecond, 120*time.Millisecond),
	)
	p := probeOf(t, e.Advance(at(2 * time.Second))[0], "p")
	if want := (Counts{Success: 3, Timeout: 4}); p.Counts != want {
		t.Errorf("counts %+v, want %+v", p.Counts, want)
	}
	for _, b := range []int{3, 20, 30} {
		if p.BinCounts[b] != 1 {
			t.Errorf("bin %d holds %d, want 1 (bins %v)", b, p.BinCounts[b], p.BinCounts)
		}
	}
	if p.Bins != testBins {
		t.Errorf("%d bins, want the configured %d", p.Bins, testBins)
	}
	st := e.Stats()
	if st.Counted != 7 || st.Rebinned != 5 || st.Dropped[DropLayoutMismatch] != 1 {
		t.Errorf("stats %+v, want 7 counted, 5 rebinned, 1 layout_mismatch", st)
	}
}

// A success or failure that ends before it starts has no delay: it is
// refused as malformed, not counted and then lost by the histogram.
func TestEndBeforeStartIsMalformed(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, at(time.Second))
	neg := ok("p", 100*time.Millisecond, -time.Millisecond)
	negFail := failed("p", 100*time.Millisecond)
	negFail.Start = negFail.End + 1
	addAll(e, neg, negFail, ok("p", 100*time.Millisecond, 0))
	st := e.Stats()
	if st.Counted != 1 || st.Dropped[DropMalformed] != 2 {
		t.Errorf("stats %+v, want 1 counted (the zero delay), 2 malformed", st)
	}
	p := probeOf(t, e.Advance(at(2 * time.Second))[0], "p")
	if p.Counts != (Counts{Success: 1}) {
		t.Errorf("counts %+v, want the one zero-delay success", p.Counts)
	}
}

func TestLongProbeNameIsRefused(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, at(time.Second))
	longest := strings.Repeat("x", MaxProbeNameLength)
	addAll(e,
		ok(longest, 100*time.Millisecond, time.Millisecond),
		ok(longest+"y", 100*time.Millisecond, time.Millisecond),
	)
	st := e.Stats()
	if st.Counted != 1 || st.Dropped[DropNameTooLong] != 1 || st.Probes != 1 {
		t.Errorf("stats %+v, want the %d-byte name counted and the longer one refused", st, MaxProbeNameLength)
	}
}

// TestJunkNamesNeverCrowdOutConfiguredProbes: 1500 junk probe names arrive
// before any real instance. The configured probes — the exporter's, the
// diagram's, ConfiguredProbes, and one only LookupLayout knows — are still
// counted; the junk fills the MaxProbes places of unconfigured probes and
// the rest is refused.
func TestJunkNamesNeverCrowdOutConfiguredProbes(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("e2e = a -> b;\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: d,
		Probes:           map[string]ProbeConfig{"real": {}},
		ConfiguredProbes: []string{"reg"},
		LookupLayout: func(name string) (time.Duration, int, bool) {
			return testDMax, testBins, name == "proc" || name == "reg"
		},
	}
	e := newEngine(t, cfg, at(time.Second))
	var junk []Instance
	for i := range 1500 {
		junk = append(junk, ok(fmt.Sprintf("junk-%d", i), 100*time.Millisecond, time.Millisecond))
	}
	addAll(e, junk...)
	addAll(e,
		ok("real", 200*time.Millisecond, time.Millisecond),
		ok("a", 200*time.Millisecond, time.Millisecond),
		ok("reg", 200*time.Millisecond, time.Millisecond),
		ok("proc", 200*time.Millisecond, time.Millisecond),
	)
	st := e.Stats()
	if st.UnconfiguredProbes != DefaultMaxProbes || st.Dropped[DropProbeLimit] != 500 {
		t.Errorf("stats %+v, want %d unconfigured probes and 500 refused", st, DefaultMaxProbes)
	}
	r := e.Advance(at(2 * time.Second))[0]
	for _, name := range []string{"real", "a", "reg", "proc"} {
		if c := probeOf(t, r, name).Counts; c.Success != 1 {
			t.Errorf("configured probe %s: counts %+v, want its success", name, c)
		}
	}
}

// TestIdleProbesExpire: unconfigured probes without an instance for
// ProbeIdleTimeout are forgotten — their place goes to new names, and a
// name that comes back starts afresh — while configured probes stay.
func TestIdleProbesExpire(t *testing.T) {
	cfg := Config{Interval: time.Second, Lag: time.Second, MaxProbes: 2, ProbeIdleTimeout: 5 * time.Second,
		Probes: map[string]ProbeConfig{"conf": {DMax: testDMax, Bins: testBins}}}
	e := newEngine(t, cfg, at(time.Second))
	addAll(e,
		ok("a", 100*time.Millisecond, time.Millisecond),
		ok("b", 100*time.Millisecond, time.Millisecond),
		ok("c", 100*time.Millisecond, time.Millisecond), // no place
	)
	if st := e.Stats(); st.Dropped[DropProbeLimit] != 1 {
		t.Fatalf("stats %+v, want c refused", st)
	}
	// Window [0, 1s) closes at 2 s; a and b are idle from then on. b gets
	// an instance in [3s, 4s), which closes at 5 s.
	for s := 2; s <= 6; s++ {
		if s == 3 {
			addAll(e, ok("b", 3500*time.Millisecond, time.Millisecond))
		}
		e.Advance(at(time.Duration(s) * time.Second))
	}
	if st := e.Stats(); st.ExpiredProbes != 0 || st.Probes != 3 {
		t.Fatalf("at 6 s: stats %+v, want nothing expired yet", st)
	}
	r := e.Advance(at(7 * time.Second))[0] // a: closed at 2 s + 5 s
	if st := e.Stats(); st.ExpiredProbes != 1 || st.UnconfiguredProbes != 1 {
		t.Fatalf("at 7 s: stats %+v, want a forgotten", st)
	}
	// The window closed at 7 s still lists a (empty); the next does not.
	probeOf(t, r, "a")
	addAll(e, ok("c", 7100*time.Millisecond, time.Millisecond), ok("a", 7200*time.Millisecond, time.Millisecond))
	if st := e.Stats(); st.Dropped[DropProbeLimit] != 2 || st.Counted != 4 {
		t.Fatalf("stats %+v: c takes a's place, a is refused", st)
	}
	r = e.Advance(at(8 * time.Second))[0]
	names := make([]string, len(r.Probes))
	for i := range r.Probes {
		names[i] = r.Probes[i].Name
	}
	if !slices.Equal(names, []string{"b", "c", "conf"}) {
		t.Errorf("probes after expiry: %v, want [b c conf]", names)
	}
	// b expires at 5 s + 5 s; a name that comes back starts afresh.
	e.Advance(at(10 * time.Second))
	addAll(e, ok("b", 10100*time.Millisecond, time.Millisecond))
	var got *ProbeResult
	for s := 11; s <= 12; s++ {
		for _, r := range e.Advance(at(time.Duration(s) * time.Second)) {
			if r.Start.Equal(at(10 * time.Second)) {
				got = probeOf(t, r, "b")
			}
		}
	}
	if got == nil || got.Totals != (Counts{Success: 1}) || got.Band.K != 1 {
		t.Errorf("b after coming back: %+v, want totals and history of its new life only", got)
	}
	if _, ok := e.byName["conf"]; !ok {
		t.Error("the configured probe expired")
	}
}

// The instance path does not allocate once the probe and a histogram of its
// layout exist, also with probes coming and going.
func TestAddDoesNotAllocate(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second, ProbeIdleTimeout: time.Second}, at(time.Second))
	in := ok("p", 100*time.Millisecond, time.Millisecond)
	addAll(e, in)
	b := e.Begin()
	defer b.End()
	if n := testing.AllocsPerRun(1000, func() { b.Add(&in) }); n != 0 {
		t.Errorf("Add allocates %v times per instance", n)
	}
}

// TestUnderResolvedStagesDoNotFireDivergence: three stages of 0.145 ms on
// 1 ms bins, end to end 0.435 ms. Every delay falls into the first bin and
// is read as its midpoint 0.5 ms: the observed e2e has all its mass in bin 0
// (F_obs(1 ms) = 1), while a ⊗ b ⊗ c spreads three half-bin offsets over
// bins 0, 1, 2 with masses 1/4, 1/2, 1/4 (bin i ⊗ bin j puts half in bin
// i+j and half in i+j+1: (½, ½) ⊗ bin 0 = (¼, ½, ¼)), so F_calc(1 ms) =
// 0.25: a divergence of 0.75 made by the bins alone, which used to fire a
// divergence trigger at 0.2. The stages are under-resolved, so the
// divergence is withheld and the trigger cannot fire.
func TestUnderResolvedStagesDoNotFireDivergence(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("e2e = a -> b -> c;\n"))
	if err != nil {
		t.Fatal(err)
	}
	stage := 145 * time.Microsecond
	var w []Instance
	for _, p := range []string{"a", "b", "c"} {
		w = append(w, n(10, ok(p, 500*time.Millisecond, stage))...)
	}
	w = append(w, n(10, ok("e2e", 500*time.Millisecond, 3*stage))...)
	cfg := Config{Diagram: d, Probes: map[string]ProbeConfig{"e2e": {Triggers: Triggers{MaxDivergence: 0.2}}}}
	evs := runWindows(t, cfg, [][]Instance{w, w, w})
	if got := fired(evs, "e2e", TriggerDivergence); len(got) != 0 {
		t.Fatalf("divergence trigger fired in windows %v on under-resolved stages", got)
	}

	r := single(t, cfg, w)
	e2e := probeOf(t, r, "e2e")
	if e2e.Observed == nil || e2e.Calculated == nil {
		t.Fatal("e2e lacks an observed or calculated ΔQ")
	}
	if e2e.HasDivergence || !e2e.DivergenceWithheld || !e2e.UnderResolved {
		t.Errorf("e2e: divergence %v (has %v, withheld %v), under-resolved %v; want withheld",
			e2e.Divergence, e2e.HasDivergence, e2e.DivergenceWithheld, e2e.UnderResolved)
	}
	for _, p := range []string{"a", "b", "c"} {
		if !probeOf(t, r, p).UnderResolved {
			t.Errorf("%s is not marked under-resolved", p)
		}
	}
}

// Only the probe itself or its diagram inputs withhold a divergence: a
// coarse probe elsewhere in the diagram does not.
func TestUnderResolvedInputsAreTheExpressionsOwn(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("e2e = a -> b;\nother = x -> y;\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := diagramInputs(d)["e2e"]; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("inputs of e2e = %v, want [a b]", got)
	}
	ins := []Instance{
		ok("a", 500*time.Millisecond, 10500*time.Microsecond),
		ok("b", 500*time.Millisecond, 10500*time.Microsecond),
		ok("e2e", 500*time.Millisecond, 30500*time.Microsecond),
		ok("x", 500*time.Millisecond, 100*time.Microsecond), // under-resolved
		ok("y", 500*time.Millisecond, 100*time.Microsecond),
		ok("other", 500*time.Millisecond, 200*time.Microsecond),
	}
	r := single(t, Config{Diagram: d}, ins)
	if p := probeOf(t, r, "e2e"); !p.HasDivergence || p.DivergenceWithheld {
		t.Errorf("e2e: has divergence %v, withheld %v; want a divergence", p.HasDivergence, p.DivergenceWithheld)
	}
	if p := probeOf(t, r, "other"); p.HasDivergence || !p.DivergenceWithheld {
		t.Errorf("other: has divergence %v, withheld %v; want it withheld", p.HasDivergence, p.DivergenceWithheld)
	}
}

// Nested operators and references: the inputs of a definition are the
// outcomes of its operators' branches and, for s:x, x and x's inputs.
func TestDiagramInputs(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("front = auth -> f:stock(s1, s2);\nall = s:front -> pay;\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := diagramInputs(d)
	want := map[string][]string{
		"front": {"auth", "s1", "s2"},
		"stock": {"s1", "s2"},
		"all":   {"auth", "front", "pay", "s1", "s2"},
	}
	for name, w := range want {
		if !slices.Equal(in[name], w) {
			t.Errorf("inputs of %s = %v, want %v", name, in[name], w)
		}
	}
}

// The referenced probes — the diagram's outcomes and the configured
// probes — without an instance in a window are listed in the result.
func TestReferencedProbesWithoutInstances(t *testing.T) {
	d, err := diagram.Parse("t.dq", []byte("e2e = a -> b;\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: d,
		Probes: map[string]ProbeConfig{"x": {}}}
	e := newEngine(t, cfg, at(time.Second))
	addAll(e, ok("a", 100*time.Millisecond, time.Millisecond), ok("u", 100*time.Millisecond, time.Millisecond))
	r := e.Advance(at(2 * time.Second))[0]
	if !slices.Equal(r.NoInstances, []string{"b", "x"}) {
		t.Errorf("no instances of %v, want [b x] (e2e is calculated, u is not referenced)", r.NoInstances)
	}
}
