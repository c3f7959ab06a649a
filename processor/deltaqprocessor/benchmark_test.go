// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// The benchmarks run batches of 1000 spans (10 resources × 100 spans, each
// span with three attributes) through the processor as the collector calls
// it (processorhelper included), with 10 probes. Besides ns/op and allocs/op
// (per batch) they report ns/span and allocs/span.

const (
	benchBatchSize = 1000
	benchProbes    = 10
)

func benchConfig(regexps int) *Config {
	cfg := createDefaultConfig().(*Config)
	for i := range benchProbes {
		pc := ProbeConfig{Name: fmt.Sprintf("probe-%d", i), DMax: 100 * time.Millisecond, Bins: 100}
		if i < regexps {
			pc.Match.SpanNameRegexp = fmt.Sprintf(`^probe-%d$`, i)
		}
		cfg.Probes = append(cfg.Probes, pc)
	}
	return cfg
}

// benchBatch returns 1000 spans of which matched (spread evenly) have a probe
// name; the others have one of 50 other names.
func benchBatch(matched int) ptrace.Traces {
	td := ptrace.NewTraces()
	n := 0
	for r := range 10 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("service-%d", r))
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for range 100 {
			s := spans.AppendEmpty()
			if matched > 0 && n%(benchBatchSize/matched) == 0 {
				s.SetName(fmt.Sprintf("probe-%d", n%benchProbes))
			} else {
				s.SetName(fmt.Sprintf("GET /other/%d", n%50))
			}
			tid, sid := wideIDs(uint32(n))
			s.SetTraceID(tid)
			s.SetSpanID(sid)
			s.SetKind(ptrace.SpanKindServer)
			start := base.Add(time.Duration(n) * time.Microsecond)
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(n%200) * time.Millisecond)))
			s.Attributes().PutStr("http.request.method", "GET")
			s.Attributes().PutInt("http.response.status_code", 200)
			s.Attributes().PutStr("url.path", "/other")
			n++
		}
	}
	return td
}

type benchProcessor struct {
	traces processor.Traces
	logs   processor.Logs // nil when the processor is in no logs pipeline
}

// newBenchProcessor returns the processor in a traces pipeline and, when
// logs is true, in a logs pipeline too (start events in use).
func newBenchProcessor(b *testing.B, cfg *Config, logs bool) benchProcessor {
	b.Helper()
	pf := newFactory(newFakeClock(), collectorstate.New()).processorFactory() // the timer never ticks
	set := processortest.NewNopSettings(metadata.Type)
	tp, err := pf.CreateTraces(context.Background(), set, cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	var lp processor.Logs
	if logs {
		if lp, err = pf.CreateLogs(context.Background(), set, cfg, consumertest.NewNop()); err != nil {
			b.Fatal(err)
		}
	}
	if err := tp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return benchProcessor{traces: tp, logs: lp}
}

// runTraces times ConsumeTraces on td. After each batch, with the timer
// stopped, the attributes of its matched spans are rebuilt from scratch (an
// exact-size attribute list, as the receiver decodes it), so that every
// iteration pays the full cost of adding the outcome attributes; then next,
// when not nil, readies the following iteration.
func runTraces(b *testing.B, bp benchProcessor, td ptrace.Traces, next func(iter int)) {
	ctx := context.Background()
	var matched []ptrace.Span
	var orig []map[string]any
	spans, _ := allSpans([]ptrace.Traces{td})
	for _, s := range spans {
		if s.Name()[0] == 'p' {
			matched = append(matched, s)
			orig = append(orig, s.Attributes().AsRaw())
		}
	}
	reset := func(iter int) {
		for i, s := range matched {
			if err := s.Attributes().FromRaw(orig[i]); err != nil {
				b.Fatal(err)
			}
		}
		if next != nil {
			next(iter)
		}
	}
	if next != nil {
		next(-1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if err := bp.traces.ConsumeTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
		if len(matched) > 0 || next != nil {
			b.StopTimer()
			reset(i)
			b.StartTimer()
		}
	}
	b.StopTimer()
	n := float64(td.SpanCount())
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(b.N)*n), "ns/span")

	// Allocations per span, counted over a few more batches.
	const rounds = 16
	var ms runtime.MemStats
	var mallocs uint64
	for i := range rounds {
		reset(b.N + i)
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		_ = bp.traces.ConsumeTraces(ctx, td)
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - m0
	}
	b.ReportMetric(float64(mallocs)/(rounds*n), "allocs/span")
}

// BenchmarkProcessorTraces measures the mapping path of a processor in a
// traces pipeline only (no start events): 10 exact-name probes, 0, 10 % or
// all of the spans matched.
func BenchmarkProcessorTraces(b *testing.B) {
	for _, matched := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("matched=%d", matched), func(b *testing.B) {
			runTraces(b, newBenchProcessor(b, benchConfig(0), false), benchBatch(matched), nil)
		})
	}
	// Two of the ten probes match by regular expression instead: every span
	// that no exact name matches is tried against both expressions.
	b.Run("matched=100/regexps=2", func(b *testing.B) {
		runTraces(b, newBenchProcessor(b, benchConfig(2), false), benchBatch(100), nil)
	})
	// Every probe has dmax: auto: each matched span also adds to its
	// probe's tail sketch.
	b.Run("matched=1000/auto", func(b *testing.B) {
		cfg := benchConfig(0)
		for i := range cfg.Probes {
			cfg.Probes[i].DMax, cfg.Probes[i].DMaxAuto = 0, true
		}
		runTraces(b, newBenchProcessor(b, cfg, false), benchBatch(1000), nil)
	})
}

// BenchmarkProcessorTracesStartEvents measures the mapping path of a
// processor in a traces and a logs pipeline, while 10,000 instances that
// never end are tracked. Every matched span has trace ids of its own in
// every iteration, and a start event (sent untimed):
//
//   - matched=N: the start event arrives before the batch, so every matched
//     span looks up and removes a tracked instance;
//   - matched=N/spans_first: the start event arrives after the batch, so
//     every matched span finds no instance and is remembered as ended (once
//     max_ended, 100,000, is reached, each forgets the oldest), and its start
//     event is then recognised.
func BenchmarkProcessorTracesStartEvents(b *testing.B) {
	for _, spansFirst := range []bool{false, true} {
		for _, matched := range []int{100, 1000} {
			name := fmt.Sprintf("matched=%d", matched)
			if spansFirst {
				name += "/spans_first"
			}
			b.Run(name, func(b *testing.B) {
				bp := newBenchProcessor(b, benchConfig(0), true)
				ctx := context.Background()
				ids := make([]uint32, 10_000)
				for i := range ids {
					ids[i] = 1_000_000 + uint32(i)
				}
				if err := bp.logs.ConsumeLogs(ctx, startEvents("probe-0", base, ids...)); err != nil {
					b.Fatal(err)
				}
				td := benchBatch(matched)
				spans, _ := allSpans([]ptrace.Traces{td})
				runTraces(b, bp, td, func(iter int) {
					if !spansFirst {
						renumberMatched(spans, iter)
						announceMatched(b, bp, spans)
						return
					}
					if iter >= 0 {
						announceMatched(b, bp, spans)
					}
					renumberMatched(spans, iter)
				})
			})
		}
	}
}

// renumberMatched gives the matched spans trace ids of their own for
// iteration iter.
func renumberMatched(spans []ptrace.Span, iter int) {
	for _, s := range spans {
		if s.Name()[0] == 'p' {
			tid := s.TraceID()
			binary.BigEndian.PutUint32(tid[8:], uint32(iter+2))
			s.SetTraceID(tid)
		}
	}
}

// announceMatched sends a start event for every matched span.
func announceMatched(b *testing.B, bp benchProcessor, spans []ptrace.Span) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, s := range spans {
		if s.Name()[0] != 'p' {
			continue
		}
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTraceID(s.TraceID())
		lr.SetSpanID(s.SpanID())
		lr.SetTimestamp(s.StartTimestamp())
		lr.Attributes().PutStr(contract.AttrProbe, s.Name())
	}
	if err := bp.logs.ConsumeLogs(context.Background(), ld); err != nil && !errors.Is(err, processorhelper.ErrSkipProcessingData) {
		b.Fatal(err)
	}
}

// BenchmarkProcessorStartEvents measures the logs path: batches of 1000
// start events, each then ended (untimed) so that the table stays at its
// working size; single, one record an instance, and batch, the 1000 in one
// deltaq.span.starts record.
func BenchmarkProcessorStartEvents(b *testing.B) {
	ids := make([]uint32, benchBatchSize)
	for i := range ids {
		ids[i] = uint32(i)
	}
	batch := plog.NewLogs()
	lr := batch.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetEventName(contract.StartsEventName)
	lr.Attributes().PutStr(contract.AttrProbe, "probe-0")
	var entries []byte
	for _, n := range ids {
		tid, sid := wideIDs(n)
		entries = contract.AppendStart(entries, tid, sid, uint64(base.UnixNano()))
	}
	lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries)
	b.Run("single", func(b *testing.B) { benchStartEvents(b, startEvents("probe-0", base, ids...), ids) })
	b.Run("batch", func(b *testing.B) { benchStartEvents(b, batch, ids) })
}

// benchStartEvents is BenchmarkProcessorStartEvents with the start events
// src of the instances ids.
func benchStartEvents(b *testing.B, src plog.Logs, ids []uint32) {
	bp := newBenchProcessor(b, benchConfig(0), true)
	ctx := context.Background()
	ends := spansOf("probe-0", base, time.Millisecond, ids...)
	var ms runtime.MemStats
	var mallocs uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		ld := plog.NewLogs()
		src.CopyTo(ld)
		runtime.ReadMemStats(&ms)
		m0 := ms.Mallocs
		b.StartTimer()
		if err := bp.logs.ConsumeLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		mallocs += ms.Mallocs - m0
		td := ptrace.NewTraces()
		ends.CopyTo(td)
		_ = bp.traces.ConsumeTraces(ctx, td)
		b.StartTimer()
	}
	events := float64(b.N) * benchBatchSize
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(mallocs)/events, "allocs/event")
}

// TestUnmatchedSpansDoNotAllocate pins the property the benchmarks measure:
// mapping a batch whose spans match no probe allocates nothing, with exact
// names, with regular expressions (once their names are cached), and with
// start events in flight.
func TestUnmatchedSpansDoNotAllocate(t *testing.T) {
	for _, regexps := range []int{0, 2} {
		p, err := newProcessor(processortest.NewNopSettings(metadata.Type), benchConfig(regexps), newFakeClock(), collectorstate.New())
		if err != nil {
			t.Fatal(err)
		}
		now := int64(0)
		p.startEvent(startEvents("probe-1", base, 1).ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0), &[]resourceInfo{newResourceInfo(pcommon.NewResource())}[0], &now)
		td := benchBatch(0)
		_, _ = p.processTraces(context.Background(), td) // fills the name cache
		allocs := testing.AllocsPerRun(20, func() {
			_, _ = p.processTraces(context.Background(), td)
		})
		if allocs != 0 {
			t.Errorf("regexps=%d: %v allocations per batch of unmatched spans, want 0", regexps, allocs)
		}
		p.telemetry.Shutdown()
		p.release()
	}
}

// BenchmarkPdataOutcomeAttributes is the floor of the matched-span cost, and
// what each attribute of the contract adds to it: pdata alone growing 1000
// three-attribute lists (restored the same way as in runTraces) and adding
// the probe (what a success carries, most matched spans); the probe and the
// outcome (a failure); the four attributes of a span that carries the layout
// (a timeout).
func BenchmarkPdataOutcomeAttributes(b *testing.B) {
	puts := []struct {
		name string
		n    int
		put  func(pcommon.Map)
	}{
		{"probe", 1, func(a pcommon.Map) { a.PutStr(contract.AttrProbe, "probe-0") }},
		{"probe+outcome", 2, func(a pcommon.Map) {
			a.PutStr(contract.AttrProbe, "probe-0")
			a.PutStr(contract.AttrOutcome, contract.Failure)
		}},
		{"probe+outcome+layout", 4, func(a pcommon.Map) {
			a.PutStr(contract.AttrProbe, "probe-0")
			a.PutStr(contract.AttrOutcome, contract.Timeout)
			a.PutInt(contract.AttrDMaxNs, 100_000_000)
			a.PutInt(contract.AttrBins, 100)
		}},
	}
	for _, pc := range puts {
		b.Run(pc.name, func(b *testing.B) {
			td := benchBatch(0)
			spans, _ := allSpans([]ptrace.Traces{td})
			orig := spans[0].Attributes().AsRaw()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for _, s := range spans {
					a := s.Attributes()
					a.EnsureCapacity(a.Len() + pc.n)
					pc.put(a)
				}
				b.StopTimer()
				for _, s := range spans {
					if err := s.Attributes().FromRaw(orig); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/span")
		})
	}
}
