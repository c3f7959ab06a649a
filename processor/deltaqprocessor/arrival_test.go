// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// The tests of this file are about the order and the time in which a span and
// its start event reach the processor: a span before its start event (the
// traces and logs pipelines run independently), and a span delayed in transit
// past its deadline (timeout_grace).

// endedLen returns the number of spans the processor remembers as ended.
func (h *harness) endedLen() int {
	return h.p.tracker.RememberedLen()
}

// TestStartEventAfterSpanIsNotTracked: the span arrives first and is counted
// by its own duration; its start event, arriving afterwards, is consumed and
// counted, not tracked, so no synthetic timeout follows and the instance is
// counted once.
func TestStartEventAfterSpanIsNotTracked(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 25)))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 10 * time.Millisecond}))
	require.Equal(t, 1, h.endedLen())

	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	assert.Empty(t, h.lsink.AllLogs(), "the start event is consumed")
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"), "and not tracked")
	// A repeated start event (an export retried) is recognised as well.
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))

	h.clock.tick(base.Add(time.Second)) // far past start + dMax
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1, "no synthetic timeout span")
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, dMax, 25), attrsOf(spans[0]))
	assert.Equal(t, map[string]int64{"outcome=success,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"), "counted once")
	assert.Equal(t, map[string]int64{"probe=checkout": 2},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
}

// TestStartEventRepeatedAfterTrackedSpan: a span whose start event came
// first ends the tracked instance and is remembered as ended, as a late
// one is: the start event delivered again (an export retried after its
// span came) is recognised, not tracked again. Neither was remembered, and
// the repeated start event timed out: a synthetic timeout span for an
// instance counted already.
func TestStartEventRepeatedAfterTrackedSpan(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 10 * time.Millisecond}))
	assert.Equal(t, 1, h.endedLen())

	// A late span, its instance timed out.
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 2, at: base}))
	h.clock.tick(base.Add(time.Second))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 2, start: base, duration: 2 * time.Second}))
	assert.Equal(t, 2, h.endedLen())
	assert.Equal(t, map[string]int64{"probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"))

	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base}))
	h.clock.tick(base.Add(2 * time.Second))
	assert.Equal(t, map[string]int64{"probe=checkout": 2},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"))
	assert.Equal(t, map[string]int64{"probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"), "instance 2's, once")
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
}

// TestEndedWindowForgets: an ended span is remembered for ended_window after
// it arrived (by the processor's clock), then forgotten; a start event due
// more than ended_window ago is then refused as stale_start — whether its
// span came can no longer be told (tracked, it was a timeout too: the
// instance counted twice).
func TestEndedWindowForgets(t *testing.T) {
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	cfg.EndedWindow = 5 * time.Second
	h := newHarness(t, cfg)
	arrived := base.Add(time.Second)
	h.clock.set(arrived)
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 10 * time.Millisecond}))

	h.clock.tick(arrived.Add(5*time.Second - time.Nanosecond))
	require.Equal(t, 1, h.endedLen())
	h.clock.tick(arrived.Add(5 * time.Second))
	require.Zero(t, h.endedLen())

	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"))
	assert.Equal(t, int64(1), telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed")["reason=stale_start"])
}

// TestFutureStartRefused: a start event that starts more than ended_window
// (5 s) after the processor's clock is refused as future_start and tracks
// nothing (a clock far ahead, or a forged time: it held a slot of
// max_in_flight until due, and at a century ahead for good); one 4 s
// ahead is tracked.
func TestFutureStartRefused(t *testing.T) {
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	cfg.EndedWindow = 5 * time.Second
	h := newHarness(t, cfg)
	h.clock.set(base)
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base.Add(5*time.Second + time.Millisecond)},
		startEvent{probe: "checkout", id: 2, at: base.AddDate(100, 0, 0)},
		startEvent{probe: "checkout", id: 3, at: base.Add(4 * time.Second)}))
	assert.Equal(t, int64(2), telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed")["reason=future_start"])
	h.clock.tick(base.Add(time.Millisecond))
	assert.Equal(t, map[string]int64{"state=started": 1, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
}

// TestMaxEndedBoundsMemory: max_ended 4 keeps two generations of 2 spans;
// adding to a full newer generation forgets the older one, counting its spans
// (still inside ended_window here). A start event for a forgotten span is
// tracked; those for remembered spans are recognised.
func TestMaxEndedBoundsMemory(t *testing.T) {
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	cfg.MaxEnded = 4
	h := newHarness(t, cfg)
	var specs []spanSpec
	for id := byte(1); id <= 5; id++ {
		specs = append(specs, spanSpec{name: "checkout", id: id, duration: time.Millisecond})
	}
	h.consumeTraces(tracesOf(specs...))
	require.Equal(t, 3, h.endedLen(), "spans 1 and 2 forgotten when span 5 arrived")
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_ended_evictions"))

	var events []startEvent
	for id := byte(1); id <= 5; id++ {
		events = append(events, startEvent{probe: "checkout", id: id, at: base})
	}
	h.consumeLogs(logsOf(events...))
	assert.Equal(t, map[string]int64{"probe=checkout": 3},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"))
	assert.Equal(t, map[string]int64{"state=started": 2, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))

	// 90 more spans: the memory stays within the bound, and every second
	// span from the second on forgets a generation of 2.
	for id := byte(10); id < 100; id++ {
		h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: id, duration: time.Millisecond}))
		require.LessOrEqual(t, h.endedLen(), 4)
	}
	assert.Equal(t, map[string]int64{"": 2 + 90}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_ended_evictions"))
}

// TestTracesOnlyRemembersNothing: a processor in a traces pipeline alone
// never sees start events, so its span path remembers no ended span.
func TestTracesOnlyRemembersNothing(t *testing.T) {
	f := newFactory(newFakeClock(), collectorstate.New())
	set := processortest.NewNopSettings(metadata.Type)
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	tp, err := f.processorFactory().CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, tp.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	p := f.lookup(set.ID)
	require.NoError(t, tp.ConsumeTraces(context.Background(), tracesOf(
		spanSpec{name: "checkout", id: 1, duration: time.Millisecond},
		spanSpec{name: "checkout", id: 2, duration: time.Millisecond},
	)))
	assert.False(t, p.tracker.Remembering())
	assert.Zero(t, p.tracker.RememberedLen())
}

// TestConcurrentSpansAndStartEvents sends the spans and the start events of
// the same instances from different goroutines, as two independent pipelines
// do, while the timer fires; run it with -race. Whichever arrives first,
// every instance is counted exactly once: a span first (its start event is
// then recognised), a start event first and the span in time (success), or a
// start event first and the span after the timeout (a synthetic timeout, then
// a late span).
func TestConcurrentSpansAndStartEvents(t *testing.T) {
	const (
		workers   = 3
		perWorker = 1000
		batch     = 25
		dMax      = 50 * time.Millisecond
	)
	cfg := testConfig(probeConfig("job", dMax, 50))
	cfg.LateWindow = time.Hour
	cfg.EndedWindow = time.Hour
	h := newHarness(t, cfg)

	stopTicking := h.tickEveryMillisecond()
	var wg sync.WaitGroup
	for w := range workers {
		for _, spansFirst := range []bool{true, false} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := 0; b < perWorker; b += batch {
					ids := make([]uint32, batch)
					for i := range ids {
						ids[i] = uint32(w*perWorker + b + i)
					}
					if spansFirst {
						h.consumeTraces(spansOf("job", base, 10*time.Millisecond, ids...))
					} else {
						h.consumeLogs(startEvents("job", base, ids...))
					}
				}
			}()
		}
	}
	wg.Wait()
	stopTicking()
	h.clock.tick(base.Add(time.Minute)) // every deadline has passed

	total := int64(workers * perWorker)
	inst := telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances")
	success, timeout := inst["outcome=success,probe=job"], inst["outcome=timeout,probe=job"]
	late := telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans")["probe=job"]
	afterEnd := telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end")["probe=job"]
	assert.Equal(t, total, success+timeout, "each instance counted once")
	assert.Equal(t, timeout, late, "every timeout was a started instance whose span came late")
	assert.Equal(t, timeout, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts")["probe=job"])
	assert.LessOrEqual(t, afterEnd, success)
	assert.Equal(t, int(total), h.endedLen(), "every span is remembered, whether it came first or not")
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	assert.Zero(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_ended_evictions")[""])
	t.Logf("success %d (span first %d), timeout %d", success, afterEnd, timeout)
}

// TestTimeoutGraceDelaysReport: with timeout_grace the timer reports an
// instance at the first tick at or after start + dMax + grace, and the
// synthetic span still ends at start + dMax.
func TestTimeoutGraceDelaysReport(t *testing.T) {
	const dMax, grace, res = 50 * time.Millisecond, 30 * time.Millisecond, 10 * time.Millisecond
	cfg := testConfig(probeConfig("checkout", dMax, 25))
	cfg.TimerResolution = res
	cfg.TimeoutGrace = grace
	h := newHarness(t, cfg)

	start := base.Add(3 * time.Millisecond) // deadline base+53ms, due base+83ms
	h.consumeLogs(logsOf(startEvent{probe: "checkout", service: "shop", id: 1, at: start}))
	for at := base.Add(res); at.Before(start.Add(dMax + grace)); at = at.Add(res) {
		h.clock.tick(at)
		require.Zero(t, h.tsink.SpanCount(), "reported within the grace, at %v", at.Sub(base))
	}
	h.clock.tick(base.Add(90 * time.Millisecond)) // first tick ≥ due
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1)
	assert.Equal(t, spanID(1), spans[0].SpanID())
	assert.Equal(t, start.Add(dMax), spans[0].EndTimestamp().AsTime(), "the synthetic span ends at start + dMax")
	assert.Equal(t, true, attrsOf(spans[0])[contract.AttrSynthetic])
	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))

	// The late window counts from the report: forgotten at due + late_window.
	due := start.Add(dMax + grace)
	h.clock.tick(due.Add(inflight.DefaultLateWindow - time.Nanosecond))
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	h.clock.tick(due.Add(inflight.DefaultLateWindow))
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
}

// TestSpanWithinGraceCountsNormally: a span that reaches the processor after
// start + dMax but within the grace is counted by its own duration (success
// when ≤ dMax, timeout when > dMax), once, and no synthetic span follows.
func TestSpanWithinGraceCountsNormally(t *testing.T) {
	const dMax, grace = 50 * time.Millisecond, 100 * time.Millisecond
	cfg := testConfig(probeConfig("checkout", dMax, 25))
	cfg.TimeoutGrace = grace
	h := newHarness(t, cfg)
	h.consumeLogs(logsOf(
		startEvent{probe: "checkout", id: 1, at: base},
		startEvent{probe: "checkout", id: 2, at: base},
		startEvent{probe: "checkout", id: 3, at: base},
	))
	h.clock.tick(base.Add(dMax))                           // the deadline
	h.clock.tick(base.Add(dMax + grace - time.Nanosecond)) // the end of the grace
	require.Zero(t, h.tsink.SpanCount())
	h.consumeTraces(tracesOf(
		spanSpec{name: "checkout", id: 1, start: base, duration: 40 * time.Millisecond},
		spanSpec{name: "checkout", id: 2, start: base, duration: dMax + time.Millisecond},
	))
	h.clock.tick(base.Add(time.Second))

	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 3, "two spans, one synthetic span for the instance whose span never came")
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, dMax, 25), attrsOf(spans[0]))
	assert.Equal(t, outcomeAttrs("checkout", contract.Timeout, dMax, 25), attrsOf(spans[1]), "not marked late")
	assert.Equal(t, spanID(3), spans[2].SpanID())
	assert.Equal(t, true, attrsOf(spans[2])[contract.AttrSynthetic])
	assert.Equal(t, map[string]int64{
		"outcome=success,probe=checkout": 1,
		"outcome=timeout,probe=checkout": 2,
	}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
	assert.Equal(t, map[string]int64{"probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"))
}
