// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

const ms = time.Millisecond

// draftQoO is the requirement of the worked example of "Quality of
// Outcome" (draft-ietf-ippm-qoo-10, section 3.4) as a probe's qoo option.
func draftQoO() QoOConfig {
	return QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0.999, Delay: 300 * ms}, {P: 0.99, Delay: 200 * ms}}, MaxFailure: 0.01},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0.99, Delay: 500 * ms}, {P: 0.999, Delay: 600 * ms}}, MaxFailure: 0.05},
	}
}

func TestQoOConfigRequirement(t *testing.T) {
	r, err := draftQoO().Requirement()
	if err != nil {
		t.Fatal(err)
	}
	want := deltaq.QoORequirement{
		Latency: []deltaq.QoOLatency{{Percentile: 0.99, ROP: 0.2, CPUP: 0.5}, {Percentile: 0.999, ROP: 0.3, CPUP: 0.6}},
		ROPLoss: 0.01, CPUPLoss: 0.05,
	}
	if !slices.Equal(r.Latency, want.Latency) || r.ROPLoss != want.ROPLoss || r.CPUPLoss != want.CPUPLoss || r.MinRate != 0 {
		t.Errorf("requirement %+v, want %+v (points paired by percentile, sorted)", r, want)
	}
	if cfg := (Config{Probes: map[string]ProbeConfig{"x": {QoO: draftQoO()}}}); cfg.Check() != nil {
		t.Errorf("Check refused the draft's example: %v", cfg.Check())
	}
	if !(QoOConfig{}).IsZero() || draftQoO().IsZero() {
		t.Error("IsZero")
	}
}

// TestQoOConfigProblems: each mistake is named by its option and says how
// to mend it.
func TestQoOConfigProblems(t *testing.T) {
	cases := []struct {
		name string
		edit func(*QoOConfig)
		want string
	}{
		{"only a rate", func(q *QoOConfig) { *q = QoOConfig{MinRate: 5} }, `probes["x"].qoo: needs rop and cpup`},
		{"percentile missing in cpup", func(q *QoOConfig) { q.CPUP.Points = q.CPUP.Points[:1] },
			`probes["x"].qoo.cpup: has no point at p 0.999, which rop.points[0] has: rop and cpup name the same percentiles; add {p: 0.999, delay: …} to cpup.points, longer than rop's 300ms`},
		{"percentile missing in rop", func(q *QoOConfig) { q.ROP.Points = q.ROP.Points[1:] },
			`probes["x"].qoo.rop: has no point at p 0.999, which cpup.points[1] has`},
		{"cpup not looser", func(q *QoOConfig) { q.CPUP.Points[0].Delay = 200 * ms },
			`probes["x"].qoo.cpup.points[0].delay: 200ms is not looser than rop's 200ms at p 0.99: the score falls from 100 at the rop delay to 0 at the cpup delay, so the cpup delay must be longer`},
		{"percentage", func(q *QoOConfig) { q.ROP.Points[0].P = 99.9 },
			`probes["x"].qoo.rop.points[0].p: 99.9 is not in [0, 1]: p is a fraction, 99.9 % is 0.999`},
		{"percentile twice", func(q *QoOConfig) { q.ROP.Points[0].P = 0.99 },
			`probes["x"].qoo.rop.points[1].p: 0.99 is given twice (points[0] too): give each percentile once`},
		{"negative delay", func(q *QoOConfig) { q.ROP.Points[1].Delay = -ms }, `probes["x"].qoo.rop.points[1].delay: must be ≥ 0, got -1ms`},
		{"falling delays", func(q *QoOConfig) { q.CPUP.Points[1].Delay = 400 * ms },
			`probes["x"].qoo.cpup.points: the delay falls from 500ms at p 0.99 to 400ms at p 0.999: a higher percentile is never a shorter delay`},
		{"loss not looser", func(q *QoOConfig) { q.CPUP.MaxFailure = 0.01 },
			`probes["x"].qoo.cpup.max_failure: 0.01 is not looser than rop.max_failure 0.01: the loss score falls from 100 at rop's ratio to 0 at cpup's, so cpup's must be larger (for a requirement on delays alone, rop.max_failure: 0 and cpup.max_failure: 1)`},
		{"loss as a percentage", func(q *QoOConfig) { q.CPUP.MaxFailure = 5 },
			`probes["x"].qoo.cpup.max_failure: 5 is not in [0, 1]: max_failure is a fraction, 5 % is 0.05`},
		{"negative rate", func(q *QoOConfig) { q.MinRate = -1 }, `probes["x"].qoo.min_rate: must be a rate in [0, 1e+09] of completed instances per second, got -1`},
		{"min instances", func(q *QoOConfig) { q.MinInstances = -2 }, `probes["x"].qoo.min_instances: must be in [0, 1000000], got -2`},
	}
	for _, c := range cases {
		q := draftQoO()
		c.edit(&q)
		err := (&Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}).Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v\nwant %s", c.name, err, c.want)
		}
	}
}

// TestQoOConfigEveryProblem: the problems of the failure ratios are
// reported with those of the points, not only once the points are mended
// (Check names every problem of the section at once).
func TestQoOConfigEveryProblem(t *testing.T) {
	q := draftQoO()
	q.ROP.Points[1].Delay = -ms
	q.ROP.MaxFailure = -0.1
	q.CPUP.MaxFailure = 5
	err := (&Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}).Check()
	for _, want := range []string{
		`probes["x"].qoo.rop.points[1].delay: must be ≥ 0, got -1ms`,
		`probes["x"].qoo.rop.max_failure: -0.1 is not in [0, 1]`,
		`probes["x"].qoo.cpup.max_failure: 5 is not in [0, 1]: max_failure is a fraction, 5 % is 0.05`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
	// The order of the ratios is checked too when a point has a problem.
	q = draftQoO()
	q.CPUP.Points[0].Delay = 100 * ms
	q.CPUP.MaxFailure = 0.01
	err = (&Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}).Check()
	for _, want := range []string{
		`probes["x"].qoo.cpup.points[0].delay: 100ms is not looser than rop's 200ms`,
		`probes["x"].qoo.cpup.max_failure: 0.01 is not looser than rop.max_failure 0.01`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
	// A qoo without rop and cpup says that once, not also that cpup's
	// ratio 0 is not looser than rop's.
	err = (&Config{Probes: map[string]ProbeConfig{"x": {QoO: QoOConfig{MinRate: 5}}}}).Check()
	if err == nil || strings.Contains(err.Error(), "max_failure") {
		t.Errorf("only a rate: %v, want needs rop and cpup alone", err)
	}
}

// spread returns n successes of probe ending in the window [t0, t0 + 1 s),
// with delays (i+1)·step, i < n, and f failures.
func spread(probe string, n int, step time.Duration, f int) []Instance {
	var ins []Instance
	for i := range n {
		ins = append(ins, ok(probe, 500*ms, time.Duration(i+1)*step))
	}
	for range f {
		ins = append(ins, failed(probe, 600*ms))
	}
	return ins
}

// window runs the instances through windows of one second and returns
// the one starting at t0.
func window(t *testing.T, cfg Config, ins []Instance) *Result {
	t.Helper()
	cfg.Interval = time.Second
	e := newEngine(t, cfg, t0)
	addAll(e, ins...)
	for _, r := range e.Flush(at(10 * time.Second)) {
		if r.Start.Equal(t0) {
			return r
		}
	}
	t.Fatal("no window starting at t0")
	return nil
}

// TestQoOOfAWindow scores a window whose percentiles are known exactly: 980
// successes every 0.1 ms from 0.1 ms to 98 ms (one bin of 1 ms holds ten)
// and 20 failures. Over the completed instances the 50th percentile is
// 49 ms and the 90th 88.2 ms; the loss is 2 %. Against ROP {50 %, 20 ms},
// {90 %, 50 ms}, 1 % and CPUP {50 %, 80 ms}, {90 %, 100 ms}, 5 %:
// m₅₀ = 1 − 29/60 = 0.5167, m₉₀ = 1 − 38.2/50 = 0.236, loss 0.75 — QoO
// 23.6 ("Quality of Outcome", draft-ietf-ippm-qoo-10, section 3.3), at a
// rate of 980 completed instances a second; the percentiles are read at the
// analysis resolution, within their buckets' widths.
func TestQoOOfAWindow(t *testing.T) {
	q := QoOConfig{
		ROP:     QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 20 * ms}, {P: 0.9, Delay: 50 * ms}}, MaxFailure: 0.01},
		CPUP:    QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 80 * ms}, {P: 0.9, Delay: 100 * ms}}, MaxFailure: 0.05},
		MinRate: 900,
	}
	ins := spread("x", 980, 100*time.Microsecond, 20)
	pr := probeOf(t, window(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, ins), "x")
	if pr.QoO == nil || !pr.QoO.Observed.OK || pr.QoO.Calculated.Present {
		t.Fatalf("QoO %+v, want an observed score and no calculated one", pr.QoO)
	}
	o := pr.QoO.Observed
	if pr.QoO.MinInstances != 10 || o.Completed != 980 {
		t.Errorf("min instances %d, completed %v; want 10 and 980", pr.QoO.MinInstances, o.Completed)
	}
	// The percentiles are read at the analysis resolution: within the
	// width of their analysis buckets, which bounds the score's error too.
	lo50, hi50 := fineBucket(t, 49*time.Millisecond)
	lo90, hi90 := fineBucket(t, 88200*time.Microsecond)
	if !within(o.Measured.Latency[0], 0.049, hi50-lo50) || !within(o.Measured.Latency[1], 0.0882, hi90-lo90) || !within(o.Measured.Loss, 0.02, 1e-12) {
		t.Errorf("measured %+v, want 49 ms ± %v, 88.2 ms ± %v, 2 %%", o.Measured, hi50-lo50, hi90-lo90)
	}
	tol := 100 * (hi90 - lo90) / 0.050
	if !o.Measured.HasRate || o.Measured.Rate != 980 || o.QoO.Rate != 100 {
		t.Errorf("rate %v (component %v), want 980 a second, 100", o.Measured.Rate, o.QoO.Rate)
	}
	if !within(o.QoO.Latency, 23.6, tol) || o.QoO.Worst != 1 || !within(o.QoO.Loss, 75, 1e-9) || !within(o.QoO.Score, 23.6, tol) {
		t.Errorf("QoO %+v, want latency 23.6 ± %.2f (90th), loss 75, score 23.6", o.QoO, tol)
	}
	// Below the minimum rate the score is 0.
	q.MinRate = 1000
	pr = probeOf(t, window(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, ins), "x")
	if o := pr.QoO.Observed; !o.OK || o.QoO.Rate != 0 || o.QoO.Score != 0 {
		t.Errorf("at 980 a second against 1000: %+v, want rate 0 and QoO 0", o.QoO)
	}
}

// wholeInput runs the instances through one window holding them all
// (single-window mode, as deltaq analyze's whole input) and returns it.
func wholeInput(t *testing.T, cfg Config, ins []Instance) *Result {
	t.Helper()
	cfg.Interval = 0
	e := newEngine(t, cfg, time.Time{})
	addAll(e, ins...)
	res := e.Flush(time.Time{})
	if len(res) != 1 {
		t.Fatalf("%d windows, want the one", len(res))
	}
	return res[0]
}

// TestQoORateOverTheSamplingPeriod: the whole input as one window reads
// its QoO rate over its sampling period (the QoO draft's "total duration
// of the sampling period", section 3.1.2), from the first instance's start
// to the last one's end — not over the span of the instances' ends, which
// is 0.9 s for 10 instances starting every 100 ms, each 50 ms long (11.1 a
// second, above a minimum of 11), and 0 for one instance (no rate). Their
// sampling period is 0.95 s: 10/0.95 = 10.5 a second, below 11. The
// window's bounds stay the earliest and latest end.
func TestQoORateOverTheSamplingPeriod(t *testing.T) {
	q := QoOConfig{
		ROP:     QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 80 * ms}}, MaxFailure: 0.01},
		CPUP:    QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 90 * ms}}, MaxFailure: 0.05},
		MinRate: 11,
	}
	cfg := Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}
	var ins []Instance
	for i := range 10 {
		ins = append(ins, ok("x", time.Duration(i)*100*ms+50*ms, 50*ms))
	}
	r := wholeInput(t, cfg, ins)
	if !r.Start.Equal(at(50*ms)) || !r.End.Equal(at(950*ms)) || r.SamplingPeriod != 950*ms {
		t.Errorf("window %v to %v, sampling period %v; want the ends %v to %v, and 950ms", r.Start, r.End, r.SamplingPeriod, at(50*ms), at(950*ms))
	}
	o := probeOf(t, r, "x").QoO.Observed
	if !o.OK || !o.Measured.HasRate || !within(o.Measured.Rate, 10/0.95, 1e-9) || o.QoO.Rate != 0 || o.QoO.Score != 0 {
		t.Errorf("rate %v a second (component %v, score %v, ok %v), want 10/0.95 = %v, below 11: 0 and 0",
			o.Measured.Rate, o.QoO.Rate, o.QoO.Score, o.OK, 10/0.95)
	}

	// One instance of 50 ms: 1 over 50 ms, not 1 over nothing (its score
	// is withheld: too few instances for the percentile, and a rate above
	// the minimum does not decide alone).
	r = wholeInput(t, cfg, ins[:1])
	o = probeOf(t, r, "x").QoO.Observed
	if r.SamplingPeriod != 50*ms || !o.Measured.HasRate || !within(o.Measured.Rate, 20, 1e-9) || !o.Withheld {
		t.Errorf("one instance: sampling period %v, rate %v (%v), withheld %v; want 50ms, 20 a second, withheld",
			r.SamplingPeriod, o.Measured.Rate, o.Measured.HasRate, o.Withheld)
	}
	// Below the minimum, the rate decides alone: 0.
	q.MinRate = 25
	r = wholeInput(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, ins[:1])
	if o = probeOf(t, r, "x").QoO.Observed; !o.OK || o.QoO.Rate != 0 || o.QoO.Score != 0 {
		t.Errorf("one instance, 20 a second against 25: %+v, want a score of 0 from the rate", o)
	}

	// A timeout's period runs from its start to its start + dMax; windows
	// of the interval sample their interval whatever their instances.
	r = wholeInput(t, cfg, append([]Instance{timedOut("x", -200*ms)}, ins...))
	if r.SamplingPeriod != 1150*ms || !r.Start.Equal(at(-100*ms)) {
		t.Errorf("with a timeout started at -200 ms: sampling period %v from the end %v; want 1.15s, the ends from -100 ms", r.SamplingPeriod, r.Start)
	}
	if w := window(t, cfg, ins); w.SamplingPeriod != time.Second {
		t.Errorf("a window of 1 s: sampling period %v", w.SamplingPeriod)
	}
}

// TestPartialWindowSampledUntilFlushed: the window Flush closes while the
// clock is in it (a collector's shutdown, the end of deltaq analyze's
// input) sampled from its start to the clock, not its whole interval: 10
// instances ending in its first 400 ms are 25 a second, above a minimum of
// 20, not 10 a second. Its bounds stay the interval's (other engines'
// windows align to them), and a window the clock has passed sampled all of
// its interval.
func TestPartialWindowSampledUntilFlushed(t *testing.T) {
	q := QoOConfig{
		ROP:     QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 80 * ms}}, MaxFailure: 0.01},
		CPUP:    QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 90 * ms}}, MaxFailure: 0.05},
		MinRate: 20,
	}
	cfg := Config{Interval: time.Second, Probes: map[string]ProbeConfig{"x": {QoO: q}}}
	var ins []Instance
	for i := range 10 {
		ins = append(ins, ok("x", time.Second+time.Duration(i)*40*ms+10*ms, 5*ms))
	}
	e := newEngine(t, cfg, t0)
	addAll(e, ok("x", 500*ms, 5*ms))
	addAll(e, ins...)
	res := e.Flush(at(1400 * ms))
	if n := len(res); n < 2 || !res[n-2].Start.Equal(t0) {
		t.Fatalf("%d windows, want those up to the clock's, the last two from t0", n)
	}
	for _, r := range res[:len(res)-1] {
		if r.SamplingPeriod != time.Second {
			t.Errorf("the window from %v, which the clock has passed: sampling period %v, want 1s", r.Start, r.SamplingPeriod)
		}
	}
	r := res[len(res)-1]
	if !r.Start.Equal(at(time.Second)) || !r.End.Equal(at(2*time.Second)) || r.SamplingPeriod != 400*ms {
		t.Errorf("the partial window: %v to %v, sampling period %v; want 1s to 2s after t0, and 400ms", r.Start, r.End, r.SamplingPeriod)
	}
	if o := probeOf(t, r, "x").QoO.Observed; !o.Measured.HasRate || !within(o.Measured.Rate, 25, 1e-9) {
		t.Errorf("the partial window's rate %v (%v), want 10 over 400 ms: 25 a second", o.Measured.Rate, o.Measured.HasRate)
	}
}

// TestMergedSamplingPeriod: one window holding the windows of other
// engines (a gateway's single window) sampled from the first window's
// start to the last one's end.
func TestMergedSamplingPeriod(t *testing.T) {
	e := newEngine(t, Config{Probes: map[string]ProbeConfig{"job": {DMax: testDMax, Bins: testBins}}}, time.Time{})
	for _, start := range []time.Duration{3 * time.Second, 0} {
		w := gwWindow("agent-a", start, testDMax, testBins)
		if c := e.AddWindow(&w); c != ContributionAccepted {
			t.Fatalf("the window at %v: %v", start, c)
		}
	}
	r := e.Flush(time.Time{})[0]
	if r.SamplingPeriod != 4*time.Second || !r.Start.Equal(t0) || !r.End.Equal(at(4*time.Second)) {
		t.Errorf("window %v to %v, sampling period %v; want %v to %v, 4s", r.Start, r.End, r.SamplingPeriod, t0, at(4*time.Second))
	}
}

// TestQoOLeastOfAWindow: p 0, the least delay (the QoO draft lists the 0th
// percentile, section 3.1.1), reads the fastest completed instance at the
// analysis resolution. The spread's fastest is 100 µs; ROP 50 µs and CPUP
// 150 µs score it 1 − 50/100 = 50, within the bucket's width.
func TestQoOLeastOfAWindow(t *testing.T) {
	q := QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0, Delay: 50 * time.Microsecond}}, MaxFailure: 0.01},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0, Delay: 150 * time.Microsecond}}, MaxFailure: 0.05},
	}
	pr := probeOf(t, window(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, spread("x", 980, 100*time.Microsecond, 20)), "x")
	if pr.QoO == nil || !pr.QoO.Observed.OK {
		t.Fatalf("QoO %+v, want an observed score", pr.QoO)
	}
	o := pr.QoO.Observed
	lo, hi := fineBucket(t, 100*time.Microsecond)
	if m := o.Measured.Latency[0]; m > 100e-6 || 100e-6-m > hi-lo {
		t.Errorf("p0 %v s, want at most 100 µs and within %v of it", m, hi-lo)
	}
	if tol := 100 * (hi - lo) / 100e-6; !within(o.QoO.Latency, 50, tol) {
		t.Errorf("latency %v, want 50 ± %.2f", o.QoO.Latency, tol)
	}
}

// TestQoOPercentilesFromCounts: a probe's percentiles are read from its
// analysis counts, as its quantiles are, whatever its dMax. 1000 instances
// of 1 to 3 ms (every 2 µs) and 50 failures, against rop p50 2.1 ms, p99
// 3.1 ms and cpup 4.1 ms, 5.1 ms: the completed instances' median is about
// 2 ms and their 99th percentile under 3 ms, so the latency component is
// 100. Each reading must lie in the analysis bucket (under 1/64 of the
// delay wide) of the sample percentile of the completed instances, the
// ⌈p·n⌉-th delay (the QoO draft, section 3.3: the percentile of what
// arrived). On the Analysis ΔQ's grid (dMax/4096 and more: 4.2 ms at a
// dMax of 10 s, 0.27 s at 10 minutes) the 99th was read as 4.2 ms at 10 s,
// a latency of 47, and the median as 134 ms at 10 minutes, 0.
func TestQoOPercentilesFromCounts(t *testing.T) {
	q := QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 2100 * time.Microsecond}, {P: 0.99, Delay: 3100 * time.Microsecond}}},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 4100 * time.Microsecond}, {P: 0.99, Delay: 5100 * time.Microsecond}}, MaxFailure: 1},
	}
	var ins []Instance
	var delays []time.Duration
	for i := range 1000 {
		d := time.Millisecond + time.Duration(i)*2*time.Microsecond
		delays = append(delays, d)
		ins = append(ins, ok("x", 500*ms+time.Duration(i)*time.Microsecond, d))
	}
	for i := range 50 {
		ins = append(ins, failed("x", 600*ms+time.Duration(i)*time.Microsecond))
	}
	for _, dmax := range []time.Duration{100 * ms, 10 * time.Second, 10 * time.Minute} {
		cfg := Config{Probes: map[string]ProbeConfig{"x": {DMax: dmax, Bins: 100, QoO: q}}}
		pr := probeOf(t, window(t, cfg, ins), "x")
		if pr.QoO == nil || !pr.QoO.Observed.OK {
			t.Fatalf("dMax %v: QoO %+v, want an observed score", dmax, pr.QoO)
		}
		o := pr.QoO.Observed
		for i, p := range []float64{0.5, 0.99} {
			lo, hi := fineBucket(t, delays[int(math.Ceil(p*1000))-1])
			if m := o.Measured.Latency[i]; m < lo || m > hi {
				t.Errorf("dMax %v: percentile %v read as %v s, want within [%v, %v] s", dmax, p, m, lo, hi)
			}
		}
		if o.QoO.Latency != 100 {
			t.Errorf("dMax %v: latency component %v, want 100", dmax, o.QoO.Latency)
		}
	}
}

// TestQoONaNPercentile: a p that is not a number is refused once on each
// side, and not reported again as a percentile the other side lacks.
func TestQoONaNPercentile(t *testing.T) {
	q := draftQoO()
	q.ROP.Points[1].P, q.CPUP.Points[0].P = math.NaN(), math.NaN() // the 99th on each side
	errs := q.problems()
	if len(errs) != 2 {
		t.Fatalf("%d problems, want the two p's alone: %v", len(errs), errs)
	}
	for _, e := range errs {
		if !strings.Contains(e.Error(), "NaN is not in [0, 1]") {
			t.Errorf("%v, want NaN refused as not in [0, 1]", e)
		}
	}
}

// TestQoOSampleSize: a 90th percentile needs at least 10 completed
// instances (one beyond it); with fewer the score is withheld, unless the
// loss, read from enough instances, or the rate makes it 0 alone.
func TestQoOSampleSize(t *testing.T) {
	q := QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0.9, Delay: 50 * ms}}, MaxFailure: 0.01},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0.9, Delay: 100 * ms}}, MaxFailure: 0.05},
	}
	cases := []struct {
		name         string
		q            func(QoOConfig) QoOConfig
		successes, f int
		ok           bool
		score        float64
	}{
		{"nine completed", nil, 9, 0, false, 0},
		{"ten completed", nil, 10, 0, true, 100},
		{"five completed, three failed: loss of 8 instances", nil, 5, 3, false, 0},
		{"nine completed, nine failed: loss 50 % of 18", nil, 9, 9, true, 0},
		{"nothing completed, five failed", nil, 0, 5, false, 0},
		{"nothing completed, ten failed", nil, 0, 10, true, 0},
		{"min_instances raises the rule", func(q QoOConfig) QoOConfig { q.MinInstances = 50; return q }, 40, 0, false, 0},
		{"a rate below the minimum decides alone", func(q QoOConfig) QoOConfig { q.MinRate = 100; return q }, 5, 0, true, 0},
	}
	for _, c := range cases {
		qc := q
		if c.q != nil {
			qc = c.q(q)
		}
		pr := probeOf(t, window(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: qc}}}, spread("x", c.successes, ms, c.f)), "x")
		o := pr.QoO.Observed
		if o.OK != c.ok || o.Withheld == c.ok || (c.ok && o.QoO.Score != c.score) {
			t.Errorf("%s: %+v, want OK %v and score %v", c.name, o, c.ok, c.score)
		}
	}
}

// TestQoOCalculated scores the ΔQ the diagram calculates for job = a -> b
// from stages uniform on (5, 15] ms and (15, 25] ms: their sum is
// triangular on (20, 40] ms, symmetric, with its median at 30 ms, so
// against ROP {50 %, 20 ms} and CPUP {50 %, 40 ms} the calculated QoO is
// 50, within the binning (0.1 ms bins: 0.5 points). The calculated ΔQ is
// worth 1/(1/1000 + 1/1000) = 500 instances (deltaq.EffectiveCount).
func TestQoOCalculated(t *testing.T) {
	q := QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 20 * ms}}, MaxFailure: 0.01},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 40 * ms}}, MaxFailure: 0.05},
	}
	var ins []Instance
	for i := range 1000 {
		d := time.Duration(i) * 10 * time.Microsecond // 0 … 9.99 ms
		a, b := ok("a", 500*ms, 5*ms+d+5*time.Microsecond), ok("b", 500*ms, 15*ms+d+5*time.Microsecond)
		a.Bins, b.Bins = 1000, 1000
		ins = append(ins, a, b)
	}
	cfg := Config{Diagram: "job = a -> b;", Probes: map[string]ProbeConfig{"job": {QoO: q}}}
	pr := probeOf(t, window(t, cfg, ins), "job")
	if pr.QoO == nil || pr.QoO.Observed.Present || !pr.QoO.Calculated.OK {
		t.Fatalf("QoO %+v, want a calculated score only (job has no instances of its own)", pr.QoO)
	}
	c := pr.QoO.Calculated
	if !within(c.Completed, 500, 1e-6) || c.Measured.HasRate || c.QoO.HasRate {
		t.Errorf("calculated: completed %v, rate %v; want 500 and no rate", c.Completed, c.Measured.HasRate)
	}
	if !within(c.Measured.Latency[0], 0.030, 1e-4) || !within(c.QoO.Score, 50, 0.5) || c.QoO.Loss != 100 {
		t.Errorf("calculated: median %v s, %+v; want 30 ms and QoO 50, loss 100", c.Measured.Latency[0], c.QoO)
	}
}

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestQoORateAtTheMinimum: a rate exactly at min_rate meets it ("Quality
// of Outcome", draft-ietf-ippm-qoo-10, section 3.3.4: QoO_throughput is
// 100 when M_Throughput >= R_Throughput). 55 instances over a sampling
// period of 550 ms are 100 a second; read as 55 / 0.55 — the period
// rounded to binary seconds, then divided — they were 99.99999999999999 a
// second, below a minimum of 100, and the window scored 0.
func TestQoORateAtTheMinimum(t *testing.T) {
	q := QoOConfig{
		ROP:     QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 80 * ms}}, MaxFailure: 0.01},
		CPUP:    QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 90 * ms}}, MaxFailure: 0.05},
		MinRate: 100,
	}
	var ins []Instance
	for i := range 55 {
		ins = append(ins, ok("x", time.Duration(i+1)*10*ms, 10*ms))
	}
	r := wholeInput(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, ins)
	if r.SamplingPeriod != 550*ms {
		t.Fatalf("sampling period %v, want 550ms", r.SamplingPeriod)
	}
	o := probeOf(t, r, "x").QoO.Observed
	if !o.OK || o.Measured.Rate != 100 || o.QoO.Rate != 100 || o.QoO.Score != 100 {
		t.Errorf("55 over 550 ms against a minimum of 100 a second: rate %v (component %v), score %v; want 100, 100, 100",
			o.Measured.Rate, o.QoO.Rate, o.QoO.Score)
	}
	// Adjusted counts beyond 2⁵³/10⁹ are divided exactly too.
	if got := perSecond(55_000_000_000, 550*time.Second); got != 1e8 {
		t.Errorf("55·10⁹ over 550 s: %v a second, want 10⁸", got)
	}
}

// TestQoODraftExampleOfAWindow runs the worked example of "Quality of
// Outcome" (draft-ietf-ippm-qoo-10, section 3.4) through a window: 5000
// instances, 100 of them failed (2 % loss), the 4900 completed ones with
// their 99th percentile (the ⌈0.99 · 4900⌉ = 4851st delay) at 350 ms and
// their 99.9th (the 4896th) at 375 ms, against ROP {99 %, 200 ms},
// {99.9 %, 300 ms}, 1 % and CPUP {99 %, 500 ms}, {99.9 %, 600 ms}, 5 %, and a
// minimum rate the window exceeds. The draft's answer: m1 = 0.5, m2 = 0.75,
// latency 50, loss 75, QoO = min(50, 75, 100) = 50 — here within the
// analysis buckets of 350 and 375 ms (the percentiles are read there).
func TestQoODraftExampleOfAWindow(t *testing.T) {
	q := draftQoO()
	q.MinRate = 4
	var ins []Instance
	for i := range 4900 {
		var d time.Duration
		switch {
		case i < 4851: // up to the 99th percentile, 350 ms
			d = time.Duration(i+1) * 350 * ms / 4851
		case i < 4896: // up to the 99.9th, 375 ms
			d = 350*ms + time.Duration(i+1-4851)*25*ms/45
		default:
			d = 375*ms + time.Duration(i+1-4896)*5*ms
		}
		ins = append(ins, ok("x", 500*ms+time.Duration(i)*50*time.Microsecond, d))
	}
	for i := range 100 {
		ins = append(ins, failed("x", 800*ms+time.Duration(i)*time.Millisecond))
	}
	cfg := Config{Probes: map[string]ProbeConfig{"x": {DMax: time.Second, Bins: 1000, QoO: q}}}
	o := probeOf(t, window(t, cfg, ins), "x").QoO.Observed
	if !o.OK {
		t.Fatalf("QoO %+v, want a score", o)
	}
	lo99, hi99 := fineBucket(t, 350*ms)
	lo999, hi999 := fineBucket(t, 375*ms)
	m := o.Measured
	if m.Latency[0] < lo99 || m.Latency[0] > hi99 || m.Latency[1] < lo999 || m.Latency[1] > hi999 || !within(m.Loss, 0.02, 1e-12) {
		t.Errorf("measured %+v, want 350 ms in [%v, %v], 375 ms in [%v, %v], 2 %%", m, lo99, hi99, lo999, hi999)
	}
	tol := 100 * (hi99 - lo99) / 0.3 // 100 points over CPUP − ROP = 300 ms
	if !within(o.QoO.Latency, 50, tol) || o.QoO.Worst != 0 || !within(o.QoO.Loss, 75, 1e-9) || o.QoO.Rate != 100 || !within(o.QoO.Score, 50, tol) {
		t.Errorf("QoO %+v, want latency 50 ± %.2f set by the 99th, loss 75, rate 100, QoO 50", o.QoO, tol)
	}
}
