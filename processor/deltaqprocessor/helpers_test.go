// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// base is the wall-clock time the tests start at.
var base = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// fakeClock hands the processor a ticker whose ticks the test sends; its
// Now is the time of the last tick (base before the first), or the time set.
type fakeClock struct {
	ch      chan time.Time
	stopped chan struct{}
	// done holds the timer's word that a tick's work is done; one place,
	// so that a timer whose tick no one waits for (a test that sends on ch
	// itself) does not block on it.
	done chan struct{}
	now  atomic.Int64
	// passes counts the ticks the timer handled.
	passes atomic.Int64
}

func newFakeClock() *fakeClock {
	c := &fakeClock{ch: make(chan time.Time), stopped: make(chan struct{}, 1), done: make(chan struct{}, 1)}
	c.now.Store(base.UnixNano())
	return c
}

func (c *fakeClock) NewTicker(time.Duration) ticker { return c }
func (c *fakeClock) C() <-chan time.Time            { return c.ch }
func (c *fakeClock) Stop()                          { c.stopped <- struct{}{} }

// Done is the timer's word that it has done a tick's work.
func (c *fakeClock) Done() {
	c.passes.Add(1)
	select {
	case c.done <- struct{}{}:
	default:
	}
}
func (c *fakeClock) Now() time.Time { return time.Unix(0, c.now.Load()) }

// set sets the time Now returns, without a tick.
func (c *fakeClock) set(at time.Time) { c.now.Store(at.UnixNano()) }

// tick sets Now to at, delivers a tick at time at and returns once the
// processor has handled it (Done), and the timer does nothing more until
// the next tick. It sent the tick twice, the second send returning once
// the timer was back in its loop, and the timer handled the second tick
// beside what the test did next: a start event due by at that the test
// added then could time out at once or at the next tick. A word left by a
// tick a test sent itself and did not wait for is dropped first.
func (c *fakeClock) tick(at time.Time) {
	c.set(at)
	select {
	case <-c.done:
	default:
	}
	c.ch <- at
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		panic(fmt.Sprintf("fakeClock: no word from the timer a minute after its tick at %v", at))
	}
}

// harness is one processor instance in a traces and a logs pipeline, with
// sinks as next consumers and an injected clock.
type harness struct {
	t      *testing.T
	clock  *fakeClock
	traces processor.Traces
	logs   processor.Logs
	tsink  *consumertest.TracesSink
	lsink  *consumertest.LogsSink
	tel    *componenttest.Telemetry
	p      *deltaqProcessor
	// state is what the processor shares with the collector's other deltaq
	// components: its own, unless the test shares one (newHarnessIn).
	state *collectorstate.State
	// warnings are the processor's logs at warn level and above.
	warnings *observer.ObservedLogs
}

func newHarness(t *testing.T, cfg *Config) *harness {
	return newHarnessWith(t, cfg, nil)
}

// newHarnessWith builds the harness; tracesNext replaces the traces sink
// when not nil.
func newHarnessWith(t *testing.T, cfg *Config, tracesNext consumer.Traces) *harness {
	t.Helper()
	return newHarnessIn(t, collectorstate.New(), cfg, tracesNext)
}

// newHarnessIn builds the harness of a processor in the collector whose
// shared state is st.
func newHarnessIn(t *testing.T, st *collectorstate.State, cfg *Config, tracesNext consumer.Traces) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	h := &harness{t: t, clock: newFakeClock(), tsink: new(consumertest.TracesSink), lsink: new(consumertest.LogsSink), state: st}
	h.tel = componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	pf := newFactory(h.clock, st)
	f := pf.processorFactory()
	set := processortest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.TelemetrySettings = h.tel.NewTelemetrySettings()
	var logs zapcore.Core
	logs, h.warnings = observer.New(zapcore.WarnLevel)
	set.Logger = zap.New(logs)
	var next consumer.Traces = h.tsink
	if tracesNext != nil {
		next = tracesNext
	}
	var err error
	h.traces, err = f.CreateTraces(context.Background(), set, cfg, next)
	require.NoError(t, err)
	h.logs, err = f.CreateLogs(context.Background(), set, cfg, h.lsink)
	require.NoError(t, err)
	h.p = pf.lookup(set.ID)
	require.NotNil(t, h.p)
	require.NoError(t, h.traces.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, h.logs.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, h.traces.Shutdown(context.Background()))
		require.NoError(t, h.logs.Shutdown(context.Background()))
	})
	return h
}

func (h *harness) consumeTraces(td ptrace.Traces) {
	h.t.Helper()
	require.NoError(h.t, h.traces.ConsumeTraces(context.Background(), td))
}

func (h *harness) consumeLogs(ld plog.Logs) {
	h.t.Helper()
	require.NoError(h.t, h.logs.ConsumeLogs(context.Background(), ld))
}

// passOne sends spec alone, as instance i+1 lasting a millisecond, and
// returns the one span the processor passed on: a table-driven test's case i.
func (h *harness) passOne(i int, spec spanSpec) ptrace.Span {
	h.t.Helper()
	spec.id = byte(i + 1)
	spec.duration = time.Millisecond
	h.tsink.Reset()
	h.consumeTraces(tracesOf(spec))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(h.t, spans, 1)
	return spans[0]
}

// spanSpec describes a test span.
type spanSpec struct {
	name     string
	service  string
	id       byte // trace id = [id, 0, …], span id = [id, 1, 0, …]
	start    time.Time
	duration time.Duration
	kind     ptrace.SpanKind
	status   ptrace.StatusCode
	attrs    map[string]any
}

func traceID(id byte) pcommon.TraceID { return pcommon.TraceID{id, 0xa} }
func spanID(id byte) pcommon.SpanID   { return pcommon.SpanID{id, 0xb} }

// tracesOf builds a batch with one resource per span.
func tracesOf(specs ...spanSpec) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range specs {
		rs := td.ResourceSpans().AppendEmpty()
		if s.service != "" {
			rs.Resource().Attributes().PutStr("service.name", s.service)
		}
		span := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		span.SetName(s.name)
		span.SetTraceID(traceID(s.id))
		span.SetSpanID(spanID(s.id))
		start := s.start
		if start.IsZero() {
			start = base
		}
		span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(s.duration)))
		span.SetKind(s.kind)
		span.Status().SetCode(s.status)
		if s.attrs != nil {
			if err := span.Attributes().FromRaw(s.attrs); err != nil {
				panic(err)
			}
		}
	}
	return td
}

// startEvent describes a test start event.
type startEvent struct {
	probe    string
	service  string
	id       byte
	at       time.Time
	spanName string
}

// logsOf builds a batch of start events, one resource each.
func logsOf(events ...startEvent) plog.Logs {
	ld := plog.NewLogs()
	for _, e := range events {
		appendStartEvent(ld, e)
	}
	return ld
}

func appendStartEvent(ld plog.Logs, e startEvent) plog.LogRecord {
	rl := ld.ResourceLogs().AppendEmpty()
	if e.service != "" {
		rl.Resource().Attributes().PutStr("service.name", e.service)
	}
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(contract.StartEventName)
	lr.SetTraceID(traceID(e.id))
	lr.SetSpanID(spanID(e.id))
	lr.SetTimestamp(pcommon.NewTimestampFromTime(e.at))
	lr.Attributes().PutStr(contract.AttrProbe, e.probe)
	if e.spanName != "" {
		lr.Attributes().PutStr(contract.AttrSpanName, e.spanName)
	}
	return lr
}

// allSpans flattens the spans of batches, with their resources.
func allSpans(tds []ptrace.Traces) (spans []ptrace.Span, resources []pcommon.Resource) {
	for _, td := range tds {
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j)
				for k := 0; k < ss.Spans().Len(); k++ {
					spans = append(spans, ss.Spans().At(k))
					resources = append(resources, rs.Resource())
				}
			}
		}
	}
	return spans, resources
}

// attrsOf returns a span's attributes as a plain map.
func attrsOf(s ptrace.Span) map[string]any { return s.Attributes().AsRaw() }

// probeConfig is a probe with an exact span name and a dMax.
func probeConfig(name string, dMax time.Duration, bins int) ProbeConfig {
	return ProbeConfig{Name: name, DMax: dMax, Bins: bins}
}

// testConfig returns the default configuration with the given probes.
func testConfig(probes ...ProbeConfig) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Probes = probes
	return cfg
}

// tickEveryMillisecond advances the fake clock from base by a millisecond a
// tick, in a goroutine, until the returned stop is called; stop returns once
// the last tick has been handled, so that the test may tick again.
func (h *harness) tickEveryMillisecond() (stop func()) {
	done := make(chan struct{})
	ticks := make(chan struct{})
	go func() {
		defer close(ticks)
		at := base
		for {
			select {
			case <-done:
				return
			default:
			}
			at = at.Add(time.Millisecond)
			h.clock.tick(at)
		}
	}()
	return func() {
		close(done)
		<-ticks
	}
}

// loadValidConfig decodes the deltaq section of testdata/file, which must
// be valid.
func loadValidConfig(t *testing.T, file string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", file))
	require.NoError(t, err)
	sub, err := cm.Sub("deltaq")
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(sub))
	require.NoError(t, cfg.Validate())
	return cfg
}
