// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// The probes of testdata/timeouts.yaml, the example's two spans, with their
// dMax, and the connector's timer period.
var timeoutProbes = []string{handlerName, computeName}

const (
	probeDMax  = time.Second
	timerTick  = 10 * time.Millisecond
	okRequests = 5
	// slowMs is the work of the slow request: its spans end 1.5 s after
	// their dMax. crashMs is the work of the request the service dies in.
	slowMs  = 2500
	crashMs = 20000
	// onTimeSlack bounds how long after the timer's tick a timeout shows in
	// the collector's telemetry (the scrape, a busy machine).
	onTimeSlack = 150 * time.Millisecond
)

// The connector's self-telemetry the test reads.
const (
	metricStartEvents   = "otelcol_connector_deltaq_start_events"
	metricStartTimeouts = "otelcol_connector_deltaq_start_timeouts"
	metricLateSpans     = "otelcol_connector_deltaq_late_spans"
	metricInFlight      = "otelcol_connector_deltaq_in_flight"
)

// TestRealTimeTimeoutsFromErlang runs the built collector with
// testdata/timeouts.yaml — the deltaq connector alone, in the traces and the
// logs pipelines, matching the spans handle_work and compute of
// erlang/examples/traced_http.escript — and sends the example, from Go,
// okRequests requests of 20 ms, one of 2.5 s, and one in which the service
// is killed, as a crash would, once dqsd_otel has exported its start
// events. It checks that
//  1. the instances of the slow request and of the crashed one, whose spans
//     come 1.5 s after dMax or never, are counted as timeouts in real time:
//     the connector's start_timeouts passes k no earlier than the k-th start
//     + dMax and no later than one tick (plus slack) after, and the slow
//     request's are counted while it is still running;
//  2. the connector's output counts, for each probe, exactly the okRequests
//     successes and the two timeouts, no failure, each timeout in the window
//     of its start + dMax (the late span is not counted again), and the
//     timeouts' exemplars name those spans;
//  3. the connector's telemetry accounts for every start event and late
//     span; the backend gets every span that ended and every start event,
//     as sent, and no span of the crashed request;
//  4. the collector exits 0 on SIGTERM having logged no error.
func TestRealTimeTimeoutsFromErlang(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the Erlang end-to-end tests (they need Erlang/OTP too)")
	root, escript, ebin := prerequisites(t)
	sink := otlptest.Start(t, otlptest.Options{})
	telemetry := e2etest.FreeAddr(t)
	col, httpAddr := startCollector(t, root, otelcol, "erlang/e2e/testdata/timeouts.yaml",
		"DELTAQ_SINK="+sink.Addr(), "DELTAQ_TELEMETRY_PORT="+e2etest.Port(telemetry))
	e2etest.WaitListening(t, httpAddr, 30*time.Second, col)
	e2etest.WaitListening(t, telemetry, 30*time.Second, col)
	svc, _, url := startTracedHTTP(t, escript, ebin, root, httpAddr)
	watch := e2etest.WatchTelemetry(telemetry, 2*time.Millisecond, func(tm e2etest.Telemetry) float64 {
		return tm.Sum(metricStartTimeouts, nil)
	})
	defer watch.Stop()
	began := time.Now()

	// The requests that end in time, one after the other.
	var ok []pcommon.TraceID
	for range okRequests {
		tid := randomTraceID(t)
		if err := call(url, tid); err != nil {
			t.Fatal(err)
		}
		ok = append(ok, pcommon.TraceID(tid))
	}

	// 1. The slow request: its timeouts are counted while it runs.
	slow := pcommon.TraceID(randomTraceID(t))
	slowDone := make(chan error, 1)
	go func() { slowDone <- call(fmt.Sprintf("%s?ms=%d", url, slowMs), slow) }()
	starts := waitStartEvents(t, sink, slow, col, svc)
	e2etest.Until(t, "the slow request's timeouts", 10*time.Second, func() bool { return watch.Last() >= 2 }, col, svc)
	select {
	case err := <-slowDone:
		t.Fatalf("the slow request ended (%v) before its timeouts were counted: they were not counted in real time", err)
	default:
	}
	if err := <-slowDone; err != nil {
		t.Fatal(err)
	}
	sink.Until(t, "the slow request's spans", 10*time.Second, func() bool { return len(spansOf(sink, slow)) == 2 })

	// The crashed request: the service dies with it, once its start events
	// are out; its spans never come.
	crashed := pcommon.TraceID(randomTraceID(t))
	go func() { _ = call(fmt.Sprintf("%s?ms=%d", url, crashMs), crashed) }()
	for id, at := range waitStartEvents(t, sink, crashed, col, svc) {
		starts[id] = at
	}
	svc.Kill(t)
	e2etest.Until(t, "the crashed request's timeouts", 10*time.Second, func() bool { return watch.Last() >= 4 }, col)
	time.Sleep(2 * timerTick)
	var deadlines []time.Time
	for _, s := range starts {
		deadlines = append(deadlines, s.at.Add(probeDMax))
	}
	readings := watch.Stop()
	latest := e2etest.CheckOnTime(t, metricStartTimeouts, readings, deadlines, timerTick+onTimeSlack)
	t.Logf("%d scrapes: the timeouts showed at most %v after start + dMax (timer tick %v)", len(readings),
		latest.Round(time.Millisecond), timerTick)

	// 2. The output: the window of the last deadline closes within one
	// interval of it; then one more window, which must add nothing.
	sink.Until(t, "the outcome counts", 10*time.Second, func() bool {
		for _, p := range timeoutProbes {
			got := latestOutcomes(sink.Metrics(), p)
			if got[contract.Success] < okRequests || got[contract.Timeout] < 2 {
				return false
			}
		}
		return true
	})
	time.Sleep(1500 * time.Millisecond)
	checkTimeoutOutput(t, sink.Metrics(), starts)

	// 3. The telemetry and the backend.
	sent := checkPassedOn(t, sink, ok, slow, crashed)
	checkStartTelemetry(t, e2etest.Scrape(t, telemetry), sent)

	// 4. A clean stop.
	col.StopCleanly(t)
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// call sends GET url with a traceparent of trace tid (the Go side's span
// is not exported: it is only the parent) and reads the response.
func call(url string, tid [16]byte) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("traceparent", fmt.Sprintf("00-%x-%016x-01", tid, time.Now().UnixNano()|1))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s %v\n%s", url, resp.Status, err, body)
	}
	return nil
}

// start is an instance a start event announced: its probe and start time.
type start struct {
	probe string
	at    time.Time
}

// waitStartEvents waits for the start events of the handler and compute
// spans of trace tid at the sink, and returns them by span id.
func waitStartEvents(t *testing.T, sink *otlptest.Receiver, tid pcommon.TraceID, procs ...*e2etest.Proc) map[pcommon.SpanID]start {
	t.Helper()
	starts := map[pcommon.SpanID]start{}
	e2etest.Until(t, fmt.Sprintf("the start events of trace %s", tid), 10*time.Second, func() bool {
		clear(starts)
		for _, s := range otlptest.StartsOf(t, sink.Logs()) {
			if s.TraceID == tid {
				starts[s.SpanID] = start{probe: s.Probe, at: s.Time.AsTime()}
			}
		}
		return len(starts) == len(timeoutProbes)
	}, procs...)
	return starts
}

// spansOf returns the spans of trace tid the sink got, by span id.
func spansOf(sink *otlptest.Receiver, tid pcommon.TraceID) map[pcommon.SpanID]string {
	spans := map[pcommon.SpanID]string{}
	for _, td := range sink.Traces() {
		for sp := range otlprecv.Spans(td) {
			if sp.TraceID() == tid {
				spans[sp.SpanID()] = sp.Name()
			}
		}
	}
	return spans
}

// outcomePoints are the deltaq.outcomes points of probe p.
func outcomePoints(mds []pmetric.Metrics, p string) []pmetric.NumberDataPoint {
	var out []pmetric.NumberDataPoint
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			if m.Name() != contract.MetricOutcomes {
				continue
			}
			for _, dp := range m.Sum().DataPoints().All() {
				if v, _ := dp.Attributes().Get(contract.AttrProbe); v.AsString() == p {
					out = append(out, dp)
				}
			}
		}
	}
	return out
}

// latestOutcomes is the latest deltaq.outcomes (cumulative) of probe p, by
// outcome.
func latestOutcomes(mds []pmetric.Metrics, p string) map[string]int64 {
	got, at := map[string]int64{}, map[string]pcommon.Timestamp{}
	for _, dp := range outcomePoints(mds, p) {
		v, _ := dp.Attributes().Get(contract.AttrOutcome)
		if o := v.AsString(); dp.Timestamp() >= at[o] {
			at[o], got[o] = dp.Timestamp(), dp.IntValue()
		}
	}
	return got
}

// checkTimeoutOutput checks, for each probe, the exact counts; each
// window's cumulative timeouts, at its end, those of the probe whose start
// + dMax is before it; and that the exemplars of the timeout points name
// instances of the probe that timed out (starts, by span id).
func checkTimeoutOutput(t *testing.T, mds []pmetric.Metrics, starts map[pcommon.SpanID]start) {
	t.Helper()
	for _, p := range timeoutProbes {
		got := latestOutcomes(mds, p)
		want := map[string]int64{contract.Success: okRequests, contract.Timeout: 2, contract.Failure: 0}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s: %s{%s=%s} = %d, want %d (all: %v)", p, contract.MetricOutcomes, contract.AttrOutcome, k, got[k], n, got)
			}
		}
		exemplars := 0
		for _, dp := range outcomePoints(mds, p) {
			if v, _ := dp.Attributes().Get(contract.AttrOutcome); v.AsString() != contract.Timeout {
				continue
			}
			end, n := dp.Timestamp().AsTime(), int64(0)
			for _, s := range starts {
				if s.probe == p && s.at.Add(probeDMax).Before(end) {
					n++
				}
			}
			if dp.IntValue() != n {
				t.Errorf("%s: %s{%s=%s} at the window ending %v: %d, want %d (the instances whose start + dMax is before it)",
					p, contract.MetricOutcomes, contract.AttrOutcome, contract.Timeout, end, dp.IntValue(), n)
			}
			for _, ex := range dp.Exemplars().All() {
				exemplars++
				if s, ok := starts[ex.SpanID()]; !ok || s.probe != p {
					t.Errorf("%s: a timeout exemplar names span %s, which did not time out", p, ex.SpanID())
				}
			}
		}
		if exemplars == 0 {
			t.Errorf("%s: no exemplar on its timeout points", p)
		}
	}
}

// checkStartTelemetry checks the connector's counters at the end: every
// start event was read, tracked or found after its span, none refused; the
// slow request's spans were recognised as late; nothing is left started.
func checkStartTelemetry(t *testing.T, tm e2etest.Telemetry, sent int) {
	t.Helper()
	result := func(r string) float64 { return tm.Sum(metricStartEvents, map[string]string{"result": r}) }
	events := float64(sent)
	if n := result("tracked") + result("after_end"); n != events || result("tracked") < 4 {
		t.Errorf("%s: tracked %.0f + after_end %.0f, want %.0f, at least 4 tracked", metricStartEvents,
			result("tracked"), result("after_end"), events)
	}
	for _, r := range []string{"duplicate", "unknown_probe", "invalid"} {
		if n := result(r); n != 0 {
			t.Errorf("%s{result=%q} = %.0f, want 0", metricStartEvents, r, n)
		}
	}
	for _, p := range timeoutProbes {
		if n := tm.Sum(metricLateSpans, map[string]string{"probe": p}); n != 1 {
			t.Errorf("%s{probe=%q} = %.0f, want 1 (the slow request's)", metricLateSpans, p, n)
		}
	}
	if n := tm.Sum(metricInFlight, map[string]string{"state": "started"}); n != 0 {
		t.Errorf("%s{state=started} = %.0f, want 0", metricInFlight, n)
	}
}

// checkPassedOn checks that the backend got the two spans of every request
// that ended, the two start events of the slow request and at most two of
// each other (dqsd_otel sends no start event of a span that ends before the
// export round it goes in), and the two start events but no span of the crashed
// request: the connector only reads them. The start events are entries of
// batch records, dqsd_otel's default. It returns the number of start
// events the backend got, which the connector read too.
func checkPassedOn(t *testing.T, sink *otlptest.Receiver, ok []pcommon.TraceID, slow, crashed pcommon.TraceID) int {
	t.Helper()
	spans, events := map[pcommon.TraceID][]string{}, map[pcommon.TraceID]int{}
	// The example's attributes: the handler's two, none on compute.
	attrs := map[string]int{handlerName: 2, computeName: 0}
	for _, td := range sink.Traces() {
		for sp := range otlprecv.Spans(td) {
			if n, ok := attrs[sp.Name()]; !ok || sp.Attributes().Len() != n {
				t.Errorf("span %s %s reached the backend with %v, want the example's spans as it sent them",
					sp.Name(), sp.SpanID(), sp.Attributes().AsRaw())
			}
			spans[sp.TraceID()] = append(spans[sp.TraceID()], sp.Name())
		}
	}
	starts := otlptest.StartsOf(t, sink.Logs())
	for _, s := range starts {
		if !s.Batch {
			t.Errorf("the start of span %s came in a record of its own, want a batch record (dqsd_otel's default)", s.SpanID)
		}
		events[s.TraceID]++
	}
	for _, tid := range append(slices.Clone(ok), slow) {
		slices.Sort(spans[tid])
		want := []int{0, 1, 2}
		if tid == slow {
			want = []int{2}
		}
		if !slices.Equal(spans[tid], []string{computeName, handlerName}) || !slices.Contains(want, events[tid]) {
			t.Errorf("trace %s: the backend got spans %v and %d start events, want %s and %s and %v",
				tid, spans[tid], events[tid], computeName, handlerName, want)
		}
	}
	if len(spans[crashed]) != 0 || events[crashed] != 2 {
		t.Errorf("the crashed request: the backend got spans %v and %d start events, want none and 2", spans[crashed], events[crashed])
	}
	return len(starts)
}
