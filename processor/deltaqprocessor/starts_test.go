// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// batchEntry is one entry of a test batch start event: ids id (0: none),
// the start time and the sampling threshold.
type batchEntry struct {
	id        byte
	at        time.Time
	threshold uint64
}

// appendStartsEvent appends a batch start event of probe ("" none) with
// the entries, in a resource of service, to ld; thresholds says whether it
// carries deltaq.starts.thresholds.
func appendStartsEvent(ld plog.Logs, service, probe string, thresholds bool, entries ...batchEntry) plog.LogRecord {
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", service)
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(contract.StartsEventName)
	if probe != "" {
		lr.Attributes().PutStr(contract.AttrProbe, probe)
	}
	var b, th []byte
	for _, e := range entries {
		var tid pcommon.TraceID
		var sid pcommon.SpanID
		if e.id != 0 {
			tid, sid = traceID(e.id), spanID(e.id)
		}
		var ts uint64
		if !e.at.IsZero() {
			ts = uint64(e.at.UnixNano())
		}
		b = contract.AppendStart(b, tid, sid, ts)
		th = binary.LittleEndian.AppendUint64(th, e.threshold)
	}
	lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(b)
	if thresholds {
		lr.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(th)
	}
	return lr
}

// TestBatchStartEvents: the entries of a batch start event are tracked as
// single start events are, beside them: an instance whose span does not
// come is reported as a synthetic timeout span named after its probe, with
// its service and its entry's threshold (0xc0000000000000: ot=th:c), and a
// span in time ends its instance; each entry is counted on its own (after
// its span, a duplicate of a single event's, no ids, no start, unknown
// probe); the records are consumed, other log records pass.
func TestBatchStartEvents(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 25)))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 4, start: base, duration: 10 * time.Millisecond}))

	ld := logsOf(startEvent{probe: "checkout", id: 1, at: base})
	appendStartsEvent(ld, "shop", "checkout", true,
		batchEntry{id: 2, at: base}, batchEntry{id: 3, at: base, threshold: 0xc0000000000000}, batchEntry{id: 4, at: base},
		batchEntry{id: 1, at: base}, batchEntry{at: base}, batchEntry{id: 5})
	appendStartsEvent(ld, "shop", "nocheckout", false, batchEntry{id: 6, at: base}, batchEntry{id: 7, at: base})
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("an application's own")
	h.consumeLogs(ld)
	require.Len(t, h.lsink.AllLogs(), 1)
	assert.Equal(t, 1, h.lsink.AllLogs()[0].LogRecordCount(), "the start events consumed, the other record passed")

	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 30 * time.Millisecond}))
	h.clock.tick(base.Add(time.Second))
	spans, res := allSpans(h.tsink.AllTraces())
	got := map[pcommon.SpanID]string{}
	for i, sp := range spans {
		if v, ok := sp.Attributes().Get(contract.AttrSynthetic); ok && v.Bool() {
			svc, _ := res[i].Attributes().Get("service.name")
			got[sp.SpanID()] = sp.Name() + " " + svc.Str() + " " + sp.TraceState().AsRaw()
			assert.Equal(t, dMax, sp.EndTimestamp().AsTime().Sub(sp.StartTimestamp().AsTime()))
		}
	}
	assert.Equal(t, map[pcommon.SpanID]string{spanID(2): "checkout shop ", spanID(3): "checkout shop ot=th:c"}, got)
	assert.Equal(t, map[string]int64{"probe=checkout": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
	assert.Equal(t, map[string]int64{"probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"))
	assert.Equal(t, map[string]int64{"reason=duplicate_start": 1, "reason=missing_ids": 1, "reason=invalid_timestamp": 1, "reason=unknown_probe": 2},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
}

// TestMalformedBatchStartEvents: a batch start event malformed as a whole
// is consumed, counted once (malformed_batch) whatever its entries, and
// tracks none of them.
func TestMalformedBatchStartEvents(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	ld := plog.NewLogs()
	two := []batchEntry{{id: 1, at: base}, {id: 2, at: base}}
	appendStartsEvent(ld, "shop", "", false, two...)
	appendStartsEvent(ld, "shop", "checkout", false, two...).Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(make([]byte, 33))
	appendStartsEvent(ld, "shop", "checkout", false, two...).Attributes().PutStr(contract.AttrStarts, "not bytes")
	appendStartsEvent(ld, "shop", "checkout", false, two...).Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(make([]byte, 8))
	appendStartsEvent(ld, "shop", "checkout", false, two...).Attributes().PutBool(contract.AttrStartsThresholds, true)
	appendStartsEvent(ld, "shop", "checkout", false, two...).Attributes().PutEmptyBytes(contract.AttrStarts).
		FromRaw(make([]byte, (contract.MaxStartEntries+1)*contract.StartEntryBytes))
	h.consumeLogs(ld)
	assert.Empty(t, h.lsink.AllLogs(), "consumed")
	assert.Equal(t, map[string]int64{"reason=malformed_batch": 6}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	h.clock.tick(base.Add(time.Second))
	spans, _ := allSpans(h.tsink.AllTraces())
	assert.Empty(t, spans, "nothing tracked")
}

// TestStartEventProbeNotAString: a start event whose deltaq.probe is not a
// string names no probe: it is refused as unknown_probe and tracked for no
// probe (it was tracked for the first probe, and reported as its timeout).
func TestStartEventProbeNotAString(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	ld := plog.NewLogs()
	appendStartEvent(ld, startEvent{id: 1, at: base}).Attributes().PutInt(contract.AttrProbe, 0)
	appendStartEvent(ld, startEvent{id: 2, at: base}).Attributes().PutBool(contract.AttrProbe, true)
	appendStartEvent(ld, startEvent{id: 3, at: base}).Attributes().PutEmptyBytes(contract.AttrProbe).FromRaw([]byte("checkout"))
	h.consumeLogs(ld)
	assert.Equal(t, map[string]int64{"reason=unknown_probe": 3}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	h.clock.tick(base.Add(time.Second))
	spans, _ := allSpans(h.tsink.AllTraces())
	assert.Empty(t, spans, "nothing tracked")
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
}

// announce returns the start events in form: single, one record each
// (deltaq.span.start), or batch, one batch record a probe
// (deltaq.span.starts), in the order of each probe's first.
func announce(form string, events ...startEvent) plog.Logs {
	if form == "single" {
		return logsOf(events...)
	}
	ld := plog.NewLogs()
	var probes []string
	entries := map[string][]batchEntry{}
	for _, e := range events {
		if _, ok := entries[e.probe]; !ok {
			probes = append(probes, e.probe)
		}
		entries[e.probe] = append(entries[e.probe], batchEntry{id: e.id, at: e.at})
	}
	for _, probe := range probes {
		appendStartsEvent(ld, "shop", probe, false, entries[probe]...)
	}
	return ld
}

// TestStartEventOfAnotherProbe: a span that ends an instance its start
// event, in either form, announced takes that instance's probe when that probe's match
// selects it too (eu's, of the spans of checkout in region eu): a start
// event chooses among the probes that match the span. A start event that
// names a probe whose match does not select the span (other's: an SDK's
// selector and the processor's match disagree) ends the instance with no
// outcome for its probe, neither the span's duration nor a timeout, as the
// connector does: the span is mapped to its own probe, the instance counted
// in start_events_mismatched, and the first such case of each probe logged
// at warn level, naming both. An instance whose timeout was reported before
// its span came stays reported (its span is late for it, and mismatched,
// and mapped to its own probe). It was mapped to the start event's probe,
// whatever its match.
func TestStartEventOfAnotherProbe(t *testing.T) {
	for _, form := range []string{"single", "batch"} {
		t.Run(form, func(t *testing.T) { testStartEventOfAnotherProbe(t, form) })
	}
}

func testStartEventOfAnotherProbe(t *testing.T, form string) {
	eu := probeConfig("eu", time.Second, 10)
	eu.Match = MatchConfig{SpanName: "checkout", Attributes: map[string]any{"region": "eu"}}
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25), probeConfig("other", 20*time.Millisecond, 10), eu))
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	h.consumeLogs(announce(form, startEvent{probe: "other", id: 1, at: base}, startEvent{probe: "other", id: 2, at: base},
		startEvent{probe: "eu", id: 3, at: base}, startEvent{probe: "eu", id: 4, at: base}))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, duration: ms(10)},
		spanSpec{name: "checkout", id: 3, duration: ms(10), attrs: map[string]any{"region": "eu"}},
		spanSpec{name: "checkout", id: 4, duration: ms(10)}))
	h.clock.tick(base.Add(ms(25))) // other's dMax is 20ms: 2 times out
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 2, duration: ms(30)}))
	h.clock.tick(base.Add(time.Second))

	probes := map[pcommon.SpanID]any{}
	spans, _ := allSpans(h.tsink.AllTraces())
	for _, sp := range spans {
		if _, synthetic := sp.Attributes().Get(contract.AttrSynthetic); !synthetic {
			probes[sp.SpanID()] = attrsOf(sp)[contract.AttrProbe]
		}
	}
	assert.Equal(t, map[pcommon.SpanID]any{spanID(1): "checkout", spanID(2): "checkout", spanID(3): "eu", spanID(4): "checkout"}, probes)
	assert.Equal(t, map[string]int64{"outcome=success,probe=checkout": 3, "outcome=success,probe=eu": 1, "outcome=timeout,probe=other": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"), "each span once, by its own probe; other's timeout, reported before its span came")
	assert.Equal(t, map[string]int64{"probe=other": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
	assert.Equal(t, map[string]int64{"probe=other": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"))
	assert.Equal(t, map[string]int64{"probe=other": 2, "probe=eu": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_events_mismatched"))
	var warned []string
	for _, e := range h.warnings.FilterMessageSnippet("a start event named a probe whose match does not select its span").All() {
		f := e.ContextMap()
		warned = append(warned, fmt.Sprint(f["probe"], " ", f["span_probe"]))
	}
	assert.ElementsMatch(t, []string{"other checkout", "eu checkout"}, warned, "once a probe, naming both")
}

// TestStartEventSpanWithoutEnd: a span with its ids but without a valid
// end (none, or one before its start) ends the instance its start event,
// in either form, announced: it came, so no synthetic timeout follows; it is counted as
// malformed and passes unchanged. One that comes so after its instance
// timed out is late (and malformed); one that comes before its start event
// is remembered, so that the start event is not tracked. Spans 1, 2 and 5
// were each reported as a timeout as well (a synthetic span).
func TestStartEventSpanWithoutEnd(t *testing.T) {
	for _, form := range []string{"single", "batch"} {
		t.Run(form, func(t *testing.T) { testStartEventSpanWithoutEnd(t, form) })
	}
}

func testStartEventSpanWithoutEnd(t *testing.T, form string) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	h.consumeLogs(announce(form, startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base},
		startEvent{probe: "checkout", id: 3, at: base}))
	// Span 1 has no end, span 2 ends before it starts, span 5 has no start.
	td := tracesOf(spanSpec{name: "checkout", id: 1, duration: ms(10)}, spanSpec{name: "checkout", id: 2, duration: -ms(10)},
		spanSpec{name: "checkout", id: 5, duration: ms(10)})
	spans, _ := allSpans([]ptrace.Traces{td})
	spans[0].SetEndTimestamp(0)
	spans[2].SetStartTimestamp(0)
	h.consumeTraces(td)
	h.clock.tick(base.Add(ms(60))) // 3 times out
	td = tracesOf(spanSpec{name: "checkout", id: 3, duration: ms(70)})
	spans, _ = allSpans([]ptrace.Traces{td})
	spans[0].SetEndTimestamp(0)
	h.consumeTraces(td)
	h.consumeLogs(announce(form, startEvent{probe: "checkout", id: 5, at: base}))
	h.clock.tick(base.Add(time.Second))

	assert.Equal(t, map[string]int64{"probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"), "only 3")
	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
	assert.Equal(t, map[string]int64{"reason=invalid_timestamp": 3, "reason=end_before_start": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	assert.Equal(t, map[string]int64{"probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"), "span 3")
	assert.Equal(t, map[string]int64{"probe=checkout": 1}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_after_end"), "span 5")
}

// TestStartEventWithoutTimeRefusedAsSuch: a start event without a start
// time, in either form, is refused for its time (invalid_timestamp)
// whatever probe it names, as the deltaq connector refuses it (invalid)
// before it looks the probe up: an unknown probe does not hide it.
func TestStartEventWithoutTimeRefusedAsSuch(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	ld := logsOf(startEvent{probe: "nope", id: 1}, startEvent{probe: "checkout", id: 2})
	appendStartsEvent(ld, "shop", "nope", false, batchEntry{id: 3}, batchEntry{id: 4, at: base})
	appendStartsEvent(ld, "shop", "checkout", false, batchEntry{id: 5})
	h.consumeLogs(ld)
	assert.Equal(t, map[string]int64{"reason=invalid_timestamp": 4, "reason=unknown_probe": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
}
