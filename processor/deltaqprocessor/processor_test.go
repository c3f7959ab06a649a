// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// spanJSON renders a span as OTLP JSON, so that a nil and an empty
// attribute list compare equal.
func spanJSON(t *testing.T, s ptrace.Span) string {
	t.Helper()
	td := ptrace.NewTraces()
	s.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return string(b)
}

// instanceAttrs are the attributes of a counted span that carries no layout:
// the probe, and the outcome unless it is a success (the contract in
// internal/contract).
func instanceAttrs(probe, oc string) map[string]any {
	if oc == contract.Success {
		return map[string]any{contract.AttrProbe: probe}
	}
	return map[string]any{contract.AttrProbe: probe, contract.AttrOutcome: oc}
}

// outcomeAttrs are the attributes of a counted span that carries the layout:
// a timeout, or the first span of its probe in its batch.
func outcomeAttrs(probe, oc string, dMax time.Duration, bins int64) map[string]any {
	a := instanceAttrs(probe, oc)
	a[contract.AttrDMaxNs], a[contract.AttrBins] = int64(dMax), bins
	return a
}

func TestSpansMapToOutcomes(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 50)))

	in := tracesOf(
		spanSpec{name: "checkout", id: 1, duration: 20 * time.Millisecond},
		spanSpec{name: "checkout", id: 2, duration: dMax}, // ≤ dMax: success
		spanSpec{name: "checkout", id: 3, duration: dMax + time.Nanosecond},
		spanSpec{name: "checkout", id: 4, duration: 10 * time.Millisecond, status: ptrace.StatusCodeError},
		spanSpec{name: "checkout", id: 5, duration: time.Second, status: ptrace.StatusCodeError}, // timeout wins
		spanSpec{name: "browse", id: 6, duration: time.Second, attrs: map[string]any{"k": "v"}},
	)
	want := ptrace.NewTraces()
	in.CopyTo(want)
	h.consumeTraces(in)

	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 6)
	// The first span of the probe in the batch and the timeouts carry the
	// layout; the others only the probe and the outcome.
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, dMax, 50), attrsOf(spans[0]))
	assert.Equal(t, instanceAttrs("checkout", contract.Success), attrsOf(spans[1]))
	assert.Equal(t, outcomeAttrs("checkout", contract.Timeout, dMax, 50), attrsOf(spans[2]))
	assert.Equal(t, instanceAttrs("checkout", contract.Failure), attrsOf(spans[3]))
	assert.Equal(t, outcomeAttrs("checkout", contract.Timeout, dMax, 50), attrsOf(spans[4]))

	// Apart from the deltaq.* attributes, the batch is unchanged, and the
	// unmatched span is untouched.
	wantSpans, _ := allSpans([]ptrace.Traces{want})
	for i, s := range spans {
		got := ptrace.NewSpan()
		s.CopyTo(got)
		for _, k := range []string{contract.AttrProbe, contract.AttrOutcome, contract.AttrDMaxNs, contract.AttrBins} {
			got.Attributes().Remove(k)
		}
		assert.Equal(t, spanJSON(t, wantSpans[i]), spanJSON(t, got), "span %d", i)
	}

	assert.Equal(t, map[string]int64{
		"outcome=success,probe=checkout": 2,
		"outcome=timeout,probe=checkout": 2,
		"outcome=failure,probe=checkout": 1,
	}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
}

// TestLayoutOnFirstSpanOfEachProbePerBatch: in every batch, the first
// counted span of each probe carries the layout attributes, so that a reader
// configured with no layout for the probe learns it from that batch; the
// probe's other successes and failures do not.
func TestLayoutOnFirstSpanOfEachProbePerBatch(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 50), probeConfig("auth", time.Second, 10)))
	batch := func(id byte) ptrace.Traces {
		return tracesOf(
			spanSpec{name: "checkout", id: id, duration: time.Millisecond},
			spanSpec{name: "auth", id: id + 1, duration: time.Millisecond},
			spanSpec{name: "checkout", id: id + 2, duration: time.Millisecond},
			spanSpec{name: "auth", id: id + 3, duration: time.Millisecond, status: ptrace.StatusCodeError},
		)
	}
	h.consumeTraces(batch(1))
	h.consumeTraces(batch(11))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 8)
	for b := range 2 {
		s := spans[4*b:]
		assert.Equal(t, outcomeAttrs("checkout", contract.Success, 50*time.Millisecond, 50), attrsOf(s[0]), "batch %d", b)
		assert.Equal(t, outcomeAttrs("auth", contract.Success, time.Second, 10), attrsOf(s[1]), "batch %d", b)
		assert.Equal(t, instanceAttrs("checkout", contract.Success), attrsOf(s[2]), "batch %d", b)
		assert.Equal(t, instanceAttrs("auth", contract.Failure), attrsOf(s[3]), "batch %d", b)
	}
}

// TestSuccessCarriesNoOutcome: a success gets deltaq.probe and no
// deltaq.outcome (one pdata allocation less on the common case), a failure
// and a timeout get their deltaq.outcome, and a reader (the analysis the
// connector and the exporter run) counts the bare deltaq.probe as a
// success. A span that arrives with a bare deltaq.probe of its own, a
// forged success, loses it (see "Trust") and is counted by neither.
func TestSuccessCarriesNoOutcome(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 50)))
	h.consumeTraces(tracesOf(
		spanSpec{name: "checkout", id: 1, duration: 10 * time.Millisecond},
		spanSpec{name: "checkout", id: 2, duration: 20 * time.Millisecond},
		spanSpec{name: "checkout", id: 3, duration: 5 * time.Millisecond, status: ptrace.StatusCodeError},
		spanSpec{name: "checkout", id: 4, duration: time.Second},
		spanSpec{name: "browse", id: 5, duration: time.Millisecond, attrs: map[string]any{contract.AttrProbe: "checkout"}},
	))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 5)
	for i, want := range []string{"", "", contract.Failure, contract.Timeout} {
		a := spans[i].Attributes()
		probe, ok := a.Get(contract.AttrProbe)
		require.True(t, ok, "span %d", i)
		assert.Equal(t, "checkout", probe.Str(), "span %d", i)
		v, ok := a.Get(contract.AttrOutcome)
		if want == "" {
			assert.False(t, ok, "span %d: a success carries no deltaq.outcome", i)
			continue
		}
		require.True(t, ok, "span %d", i)
		assert.Equal(t, want, v.Str(), "span %d", i)
	}
	assert.Empty(t, attrsOf(spans[4]), "the forged bare deltaq.probe is removed")

	// The reader: the layout comes from this processor's registration.
	cfg := core.NewDefaultConfig()
	an, err := core.NewOfflineAnalysis(&cfg, h.state.Layouts, nil)
	require.NoError(t, err)
	for _, td := range h.tsink.AllTraces() {
		require.NoError(t, an.ConsumeTraces(context.Background(), td))
	}
	res, st := an.Result()
	require.Len(t, res.Probes, 1)
	assert.Equal(t, "checkout", res.Probes[0].Name)
	assert.Equal(t, analysis.Counts{Success: 2, Failure: 1, Timeout: 1}, res.Probes[0].Counts)
	assert.Equal(t, int64(4), st.Counted)
	assert.Zero(t, st.Dropped.Total())
	// The successes in their bins, 1 ms wide: bin i holds (i·w, (i+1)·w]
	// (the deltaq package's binIndex), so 10 ms is in bin 9 and 20 ms in bin 19.
	assert.Equal(t, 50, res.Probes[0].Bins)
	assert.Equal(t, uint64(1), res.Probes[0].BinCounts[9])
	assert.Equal(t, uint64(1), res.Probes[0].BinCounts[19])
	assert.InDelta(t, 0.030, res.Probes[0].SuccessSum, 1e-9, "10 ms + 20 ms")
}

// TestLayoutMarks: each probe index is first once per batch, beyond the
// 256 marks on the stack too, and marking one leaves the others alone.
func TestLayoutMarks(t *testing.T) {
	var m layoutMarks
	probes := []int{0, 63, 64, 255, 256, 1000, 319}
	for _, pi := range probes {
		assert.True(t, m.first(pi), "probe %d, first time", pi)
	}
	for _, pi := range probes {
		assert.False(t, m.first(pi), "probe %d, second time", pi)
	}
	for _, pi := range []int{1, 62, 65, 254, 257, 999, 1001} {
		assert.True(t, m.first(pi), "probe %d, never marked", pi)
	}
}

func TestMatchConditions(t *testing.T) {
	cfg := testConfig(
		ProbeConfig{
			Name: "api", DMax: time.Second, Bins: 10,
			Match: MatchConfig{
				SpanName:    "GET /api",
				ServiceName: "shop",
				SpanKind:    "Server",
				Attributes:  map[string]any{"http.request.method": "GET", "tier": 2, "cached": false, "ratio": 0.5},
			},
		},
		ProbeConfig{Name: "items", DMax: time.Second, Bins: 10, Match: MatchConfig{SpanNameRegexp: `^GET /items/\d+$`}},
		// Later in the configuration than the regexp that also matches the
		// name: the earlier probe wins.
		ProbeConfig{Name: "item-7", DMax: time.Second, Bins: 10, Match: MatchConfig{SpanName: "GET /items/7"}},
	)
	h := newHarness(t, cfg)
	ok := map[string]any{"http.request.method": "GET", "tier": int64(2), "cached": false, "ratio": 0.5}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		span spanSpec
		want string // probe, or "" for no match
	}{
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindServer, attrs: ok}, "api"},
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindServer, attrs: with("tier", 2.0)}, "api"}, // 2.0 == 2
		{spanSpec{name: "GET /api", service: "other", kind: ptrace.SpanKindServer, attrs: ok}, ""},
		{spanSpec{name: "GET /api", kind: ptrace.SpanKindServer, attrs: ok}, ""},
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindClient, attrs: ok}, ""},
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindServer, attrs: with("tier", "2")}, ""},
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindServer, attrs: with("cached", nil)}, ""},
		{spanSpec{name: "GET /api", service: "shop", kind: ptrace.SpanKindServer, attrs: with("ratio", 0.25)}, ""},
		{spanSpec{name: "GET /items/12", service: "shop"}, "items"},
		{spanSpec{name: "GET /items/7"}, "items"},
		{spanSpec{name: "GET /items/x"}, ""},
		{spanSpec{name: "GET /api/"}, ""},
	}
	for i, tt := range tests {
		span := h.passOne(i, tt.span)
		v, found := span.Attributes().Get(contract.AttrProbe)
		if tt.want == "" {
			if found {
				t.Errorf("case %d (%s): matched %s, want no match", i, tt.span.name, v.AsString())
			}
			continue
		}
		if assert.True(t, found, "case %d (%s): no match", i, tt.span.name) {
			assert.Equal(t, tt.want, v.Str(), "case %d", i)
		}
	}
}

func TestFailureRules(t *testing.T) {
	cfg := testConfig(
		ProbeConfig{
			Name: "http", DMax: time.Second, Bins: 10,
			Failure: &FailureConfig{Conditions: []ConditionConfig{
				{Attribute: "http.response.status_code", Op: ">=", Value: 500},
				{Attribute: "deltaq.failed", Value: true},
			}},
		},
		ProbeConfig{
			Name: "quiet", DMax: time.Second, Bins: 10,
			Failure: &FailureConfig{StatusError: ptr(false)},
		},
		ProbeConfig{Name: "inherit", DMax: time.Second, Bins: 10},
	)
	cfg.Failure = FailureConfig{Conditions: []ConditionConfig{{Attribute: "shop.refused", Op: "!=", Value: "no"}}}
	h := newHarness(t, cfg)
	tests := []struct {
		span spanSpec
		want string
	}{
		{spanSpec{name: "http", attrs: map[string]any{"http.response.status_code": 503}}, contract.Failure},
		{spanSpec{name: "http", attrs: map[string]any{"http.response.status_code": 500.0}}, contract.Failure},
		{spanSpec{name: "http", attrs: map[string]any{"http.response.status_code": 404}}, contract.Success},
		{spanSpec{name: "http", attrs: map[string]any{"http.response.status_code": "503"}}, contract.Success}, // not a number
		{spanSpec{name: "http", attrs: map[string]any{"deltaq.failed": true}}, contract.Failure},
		{spanSpec{name: "http", attrs: map[string]any{"deltaq.failed": "true"}}, contract.Success},
		{spanSpec{name: "http", status: ptrace.StatusCodeError}, contract.Failure},               // status_error defaults to true
		{spanSpec{name: "http", attrs: map[string]any{"shop.refused": "yes"}}, contract.Success}, // own rule replaces the default
		{spanSpec{name: "quiet", status: ptrace.StatusCodeError}, contract.Success},
		{spanSpec{name: "inherit", attrs: map[string]any{"shop.refused": "yes"}}, contract.Failure},
		{spanSpec{name: "inherit", attrs: map[string]any{"shop.refused": "no"}}, contract.Success},
		{spanSpec{name: "inherit"}, contract.Success}, // != does not hold for an absent attribute
		{spanSpec{name: "inherit", status: ptrace.StatusCodeError}, contract.Failure},
	}
	for i, tt := range tests {
		span := h.passOne(i, tt.span)
		// A success carries no deltaq.outcome.
		got := contract.Success
		if v, ok := span.Attributes().Get(contract.AttrOutcome); ok {
			got = v.Str()
			assert.NotEqual(t, contract.Success, got, "case %d: an explicit success", i)
		}
		assert.Equal(t, tt.want, got, "case %d: %s %v", i, tt.span.name, tt.span.attrs)
	}
}

// TestTimeoutFiresWithinOneTick drives the timer with ticks every 10 ms and
// checks that a start event whose span never comes is reported at the first
// tick at or after start + dMax, with the fields the contract requires.
func TestTimeoutFiresWithinOneTick(t *testing.T) {
	const dMax, res = 50 * time.Millisecond, 10 * time.Millisecond
	cfg := testConfig(probeConfig("checkout", dMax, 25))
	cfg.TimerResolution = res
	h := newHarness(t, cfg)

	start := base.Add(3 * time.Millisecond) // deadline base+53ms
	ld := logsOf(startEvent{probe: "checkout", service: "shop", id: 1, at: start})
	// A log record that is not a start event passes through untouched.
	other := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty()
	other.Body().SetStr("hello")
	other.SetEventName("app.event")
	h.consumeLogs(ld)
	require.Equal(t, 1, h.lsink.LogRecordCount())
	got := h.lsink.AllLogs()[0].ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
	assert.Equal(t, "hello", got.Body().Str())
	assert.Equal(t, "app.event", got.EventName())

	for at := base.Add(res); at.Before(start.Add(dMax)); at = at.Add(res) {
		h.clock.tick(at)
		require.Zero(t, h.tsink.SpanCount(), "fired early at %v", at.Sub(base))
	}
	h.clock.tick(base.Add(60 * time.Millisecond)) // first tick ≥ deadline
	spans, resources := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, traceID(1), s.TraceID())
	assert.Equal(t, spanID(1), s.SpanID())
	assert.Equal(t, "checkout", s.Name())
	assert.Equal(t, pcommon.NewTimestampFromTime(start), s.StartTimestamp())
	assert.Equal(t, pcommon.NewTimestampFromTime(start.Add(dMax)), s.EndTimestamp())
	assert.Equal(t, ptrace.StatusCodeError, s.Status().Code())
	assert.Equal(t, "deltaq: no end within dMax", s.Status().Message())
	// A start event gives neither the span's kind nor its parent.
	assert.Equal(t, ptrace.SpanKindUnspecified, s.Kind())
	assert.True(t, s.ParentSpanID().IsEmpty(), "no parent span id")
	scope := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Scope()
	assert.Equal(t, "github.com/deltaq-otel/deltaq/processor/deltaqprocessor", scope.Name())
	wantAttrs := outcomeAttrs("checkout", contract.Timeout, dMax, 25)
	wantAttrs[contract.AttrSynthetic] = true
	assert.Equal(t, wantAttrs, attrsOf(s))
	assert.Equal(t, map[string]any{"service.name": "shop"}, resources[0].Attributes().AsRaw())

	// Reported once only.
	h.clock.tick(base.Add(70 * time.Millisecond))
	assert.Equal(t, 1, h.tsink.SpanCount())

	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
	assert.Equal(t, map[string]int64{"probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts"))
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
}

func TestSyntheticSpanTakesSpanNameFromStartEvent(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(
		startEvent{probe: "checkout", id: 1, at: base, spanName: "POST /checkout"},
		startEvent{probe: "checkout", id: 2, at: base},
	))
	h.clock.tick(base.Add(time.Second))
	spans, resources := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 2)
	names := map[pcommon.SpanID]string{spans[0].SpanID(): spans[0].Name(), spans[1].SpanID(): spans[1].Name()}
	assert.Equal(t, map[pcommon.SpanID]string{spanID(1): "POST /checkout", spanID(2): "checkout"}, names)
	// Without service.name on the start event, the resource has no attributes.
	assert.Equal(t, 0, resources[0].Attributes().Len())
}

// TestSyntheticSpanCarriesTheStartEventsThreshold: a start event with the
// span's tracestate (deltaq.tracestate) gives its synthetic timeout span
// the span's sampling threshold, so that the timeout counts with the
// span's adjusted count; without one, with no threshold in it, or with a
// threshold its explicit randomness value contradicts (rv < th: the
// threshold would have dropped the span), the synthetic span has no
// tracestate and counts one.
func TestSyntheticSpanCarriesTheStartEventsThreshold(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	ld := logsOf(startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base},
		startEvent{probe: "checkout", id: 3, at: base})
	recs := func(i int) pcommon.Map {
		return ld.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0).Attributes()
	}
	recs(0).PutStr(contract.AttrTraceState, "vendor=x,ot=rv:c0000000000001;th:c")
	recs(1).PutStr(contract.AttrTraceState, "vendor=x")
	recs(2).PutStr(contract.AttrTraceState, "ot=th:ffffffffffffff;rv:00000000000001")
	h.consumeLogs(ld)
	h.clock.tick(base.Add(time.Second))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 3)
	got := map[pcommon.SpanID]string{}
	for _, sp := range spans {
		got[sp.SpanID()] = sp.TraceState().AsRaw()
	}
	assert.Equal(t, map[pcommon.SpanID]string{spanID(1): "ot=th:c", spanID(2): "", spanID(3): ""}, got)
}

func TestSpanInTimeEndsInstance(t *testing.T) {
	const dMax = 50 * time.Millisecond
	h := newHarness(t, testConfig(probeConfig("checkout", dMax, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	h.clock.tick(base.Add(30 * time.Millisecond))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 30 * time.Millisecond}))
	h.clock.tick(base.Add(time.Second))

	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1, "no synthetic span for an instance that ended")
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, dMax, 25), attrsOf(spans[0]))
	assert.Equal(t, map[string]int64{"outcome=success,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
}

// TestSpanAfterDeadlineBeforeTick: the span arrives after start + dMax but
// before the timer reports the instance; it is a timeout by its own duration,
// counted once, and no synthetic span follows.
func TestSpanAfterDeadlineBeforeTick(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 55 * time.Millisecond}))
	h.clock.tick(base.Add(time.Second))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1)
	assert.Equal(t, contract.Timeout, attrsOf(spans[0])[contract.AttrOutcome])
	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
}

func TestLateSpanIsMarkedAndNotCounted(t *testing.T) {
	const dMax = 50 * time.Millisecond
	cfg := testConfig(probeConfig("checkout", dMax, 25), probeConfig("other", time.Second, 10))
	cfg.LateWindow = time.Minute
	h := newHarness(t, cfg)
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	h.clock.tick(base.Add(dMax))
	require.Equal(t, 1, h.tsink.SpanCount())
	h.tsink.Reset()

	// A late span of another probe's match is mapped to that probe
	// (TestStartEventOfAnotherProbe); this one is checkout's.
	late := tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 2 * time.Second, attrs: map[string]any{"app": "x"}})
	h.consumeTraces(late)
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 1)
	want := instanceAttrs("checkout", contract.Timeout) // a late span carries no layout
	want[contract.AttrLate] = true
	want["app"] = "x"
	assert.Equal(t, want, attrsOf(spans[0]))
	assert.Equal(t, base.Add(2*time.Second), spans[0].EndTimestamp().AsTime(), "the late span keeps its trace data")

	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"), "counted once, by the timer")
	assert.Equal(t, map[string]int64{"probe=checkout": 1},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"))
}

// TestLateWindowForgets: a timed-out instance is forgotten at the end of
// its late window. With a late window at least ended_window, a span
// arriving after it is an ordinary instance: nothing says its timeout was
// reported (the late window bounds that memory). With a shorter one, the
// instance is remembered as timed out among the spans remembered as ended,
// for ended_window, and its span is late still (it was an ordinary
// instance: the instance's second outcome).
func TestLateWindowForgets(t *testing.T) {
	for _, ended := range []time.Duration{time.Second, 30 * time.Second} {
		cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
		cfg.LateWindow, cfg.EndedWindow = time.Second, ended
		h := newHarness(t, cfg)
		h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
		h.clock.tick(base.Add(100 * time.Millisecond))
		h.clock.tick(base.Add(50*time.Millisecond + time.Second)) // deadline + late window
		assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": 0},
			telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"), "ended_window %v", ended)
		h.tsink.Reset()
		h.consumeTraces(tracesOf(spanSpec{name: "checkout", id: 1, start: base, duration: 2 * time.Second}))
		spans, _ := allSpans(h.tsink.AllTraces())
		require.Len(t, spans, 1)
		_, late := spans[0].Attributes().Get(contract.AttrLate)
		assert.Equal(t, ended > cfg.LateWindow, late, "ended_window %v: late", ended)
		wantLate := map[string]int64{}
		if ended > cfg.LateWindow {
			wantLate["probe=checkout"] = 1
		}
		assert.Equal(t, wantLate, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans"), "ended_window %v", ended)
	}
}

func TestMalformedInputIsCountedAndPassesThrough(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))

	// Spans (one without its ids is an instance: TestSpanWithoutIDsIsCounted).
	in := tracesOf(
		spanSpec{name: "checkout", id: 2, duration: -time.Millisecond}, // end before start
		spanSpec{name: "checkout", id: 4, duration: time.Millisecond},
	)
	spans, _ := allSpans([]ptrace.Traces{in})
	spans[1].SetStartTimestamp(0)
	want := ptrace.NewTraces()
	in.CopyTo(want)
	h.consumeTraces(in)
	require.Len(t, h.tsink.AllTraces(), 1)
	assert.Equal(t, want, h.tsink.AllTraces()[0], "malformed spans pass through unchanged")

	// Start events.
	ld := logsOf(
		startEvent{probe: "checkout", id: 5, at: base},
		startEvent{probe: "checkout", id: 5, at: base.Add(time.Millisecond)}, // duplicate
		startEvent{probe: "nope", id: 6, at: base},
		startEvent{probe: "checkout", id: 7, at: base},
		startEvent{probe: "checkout", id: 8},
	)
	ld.ResourceLogs().At(3).ScopeLogs().At(0).LogRecords().At(0).SetTraceID(pcommon.NewTraceIDEmpty())
	ld.ResourceLogs().At(4).ScopeLogs().At(0).LogRecords().At(0).SetTimestamp(0)
	noProbe := appendStartEvent(ld, startEvent{probe: "x", id: 9, at: base})
	noProbe.Attributes().Remove(contract.AttrProbe)
	h.consumeLogs(ld)
	assert.Zero(t, h.lsink.LogRecordCount(), "start events, valid or not, are consumed")

	assert.Equal(t, map[string]int64{
		"reason=missing_ids":       1,
		"reason=end_before_start":  1,
		"reason=invalid_timestamp": 2,
		"reason=duplicate_start":   1,
		"reason=unknown_probe":     2,
	}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed"))
	assert.Equal(t, map[string]int64{"state=started": 1, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	assert.Empty(t, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
}

func TestBatchOfOnlyStartEventsIsNotPassedOn(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base}))
	assert.Empty(t, h.lsink.AllLogs())

	// A batch of ordinary records passes through as it came.
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("a")
	want := plog.NewLogs()
	ld.CopyTo(want)
	h.consumeLogs(ld)
	require.Len(t, h.lsink.AllLogs(), 1)
	assert.Equal(t, want, h.lsink.AllLogs()[0])
}

func TestSyntheticSpansRefusedAreCounted(t *testing.T) {
	h := newHarnessWith(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)),
		consumertest.NewErr(errors.New("backend down")))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base}))
	h.clock.tick(base.Add(time.Second))
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_synthetic_dropped"))
	assert.Equal(t, map[string]int64{"outcome=timeout,probe=checkout": 2},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances"))
}

// TestLogsOnly: a processor in no traces pipeline still tracks start events;
// its timeouts are counted as dropped synthetic spans.
func TestLogsOnly(t *testing.T) {
	clk := newFakeClock()
	f := newFactory(clk, collectorstate.New())
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	lp, err := f.processorFactory().CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, lp.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, lp.ConsumeLogs(context.Background(), logsOf(startEvent{probe: "checkout", id: 1, at: base})))
	clk.tick(base.Add(time.Second))
	assert.Equal(t, map[string]int64{"": 1}, telemetrytest.Points(t, tel, "otelcol_processor_deltaq_synthetic_dropped"))
	require.NoError(t, lp.Shutdown(context.Background()))
}

// TestTwoLayoutsOfOneProbeWarned: two processors of one collector that
// configure one probe in two layouts: readers take the first, and refuse
// the second's instances (layout_mismatch), which passed without a word
// (a helper saw a probe's timeouts vanish). The second warns at its
// creation; the same layout in both is no conflict.
func TestTwoLayoutsOfOneProbeWarned(t *testing.T) {
	for _, c := range []struct {
		bins   int
		warned bool
	}{{50, true}, {25, false}} {
		f := newFactory(newFakeClock(), collectorstate.New())
		var warnings []int
		for i, bins := range []int{25, c.bins} {
			core, logs := observer.New(zap.WarnLevel)
			set := processortest.NewNopSettings(metadata.Type)
			set.ID = component.NewIDWithName(metadata.Type, fmt.Sprint(i))
			set.Logger = zap.New(core)
			p, err := f.processorFactory().CreateTraces(context.Background(), set, testConfig(probeConfig("checkout", 50*time.Millisecond, bins)), consumertest.NewNop())
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Shutdown(context.Background())) }()
			warnings = append(warnings, logs.FilterMessageSnippet("another deltaq processor of this collector configures this probe in another layout").Len())
		}
		want := []int{0, 0}
		if c.warned {
			want[1] = 1
		}
		assert.Equal(t, want, warnings, "bins 25 then %d", c.bins)
	}
}

// TestSharedInstance: the traces and logs processors of one component ID
// share one instance; another ID has its own, and a second traces pipeline
// for one ID is refused.
func TestSharedInstance(t *testing.T) {
	f := newFactory(newFakeClock(), collectorstate.New())
	pf := f.processorFactory()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	setA := processortest.NewNopSettings(metadata.Type)
	setA.ID = component.NewIDWithName(metadata.Type, "a")
	setB := processortest.NewNopSettings(metadata.Type)
	setB.ID = component.NewIDWithName(metadata.Type, "b")

	ta, err := pf.CreateTraces(context.Background(), setA, cfg, consumertest.NewNop())
	require.NoError(t, err)
	la, err := pf.CreateLogs(context.Background(), setA, cfg, consumertest.NewNop())
	require.NoError(t, err)
	tb, err := pf.CreateTraces(context.Background(), setB, cfg, consumertest.NewNop())
	require.NoError(t, err)
	pa, pb := f.lookup(setA.ID), f.lookup(setB.ID)
	require.NotNil(t, pa)
	require.NotNil(t, pb)
	assert.NotSame(t, pa, pb)

	_, err = pf.CreateTraces(context.Background(), setA, cfg, consumertest.NewNop())
	assert.EqualError(t, err, `processor "deltaq/a" is in more than one traces pipeline; synthetic timeout spans need exactly one, so give each traces pipeline its own processor ID (for example deltaq/a)`)
	// The collector refuses such a configuration as a whole: the instance
	// is forgotten, so that a corrected configuration starts afresh.
	assert.Nil(t, f.lookup(setA.ID), "a refused configuration leaves no instance behind")

	// A start event on the logs side is ended by the span on the traces side.
	require.NoError(t, la.ConsumeLogs(context.Background(), logsOf(startEvent{probe: "checkout", id: 1, at: base})))
	assert.Equal(t, 1, pa.tracker.Len())
	require.NoError(t, ta.ConsumeTraces(context.Background(), tracesOf(spanSpec{name: "checkout", id: 1, duration: time.Millisecond})))
	assert.Equal(t, 0, pa.tracker.Len())

	// The first shutdown stops the instance and frees the ID.
	require.NoError(t, ta.Shutdown(context.Background()))
	assert.Nil(t, f.lookup(setA.ID))
	require.NoError(t, la.Shutdown(context.Background()))
	require.NoError(t, tb.Shutdown(context.Background()))
	assert.Nil(t, f.lookup(setB.ID))
}

// TestTickIsOneTick: the test clock's tick has the timer handle one tick
// and returns once it has, so that the timer handles nothing beside what
// the test does next: a start event due by the tick's time that the test
// adds after it times out at the next tick, not at once. The tick was
// sent twice, and the timer handled the second beside the test.
func TestTickIsOneTick(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	for i := range 3 {
		at := base.Add(time.Duration(i+1) * time.Second)
		h.clock.tick(at)
		// Due 50 ms before the tick's time: a second pass of the tick
		// beside the test took it at once; the timer takes it at its next.
		h.consumeLogs(logsOf(startEvent{probe: "checkout", id: byte(i + 1), at: at.Add(-100 * time.Millisecond)}))
		assert.Equal(t, int64(i+1), h.clock.passes.Load(), "passes after tick %d", i)
		assert.Equal(t, i, h.tsink.SpanCount(), "synthetic spans after tick %d", i)
	}
	require.NoError(t, h.traces.Shutdown(context.Background()))
	assert.Equal(t, int64(3), h.clock.passes.Load(), "one pass a tick")
}

// TestShutdownReportsTimeoutsDue: an instance due when the processor shuts
// down, before its timer's next tick, is reported as its synthetic timeout
// span then, as the tick would have reported it and as the connector counts
// its own at its stop (the connector's TestShutdownCountsTimeoutsDue); one
// not due yet is not. They were dropped with the instances in flight.
func TestShutdownReportsTimeoutsDue(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}, startEvent{probe: "checkout", id: 2, at: base.Add(80 * time.Millisecond)}))
	h.clock.set(base.Add(100 * time.Millisecond)) // 1 due at 50 ms, 2 at 130 ms
	require.NoError(t, h.traces.Shutdown(context.Background()))
	require.Equal(t, 1, h.tsink.SpanCount())
	span := h.tsink.AllTraces()[0].ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	assert.Equal(t, spanID(1), span.SpanID())
	assert.Equal(t, base.Add(50*time.Millisecond), span.EndTimestamp().AsTime().UTC(), "at its deadline")
}

func TestShutdownStopsTimer(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	require.NoError(t, h.logs.Shutdown(context.Background()))
	select {
	case <-h.clock.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("ticker not stopped")
	}
	select {
	case h.clock.ch <- base.Add(time.Second):
		t.Fatal("timer goroutine still running after shutdown")
	default:
	}
	assert.Zero(t, h.tsink.SpanCount())
}

// TestSpanWithoutIDsIsCounted: a span without its trace or span id is an
// instance all the same, counted by its own duration and status, as the
// deltaq connector counts it: it cannot end an instance a start event
// announced (no start event without ids is tracked), so nothing else can
// count it.
func TestSpanWithoutIDsIsCounted(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	h.consumeLogs(logsOf(startEvent{probe: "checkout", id: 9, at: base})) // start events in use
	in := tracesOf(
		spanSpec{name: "checkout", id: 1, duration: time.Millisecond},
		spanSpec{name: "checkout", id: 2, duration: time.Millisecond, status: ptrace.StatusCodeError},
		spanSpec{name: "checkout", id: 3, duration: time.Second},
	)
	spans, _ := allSpans([]ptrace.Traces{in})
	spans[0].SetTraceID(pcommon.NewTraceIDEmpty())
	spans[1].SetSpanID(pcommon.NewSpanIDEmpty())
	spans[2].SetTraceID(pcommon.NewTraceIDEmpty())
	spans[2].SetSpanID(pcommon.NewSpanIDEmpty())
	h.consumeTraces(in)

	out, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, out, 3)
	for i, want := range []string{"", contract.Failure, contract.Timeout} {
		probe, _ := out[i].Attributes().Get(contract.AttrProbe)
		assert.Equal(t, "checkout", probe.Str(), "span %d", i)
		oc, _ := out[i].Attributes().Get(contract.AttrOutcome)
		assert.Equal(t, want, oc.Str(), "span %d", i)
	}
	assert.Equal(t, map[string]int64{"outcome=success,probe=checkout": 1, "outcome=failure,probe=checkout": 1, "outcome=timeout,probe=checkout": 1},
		nonZero(telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances")))
	assert.Empty(t, nonZero(telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed")))
}

// nonZero returns points without its zero values.
func nonZero(points map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range points {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}
