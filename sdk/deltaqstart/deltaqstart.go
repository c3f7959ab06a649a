// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package deltaqstart announces, from the OpenTelemetry Go SDK, the spans
// that start, so that the collector's deltaq connector (or processor) can
// count an outcome instance that never ends as a timeout within dMax of its
// start, before (or without) its span ending (the thesis, section 3.2: a
// timeout is an instance that does not end within dMax).
//
// OpenTelemetry has no "span started" signal. SpanProcessor, an
// sdktrace.SpanProcessor, emits one for the spans it selects, as log
// records through a log.Logger of the LoggerProvider the application
// passes, so that the events leave by its OTLP logs exporter. By default
// it emits the batch form: at each drain of its queue, one record per probe
// with EventName "deltaq.span.starts", the attribute deltaq.probe (the
// probe the instances belong to) and, in the bytes attribute deltaq.starts,
// 32 bytes per started span (its trace id, its span id and its start time
// in Unix nanoseconds, uint64 little-endian), with, when some of those
// spans carry a sampling threshold in their tracestate (ot=th:…), their
// thresholds in deltaq.starts.thresholds (8 bytes each, 0 for none); the
// record's timestamp is the drain's time. Records per span cost the
// collector much (receiving them alone took it to 0.43 of its throughput);
// a record per probe and drain costs it little per start. WithRecordPerSpan
// emits instead one record per span with EventName "deltaq.span.start"
// (the span's ids, its start time as the timestamp, deltaq.probe,
// deltaq.span.name and deltaq.tracestate). The contract is
// docs/contract/start-event.json, the collector's (internal/contract) and
// the one the Erlang library dqsd_otel follows; the tests of both modules
// check their strings against that file.
//
// OnStart does not emit: it puts the span's ids, start time and names in a
// bounded queue and returns. When the queue is full the event is dropped
// and counted (Dropped); OnStart never blocks, and allocates nothing beyond
// what the selector does (the selectors of this package allocate nothing)
// and the repaired copy of a probe that is not valid UTF-8.
// One goroutine per SpanProcessor drains the queue into the logger every
// drain interval (10 ms by default), and at once when the queue is half
// full: OnStart does not wake it for each event, which would cost the
// application's path a goroutine wake-up per span, more than the rest of
// OnStart. A span that ends before its start event is drained has it elided
// (Elided): its span carries its start, and the event would only cost the
// collector work, or, overdue, time out an instance that ended in time.
// OnEnd finds the event by span id in an index read without the lock.
package deltaqstart

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/sdk/deltaqstart/otsampling"
)

// The start event's contract (docs/design.md, "Outcome instances"), as the
// collector's internal/contract defines it: this module imports nothing of
// the collector's, and internal/contract's tests check that the strings are
// the same.
const (
	// startEventName is the EventName of the log record that announces one
	// start (WithRecordPerSpan).
	startEventName = "deltaq.span.start"
	// attrProbe names the probe, on the span and on its start event.
	attrProbe = "deltaq.probe"
	// attrSpanName is the span's name, on the start event.
	attrSpanName = "deltaq.span.name"
	// attrTraceState carries the span's sampling threshold ("ot=th:…"), on
	// the start event of a sampled span.
	attrTraceState = "deltaq.tracestate"

	// startsEventName is the EventName of the log record that announces
	// the starts of many instances of one probe: the batch form.
	startsEventName = "deltaq.span.starts"
	// attrStarts holds a batch's entries (bytes), entryBytes each: the
	// trace id (16 bytes), the span id (8) and the start time in Unix
	// nanoseconds (uint64 little-endian, 8).
	attrStarts = "deltaq.starts"
	// attrStartsThresholds holds, when some entry of the batch has one, the
	// entries' sampling thresholds (bytes), thresholdBytes each: the 56-bit
	// rejection threshold of the span's tracestate ot=th (uint64
	// little-endian), 0 for none.
	attrStartsThresholds = "deltaq.starts.thresholds"
	// entryBytes and thresholdBytes are the sizes of an entry of
	// attrStarts and of attrStartsThresholds.
	entryBytes     = 32
	thresholdBytes = 8
	// maxEntries bounds the entries of one batch record: a probe with more
	// starts in one drain gets several records.
	maxEntries = 1 << 16
	// maxProbeLength bounds a probe's name, in bytes: the collector's
	// components refuse a longer one in their configurations, and refuse a
	// start event naming one before they look it up.
	maxProbeLength = 256
)

// severity is the start events' severity. The collector does not read it,
// but a LoggerProvider may filter by it: without one (0, unspecified), a
// processor that keeps the records from some severity up, as contrib's
// minsev does (from INFO by default), dropped every start event, which
// Emitted still counted.
const severity = log.SeverityInfo

// ScopeName is the instrumentation scope of the logger the events are
// emitted with.
const ScopeName = "github.com/deltaq-otel/deltaq/sdk/deltaqstart"

// DefaultQueueSize is the number of start events that may wait for the
// draining goroutine before new ones are dropped.
const DefaultQueueSize = 2048

// DefaultDrainInterval is the longest time a start event waits in the queue
// while the queue is less than half full.
const DefaultDrainInterval = 10 * time.Millisecond

// maxQueueSize bounds WithQueueSize: each place of the queue takes 104
// bytes twice (the queue and the batch being emitted), 8 more to group the
// batch by probe and 16 in the index of queued events, so the queue takes
// at most about 61 MB (and the buffers of one batch record 2.5 MB).
const maxQueueSize = 1 << 18

// A Selector decides at a span's start whether it is an outcome instance to
// announce, and of which probe: ok reports whether it is, probe names the
// probe (the name of a probe the collector's deltaq connector matches, or
// of its deltaq processor's; a start event naming another probe is
// refused). A span selected with an empty probe, or one longer than 256
// bytes, has no start event: no probe has such a name, the collector
// refuses a batch record without a probe whole, and a longer name would
// only be carried to the collector, in every record, to be refused. It is
// called on the application's path for every sampled span, so it should be
// cheap and must not block; it may be called concurrently.
type Selector func(s sdktrace.ReadOnlySpan) (probe string, ok bool)

// DefaultSelector selects a span whose attributes at start hold a non-empty
// string deltaq.probe, with that value as its probe, and every other server
// span, with its name as its probe (as a connector probe with `match: {}`,
// or a processor probe with no match section, matches the spans named after
// it); a server span with an empty name, or a name longer than 256 bytes,
// names no probe (Selector).
//
// It reads the span as it starts: a span renamed later (an HTTP handler
// that names its span after the route only once the router has run) keeps
// the probe of its first name, which the span then no longer matches.
//
// deltaq.probe is also an attribute of the processor's own contract: the
// connector does not read it on the spans of a probe it matches itself, and
// the processor removes it from a span that arrives with it and counts the
// span as carrying foreign attributes (both still map the span by their
// probes' match rules).
//
// Reading a span's attributes lets the SDK share their backing array, so a
// span that had attributes at start and is given more later copies its
// attribute list once (one allocation, in the SDK). Select by name
// (WithSpanNames) where that matters.
func DefaultSelector(s sdktrace.ReadOnlySpan) (string, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == attrProbe && kv.Value.Type() == attribute.STRING {
			if p := kv.Value.AsString(); p != "" {
				return p, true
			}
		}
	}
	if s.SpanKind() == trace.SpanKindServer {
		return s.Name(), true
	}
	return "", false
}

// config is what the options set.
type config struct {
	selector  Selector
	queueSize int
	interval  time.Duration
	perSpan   bool // WithRecordPerSpan
}

func defaultConfig() config {
	return config{selector: DefaultSelector, queueSize: DefaultQueueSize, interval: DefaultDrainInterval}
}

// An Option configures a SpanProcessor.
type Option func(*config) error

// WithSpanNames selects the spans with one of these exact names, with its
// name as the probe, instead of DefaultSelector. It looks at the name
// alone: a map lookup per span. A name must be a probe's: 1 to 256 bytes.
func WithSpanNames(names ...string) Option {
	return func(c *config) error {
		if len(names) == 0 {
			return errors.New("WithSpanNames: no name given")
		}
		set := make(map[string]struct{}, len(names))
		for _, n := range names {
			if n == "" {
				return errors.New("WithSpanNames: an empty name")
			}
			// As sent: a name whose invalid bytes take it past the bound
			// was taken, and its spans never announced (OnStart).
			if sent := len(validUTF8(n)); sent > maxProbeLength {
				return fmt.Errorf("WithSpanNames: a name of %d bytes as sent (each invalid UTF-8 byte as U+FFFD's three), longer than a probe's (at most %d)", sent,
					maxProbeLength)
			}
			set[n] = struct{}{}
		}
		c.selector = func(s sdktrace.ReadOnlySpan) (string, bool) {
			name := s.Name()
			_, ok := set[name]
			return name, ok
		}
		return nil
	}
}

// WithSelector selects the spans, and names their probes, by f instead of
// DefaultSelector.
func WithSelector(f Selector) Option {
	return func(c *config) error {
		if f == nil {
			return errors.New("WithSelector: nil selector")
		}
		c.selector = f
		return nil
	}
}

// WithQueueSize sets the number of start events that may wait to be
// emitted (DefaultQueueSize by default), in [1, 262144]. Size it for the
// bursts of selected spans the logger may lag behind; it takes about 270
// bytes a place (up to 290 when n is not a power of two), allocated up
// front. An elided event keeps its place until the drain. One drain's records take up to 40
// bytes a place: above about 100,000 places, they may make an OTLP export
// request larger than a receiver's limit (the collector's gRPC receiver
// takes 4 MiB by default).
func WithQueueSize(n int) Option {
	return func(c *config) error {
		if n < 1 || n > maxQueueSize {
			return fmt.Errorf("WithQueueSize: must be in [1, %d], got %d", maxQueueSize, n)
		}
		c.queueSize = n
		return nil
	}
}

// WithDrainInterval sets the longest time a start event waits in the queue
// while the queue is less than half full (DefaultDrainInterval by default),
// in [1ms, 1s]. It adds to the LoggerProvider's own export delay: keep the
// sum well below the smallest dMax of the probes.
func WithDrainInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond || d > time.Second {
			return fmt.Errorf("WithDrainInterval: must be in [1ms, 1s], got %v", d)
		}
		c.interval = d
		return nil
	}
}

// WithRecordPerSpan emits one log record per span, with EventName
// "deltaq.span.start", instead of one batch record per probe and drain. Such
// a record carries what the batch form leaves out, the span's name
// (deltaq.span.name, which the collector's deltaq processor gives the
// synthetic span it reports a timeout as; without it that span takes the
// probe's name) and the span's own ids and start time as the record's, which
// a log backend shows and links to the trace; and a consumer that reads only
// that form (a collector from before the batch form) understands it. It
// costs the logger a record per span, and the collector much more than
// batches (receiving records per span alone took it to 0.43 of its
// throughput).
func WithRecordPerSpan() Option {
	return func(c *config) error {
		c.perSpan = true
		return nil
	}
}

// event is a queued start event: what OnStart copies out of the span.
type event struct {
	traceID trace.TraceID
	spanID  trace.SpanID
	start   time.Time
	probe   string
	name    string
	// ot is the OpenTelemetry entry of the span's tracestate (its
	// sampling threshold, ot=th:…), "" when none.
	ot string
	// elided is set when the span ended before the event was drained: the
	// drain leaves the event out.
	elided bool
}

// flusher is the part of an SDK LoggerProvider (go.opentelemetry.io/otel/sdk/log)
// that ForceFlush and Shutdown use when the provider has it.
type flusher interface {
	ForceFlush(ctx context.Context) error
}

// SpanProcessor emits a start event for every sampled span its selector
// selects, but those of spans that end before the event is drained. Register
// it with the TracerProvider (sdktrace.WithSpanProcessor) next to the
// exporting span processor. It is safe for concurrent use.
//
// A SpanProcessor serves one TracerProvider, as the SDK's span processors
// do: a provider's Shutdown shuts it down, and so does
// UnregisterSpanProcessor, after which it ignores every span, silently (none
// is counted as dropped). Registered with several providers, it stops
// announcing the spans of all of them when the first is shut down: give each
// provider a SpanProcessor of its own (they may share the LoggerProvider).
type SpanProcessor struct {
	selector Selector
	perSpan  bool // WithRecordPerSpan
	logger   log.Logger
	flusher  flusher // the provider's, or nil

	// The queue: OnStart appends to queue under mu up to its capacity, and
	// records each event's place in index; OnEnd marks the event of a span
	// that ends as elided. The draining goroutine swaps the queue with
	// batch, its own, empty and of the same capacity, empties the index,
	// and emits the batch, but its elided events, outside the lock.
	mu    sync.Mutex
	queue []event
	batch []event
	index startIndex

	// The draining goroutine's own, reused at every drain (batch form
	// only): the batch grouped by probe (probes), and the attributes of
	// the record being built.
	probes     probeGroups
	entries    []byte
	thresholds []byte

	kickAt   int                // the queue length at which OnStart wakes the goroutine
	kick     chan struct{}      // OnStart's wake-up, buffered (1)
	interval time.Duration      // the goroutine's drain interval
	flush    chan chan struct{} // ForceFlush's requests to the draining goroutine
	stop     chan struct{}      // closed by Shutdown
	done     chan struct{}      // closed when the draining goroutine has returned

	stopped atomic.Bool
	// abandoned is set when Shutdown's ctx ended before the draining
	// goroutine returned: Shutdown has returned, the application goes on
	// to shut the LoggerProvider down, and what the goroutine would emit
	// from then on would be lost. It drops and counts it instead.
	abandoned atomic.Bool
	stopOnce  sync.Once
	dropped   atomic.Uint64
	emitted   atomic.Uint64
	elided    atomic.Uint64
}

var _ sdktrace.SpanProcessor = (*SpanProcessor)(nil)

// NewSpanProcessor returns a SpanProcessor emitting through a logger of lp
// (scope ScopeName) and starts its draining goroutine, which runs until
// Shutdown. lp should carry the same resource (service.name above all) as
// the TracerProvider: the processor gives a synthetic timeout span the
// service.name of its start event.
func NewSpanProcessor(lp log.LoggerProvider, opts ...Option) (*SpanProcessor, error) {
	if lp == nil || isNilPointer(lp) {
		return nil, errors.New("deltaqstart: nil LoggerProvider")
	}
	c := defaultConfig()
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, fmt.Errorf("deltaqstart: %w", err)
		}
	}
	p := newSpanProcessor(lp, c)
	go p.run()
	return p, nil
}

// newSpanProcessor returns a SpanProcessor whose draining goroutine is not
// started yet.
func newSpanProcessor(lp log.LoggerProvider, c config) *SpanProcessor {
	p := &SpanProcessor{
		selector: c.selector,
		logger:   lp.Logger(ScopeName),
		queue:    make([]event, 0, c.queueSize),
		batch:    make([]event, 0, c.queueSize),
		perSpan:  c.perSpan,
		kickAt:   max(c.queueSize/2, 1),
		kick:     make(chan struct{}, 1),
		interval: c.interval,
		flush:    make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	p.flusher, _ = lp.(flusher)
	p.index.init(c.queueSize)
	if !c.perSpan {
		p.probes = newProbeGroups(c.queueSize)
		n := min(c.queueSize, maxEntries)
		p.entries = make([]byte, 0, n*entryBytes)
		p.thresholds = make([]byte, 0, n*thresholdBytes)
	}
	return p
}

// OnStart queues the start event of s if s is sampled and selected with a
// probe; when the queue is full it drops the event and counts it. An
// unsampled span is never exported, so its start event would only make a
// spurious timeout; an empty probe, or one longer than 256 bytes, names no
// probe, and the collector would refuse the event (Selector).
func (p *SpanProcessor) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() || p.stopped.Load() {
		return
	}
	probe, ok := p.selector(s)
	if !ok || probe == "" {
		return
	}
	// The length is checked as sent: a replaced invalid byte takes three.
	if probe = validUTF8(probe); len(probe) > maxProbeLength {
		return
	}
	start := s.StartTime()
	if !sendableStart(start) {
		p.dropped.Add(1)
		return
	}
	ev := event{traceID: sc.TraceID(), spanID: sc.SpanID(), start: start, probe: probe, name: s.Name(),
		ot: sc.TraceState().Get("ot")}
	key := spanKey(ev.spanID)
	p.mu.Lock()
	n := len(p.queue)
	// Stopped since the check above: the final drain may have passed, and
	// the event would be neither emitted nor counted.
	if n == cap(p.queue) || p.stopped.Load() {
		p.mu.Unlock()
		p.dropped.Add(1)
		return
	}
	p.queue = append(p.queue, ev)
	p.index.add(key, n)
	p.mu.Unlock()
	if n+1 == p.kickAt {
		select {
		case p.kick <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// OnEnd elides the start event of s if it is still queued: the drain will
// leave it out, and Elided counts it. The span goes out through the
// exporting span processor and carries its start; its start event would
// only cost the collector an instance to track and end at once, or, sent
// overdue (a backlog), time out an instance whose span ended in time. OnEnd
// looks the span id up in the index of queued events without the lock (a
// few slots, at most maxProbe), and takes the lock only on a slot whose tag
// matches, to check and mark the event: a span not selected, or whose start
// event was dropped or has been drained, costs it the lookup alone. It
// allocates nothing.
func (p *SpanProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	if !sc.IsSampled() {
		return
	}
	for it := p.index.lookup(spanKey(sc.SpanID())); ; {
		pos, ok := it.next()
		if !ok || p.elide(pos, sc.TraceID(), sc.SpanID(), s.StartTime()) {
			return
		}
	}
}

// elide marks the event at place pos of the queue as elided, and counts it,
// if it is the start event, not elided yet, of the span of traceID and
// spanID that started at start, which the index only suggests (a tag
// shared, or a place of an earlier generation); it reports whether it was.
// Spans given the same ids (an application's id generator deriving them
// from a request's key) each have an event of their own, told apart by
// their start: the end of one elides its own, in whatever order they end.
// A span ended twice is counted once.
func (p *SpanProcessor) elide(pos int, traceID trace.TraceID, spanID trace.SpanID, start time.Time) bool {
	p.mu.Lock()
	found := pos < len(p.queue) && p.queue[pos].spanID == spanID && p.queue[pos].traceID == traceID &&
		!p.queue[pos].elided && p.queue[pos].start.Equal(start)
	if found {
		p.queue[pos].elided = true
	}
	p.mu.Unlock()
	if found {
		p.elided.Add(1)
	}
	return found
}

// ForceFlush emits the start events queued before the call (but those of
// the spans that have ended), then flushes the LoggerProvider if it can be
// flushed (an SDK LoggerProvider can), so that they are exported. It
// returns ctx's error if ctx ends first, or has ended already. After
// Shutdown it does nothing and returns nil, as the SDK's span processors
// do: Shutdown has emitted the queue and flushed the provider, which the
// application may be shutting down by now.
func (p *SpanProcessor) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.stopped.Load() {
		return nil
	}
	req := make(chan struct{})
	select {
	case p.flush <- req:
	case <-p.done:
		// Shut down meanwhile: Shutdown flushes.
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-req:
	case <-ctx.Done():
		return ctx.Err()
	}
	return p.flushProvider(ctx)
}

// Shutdown stops the processor: spans starting from then on are not
// announced, the events already queued are emitted (but those of the spans
// that have ended), the draining goroutine returns and the LoggerProvider is
// flushed if it can be. It does not shut the LoggerProvider down, which
// belongs to the application: shut the TracerProvider down first, then the
// LoggerProvider. Calls after the first only wait for the goroutine and
// flush again. It returns ctx's error if ctx ends before the queue is
// drained; the events not handed to the logger by then are dropped and
// counted (Dropped), not emitted later into a LoggerProvider that the
// application will have shut down (a record being handed over as ctx ends
// counts as emitted).
func (p *SpanProcessor) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.stopped.Store(true)
		close(p.stop)
	})
	select {
	case <-p.done:
	case <-ctx.Done():
		p.abandoned.Store(true)
		return ctx.Err()
	}
	return p.flushProvider(ctx)
}

// Dropped returns the number of start events dropped because the queue was
// full, because Shutdown stopped the processor while OnStart was queuing
// them, because their start cannot be sent (not after 1970, or after
// 2262: sendableStart), or because Shutdown's ctx ended before they were
// emitted. Each was a selected span the collector cannot time out before it
// ends (it still counts the span by its own duration when it arrives).
func (p *SpanProcessor) Dropped() uint64 { return p.dropped.Load() }

// Emitted returns the number of start events handed to the logger: the
// spans announced, whether in batch records or in records of their own.
func (p *SpanProcessor) Emitted() uint64 { return p.emitted.Load() }

// Elided returns the number of start events left out because their spans
// ended before they were drained. Once the queue is drained, the spans
// selected are those emitted, dropped and elided.
func (p *SpanProcessor) Elided() uint64 { return p.elided.Load() }

// minStart and maxStart bound the start times a start event can carry: Unix
// nanoseconds from 1 to math.MaxInt64 (1970 to 2262).
var (
	minStart = time.Unix(0, 1)
	maxStart = time.Unix(0, math.MaxInt64)
)

// sendableStart reports whether a start event can carry start. A start
// event carries its span's start in Unix nanoseconds, unsigned: a start
// before 1970 wrapped around to a time centuries ahead (uint64 of a
// negative UnixNano), and one after 2262 has no UnixNano (time.Time says
// it is undefined); the collector would refuse either (a start more than
// ended_window ahead of its clock is "future", 0 is no timestamp, one long
// past is "stale"). Such a start, from a clock set wrong or a span given
// an explicit start, is dropped and counted (Dropped): its span is still
// counted by its own duration when it arrives.
func sendableStart(start time.Time) bool {
	return !start.Before(minStart) && !start.After(maxStart)
}

// validUTF8 returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD: OTLP strings must be UTF-8, and one invalid string
// made the exporter refuse the whole request, every probe's start events
// with it. Each byte, not each run of them (strings.ToValidUTF8): the rule
// of the shared contract (docs/contract/start-event.json, probe_repair),
// by which dqsd_otel repairs the same name to the same probe, and so
// announces the same spans near the 256-byte bound.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isNilPointer reports whether v, not nil itself, holds a nil pointer (a
// typed nil *sdklog.LoggerProvider), which would panic at first use.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func (p *SpanProcessor) flushProvider(ctx context.Context) error {
	if p.flusher == nil {
		return nil
	}
	return p.flusher.ForceFlush(ctx)
}

// run is the draining goroutine: it emits the events queued, in queuing
// order, every drain interval, when OnStart finds the queue half full, on a
// flush request and at shutdown.
func (p *SpanProcessor) run() {
	defer close(p.done)
	tick := time.NewTicker(p.interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			p.drain()
		case <-p.kick:
			p.drain()
		case req := <-p.flush:
			p.drain()
			close(req)
		case <-p.stop:
			p.drain()
			return
		}
	}
}

// drain emits the events in the queue when it is called (not those queued
// meanwhile, so that it returns under a steady stream), but the elided
// ones. Only the draining goroutine calls it.
func (p *SpanProcessor) drain() {
	p.mu.Lock()
	batch := p.queue
	p.queue = p.batch
	p.index.reset()
	p.mu.Unlock()
	live := slices.DeleteFunc(batch, func(ev event) bool { return ev.elided })
	if p.perSpan {
		for i := range live {
			p.emitSpan(&live[i])
		}
	} else if len(live) > 0 {
		p.emitBatches(live, time.Now())
	}
	clear(batch) // drop the strings for the garbage collector
	p.batch = batch[:0]
}

// emitBatches emits the starts of batch as batch records: one per probe, in
// the order of the probes' first starts, or several for a probe with more
// than maxEntries starts; each record's entries in queuing order. now is
// the records' timestamp.
func (p *SpanProcessor) emitBatches(batch []event, now time.Time) {
	order := p.probes.sort(batch)
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && hi-lo < maxEntries && p.probes.same(order[lo], order[hi]) {
			hi++
		}
		probe := batch[order[lo]].probe
		entries, thresholds := p.entries[:0], p.thresholds[:0]
		thresholded := false
		for _, i := range order[lo:hi] {
			ev := &batch[i]
			entries = append(entries, ev.traceID[:]...)
			entries = append(entries, ev.spanID[:]...)
			entries = binary.LittleEndian.AppendUint64(entries, uint64(ev.start.UnixNano()))
			var th uint64
			if ev.ot != "" {
				// No threshold, or th:0 (kept with probability 1), is 0.
				th, _ = otsampling.Threshold(ev.ot)
				thresholded = thresholded || th != 0
			}
			thresholds = binary.LittleEndian.AppendUint64(thresholds, th)
		}
		if !thresholded {
			thresholds = nil
		}
		p.emitStarts(probe, entries, thresholds, now)
		lo = hi
	}
	p.probes.reset()
}

// emitStarts emits a batch record of probe. Its own trace and span ids are
// unset: it stands for many spans, of many traces. attribute.ByteSlice
// copies the bytes, so the buffers are reused.
func (p *SpanProcessor) emitStarts(probe string, entries, thresholds []byte, now time.Time) {
	var r log.Record
	r.SetEventName(startsEventName)
	r.SetTimestamp(now)
	r.SetObservedTimestamp(now)
	r.SetSeverity(severity)
	r.AddAttributes(attribute.String(attrProbe, probe), attribute.ByteSlice(attrStarts, entries))
	if thresholds != nil {
		r.AddAttributes(attribute.ByteSlice(attrStartsThresholds, thresholds))
	}
	n := uint64(len(entries) / entryBytes)
	if p.abandoned.Load() {
		p.dropped.Add(n)
		return
	}
	p.logger.Emit(context.Background(), r)
	p.emitted.Add(n)
}

// queued returns the number of events in the queue.
func (p *SpanProcessor) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// emitSpan emits ev's start event in a record of its own
// (WithRecordPerSpan). The SDK logger takes the record's trace and span ids
// from the span context in the context it is given.
func (p *SpanProcessor) emitSpan(ev *event) {
	if p.abandoned.Load() {
		p.dropped.Add(1)
		return
	}
	var r log.Record
	r.SetEventName(startEventName)
	r.SetTimestamp(ev.start)
	r.SetObservedTimestamp(ev.start)
	r.SetSeverity(severity)
	r.AddAttributes(attribute.String(attrProbe, ev.probe), attribute.String(attrSpanName, validUTF8(ev.name)))
	if ev.ot != "" {
		// The span's sampling threshold, for the collector to count a
		// timeout of a sampled span with its adjusted count.
		r.AddAttributes(attribute.String(attrTraceState, "ot="+ev.ot))
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: ev.traceID, SpanID: ev.spanID, TraceFlags: trace.FlagsSampled})
	p.logger.Emit(trace.ContextWithSpanContext(context.Background(), sc), r)
	p.emitted.Add(1)
}
