// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// TestTailSketch: every delay lies in its bucket, below the bucket's upper
// edge by at most 1/8 of the delay (8 linear steps per power of two), and
// the buckets are in order.
func TestTailSketch(t *testing.T) {
	prev := -1
	for _, d := range []int64{0, 1, 15, 16, 17, 31, 32, 1000, 1_048_576, 1_499_000, 1e9, 1e12, math.MaxInt64 / 3, math.MaxInt64} {
		i := tailIndex.Bucket(d)
		if i < prev || i >= tailIndex.Buckets() {
			t.Fatalf("tailIndex.Bucket(%d) = %d after %d (of %d)", d, i, prev, tailIndex.Buckets())
		}
		prev = i
		up := tailUpper(i)
		if d < math.MaxInt64/2 && (up <= d || float64(up-d) > float64(d)/8+1) {
			t.Errorf("d = %d: bucket %d has upper edge %d, want in (d, d + d/8 + 1]", d, i, up)
		}
	}
	// 1.499 ms: 2²⁰ ≤ d < 2²¹, step 2¹⁷ ns, the 4th step: [11·2¹⁷, 12·2¹⁷).
	if got := tailUpper(tailIndex.Bucket(1_499_000)); got != 12<<17 {
		t.Errorf("upper edge for 1.499ms = %d, want 12·2¹⁷ = %d", got, 12<<17)
	}
}

// TestStep125: the smallest 1-2-5 step at or above x.
func TestStep125(t *testing.T) {
	for x, want := range map[int64]int64{1: 1, 2: 2, 3: 5, 6: 10, 10: 10, 11: 20, 3_145_728: 5_000_000, 2e9: 2e9, 2_000_000_001: 5e9} {
		if got := step125(x); got != want {
			t.Errorf("step125(%d) = %d, want %d", x, got, want)
		}
	}
}

// TestDMaxAutoConfig: dmax: auto is read from YAML with its options, and
// the options are checked, each error naming its field.
func TestDMaxAutoConfig(t *testing.T) {
	cfg := loadValidConfig(t, "config_auto.yaml")
	require.Len(t, cfg.Probes, 2)
	a := cfg.Probes[0]
	if !a.DMaxAuto || a.DMax != 0 || a.DMaxMin != 2*time.Millisecond || a.DMaxMax != 30*time.Second || a.DMaxSample != 500 || a.DMaxPeriod != 5*time.Second {
		t.Errorf("probe 0: %+v, want dmax auto within [2ms, 30s], sample 500, period 5s", a)
	}
	if b := cfg.Probes[1]; b.DMaxAuto || b.DMax != 250*time.Millisecond {
		t.Errorf("probe 1: %+v, want dmax 250ms", b)
	}
	d, errs := a.DMaxNanos()
	if len(errs) != 0 || d != int64(30*time.Second) {
		t.Errorf("provisional dMax = %d %v, want dmax_max 30s", d, errs)
	}

	n := 3
	for _, c := range []struct {
		pc   ProbeConfig
		want string
	}{
		{ProbeConfig{Name: "x", DMax: time.Second, DMaxMin: time.Millisecond, Bins: 10}, "dmax_min, dmax_max, dmax_sample, dmax_period, dmax_changes_per_hour: only with dmax: auto"},
		{ProbeConfig{Name: "x", DMaxAuto: true, Exponent: &n, Bins: 10}, "dmax, exponent: dmax: auto chooses the dMax"},
		{ProbeConfig{Name: "x", DMaxAuto: true, DMaxMin: 2 * time.Second, DMaxMax: time.Second, Bins: 10}, "dmax_min, dmax_max: dmax_min 2s is above dmax_max 1s"},
		{ProbeConfig{Name: "x", DMaxAuto: true, DMaxSample: 10, Bins: 10}, "dmax_sample: must be in [100, 10000000], got 10"},
		{ProbeConfig{Name: "x", DMaxAuto: true, DMaxPeriod: time.Millisecond, Bins: 10}, "dmax_period: must be in [1s, 24h0m0s], got 1ms"},
		{ProbeConfig{Name: "x", DMaxAuto: true}, "bins: is required (also with dmax: auto), e.g. bins: 100"},
	} {
		err := testConfig(c.pc).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.pc, err, c.want)
		}
	}
}

// autoBatch builds n spans of probe "op" that end in second s after base,
// the i-th after a delay of delay(i), each with trace and span ids of its
// own.
func autoBatch(s, n int, delay func(i int) time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range n {
		sp := spans.AppendEmpty()
		sp.SetName("op")
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:], uint64(s)<<32|uint64(i)+1)
		sp.SetTraceID(tid)
		sp.SetSpanID(pcommon.SpanID{1})
		end := base.Add(time.Duration(s)*time.Second + time.Duration(i+1)*(800*time.Millisecond)/time.Duration(n))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-delay(i))))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	}
	return td
}

// instanceOf reads the outcome instance a mapped span stands for, as the
// deltaq connector does (the contract in internal/outcome).
func instanceOf(sp ptrace.Span) analysis.Instance {
	a := sp.Attributes()
	probe, _ := a.Get(outcome.AttrProbe)
	in := analysis.Instance{Probe: probe.Str(), Outcome: analysis.Success,
		Start: int64(sp.StartTimestamp()), End: int64(sp.EndTimestamp())}
	if v, ok := a.Get(outcome.AttrOutcome); ok {
		in.Outcome, _ = analysis.ParseOutcome(v.Str())
	}
	if v, ok := a.Get(outcome.AttrDMaxNs); ok {
		in.DMaxNs = v.Int()
	}
	if v, ok := a.Get(outcome.AttrBins); ok {
		in.Bins = int(v.Int())
	}
	return in
}

// TestAutoRangeFollowsDelayJumps is the known answer of auto-ranging: a
// probe whose delays are uniform on [0.5ms, 1.5ms), then on [0.5s, 1.5s)
// from second 6, then again on [0.5ms, 1.5ms) from second 12, 2000 spans
// a second, dmax_sample 1000 and dmax_period 1s, 100 bins.
//
// By hand: the p99.9 of [0.5ms, 1.5ms) is 1.499ms, in the sketch bucket
// [11·2¹⁷, 12·2¹⁷) ns, so q = 1.572864ms, 2·q = 3.15ms and dMax = 5ms
// (bins of 50µs); for [0.5s, 1.5s), q = 12·2²⁷ ns = 1.610612736s, 2·q =
// 3.22s and dMax = 5s (bins of 50ms). The first sample (second 0, under
// the provisional dmax_max of 1 minute) decides 5ms at the tick at 1s; the
// jump is out of range (q ≥ 4·q₀) in the samples of seconds 6 and 7, so
// 5s applies from the tick at 8s, and the jump back, likewise, from the
// tick at 14s. The engine of the deltaq connector, reading the layouts
// from the registry, has windows of one layout each: 5ms in windows 1–7,
// 5s in 8–13, 5ms from 14; in windows 6 and 7 every instance times out.
// In every window whose instances all succeeded, the observed quantiles
// are within one bin width of the exact ones.
func TestAutoRangeFollowsDelayJumps(t *testing.T) {
	pc := ProbeConfig{Name: "op", DMaxAuto: true, Bins: 100, DMaxSample: 1000, DMaxPeriod: time.Second}
	h := newHarness(t, testConfig(pc))
	e, err := analysis.New(analysis.Config{
		Interval: time.Second, Lag: time.Millisecond, ConfiguredProbes: []string{"op"},
		Quantiles:        []float64{0.1, 0.5, 0.9, 0.99},
		LayoutGeneration: h.state.Layouts.Generation,
		LookupLayout: func(name string) (time.Duration, int, bool) {
			l, ok := h.state.Layouts.LookupLayout(name)
			return time.Duration(l.DMaxNs), l.Bins, ok
		},
	}, base)
	require.NoError(t, err)

	const perSecond = 2000
	slow := func(s int) bool { return s >= 6 && s < 12 }
	width := make(map[int]float64)
	for s := range 18 {
		unit := time.Millisecond
		if slow(s) {
			unit = time.Second
		}
		delay := func(i int) time.Duration { return unit/2 + time.Duration(i)*unit/perSecond }
		h.tsink.Reset()
		h.consumeTraces(autoBatch(s, perSecond, delay))
		spans, _ := allSpans(h.tsink.AllTraces())
		b := e.Begin()
		for _, sp := range spans {
			in := instanceOf(sp)
			b.Add(&in)
		}
		b.End()
		next := base.Add(time.Duration(s+1) * time.Second)
		h.clock.tick(next)
		for _, r := range e.Advance(next.Add(time.Millisecond)) {
			k := int(r.Start.Sub(base) / time.Second)
			if k < 0 {
				continue
			}
			pr := r.Probes[0]
			width[k] = pr.Width
			if pr.Counts.Timeout > 0 {
				if pr.Counts.Success > 0 {
					t.Errorf("window %d mixes %d successes and %d timeouts", k, pr.Counts.Success, pr.Counts.Timeout)
				}
				continue
			}
			for _, qv := range pr.Quantiles {
				// The exact q-quantile of the window's delays: the
				// ⌈q·n⌉-th of unit/2 + i·unit/n.
				i := int(math.Ceil(qv.Q*perSecond)) - 1
				truth := delay(i).Seconds()
				if !qv.ObservedOK || math.Abs(qv.Observed-truth) > pr.Width {
					t.Errorf("window %d: q%g observed %v (%v), exact %v: more than a bin (%g s) apart", k, qv.Q, qv.Observed, qv.ObservedOK, truth, pr.Width)
				}
			}
		}
	}
	for k := range 18 {
		want := 5e-5 // 5ms / 100
		switch {
		case k == 0:
			want = 0.6 // the learning phase: 1 minute / 100
		case k >= 8 && k < 14:
			want = 0.05 // 5s / 100
		}
		if math.Abs(width[k]-want) > want*1e-9 {
			t.Errorf("window %d: bin width %g, want %g", k, width[k], want)
		}
	}
	if l, _ := h.state.Layouts.LookupLayout("op"); l != (outcome.Layout{DMaxNs: 5e6, Bins: 100}) {
		t.Errorf("registered layout %+v, want 5ms, 100 bins", l)
	}
	// Self-telemetry: three changes (learned, up, down) and the dMax.
	if got := h.p.m.probes[0].auto.changes.Load(); got != 3 {
		t.Errorf("changes = %d, want 3", got)
	}
	m, err := h.tel.GetMetric("otelcol_processor_deltaq_dmax")
	require.NoError(t, err)
	g := m.Data.(metricdata.Gauge[float64])
	require.Len(t, g.DataPoints, 1)
	if v := g.DataPoints[0].Value; v != 0.005 {
		t.Errorf("processor_deltaq_dmax = %v, want 0.005", v)
	}
}

// TestAutoRangeSustain: a single sample whose tail is out of range changes
// nothing; a censored tail (start events that timed out without a span)
// counts as beyond dMax; the dMax never leaves [dmax_min, dmax_max].
func TestAutoRangeSustain(t *testing.T) {
	a := newAutoRange(&ProbeConfig{DMaxAuto: true, Bins: 100, DMaxMin: 10 * time.Millisecond, DMaxMax: 2 * time.Second, DMaxSample: 100, DMaxPeriod: time.Second})
	const sec = int64(time.Second)
	now := int64(1)
	a.since = now
	sample := func(d int64, n int) {
		for range n {
			a.observe(d)
		}
	}
	step := func() (rangeChange, bool) { now += sec; return a.step(now) }

	sample(int64(time.Millisecond), 100)
	if ch, ok := step(); !ok || !ch.learned || ch.to != int64(10*time.Millisecond) {
		t.Fatalf("first sample of 1ms: %+v %v, want learned and dmax_min 10ms (2·1.0625ms = 2.1ms is below it)", ch, ok)
	}
	sample(int64(100*time.Millisecond), 100)
	if _, ok := step(); ok {
		t.Fatal("one out-of-range sample changed the dMax")
	}
	sample(int64(time.Millisecond), 100)
	if _, ok := step(); ok {
		t.Fatal("an in-range sample changed the dMax")
	}
	sample(int64(100*time.Millisecond), 100)
	step()
	sample(int64(100*time.Millisecond), 100)
	// q = 104857600 ns (25·2²²); 2q = 209.7ms → 500ms.
	if ch, ok := step(); !ok || ch.to != int64(500*time.Millisecond) {
		t.Fatalf("two samples of 100ms: %+v %v, want dMax 500ms", ch, ok)
	}
	// Censored: all 100 instances timed out without a span twice; the
	// tail is 2·dMax = 1s, out of range; 2 s (clamped from 2·1s → 2s).
	for range 2 {
		a.censored.Add(100)
		if ch, ok := step(); ok {
			if ch.to != int64(2*time.Second) {
				t.Fatalf("censored tail: %+v, want dmax_max 2s", ch)
			}
			return
		}
	}
	t.Fatal("two censored samples did not raise the dMax")
}

// extremeAttack feeds a to the alternating attack of the issue: every
// second perSecond spans of 10 ms, plus extreme spans of 50 s in the
// first two of every four seconds, for seconds seconds from now, one
// sample per second; it returns the changes of dMax it caused.
func extremeAttack(a *autoRange, now *int64, seconds, perSecond, extreme int) int {
	changes := 0
	for s := range seconds {
		for range perSecond {
			a.observe(int64(10 * time.Millisecond))
		}
		if s%4 < 2 {
			for range extreme {
				a.observe(int64(50 * time.Second))
			}
		}
		*now += int64(time.Second)
		if ch, ok := a.step(*now); ok && !ch.suppressed {
			changes++
		}
	}
	return changes
}

// TestAutoRangeResistsAFewExtremeSpans reproduces the attack on dmax: auto
// (1,200 spans a second of 10 ms plus 3 spans of 50 s in alternating pairs
// of 1 s samples, dmax_sample 100, dmax_period 1s): it moved dMax 12
// times in 28 s between 50 ms and 60 s, because the p99.9 of a sample of
// 1,203 is its 1,202nd delay, among the 3 extreme ones. Now the tail needs
// 10 instances beyond it: the probe learns 50 ms (the 10 ms delays fall
// in the sketch bucket [9·2²⁰, 10·2²⁰) ns, 2·q = 20.97 ms, next 1-2-5
// step 50 ms) and keeps it. An attacker who sends 12 extreme spans a
// second (1 % of the traffic, above the 10 the tail needs) moves it, but
// at most dmax_changes_per_hour = 6 times in any hour: the rest are
// suppressed and counted, and the hour after allows changes again.
func TestAutoRangeResistsAFewExtremeSpans(t *testing.T) {
	if r := math.Ceil(autoQuantile * 1203); r != 1202 {
		t.Fatalf("the p99.9 rank of 1203 is %v", r)
	}
	pc := &ProbeConfig{DMaxAuto: true, Bins: 100, DMaxSample: 100, DMaxPeriod: time.Second}
	a := newAutoRange(pc)
	now := int64(1)
	a.step(now)
	if n := extremeAttack(a, &now, 28, 1200, 3); n != 1 || a.dMax.Load() != int64(50*time.Millisecond) {
		t.Errorf("3 extreme spans a second: %d changes, dMax %v; want the learnt 50ms only", n, time.Duration(a.dMax.Load()))
	}
	if a.suppressed.Load() != 0 {
		t.Errorf("%d changes suppressed, want none: the tail never moved", a.suppressed.Load())
	}

	a = newAutoRange(pc)
	now = 1
	a.step(now)
	n := extremeAttack(a, &now, 3600, 1200, 12)
	if n != defaultDMaxChangesPerHour {
		t.Errorf("12 extreme spans a second for an hour: %d changes, want dmax_changes_per_hour = %d", n, defaultDMaxChangesPerHour)
	}
	if a.suppressed.Load() == 0 {
		t.Error("no change was suppressed")
	}
	if n := extremeAttack(a, &now, 3600, 1200, 12); n > defaultDMaxChangesPerHour {
		t.Errorf("the hour after: %d changes, more than %d", n, defaultDMaxChangesPerHour)
	} else if n == 0 {
		t.Error("the hour after: no change allowed")
	}
}

// TestDMaxChangesPerHourConfig: dmax_changes_per_hour is checked and needs
// dmax: auto.
func TestDMaxChangesPerHourConfig(t *testing.T) {
	for _, c := range []struct {
		pc   ProbeConfig
		want string
	}{
		{ProbeConfig{Name: "x", DMaxAuto: true, DMaxChangesPerHour: 3601, Bins: 10}, "dmax_changes_per_hour: must be in [1, 3600], got 3601"},
		{ProbeConfig{Name: "x", DMaxAuto: true, DMaxChangesPerHour: -1, Bins: 10}, "dmax_changes_per_hour: must be in [1, 3600], got -1"},
		{ProbeConfig{Name: "x", DMax: time.Second, DMaxChangesPerHour: 2, Bins: 10}, "only with dmax: auto"},
	} {
		err := testConfig(c.pc).Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.pc, err, c.want)
		}
	}
	if a := newAutoRange(&ProbeConfig{DMaxAuto: true, Bins: 10, DMaxChangesPerHour: 2}); a.perHour != 2 {
		t.Errorf("perHour = %d, want 2", a.perHour)
	}
}
