// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// t0 is a window boundary: windows are aligned on the Unix epoch.
var t0 = time.Unix(1_700_000_000, 0).UTC()

const (
	testDMax = 100 * time.Millisecond
	testBins = 100
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// ok returns a success of the given delay ending at end.
func ok(probe string, end, delay time.Duration) Instance {
	e := at(end).UnixNano()
	return Instance{Probe: probe, Outcome: Success, Start: e - int64(delay), End: e, DMaxNs: int64(testDMax), Bins: testBins}
}

func failed(probe string, end time.Duration) Instance {
	e := at(end).UnixNano()
	return Instance{Probe: probe, Outcome: Failure, Start: e - int64(time.Millisecond), End: e, DMaxNs: int64(testDMax), Bins: testBins}
}

func timedOut(probe string, start time.Duration) Instance {
	s := at(start).UnixNano()
	// The processor's synthetic span may carry any end; the engine uses
	// start + dMax.
	return Instance{Probe: probe, Outcome: Timeout, Start: s, End: 0, DMaxNs: int64(testDMax), Bins: testBins}
}

func newEngine(t *testing.T, cfg Config, now time.Time) *Engine {
	t.Helper()
	e, err := New(cfg, now)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func addAll(e *Engine, ins ...Instance) {
	b := e.Begin()
	for i := range ins {
		b.Add(&ins[i])
	}
	b.End()
}

func probeOf(t *testing.T, r *Result, name string) *ProbeResult {
	t.Helper()
	for i := range r.Probes {
		if r.Probes[i].Name == name {
			return &r.Probes[i]
		}
	}
	t.Fatalf("window %v–%v: no probe %q", r.Start, r.End, name)
	return nil
}

func TestWindowsCloseLagAfterTheirEnd(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	addAll(e,
		ok("p", 200*time.Millisecond, 10*time.Millisecond),
		ok("p", 999*time.Millisecond, 20*time.Millisecond),
		ok("p", 1500*time.Millisecond, 30*time.Millisecond),
		// A timeout ends at start + dMax: started at 0.95 s, it ends at
		// 1.05 s and belongs to the second window.
		timedOut("p", 950*time.Millisecond),
	)
	// The window before t0 was still open when the engine started; it
	// closes at t0 + lag.
	if got := e.Advance(at(1999 * time.Millisecond)); len(got) != 1 || !got[0].End.Equal(t0) {
		t.Fatalf("before [0, 1s) closes: %d windows, want only the one ending at t0", len(got))
	}
	got := e.Advance(at(2 * time.Second))
	if len(got) != 1 {
		t.Fatalf("at end + lag: got %d windows, want 1", len(got))
	}
	r := got[0]
	if !r.Start.Equal(t0) || !r.End.Equal(at(time.Second)) {
		t.Errorf("window = [%v, %v), want [%v, %v)", r.Start, r.End, t0, at(time.Second))
	}
	p := probeOf(t, r, "p")
	if p.Counts != (Counts{Success: 2}) {
		t.Errorf("first window counts = %+v, want 2 successes", p.Counts)
	}
	if math.Abs(p.SuccessSum-0.030) > 1e-12 {
		t.Errorf("success sum = %v, want 0.030", p.SuccessSum)
	}
	got = e.Advance(at(3 * time.Second))
	if len(got) != 1 {
		t.Fatalf("second window: got %d results", len(got))
	}
	p = probeOf(t, got[0], "p")
	if p.Counts != (Counts{Success: 1, Timeout: 1}) {
		t.Errorf("second window counts = %+v, want 1 success and 1 timeout", p.Counts)
	}
	if p.Totals != (Counts{Success: 3, Timeout: 1}) {
		t.Errorf("running totals = %+v, want 3 successes and 1 timeout", p.Totals)
	}
}

func TestLateAndEarlyInstancesAreDroppedAndCounted(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	e.Advance(at(2 * time.Second)) // closes [0, 1s)
	addAll(e,
		ok("p", 500*time.Millisecond, time.Millisecond), // its window closed
		ok("p", 1500*time.Millisecond, time.Millisecond),
		ok("p", time.Hour, time.Millisecond), // far beyond the open windows
		Instance{Probe: "p", Outcome: 0, Start: 1, End: 2, DMaxNs: 1, Bins: 1},
		Instance{Probe: "q", Outcome: Success, Start: 1, End: 2}, // no layout
		// More bins than the thesis's 1000 are not taken from an instance.
		Instance{Probe: "r", Outcome: Success, Start: at(time.Second).UnixNano(), End: at(1500 * time.Millisecond).UnixNano(), DMaxNs: int64(time.Second), Bins: 5000},
	)
	st := e.Stats()
	want := Drops{DropTooLate: 1, DropTooEarly: 1, DropInvalid: 3}
	if st.Dropped != want || st.Counted != 1 {
		t.Errorf("stats = %+v, want counted 1, dropped %v", st, want)
	}
}

// TestInstanceEndingNowCountsWhenTheTimerIsLate: the window timer of a
// collector ticks every interval from its start, at any phase of the
// second. Ticking at .99 s, a tick 20 ms late left the instances that
// ended in those 20 ms beyond the open windows: dropped as too_early,
// although they ended before the collector's clock. An instance that ends
// up to one interval after the tick due counts.
func TestInstanceEndingNowCountsWhenTheTimerIsLate(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, at(990*time.Millisecond))
	e.Advance(at(2990 * time.Millisecond))
	// The next tick, due at 3.99 s, runs at 4.01 s.
	addAll(e,
		ok("p", 4005*time.Millisecond, time.Millisecond),
		ok("p", 4990*time.Millisecond, time.Millisecond), // an interval after the tick due
		ok("p", 3*time.Hour, time.Millisecond),           // far beyond the open windows
	)
	st := e.Stats()
	if want := (Drops{DropTooEarly: 1}); st.Dropped != want || st.Counted != 2 {
		t.Errorf("stats = %+v, want counted 2, dropped %v", st, want)
	}
}

// TestLateAdvanceKeepsMoreWindowsOpen: with LateAdvance the open windows
// reach that much further ahead of the last Advance, so that an instance
// that ends while the next Advance is held up that long is not too early:
// 100 ms windows and a timer that may be 0.9 s later than an interval
// keep ⌈lag/I⌉ + 3 + ⌈0.9 s/I⌉ = 13 windows open.
func TestLateAdvanceKeepsMoreWindowsOpen(t *testing.T) {
	const I = 100 * time.Millisecond
	e := newEngine(t, Config{Interval: I, Lag: I, LateAdvance: 900 * time.Millisecond}, t0)
	e.Advance(at(2 * I)) // windows 1 to 13 open: ends in [0.1 s, 1.4 s)
	addAll(e,
		ok("p", 1350*time.Millisecond, time.Millisecond),
		ok("p", 1450*time.Millisecond, time.Millisecond), // beyond them
	)
	if st := e.Stats(); st.Counted != 1 || st.Dropped != (Drops{DropTooEarly: 1}) {
		t.Errorf("stats = %+v, want 1 counted and 1 too early", st)
	}
	got := e.Advance(at(1500 * time.Millisecond))
	if n := len(got); n != 13 || probeOf(t, got[12], "p").Counts.Success != 1 {
		t.Errorf("%d windows closed, want 13, the last with the instance", n)
	}
}

// TestFlushKeepsWindowsAheadOfTheClock: at a stop, Flush closes the
// windows after the one the clock is in that hold instances (a sender's
// clock ahead of the collector's; a clock that went back), which it lost:
// counted, never reported. The one the clock is in sampled until the clock,
// one after it nothing; empty windows after it are not closed.
func TestFlushKeepsWindowsAheadOfTheClock(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0) // windows −1 to 2 open
	addAll(e,
		ok("p", 500*time.Millisecond, time.Millisecond),
		ok("p", 1200*time.Millisecond, time.Millisecond), // ahead of the clock, 0.6 s
	)
	got := e.Flush(at(600 * time.Millisecond))
	if len(got) != 3 {
		t.Fatalf("Flush closed %d windows, want −1, 0 and 1", len(got))
	}
	for i, want := range []struct {
		start   time.Duration
		n       int64
		sampled time.Duration
	}{{-time.Second, 0, time.Second}, {0, 1, 600 * time.Millisecond}, {time.Second, 1, 0}} {
		r := got[i]
		if !r.Start.Equal(at(want.start)) || probeOf(t, r, "p").Counts.Success != want.n || r.SamplingPeriod != want.sampled {
			t.Errorf("window %d: [%v, %v), %d successes, sampled %v; want from %v, %d, %v", i, r.Start, r.End,
				probeOf(t, r, "p").Counts.Success, r.SamplingPeriod, at(want.start), want.n, want.sampled)
		}
	}
	// A clock gone back before the open windows: they are closed all the
	// same, up to the last with an instance.
	e = newEngine(t, Config{Interval: time.Second, Lag: time.Second}, at(10*time.Second)) // 9 to 12 open
	addAll(e, ok("p", 10500*time.Millisecond, time.Millisecond))
	if got := e.Flush(at(time.Second)); len(got) != 2 || probeOf(t, got[1], "p").Counts.Success != 1 {
		t.Errorf("after the clock went back, Flush closed %d windows, want 9 and 10 with the instance", len(got))
	}
}

func TestProbeLimit(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second, MaxProbes: 2}, t0)
	addAll(e,
		ok("a", 100*time.Millisecond, time.Millisecond),
		ok("b", 100*time.Millisecond, time.Millisecond),
		ok("c", 100*time.Millisecond, time.Millisecond),
		ok("c", 200*time.Millisecond, time.Millisecond),
		ok("a", 300*time.Millisecond, time.Millisecond),
	)
	st := e.Stats()
	if st.Probes != 2 || st.Dropped[DropProbeLimit] != 2 || st.Counted != 3 {
		t.Errorf("stats = %+v, want 2 probes, 2 dropped by the limit, 3 counted", st)
	}
}

func TestEmptyWindowHasZeroCountsAndNoDeltaQ(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	addAll(e, ok("p", 100*time.Millisecond, 5*time.Millisecond))
	e.Advance(at(2 * time.Second))
	got := e.Advance(at(3 * time.Second))
	if len(got) != 1 {
		t.Fatalf("got %d windows", len(got))
	}
	p := probeOf(t, got[0], "p")
	if p.Counts.Total() != 0 || p.Observed != nil || p.BinCounts != nil {
		t.Errorf("empty window: counts %+v, observed %v, bins %v; want zero and no ΔQ", p.Counts, p.Observed, p.BinCounts)
	}
	if _, ok := p.FailureRatio(); ok {
		t.Error("empty window reports a failure ratio")
	}
	for _, q := range p.Quantiles {
		if q.ObservedOK {
			t.Errorf("empty window reports quantile %v = %v", q.Q, q.Observed)
		}
	}
	if p.Totals.Success != 1 {
		t.Errorf("running total lost: %+v", p.Totals)
	}
	// The band still shows the last windows that had instances.
	if p.Band == nil || p.Band.K != 1 {
		t.Errorf("band = %+v, want the one earlier ΔQ", p.Band)
	}
}

func TestClockJumpSkipsWindowsThatCannotHoldInstances(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	addAll(e, ok("p", 100*time.Millisecond, 5*time.Millisecond))
	got := e.Advance(at(time.Hour))
	// ⌈lag/I⌉ + 3 = 4 windows were open (from t0 − 1 s); the rest of the
	// hour held nothing.
	if len(got) != 4 {
		t.Fatalf("after a one-hour jump: %d windows, want the 4 that were open", len(got))
	}
	if probeOf(t, got[1], "p").Counts.Success != 1 {
		t.Error("the instance of the first window was lost")
	}
	addAll(e, ok("p", time.Hour-500*time.Millisecond, 5*time.Millisecond))
	if st := e.Stats(); st.Counted != 2 {
		t.Errorf("after the jump an instance of the open window was not counted: %+v", st)
	}
	if got := e.Advance(at(time.Hour + time.Second)); len(got) != 1 || probeOf(t, got[0], "p").Counts.Success != 1 {
		t.Errorf("window after the jump: %d results", len(got))
	}
}

func TestSingleWindowMode(t *testing.T) {
	e := newEngine(t, Config{}, time.Time{})
	addAll(e,
		ok("p", 0, 5*time.Millisecond),
		ok("p", 5*time.Hour, 7*time.Millisecond),
		failed("p", time.Hour),
	)
	if got := e.Advance(at(10 * time.Hour)); got != nil {
		t.Fatalf("Advance closed %d windows in single-window mode", len(got))
	}
	got := e.Flush(time.Time{})
	if len(got) != 1 {
		t.Fatalf("Flush: %d windows", len(got))
	}
	r := got[0]
	if !r.Start.Equal(t0) || !r.End.Equal(at(5*time.Hour)) {
		t.Errorf("single window = [%v, %v], want the instances' extent", r.Start, r.End)
	}
	if c := probeOf(t, r, "p").Counts; c != (Counts{Success: 2, Failure: 1}) {
		t.Errorf("counts = %+v", c)
	}
}

func TestLayoutFromConfigOverridesInstances(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second,
		Probes: map[string]ProbeConfig{"p": {DMax: time.Second, Bins: 10}}}, t0)
	addAll(e, ok("p", 100*time.Millisecond, 250*time.Millisecond)) // beyond the instance's 100 ms dMax
	p := probeOf(t, e.Advance(at(2 * time.Second))[1], "p")
	if p.Bins != 10 || math.Abs(p.Width-0.1) > 1e-15 {
		t.Errorf("layout = %d bins of %v s, want 10 of 0.1 s", p.Bins, p.Width)
	}
	if p.Counts.Success != 1 || p.BinCounts[2] != 1 {
		t.Errorf("a 250 ms success should sit in bin 2 of 100 ms bins: %+v %v", p.Counts, p.BinCounts)
	}
}

// TestProbeLayoutIsFixedByItsFirstInstance: a probe no configuration
// names takes the layout of its first instance and keeps it: an instance
// that carries other bins is binned in the probe's layout, and the band
// goes on over the same bins.
func TestProbeLayoutIsFixedByItsFirstInstance(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, at(time.Second))
	addAll(e, ok("p", 100*time.Millisecond, 5500*time.Microsecond))
	p := probeOf(t, e.Advance(at(2 * time.Second))[0], "p")
	if p.Bins != testBins || p.Band.K != 1 {
		t.Fatalf("first window: %d bins, band over %d", p.Bins, p.Band.K)
	}
	in := ok("p", 1100*time.Millisecond, 5500*time.Microsecond)
	in.Bins = 50
	addAll(e, in)
	p = probeOf(t, e.Advance(at(3 * time.Second))[0], "p")
	if p.Bins != testBins || p.Band.K != 2 || len(p.Band.Mean) != testBins {
		t.Errorf("after an instance with 50 bins: %d bins, band over %d windows with %d bins; want %d, 2, %d",
			p.Bins, p.Band.K, len(p.Band.Mean), testBins, testBins)
	}
	// 5.5 ms on 1 ms bins: bin 5 whichever side of an edge a bin includes.
	if p.BinCounts[5] != 1 {
		t.Errorf("bin counts %v, want the 5.5 ms success in bin 5", p.BinCounts)
	}
	if st := e.Stats(); st.Rebinned != 1 {
		t.Errorf("stats %+v, want 1 rebinned instance", st)
	}
}

// A timeout known only when its span finally ends — long after start + dMax,
// its own window long closed — counts in the oldest open window: under
// overload, timeouts must raise the failure ratio, not vanish.
func TestTimeoutAfterItsWindowClosedCountsInOldestOpenWindow(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	e.Advance(at(5 * time.Second)) // closes the windows up to [3s, 4s)
	addAll(e,
		timedOut("p", 200*time.Millisecond), // own window [0, 1s): closed
		ok("p", 4500*time.Millisecond, time.Millisecond),
		ok("p", 500*time.Millisecond, time.Millisecond), // a late success is still dropped
	)
	st := e.Stats()
	if st.Counted != 2 || st.LateTimeouts != 1 || st.Dropped[DropTooLate] != 1 {
		t.Fatalf("stats = %+v, want 2 counted (1 late timeout), 1 dropped too late", st)
	}
	rs := e.Advance(at(6 * time.Second)) // closes [4s, 5s)
	if len(rs) != 1 {
		t.Fatalf("%d windows closed, want 1", len(rs))
	}
	p := probeOf(t, rs[0], "p")
	if p.Counts.Timeout != 1 || p.Counts.Success != 1 {
		t.Errorf("window [4s, 5s) counts %+v, want 1 success and 1 timeout", p.Counts)
	}
}

// TestTimeoutAtTheEndOfTimeIsTooEarly: a timeout that starts within dMax
// of the largest time (2262-04-11, whatever its span's end) ends beyond
// the open windows, too early, as a success ending there is. Its deadline
// wrapped round to 1678, a closed window, and the timeout counted in the
// window open now, as a late one.
func TestTimeoutAtTheEndOfTimeIsTooEarly(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	start := int64(math.MaxInt64 - 1000)
	addAll(e,
		Instance{Probe: "p", Outcome: Timeout, Start: start, DMaxNs: int64(testDMax), Bins: testBins},
		Instance{Probe: "p", Outcome: Timeout, Start: start, End: math.MaxInt64, DMaxNs: int64(testDMax), Bins: testBins},
		Instance{Probe: "p", Outcome: Success, Start: start, End: math.MaxInt64, DMaxNs: int64(testDMax), Bins: testBins},
	)
	st := e.Stats()
	if st.Counted != 0 || st.LateTimeouts != 0 || st.Dropped[DropTooEarly] != 3 {
		t.Errorf("stats = %+v, want the 3 dropped too early", st)
	}
}

// TestTimeoutAfterTheClockWentBackIsTooLate: a timeout whose window has
// closed counts in the oldest open window when the batch's clock is past
// that window's close (a timer running late), or unknown; when the clock
// is before it, the clock went back after the window closed, and the
// timeout is too late, as a success ending there is. Counted, the timeouts
// of an hour that a clock stepped back by an hour all went into one
// window, and none of its successes.
func TestTimeoutAfterTheClockWentBackIsTooLate(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	e.Advance(at(10 * time.Second)) // closes the windows up to [8 s, 9 s)
	add := func(b Batch, ins ...Instance) {
		for i := range ins {
			b.Add(&ins[i])
		}
		b.End()
	}
	// Window [4 s, 5 s) closes at 6 s.
	add(e.BeginAt(func() time.Time { return at(5 * time.Second) }), timedOut("p", 4500*time.Millisecond), ok("p", 4600*time.Millisecond, time.Millisecond))
	st := e.Stats()
	if st.Counted != 0 || st.Dropped[DropTooLate] != 2 {
		t.Fatalf("clock at 5 s: stats = %+v, want both dropped too late", st)
	}
	add(e.BeginAt(func() time.Time { return at(6 * time.Second) }), timedOut("p", 4500*time.Millisecond))
	add(e.Begin(), timedOut("p", 4500*time.Millisecond))
	st = e.Stats()
	if st.Counted != 2 || st.LateTimeouts != 2 || st.Dropped[DropTooLate] != 2 {
		t.Errorf("clock at 6 s, then unknown: stats = %+v, want 2 late timeouts counted", st)
	}
	// A span that ended in an open window, longer than dMax from a start
	// in [4 s, 5 s), and one a processor judged a timeout, came from a
	// clock that did not go back: they are timeouts known by their end,
	// whatever the batch's clock, and count in the oldest open window.
	long := ok("p", 9600*time.Millisecond, 9600*time.Millisecond-4500*time.Millisecond)
	judged := long
	judged.Outcome, judged.Ended = Timeout, true
	add(e.BeginAt(func() time.Time { return at(5 * time.Second) }), long, judged)
	st = e.Stats()
	if st.Counted != 4 || st.LateTimeouts != 4 || st.Dropped[DropTooLate] != 2 {
		t.Errorf("spans that ended, clock at 5 s: stats = %+v, want 2 more late timeouts counted", st)
	}
}

// TestBeginAtReadsTheClockHeld: BeginAt reads its clock once the engine is
// held. A timeout timer that read its clock first, before a window timer
// closed the window of its timeouts (a timer running late, near the
// close), took that window's close for the clock gone back and dropped
// its timeouts too late; read held, the clock is past any close an
// Advance made, and they count as late timeouts. It reads it once a
// batch, and only for a timeout of a closed window: a batch of spans
// (every ConsumeTraces) pays nothing for it.
func TestBeginAtReadsTheClockHeld(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	closeAt := at(6 * time.Second) // window [4 s, 5 s) closes at 6 s
	clock, reads := at(5900*time.Millisecond), 0
	now := func() time.Time {
		reads++
		if e.mu.TryLock() {
			e.mu.Unlock()
			t.Error("BeginAt read its clock before holding the engine")
		}
		return clock
	}
	b := e.BeginAt(now)
	b.Add(&[]Instance{ok("p", 100*time.Millisecond, time.Millisecond)}[0])
	b.End()
	if reads != 0 {
		t.Errorf("a batch of a success in an open window read the clock %d times, want none", reads)
	}
	// The timer reads 5.9 s and is overtaken by the window timer at 6 s:
	// its batch reads the clock held, after the Advance.
	e.Advance(closeAt)
	clock = closeAt
	b = e.BeginAt(now)
	b.Add(&[]Instance{timedOut("p", 4500*time.Millisecond)}[0])
	b.Add(&[]Instance{timedOut("p", 4500*time.Millisecond)}[0])
	b.End()
	if st := e.Stats(); st.Counted != 3 || st.LateTimeouts != 2 || st.Dropped[DropTooLate] != 0 {
		t.Errorf("stats = %+v, want the timeouts counted late", st)
	}
	if reads != 1 {
		t.Errorf("a batch of two late timeouts read the clock %d times, want once", reads)
	}
}

// A span longer than dMax (or judged a timeout by a processor) that ended
// in a closed window arrived late, as a success of the same age would: it
// is dropped too late, not counted as a late timeout in the oldest open
// window. A span that ends in an open window long after start + dMax still
// counts there. Otherwise a batch of old spans (an upstream queue replayed
// after an outage) put its timeouts, and none of its successes, into the
// window open now.
func TestSpanLongerThanDMaxThatEndedInAClosedWindowIsTooLate(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second}, t0)
	e.Advance(at(5 * time.Second)) // closes the windows up to [3s, 4s)
	// A span a processor judged a timeout, which ended at 2 s.
	judged := ok("p", 2*time.Second, 500*time.Millisecond)
	judged.Outcome, judged.Ended = Timeout, true
	addAll(e,
		ok("p", 2*time.Second, 500*time.Millisecond),        // ended in [2s, 3s): closed
		ok("p", 2*time.Second, time.Millisecond),            // a success as old
		ok("p", 4500*time.Millisecond, 4*time.Second),       // ends in [4s, 5s): open
		failed("p", 2*time.Second),                          // a failure as old
		ok("p", 4500*time.Millisecond, 20*time.Millisecond), // in time
		judged,
	)
	st := e.Stats()
	if st.Counted != 2 || st.LateTimeouts != 1 || st.Dropped[DropTooLate] != 4 {
		t.Fatalf("stats = %+v, want 2 counted (1 late timeout), 4 dropped too late", st)
	}
	p := probeOf(t, e.Advance(at(6 * time.Second))[0], "p")
	if p.Counts.Timeout != 1 || p.Counts.Success != 1 || p.Counts.Failure != 0 {
		t.Errorf("window [4s, 5s) counts %+v, want 1 success and 1 timeout", p.Counts)
	}
}

// Layouts come from the first instance of each probe that no configuration
// names; accumulators of the layouts of forgotten probes are not kept,
// however many such probes come and go.
func TestAbandonedLayoutsAreNotKept(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, Lag: time.Second, ProbeIdleTimeout: time.Second}, at(time.Second))
	for i := range 200 {
		in := ok(fmt.Sprintf("p%d", i), time.Duration(i)*time.Second+100*time.Millisecond, 5*time.Millisecond)
		in.DMaxNs = int64(testDMax) + int64(i) // a new layout every window
		addAll(e, in)
		e.Advance(at(time.Duration(i+2) * time.Second))
	}
	if n := len(e.free); n > 3 {
		t.Errorf("free lists for %d layouts after 200 probes of their own layout, want at most 3", n)
	}
	if st := e.Stats(); st.Probes > 3 || st.ExpiredProbes < 197 {
		t.Errorf("stats %+v: want the idle probes forgotten", st)
	}
}

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
		{"processor layout", Config{LookupLayout: func(name string) (deltaq.Layout, bool) {
			return deltaq.Layout{DMaxNs: int64(testDMax), Bins: testBins}, name == "p"
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
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: "e2e = a -> b;",
		Probes:           map[string]ProbeConfig{"real": {}},
		ConfiguredProbes: []string{"reg"},
		LookupLayout: func(name string) (deltaq.Layout, bool) {
			return deltaq.Layout{DMaxNs: int64(testDMax), Bins: testBins}, name == "proc" || name == "reg"
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

// TestWindowIndexAsDivision: the window windowIndex returns and the slot
// slotFor then returns, from the memo of the last window or by division,
// are floorDiv's and slotOf's, for ends in one window, across windows,
// before 1970 and at the end of time; and slotFor of another window is its
// own.
func TestWindowIndexAsDivision(t *testing.T) {
	e, err := New(Config{Interval: time.Second, Lag: 1500 * time.Millisecond}, time.Unix(1000, 0))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ends := []int64{0, -1, 1, 999_999_999, 1_000_000_000, -1_000_000_000, -1_000_000_001, math.MaxInt64, math.MaxInt64 - 1, math.MinInt64}
	for range 10_000 {
		base := rng.Int64N(1<<40) * 1_000_000
		ends = append(ends, base, base+1, base+999_999, base-1, rng.Int64(), -rng.Int64())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, end := range ends {
		k := e.windowIndex(end)
		slot := e.slotFor(k)
		if wk := floorDiv(end, e.interval); k != wk || slot != e.slotOf(wk) {
			t.Fatalf("windowIndex(%d) = %d, slot %d; want %d, %d", end, k, slot, wk, e.slotOf(wk))
		}
		if other := k + 1 + rng.Int64N(5); e.slotFor(other) != e.slotOf(other) {
			t.Fatalf("slotFor(%d) after window %d = %d, want %d", other, k, e.slotFor(other), e.slotOf(other))
		}
	}
}
