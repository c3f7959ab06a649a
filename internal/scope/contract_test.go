// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"context"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// TestScopeDecodesTheObserversOutput feeds the output of the real metric and
// log builders (internal/core, which the connector and the exporter
// run) into the scope's decoder, so that the two ends of the output contract
// cannot drift apart. One window of probe "checkout" (dMax 10 ms, 10 bins):
// 8 successes, two at each of 2, 4, 6 and 8 ms, plus 2 timeouts. Expected by
// hand: outcomes 8/2/0; failure ratio 2/10 = 0.2; observed CDF at 10 ms =
// 8/10; the QTA {5 ms: 0.5, max_failure 0.1} is broken by the failure ratio
// (violation 1, one failure trigger). Bins are upper-inclusive, so the pairs
// sit in (1, 2], (3, 4], (5, 6] and (7, 8] ms: F(5 ms) = 0.4, F(6 ms) = 0.6,
// and the median, linear within (5, 6], is 5.5 ms.
func TestScopeDecodesTheObserversOutput(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cfg := core.NewDefaultConfig()
	cfg.Interval = time.Second
	cfg.Snapshot.Enabled = false
	cfg.Probes = map[string]analysis.ProbeConfig{"checkout": {
		DMax: 10 * time.Millisecond, Bins: 10,
		QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 5 * time.Millisecond, P: 0.5}}, MaxFailure: 0.1},
		Triggers: analysis.Triggers{QTA: true, Failure: true},
	}}
	now := t0
	o, err := core.New(&cfg, core.Settings{
		Kind: "connector", Scope: "scope-contract-test",
		Telemetry: componenttest.NewNopTelemetrySettings(),
		Now:       func() time.Time { return now },
		Ticks:     make(chan time.Time),
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics, logs := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	o.Start(core.Outputs{Metrics: metrics, Logs: logs})
	var spans []coretest.Span
	start := t0.Add(100 * time.Millisecond)
	for _, ms := range []int{2, 2, 4, 4, 6, 6, 8, 8} {
		spans = append(spans, coretest.Span{Probe: "checkout", Outcome: contract.Success,
			Start: start, End: start.Add(time.Duration(ms) * time.Millisecond), DMax: 10 * time.Millisecond, Bins: 10})
	}
	for range 2 {
		spans = append(spans, coretest.Span{Probe: "checkout", Outcome: contract.Timeout,
			Start: start, End: start.Add(10 * time.Millisecond), DMax: 10 * time.Millisecond, Bins: 10})
	}
	if err := o.ConsumeTraces(context.Background(), coretest.Traces(spans...)); err != nil {
		t.Fatal(err)
	}
	now = t0.Add(900 * time.Millisecond)                     // Shutdown flushes up to the window holding now: the data window is the last
	if err := o.Shutdown(context.Background()); err != nil { // closes and emits the open windows
		t.Fatal(err)
	}

	st := newScopeState(DefaultLimits())
	for _, md := range metrics.AllMetrics() {
		st.addMetrics(md)
	}
	for _, ld := range logs.AllLogs() {
		st.addLogs(ld)
	}
	if st.malformed != 0 {
		t.Errorf("the scope found %d malformed points in the builder's output", st.malformed)
	}
	p := st.probes["checkout"]
	if p == nil {
		t.Fatalf("no checkout probe decoded; probes %v", st.probes)
	}
	for oc, want := range map[string]float64{contract.Success: 8, contract.Timeout: 2, contract.Failure: 0} {
		if got := p.outcomes[oc].total; got != want {
			t.Errorf("outcomes[%s] = %v, want %v", oc, got, want)
		}
	}
	if !p.failure.ok || math.Abs(p.failure.v-0.2) > 1e-12 {
		t.Errorf("failure ratio %+v, want 0.2", p.failure)
	}
	if !p.violation.ok || p.violation.v != 1 {
		t.Errorf("QTA violation %+v, want 1", p.violation)
	}
	obs := p.curves[contract.SeriesObserved]
	if len(obs) == 0 || math.Abs(obs[len(obs)-1].p-0.8) > 1e-12 || math.Abs(obs[len(obs)-1].delay-0.010) > 1e-12 {
		t.Errorf("observed curve ends at %v, want (0.01 s, 0.8)", obs)
	}
	if len(p.curves[contract.SeriesQTA]) == 0 {
		t.Error("no QTA curve decoded")
	}
	// The QTA exactly as configured, from deltaq.qta.point and
	// deltaq.qta.max_failure.
	if q := p.qta; len(q.points) != 1 || q.points[0] != (curvePoint{0.005, 0.5}) || q.maxFailure != (scopeReading{0.1, true}) {
		t.Errorf("QTA decoded %+v, want {5 ms: 0.5} with max failure 0.1", q)
	}
	// The median, read from the analysis counts: the 5th of 10 instances,
	// the first of the two at 6 ms, halfway through their bucket.
	edges, err := deltaq.FineLayout().Edges()
	if err != nil {
		t.Fatal(err)
	}
	j := deltaq.LogLinearBucket(edges, int64(6*time.Millisecond))
	want := (float64(edges[j]) + float64(edges[j+1])) / 2 / 1e9
	if got, ok := p.quantiles[contract.SeriesObserved][0.5]; !ok || math.Abs(got-want) > 1e-12 {
		t.Errorf("observed median %v (%v), want %v s", got, ok, want)
	}
	kinds := map[string]int{}
	for _, tr := range st.triggers {
		kinds[tr.kind]++
	}
	if kinds["failure"] != 1 {
		t.Errorf("triggers decoded %v, want one failure trigger", kinds)
	}
}
