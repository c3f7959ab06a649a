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
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

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
// deltaq connector does (the contract in internal/contract).
func instanceOf(sp ptrace.Span) analysis.Instance {
	a := sp.Attributes()
	probe, _ := a.Get(contract.AttrProbe)
	in := analysis.Instance{Probe: probe.Str(), Outcome: analysis.Success,
		Start: int64(sp.StartTimestamp()), End: int64(sp.EndTimestamp())}
	if v, ok := a.Get(contract.AttrOutcome); ok {
		in.Outcome, _ = analysis.ParseOutcome(v.Str())
	}
	if v, ok := a.Get(contract.AttrDMaxNs); ok {
		in.DMaxNs = v.Int()
	}
	if v, ok := a.Get(contract.AttrBins); ok {
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
		LookupLayout:     h.state.Layouts.LookupLayout,
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
	if l, _ := h.state.Layouts.LookupLayout("op"); l != (deltaq.Layout{DMaxNs: 5e6, Bins: 100}) {
		t.Errorf("registered layout %+v, want 5ms, 100 bins", l)
	}
	// Self-telemetry: three changes (learned, up, down) and the dMax.
	if got := h.p.m.probes[0].auto.Changes().Load(); got != 3 {
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
}

// TestAutoRangeLateSpansCountOnce: an instance whose start event timed out
// and whose span came late is one delay of its probe's sample, the span's,
// as in the deltaq connector. The probe learns 50 ms from 10 ms spans; then
// every instance takes 1 s, timing out at 50 ms before its span comes: two
// such samples move dMax to 5 s in one change (internal/autorange: 1 s has
// q = 1.00663296 s, 2·q = 2.01 s), as the spans alone do. Counted twice,
// half of each sample was censored, the tail 2·dMax, and dMax moved to
// 200 ms, the first of three changes.
func TestAutoRangeLateSpansCountOnce(t *testing.T) {
	pc := ProbeConfig{Name: "op", DMaxAuto: true, Bins: 100, DMaxSample: 100, DMaxPeriod: time.Second}
	h := newHarness(t, testConfig(pc))
	h.consumeTraces(autoBatch(0, 100, func(int) time.Duration { return 10 * time.Millisecond }))
	h.clock.tick(base.Add(time.Second))
	require.Equal(t, int64(50*time.Millisecond), h.p.m.probes[0].auto.DMax())
	for s := range 2 {
		from := base.Add(time.Duration(1+s) * time.Second).Add(100 * time.Millisecond)
		var starts []startEvent
		var late []spanSpec
		for i := range 100 {
			id := byte(1 + 100*s + i)
			starts = append(starts, startEvent{probe: "op", id: id, at: from})
			late = append(late, spanSpec{name: "op", id: id, start: from, duration: time.Second})
		}
		h.consumeLogs(logsOf(starts...))
		h.clock.tick(from.Add(100 * time.Millisecond)) // every instance times out
		h.consumeTraces(tracesOf(late...))
		h.clock.tick(from.Add(time.Second + 100*time.Millisecond))
	}
	if got := h.p.stats.startTimeouts[0].Load(); got != 200 {
		t.Errorf("start timeouts = %d, want 200", got)
	}
	if got := time.Duration(h.p.m.probes[0].auto.DMax()); got != 5*time.Second {
		t.Errorf("dMax %v, want 5s", got)
	}
	if got := h.p.m.probes[0].auto.Changes().Load(); got != 2 {
		t.Errorf("changes = %d, want 2 (learnt, then the jump)", got)
	}
}
