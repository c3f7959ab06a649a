// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// startRig is a connector-only collector's deltaq component: traces →
// metrics and logs → metrics connectors of one ID, whose windows close on
// clk.Tick and whose timeouts fire on expire.
type startRig struct {
	clk    *coretest.Clock
	starts chan time.Time
	traces connector.Traces
	logs   connector.Logs
	sink   *consumertest.MetricsSink
	tel    *componenttest.Telemetry
	// warnings are the connector's logs at warn level and above (or the
	// level of newStartRigLogging).
	warnings *observer.ObservedLogs
}

func newStartRig(t *testing.T, cfg *Config, st *collectorstate.State) *startRig {
	t.Helper()
	return newRig(t, cfg, st, zapcore.WarnLevel, true)
}

// newStartRigLogging is newStartRig whose warnings keep the connector's
// logs at level and above.
func newStartRigLogging(t *testing.T, cfg *Config, st *collectorstate.State, level zapcore.Level) *startRig {
	t.Helper()
	return newRig(t, cfg, st, level, true)
}

// newTracesRig is newStartRig with the traces side alone: a connector in
// no logs pipeline (logs is nil).
func newTracesRig(t *testing.T, cfg *Config, st *collectorstate.State) *startRig {
	t.Helper()
	return newRig(t, cfg, st, zapcore.WarnLevel, false)
}

// newRig makes the rig's connector, its logs side too when withLogs is
// set, and starts it.
func newRig(t *testing.T, cfg *Config, st *collectorstate.State, level zapcore.Level, withLogs bool) *startRig {
	t.Helper()
	return newRigWith(t, cfg, st, level, withLogs, nil)
}

// newRigWith is newRig whose observer's settings adjust changes last
// (nil: none).
func newRigWith(t *testing.T, cfg *Config, st *collectorstate.State, level zapcore.Level, withLogs bool,
	adjust func(*core.Settings),
) *startRig {
	t.Helper()
	r := &startRig{clk: coretest.NewClock(at(time.Second)), sink: new(consumertest.MetricsSink), tel: componenttest.NewTelemetry()}
	r.starts = r.clk.Starts
	t.Cleanup(func() { require.NoError(t, r.tel.Shutdown(context.Background())) })
	f := newFactory(st, func(s *core.Settings) {
		s.Now, s.Ticks, s.StartTicks, s.Ticked = r.clk.Now, r.clk.C, r.starts, r.clk.Ticked
		if adjust != nil {
			adjust(s)
		}
	})
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	var logs zapcore.Core
	logs, r.warnings = observer.New(level)
	set.Logger = zap.New(logs)
	cf := f.connectorFactory()
	var err error
	r.traces, err = cf.CreateTracesToMetrics(context.Background(), set, cfg, r.sink)
	require.NoError(t, err)
	// Both sides are made before either starts, as the collector makes
	// them: the logs side says that start events will come.
	if withLogs {
		r.logs, err = cf.CreateLogsToMetrics(context.Background(), set, cfg, r.sink)
		require.NoError(t, err)
	}
	require.NoError(t, r.traces.Start(context.Background(), componenttest.NewNopHost()))
	if withLogs {
		require.NoError(t, r.logs.Start(context.Background(), componenttest.NewNopHost()))
	}
	return r
}

// expire moves the clock to now and has the timeout timer count the
// timeouts due, and returns once it has.
func (r *startRig) expire(now time.Time) { r.clk.Expire(now) }

func (r *startRig) shutdown(t *testing.T) {
	t.Helper()
	require.NoError(t, r.traces.Shutdown(context.Background()))
	if r.logs != nil {
		require.NoError(t, r.logs.Shutdown(context.Background()))
	}
}

// start is one start event: the span id (and trace id) n, the probe, the
// start time, and optionally a tracestate.
type start struct {
	n          byte
	probe      string
	at         time.Duration
	tracestate string
}

// startLogs returns the start events, with one log record that is none.
func startLogs(events ...start) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lrs.AppendEmpty().Body().SetStr("an application's own log record")
	for _, e := range events {
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at(e.at)))
		lr.SetTraceID(pcommon.TraceID{e.n})
		lr.SetSpanID(pcommon.SpanID{e.n})
		if e.probe != "" {
			lr.Attributes().PutStr(contract.AttrProbe, e.probe)
		}
		if e.tracestate != "" {
			lr.Attributes().PutStr(contract.AttrTraceState, e.tracestate)
		}
	}
	return ld
}

// counterByAttr returns the sums of a counter of the connector's
// telemetry by the value of attribute key.
func counterByAttr(t *testing.T, tel *componenttest.Telemetry, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tel.GetMetric("otelcol_connector_deltaq_" + name)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		out[v.AsString()] += dp.Value
	}
	return out
}

// TestStartEventsTimeOutInRealTime: with no processor, the connector takes
// the start events on a logs input and counts the instance whose span has
// not arrived by start + dMax as a timeout, when the timer passes the
// deadline and before any span says so (the thesis, section 3.2: an input
// with no output after dMax is a failure). A span that ends a tracked
// instance within dMax counts by its own duration; one that arrives after
// its instance's timeout was counted is late and not counted again; a
// start event that arrives after its span is not tracked; start events of
// unknown probes and without ids are refused; other log records are
// ignored.
func TestStartEventsTimeOutInRealTime(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Span 4 ends before its start event arrives.
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(40), traceID: 4})))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)},
		start{n: 3, probe: "job", at: ms(100)}, start{n: 4, probe: "job", at: ms(110)},
		start{n: 5, probe: "nojob", at: ms(100)}, start{n: 0, probe: "job", at: ms(100)},
		start{n: 1, probe: "job", at: ms(100)}, // a duplicate
	)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(250), span{name: "job", dur: ms(150), traceID: 1})))
	r.expire(at(ms(299)))
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"), "no deadline has passed")
	r.expire(at(ms(301)))
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "spans 2 and 3, at start + 200ms")
	// Span 2 arrives late; span 3 never does.
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(400), span{name: "job", dur: ms(300), traceID: 2})))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Failure: 0, contract.Timeout: 2},
		probeOutcomes(r.sink.AllMetrics())["job"], "spans 1 and 4 succeed; 2 and 3 time out once each")
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "late_spans", "probe"))
	assert.Equal(t, map[string]int64{"tracked": 3, "after_end": 1, "unknown_probe": 1, "invalid": 1, "duplicate": 1},
		counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// TestStartEventsAfterTheClockWentBack: a clock that steps back more than
// an interval (README, Windows) closes no window until it is back where it
// was, and the instances that end meanwhile are dropped as too late: the
// timeouts of the start events too, as their spans are. They were counted
// in the oldest open window, which then held every timeout of the step and
// none of the successes. Once the clock is back, they count again.
func TestStartEventsAfterTheClockWentBack(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	r.clk.Tick(at(10 * time.Second)) // closes the windows up to [8 s, 9 s)
	r.clk.Set(at(5 * time.Second))   // the clock steps back 5 s
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(5000)}, start{n: 2, probe: "job", at: ms(5000)}, start{n: 3, probe: "job", at: ms(5000)})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(5050), span{name: "job", dur: ms(40), traceID: 1})))
	r.expire(at(ms(5400)))
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "spans 2 and 3 never came")

	// Back where it was: a start at 11 s times out in its own window.
	r.expire(at(11 * time.Second))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 4, probe: "job", at: 11 * time.Second})))
	r.expire(at(ms(11400)))
	r.clk.Tick(at(13 * time.Second)) // closes [9 s, 10 s), [10 s, 11 s) and [11 s, 12 s)
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(r.sink.AllMetrics())["job"], "span 4's timeout alone")
	assert.Equal(t, map[string]int64{"too_late": 3}, counterByAttr(t, r.tel, "instances_dropped", "reason"),
		"span 1 and the timeouts of spans 2 and 3")
	r.shutdown(t)
}

// TestStaleStartEvent: a start event that arrives more than ended_window
// (30 s) after its instance was due is refused as stale: its span, had it
// come in time, is forgotten, and a timeout counted now would be the
// second outcome of one instance (it was: one success and one timeout).
func TestStaleStartEvent(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(40), traceID: 1})))
	// A start event first, so that spans are remembered, then the one held
	// up on its way for 32 s.
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 2, probe: "job", at: ms(100)})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(40), traceID: 2})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(160), span{name: "job", dur: ms(40), traceID: 3})))
	r.expire(at(32 * time.Second))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 3, probe: "job", at: ms(120)})))
	r.expire(at(32*time.Second + ms(10)))
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"), "no timeout")
	assert.Equal(t, map[string]int64{"tracked": 1, "stale": 1}, counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
	assert.Equal(t, map[string]int64{contract.Success: 3, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"], "each span once, by its own duration")
}

// TestFutureStartEvent: a start event that starts more than ended_window
// (30 s) after the connector's clock (1 s) is refused as future, single or
// an entry of a batch, up to a century ahead: tracked, it would hold a slot
// of max_in_flight until its due time (it was tracked and never timed out
// in the test's hour). One 29 s ahead is tracked and times out.
func TestFutureStartEvent(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	century := 100 * 365 * 24 * time.Hour
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), batchLogs(
		[]start{{n: 1, probe: "job", at: 32 * time.Second}, {n: 3, probe: "job", at: 30 * time.Second}},
		batch{probe: "job", starts: []start{{n: 2, at: century}}})))
	assert.Equal(t, map[string]int64{"tracked": 1, "future": 2}, counterByAttr(t, r.tel, "start_events", "result"))
	r.expire(at(time.Hour))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "instance 3 only")
	r.shutdown(t)
}

// TestEvictedTimeoutsSpansAreLate: a timed-out instance that
// max_in_flight (2 here) evicts to make room is remembered as timed out,
// so that its span, coming after that, is late and not counted again: the
// instance has one outcome, its timeout. Its span was counted a second
// time (a delay past dMax: two timeouts for one instance).
func TestEvictedTimeoutsSpansAreLate(t *testing.T) {
	cfg := loadConfig(t, "matched")
	cfg.StartEvents.MaxInFlight = 2
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)})))
	r.expire(at(ms(400))) // job's dMax is 200 ms: both time out
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 3, probe: "job", at: ms(500)}, start{n: 4, probe: "job", at: ms(500)})))
	assert.Equal(t, map[string]int64{"timed_out": 2}, counterByAttr(t, r.tel, "in_flight_evictions", "state"))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(600),
		span{name: "job", dur: ms(500), traceID: 1}, span{name: "job", dur: ms(500), traceID: 2},
		span{name: "job", dur: ms(100), traceID: 3}, span{name: "job", dur: ms(100), traceID: 4})))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "late_spans", "probe"))
	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Failure: 0, contract.Timeout: 2},
		probeOutcomes(r.sink.AllMetrics())["job"], "1 and 2 time out once each; 3 and 4 succeed")
	r.shutdown(t)
}

// TestStartEventsProbeNotAString: a start event whose deltaq.probe is not
// a string names no probe: it is refused as unknown_probe, and tracked for
// no probe (it was tracked for the first probe in name order, job, and
// counted as its timeout).
func TestStartEventsProbeNotAString(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ld := startLogs(start{n: 1, at: 100 * time.Millisecond}, start{n: 2, at: 100 * time.Millisecond},
		start{n: 3, at: 100 * time.Millisecond}, start{n: 4, at: 100 * time.Millisecond})
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(1).Attributes().PutInt(contract.AttrProbe, 0)
	lrs.At(2).Attributes().PutBool(contract.AttrProbe, true)
	lrs.At(3).Attributes().PutEmptyBytes(contract.AttrProbe).FromRaw([]byte("job"))
	lrs.At(4).Attributes().PutEmptySlice(contract.AttrProbe).AppendEmpty().SetStr("job")
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), ld))
	r.expire(at(time.Second))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"unknown_probe": 4}, counterByAttr(t, r.tel, "start_events", "result"))
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Zero(t, probeOutcomes(r.sink.AllMetrics())["job"][contract.Timeout])
	r.shutdown(t)
}

// TestStartEventsGraceAndSampling: with start_events::timeout_grace the
// timeout is counted only once start + dMax + grace has passed, and a span
// that arrives within the grace counts by its own duration (a timeout
// ending after dMax, once); an instance whose start event carries a
// sampling threshold (deltaq.tracestate ot=th:c: one span in four kept,
// OpenTelemetry "TraceState: Probability Sampling") times out with its
// adjusted count, 4.
func TestStartEventsGraceAndSampling(t *testing.T) {
	cfg := loadConfig(t, "matched")
	cfg.StartEvents.TimeoutGrace = 100 * time.Millisecond
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100), tracestate: "ot=th:c"},
	)))
	r.expire(at(ms(350)))
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"), "within the grace")
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(340), span{name: "job", dur: ms(240), traceID: 1})))
	r.expire(at(ms(401)))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "span 2 only")
	r.clk.Tick(at(2 * time.Second))
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1 + 4},
		probeOutcomes(r.sink.AllMetrics())["job"])
	r.shutdown(t)
}

// TestStartEventsGraceBeyondLag: a timeout counted after the window of its
// deadline has closed — a timeout_grace longer than what the lag leaves of
// that window — counts in the oldest open window (late_timeouts), as the
// README's timeout_grace says; one whose deadline leaves the grace time
// before its window closes counts in its own.
func TestStartEventsGraceBeyondLag(t *testing.T) {
	cfg := loadConfig(t, "matched") // interval 1s, lag one interval; job's dMax 200ms
	cfg.StartEvents.TimeoutGrace = 1500 * time.Millisecond
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Deadlines 1.25 s and 1.9 s, both in window [1 s, 2 s), which closes at
	// 3 s; due at 2.75 s and 3.4 s.
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(1050)}, start{n: 2, probe: "job", at: ms(1700)})))
	timeouts := func() int64 { return probeOutcomes(r.sink.AllMetrics())["job"][contract.Timeout] }
	r.expire(at(ms(2760)))
	r.clk.Tick(at(3 * time.Second))
	assert.Equal(t, int64(1), timeouts(), "window [1 s, 2 s): the first timeout alone")
	r.expire(at(ms(3410)))
	r.clk.Tick(at(4 * time.Second))
	assert.Equal(t, int64(2), timeouts(), "window [2 s, 3 s): the second, late")
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Equal(t, int64(1), counterByAttr(t, r.tel, "late_timeouts", "")[""])
	r.shutdown(t)
}

// TestStartEventsSpanAfterLateWindowCountsAgain: a timed-out instance is
// remembered for late_window (1 minute by default); its span, arriving
// after that, ends nothing and counts by its own duration, as a span with
// no start event does: a hung request that ends minutes after its timeout
// was counted is a second timeout (late, in the oldest open window), as
// the README's late_window says.
func TestStartEventsSpanAfterLateWindowCountsAgain(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New()) // job's dMax 200ms
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 1, probe: "job", at: ms(1100)})))
	r.expire(at(ms(1310)))
	r.expire(at(62 * time.Second)) // past its late window
	r.clk.Tick(at(62 * time.Second))
	// The span, started at 1.1 s, ends at 62.4 s.
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(62400), span{name: "job", dur: ms(61300), traceID: 1})))
	r.clk.Tick(at(64 * time.Second))
	assert.Equal(t, int64(2), probeOutcomes(r.sink.AllMetrics())["job"][contract.Timeout], "the real-time timeout, and the span's")
	assert.Empty(t, counterByAttr(t, r.tel, "late_spans", "probe"))
	assert.Equal(t, int64(1), counterByAttr(t, r.tel, "late_timeouts", "")[""])
	r.shutdown(t)
}

// TestStartEventsCarriedAcrossReload: the instances in flight go to the
// connector a configuration reload builds, but those of a probe whose dMax
// changed, which are dropped. A carried instance waits for its span until
// just before the window of its deadline closes, not merely its grace: the
// receivers were down, and clients resend the spans of that time only
// after a backoff. Job's instances start at 100 ms (dMax 200 ms), so their
// window [0, 1 s) closes at 2 s (1 s windows, a lag of one): one whose span
// comes at 1.5 s counts by its span, a success, and the other times out at
// about 1.88 s, in its own window.
func TestStartEventsCarriedAcrossReload(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, loadConfig(t, "matched"), st)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "store", at: ms(100)}, start{n: 3, probe: "job", at: ms(100)},
	)))
	st.Reload.Requested()
	r.shutdown(t)

	cfg := loadConfig(t, "matched")
	pc := cfg.Probes["store"]
	pc.DMax = 60 * time.Millisecond
	cfg.Probes["store"] = pc
	nu := newStartRig(t, cfg, st)
	nu.expire(at(ms(1500)))
	assert.Empty(t, counterByAttr(t, nu.tel, "start_timeouts", "probe"),
		"held while their window is open; store's dropped, its dMax changed")
	require.NoError(t, nu.traces.ConsumeTraces(context.Background(), matchedTraces(ms(250), span{name: "job", dur: ms(150), traceID: 1})))
	nu.expire(at(ms(1870)))
	assert.Empty(t, counterByAttr(t, nu.tel, "start_timeouts", "probe"), "held until 2 s less two ticks and 100 ms")
	nu.expire(at(ms(1890)))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "start_timeouts", "probe"),
		"the instance whose span never came times out before its window closes")
	nu.clk.Tick(at(2 * time.Second))
	assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(nu.sink.AllMetrics())["job"], "both counted in their window, each once")
	nu.shutdown(t)
}

// TestStartEventsOptions: the start_events section decodes into the
// processor's options, with its defaults, and each value out of bounds is
// refused naming it.
func TestStartEventsOptions(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, inflight.DefaultOptions(), cfg.StartEvents)
	conf := confmap.NewFromStringMap(map[string]any{"start_events": map[string]any{
		"max_in_flight": 0, "timer_resolution": "2s", "timeout_grace": "50ms", "late_window": "10s", "max_ended": 1000, "ended_window": "5s"}})
	require.NoError(t, conf.Unmarshal(cfg))
	assert.Equal(t, inflight.Options{MaxInFlight: 0, TimerResolution: 2 * time.Second, TimeoutGrace: 50 * time.Millisecond,
		LateWindow: 10 * time.Second, MaxEnded: 1000, EndedWindow: 5 * time.Second}, cfg.StartEvents)
	err := confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start_events.max_in_flight: must be in [1, 10000000], got 0")
	assert.Contains(t, err.Error(), "start_events.timer_resolution: must be in [1ms, 1s], got 2s")

	err = confmap.NewFromStringMap(map[string]any{"start_events": map[string]any{"max_in_flite": 5}}).Unmarshal(createDefaultConfig())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start_events.max_in_flite: unknown option; did you mean max_in_flight?")
}

// TestAutoProbeInTheConnector: a probe the connector matches with dmax:
// auto starts at dmax_max, learns its dMax from its first complete sample
// (100 spans of 10 ms: the tail sketch's bucket of 10 ms has upper edge
// 10·2²⁰ ns, twice that is 20.97 ms, and the next 1-2-5 step is 50 ms;
// internal/autorange) and moves to it at the next window boundary; the
// change is counted and the dMax reported. A real-time timeout of an auto
// probe is set by the dMax in force.
func TestAutoProbeInTheConnector(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	require.True(t, cfg.Matched["job"].DMaxAuto)
	r := newStartRig(t, cfg, collectorstate.New())
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{name: "job", dur: 10 * time.Millisecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // the sample is complete: dMax 50ms
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "dmax_changes", "probe"))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(2500*time.Millisecond,
		span{name: "job", dur: 10 * time.Millisecond}, span{name: "job", dur: 60 * time.Millisecond})))
	// A start event at 2.6s times out at 2.65s, by the new dMax.
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 9, probe: "job", at: 2600 * time.Millisecond})))
	r.expire(at(2651 * time.Millisecond))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	r.clk.Tick(at(3 * time.Second)) // closes [1s, 2s): dMax 10s
	assert.Equal(t, map[string]int64{contract.Success: 100, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"])
	r.clk.Tick(at(4 * time.Second)) // closes [2s, 3s): dMax 50ms
	// The totals restart with the new layout (analysis: one stream per
	// layout).
	assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 2},
		probeOutcomes(r.sink.AllMetrics())["job"], "the 60ms span and the start event's instance are timeouts under 50ms")
	m, err := r.tel.GetMetric("otelcol_connector_deltaq_dmax")
	require.NoError(t, err)
	g := m.Data.(metricdata.Gauge[float64])
	require.Len(t, g.DataPoints, 1)
	assert.InDelta(t, 0.05, g.DataPoints[0].Value, 1e-12)
	r.shutdown(t)
}

// TestAutoProbeKeepsItsDMaxAcrossReload: a reload with the same
// configuration keeps the dMax an auto probe chose (50 ms, from 10 ms
// spans) and the instances in flight: no warning that the probe starts
// afresh, no layout change (there were two, to dmax_max and back, and when
// the old connector had seen the change, a warning that its dmax or bins
// changed), the windows after the reload in the 50 ms layout, and the
// instance whose start event came before the reload times out once.
func TestAutoProbeKeepsItsDMaxAcrossReload(t *testing.T) {
	auto := func() *Config {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
			"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
		require.NoError(t, confmap.Validate(cfg))
		return cfg
	}
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, auto(), st)
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{name: "job", dur: 10 * time.Millisecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // the sample is complete: dMax 50ms
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 9, probe: "job", at: 2600 * time.Millisecond})))
	st.Reload.Requested()
	r.shutdown(t)

	nu := newStartRigLogging(t, auto(), st, zapcore.InfoLevel)
	nu.clk.Set(at(2600 * time.Millisecond))
	require.NoError(t, nu.traces.ConsumeTraces(context.Background(), matchedTraces(3500*time.Millisecond, spans...)))
	nu.expire(at(3900 * time.Millisecond))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "start_timeouts", "probe"), "the instance in flight is carried")
	nu.clk.Tick(at(4 * time.Second))
	nu.clk.Tick(at(5 * time.Second))
	assert.Equal(t, map[string]int64{contract.Success: 100, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(nu.sink.AllMetrics())["job"])
	assert.Equal(t, []float64{10, 0.05, 0.05}, observedTops(nu.sink.AllMetrics()),
		"the learning phase's window, [1 s, 2 s), closes in its layout; the later ones have 50 ms")
	for _, e := range nu.warnings.All() {
		assert.NotContains(t, e.Message, "starts afresh")
		assert.NotContains(t, e.Message, "learning its delays")
	}
	_, err := nu.tel.GetMetric("otelcol_connector_deltaq_layout_changes")
	assert.Error(t, err, "no layout change")
	assert.Empty(t, counterByAttr(t, nu.tel, "dmax_changes", "probe"))
	nu.shutdown(t)
}

// TestAutoProbeTimeoutsInFlightAcrossAChange: instances in flight when an
// auto probe's dMax goes up keep the deadline of the dMax at their start,
// as behind the processor, whose synthetic timeout carries that dMax. Job
// learns 50 ms (10 ms spans), then its delays move to 400 ms, and after two
// such samples its dMax is 1 s (internal/autorange: the 400 ms bucket's
// upper edge is 416 ms, 2·q = 0.83 s). Two instances start before that
// change, under 50 ms: A at 3.96 s, whose deadline, 4.01 s, lies in window
// 4, which holds a span of the 50 ms layout and keeps it, is a timeout
// there; B at 4.97 s, whose deadline, 5.02 s, lies in window 5, of the
// 1 s layout, might have ended in time under it: refused as a layout
// mismatch, as the processor's is. B was counted as a timeout of the 1 s
// layout, as longer than 1 s, beside that window's 400 ms successes.
func TestAutoProbeTimeoutsInFlightAcrossAChange(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	of := func(n int, d time.Duration) []span {
		spans := make([]span, n)
		for i := range spans {
			spans[i] = span{name: "job", dur: d}
		}
		return spans
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(1500), of(100, ms(10))...)))
	r.clk.Tick(at(2 * time.Second)) // dMax 50ms
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(2900), of(100, ms(400))...)))
	r.clk.Tick(at(3 * time.Second)) // out of range once
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(3900), of(100, ms(400))...)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(4020), of(1, ms(10))...)))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(3960)}, start{n: 2, probe: "job", at: ms(4970)})))
	r.clk.Tick(at(4 * time.Second)) // out of range twice: dMax 1s
	m, err := r.tel.GetMetric("otelcol_connector_deltaq_dmax")
	require.NoError(t, err)
	require.InDelta(t, 1.0, m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value, 1e-12)
	r.expire(at(ms(5100)))
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	// B's span comes, late: not counted again.
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(5370), span{name: "job", dur: ms(400), traceID: 2})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(5500), of(10, ms(400))...)))
	r.clk.Tick(at(6 * time.Second)) // closes window 4
	assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 200 + 1},
		probeOutcomes(r.sink.AllMetrics())["job"], "the 50 ms layout's windows 2 to 4: A times out in window 4")
	for s := 7; s <= 12; s++ {
		r.clk.Tick(at(time.Duration(s) * time.Second))
	}
	assert.Equal(t, map[string]int64{contract.Success: 10, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"], "the 1 s layout's windows: no timeout")
	assert.Equal(t, map[string]int64{"layout_mismatch": 1}, counterByAttr(t, r.tel, "instances_dropped", "reason"), "B")
	r.shutdown(t)
}

// TestAutoProbeLateSpansCountOnce: an auto probe's instance whose start
// event timed out and whose span came late is one delay of its sample, the
// span's, not a censored timeout and a delay. Job learns 50 ms (10 ms
// spans); then every instance takes 1 s, each timing out at 50 ms before
// its span comes: two such samples move dMax to 5 s in one change
// (internal/autorange: 1 s has q = 1.00663296 s, 2·q = 2.01 s), as the
// spans alone do. Counted twice, it moved to 200 ms (q = 2·dMax), the
// first of three changes.
func TestAutoProbeLateSpansCountOnce(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	r := newStartRig(t, cfg, collectorstate.New())
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{name: "job", dur: 10 * time.Millisecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // dMax 50ms
	for s := range 2 {
		from := time.Duration(2+s) * time.Second
		starts := make([]start, 100)
		late := make([]span, 100)
		for i := range starts {
			n := byte(1 + 100*s + i)
			starts[i] = start{n: n, probe: "job", at: from}
			late[i] = span{name: "job", dur: time.Second, traceID: n}
		}
		require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(starts...)))
		r.expire(at(from + 100*time.Millisecond))
		require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(from+time.Second, late...)))
		r.clk.Tick(at(from + time.Second))
	}
	assert.Equal(t, map[string]int64{"job": 200}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Equal(t, map[string]int64{"job": 200}, counterByAttr(t, r.tel, "late_spans", "probe"))
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "dmax_changes", "probe"))
	m, err := r.tel.GetMetric("otelcol_connector_deltaq_dmax")
	require.NoError(t, err)
	assert.InDelta(t, 5.0, m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value, 1e-12)
	r.shutdown(t)
}

// TestAutoProbeDMaxCoversItsQTA: an auto probe with a QTA chooses a dMax
// of at least the QTA's last point, so that the change of layout makes no
// QTA alarm of its own. Job's QTA: 99 % within 100 ms, 99.9 % within
// 500 ms, at most 0.1 % failed. Its first sample, 10 ms spans, chooses
// 50 ms by the tail (internal/autorange), raised to 500 ms; then windows
// of 2000 spans of 10 ms and 3 of 300 ms meet the QTA. At 50 ms the 3
// spans were timeouts: 99.85 % within 500 ms and 0.15 % failed, and the
// qta and failure triggers fired from the change alone. A QTA point beyond
// dmax_max is refused.
func TestAutoProbeDMaxCoversItsQTA(t *testing.T) {
	entry := func(dmaxMax string) map[string]any {
		return map[string]any{"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": dmaxMax, "dmax_sample": 100, "dmax_period": "1s",
			"qta": map[string]any{"points": []any{map[string]any{"delay": "100ms", "p": 0.99}, map[string]any{"delay": "500ms", "p": 0.999}},
				"max_failure": 0.001},
			"triggers": map[string]any{"qta": true, "failure": true}}
	}
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": entry("10s")}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	r := newStartRig(t, cfg, collectorstate.New())
	of := func(n int, d time.Duration) []span {
		spans := make([]span, n)
		for i := range spans {
			spans[i] = span{name: "job", dur: d}
		}
		return spans
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, of(100, 10*time.Millisecond)...)))
	r.clk.Tick(at(2 * time.Second))
	m, err := r.tel.GetMetric("otelcol_connector_deltaq_dmax")
	require.NoError(t, err)
	assert.InDelta(t, 0.5, m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value, 1e-12)
	for s := 2; s < 5; s++ {
		end := time.Duration(s)*time.Second + 900*time.Millisecond
		require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(end,
			append(of(2000, 10*time.Millisecond), of(3, 300*time.Millisecond)...)...)))
		r.clk.Tick(at(time.Duration(s+1) * time.Second))
	}
	r.clk.Tick(at(6 * time.Second))
	assert.Equal(t, map[string]int64{contract.Success: 3 * 2003, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"])
	assert.Empty(t, counterByAttr(t, r.tel, "triggers_fired", "trigger"))
	r.shutdown(t)

	cfg = createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": entry("200ms")}}).Unmarshal(cfg))
	err = confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["job"].qta: its last point, 500ms, is beyond dmax_max 200ms`)
}

// observedTops returns the top bound (dMax, s) of each deltaq.observed
// histogram point.
func observedTops(mds []pmetric.Metrics) []float64 {
	var out []float64
	for _, md := range mds {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != contract.MetricObserved || ms.At(i).Type() != pmetric.MetricTypeHistogram {
				continue
			}
			dps := ms.At(i).Histogram().DataPoints()
			for j := range dps.Len() {
				b := dps.At(j).ExplicitBounds()
				out = append(out, b.At(b.Len()-1))
			}
		}
	}
	return out
}

// TestReloadKeepsAnAutoProbesLayout: a reload with the configuration
// unchanged keeps the dMax an auto probe chose, its layout with it, and its
// instances in flight, and says nothing of it starting afresh. The new
// engine was made with the probe's first dMax (dmax_max) and took the
// chosen one only after adopting the windows: the log said the probe
// started afresh ("its dmax or bins changed"), and layout_changes counted
// two changes, to the first dMax and back, at every reload.
func TestReloadKeepsAnAutoProbesLayout(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, cfg, st)
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{name: "job", dur: 10 * time.Millisecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // the sample is complete: dMax 50ms
	require.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "dmax_changes", "probe"))
	// A span after the decision: the engine takes the layout from its
	// next window (2 s).
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(2100*time.Millisecond, span{name: "job", dur: 10 * time.Millisecond})))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 9, probe: "job", at: 2600 * time.Millisecond})))
	st.Reload.Requested()
	r.shutdown(t)

	nu := newRigAt(t, cfg, st, zapcore.InfoLevel, true, at(2620*time.Millisecond))
	assert.Empty(t, nu.warnings.FilterMessageSnippet("starts afresh").All())
	carried := nu.warnings.FilterMessageSnippet("instances in flight from start events carried over").All()
	require.Len(t, carried, 1)
	assert.Equal(t, int64(1), carried[0].ContextMap()["carried"])
	nu.expire(at(3900 * time.Millisecond)) // held until 4 s less two ticks and 100 ms
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "start_timeouts", "probe"))
	nu.clk.Tick(at(4 * time.Second)) // closes [2s, 3s), in the chosen layout
	assert.Empty(t, counterByAttr(t, nu.tel, "layout_changes", ""))
	assert.Empty(t, counterByAttr(t, nu.tel, "dmax_changes", "probe"))
	assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(nu.sink.AllMetrics())["job"], "the totals of the 50ms layout")
	nu.shutdown(t)
}

// TestAutoProbeLearnsNothingFromBackwardSpans: spans that end before they
// start are malformed, and no delay: an auto probe's sample takes none of
// them (they were read as delays of about 0, which a sample of them alone
// would have made a dMax of the smallest step).
func TestAutoProbeLearnsNothingFromBackwardSpans(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	r := newStartRig(t, cfg, collectorstate.New())
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{name: "job", dur: -10 * time.Millisecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second))
	r.clk.Tick(at(3 * time.Second))
	assert.Empty(t, counterByAttr(t, r.tel, "dmax_changes", "probe"), "no sample: dMax stays at dmax_max")
	r.shutdown(t)
}

// TestAutoProbeOptionsChecked: an auto probe needs bins; its options are
// checked, each naming its field under the probe; an auto-ranging option
// without dmax: auto is refused.
func TestAutoProbeOptionsChecked(t *testing.T) {
	for _, c := range []struct {
		entry map[string]any
		want  string
	}{
		{map[string]any{"match": map[string]any{}, "dmax": "auto"}, `probes["job"].bins: must be in [1, 1000] with dmax: auto, got 0`},
		{map[string]any{"match": map[string]any{}, "dmax": "auto", "bins": 10, "dmax_sample": 5}, `probes["job"].dmax_sample: must be in [100, 10000000], got 5`},
		{map[string]any{"match": map[string]any{}, "dmax": "auto", "bins": 10, "dmax_min": "2s", "dmax_max": "1s"}, `dmax_min 2s is above dmax_max 1s`},
	} {
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": c.entry}}).Unmarshal(cfg))
		err := confmap.Validate(cfg)
		require.Error(t, err, "%v", c.entry)
		assert.Contains(t, err.Error(), c.want)
	}
	// dmax_min on a probe with a fixed dMax: refused as the processor
	// refuses it, only with dmax: auto (it was "unknown option; did you
	// mean dmax?").
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "1s", "bins": 10, "dmax_min": "1ms"}}}).Unmarshal(cfg))
	err := confmap.Validate(cfg)
	require.Error(t, err)
	assert.Equal(t, `probes["job"]: dmax_min, dmax_max, dmax_sample, dmax_period, dmax_changes_per_hour: only with dmax: auto`, err.Error())
	// dmax: auto in any case, as the processor reads it; without match it
	// says what it needs, not that auto is no duration.
	cfg = createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": " Auto ", "bins": 10}}}).Unmarshal(cfg))
	assert.True(t, cfg.Matched["job"].DMaxAuto)
	err = confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"dmax": "auto", "bins": 10}}}).Unmarshal(createDefaultConfig())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["job"].dmax: auto ranges a probe the connector matches: add match (or set dmax: auto on the deltaq processor's probe)`)
	assert.NotContains(t, err.Error(), "not a duration")
}

// batch is one batch start event (contract.StartsEventName): the probe,
// its entries (start.probe and start.tracestate unused), their thresholds
// (nil: no attribute) and, for a malformed record, a change made to it
// last.
type batch struct {
	probe      string
	starts     []start
	thresholds []uint64
	spoil      func(pcommon.Map)
}

// batchLogs returns the batch start events, after one log record that is
// none and the single start events singles.
func batchLogs(singles []start, batches ...batch) plog.Logs {
	ld := startLogs(singles...)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for _, b := range batches {
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at(time.Hour))) // not read
		attrs := lr.Attributes()
		if b.probe != "" {
			attrs.PutStr(contract.AttrProbe, b.probe)
		}
		var entries []byte
		for _, s := range b.starts {
			var ts uint64
			if s.at > 0 {
				ts = uint64(at(s.at).UnixNano())
			}
			entries = contract.AppendStart(entries, [16]byte{s.n}, [8]byte{s.n}, ts)
		}
		attrs.PutEmptyBytes(contract.AttrStarts).FromRaw(entries)
		if b.thresholds != nil {
			var th []byte
			for _, v := range b.thresholds {
				th = binary.LittleEndian.AppendUint64(th, v)
			}
			attrs.PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(th)
		}
		if b.spoil != nil {
			b.spoil(attrs)
		}
	}
	return ld
}

// TestBatchStartEvents: the entries of a batch start event are read as
// single start events are, beside them in the same request: they time out
// in real time, with the adjusted count of their threshold (0xc0000000000000
// is ot=th:c, one span in four kept), and each is counted by result (after
// its span, a duplicate of a single event's instance, of an unknown probe,
// with no ids); a malformed record counts once as invalid, whatever its
// entries, and tracks none of them.
func TestBatchStartEvents(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(40), traceID: 4})))
	one := []start{{n: 9, at: ms(100)}}
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), batchLogs(
		[]start{{n: 1, probe: "job", at: ms(100)}},
		batch{probe: "job", starts: []start{{n: 2, at: ms(100)}, {n: 3, at: ms(100)}, {n: 4, at: ms(110)}, {n: 0, at: ms(100)}, {n: 7}, {n: 1, at: ms(100)}},
			thresholds: []uint64{0, 0xc0000000000000, 0, 0, 0, 0}},
		batch{probe: "nojob", starts: []start{{n: 5, at: ms(100)}, {n: 6, at: ms(100)}}},
		// Malformed, each counted once as invalid.
		batch{starts: one},
		batch{probe: "job", starts: one, spoil: func(m pcommon.Map) { m.PutEmptyBytes(contract.AttrStarts).FromRaw(make([]byte, 31)) }},
		batch{probe: "job", starts: one, spoil: func(m pcommon.Map) { m.PutStr(contract.AttrStarts, "not bytes") }},
		batch{probe: "job", starts: one, thresholds: []uint64{0, 0}},
		batch{probe: "job", starts: one, spoil: func(m pcommon.Map) { m.PutInt(contract.AttrStartsThresholds, 0) }},
		batch{probe: "job", starts: one, spoil: func(m pcommon.Map) {
			m.PutEmptyBytes(contract.AttrStarts).FromRaw(make([]byte, (contract.MaxStartEntries+1)*contract.StartEntryBytes))
		}},
	)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(250), span{name: "job", dur: ms(150), traceID: 1})))
	r.expire(at(ms(299)))
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"), "no deadline has passed")
	r.expire(at(ms(301)))
	assert.Equal(t, map[string]int64{"job": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "entries 2 and 3, at start + 200ms")
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(400), span{name: "job", dur: ms(300), traceID: 2})))
	r.clk.Tick(at(2 * time.Second))

	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Failure: 0, contract.Timeout: 1 + 4},
		probeOutcomes(r.sink.AllMetrics())["job"], "spans 1 and 4 succeed; 2 times out once, 3 with its adjusted count")
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "late_spans", "probe"))
	assert.Equal(t, map[string]int64{"tracked": 3, "after_end": 1, "unknown_probe": 2, "invalid": 2 + 6, "duplicate": 1},
		counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// TestStartEventOfAnotherProbe: a start event, in either form, that names
// a probe (store, worker) whose match does not select the span that ends
// its instance (job's: an SDK's selector and the connector's match
// disagree) ends that instance with no outcome for the probe it named,
// neither the span's duration nor a timeout: a probe's instances are the
// spans its match selects. The span counts for the probe that matches it, the instance is
// counted in start_events_mismatched by the probe the start event named,
// and the first such case of each probe is logged at warn level, naming
// both. An instance whose timeout was counted before its span came stays
// counted (its span is late, and mismatched too).
func TestStartEventOfAnotherProbe(t *testing.T) {
	for _, form := range []string{"single", "batch"} {
		t.Run(form, func(t *testing.T) { testStartEventOfAnotherProbe(t, form) })
	}
}

func testStartEventOfAnotherProbe(t *testing.T, form string) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce(form,
		start{n: 1, probe: "store", at: ms(100)}, start{n: 2, probe: "store", at: ms(100)},
		start{n: 3, probe: "worker", at: ms(100)}, start{n: 4, probe: "store", at: ms(100)},
	)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(130),
		span{name: "job", dur: ms(30), traceID: 1}, span{name: "job", dur: ms(30), traceID: 3})))
	r.expire(at(ms(151))) // store's dMax is 50ms: 2 and 4 time out
	assert.Equal(t, map[string]int64{"store": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(200),
		span{name: "job", dur: ms(100), traceID: 2}, span{name: "job", dur: ms(100), traceID: 4})))
	r.expire(at(time.Second))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"store": 2}, counterByAttr(t, r.tel, "start_timeouts", "probe"),
		"no timeout for an instance a span ended, whatever probe it matched")
	outcomes := probeOutcomes(r.sink.AllMetrics())
	assert.Equal(t, map[string]int64{contract.Success: 4, contract.Failure: 0, contract.Timeout: 0}, outcomes["job"],
		"each span once, for the probe that matches it")
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 2}, outcomes["store"],
		"the timeouts counted before the spans came, and nothing else")
	assert.Zero(t, outcomes["worker"][contract.Success]+outcomes["worker"][contract.Failure]+outcomes["worker"][contract.Timeout])
	assert.Equal(t, map[string]int64{"store": 3, "worker": 1}, counterByAttr(t, r.tel, "start_events_mismatched", "probe"))
	assert.Equal(t, map[string]int64{"store": 2}, counterByAttr(t, r.tel, "late_spans", "probe"))
	var warned []string
	for _, e := range r.warnings.FilterMessageSnippet("a start event named a probe whose match does not select its span").All() {
		f := e.ContextMap()
		warned = append(warned, fmt.Sprint(f["probe"], " ", f["span_probes"]))
	}
	assert.ElementsMatch(t, []string{"store [job]", "worker [job]"}, warned, "once a probe, naming both")
	r.shutdown(t)
}

// withEnd returns td with the end time of its i-th span (of its first
// resource) set to end, 0 for none.
func withEnd(td ptrace.Traces, i int, end time.Duration) ptrace.Traces {
	var ts pcommon.Timestamp
	if end > 0 {
		ts = pcommon.NewTimestampFromTime(at(end))
	}
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(i).SetEndTimestamp(ts)
	return td
}

// TestStartEventSpanWithoutEnd: a span without a valid end (none, or one
// before its start) ends the instance its start event, in either form,
// announced: it came, so the instance is no timeout, and it is counted as
// malformed (instances_dropped), once. Such a span that comes after its
// instance timed out is late, not counted again; one that comes before its
// start event is remembered, so that the start event is not tracked.
// Spans 1 and 5 timed out as well (two outcomes for one instance).
func TestStartEventSpanWithoutEnd(t *testing.T) {
	for _, form := range []string{"single", "batch"} {
		t.Run(form, func(t *testing.T) { testStartEventSpanWithoutEnd(t, form) })
	}
}

func testStartEventSpanWithoutEnd(t *testing.T, form string) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce(form,
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)}, start{n: 3, probe: "job", at: ms(100)},
	)))
	// Span 1 has no end, span 2 ends before it starts, span 5 has no end.
	td := matchedTraces(ms(150), span{name: "job", dur: ms(50), traceID: 1}, span{name: "job", dur: ms(50), traceID: 2},
		span{name: "job", dur: ms(50), traceID: 5})
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), withEnd(withEnd(withEnd(td, 0, 0), 1, ms(90)), 2, 0)))
	r.expire(at(ms(301))) // job's dMax is 200ms: 3 times out
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "only 3")
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), withEnd(matchedTraces(ms(350),
		span{name: "job", dur: ms(250), traceID: 3}), 0, 0)))
	// Span 5 came before its start event.
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce(form, start{n: 5, probe: "job", at: ms(100)})))
	r.expire(at(time.Second))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "spans 1, 2 and 5 came")
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(r.sink.AllMetrics())["job"])
	assert.Equal(t, map[string]int64{"malformed": 3}, counterByAttr(t, r.tel, "instances_dropped", "reason"), "spans 1, 2 and 5")
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "late_spans", "probe"), "span 3")
	assert.Equal(t, map[string]int64{"tracked": 3, "after_end": 1}, counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// announce returns the start events in form: single, one record each
// (deltaq.span.start), or batch, one batch record a probe
// (deltaq.span.starts), in the order of each probe's first.
func announce(form string, events ...start) plog.Logs {
	if form == "single" {
		return startLogs(events...)
	}
	var batches []batch
	index := map[string]int{}
	for _, e := range events {
		i, ok := index[e.probe]
		if !ok {
			i = len(batches)
			index[e.probe] = i
			batches = append(batches, batch{probe: e.probe})
		}
		batches[i].starts = append(batches[i].starts, e)
	}
	return batchLogs(nil, batches...)
}

// TestStartEventsLongBatch: a batch of spans longer than the tracker's
// read-ahead (32 spans), some announced and some not, ends every announced
// instance once and counts every span once: the read-ahead changes no
// answer of the look-ups it prepares.
func TestStartEventsLongBatch(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var starts []start
	var spans []span
	for n := 1; n <= 150; n++ {
		if n%2 == 1 {
			starts = append(starts, start{n: byte(n), probe: "job", at: ms(100)})
		}
		spans = append(spans, span{name: "job", dur: ms(30), traceID: byte(n)})
	}
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce("batch", starts...)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(130), spans...)))
	r.expire(at(time.Second))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"), "every announced span came")
	assert.Equal(t, map[string]int64{contract.Success: 150, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"])
	assert.Equal(t, map[string]int64{"tracked": 75}, counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// TestStartEventRepeatedAfterItsSpan: a start event delivered again after
// the span that ended its instance came (an exporter's retry of a logs
// request whose answer was lost, an SDK's resend) is a start event after
// its span, in either form: recognised (after_end) and not tracked. It was
// tracked again and timed out, a second outcome of one instance: a success
// and a timeout for span 1, two timeouts for span 2, whose span was late.
func TestStartEventRepeatedAfterItsSpan(t *testing.T) {
	for _, form := range []string{"single", "batch"} {
		t.Run(form, func(t *testing.T) {
			r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
			ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
			events := []start{{n: 1, probe: "job", at: ms(100)}, {n: 2, probe: "job", at: ms(100)}}
			require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce(form, events...)))
			require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(50), traceID: 1})))
			r.expire(at(ms(301))) // job's dMax is 200ms: 2 times out
			require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(400), span{name: "job", dur: ms(300), traceID: 2})))
			require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce(form, events...)))
			r.expire(at(time.Second))
			r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

			assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"), "2 once")
			assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 1},
				probeOutcomes(r.sink.AllMetrics())["job"], "each instance once")
			assert.Equal(t, map[string]int64{"tracked": 2, "after_end": 2}, counterByAttr(t, r.tel, "start_events", "result"))
			assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "late_spans", "probe"))
			r.shutdown(t)
		})
	}
}

// TestRefusedStartEventsLogged: a start event refused, in either form, is
// logged at debug level with what an operator needs to find its sender:
// the reason, the ids, the start time and the probe it named (cut to 256
// bytes). The probe and the start time were not logged: an unknown_probe
// did not say which name the connector does not match, an invalid one
// not that its start time was missing.
func TestRefusedStartEventsLogged(t *testing.T) {
	r := newStartRigLogging(t, loadConfig(t, "matched"), collectorstate.New(), zapcore.DebugLevel)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	long := strings.Repeat("x", 300)
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), batchLogs(
		[]start{{n: 1, probe: "Job", at: ms(100)}, {n: 0, probe: "job", at: ms(100)}, {n: 3, probe: "job", at: ms(100)}},
		batch{probe: "nojob", starts: []start{{n: 4, at: ms(100)}}},
		batch{probe: long, starts: []start{{n: 5, at: ms(100)}}},
		batch{probe: "job", starts: []start{{n: 6}, {n: 3, at: ms(100)}}},
	)))
	type refusal struct {
		reason, probe string
		spanID        string
		start         uint64
	}
	var got []refusal
	for _, e := range r.warnings.FilterMessage("deltaq: start event refused").All() {
		f := e.ContextMap()
		start, _ := f["start_time_unix_nano"].(uint64)
		probe, _ := f["probe"].(string)
		got = append(got, refusal{reason: fmt.Sprint(f["reason"]), probe: probe, spanID: fmt.Sprint(f["span_id"]), start: start})
	}
	start := uint64(at(ms(100)).UnixNano())
	assert.Equal(t, []refusal{
		{"unknown_probe", "Job", "0100000000000000", start},
		{"invalid", "job", "", start}, // no ids
		{"unknown_probe", "nojob", "0400000000000000", start},
		{"unknown_probe", long[:256], "0500000000000000", start},
		{"invalid", "job", "0600000000000000", 0},
		{"duplicate", "job", "0300000000000000", start},
	}, got)
	r.shutdown(t)
}

// TestRememberedSpansCarriedAcrossReload: the spans remembered as ended
// go to the connector a configuration reload builds, whatever its
// start_events options: a start event that comes after its span, across
// the reload, is recognised and not tracked. With another max_ended or
// ended_window they were dropped, and such a start event was tracked and
// timed out: a second outcome of an instance counted by its span.
func TestRememberedSpansCarriedAcrossReload(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*inflight.Options)
	}{
		{"same options", func(*inflight.Options) {}},
		{"another max_ended", func(o *inflight.Options) { o.MaxEnded = 1000 }},
		{"another ended_window", func(o *inflight.Options) { o.EndedWindow = time.Minute }},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := collectorstate.New()
			st.Reload = reload.New()
			r := newStartRig(t, loadConfig(t, "matched"), st)
			ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
			require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 9, probe: "job", at: ms(100)})))
			require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150),
				span{name: "job", dur: ms(50), traceID: 1}, span{name: "job", dur: ms(50), traceID: 2},
				span{name: "job", dur: ms(50), traceID: 9})))
			st.Reload.Requested()
			r.shutdown(t)

			cfg := loadConfig(t, "matched")
			c.change(&cfg.StartEvents)
			nu := newStartRig(t, cfg, st)
			require.NoError(t, nu.logs.ConsumeLogs(context.Background(), announce("batch",
				start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)}, start{n: 9, probe: "job", at: ms(100)})))
			nu.expire(at(ms(1900)))
			nu.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

			assert.Empty(t, counterByAttr(t, nu.tel, "start_timeouts", "probe"))
			assert.Equal(t, map[string]int64{"after_end": 3}, counterByAttr(t, nu.tel, "start_events", "result"))
			assert.Equal(t, map[string]int64{contract.Success: 3, contract.Failure: 0, contract.Timeout: 0},
				probeOutcomes(nu.sink.AllMetrics())["job"], "each span once")
			nu.shutdown(t)
		})
	}
}

// TestReloadCountsRememberedSpansCut: a reload to a smaller max_ended
// keeps the newest remembered spans it can hold; the reload's log says how
// many it remembers and how many it cut, and the cut ones are counted in
// ended_evictions, as the bound's cuts are on the span path (they were
// forgotten unsaid).
func TestReloadCountsRememberedSpansCut(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, loadConfig(t, "matched"), st)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 9, probe: "job", at: ms(100)})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150),
		span{name: "job", dur: ms(50), traceID: 1}, span{name: "job", dur: ms(50), traceID: 2},
		span{name: "job", dur: ms(50), traceID: 9})))
	st.Reload.Requested()
	r.shutdown(t)

	cfg := loadConfig(t, "matched")
	cfg.StartEvents.MaxEnded = 2 // one span a generation: 2 and 9 kept
	nu := newStartRigLogging(t, cfg, st, zapcore.InfoLevel)
	carried := nu.warnings.FilterMessageSnippet("instances in flight from start events carried over").All()
	require.Len(t, carried, 1)
	fields := carried[0].ContextMap()
	assert.Equal(t, int64(2), fields["remembered_spans"])
	assert.Equal(t, int64(1), fields["remembered_spans_cut"])
	assert.Equal(t, map[string]int64{"": 1}, counterByAttr(t, nu.tel, "ended_evictions", ""), "the span cut")
	require.NoError(t, nu.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 2, probe: "job", at: ms(100)}, start{n: 9, probe: "job", at: ms(100)})))
	assert.Equal(t, map[string]int64{"after_end": 2}, counterByAttr(t, nu.tel, "start_events", "result"))
	nu.shutdown(t)
}

// TestReloadLongerThanTheLag: an instance carried over a reload whose
// components took longer to rebuild than its hold (the window of its
// deadline was due to close meanwhile) times out when the new connector
// starts, before that window closes: its timeout counts in the window of
// its deadline, as without the reload. The window closed first, and the
// timeout went to the next one.
func TestReloadLongerThanTheLag(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	r := newRigAt(t, loadConfig(t, "matched"), st, zapcore.WarnLevel, true, at(ms(100)))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 1, probe: "job", at: ms(100)})))
	r.expire(at(ms(200)))
	st.Reload.Requested()
	r.shutdown(t)

	// Back at 2.5 s: window [0, 1 s), of the deadline (300 ms), was due
	// to close at 2 s.
	nu := newRigAt(t, loadConfig(t, "matched"), st, zapcore.WarnLevel, true, at(ms(2500)))
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "start_timeouts", "probe"))
	mds := nu.sink.AllMetrics()
	require.NotEmpty(t, mds)
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(mds)["job"], "in the window of its deadline, the last closed")
	nu.shutdown(t)
}

// TestReloadToSmallerMaxInFlight: a reload to a smaller max_in_flight
// evicts the oldest instances in flight, as tracking does, and counts them
// in in_flight_evictions; a timed-out one is remembered as such, so that
// its span, resent after the reload while its window is open, is late and
// not counted again. It was forgotten unsaid: the span counted as a
// success, the instance twice (6 outcomes of 5 instances).
func TestReloadToSmallerMaxInFlight(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, loadConfig(t, "matched"), st)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)}, start{n: 3, probe: "job", at: ms(100)})))
	r.expire(at(ms(310))) // 1, 2 and 3 time out
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 4, probe: "job", at: ms(300)}, start{n: 5, probe: "job", at: ms(300)})))
	st.Reload.Requested()
	r.shutdown(t)

	cfg := loadConfig(t, "matched")
	cfg.StartEvents.MaxInFlight = 2
	nu := newStartRig(t, cfg, st)
	assert.Equal(t, map[string]int64{"timed_out": 3}, counterByAttr(t, nu.tel, "in_flight_evictions", "state"))
	require.NoError(t, nu.traces.ConsumeTraces(context.Background(), matchedTraces(ms(400),
		span{name: "job", dur: ms(100), traceID: 4}, span{name: "job", dur: ms(100), traceID: 5})))
	require.NoError(t, nu.traces.ConsumeTraces(context.Background(), matchedTraces(ms(250), span{name: "job", dur: ms(150), traceID: 1})))
	nu.expire(at(ms(1500)))
	nu.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "late_spans", "probe"))
	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Failure: 0, contract.Timeout: 3},
		probeOutcomes(nu.sink.AllMetrics())["job"], "each instance once")
	nu.shutdown(t)
}

// TestCarriedInstancesTimeOutWithoutLogsInput: a reload whose
// configuration takes the connector out of the logs pipeline carries the
// instances in flight over all the same, and they time out as before:
// their start events came, their spans did not. The timer did not run
// without a logs input, and they stayed in flight for ever, never counted.
func TestCarriedInstancesTimeOutWithoutLogsInput(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	r := newStartRig(t, loadConfig(t, "matched"), st)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(100)})))
	st.Reload.Requested()
	r.shutdown(t)

	// The reloaded connector, in the traces pipeline alone.
	nu := newTracesRig(t, loadConfig(t, "matched"), st)
	require.NoError(t, nu.traces.ConsumeTraces(context.Background(), matchedTraces(ms(250), span{name: "job", dur: ms(150), traceID: 1})))
	expired := make(chan struct{})
	go func() { nu.clk.Expire(at(ms(1900))); close(expired) }()
	select {
	case <-expired:
	case <-time.After(5 * time.Second):
		t.Fatal("no timer: the carried instances never time out")
	}
	nu.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, nu.tel, "start_timeouts", "probe"), "2, whose span never came")
	assert.Equal(t, map[string]int64{contract.Success: 1, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(nu.sink.AllMetrics())["job"])
	nu.shutdown(t)
}

// TestStartEventRepeatedAfterLateWindow: with a late_window shorter than
// ended_window, a start event delivered again after its instance timed
// out and was forgotten (its late window over) but before it is stale is
// recognised, not tracked again: the instance was counted, as a timeout.
// It was tracked and timed out a second time.
func TestStartEventRepeatedAfterLateWindow(t *testing.T) {
	cfg := loadConfig(t, "matched")
	cfg.StartEvents.LateWindow = 2 * time.Second
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce("batch", start{n: 1, probe: "job", at: ms(100)})))
	r.expire(at(ms(301)))  // times out
	r.expire(at(ms(2400))) // forgotten: 2 s after its timeout
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), announce("single", start{n: 1, probe: "job", at: ms(100)})))
	r.expire(at(ms(2410)))
	r.clk.Tick(at(2 * time.Second))
	r.clk.Tick(at(3 * time.Second))

	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(r.sink.AllMetrics())["job"], "once")
	assert.Equal(t, map[string]int64{"tracked": 1, "after_end": 1}, counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// TestStartTimeoutsNameTheirService: a timeout counted from a start event
// counts for the service of the start event's resource, as a span's
// instance counts for its resource's service and as the deltaq processor's
// synthetic timeout span carries it: a probe whose instances all time out
// (the application stopped sending spans) names its service all the same,
// in either form of start event.
func TestStartTimeoutsNameTheirService(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ld := batchLogs([]start{{n: 1, probe: "job", at: ms(100)}}, batch{probe: "worker", starts: []start{{n: 2, at: ms(100)}}})
	ld.ResourceLogs().At(0).Resource().Attributes().PutStr("service.name", "shop")
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), ld))
	r.expire(at(ms(301)))
	assert.Equal(t, map[string]int64{"job": 1, "worker": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(r.sink.AllMetrics())["job"])
	assert.Equal(t, map[string]string{"job": "shop", "worker": "shop", "store": ""}, probeServices(r.sink.AllMetrics()))
	r.shutdown(t)
}

// TestSpansWithoutIDsNotRemembered: a span without its ids counts by its
// own duration and ends no instance; it is not remembered among the spans
// ended either, where it took the place of a span whose start event may
// still come (max_ended): that start event was then tracked, and timed
// out, a second outcome of its instance.
func TestSpansWithoutIDsNotRemembered(t *testing.T) {
	cfg := loadConfig(t, "matched")
	cfg.StartEvents.MaxEnded = 2
	r := newStartRig(t, cfg, collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150), span{name: "job", dur: ms(40), traceID: 1})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(160), span{name: "job", dur: ms(40)})))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(170), span{name: "job", dur: ms(40), traceID: 2})))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(start{n: 1, probe: "job", at: ms(110)})))
	r.expire(at(ms(400)))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)

	assert.Equal(t, map[string]int64{contract.Success: 3, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"], "three spans, three successes, and no timeout")
	assert.Empty(t, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Equal(t, map[string]int64{"after_end": 1}, counterByAttr(t, r.tel, "start_events", "result"))
	r.shutdown(t)
}

// TestShutdownFlushesBesideABusyTimeoutTimer: a shutdown whose context
// ends while the timeout timer is still busy with a tick flushes the open
// windows all the same, and returns the context's error after (it returned
// at once, and the instances of the open windows were lost).
func TestShutdownFlushesBesideABusyTimeoutTimer(t *testing.T) {
	// The timer's tick holds on its clock reading until the test ends.
	var hold atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	r := newRigWith(t, loadConfig(t, "matched"), collectorstate.New(), zapcore.WarnLevel, true, func(s *core.Settings) {
		now := s.Now
		s.Now = func() time.Time {
			if hold.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
			return now()
		}
	})
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(ms(150),
		span{name: "job", dur: ms(40), traceID: 1}, span{name: "job", dur: ms(50), traceID: 2})))
	r.clk.Set(at(ms(200)))
	hold.Store(true)
	r.starts <- at(ms(200))
	<-held

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, r.traces.Shutdown(ctx), context.DeadlineExceeded)
	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"], "the open window's instances")
}

// TestShutdownCountsTimeoutsDue: an instance whose due time has passed
// when the connector shuts down, before the timeout timer's next tick,
// is counted as a timeout in the windows the shutdown emits, as the tick
// would have counted it; one not due yet is not.
func TestShutdownCountsTimeoutsDue(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), startLogs(
		start{n: 1, probe: "job", at: ms(100)}, start{n: 2, probe: "job", at: ms(800)})))
	r.clk.Set(at(ms(900))) // job's dMax is 200 ms: 1 is due at 300 ms, 2 at 1 s
	r.shutdown(t)
	assert.Equal(t, map[string]int64{"job": 1}, counterByAttr(t, r.tel, "start_timeouts", "probe"))
	assert.Equal(t, map[string]int64{contract.Success: 0, contract.Failure: 0, contract.Timeout: 1},
		probeOutcomes(r.sink.AllMetrics())["job"], "the timeout due before the shutdown counted in its window")
}
