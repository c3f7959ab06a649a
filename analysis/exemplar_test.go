// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// traced gives in a trace id and a span id made of b, and a weight.
func traced(in Instance, b byte, weight int64) Instance {
	in.TraceID = [16]byte{15: b}
	in.SpanID = [8]byte{7: b}
	in.Weight = weight
	return in
}

// closeFirst closes the first window of e (cfg interval 1 s, started at t0).
func closeFirst(t *testing.T, e *Engine) *Result {
	t.Helper()
	got := e.Advance(at(2 * time.Second))
	if len(got) == 0 {
		t.Fatal("no window closed")
	}
	return got[len(got)-1]
}

// TestWeightedCounts: an instance of adjusted count n counts n times in its
// bin, its outcome counter, the success sum and the running totals, as n
// instances of weight 1 would; a weight of 0 counts one; a weight above
// max_adjusted_count counts max_adjusted_count and is counted as clamped.
func TestWeightedCounts(t *testing.T) {
	cfg := Config{Interval: time.Second, MaxAdjustedCount: 100}
	w := newEngine(t, cfg, t0)
	u := newEngine(t, cfg, t0)
	weighted := []Instance{
		traced(ok("p", 100*time.Millisecond, 5*time.Millisecond), 1, 4),
		traced(ok("p", 200*time.Millisecond, 12*time.Millisecond), 2, 0),
		traced(failed("p", 300*time.Millisecond), 3, 3),
		traced(timedOut("p", 400*time.Millisecond), 4, 2),
	}
	addAll(w, weighted...)
	for _, in := range weighted {
		n := max(in.Weight, 1)
		in.Weight = 1
		for range n {
			addAll(u, in)
		}
	}
	pw, pu := probeOf(t, closeFirst(t, w), "p"), probeOf(t, closeFirst(t, u), "p")
	if pw.Counts != (Counts{Success: 5, Timeout: 2, Failure: 3}) || pw.Counts != pu.Counts || pw.Totals != pu.Totals {
		t.Errorf("weighted counts %+v totals %+v, unweighted %+v %+v", pw.Counts, pw.Totals, pu.Counts, pu.Totals)
	}
	for i := range pw.BinCounts {
		if pw.BinCounts[i] != pu.BinCounts[i] {
			t.Fatalf("bin %d: weighted %d, unweighted %d", i, pw.BinCounts[i], pu.BinCounts[i])
		}
	}
	// Σ delays: 4 × 5 ms + 12 ms.
	if math.Abs(pw.SuccessSum-0.032) > 1e-12 || math.Abs(pw.SuccessSum-pu.SuccessSum) > 1e-12 {
		t.Errorf("success sum %v (unweighted %v), want 0.032", pw.SuccessSum, pu.SuccessSum)
	}
	// Kish's effective count: (4 + 1 + 3 + 2)² / (16 + 1 + 9 + 4) = 10/3;
	// the same counts unsampled are 10 instances.
	if math.Abs(pw.EffectiveInstances-10.0/3) > 1e-12 || pu.EffectiveInstances != 10 {
		t.Errorf("effective instances %v sampled, %v unsampled; want 10/3 and 10", pw.EffectiveInstances, pu.EffectiveInstances)
	}
	if got := w.Stats().Counted; got != 4 {
		t.Errorf("Counted = %d, want 4 instances (spans), whatever their weights", got)
	}

	c := newEngine(t, cfg, t0)
	addAll(c, traced(ok("p", 100*time.Millisecond, 5*time.Millisecond), 1, 1000))
	if p := probeOf(t, closeFirst(t, c), "p"); p.Counts.Success != 100 || c.Stats().WeightClamped != 1 {
		t.Errorf("weight 1000 over a bound of 100: %d successes, %d clamped; want 100 and 1", p.Counts.Success, c.Stats().WeightClamped)
	}
}

// TestWeightedWindowsMergeExactly: windows of weighted instances merge by
// adding counts, as their agents counted them (AddWindow), with their
// weights.
func TestWeightedWindowsMergeExactly(t *testing.T) {
	cfg := Config{Interval: time.Second, Probes: map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins}}}
	acfg := cfg
	acfg.WindowCounts = true // agents that send their windows
	agents := []*Engine{newEngine(t, acfg, t0), newEngine(t, acfg, t0)}
	whole := newEngine(t, cfg, t0)
	for i, a := range agents {
		ins := []Instance{
			traced(ok("p", 100*time.Millisecond, time.Duration(3+i)*time.Millisecond), 1, int64(8+i)),
			traced(failed("p", 300*time.Millisecond), 2, int64(2+i)),
		}
		addAll(a, ins...)
		addAll(whole, ins...)
	}
	gw := newEngine(t, Config{Interval: time.Second, Lag: time.Second, Probes: cfg.Probes}, t0)
	for i, a := range agents {
		r := closeFirst(t, a)
		win, ok := WindowOf(r, probeOf(t, r, "p"), string(rune('a'+i)))
		if !ok {
			t.Fatal("WindowOf: no window")
		}
		if c := gw.AddWindow(&win); c != ContributionAccepted {
			t.Fatalf("AddWindow: %v", c)
		}
	}
	var merged *ProbeResult
	for _, r := range gw.Advance(at(3 * time.Second)) {
		if r.Start.Equal(t0) {
			merged = probeOf(t, r, "p")
		}
	}
	want := probeOf(t, closeFirst(t, whole), "p")
	// The weights travel with the windows (Σw, Σw²): the gateway's
	// effective count is the one an engine that saw every instance has,
	// Kish's 22²/(8² + 2² + 9² + 3²) = 3.06, not the 22 counts.
	if merged != nil && math.Abs(merged.EffectiveInstances-want.EffectiveInstances) > 1e-9 || math.Abs(want.EffectiveInstances-22.0*22/158) > 1e-9 {
		t.Errorf("merged windows: effective instances %v, one engine %v, want 22²/158", merged.EffectiveInstances, want.EffectiveInstances)
	}
	if merged == nil || merged.Counts != want.Counts || merged.Counts != (Counts{Success: 17, Failure: 5}) {
		t.Fatalf("merged %+v, want %+v (17 successes, 5 failures)", merged, want.Counts)
	}
	for i := range want.BinCounts {
		if merged.BinCounts[i] != want.BinCounts[i] {
			t.Errorf("bin %d: merged %d, one engine %d", i, merged.BinCounts[i], want.BinCounts[i])
		}
	}
}

// TestExemplarsCoverTheDistribution: with exemplars on, each of the
// max_per_probe groups of bins names its slowest success; the last timeout
// and the last failure are named besides; instances without a trace id
// are never named; with exemplars off none are.
func TestExemplarsCoverTheDistribution(t *testing.T) {
	// 100 bins of 1 ms in 4 groups of 25 ms.
	cfg := Config{Interval: time.Second, Exemplars: ExemplarConfig{Enabled: true, MaxPerProbe: 4}}
	e := newEngine(t, cfg, t0)
	var ins []Instance
	for i, ms := range []int{1, 7, 24, 26, 30, 80, 99, 60} {
		ins = append(ins, traced(ok("p", 100*time.Millisecond, time.Duration(ms)*time.Millisecond), byte(i+1), 1))
	}
	// The slowest of all, without a trace: not named.
	ins = append(ins, ok("p", 100*time.Millisecond, 100*time.Millisecond),
		traced(timedOut("p", 10*time.Millisecond), 20, 1), traced(timedOut("p", 20*time.Millisecond), 21, 1),
		traced(failed("p", 500*time.Millisecond), 30, 1))
	addAll(e, ins...)
	p := probeOf(t, closeFirst(t, e), "p")
	var got []string
	for _, x := range p.Exemplars {
		got = append(got, x.Outcome.String()+":"+time.Duration(x.Delay).String()+":"+string(rune('0'+x.TraceID[15]%10)))
	}
	// Groups (0,25], (25,50], (50,75], (75,100] ms: slowest 24 (trace 3),
	// 30 (5), 60 (8), 99 (7); the last timeout (21) ends at start + dMax.
	want := "success:24ms:3 success:30ms:5 success:60ms:8 success:99ms:7 timeout:100ms:1 failure:1ms:0"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("exemplars\n got %s\nwant %s", s, want)
	}
	if x := p.Exemplars[4]; x.Time != at(120*time.Millisecond).UnixNano() || x.SpanID != ([8]byte{7: 21}) {
		t.Errorf("timeout exemplar at %d span %x, want start + dMax and span 21", x.Time, x.SpanID)
	}

	off := newEngine(t, Config{Interval: time.Second}, t0)
	addAll(off, ins...)
	if p := probeOf(t, closeFirst(t, off), "p"); p.Exemplars != nil {
		t.Errorf("exemplars off: %d exemplars", len(p.Exemplars))
	}
}

// TestWorstInstancesOnTriggers: a window's slowest successes (slowest
// first), first timeouts and failures, worst_instances of each, reach the
// probe's result, its trigger and its snapshot.
func TestWorstInstancesOnTriggers(t *testing.T) {
	cfg := Config{Interval: time.Second, WorstInstances: 2, Snapshot: SnapshotConfig{Enabled: true},
		Probes: map[string]ProbeConfig{"p": {DMax: testDMax, Bins: testBins, QTA: QTA{Points: []QTAPoint{{Delay: 50 * time.Millisecond, P: 0.99}}}, Triggers: Triggers{QTA: true}}}}
	e := newEngine(t, cfg, t0)
	var ins []Instance
	for i, ms := range []int{10, 90, 20, 80, 85, 5} {
		ins = append(ins, traced(ok("p", 100*time.Millisecond, time.Duration(ms)*time.Millisecond), byte(i+1), 1))
	}
	for i := range 3 {
		ins = append(ins, traced(timedOut("p", time.Duration(i)*time.Millisecond), byte(20+i), 1),
			traced(failed("p", 300*time.Millisecond), byte(30+i), 1))
	}
	addAll(e, ins...)
	r := closeFirst(t, e)
	ids := func(xs []Exemplar) []byte {
		var out []byte
		for _, x := range xs {
			out = append(out, x.TraceID[15])
		}
		return out
	}
	w := probeOf(t, r, "p").Worst
	if s, to, f := ids(w.Slowest), ids(w.Timeouts), ids(w.Failures); string(s) != "\x02\x05" || string(to) != "\x14\x15" || string(f) != "\x1e\x1f" {
		t.Fatalf("worst: slowest %v timeouts %v failures %v; want [2 5] [20 21] [30 31]", s, to, f)
	}
	if len(r.Triggers) != 1 || ids(r.Triggers[0].Worst.Slowest)[0] != 2 {
		t.Fatalf("triggers %+v: want the QTA trigger naming trace 2 first", r.Triggers)
	}
	var snap *SnapshotProbe
	for _, rr := range e.Flush(at(10 * time.Second)) {
		for _, s := range rr.Snapshots {
			for _, sw := range s.Windows {
				for i := range sw.Probes {
					if sw.Probes[i].Name == "p" && sw.End.Equal(r.End) {
						snap = &sw.Probes[i]
					}
				}
			}
		}
	}
	for _, s := range r.Snapshots {
		for _, sw := range s.Windows {
			for i := range sw.Probes {
				if sw.Probes[i].Name == "p" && sw.End.Equal(r.End) {
					snap = &sw.Probes[i]
				}
			}
		}
	}
	if snap == nil || len(snap.Worst.Slowest) != 2 || len(snap.Worst.Timeouts) != 2 {
		t.Errorf("snapshot window of the trigger: %+v, want its worst instances", snap)
	}
}

// TestSelectionBounds: the options' ranges.
func TestSelectionBounds(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Exemplars: ExemplarConfig{MaxPerProbe: 65}}, `exemplars.max_per_probe: must be in [0, 64], got 65`},
		{Config{WorstInstances: -1}, `worst_instances: must be in [0, 32], got -1`},
		{Config{MaxAdjustedCount: 1<<40 + 1}, `max_adjusted_count: must be in [0, 1099511627776], got 1099511627777`},
	} {
		if err := c.cfg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check: %v, want %s", err, c.want)
		}
	}
}

// TestTailSamplingBias gives the README's figures of the bias of a ΔQ
// counted after tail sampling. 10,000 instances of exponential delays of
// mean 30 ms (their exact quantiles): F(100 ms) = 1 − e^(−100/30) = 0.9643,
// median 30·ln 2 = 20.8 ms. A tail-sampling policy that keeps every trace
// slower than 100 ms and one in ten of the others leaves 0.1·0.9643 +
// 0.0357 = 13.2 % of the instances and F(100 ms) = 0.0964/0.1321 = 0.730,
// median m with 0.1·F(m) = 0.5·0.1321, m = 30·ln(1/(1 − 5·0.1321)) = 32.4
// ms: the ΔQ of a system half as slow again at the median, and a QTA of
// 95 % within 100 ms broken that the system meets. Counted before it, with
// head sampling (one in ten, each kept span counted ten times), the ΔQ is
// the system's.
func TestTailSamplingBias(t *testing.T) {
	const n = 10_000
	cfg := Config{Interval: time.Hour, Probes: map[string]ProbeConfig{"p": {DMax: time.Second, Bins: 1000}}}
	before, after, head := newEngine(t, cfg, t0), newEngine(t, cfg, t0), newEngine(t, cfg, t0)
	for i := range n {
		d := time.Duration(-math.Log(1-(float64(i)+0.5)/n) * float64(30*time.Millisecond))
		in := ok("p", time.Second, d)
		addAll(before, in)
		if d > 100*time.Millisecond || i%10 == 0 {
			addAll(after, in)
		}
		if i%10 == 3 {
			in.Weight = 10
			addAll(head, in)
		}
	}
	end := at(2 * time.Hour)
	f := func(e *Engine) (float64, float64, int64) {
		var p *ProbeResult
		for _, r := range e.Flush(end) {
			if q := probeOf(t, r, "p"); q.Observed != nil {
				p = q
			}
		}
		if p == nil {
			t.Fatal("no window with instances")
		}
		med, _ := p.Observed.Quantile(0.5)
		return p.Observed.CDF(0.1), med, p.Counts.Total()
	}
	for _, c := range []struct {
		name      string
		e         *Engine
		f100, med float64
		total     int64
	}{
		{"unsampled", before, 0.9643, 0.0208, n},
		{"after tail sampling", after, 0.730, 0.0324, 1321},
		{"head sampled 1 in 10, weighted", head, 0.9643, 0.0208, n},
	} {
		f100, med, total := f(c.e)
		t.Logf("%s: F(100 ms) = %.3f, median %.1f ms, %d instances", c.name, f100, med*1e3, total)
		if math.Abs(f100-c.f100) > 0.01 || math.Abs(med-c.med) > 0.0015 || math.Abs(float64(total-c.total)) > 2 {
			t.Errorf("%s: F(100 ms) = %.4f, median %.4f s, %d instances; want %.4f, %.4f s, %d", c.name, f100, med, total, c.f100, c.med, c.total)
		}
	}
}

// TestDivergenceTestCountsSpansNotWeights: a probe whose instances are all
// sampled one in four has the same divergence test as the same spans
// unsampled: its N is the spans behind the window, not the 4× counts.
func TestDivergenceTestCountsSpansNotWeights(t *testing.T) {
	cfg := Config{Interval: time.Second, Diagram: "e2e = a -> b;",
		Probes: map[string]ProbeConfig{
			"a": {DMax: testDMax, Bins: testBins}, "b": {DMax: testDMax, Bins: testBins},
			"e2e": {DMax: testDMax, Bins: testBins}}}
	var tests [2]float64
	for k, w := range []int64{1, 4} {
		e := newEngine(t, cfg, t0)
		for i := range 50 {
			d := time.Duration(1+i%20) * time.Millisecond
			addAll(e, traced(ok("a", 100*time.Millisecond, d), 1, w), traced(ok("b", 100*time.Millisecond, d), 2, w),
				traced(ok("e2e", 100*time.Millisecond, 3*d), 3, w))
		}
		p := probeOf(t, closeFirst(t, e), "e2e")
		if !p.HasDivergence {
			t.Fatalf("weight %d: no divergence", w)
		}
		if p.DivergenceTest.N != 50 || p.Counts.Total() != 50*w {
			t.Errorf("weight %d: test N = %v, counts %d; want 50 spans and %d counts", w, p.DivergenceTest.N, p.Counts.Total(), 50*w)
		}
		tests[k] = p.DivergenceTest.P
	}
	if tests[0] != tests[1] {
		t.Errorf("p-value %v unsampled, %v sampled one in four: want the same", tests[0], tests[1])
	}
}

// TestSnapshotFileNamesTheWorstInstances: a snapshot file carries the trace
// ids of its trigger's and its windows' worst instances, in hex.
func TestSnapshotFileNamesTheWorstInstances(t *testing.T) {
	w := WorstInstances{Slowest: []Exemplar{{TraceID: [16]byte{0: 0xab, 15: 1}}}, Failures: []Exemplar{{TraceID: [16]byte{15: 2}}}}
	s := &Snapshot{ID: 1, Time: t0, Triggers: []TriggerEvent{{Probe: "p", Kind: TriggerQTA, Time: t0, Worst: w}},
		Windows: []SnapshotWindow{{Start: t0, End: at(time.Second), Probes: []SnapshotProbe{{Name: "p", Worst: w}, {Name: "q"}}}}}
	var b strings.Builder
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Triggers []struct {
			TraceIDs map[string][]string `json:"trace_ids"`
		} `json:"triggers"`
		Windows []struct {
			Probes []struct {
				TraceIDs map[string][]string `json:"trace_ids"`
			} `json:"probes"`
		} `json:"windows"`
	}
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"slowest": {"ab000000000000000000000000000001"}, "failure": {"00000000000000000000000000000002"}}
	if !reflect.DeepEqual(got.Triggers[0].TraceIDs, want) || !reflect.DeepEqual(got.Windows[0].Probes[0].TraceIDs, want) {
		t.Errorf("trace ids: trigger %v, probe %v; want %v", got.Triggers[0].TraceIDs, got.Windows[0].Probes[0].TraceIDs, want)
	}
	if got.Windows[0].Probes[1].TraceIDs != nil || strings.Count(b.String(), "trace_ids") != 2 {
		t.Errorf("a probe without worst instances has trace_ids: %s", b.String())
	}
}

// TestPicksKeepsAsSuccess: offering only the successes keeps says it keeps
// leaves the picks as offering every success does (Engine.count makes the
// exemplar only for those), for several group counts and worst lists, with
// ties and empty bins.
func TestPicksKeepsAsSuccess(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ groups, worst, bins int }{{0, 0, 100}, {0, 5, 100}, {10, 0, 100}, {10, 5, 100}, {7, 3, 13}, {1, 1, 1}} {
		all, some := newPicks(c.groups, c.worst), newPicks(c.groups, c.worst)
		for i := range 5000 {
			d := int64(rng.IntN(1000)) // ties are frequent
			bin := int(d) * c.bins / 1000
			if rng.IntN(20) == 0 {
				bin = -1 // not counted as a success in a bin
			}
			var id [16]byte
			id[0], id[1], id[15] = byte(i), byte(i>>8), 1
			e := Exemplar{TraceID: id, Outcome: Success, Delay: d, Time: int64(i)}
			all.success(&e, bin, c.bins)
			if some.keeps(d, bin, c.bins) {
				some.success(&e, bin, c.bins)
			}
		}
		if !reflect.DeepEqual(all, some) {
			t.Errorf("%+v: the picks differ when only what keeps says is offered", c)
		}
	}
}

// TestPicksGroup: the group of a bin found by multiplication
// (picks.group) is ⌊bin·G/nBins⌋, the division it replaces, for every bin
// of every bin count up to 1500 and 50,000 bins of bin counts up to
// deltaq.MaxBins, with 1, 3, 8 and 64 groups, and with one picks serving
// bin counts in turn (the divisor it keeps is changed).
func TestPicksGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, g := range []int{1, 3, 8, MaxExemplarsPerProbe} {
		p := newPicks(g, 0)
		check := func(bin, nBins int) {
			if got, want := p.group(bin, nBins), bin*g/nBins; got != want {
				t.Fatalf("%d groups: bin %d of %d in group %d, want %d", g, bin, nBins, got, want)
			}
		}
		for nBins := 1; nBins <= 1500; nBins++ {
			for bin := range nBins {
				check(bin, nBins)
			}
		}
		for range 50_000 {
			nBins := 1 + rng.IntN(deltaq.MaxBins)
			check(rng.IntN(nBins), nBins)
			check(nBins-1, nBins)
		}
	}
}

// TestWorstInstance: the one instance a trigger or snapshot record links to
// by its own trace context. The window's worst is its first timeout (it did
// not complete within dMax), else its first failure, else its slowest
// success; a failure trigger links to a failure first, since that is what
// it counts; a window that named none links to nothing.
func TestWorstInstance(t *testing.T) {
	ex := func(n byte, o Outcome) Exemplar {
		return Exemplar{TraceID: [16]byte{15: n}, SpanID: [8]byte{7: n}, Outcome: o}
	}
	slow := []Exemplar{ex(1, Success), ex(2, Success)}
	timeouts := []Exemplar{ex(3, Timeout), ex(4, Timeout)}
	failures := []Exemplar{ex(5, Failure)}
	for _, c := range []struct {
		name string
		w    WorstInstances
		kind TriggerKind
		want byte // 0: none
		// wantFailureTrigger is what a failure trigger of the same window names.
		wantFailureTrigger byte
	}{
		{"all three", WorstInstances{Slowest: slow, Timeouts: timeouts, Failures: failures}, TriggerQTA, 3, 5},
		{"no timeout", WorstInstances{Slowest: slow, Failures: failures}, TriggerSlackTrend, 5, 5},
		{"successes only", WorstInstances{Slowest: slow}, TriggerDivergence, 1, 1},
		{"timeouts, no failure", WorstInstances{Slowest: slow, Timeouts: timeouts}, TriggerLoad, 3, 3},
		{"none", WorstInstances{}, TriggerQTA, 0, 0},
	} {
		got, ok := c.w.Worst()
		if ok != (c.want != 0) || got.TraceID[15] != c.want || got.SpanID[7] != c.want {
			t.Errorf("%s: Worst() = %v, %v; want instance %d", c.name, got, ok, c.want)
		}
		tr := TriggerEvent{Kind: c.kind, Worst: c.w}
		if got, ok := tr.WorstInstance(); ok != (c.want != 0) || got.TraceID[15] != c.want {
			t.Errorf("%s: %s trigger links to %v, %v; want instance %d", c.name, c.kind, got, ok, c.want)
		}
		tr.Kind = TriggerFailure
		if got, ok := tr.WorstInstance(); ok != (c.wantFailureTrigger != 0) || got.TraceID[15] != c.wantFailureTrigger {
			t.Errorf("%s: failure trigger links to %v, %v; want instance %d", c.name, got, ok, c.wantFailureTrigger)
		}
	}
}

// TestBandCountsSampledSpans: the band's binomial floor (deltaq's Wilson
// score interval where every window reads the CDF alike) counts the
// spans behind a window, Kish's effective count, not the instances their
// adjusted counts stand for: two windows of one span of adjusted count 50
// each, both within 5 ms, have F = 1 at every edge from 5 ms, and a band
// over n = 2²/(1/1 + 1/1) = 2 effective instances, whose lower bound is
// n/(n + z²) with z = 1.959964 (deltaq.ConfidenceBand, docs/design.md),
// not that of 100 instances.
func TestBandCountsSampledSpans(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second, History: 2, MaxAdjustedCount: 100}, t0)
	addAll(e, traced(ok("p", 100*time.Millisecond, 5*time.Millisecond), 1, 50))
	addAll(e, traced(ok("p", 1100*time.Millisecond, 5*time.Millisecond), 2, 50))
	var b *deltaq.ConfidenceBand
	for _, r := range e.Advance(at(5 * time.Second)) {
		for i := range r.Probes {
			if p := &r.Probes[i]; p.Name == "p" && p.Band != nil {
				b = p.Band
			}
		}
	}
	if b == nil || b.K != 2 {
		t.Fatalf("band %+v, want one over two windows", b)
	}
	const z2 = 1.959963984540054 * 1.959963984540054
	last := len(b.Lower) - 1
	if want := 2 / (2 + z2); b.Mean[last] != 1 || math.Abs(b.Lower[last]-want) > 1e-12 || b.Upper[last] != 1 {
		t.Fatalf("band at dMax [%v, %v, %v], want [%v, 1, 1]", b.Lower[last], b.Mean[last], b.Upper[last], want)
	}
}
