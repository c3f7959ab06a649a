// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// testLayouts is the registry of processor layouts the tests' engines
// read, as a collector's processors would fill it.
var testLayouts = new(contract.Layouts)

// registryEngine returns an engine whose probe "auto" takes its layout
// from the registry of processor layouts, where owner registers dMax 5ms
// with 100 bins, as a processor with dmax: auto would after learning.
func registryEngine(t *testing.T, lag time.Duration) (*Engine, any) {
	t.Helper()
	owner := new(int)
	testLayouts.Register(owner, map[string]deltaq.Layout{"auto": {DMaxNs: int64(5 * time.Millisecond), Bins: 100}})
	t.Cleanup(func() { testLayouts.Unregister(owner) })
	e := newEngine(t, Config{
		Interval: time.Second, Lag: lag, ConfiguredProbes: []string{"auto"},
		LayoutGeneration: testLayouts.Generation,
		LookupLayout:     testLayouts.LookupLayout,
	}, t0)
	return e, owner
}

// succ is a success of probe auto of the given delay ending at end,
// carrying no layout of its own.
func succ(end, delay time.Duration) Instance {
	e := at(end).UnixNano()
	return Instance{Probe: "auto", Outcome: Success, Start: e - int64(delay), End: e}
}

// TestLayoutChangeAtWindowBoundary: a layout change announced in the
// registry while window 0 holds instances applies from window 1 on; an
// instance that ends in window 0 after the change is still classified
// under the old layout (a 10 ms delay is a timeout under dMax 5 ms, though
// it would be a success under 5 s), and no window mixes the two layouts.
func TestLayoutChangeAtWindowBoundary(t *testing.T) {
	e, owner := registryEngine(t, time.Second)
	addAll(e, succ(100*time.Millisecond, time.Millisecond))
	testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(5 * time.Second), Bins: 100})
	addAll(e,
		succ(200*time.Millisecond, 3*time.Millisecond),   // window 0, old layout: success
		succ(300*time.Millisecond, 10*time.Millisecond),  // window 0, old layout: timeout
		succ(1200*time.Millisecond, 10*time.Millisecond), // window 1, new layout: success
		succ(1300*time.Millisecond, time.Second),         // window 1, new layout: success
	)
	res := e.Advance(at(3 * time.Second))
	w0, w1 := windowAt(t, res, 0), windowAt(t, res, 1)
	// Old layout: 5 ms / 100 = 50 µs bins; new: 5 s / 100 = 50 ms.
	if w0.Bins != 100 || !near(w0.Width, 50e-6) || w0.Counts != (Counts{Success: 2, Timeout: 1}) {
		t.Errorf("window 0: width %g, %d bins, %+v; want 50µs, 100 bins, 2 successes and 1 timeout", w0.Width, w0.Bins, w0.Counts)
	}
	if w1.Bins != 100 || !near(w1.Width, 50e-3) || w1.Counts != (Counts{Success: 2}) {
		t.Errorf("window 1: width %g, %d bins, %+v; want 50ms, 100 bins, 2 successes", w1.Width, w1.Bins, w1.Counts)
	}
	// The 10 ms and 1 s delays are in bins 0, (0, 50ms], and 19,
	// (950ms, 1s], of window 1.
	if c := w1.BinCounts; c[0] != 1 || c[19] != 1 {
		t.Errorf("window 1 bins 0 and 19: %d %d, want 1 1", c[0], c[19])
	}
}

// TestLayoutChangeWithoutOpenInstances: with no instance of the probe in an
// open window, the new layout applies at once, to the window being filled.
func TestLayoutChangeWithoutOpenInstances(t *testing.T) {
	e, owner := registryEngine(t, 0)
	testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(time.Second), Bins: 10})
	addAll(e, succ(100*time.Millisecond, 150*time.Millisecond))
	w := windowAt(t, e.Flush(at(500*time.Millisecond)), 0)
	if w.Bins != 10 || !near(w.Width, 0.1) || w.BinCounts[1] != 1 {
		t.Errorf("window 0: width %g, %d bins, counts %v; want 100ms, 10 bins, the 150 ms delay in bin 1", w.Width, w.Bins, w.BinCounts)
	}
}

// TestLayoutChangesQueue: two changes while windows of the first layout
// are open queue up at successive boundaries (5 ms until window 1, 50 ms
// in window 2, 500 ms from window 3), a change with nothing counted under
// the layout before it replaces that layout's switch, and a timeout judged
// under a dMax shorter than its window's layout is refused as a layout
// mismatch.
func TestLayoutChangesQueue(t *testing.T) {
	e, owner := registryEngine(t, 3*time.Second)
	e.Advance(at(3 * time.Second)) // open windows 0 to 4
	set := func(d time.Duration) {
		testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(d), Bins: 100})
	}
	addAll(e, succ(1500*time.Millisecond, time.Millisecond)) // window 1 at 5 ms
	set(20 * time.Millisecond)                               // replaced below before any instance
	set(50 * time.Millisecond)                               // from window 2
	addAll(e, succ(2500*time.Millisecond, 30*time.Millisecond))
	set(500 * time.Millisecond) // from window 3
	addAll(e,
		succ(1600*time.Millisecond, 2*time.Millisecond),   // window 1: 5 ms layout
		succ(2600*time.Millisecond, 40*time.Millisecond),  // window 2: 50 ms layout
		succ(3500*time.Millisecond, 400*time.Millisecond), // window 3: 500 ms layout
		Instance{Probe: "auto", Outcome: Timeout, Start: at(3100 * time.Millisecond).UnixNano(),
			DMaxNs: int64(50 * time.Millisecond), Bins: 100}, // judged by 50 ms, window 3 has 500 ms
	)
	if got := e.Stats().Dropped[DropLayoutMismatch]; got != 1 {
		t.Errorf("layout_mismatch drops = %d, want 1", got)
	}
	res := e.Advance(at(7 * time.Second))
	for k, w := range []struct {
		width float64
		n     int64
	}{1: {50e-6, 2}, 2: {500e-6, 2}, 3: {5e-3, 1}} {
		if k == 0 {
			continue
		}
		pr := windowAt(t, res, k)
		if !near(pr.Width, w.width) || pr.Counts != (Counts{Success: w.n}) {
			t.Errorf("window %d: width %g, %+v; want width %g and %d successes", k, pr.Width, pr.Counts, w.width, w.n)
		}
	}
}

// TestLayoutMismatchAfterReclassifying: an instance that the newest layout
// places in a window of an older layout is classified again under that
// one; when that moves it to a window of yet another layout, it is refused
// as a layout mismatch rather than counted under either. Here a 1.2 s
// success starting at 1 s is a timeout under the newest dMax, 5 ms, ending
// at 1.005 s in window 1; window 1 has dMax 2 s, under which it is a
// success ending at 2.2 s, in window 2, which has the 5 ms layout.
func TestLayoutMismatchAfterReclassifying(t *testing.T) {
	e, owner := registryEngine(t, 3*time.Second)
	e.Advance(at(3 * time.Second)) // open windows 0 to 4
	set := func(d time.Duration) {
		testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(d), Bins: 100})
	}
	set(2 * time.Second)                                         // at once: nothing counted yet
	addAll(e, succ(1500*time.Millisecond, 100*time.Millisecond)) // window 1 at 2 s
	set(5 * time.Millisecond)                                    // from window 2
	start := at(time.Second).UnixNano()
	addAll(e,
		Instance{Probe: "auto", Outcome: Success, Start: start, End: start + int64(1200*time.Millisecond)},
		succ(1700*time.Millisecond, 1500*time.Millisecond), // window 1, 2 s layout: a success
		succ(2500*time.Millisecond, 10*time.Millisecond),   // window 2, 5 ms layout: a timeout
	)
	if got := e.Stats().Dropped[DropLayoutMismatch]; got != 1 {
		t.Errorf("layout_mismatch drops = %d, want 1", got)
	}
	res := e.Advance(at(7 * time.Second))
	if w := windowAt(t, res, 1); !near(w.Width, 20e-3) || w.Counts != (Counts{Success: 2}) {
		t.Errorf("window 1: width %g, %+v; want 20ms bins and 2 successes", w.Width, w.Counts)
	}
	if w := windowAt(t, res, 2); !near(w.Width, 50e-6) || w.Counts != (Counts{Timeout: 1}) {
		t.Errorf("window 2: width %g, %+v; want 50µs bins and 1 timeout", w.Width, w.Counts)
	}
}

// TestFixedLayoutIgnoresRegistry: a probe whose layout Config.Probes gives
// keeps it whatever the registry announces.
func TestFixedLayoutIgnoresRegistry(t *testing.T) {
	owner := new(int)
	testLayouts.Register(owner, map[string]deltaq.Layout{"fixed": {DMaxNs: int64(time.Second), Bins: 10}})
	t.Cleanup(func() { testLayouts.Unregister(owner) })
	e := newEngine(t, Config{
		Interval:         time.Second,
		Probes:           map[string]ProbeConfig{"fixed": {DMax: 100 * time.Millisecond, Bins: 100}},
		LayoutGeneration: testLayouts.Generation,
		LookupLayout:     testLayouts.LookupLayout,
	}, t0)
	testLayouts.SetLayout(owner, "fixed", deltaq.Layout{DMaxNs: int64(5 * time.Second), Bins: 10})
	in := Instance{Probe: "fixed", Outcome: Success, Start: at(100 * time.Millisecond).UnixNano(), End: at(500 * time.Millisecond).UnixNano()}
	addAll(e, in)
	w := windowAt(t, e.Flush(at(time.Second)), 0)
	if w.Bins != 100 || w.Counts != (Counts{Timeout: 1}) {
		t.Errorf("fixed: %d bins, %+v; want its configured 100 bins and a 400 ms delay timed out under 100 ms", w.Bins, w.Counts)
	}
}

// windowAt returns the only probe's result in window k (from t0) of res.
func windowAt(t *testing.T, res []*Result, k int) *ProbeResult {
	t.Helper()
	for _, r := range res {
		if r.Start.Equal(at(time.Duration(k)*time.Second)) && len(r.Probes) == 1 {
			return &r.Probes[0]
		}
	}
	t.Fatalf("window %d not closed", k)
	return nil
}

func near(a, b float64) bool { return a > b*(1-1e-9) && a < b*(1+1e-9) }

// TestTimeoutInFlightAcrossALayoutChange: an instance in flight when an
// auto probe's dMax went up (5 ms to 5 s) keeps the deadline it was given;
// its timeout, judged by 5 ms, is counted in the window of that deadline
// while that window still has the 5 ms layout, and refused as a layout
// mismatch only in a window of the 5 s layout, where it might have ended
// in time. The first was refused too: it was read under the newest layout.
func TestTimeoutInFlightAcrossALayoutChange(t *testing.T) {
	e, owner := registryEngine(t, time.Second)
	addAll(e, succ(900*time.Millisecond, time.Millisecond)) // window 0 holds an instance of the 5 ms layout
	testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(5 * time.Second), Bins: 100})
	timeout := func(start time.Duration) Instance {
		return Instance{Probe: "auto", Outcome: Timeout, Start: at(start).UnixNano(),
			End: at(start + 5*time.Millisecond).UnixNano(), DMaxNs: int64(5 * time.Millisecond), Bins: 100}
	}
	addAll(e,
		timeout(950*time.Millisecond),  // deadline 955 ms: window 0, 5 ms
		timeout(1100*time.Millisecond), // deadline 1.105 s: window 1, 5 s
		succ(1200*time.Millisecond, time.Second),
	)
	if got := e.Stats().Dropped[DropLayoutMismatch]; got != 1 {
		t.Errorf("layout_mismatch drops = %d, want 1", got)
	}
	res := e.Advance(at(3 * time.Second))
	if w := windowAt(t, res, 0); !near(w.Width, 50e-6) || w.Counts != (Counts{Success: 1, Timeout: 1}) {
		t.Errorf("window 0: width %g, %+v; want 50µs bins, a success and a timeout", w.Width, w.Counts)
	}
	if w := windowAt(t, res, 1); !near(w.Width, 50e-3) || w.Counts != (Counts{Success: 1}) {
		t.Errorf("window 1: width %g, %+v; want 50ms bins and a success", w.Width, w.Counts)
	}
}

// TestEndedTimeoutOfAShorterDMax: an auto probe's dMax went down from
// 500 ms to 100 ms, from window 2; a processor maps the spans of window 1
// after that, by the new dMax. A span of 700 ms is a timeout under either
// dMax: it counts in window 1 (500 ms layout) as one, where it used to be
// refused as a layout mismatch. A span of 300 ms, a timeout by 100 ms,
// might be a success or a failure within 500 ms: still refused.
func TestEndedTimeoutOfAShorterDMax(t *testing.T) {
	e, owner := registryEngine(t, 3*time.Second)
	e.Advance(at(3 * time.Second)) // open windows 0 to 4
	set := func(d time.Duration) {
		testLayouts.SetLayout(owner, "auto", deltaq.Layout{DMaxNs: int64(d), Bins: 100})
	}
	set(500 * time.Millisecond)                                 // at once: nothing counted yet
	addAll(e, succ(1100*time.Millisecond, 10*time.Millisecond)) // window 1 at 500 ms
	set(100 * time.Millisecond)                                 // from window 2
	judged := func(start, delay time.Duration) Instance {
		s := at(start).UnixNano()
		return Instance{Probe: "auto", Outcome: Timeout, Start: s, End: s + int64(delay), Ended: true,
			DMaxNs: int64(100 * time.Millisecond), Bins: 100}
	}
	addAll(e, judged(1200*time.Millisecond, 700*time.Millisecond), judged(1300*time.Millisecond, 300*time.Millisecond))
	if got := e.Stats().Dropped[DropLayoutMismatch]; got != 1 {
		t.Errorf("layout_mismatch drops = %d, want 1 (the 300 ms span)", got)
	}
	pr := windowAt(t, e.Advance(at(7*time.Second)), 1)
	if want := (Counts{Success: 1, Timeout: 1}); pr.Counts != want {
		t.Errorf("window 1: %+v, want %+v", pr.Counts, want)
	}
}
