// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// The comparison uses batches of 1000 minimal spans (one resource, ten span
// names, no attributes), the shape of the design's reference figures. Every
// span is matched by a probe, so every span becomes an outcome instance that
// the exporter windows: the deltaq side does its full per-span work.
const (
	batchSize = 1000
	names     = 10
)

func minimalBatch() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	start := time.Now()
	for i := range batchSize {
		s := spans.AppendEmpty()
		s.SetName(fmt.Sprintf("op-%d", i%names))
		var tid [16]byte
		var sid [8]byte
		tid[0], tid[1], tid[15] = byte(i>>8), byte(i), 1
		sid[0], sid[1], sid[7] = byte(i>>8), byte(i), 1
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i%100) * time.Millisecond)))
	}
	return td
}

// run feeds a fresh copy of src per iteration (copied with the timer
// stopped, 64 at a time, then the garbage collected: the processor adds
// attributes to the spans it maps) and reports
// ns/span, allocs/span and cpu-ns/span (counted over the timed batches
// only) besides the per-batch figures. cpu-ns/span is the CPU time of the
// whole process, the garbage collector's included, per span: on a shared
// machine, where other processes stretch the wall-clock time, it is the
// steadier figure.
func run(b *testing.B, next consumer.Traces, src ptrace.Traces) { runWith(b, next, src, nil, nil) }

// runWith is run with, when logs is not nil, a batch of start events for
// the batch's spans, made by events, sent to logs before each batch of spans:
// the real-time timeout path, where a matched span ends the instance its
// start event announced. The start events are stamped when their batch
// is copied, so that none is due before its span comes, and each copy's
// spans get trace ids of their own (freshIDs), as a stream of spans has:
// the connector remembers a span that ends no instance by its ids.
func runWith(b *testing.B, next consumer.Traces, src ptrace.Traces, logs consumer.Logs, events func(ptrace.Traces, time.Time) plog.Logs) {
	ctx := context.Background()
	batches := make([]ptrace.Traces, 0, 64)
	var starts []plog.Logs
	var ms runtime.MemStats
	var mallocs, m0 uint64
	var cpu, c0 time.Duration
	var copies uint64
	b.ReportAllocs()
	b.ResetTimer()
	c0 = cpuTime()
	for i := 0; i < b.N; i++ {
		if len(batches) == 0 {
			b.StopTimer()
			cpu += cpuTime() - c0
			runtime.ReadMemStats(&ms)
			if i > 0 {
				mallocs += ms.Mallocs - m0
			}
			for range cap(batches) {
				td := ptrace.NewTraces()
				src.CopyTo(td)
				batches = append(batches, td)
				if logs != nil {
					copies++
					freshIDs(td, copies)
					starts = append(starts, events(td, time.Now()))
				}
			}
			// The copies' garbage is collected here, untimed, so that a
			// timed batch pays for the collection of its own allocations.
			runtime.GC()
			runtime.ReadMemStats(&ms)
			m0 = ms.Mallocs
			c0 = cpuTime()
			b.StartTimer()
		}
		if logs != nil {
			if err := logs.ConsumeLogs(ctx, starts[len(starts)-1]); err != nil {
				b.Fatal(err)
			}
			starts = starts[:len(starts)-1]
		}
		td := batches[len(batches)-1]
		batches = batches[:len(batches)-1]
		if err := next.ConsumeTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu += cpuTime() - c0
	runtime.ReadMemStats(&ms)
	mallocs += ms.Mallocs - m0
	spans := float64(b.N * src.SpanCount())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/spans, "ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "cpu-ns/span")
	b.ReportMetric(float64(mallocs)/spans, "allocs/span")
}

// BenchmarkSpanmetrics is contrib's spanmetrics connector v0.162.0 with its
// default configuration, writing to a no-op metrics consumer.
func BenchmarkSpanmetrics(b *testing.B) {
	f := spanmetricsconnector.NewFactory()
	cfg := f.CreateDefaultConfig()
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	start(b, conn)
	run(b, conn, minimalBatch())
}

// BenchmarkDeltaQ is the deltaq processor with ten probes (one per span name)
// feeding the deltaq exporter, as in a collector's traces pipeline. The
// exporter's OTLP endpoint is unreachable and its interval long: what is
// measured is the per-span path (mapping, attributes, windowing), not the
// once-per-interval window close, which BenchmarkExporterWindow covers.
func BenchmarkDeltaQ(b *testing.B) {
	ctx := context.Background()
	ef := deltaqexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*deltaqexporter.Config)
	ecfg.ClientConfig.Endpoint = "127.0.0.1:1"
	ecfg.Interval = time.Hour
	exp, err := ef.CreateTraces(ctx, exportertest.NewNopSettings(ef.Type()), ecfg)
	if err != nil {
		b.Fatal(err)
	}
	start(b, exp)
	run(b, newProcessor(b, "op", exp), minimalBatch())
}

// BenchmarkDeltaQConnector is the deltaq processor with ten probes (one per
// span name) feeding the deltaq connector (traces → metrics, to a no-op
// metrics consumer), as in a collector's traces pipeline; its interval is
// long, so that what is measured is the per-span path, not the window close.
//
// unmatched: the processor's ten probes name no span of the batch, so that
// no span is an outcome instance: the cost of the deltaq components to the
// other spans of a pipeline.
func BenchmarkDeltaQConnector(b *testing.B) {
	for _, prefix := range []string{"op", "other"} {
		name := "matched"
		if prefix != "op" {
			name = "unmatched"
		}
		b.Run(name, func(b *testing.B) {
			run(b, newProcessor(b, prefix, newConnector(b)), minimalBatch())
		})
	}
}

// BenchmarkDeltaQOneComponent is the deltaq connector alone, its ten probes
// (one per span name) matched in the spans themselves (probes with
// match), traces → metrics to a no-op metrics consumer: the one-component
// pipeline, with no attribute written on any span. Its interval is long,
// so that what is measured is the per-span path, not the window close.
//
// unmatched: the ten probes name no span of the batch.
func BenchmarkDeltaQOneComponent(b *testing.B) {
	for _, prefix := range []string{"op", "other"} {
		name := "matched"
		if prefix != "op" {
			name = "unmatched"
		}
		b.Run(name, func(b *testing.B) {
			run(b, newMatchingConnector(b, prefix), minimalBatch())
		})
	}
}

// freshIDs gives the spans of td trace ids that no other copy's have:
// bytes 2 to 9 of each trace id hold n.
func freshIDs(td ptrace.Traces, n uint64) {
	for _, s := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		tid := s.TraceID()
		binary.LittleEndian.PutUint64(tid[2:10], n)
		s.SetTraceID(tid)
	}
}

// BenchmarkDeltaQStartEvents is BenchmarkDeltaQOneComponent/matched with
// real-time timeouts: the connector alone also takes a start event for
// every span (on its logs → metrics side), tracks the instance and ends it
// when the span comes. ns/span and cpu-ns/span count the start event with
// its span.
//
// single: one log record a span (deltaq.span.start). batch: one record a
// probe for the spans of the batch (deltaq.span.starts), 100 entries each,
// as an SDK that drains its starts every few milliseconds sends them.
// elided: the batch form for one span in ten, the start events of the
// others left out, as sdk/deltaqstart and dqsd_otel leave out the start of
// a span that ends before its start is sent; the nine spans in ten that
// end no instance are remembered, so that a start event coming after its
// span is known. ns/span and cpu-ns/span are still per span.
func BenchmarkDeltaQStartEvents(b *testing.B) {
	for _, c := range []struct {
		name   string
		events func(ptrace.Traces, time.Time) plog.Logs
	}{{"single", startEvents}, {"batch", batchStartEvents}, {"elided", elidedStartEvents}} {
		b.Run(c.name, func(b *testing.B) {
			traces, logs := newMatchingConnectorWithStarts(b, "op")
			runWith(b, traces, minimalBatch(), logs, c.events)
		})
	}
}

// startEvents returns one start event per span of td, stamped at, in one
// resource, as sdk/deltaqstart sends them: the span's ids and its probe
// (its name).
func startEvents(td ptrace.Traces, at time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "bench")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	lrs.EnsureCapacity(spans.Len())
	ts := pcommon.NewTimestampFromTime(at)
	for _, s := range spans.All() {
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(ts)
		lr.SetTraceID(s.TraceID())
		lr.SetSpanID(s.SpanID())
		lr.Attributes().PutStr(contract.AttrProbe, s.Name())
	}
	return ld
}

// batchStartEvents returns the start events of td's spans in the batch
// form, one record a probe (a span's name), in one resource, stamped at.
func batchStartEvents(td ptrace.Traces, at time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "bench")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	byProbe := map[string][]byte{}
	var order []string
	for _, s := range td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().All() {
		if _, ok := byProbe[s.Name()]; !ok {
			order = append(order, s.Name())
		}
		byProbe[s.Name()] = contract.AppendStart(byProbe[s.Name()], s.TraceID(), s.SpanID(), uint64(at.UnixNano()))
	}
	for _, probe := range order {
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		lr.Attributes().PutStr(contract.AttrProbe, probe)
		lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(byProbe[probe])
	}
	return ld
}

// elidedStartEvents returns the start events of one span of td in ten
// (the first, the eleventh, …) in the batch form.
func elidedStartEvents(td ptrace.Traces, at time.Time) plog.Logs {
	announced := ptrace.NewTraces()
	td.CopyTo(announced)
	i := 0
	announced.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(ptrace.Span) bool {
		i++
		return i%10 != 1
	})
	return batchStartEvents(announced, at)
}

// BenchmarkDeltaQConnectorExemplars is BenchmarkDeltaQConnector/matched
// with the connector's exemplars off (the default) and on, and with every
// span sampled (tracestate ot=th:c, adjusted count 4): the cost of
// selecting exemplars and of reading the sampling threshold on the span
// path.
func BenchmarkDeltaQConnectorExemplars(b *testing.B) {
	sampled := minimalBatch()
	spans := sampled.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := range spans.Len() {
		spans.At(i).TraceState().FromRaw("ot=th:c")
	}
	for _, c := range []struct {
		name      string
		exemplars bool
		src       ptrace.Traces
	}{
		{"off", false, minimalBatch()},
		{"on", true, minimalBatch()},
		{"off_sampled", false, sampled},
		{"on_sampled", true, sampled},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn := newConnectorWith(b, func(cfg *deltaqconnector.Config) { cfg.Exemplars.Enabled = c.exemplars })
			run(b, newProcessor(b, "op", conn), c.src)
		})
	}
}

// TestUnmatchedSpansAllocateNothing pins what BenchmarkDeltaQConnector/
// unmatched measures: through the processor and the connector, a batch of
// 1000 spans that no probe matches allocates as much as a batch of 10 (the
// collector's processor helper allocates a few times per batch), that is,
// nothing per span.
func TestUnmatchedSpansAllocateNothing(t *testing.T) {
	allocs := func(n int) float64 {
		proc := newProcessor(t, "other", newConnector(t))
		src := minimalBatch()
		src.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
			n--
			return n < 0
		})
		ctx := context.Background()
		return testing.AllocsPerRun(20, func() {
			if err := proc.ConsumeTraces(ctx, src); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(10), allocs(batchSize)
	if large != small {
		t.Errorf("a batch of %d unmatched spans allocates %v times, one of 10 %v times: want the same", batchSize, large, small)
	}
}

// TestOneComponentAllocatesNothingPerSpan pins what
// BenchmarkDeltaQOneComponent measures: through the connector matching its
// own probes, a batch of 1000 spans, all matched or none, allocates as
// much as a batch of 10, that is, nothing per span.
func TestOneComponentAllocatesNothingPerSpan(t *testing.T) {
	for _, prefix := range []string{"op", "other"} {
		allocs := func(n int) float64 {
			conn := newMatchingConnector(t, prefix)
			src := minimalBatch()
			src.ResourceSpans().At(0).ScopeSpans().At(0).Spans().RemoveIf(func(s ptrace.Span) bool {
				n--
				return n < 0
			})
			ctx := context.Background()
			return testing.AllocsPerRun(20, func() {
				if err := conn.ConsumeTraces(ctx, src); err != nil {
					t.Fatal(err)
				}
			})
		}
		small, large := allocs(10), allocs(batchSize)
		if large != small {
			t.Errorf("probes %s-*: a batch of %d spans allocates %v times, one of 10 %v times: want the same", prefix, batchSize, large, small)
		}
	}
}

// newProcessor returns a started deltaq processor feeding next, with ten
// probes, prefix-0 … prefix-9, each matching the span name of its own name.
func newProcessor(tb testing.TB, prefix string, next consumer.Traces) processor.Traces {
	tb.Helper()
	pf := deltaqprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*deltaqprocessor.Config)
	for i := range names {
		name := fmt.Sprintf("%s-%d", prefix, i)
		pcfg.Probes = append(pcfg.Probes, deltaqprocessor.ProbeConfig{
			Name:  name,
			Match: deltaqprocessor.MatchConfig{SpanName: name},
			DMax:  time.Second,
			Bins:  1000,
		})
	}
	if err := pcfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	proc, err := pf.CreateTraces(context.Background(), processortest.NewNopSettings(pf.Type()), pcfg, next)
	if err != nil {
		tb.Fatal(err)
	}
	start(tb, proc)
	return proc
}

// newConnector returns a started deltaq connector, traces → metrics to a
// no-op consumer, whose windows close every hour.
func newConnector(tb testing.TB) connector.Traces {
	tb.Helper()
	return newConnectorWith(tb, nil)
}

// newConnectorWith is newConnector with its configuration adjusted by
// adjust.
func newConnectorWith(tb testing.TB, adjust func(*deltaqconnector.Config)) connector.Traces {
	tb.Helper()
	cf := deltaqconnector.NewFactory()
	ccfg := cf.CreateDefaultConfig().(*deltaqconnector.Config)
	ccfg.Interval = time.Hour
	if adjust != nil {
		adjust(ccfg)
	}
	conn, err := cf.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(cf.Type()), ccfg, consumertest.NewNop())
	if err != nil {
		tb.Fatal(err)
	}
	start(tb, conn)
	return conn
}

// newMatchingConnector returns a started deltaq connector, traces →
// metrics to a no-op consumer, whose windows close every hour, with ten
// probes, prefix-0 … prefix-9, each matching the span name of its own name
// (dMax 1s, 1000 bins, as newProcessor's).
func newMatchingConnector(tb testing.TB, prefix string) connector.Traces {
	tb.Helper()
	conn, _ := matchingConnector(tb, prefix, false)
	return conn
}

// newMatchingConnectorWithStarts is newMatchingConnector with the logs →
// metrics side that takes the start events, started.
func newMatchingConnectorWithStarts(tb testing.TB, prefix string) (connector.Traces, connector.Logs) {
	tb.Helper()
	return matchingConnector(tb, prefix, true)
}

// matchingConnector makes newMatchingConnector's connector, and its logs
// side when starts is set.
func matchingConnector(tb testing.TB, prefix string, starts bool) (connector.Traces, connector.Logs) {
	cf := deltaqconnector.NewFactory()
	ccfg := cf.CreateDefaultConfig().(*deltaqconnector.Config)
	ccfg.Interval, ccfg.ProbeIdleTimeout = time.Hour, time.Hour
	ccfg.Probes = make(map[string]analysis.ProbeConfig, names)
	ccfg.Matched = make(map[string]deltaqconnector.MatchedProbe, names)
	for i := range names {
		name := fmt.Sprintf("%s-%d", prefix, i)
		ccfg.Probes[name] = analysis.ProbeConfig{DMax: time.Second, Bins: 1000}
		ccfg.Matched[name] = deltaqconnector.MatchedProbe{Match: &deltaqprocessor.MatchConfig{SpanName: name}}
	}
	if err := ccfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	set := connectortest.NewNopSettings(cf.Type())
	conn, err := cf.CreateTracesToMetrics(context.Background(), set, ccfg, consumertest.NewNop())
	if err != nil {
		tb.Fatal(err)
	}
	var logs connector.Logs
	if starts {
		if logs, err = cf.CreateLogsToMetrics(context.Background(), set, ccfg, consumertest.NewNop()); err != nil {
			tb.Fatal(err)
		}
		start(tb, logs)
	}
	start(tb, conn)
	return conn, logs
}

// start starts c, and shuts it down when the test ends.
func start(tb testing.TB, c component.Component) {
	tb.Helper()
	if err := c.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Shutdown(context.Background()) })
}
