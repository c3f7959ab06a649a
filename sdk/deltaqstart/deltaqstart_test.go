// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/log/embedded"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// recorder is an SDK log processor that keeps a copy of every record.
type recorder struct {
	mu      sync.Mutex
	records []sdklog.Record
}

func (*recorder) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*recorder) Shutdown(context.Context) error                         { return nil }
func (*recorder) ForceFlush(context.Context) error                       { return nil }

func (r *recorder) OnEmit(_ context.Context, rec *sdklog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}

func (r *recorder) all() []sdklog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdklog.Record(nil), r.records...)
}

// setup returns a tracer whose provider runs a SpanProcessor made with
// opts, emitting through an SDK LoggerProvider into the returned recorder.
// Both providers are shut down when the test ends.
func setup(t *testing.T, sampler sdktrace.Sampler, opts ...Option) (trace.Tracer, *SpanProcessor, *recorder) {
	t.Helper()
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	p, err := NewSpanProcessor(lp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(p))
	t.Cleanup(func() {
		ctx := context.Background()
		if err := tp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := lp.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return tp.Tracer("test"), p, rec
}

// recordOnly samples no span but keeps every span recording: the SDK then
// calls OnStart for spans that are never exported.
type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

// wantEvent is a start event the test expects for a span.
type wantEvent struct {
	span  trace.Span
	start time.Time
	probe string
	name  string
}

// forms are the two forms of start events, for the tests that run in both.
var forms = []struct {
	name string
	opts []Option
}{{"batch", nil}, {"per_span", []Option{WithRecordPerSpan()}}}

// decoded is a start as read back from the records, of either form.
type decoded struct {
	traceID trace.TraceID
	spanID  trace.SpanID
	start   time.Time
	probe   string
	// name and traceState are the record's deltaq.span.name and
	// deltaq.tracestate (record per span only); threshold is the entry's
	// deltaq.starts.thresholds value (batch only).
	name, traceState string
	threshold        uint64
	// record is the index of the record it came in.
	record int
}

// attrs returns a record's attributes by key, each as its type and value.
func attrs(r *sdklog.Record) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		m[kv.Key] = kv.Value
		return true
	})
	return m
}

// decode reads the starts out of records of either form, checking every
// field the contract gives each form: a batch record carries exactly
// deltaq.probe (a non-empty string), deltaq.starts (bytes, 1 to maxEntries
// entries of 32) and, only when some entry has a threshold, exactly 8
// bytes of deltaq.starts.thresholds per entry; it has no ids of its own
// and its timestamp is its observed timestamp, in [from, to] (the drain's
// time), unless from is zero. A record per span carries its span's ids,
// the span's start as both timestamps, deltaq.probe, deltaq.span.name and
// optionally deltaq.tracestate. Every record has the package's scope.
func decode(t *testing.T, recs []sdklog.Record, from, to time.Time) []decoded {
	t.Helper()
	var out []decoded
	for ri := range recs {
		r := &recs[ri]
		if r.InstrumentationScope().Name != ScopeName {
			t.Errorf("record %d: scope %q, want %q", ri, r.InstrumentationScope().Name, ScopeName)
		}
		a := attrs(r)
		switch r.EventName() {
		case startsEventName:
			if r.TraceID().IsValid() || r.SpanID().IsValid() {
				t.Errorf("record %d: a batch record with ids %s/%s, want none", ri, r.TraceID(), r.SpanID())
			}
			if !r.Timestamp().Equal(r.ObservedTimestamp()) || !from.IsZero() &&
				(r.Timestamp().Before(from) || r.Timestamp().After(to)) {
				t.Errorf("record %d: timestamp %v, observed %v, want the drain's time, in [%v, %v]", ri,
					r.Timestamp(), r.ObservedTimestamp(), from, to)
			}
			probe, entries, thresholds := a[attrProbe], a[attrStarts], a[attrStartsThresholds]
			n := len(entries.AsByteSlice()) / entryBytes
			_, hasTh := a[attrStartsThresholds]
			switch {
			case probe.Type() != attribute.STRING || probe.AsString() == "":
				t.Errorf("record %d: %s is %v, want a non-empty string", ri, attrProbe, probe)
			case entries.Type() != attribute.BYTESLICE || n == 0 || n > maxEntries ||
				len(entries.AsByteSlice()) != n*entryBytes:
				t.Errorf("record %d: %s is %s of %d bytes, want 1 to %d entries of %d bytes", ri, attrStarts,
					entries.Type(), len(entries.AsByteSlice()), maxEntries, entryBytes)
			case hasTh && (thresholds.Type() != attribute.BYTESLICE || len(thresholds.AsByteSlice()) != n*thresholdBytes):
				t.Errorf("record %d: %s is %s of %d bytes, want %d", ri, attrStartsThresholds, thresholds.Type(),
					len(thresholds.AsByteSlice()), n*thresholdBytes)
			case len(a) != 2 && !(hasTh && len(a) == 3):
				t.Errorf("record %d: attributes %v, want %s, %s and optionally %s", ri, a, attrProbe, attrStarts,
					attrStartsThresholds)
			default:
				b, th := entries.AsByteSlice(), thresholds.AsByteSlice()
				some := false
				for i := range n {
					e := b[i*entryBytes:]
					d := decoded{probe: probe.AsString(), record: ri,
						start: time.Unix(0, int64(binary.LittleEndian.Uint64(e[24:32])))}
					copy(d.traceID[:], e[:16])
					copy(d.spanID[:], e[16:24])
					if hasTh {
						d.threshold = binary.LittleEndian.Uint64(th[i*thresholdBytes:])
						some = some || d.threshold != 0
					}
					out = append(out, d)
				}
				if hasTh && !some {
					t.Errorf("record %d: %s with no threshold, want it left out", ri, attrStartsThresholds)
				}
			}
		case startEventName:
			probe, name, ts := a[attrProbe], a[attrSpanName], a[attrTraceState]
			_, hasTS := a[attrTraceState]
			if probe.Type() != attribute.STRING || name.Type() != attribute.STRING ||
				hasTS && ts.Type() != attribute.STRING || len(a) != 2 && !(hasTS && len(a) == 3) {
				t.Errorf("record %d: attributes %v, want the strings %s, %s and optionally %s", ri, a, attrProbe,
					attrSpanName, attrTraceState)
			}
			if !r.Timestamp().Equal(r.ObservedTimestamp()) {
				t.Errorf("record %d: timestamp %v, observed %v, want both the span's start", ri, r.Timestamp(),
					r.ObservedTimestamp())
			}
			out = append(out, decoded{traceID: r.TraceID(), spanID: r.SpanID(), start: r.Timestamp(),
				probe: probe.AsString(), name: name.AsString(), traceState: ts.AsString(), record: ri})
		default:
			t.Errorf("record %d: EventName %q, want %q or %q", ri, r.EventName(), startsEventName, startEventName)
		}
	}
	return out
}

// checkEvents checks that the records hold exactly the start events of
// want, each with every field of the contract: in that order for records
// per span, in that order within each probe's records for the batch form
// (the form of the records; decode checks the rest of each record).
func checkEvents(t *testing.T, recs []sdklog.Record, want []wantEvent) {
	t.Helper()
	got := decode(t, recs, time.Time{}, time.Time{})
	if len(got) != len(want) {
		t.Fatalf("%d start events, want %d", len(got), len(want))
	}
	// Both forms keep queuing order within a probe; the batch form groups
	// the probes.
	byProbe := map[string][]decoded{}
	for _, d := range got {
		byProbe[d.probe] = append(byProbe[d.probe], d)
	}
	perSpan := len(recs) > 0 && recs[0].EventName() == startEventName
	for i, w := range want {
		var d decoded
		switch {
		case perSpan: // in want's order
			if d = got[i]; d.name != w.name {
				t.Errorf("start event %d: span name %q, want %q", i, d.name, w.name)
			}
		case len(byProbe[w.probe]) > 0:
			d, byProbe[w.probe] = byProbe[w.probe][0], byProbe[w.probe][1:]
		}
		sc := w.span.SpanContext()
		if d.probe != w.probe || d.traceID != sc.TraceID() || d.spanID != sc.SpanID() || !d.start.Equal(w.start) {
			t.Errorf("start event %d: probe %q, ids %s/%s, start %v; want %q, the span's %s/%s and %v", i, d.probe,
				d.traceID, d.spanID, d.start, w.probe, sc.TraceID(), sc.SpanID(), w.start)
		}
	}
}

// TestDefaultSelector starts spans of every kind, with and without a
// deltaq.probe attribute, and checks that exactly the server spans and the
// spans carrying a non-empty string deltaq.probe get a start event, with the
// right probe, ids, timestamp and span name.
func TestDefaultSelector(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), f.opts...)
			t0 := time.Date(2026, 11, 24, 5, 0, 0, 123456789, time.UTC)
			start := func(name string, i int, opts ...trace.SpanStartOption) (trace.Span, time.Time) {
				at := t0.Add(time.Duration(i) * time.Millisecond)
				_, s := tr.Start(context.Background(), name, append(opts, trace.WithTimestamp(at))...)
				return s, at
			}
			server, serverAt := start("GET /items", 0, trace.WithSpanKind(trace.SpanKindServer))
			start("db.query", 1, trace.WithSpanKind(trace.SpanKindClient))
			start("work", 2)
			tagged, taggedAt := start("work", 3, trace.WithAttributes(attribute.String("k", "v"),
				attribute.String(attrProbe, "checkout")))
			start("work", 4, trace.WithAttributes(attribute.String(attrProbe, "")))
			start("work", 5, trace.WithAttributes(attribute.Int(attrProbe, 7)))
			start("queue", 6, trace.WithSpanKind(trace.SpanKindConsumer))
			taggedServer, taggedServerAt := start("POST /pay", 7, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String(attrProbe, "pay")))
			// A server span without a name names no probe.
			start("", 8, trace.WithSpanKind(trace.SpanKindServer))

			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), []wantEvent{
				{server, serverAt, "GET /items", "GET /items"},
				{tagged, taggedAt, "checkout", "work"},
				{taggedServer, taggedServerAt, "pay", "POST /pay"},
			})
			if p.Emitted() != 3 || p.Dropped() != 0 {
				t.Errorf("Emitted %d, Dropped %d; want 3, 0", p.Emitted(), p.Dropped())
			}
		})
	}
}

// TestLongProbes: a span whose probe would be longer than 256 bytes, as
// sent (invalid UTF-8 replaced), gets no start event and is not counted: no
// probe has such a name (the collector's components refuse one in their
// configurations, and a start event naming one), and it was carried to the
// collector, in every record, to be refused. A probe of 256 bytes is
// announced.
func TestLongProbes(t *testing.T) {
	longest := strings.Repeat("p", maxProbeLength)
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
				if probe, ok := strings.CutPrefix(s.Name(), "sel:"); ok {
					return probe, true
				}
				return DefaultSelector(s)
			}
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSelector(sel))...)
			server := trace.WithSpanKind(trace.SpanKindServer)
			_, ok := tr.Start(context.Background(), longest, server)
			tr.Start(context.Background(), longest+"x", server)
			tr.Start(context.Background(), "GET /x", server,
				trace.WithAttributes(attribute.String(attrProbe, longest+"x")))
			// 256 bytes, 258 as sent.
			tr.Start(context.Background(), "sel:"+longest[1:]+"\xff")
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), []wantEvent{{ok, ok.(sdktrace.ReadOnlySpan).StartTime(), longest, longest}})
			checkCounts(t, p, 1, 0, 0)
		})
	}
}

// TestProbeIsTheNameAtStart: a server span renamed after it starts, as an
// HTTP handler renames its span after the route once the router has run,
// keeps the probe of the name it started with (README, "Which spans"): the
// start event is queued at the start, from the span as it was then.
func TestProbeIsTheNameAtStart(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), f.opts...)
			_, s := tr.Start(context.Background(), "GET", trace.WithSpanKind(trace.SpanKindServer))
			s.SetName("GET /items/{id}")
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), []wantEvent{{s, s.(sdktrace.ReadOnlySpan).StartTime(), "GET", "GET"}})
		})
	}
}

// minSeverity is an SDK log processor that passes on to next the records
// of severity min or above and discards the others, the rule of contrib's
// minsev processor ("records with severity greater than or equal to a
// minimum"; INFO when none is given).
type minSeverity struct {
	sdklog.Processor
	min log.Severity
}

func (m minSeverity) OnEmit(ctx context.Context, r *sdklog.Record) error {
	if r.Severity() < m.min {
		return nil
	}
	return m.Processor.OnEmit(ctx, r)
}

// TestSeverityFilter: the start events pass a LoggerProvider's filter that
// keeps the records from INFO up, a common setting for an application's own
// logs: with no severity (0, unspecified), every one was discarded, and
// Emitted counted them all the same.
func TestSeverityFilter(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			rec := &recorder{}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(minSeverity{rec, log.SeverityInfo}))
			defer lp.Shutdown(context.Background())
			p, err := NewSpanProcessor(lp, f.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())
			startServerSpans(t, p, 2)
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range rec.all() {
				n += startsIn(&r)
			}
			if n != 2 || p.Emitted() != 2 {
				t.Errorf("%d starts past the filter, Emitted %d; want 2, 2", n, p.Emitted())
			}
		})
	}
}

// TestUnsampledSpans checks that a span that is recording but not sampled,
// which the SDK never exports, gets no start event: its instance would
// time out for want of a span.
func TestUnsampledSpans(t *testing.T) {
	tr, p, rec := setup(t, recordOnly{})
	_, s := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
	if !s.IsRecording() || s.SpanContext().IsSampled() {
		t.Fatalf("span recording %v, sampled %v; want recording and not sampled", s.IsRecording(),
			s.SpanContext().IsSampled())
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.all()); n != 0 || p.Emitted() != 0 {
		t.Errorf("%d records, Emitted %d; want none", n, p.Emitted())
	}
}

// TestWithSpanNames checks that only the spans of the given names are
// selected, of any kind, with their names as probes.
func TestWithSpanNames(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSpanNames("worker_1", "worker_2"))...)
			var want []wantEvent
			for i, name := range []string{"worker_1", "GET /items", "worker_2", "worker_3", "worker_1"} {
				opts := []trace.SpanStartOption{trace.WithAttributes(attribute.String(attrProbe, "other"))}
				if i == 1 {
					opts = append(opts, trace.WithSpanKind(trace.SpanKindServer))
				}
				_, s := tr.Start(context.Background(), name, opts...)
				if name == "worker_1" || name == "worker_2" {
					want = append(want, wantEvent{s, s.(sdktrace.ReadOnlySpan).StartTime(), name, name})
				}
			}
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), want)
		})
	}
}

// TestWithSelector checks that a selector of the application's chooses the
// spans and names their probes, and that a span it selects with an empty
// probe has no start event: no probe has an empty name, and the collector
// refuses a batch record without one whole (docs/contract/start-event.json).
func TestWithSelector(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
				name, ok := strings.CutPrefix(s.Name(), "probe:")
				return name, ok
			}
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSelector(sel))...)
			_, a := tr.Start(context.Background(), "probe:a")
			tr.Start(context.Background(), "b", trace.WithSpanKind(trace.SpanKindServer))
			tr.Start(context.Background(), "probe:")
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), []wantEvent{{a, a.(sdktrace.ReadOnlySpan).StartTime(), "a", "probe:a"}})
			checkCounts(t, p, 1, 0, 0)
		})
	}
}

// TestStartRacingShutdown: a span whose OnStart passed the stopped check
// before Shutdown and queues its event after the final drain is counted as
// dropped; it was neither emitted nor counted (Emitted + Dropped fell short
// of the spans selected).
func TestStartRacingShutdown(t *testing.T) {
	entered, proceed := make(chan struct{}), make(chan struct{})
	sel := func(sdktrace.ReadOnlySpan) (string, bool) {
		close(entered)
		<-proceed
		return "a", true
	}
	lp := sdklog.NewLoggerProvider()
	p, err := NewSpanProcessor(lp, WithSelector(sel))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p))
	started := make(chan struct{})
	go func() {
		tp.Tracer("test").Start(context.Background(), "a")
		close(started)
	}()
	<-entered
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	<-started
	if p.Emitted()+p.Dropped() != 1 {
		t.Errorf("Emitted %d + Dropped %d, want the one span selected", p.Emitted(), p.Dropped())
	}
	if err := lp.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestInvalidUTF8Names: a probe or span name with invalid UTF-8 is sent
// with U+FFFD in place of the bad bytes. OTLP strings must be UTF-8: one
// such name made the exporter refuse the whole request ("string field
// contains invalid UTF-8"), every probe's start events with it.
func TestInvalidUTF8Names(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) { return s.Name(), true }
			tr, p, rec := setup(t, sdktrace.AlwaysSample(), append(f.opts, WithSelector(sel))...)
			_, a := tr.Start(context.Background(), "bad\xffname")
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkEvents(t, rec.all(), []wantEvent{{a, a.(sdktrace.ReadOnlySpan).StartTime(), "bad\uFFFDname", "bad\uFFFDname"}})
		})
	}
}

// TestOptionErrors checks that every bad argument is refused, naming it.
func TestOptionErrors(t *testing.T) {
	lp := sdklog.NewLoggerProvider()
	for _, tc := range []struct {
		lp   log.LoggerProvider
		opt  Option
		want string
	}{
		{nil, nil, "deltaqstart: nil LoggerProvider"},
		// A typed nil panicked at the first use.
		{(*sdklog.LoggerProvider)(nil), nil, "deltaqstart: nil LoggerProvider"},
		{lp, WithQueueSize(0), "deltaqstart: WithQueueSize: must be in [1, 262144], got 0"},
		{lp, WithQueueSize(1<<18 + 1), "deltaqstart: WithQueueSize: must be in [1, 262144], got 262145"},
		{lp, WithSpanNames(), "deltaqstart: WithSpanNames: no name given"},
		{lp, WithSpanNames("a", ""), "deltaqstart: WithSpanNames: an empty name"},
		{lp, WithSpanNames(strings.Repeat("a", 257)),
			"deltaqstart: WithSpanNames: a name of 257 bytes as sent (each invalid UTF-8 byte as U+FFFD's three), longer than a probe's (at most 256)"},
		// 219 bytes, sent as 257 (the contract's probe_repair): it was
		// taken, and no span of that name was ever announced.
		{lp, WithSpanNames(strings.Repeat("x", 200) + strings.Repeat("\x80", 19)),
			"deltaqstart: WithSpanNames: a name of 257 bytes as sent (each invalid UTF-8 byte as U+FFFD's three), longer than a probe's (at most 256)"},
		{lp, WithSelector(nil), "deltaqstart: WithSelector: nil selector"},
		{lp, WithDrainInterval(time.Millisecond - 1), "deltaqstart: WithDrainInterval: must be in [1ms, 1s], got 999.999µs"},
		{lp, WithDrainInterval(2 * time.Second), "deltaqstart: WithDrainInterval: must be in [1ms, 1s], got 2s"},
	} {
		var opts []Option
		if tc.opt != nil {
			opts = append(opts, tc.opt)
		}
		p, err := NewSpanProcessor(tc.lp, opts...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got %v, %v; want error %q", p, err, tc.want)
		}
	}
}

// blockingProvider hands out a blockingLogger.
type blockingProvider struct {
	embedded.LoggerProvider
	*blockingLogger
}

// blockingLogger's Emit signals entered and then waits until release is
// closed: a logger that cannot keep up.
type blockingLogger struct {
	embedded.Logger
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	emitted []log.Record
}

func newBlockingProvider() blockingProvider {
	return blockingProvider{blockingLogger: &blockingLogger{entered: make(chan struct{}, 1), release: make(chan struct{})}}
}

func (b blockingProvider) Logger(string, ...log.LoggerOption) log.Logger { return b.blockingLogger }

func (*blockingLogger) Enabled(context.Context, log.EnabledParameters) bool { return true }

func (b *blockingLogger) Emit(_ context.Context, r log.Record) {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	b.mu.Lock()
	b.emitted = append(b.emitted, r)
	b.mu.Unlock()
}

// starts returns the number of starts in the records emitted.
func (b *blockingLogger) starts() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for i := range b.emitted {
		n += startsIn(&b.emitted[i])
	}
	return n
}

// startRecord is a log record of the API (log.Record) or of the SDK
// (sdklog.Record).
type startRecord interface {
	EventName() string
	WalkAttributes(func(attribute.KeyValue) bool)
}

// startsIn returns the number of starts a record announces: the entries of
// a batch record, 1 for a record per span, 0 for another record.
func startsIn(r startRecord) int {
	switch r.EventName() {
	case startEventName:
		return 1
	case startsEventName:
		n := 0
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			if kv.Key == attrStarts {
				n = len(kv.Value.AsByteSlice()) / entryBytes
			}
			return true
		})
		return n
	}
	return 0
}

// startServerSpans starts n sampled server spans through p in a goroutine
// and fails the test if that takes 10 s: OnStart must never wait for the
// logger.
func startServerSpans(t *testing.T, p *SpanProcessor, n int) {
	t.Helper()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p)).Tracer("test")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			tr.Start(context.Background(), "op", trace.WithSpanKind(trace.SpanKindServer))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("starting %d spans blocked behind a blocked logger", n)
	}
}

// TestQueueFull blocks the logger on the first event, fills the queue of 4,
// and checks that the spans started beyond it are dropped and counted
// without blocking; once the logger is released, exactly the first event
// and the 4 queued are emitted.
func TestQueueFull(t *testing.T) {
	lp := newBlockingProvider()
	p, err := NewSpanProcessor(lp, WithQueueSize(4))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	<-lp.entered // the goroutine holds the first event, in Emit
	startServerSpans(t, p, 4+10)
	if p.Dropped() != 10 || p.Emitted() != 0 {
		t.Errorf("with the logger blocked: Dropped %d, Emitted %d; want 10, 0", p.Dropped(), p.Emitted())
	}
	close(lp.release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Dropped() != 10 || p.Emitted() != 5 || lp.starts() != 5 {
		t.Errorf("after Shutdown: Dropped %d, Emitted %d, starts in the records %d; want 10, 5, 5", p.Dropped(),
			p.Emitted(), lp.starts())
	}
}

// TestShutdownDrains queues 50 events behind a blocked logger, checks that
// Shutdown waits for them and gives up with ctx's error when ctx ends
// first; the 50 not handed to the logger by then are dropped and counted
// once it is released (the application shuts the LoggerProvider down once
// Shutdown returns: TestShutdownDeadlineDrops), a later Shutdown waits for
// the goroutine, and spans started after Shutdown are ignored.
func TestShutdownDrains(t *testing.T) {
	lp := newBlockingProvider()
	p, err := NewSpanProcessor(lp, WithQueueSize(100))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	<-lp.entered
	startServerSpans(t, p, 50)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with the logger blocked: %v, want %v", err, context.DeadlineExceeded)
	}
	close(lp.release)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Emitted() != 1 || lp.starts() != 1 || p.Dropped() != 50 {
		t.Errorf("after Shutdown: Emitted %d, starts in the records %d, Dropped %d; want 1, 1, 50", p.Emitted(),
			lp.starts(), p.Dropped())
	}
	startServerSpans(t, p, 3)
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush after Shutdown: %v", err)
	}
	if p.Emitted() != 1 || p.Dropped() != 50 || p.queued() != 0 {
		t.Errorf("spans started after Shutdown: Emitted %d, Dropped %d, queued %d; want 1, 50, 0", p.Emitted(),
			p.Dropped(), p.queued())
	}
}

// exporter is an SDK log exporter that counts the starts in the records it
// exported.
type exporter struct {
	mu sync.Mutex
	n  int
}

func (e *exporter) Export(_ context.Context, rs []sdklog.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := range rs {
		e.n += startsIn(&rs[i])
	}
	return nil
}
func (*exporter) Shutdown(context.Context) error   { return nil }
func (*exporter) ForceFlush(context.Context) error { return nil }

func (e *exporter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

// TestFlushReachesTheExporter checks that ForceFlush and Shutdown flush the
// LoggerProvider too: with a batch processor that would export only after
// an hour, the events are exported by the time they return.
func TestFlushReachesTheExporter(t *testing.T) {
	exp := &exporter{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp,
		sdklog.WithExportInterval(time.Hour))))
	defer lp.Shutdown(context.Background())
	p, err := NewSpanProcessor(lp)
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 3)
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 3 {
		t.Errorf("after ForceFlush the exporter has %d starts, want 3", exp.count())
	}
	startServerSpans(t, p, 2)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if exp.count() != 5 {
		t.Errorf("after Shutdown the exporter has %d starts, want 5", exp.count())
	}
}

// waitEmitted waits until p has emitted n events, and fails the test if that
// takes 10 s.
func waitEmitted(t *testing.T, p *SpanProcessor, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Emitted() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Emitted %d after 10 s, want %d", p.Emitted(), n)
		}
	}
}

// TestDrainWithoutFlush checks that queued events are emitted without a
// flush: every drain interval (here 5 ms), and, with a drain interval of an
// hour, as soon as the queue is half full (4 of 8) but not before.
func TestDrainWithoutFlush(t *testing.T) {
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	p, err := NewSpanProcessor(lp, WithDrainInterval(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startServerSpans(t, p, 1)
	waitEmitted(t, p, 1)
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	c := defaultConfig()
	c.queueSize, c.interval = 8, time.Hour
	p = newSpanProcessor(lp, c)
	go p.run()
	defer p.Shutdown(context.Background())
	startServerSpans(t, p, 3)
	time.Sleep(50 * time.Millisecond)
	if p.Emitted() != 0 {
		t.Fatalf("3 events of 8 queued, no tick: Emitted %d, want 0", p.Emitted())
	}
	startServerSpans(t, p, 1)
	waitEmitted(t, p, 4)
	n := 0
	for _, r := range rec.all() {
		n += startsIn(&r)
	}
	if n != 5 {
		t.Errorf("%d starts in the records, want 5", n)
	}
}

// quarterSampler keeps every span and records in its tracestate the
// threshold of one in four (ot=th:c), as a consistent probability sampler
// does for the spans it keeps.
type quarterSampler struct{}

func (quarterSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	ts, err := trace.SpanContextFromContext(p.ParentContext).TraceState().Insert("ot", "th:c")
	if err != nil {
		panic(err)
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts}
}
func (quarterSampler) Description() string { return "quarterSampler" }

// TestStartEventCarriesTheSamplingThreshold: the start event of a span
// whose tracestate has an OpenTelemetry entry carries its threshold, so that
// the collector counts the span's timeout with its adjusted count: in a
// batch record as the entry's deltaq.starts.thresholds value, in a record
// per span as the entry itself (deltaq.tracestate). A span without one
// gets neither attribute.
func TestStartEventCarriesTheSamplingThreshold(t *testing.T) {
	for _, f := range forms {
		for _, c := range []struct {
			sampler    sdktrace.Sampler
			traceState string
			threshold  uint64
		}{{quarterSampler{}, "ot=th:c", 0xc0 << 48}, {sdktrace.AlwaysSample(), "", 0}} {
			tr, p, rec := setup(t, c.sampler, f.opts...)
			_, s := tr.Start(context.Background(), "GET /items", trace.WithSpanKind(trace.SpanKindServer))
			if err := p.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.End() // after the drain: ended before, its start would be elided
			recs := rec.all()
			got := decode(t, recs, time.Time{}, time.Time{})
			if len(recs) != 1 || len(got) != 1 {
				t.Fatalf("%s, %s: %d records, %d starts; want 1, 1", f.name, c.sampler.Description(), len(recs),
					len(got))
			}
			_, hasTh := attrs(&recs[0])[attrStartsThresholds]
			if got[0].traceState != c.traceState && f.name == "per_span" ||
				(got[0].threshold != c.threshold || hasTh != (c.threshold != 0)) && f.name == "batch" {
				t.Errorf("%s, %s: deltaq.tracestate %q, threshold %#x (attribute %v); want %q, %#x", f.name,
					c.sampler.Description(), got[0].traceState, got[0].threshold, hasTh, c.traceState, c.threshold)
			}
		}
	}
}

// TestSDKSamplers: with the SDK's own samplers, a span that inherits a remote
// parent's tracestate (ParentBased) carries the parent's threshold (ot=th:c)
// on its start, and a root span sampled by TraceIDRatioBased, which writes
// no threshold, carries none (README, "Which spans"); a span the ratio drops
// has no start.
func TestSDKSamplers(t *testing.T) {
	ts, err := trace.ParseTraceState("congo=t61rcWkgMzE,ot=th:c")
	if err != nil {
		t.Fatal(err)
	}
	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, TraceState: ts}))
	tr, p, rec := setup(t, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.5)))
	server := trace.WithSpanKind(trace.SpanKindServer)
	_, child := tr.Start(remote, "child", server)
	// The ratio keeps about one root span in two: roots until one was
	// kept and one dropped, each kept one with a start of its own.
	want := map[trace.SpanID]uint64{child.SpanContext().SpanID(): 0xc0 << 48}
	for sampled, dropped := false, false; !sampled || !dropped; {
		_, s := tr.Start(context.Background(), "root", server)
		if s.SpanContext().IsSampled() {
			sampled, want[s.SpanContext().SpanID()] = true, 0
		} else {
			dropped = true
		}
	}
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := decode(t, rec.all(), time.Time{}, time.Time{})
	if len(got) != len(want) {
		t.Fatalf("%d starts, want %d: the child's and the sampled roots' alone: %+v", len(got), len(want), got)
	}
	for _, d := range got {
		if th, ok := want[d.spanID]; !ok || d.threshold != th {
			t.Errorf("start of %s with threshold %#x; want the child's with %#x, the sampled roots' with 0", d.spanID,
				d.threshold, uint64(0xc0<<48))
		}
	}
}

// traceStateSampler keeps every span and gives it the tracestate of its
// name's suffix after '|' (none when there is none).
type traceStateSampler struct{}

func (traceStateSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	var ts trace.TraceState
	if _, v, ok := strings.Cut(p.Name, "|"); ok {
		var err error
		if ts, err = trace.ParseTraceState(v); err != nil {
			panic(err)
		}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts}
}
func (traceStateSampler) Description() string { return "traceStateSampler" }

// TestBatchRecords starts the spans of three probes, interleaved, some with
// a sampling threshold, and checks the batch records of one drain: one per
// probe, in the order of the probes' first spans, each with its probe's
// spans in starting order, every entry with its span's trace id, span id,
// start time and threshold (0 for none, and no thresholds attribute for the
// probe none of whose spans has one), the drain's time as timestamp.
func TestBatchRecords(t *testing.T) {
	tr, p, rec := setup(t, traceStateSampler{}, WithSelector(func(s sdktrace.ReadOnlySpan) (string, bool) {
		probe, _, _ := strings.Cut(s.Name(), "|")
		return probe, true
	}))
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 987654321, time.UTC)
	type want struct {
		span      trace.Span
		threshold uint64
	}
	byProbe := map[string][]want{}
	for i, name := range []string{
		"b|ot=th:8", "a", "b", "c|ot=th:fff;rv:ffffffffffffff", "a", "b|ot=th:0", "c|ot=rv:00000000000001;th:8",
		"b|ot=th:c;rv:10000000000000", "a", "c|other=1,ot=th:12345678901234", "b|ot=th:zz",
	} {
		at := t0.Add(time.Duration(i)*time.Millisecond + time.Duration(i))
		_, s := tr.Start(context.Background(), name, trace.WithTimestamp(at))
		probe, ts, _ := strings.Cut(name, "|")
		var th uint64
		switch ts {
		case "ot=th:8":
			th = 0x80 << 48
		case "ot=th:fff;rv:ffffffffffffff":
			th = 0xfff << 44
		case "other=1,ot=th:12345678901234":
			th = 0x12345678901234
		}
		byProbe[probe] = append(byProbe[probe], want{s, th})
	}
	from := time.Now()
	if err := p.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	to := time.Now()
	recs := rec.all()
	got := decode(t, recs, from, to)
	if len(recs) != 3 || len(got) != 11 || p.Emitted() != 11 {
		t.Fatalf("%d records, %d starts, Emitted %d; want 3, 11, 11", len(recs), len(got), p.Emitted())
	}
	for ri, probe := range []string{"b", "a", "c"} {
		var in []decoded
		for _, d := range got {
			if d.record == ri {
				in = append(in, d)
			}
		}
		ws := byProbe[probe]
		if len(in) != len(ws) {
			t.Errorf("record %d: %d starts, want the %d of probe %s", ri, len(in), len(ws), probe)
			continue
		}
		for i, w := range ws {
			d, sc, start := in[i], w.span.SpanContext(), w.span.(sdktrace.ReadOnlySpan).StartTime()
			if d.probe != probe || d.traceID != sc.TraceID() || d.spanID != sc.SpanID() || !d.start.Equal(start) ||
				d.threshold != w.threshold {
				t.Errorf("record %d, entry %d: %s %s/%s at %v, threshold %#x; want %s %s/%s at %v, threshold %#x",
					ri, i, d.probe, d.traceID, d.spanID, d.start, d.threshold, probe, sc.TraceID(), sc.SpanID(),
					start, w.threshold)
			}
		}
		if _, has := attrs(&recs[ri])[attrStartsThresholds]; has != (probe != "a") {
			t.Errorf("record %d (probe %s): thresholds attribute %v, want %v", ri, probe, has, probe != "a")
		}
	}
}

// TestBatchSplit drains more than maxEntries starts of one probe, and some
// of another in between, and checks that they come in records of at most
// maxEntries entries, in queuing order, and that the buffers reused from one
// record to the next do not change a record already emitted.
func TestBatchSplit(t *testing.T) {
	rec := &recorder{}
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(rec))
	defer lp.Shutdown(context.Background())
	c := defaultConfig()
	c.queueSize = 2*maxEntries + 10
	p := newSpanProcessor(lp, c) // no draining goroutine: the test drains
	t0 := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	n := c.queueSize // of which 3 small
	for i := range n {
		ev := event{start: t0.Add(time.Duration(i)), probe: "big", ot: "th:8"}
		if i%maxEntries == 7 {
			ev.probe, ev.ot = "small", ""
		}
		binary.BigEndian.PutUint64(ev.traceID[8:], uint64(i+1))
		binary.BigEndian.PutUint64(ev.spanID[:], uint64(i+1))
		p.queue = append(p.queue, ev)
	}
	p.drain()
	recs := rec.all()
	got := decode(t, recs, time.Time{}, time.Time{})
	sizes := map[string][]int{}
	for ri := range recs {
		probe := attrs(&recs[ri])[attrProbe].AsString()
		sizes[probe] = append(sizes[probe], len(attrs(&recs[ri])[attrStarts].AsByteSlice())/entryBytes)
	}
	if fmt.Sprint(sizes["big"]) != fmt.Sprint([]int{maxEntries, maxEntries, 7}) || fmt.Sprint(sizes["small"]) != "[3]" {
		t.Errorf("entries per record: %v, want big [%d %d 7], small [3]", sizes, maxEntries, maxEntries)
	}
	last := map[string]uint64{}
	for _, d := range got {
		i := binary.BigEndian.Uint64(d.spanID[:])
		wantTh := uint64(0x80 << 48)
		if d.probe == "small" {
			wantTh = 0
		}
		if i <= last[d.probe] || binary.BigEndian.Uint64(d.traceID[8:]) != i ||
			!d.start.Equal(t0.Add(time.Duration(i-1))) || d.threshold != wantTh {
			t.Fatalf("%s: entry of span %d (after %d): %+v", d.probe, i, last[d.probe], d)
		}
		last[d.probe] = i
	}
	if len(got) != n || p.Emitted() != uint64(n) {
		t.Errorf("%d starts, Emitted %d; want %d", len(got), p.Emitted(), n)
	}
}
