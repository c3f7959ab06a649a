// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// gateEnv must be set for the test to run: it needs the built collector and
// Prometheus.
const gateEnv = "DELTAQ_PROMQL_E2E"

// The probe of testdata/collector.yaml: spans named known, dMax = 100 ms in
// 100 bins of 1 ms, and its QTA.
const (
	probe    = "known"
	dMax     = 100 * time.Millisecond
	binWidth = time.Millisecond
)

var (
	qtaPoints     = map[string]float64{"0.01": 0.5, "0.05": 0.9}
	qtaMaxFailure = 0.05
)

// The service.instance.id of the collectors, which Prometheus sees as the
// label instance: A with explicit buckets, B with an exponential histogram.
const (
	instA = "A"
	instB = "B"
	instC = "C"
)

// TestDeltaQInPrometheus runs Prometheus (remote-write receiver, native
// histograms, the repository's collector alert rules) and three built
// collectors:
//   - A and B send the deltaq connector's metrics to Prometheus, A's
//     deltaq.observed with explicit buckets at the bin edges, B's as an
//     exponential histogram (a native histogram in Prometheus). The test
//     sends both the same spans of known delays in two phases, notes a time
//     t1 after the first and t2 after the second, and checks in PromQL that
//     what examples/README.md ("Reading ΔQ in PromQL") tells a user holds
//     for phase 2: exact instance counts, sums and bucket counts from the
//     difference of two samples, histogram_quantile within one bin of the
//     true quantile (within one bin and one exponential bucket for the
//     native histogram), the improper CDF exact from the difference and
//     close from increase(), and the QTA gauges;
//   - C's ΔQ backend is unreachable: DeltaQExportFailed must fire from its
//     own telemetry, which Prometheus scrapes;
//   - D closes and exports its windows as the gateway of deploy/kubernetes
//     does (its interval, its lag, a batch processor): its windows reach
//     Prometheus lag after their end. The test sends it spans that break
//     the QTA in a window: DeltaQQTABreach of the gateway's rules
//     (deploy/kubernetes/prometheus/deltaq-alerts.yml) must fire, and that
//     of the shipped rules, whose 10s range never holds a window that old,
//     must never hold an alert for D.
func TestDeltaQInPrometheus(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the PromQL end-to-end test (it needs prometheus too)")
	began := time.Now()
	telemetry := e2etest.FreeAddr(t)
	unreachable := "http://" + e2etest.FreeAddr(t)
	prom := startPrometheus(t, telemetry)
	watch := watchBreach(prom)
	a := startCollector(t, otelcol, instA, prom.base, nil)
	b := startCollector(t, otelcol, instB, prom.base, nil, "testdata/exponential.yaml")
	startedC := time.Now()
	c := startCollector(t, otelcol, instC, unreachable, []string{"DELTAQ_TELEMETRY_PORT=" + e2etest.Port(telemetry)},
		"testdata/unreachable.yaml")
	interval, lag := gatewayTiming(t)
	d := startCollector(t, otelcol, instD, prom.base, []string{"DELTAQ_INTERVAL=" + interval, "DELTAQ_LAG=" + lag},
		"testdata/gateway.yaml")
	procs := []*e2etest.Proc{prom.Proc, a.Proc, b.Proc, c.Proc, d.Proc}
	for _, col := range []*e2etest.Collector{a, b, c, d} {
		col.WaitReady(t)
	}
	t.Logf("Prometheus and collectors up after %v", time.Since(began).Round(time.Millisecond))
	brokenEnd := sendBreach(t, d, mustDuration(t, "the gateway's interval", interval))

	targets := []*e2etest.Collector{a, b}
	p1 := phase1()
	send(t, targets, p1, 1)
	t1, ok1 := settle(t, prom, p1.totals(), []string{instA, instB}, procs)
	t.Logf("phase 1 (%d spans) in Prometheus; t1 = %s, after %v", len(p1), at(t1), time.Since(began).Round(time.Millisecond))
	p2 := phase2()
	send(t, targets, p2, 2)
	t2, ok2 := settle(t, prom, p1.totals().plus(p2.totals()), ok1, procs)
	t.Logf("phase 2 (%d spans) in Prometheus; t2 = %s, after %v", len(p2), at(t2), time.Since(began).Round(time.Millisecond))

	w := window{t1: t1, t2: t2}
	t.Run("series", func(t *testing.T) { checkSeries(t, prom, slices.Contains(ok2, instB)) })
	t.Run("explicit", func(t *testing.T) { checkExplicit(t, prom, w, p2) })
	t.Run("native", func(t *testing.T) {
		if !slices.Contains(ok2, instB) {
			t.Fatalf("B's samples did not all reach Prometheus (above): nothing to check")
		}
		checkNative(t, prom, w, p2)
	})
	t.Run("qta", func(t *testing.T) { checkQTA(t, prom, ok2) })
	t.Run("DeltaQExportFailed", func(t *testing.T) { checkExportFailed(t, prom, startedC, procs) })
	t.Run("DeltaQQTABreach at the gateway's lag", func(t *testing.T) {
		checkGatewayBreach(t, prom, watch, brokenEnd, mustDuration(t, "the gateway's lag", lag), procs)
	})
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// --- what the test sends ----------------------------------------------------------

// span is one span of the probe the test sends: its duration and whether
// its status is ERROR.
type span struct {
	delay time.Duration
	err   bool
}

// phase is the spans of one phase, in the order sent.
type phase []span

// phase1 is 300 spans: successes of delays 1.5–40 ms, 12 failures (status
// ERROR, 5 ms) and 3 timeouts (150 ms, beyond dMax). None is in the first
// bin, so that B's exponential histogram starts, as most probes' do, with
// empty buckets below its first count, which phase 2 then fills.
func phase1() phase {
	delays := []time.Duration{1500, 3000, 4200, 6000, 8000, 10000, 12000, 18000, 25000, 40000, 2200}
	p := make(phase, 300)
	for k := range p {
		switch {
		case k%25 == 7:
			p[k] = span{delay: 5 * time.Millisecond, err: true}
		case k%100 == 50:
			p[k] = span{delay: 150 * time.Millisecond}
		default:
			p[k] = span{delay: delays[k%len(delays)] * time.Microsecond}
		}
	}
	return p
}

// phase2 is 600 spans of another distribution: successes of delays
// 0.7–100 ms, among them the bin edges 1 ms, 10 ms and exactly dMax, and
// their neighbours 9.999 ms and 10.001 ms; 30 failures (status ERROR,
// 20 ms) and 12 timeouts (100.001 ms, just beyond dMax). k%20 == 3 and
// k%50 == 11 never hold together (20a + 3 ≡ 11 mod 50 has no solution).
func phase2() phase {
	delays := []time.Duration{700, 1000, 2500, 9999, 10000, 10001, 14500, 30000, 55000, 70000, 99999, 100000, 4000}
	p := make(phase, 600)
	for k := range p {
		switch {
		case k%20 == 3:
			p[k] = span{delay: 20 * time.Millisecond, err: true}
		case k%50 == 11:
			p[k] = span{delay: dMax + time.Microsecond}
		default:
			p[k] = span{delay: delays[k%len(delays)] * time.Microsecond}
		}
	}
	return p
}

// totals are instance counts by outcome.
type totals struct{ success, failure, timeout int }

func (a totals) plus(b totals) totals {
	return totals{a.success + b.success, a.failure + b.failure, a.timeout + b.timeout}
}

func (a totals) all() int { return a.success + a.failure + a.timeout }

// totals classifies the phase's spans as the deltaq connector does: longer
// than dMax a timeout, else ERROR a failure, else a success.
func (p phase) totals() totals {
	var n totals
	for _, s := range p {
		switch {
		case s.delay > dMax:
			n.timeout++
		case s.err:
			n.failure++
		default:
			n.success++
		}
	}
	return n
}

// successes returns the delays of the phase's successes, sorted.
func (p phase) successes() []time.Duration {
	var d []time.Duration
	for _, s := range p {
		if s.delay <= dMax && !s.err {
			d = append(d, s.delay)
		}
	}
	slices.Sort(d)
	return d
}

// within returns the number of successes with delay ≤ le.
func (p phase) within(le time.Duration) int {
	n := 0
	for _, d := range p.successes() {
		if d <= le {
			n++
		}
	}
	return n
}

// quantile returns the true q-quantile of the successful delays: the
// smallest delay d with at least q of them ≤ d.
func (p phase) quantile(q float64) time.Duration {
	d := p.successes()
	return d[int(math.Ceil(q*float64(len(d))))-1]
}

// bin returns the bin of a delay under the upper-inclusive rule of the
// README: bin i holds (i·w, (i+1)·w].
func bin(d time.Duration) int {
	return int((d+binWidth-1)/binWidth) - 1
}

// send sends the phase to every target over OTLP/gRPC, in batches of 10
// spans every 100 ms; each span ends when its batch leaves.
func send(t *testing.T, targets []*e2etest.Collector, p phase, n int) {
	t.Helper()
	clients := make([]ptraceotlp.GRPCClient, len(targets))
	for i, c := range targets {
		clients[i] = ptraceotlp.NewGRPCClient(otlptest.Dial(t, c.Addr))
	}
	const batch = 10
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for first := 0; first < len(p); first += batch {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "e2e-promql")
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		end := time.Now()
		for k := first; k < min(first+batch, len(p)); k++ {
			sp := spans.AppendEmpty()
			sp.SetName(probe)
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetTraceID(pcommon.TraceID{0xe2, 0xe, byte(n), byte(k >> 8), byte(k), 1})
			sp.SetSpanID(pcommon.SpanID{0xe2, byte(n), byte(k >> 8), byte(k), 1})
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-p[k].delay)))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
			if p[k].err {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
		for i, cl := range clients {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := cl.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
			cancel()
			if err != nil {
				t.Fatalf("phase %d: sending spans %d… to %s: %v", n, first, targets[i].Name, err)
			}
		}
		<-tick.C
	}
}

// --- when Prometheus has a phase -----------------------------------------------------

// at formats a time for PromQL's @ modifier: Unix seconds, millisecond
// precision.
func at(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// sel is the selector of the probe's series from one collector.
func sel(instance string, more ...string) string {
	s := fmt.Sprintf(`deltaq_probe=%q,instance=%q`, probe, instance)
	for _, m := range more {
		s += "," + m
	}
	return "{" + s + "}"
}

// successCount is the query of the successes in deltaq.observed of each
// collector: A's classic histogram has a _count series, B's native one
// answers histogram_count.
var successCount = map[string]string{
	instA: "deltaq_observed_seconds_count" + sel(instA),
	instB: "histogram_count(deltaq_observed_seconds" + sel(instB) + ")",
}

// settle waits until Prometheus holds want in deltaq_outcomes_total and the
// successes in deltaq_observed_seconds of each instance in insts, then
// returns a time after which nothing changes: the samples of a later window
// have arrived, and still hold want. Windows close one interval (1 s) after
// their end and are then written; the samples' timestamps are the windows'
// ends. An instance whose samples do not all arrive within 20 s, or whose
// series Prometheus cannot answer for, is reported (with the requests
// Prometheus failed on) and left out of the result, so that the other's
// checks still run; without A there is nothing to check.
func settle(t *testing.T, prom *prometheus, want totals, insts []string, procs []*e2etest.Proc) (time.Time, []string) {
	t.Helper()
	got := map[string]totals{}
	holds := func(inst string) (bool, error) {
		o, err := prom.query("deltaq_outcomes_total" + sel(inst))
		if err != nil {
			return false, err
		}
		var n totals
		for _, s := range o {
			v := int(s.float(t))
			switch s.Metric["deltaq_outcome"] {
			case "success":
				n.success = v
			case "failure":
				n.failure = v
			case "timeout":
				n.timeout = v
			}
		}
		got[inst] = n
		c, err := prom.query(successCount[inst])
		return err == nil && n == want && len(c) == 1 && int(c[0].float(t)) == want.success, err
	}
	failed := func(inst string, why string) {
		t.Errorf("instance %s: %s; Prometheus failed on %d requests: %q", inst, why, len(prom.panics()), prom.panics())
	}
	deadline := time.Now().Add(20 * time.Second)
	pending := slices.Clone(insts)
	var ok []string
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			for _, inst := range pending {
				failed(inst, fmt.Sprintf("outcomes %+v in Prometheus after 20 s, want %+v", got[inst], want))
			}
			break
		}
		for _, inst := range slices.Clone(pending) {
			h, err := holds(inst)
			if err != nil {
				failed(inst, err.Error())
			}
			if h || err != nil {
				pending = slices.DeleteFunc(pending, func(s string) bool { return s == inst })
			}
			if h {
				ok = append(ok, inst)
			}
		}
		e2etest.CheckRunning(t, procs...)
		time.Sleep(250 * time.Millisecond)
	}
	if !slices.Contains(ok, instA) {
		t.FailNow()
	}
	settled := time.Now()
	e2etest.Until(t, "a sample after "+at(settled), 10*time.Second, func() bool {
		for _, inst := range ok {
			v := prom.mustQuery(t, `timestamp(deltaq_outcomes_total`+sel(inst, `deltaq_outcome="success"`)+")")
			if len(v) != 1 || v[0].float(t)*1000 <= float64(settled.UnixMilli()) {
				return false
			}
		}
		return true
	}, procs...)
	for _, inst := range ok {
		if h, err := holds(inst); !h {
			t.Fatalf("instance %s: the counts changed after they reached %+v: %+v (%v)", inst, want, got[inst], err)
		}
	}
	return settled, ok
}

// window is [t1, t2]: phase 2 exactly.
type window struct{ t1, t2 time.Time }

// diff is the PromQL difference of a selector's samples at t2 and t1: the
// README's exact form of an increase.
func (w window) diff(series string) string {
	return fmt.Sprintf("(%s @ %s - %s @ %s)", series, at(w.t2), series, at(w.t1))
}

// increase is increase() over exactly [t1, t2], at t2.
func (w window) increase(series string) string {
	return fmt.Sprintf("increase(%s[%dms] @ %s)", series, w.t2.UnixMilli()-w.t1.UnixMilli(), at(w.t2))
}

// --- the checks -------------------------------------------------------------------

// checkSeries checks the names and labels of the README's table: A and B's
// series differ by instance; A's deltaq.observed is a classic histogram
// with a bucket per bin edge and +Inf, B's a native histogram; C's series
// never arrive (D's, of another job, are not counted).
func checkSeries(t *testing.T, prom *prometheus, bOK bool) {
	got := prom.byLabel(t, fmt.Sprintf(`count by (instance) (deltaq_outcomes_total{deltaq_probe=%q,job!=%q})`, probe, gatewayJob), "instance")
	if len(got) != 2 || got[instA] != 3 || got[instB] != 3 {
		t.Errorf("deltaq_outcomes_total series by instance: %v, want %s and %s with 3 (success, timeout, failure) each",
			got, instA, instB)
	}
	if n := len(prom.mustQuery(t, "deltaq_observed_seconds_bucket"+sel(instA))); n != 101 {
		t.Errorf("deltaq_observed_seconds_bucket%s: %d series, want 101 (le = 0.001 … 0.1 and +Inf)", sel(instA), n)
	}
	for _, q := range []string{"deltaq_observed_seconds" + sel(instA), "deltaq_observed_seconds_bucket" + sel(instB),
		"deltaq_observed_seconds_count" + sel(instB)} {
		if v := prom.mustQuery(t, q); len(v) != 0 {
			t.Errorf("%s: %d series, want none (A has a classic histogram, B a native one)", q, len(v))
		}
	}
	if !bOK {
		return // reported by settle; B's native histogram is not queried
	}
	native := prom.mustQuery(t, "deltaq_observed_seconds"+sel(instB))
	if len(native) != 1 || len(native[0].Histogram) != 2 {
		t.Errorf("deltaq_observed_seconds%s: %v, want one native histogram", sel(instB), native)
	}
}

// checkExplicit checks A's classic histogram and counters over phase 2.
func checkExplicit(t *testing.T, prom *prometheus, w window, p phase) {
	want := p.totals()
	// Instances: the difference of two samples is exact.
	if got := prom.value(t, w.diff("deltaq_observed_seconds_count"+sel(instA))); got != float64(want.success) {
		t.Errorf("deltaq_observed_seconds_count @ t2 − @ t1 = %v, want the %d successes of phase 2", got, want.success)
	}
	var sum float64
	for _, d := range p.successes() {
		sum += d.Seconds()
	}
	if got := prom.value(t, w.diff("deltaq_observed_seconds_sum"+sel(instA))); math.Abs(got-sum) > 1e-9 {
		t.Errorf("deltaq_observed_seconds_sum @ t2 − @ t1 = %.9f s, want the phase's %.9f s", got, sum)
	}
	outcomes := prom.byLabel(t, w.diff("deltaq_outcomes_total"+sel(instA)), "deltaq_outcome")
	for k, n := range map[string]int{"success": want.success, "failure": want.failure, "timeout": want.timeout} {
		if outcomes[k] != float64(n) {
			t.Errorf(`deltaq_outcomes_total{deltaq_outcome=%q} @ t2 − @ t1 = %v, want %d`, k, outcomes[k], n)
		}
	}

	// Buckets: each success counts at every le at or above its delay,
	// bins upper-inclusive (10 ms is in le="0.01", 10.001 ms is not; a
	// delay of exactly dMax in le="0.1").
	buckets := prom.byLabel(t, w.diff("deltaq_observed_seconds_bucket"+sel(instA)), "le")
	for _, le := range []struct {
		label string
		d     time.Duration
	}{{"0.001", time.Millisecond}, {"0.01", 10 * time.Millisecond}, {"0.05", 50 * time.Millisecond},
		{"0.1", dMax}, {"+Inf", dMax}} {
		got, ok := buckets[le.label]
		if want := p.within(le.d); !ok || got != float64(want) {
			t.Errorf(`deltaq_observed_seconds_bucket{le=%q} @ t2 − @ t1 = %v (present %v), want %d`, le.label, got, ok, want)
		}
	}

	// histogram_quantile interpolates linearly inside the bucket where the
	// rank q·n falls. That bucket (a, a + w] also holds the true quantile
	// (the smallest delay with at least q·n successes at or below it), so
	// the answer is within one bin of the truth, either way: bins are
	// upper-inclusive, so the truth is never above the bucket's upper bound
	// nor at its lower bound, and the interpolation lies between them. The
	// exact answer follows from the bucket counts of the phase.
	for _, q := range []float64{0.5, 0.9} {
		got := prom.value(t, fmt.Sprintf("histogram_quantile(%g, %s)", q, w.diff("deltaq_observed_seconds_bucket"+sel(instA))))
		truth := p.quantile(q).Seconds()
		if math.Abs(got-truth) >= binWidth.Seconds() {
			t.Errorf("histogram_quantile(%g) over phase 2 = %.6f s, true quantile %.6f s: more than one bin (1 ms) apart", q, got, truth)
		}
		if want := interpolated(p, q); math.Abs(got-want) > 1e-9 {
			t.Errorf("histogram_quantile(%g) over phase 2 = %.9f s, want %.9f s (linear inside bucket of the rank)", q, got, want)
		}
		t.Logf("histogram_quantile(%g): %.6f s, true quantile %.6f s (error %+.3f ms)", q, got, truth, (got-truth)*1e3)
	}

	// The improper CDF at d: successes ≤ d ÷ all instances. Exact from the
	// difference of two samples; close from increase(), which extrapolates
	// every series to the ends of the range by the same factor (the series
	// are sampled at the same instants) except where a counter's
	// extrapolation stops at its zero point.
	for _, le := range []struct {
		label string
		d     time.Duration
	}{{"0.01", 10 * time.Millisecond}, {"0.05", 50 * time.Millisecond}} {
		truth := float64(p.within(le.d)) / float64(want.all())
		exact := prom.value(t, fmt.Sprintf("sum by (deltaq_probe) %s / sum by (deltaq_probe) %s",
			w.diff("deltaq_observed_seconds_bucket"+sel(instA, `le="`+le.label+`"`)), w.diff("deltaq_outcomes_total"+sel(instA))))
		if math.Abs(exact-truth) > 1e-12 {
			t.Errorf("ΔQ at %s s from @ t2 − @ t1: %.9f, want %d/%d = %.9f", le.label, exact, p.within(le.d), want.all(), truth)
		}
		readme := prom.value(t, fmt.Sprintf("sum by (deltaq_probe) (%s) / sum by (deltaq_probe) (%s)",
			w.increase("deltaq_observed_seconds_bucket"+sel(instA, `le="`+le.label+`"`)), w.increase("deltaq_outcomes_total"+sel(instA))))
		if math.Abs(readme-truth) > 0.02 {
			t.Errorf("ΔQ at %s s from increase() over [t1, t2]: %.6f, want within 0.02 of %.6f", le.label, readme, truth)
		}
		t.Logf("ΔQ at %s s: %.6f exact, %.6f from increase() (difference %.2g)", le.label, exact, readme, readme-exact)
	}
}

// interpolated is what histogram_quantile returns for phase p's successes
// on 1 ms buckets: the rank q·n falls in the first bucket (a, a + w] whose
// cumulative count reaches it, and the answer is a + w·(rank − below)/in,
// below the count before the bucket and in its own (Prometheus,
// promql/quantile.go, bucketQuantile).
func interpolated(p phase, q float64) float64 {
	counts := map[int]int{}
	d := p.successes()
	for _, x := range d {
		counts[bin(x)]++
	}
	rank := q * float64(len(d))
	below := 0
	for i := 0; ; i++ {
		if float64(below+counts[i]) >= rank {
			w := binWidth.Seconds()
			return float64(i)*w + w*(rank-float64(below))/float64(counts[i])
		}
		below += counts[i]
	}
}

// checkNative checks B's native histogram over phase 2.
func checkNative(t *testing.T, prom *prometheus, w window, p phase) {
	want := p.totals()
	series := "deltaq_observed_seconds" + sel(instB)
	count := fmt.Sprintf("histogram_count(%s @ %s) - histogram_count(%s @ %s)", series, at(w.t2), series, at(w.t1))
	if got := prom.value(t, count); got != float64(want.success) {
		t.Errorf("%s = %v, want the %d successes of phase 2", count, got, want.success)
	}
	var sum float64
	for _, d := range p.successes() {
		sum += d.Seconds()
	}
	sums := fmt.Sprintf("histogram_sum(%s @ %s) - histogram_sum(%s @ %s)", series, at(w.t2), series, at(w.t1))
	if got := prom.value(t, sums); math.Abs(got-sum) > 1e-9 {
		t.Errorf("%s = %.9f s, want %.9f s", sums, got, sum)
	}

	// The buckets: each bin's count is in the exponential bucket
	// (lower, upper] of the bin's right edge. With 100 bins of 1 ms and
	// max_size 160 the scale is 4 (base 2^(1/16) ≈ 1.0443): from 1 ms to
	// 100 ms are log2(100)·2⁴ ≈ 106 buckets, at scale 5 ≈ 213.
	base := math.Pow(2, 1.0/16)
	before := bucketMap(t, prom.value1(t, series+" @ "+at(w.t1)))
	after := bucketMap(t, prom.value1(t, series+" @ "+at(w.t2)))
	wantB := map[[2]float64]float64{}
	for _, d := range p.successes() {
		edge := float64(bin(d)+1) * binWidth.Seconds()
		found := false
		for k := range after {
			if k[0] < edge && edge <= k[1] {
				wantB[k]++
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no bucket of %s holds the bin edge %g s (buckets %v)", series, edge, after)
		}
	}
	for k, n := range after {
		if r := k[1] / k[0]; math.Abs(r-base) > 1e-9 {
			t.Errorf("bucket (%g, %g]: upper/lower %.12f, want 2^(1/16) = %.12f (scale 4)", k[0], k[1], r, base)
		}
		if got := n - before[k]; got != wantB[k] {
			t.Errorf("bucket (%g, %g] @ t2 − @ t1 holds %v, want %v", k[0], k[1], got, wantB[k])
		}
	}

	// histogram_quantile: the rank falls in the exponential bucket
	// (L, L·base] of the bin edge e of the true quantile's bin, and the
	// answer is interpolated linearly in it. So it is below the truth by
	// less than one exponential bucket (truth ≤ e ≤ L·base: answer ≥ L ≥
	// truth/base) and above it by less than one bin and one exponential
	// bucket (answer ≤ e·base < (truth + w)·base). The difference of two
	// native histograms is not in every Prometheus (2.42 has only +); the
	// README's increase() over [t1, t2] scales every bucket alike, and the
	// quantile does not depend on the scale.
	diff := w.diff(series)
	if v, err := prom.query(diff); err != nil || len(v) != 1 || len(v[0].Histogram) != 2 {
		t.Logf("%s: no native histogram in this Prometheus (%v, %v): the quantile from increase() only", diff, v, err)
		diff = ""
	}
	for _, q := range []float64{0.5, 0.9} {
		truth := p.quantile(q).Seconds()
		lo, hi := truth/base, (truth+binWidth.Seconds())*base
		for _, h := range []string{diff, w.increase(series)} {
			if h == "" {
				continue
			}
			got := prom.value(t, fmt.Sprintf("histogram_quantile(%g, %s)", q, h))
			if got < lo || got >= hi {
				t.Errorf("histogram_quantile(%g, %s) = %.6f s, want in [%.6f, %.6f) around the true %.6f s", q, h, got, lo, hi, truth)
			}
			t.Logf("histogram_quantile(%g, %s): %.6f s, true quantile %.6f s (error %+.2f %%)", q, h, got, truth, (got/truth-1)*100)
		}
	}
}

// value1 evaluates q, which must return exactly one sample.
func (p *prometheus) value1(t *testing.T, q string) sample {
	t.Helper()
	v := p.mustQuery(t, q)
	if len(v) != 1 {
		t.Fatalf("%s: %d samples, want 1", q, len(v))
	}
	return v[0]
}

// bucketMap returns a native histogram's bucket counts by (lower, upper],
// failing the test on a bucket of another boundary rule (0 is lower-open,
// upper-closed).
func bucketMap(t *testing.T, s sample) map[[2]float64]float64 {
	t.Helper()
	m := map[[2]float64]float64{}
	for _, b := range s.native(t) {
		if b.rule != 0 || b.lower <= 0 {
			t.Fatalf("native bucket %+v: want a positive (lower, upper] bucket", b)
		}
		m[[2]float64{b.lower, b.upper}] = b.count
	}
	return m
}

// checkQTA checks the QTA gauges of A and B against the configuration, and
// that the violation flag exists.
func checkQTA(t *testing.T, prom *prometheus, insts []string) {
	for _, inst := range insts {
		points := prom.byLabel(t, "deltaq_qta_point_ratio"+sel(inst), "deltaq_le")
		if len(points) != len(qtaPoints) {
			t.Errorf("deltaq_qta_point_ratio%s by deltaq_le: %v, want %v", sel(inst), points, qtaPoints)
		}
		for le, p := range qtaPoints {
			if points[le] != p {
				t.Errorf(`deltaq_qta_point_ratio%s{deltaq_le=%q} = %v, want %v`, sel(inst), le, points[le], p)
			}
		}
		if got := prom.value(t, "deltaq_qta_max_failure_ratio"+sel(inst)); got != qtaMaxFailure {
			t.Errorf("deltaq_qta_max_failure_ratio%s = %v, want %v", sel(inst), got, qtaMaxFailure)
		}
		if got := prom.value(t, "deltaq_qta_violation"+sel(inst)); got != 0 && got != 1 {
			t.Errorf("deltaq_qta_violation%s = %v, want 0 or 1", sel(inst), got)
		}
	}
}

// checkExportFailed waits for DeltaQExportFailed to fire for C's remote
// write exporter, within 40 s of C's start: its retries give up after 2 s,
// Prometheus scrapes and evaluates every second, and the rule has no for.
func checkExportFailed(t *testing.T, prom *prometheus, startedC time.Time, procs []*e2etest.Proc) {
	var firing *alert
	e2etest.Until(t, "DeltaQExportFailed firing", time.Until(startedC.Add(40*time.Second)), func() bool {
		as, err := prom.alerts()
		if err != nil {
			t.Fatalf("alerts: %v", err)
		}
		for i, a := range as {
			if a.Labels["alertname"] == "DeltaQExportFailed" && a.State == "firing" {
				firing = &as[i]
				return true
			}
		}
		return false
	}, procs...)
	active, err := time.Parse(time.RFC3339Nano, firing.ActiveAt)
	if err != nil {
		t.Fatalf("DeltaQExportFailed activeAt %q: %v", firing.ActiveAt, err)
	}
	t.Logf("DeltaQExportFailed active %v after C's start: %v", active.Sub(startedC).Round(100*time.Millisecond), firing.Labels)
	if firing.Labels["exporter"] != "prometheus_remote_write" || firing.Labels["job"] != "otelcol-deltaq-telemetry" ||
		firing.Labels["severity"] != "critical" {
		t.Errorf("DeltaQExportFailed labels %v, want exporter prometheus_remote_write, job otelcol-deltaq-telemetry, severity critical",
			firing.Labels)
	}
	if got := prom.value(t, `otelcol_exporter_send_failed_metric_points{exporter="prometheus_remote_write"}`); got <= 0 {
		t.Errorf("otelcol_exporter_send_failed_metric_points = %v, want > 0", got)
	}
}
