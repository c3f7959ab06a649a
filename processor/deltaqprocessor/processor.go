// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/reload"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// syntheticStatusMessage is the status message of synthetic timeout spans.
const syntheticStatusMessage = "deltaq: no end within dMax"

// syntheticSendTimeout is how long the next consumer of the traces pipeline
// has to take one tick's synthetic timeout spans: a queued exporter, the
// connector or the exporter take them at once, an exporter that sends them
// itself within one attempt over a healthy link.
const syntheticSendTimeout = time.Second

// deltaqProcessor is one processor instance, shared by the traces and the
// logs pipelines that name the same component ID: the logs side tracks the
// instances announced by start events, the traces side ends them, and the
// timer goroutine reports those that time out to the traces side's next
// consumer.
type deltaqProcessor struct {
	id         component.ID
	logger     *zap.Logger
	m          *matcher
	resolution time.Duration
	// grace is timeout_grace in nanoseconds: an instance is reported at
	// start + dMax + grace.
	grace     int64
	clock     clock
	telemetry *metadata.TelemetryBuilder
	stats     *stats

	// tracesNext receives the synthetic timeout spans; nil when the
	// processor is in no traces pipeline. Set before Start.
	tracesNext consumer.Traces

	// tracker holds the instances announced by start events and the spans
	// that ended with none tracked (internal/inflight), under its own lock.
	tracker *inflight.Tracker

	// fired is the timer goroutine's reusable buffer of timed-out instances.
	fired []inflight.Instance
	// sendTimeout bounds the hand-over of one tick's synthetic spans to
	// tracesNext (syntheticSendTimeout; shorter in tests).
	sendTimeout time.Duration

	lifecycle sync.Mutex
	started   bool
	stopped   bool
	stop      chan struct{}
	done      chan struct{}
	// cancelRun cancels the timer goroutine's context: a synthetic span
	// send still waiting for the next consumer at shutdown gives up.
	cancelRun context.CancelFunc
	// release removes the instance from its factory's shared map and its
	// probes from the collector's registry of layouts.
	release func()
	// layouts is the collector's registry of probe layouts, where the
	// processor announces its probes for the connector or exporter.
	layouts *contract.Layouts
	// claims records the probes the collector's processors and connectors
	// match in the spans.
	claims *spanmatch.Claims
	// handover carries the in-flight state across a reload.
	handover *reload.Handover
}

// newProcessor makes a processor of the collector whose shared state is st.
func newProcessor(set processor.Settings, cfg *Config, clk clock, st *collectorstate.State) (*deltaqProcessor, error) {
	m, err := newMatcher(cfg)
	if err != nil {
		return nil, err
	}
	p := &deltaqProcessor{
		id:          set.ID,
		logger:      set.Logger,
		m:           m,
		resolution:  cfg.TimerResolution,
		sendTimeout: syntheticSendTimeout,
		grace:       int64(cfg.TimeoutGrace),
		clock:       clk,
		stats:       newStats(len(m.probes)),
		tracker:     inflight.NewTracker(cfg.Options),
		layouts:     st.Layouts,
		claims:      st.Claims,
		handover:    st.Reload,
	}
	p.release = p.unregister
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	p.telemetry = tb
	if err := p.registerTelemetry(tb); err != nil {
		tb.Shutdown()
		return nil, err
	}
	// Registered last, so that a processor that fails to build leaves
	// nothing behind. A probe that a deltaq connector matches in the spans
	// itself is refused (spanmatch.Claims). An exporter or connector of the
	// same collector reads a probe's layout here, from configuration,
	// rather than from the attributes of the spans it receives.
	names := make([]string, len(m.probes))
	for i := range m.probes {
		names[i] = m.probes[i].name
	}
	if err := p.claims.Claim(p, "processor", set.ID.String(), names); err != nil {
		tb.Shutdown()
		return nil, err
	}
	own := make(map[string]deltaq.Layout, len(m.probes))
	for i := range m.probes {
		pr := &m.probes[i]
		own[pr.name] = pr.layout()
	}
	p.layouts.Register(p, own)
	for _, name := range names {
		if first, ok := p.layouts.Earlier(p, name, own[name]); ok {
			p.logger.Warn("another deltaq processor of this collector configures this probe in another layout; connectors and exporters take that one and refuse this processor's instances of the probe (layout_mismatch): give the probe one layout, or each processor its own name",
				zap.String("probe", name), zap.Duration("dmax", own[name].DMax()), zap.Int("bins", own[name].Bins),
				zap.Duration("other_dmax", first.DMax()), zap.Int("other_bins", first.Bins))
		}
	}
	// The connectors and exporters this processor feeds were made before
	// it: a probe they name that is by all appearances a misspelling of one
	// of these is refused here, so that validate refuses it too.
	if err := p.layouts.CheckReaders(); err != nil {
		p.unregister()
		tb.Shutdown()
		return nil, err
	}
	if old, ok := p.handover.Claim(reloadKey(set.ID)); ok {
		p.adopt(old.(*parked))
	}
	for _, i := range m.auto {
		pr := &m.probes[i]
		if decided, _ := pr.auto.Decided(); decided {
			continue // carried over a reload, with its dMax
		}
		p.logger.Info("deltaq: probe with dmax: auto, learning its delays", zap.String("probe", pr.name),
			zap.Duration("dmax", time.Duration(pr.currentDMax())), zap.Int("bins", pr.lay.Bins))
	}
	return p, nil
}

// unregister removes the processor's probes from the layout registry and
// its claim on them (spanmatch.Claims).
func (p *deltaqProcessor) unregister() {
	p.layouts.Unregister(p)
	p.claims.Release(p)
}

// attachTraces records the next consumer of the traces pipeline.
func (p *deltaqProcessor) attachTraces(id component.ID, next consumer.Traces) error {
	p.lifecycle.Lock()
	defer p.lifecycle.Unlock()
	if p.tracesNext != nil {
		return fmt.Errorf("processor %q is in more than one traces pipeline; synthetic timeout spans need exactly one, so give each traces pipeline its own processor ID (for example %s/a)", id, id.Type())
	}
	p.tracesNext = next
	return nil
}

// attachLogs records that the processor is in a logs pipeline: start events
// are in use, and a span may arrive before its start event.
func (p *deltaqProcessor) attachLogs() { p.tracker.Remember() }

// start starts the timer goroutine; the second call (from the other
// pipeline) does nothing.
func (p *deltaqProcessor) start(context.Context, component.Host) error {
	p.lifecycle.Lock()
	defer p.lifecycle.Unlock()
	if p.started || p.stopped {
		return nil
	}
	p.started = true
	p.layouts.Settle()
	p.handover.Watch()
	p.handover.Done()
	if p.tracesNext == nil {
		p.logger.Warn("the deltaq processor is in no traces pipeline: timeouts from start events are counted but no synthetic timeout spans are emitted")
	}
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	p.cancelRun = cancel
	// The first sample of an auto probe starts now.
	now := p.clock.Now().UnixNano()
	for _, i := range p.m.auto {
		p.m.probes[i].auto.Begin(now)
	}
	go p.run(ctx, p.clock.NewTicker(p.resolution))
	return nil
}

// shutdown stops the timer; the first call (from either pipeline) does the
// work, so that no tick emits a synthetic span once any part of the
// pipeline shuts down. The instances due by then are reported as the
// timer's next tick would have reported them, as the connector counts its
// own at its stop, to the next consumer, which the collector shuts down
// after the processor: they were lost, up to a timer_resolution of
// timeouts at every stop. The other instances in flight are dropped,
// unless the shutdown is part of a configuration reload (package reload):
// then every instance is handed to the processor the reload builds.
func (p *deltaqProcessor) shutdown(ctx context.Context) error {
	p.lifecycle.Lock()
	defer p.lifecycle.Unlock()
	if p.stopped {
		return nil
	}
	p.stopped = true
	defer p.release()
	defer p.telemetry.Shutdown()
	if !p.started {
		return nil
	}
	close(p.stop)
	p.cancelRun()
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	pending, refused := p.handover.Status()
	if pending {
		p.park()
		return nil
	}
	if refused != nil {
		p.logger.Warn("configuration reload refused: the collector stops; the instances in flight end with it, as at a stop",
			zap.Error(refused))
	}
	p.expire(ctx, p.clock.Now().UnixNano())
	return nil
}

// run is the timer goroutine: at every tick it fires the timeouts due. Its
// context is cancelled at shutdown.
func (p *deltaqProcessor) run(ctx context.Context, t ticker) {
	defer close(p.done)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C():
			p.expire(ctx, now.UnixNano())
			p.rangeProbes(now.UnixNano())
			t.Done()
		}
	}
}

// processTraces maps the spans of the configured probes to outcome
// instances. The processor is the only writer of the contract attributes
// (internal/contract) in a collector: every span that arrives carrying any of
// them has them removed and counted (foreignAttributes) first, whether it
// matches a probe or not, so that no claim made upstream reaches the
// exporter. The span is then mapped by this processor's configuration like
// any other, from its own name, attributes, timestamps and status, which are
// trace data; only a span that arrived marked deltaq.synthetic = true, a
// timeout span fabricated by another processor with no timing of its own, is
// not mapped (counted as malformed, foreign_synthetic). It allocates nothing
// for a span that matches no probe.
func (p *deltaqProcessor) processTraces(_ context.Context, td ptrace.Traces) (ptrace.Traces, error) {
	now := int64(0) // the time ended spans are remembered from, read once per batch
	var marks layoutMarks
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		res := newResourceInfo(rs.Resource())
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				if hasContractAttr(span.Attributes()) && p.stripForeign(span) {
					continue
				}
				if pi := p.m.match(span, &res); pi >= 0 {
					p.mapSpan(span, pi, &res, &now, &marks)
				}
			}
		}
	}
	return td, nil
}

// hasContractAttr reports whether any attribute of attrs is a contract
// attribute, in one pass over the keys that allocates nothing.
func hasContractAttr(attrs pcommon.Map) bool {
	for k := range attrs.All() {
		if contract.IsContractAttr(k) {
			return true
		}
	}
	return false
}

// stripForeign removes the contract attributes from a span that arrived with
// some, and counts it. It reports whether the span arrived as a synthetic
// timeout span (deltaq.synthetic = true), which is then not to be mapped.
func (p *deltaqProcessor) stripForeign(span ptrace.Span) (synthetic bool) {
	attrs := span.Attributes()
	if v, ok := attrs.Get(contract.AttrSynthetic); ok && v.Type() == pcommon.ValueTypeBool && v.Bool() {
		synthetic = true
	}
	attrs.RemoveIf(func(k string, _ pcommon.Value) bool { return contract.IsContractAttr(k) })
	p.stats.foreignAttributes.Add(1)
	if synthetic {
		p.malformedSpan(span, reasonForeignSynthetic)
	}
	return synthetic
}

// mapSpan writes the outcome attributes on a span of probe pi, its first
// match in res, and counts the instance. A span that ends an instance
// announced by a start event (endInstance) takes that instance's probe when
// that probe's match selects it too; if the instance has already been
// reported as a timeout the span is marked late and not counted again. A
// span with its ids ends its instance whatever its times: one without a
// start or an end time, or that ends before it starts, is then counted as
// malformed and passes unchanged, and its instance does not time out. A
// span without its ids ends no instance, and is mapped like any other.
//
// Every counted span carries deltaq.probe; a failure or a timeout also
// deltaq.outcome, a success none (a reader takes a bare deltaq.probe for a
// success), which spares the common case one pdata allocation. The layout
// attributes (deltaq.dmax_ns, deltaq.bins; no bins for log-linear
// buckets) are on a timeout, whose reader
// must know the dMax it was judged by, and on the first span of each probe
// in the batch (marks), from which a reader that configures no layout for
// the probe takes it (the contract in internal/contract). A late span carries
// deltaq.probe, deltaq.outcome = timeout and deltaq.late.
//
// The span carries no contract attribute (processTraces removed any it came
// with), so the attributes are appended, and a bare deltaq.probe downstream
// is this processor's.
func (p *deltaqProcessor) mapSpan(span ptrace.Span, pi int, res *resourceInfo, now *int64, marks *layoutMarks) {
	attrs := span.Attributes()
	tid, sid := span.TraceID(), span.SpanID()
	late := false
	// A span without its ids ends no instance (no start event without ids
	// is tracked), and is counted by its own duration all the same.
	if p.tracker.Active() && !tid.IsEmpty() && !sid.IsEmpty() {
		pi, late = p.endInstance(span, inflight.Key{TraceID: tid, SpanID: sid}, pi, res, now)
	}
	start, end := span.StartTimestamp(), span.EndTimestamp()
	switch {
	case start == 0 || end == 0 || end > math.MaxInt64:
		p.malformedSpan(span, reasonInvalidTimestamp)
		return
	case end < start:
		p.malformedSpan(span, reasonEndBeforeStart)
		return
	}

	pr := &p.m.probes[pi]
	d, dMax := int64(end-start), pr.lay.DMaxNs
	if pr.auto != nil {
		dMax = pr.auto.DMax()
		if late {
			// A late span's delay is a delay too, in place of its
			// instance's timeout, which the range counted as censored.
			pr.auto.Uncensor(d)
		} else {
			pr.auto.Observe(d)
		}
	}
	oc := outcomeTimeout
	if !late {
		oc = pr.classify(span, d, dMax)
	}
	// marks.first is called for every counted span, so that a timeout also
	// counts as the batch's span with the probe's layout.
	withLayout := !late && (marks.first(pi) || oc == outcomeTimeout)
	n := 1 // deltaq.probe
	if oc != outcomeSuccess {
		n++ // deltaq.outcome
	}
	if withLayout {
		n += layoutAttrs(pr)
	}
	if late {
		n++
	}
	attrs.EnsureCapacity(attrs.Len() + n)
	attrs.PutStr(contract.AttrProbe, pr.name)
	if oc != outcomeSuccess {
		attrs.PutStr(contract.AttrOutcome, outcomeValues[oc])
	}
	if late {
		attrs.PutBool(contract.AttrLate, true)
		return
	}
	if withLayout {
		putLayout(attrs, pr, dMax)
	}
	p.stats.instances[pi][oc].Add(1)
}

// endInstance ends the instance announced for the span of key k, of probe
// pi, its first match in res, if one is tracked, and returns the probe the
// span is mapped to and whether it is late: its instance was reported as a
// timeout already (counted in late_spans). The span takes its instance's
// probe when that probe's match selects it too: a start event chooses among
// the probes that match the span. Of another probe, the span's start event
// contradicts the configuration: the instance ends with no outcome for its
// probe (counted as mismatched) and the span is mapped to pi, as if no start
// event had come. While start events are in use, a span that ends no
// tracked instance is remembered, so that its start event, if it comes
// later, is not tracked; *now is the time it is remembered from, read from
// the clock on first use in the batch.
func (p *deltaqProcessor) endInstance(span ptrace.Span, k inflight.Key, pi int, res *resourceInfo, now *int64) (int, bool) {
	if *now == 0 {
		*now = p.clock.Now().UnixNano()
	}
	r := p.tracker.End(k, *now)
	if r.Cut > 0 {
		p.stats.endedEvictions.Add(int64(r.Cut))
	}
	if !r.Found {
		return pi, false
	}
	late := r.State == inflight.TimedOut
	if late {
		p.stats.late[r.Probe].Add(1)
	}
	if r.Probe != pi && !p.m.rules.Holds(r.Probe, span, &res.Resource) {
		p.mismatched(r.Probe, pi, span)
		return pi, false
	}
	return r.Probe, late
}

// mismatched counts the instance of probe a that a span of probe b, which
// a's match does not select, ended. The first such instance of each probe
// is logged at warn level, naming both, the others at debug level.
func (p *deltaqProcessor) mismatched(a, b int, span ptrace.Span) {
	p.stats.mismatched[a].Add(1)
	level := zap.DebugLevel
	if p.stats.mismatchWarned[a].CompareAndSwap(false, true) {
		level = zap.WarnLevel
	}
	if ce := p.logger.Check(level, "deltaq: a start event named a probe whose match does not select its span; the instance has no outcome for that probe"); ce != nil {
		ce.Write(zap.String("probe", p.m.probes[a].name), zap.String("span_probe", p.m.probes[b].name),
			zap.String("span", storedString(span.Name())),
			zap.Stringer("trace_id", span.TraceID()), zap.Stringer("span_id", span.SpanID()))
	}
}

// layoutAttrs returns the number of layout attributes putLayout writes.
func layoutAttrs(pr *probe) int {
	if pr.lay.Bins > 0 {
		return 2
	}
	return 1
}

// putLayout writes the layout attributes of an instance judged by dMax ns:
// deltaq.dmax_ns, and deltaq.bins but for a probe with log-linear buckets,
// which has no bin count to give (a reader in another collector then finds
// no layout it can follow and refuses the instance, counted; the contract
// in internal/contract).
func putLayout(attrs pcommon.Map, pr *probe, dMax int64) {
	attrs.PutInt(contract.AttrDMaxNs, dMax)
	if pr.lay.Bins > 0 {
		attrs.PutInt(contract.AttrBins, int64(pr.lay.Bins))
	}
}

// layoutMarks records, for one batch, the probes of which a span already
// carries the layout attributes. The marks of the first 256 probes live in
// the array, on processTraces' stack; a processor with more probes grows a
// slice for the others, once per batch that matches them.
type layoutMarks struct {
	low  [4]uint64
	high []uint64
}

// first marks probe pi and reports whether it was not marked yet.
func (m *layoutMarks) first(pi int) bool {
	w, bit := pi/64, uint64(1)<<(pi%64)
	var word *uint64
	if w < len(m.low) {
		word = &m.low[w]
	} else {
		w -= len(m.low)
		if w >= len(m.high) {
			m.high = append(m.high, make([]uint64, w+1-len(m.high))...)
		}
		word = &m.high[w]
	}
	if *word&bit != 0 {
		return false
	}
	*word |= bit
	return true
}

func (p *deltaqProcessor) malformedSpan(span ptrace.Span, reason int) {
	p.stats.malformed[reason].Add(1)
	if ce := p.logger.Check(zap.DebugLevel, "deltaq: span not mapped"); ce != nil {
		ce.Write(zap.String("reason", reasonValues[reason]), zap.String("span", span.Name()),
			zap.Stringer("trace_id", span.TraceID()), zap.Stringer("span_id", span.SpanID()))
	}
}

// processLogs consumes the start events (log records whose EventName is
// contract.StartEventName, or contract.StartsEventName for the batch form)
// and removes them from the batch; every other log record passes through
// untouched. A batch left empty is not passed on.
func (p *deltaqProcessor) processLogs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	now := int64(0) // the time start events are checked against ended spans, read once per batch
	removed := false
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		res := newResourceInfo(rl.Resource())
		sls := rl.ScopeLogs()
		emptied := false
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			if !hasStartEvent(lrs) {
				continue
			}
			lrs.RemoveIf(func(lr plog.LogRecord) bool {
				switch lr.EventName() {
				case contract.StartEventName:
					p.startEvent(lr, &res, &now)
				case contract.StartsEventName:
					p.startsEvent(lr, &res, &now)
				default:
					return false
				}
				return true
			})
			removed = true
			emptied = emptied || lrs.Len() == 0
		}
		if emptied {
			sls.RemoveIf(func(sl plog.ScopeLogs) bool { return sl.LogRecords().Len() == 0 })
		}
	}
	if !removed {
		return ld, nil
	}
	rls.RemoveIf(func(rl plog.ResourceLogs) bool { return rl.ScopeLogs().Len() == 0 })
	if rls.Len() == 0 {
		return ld, processorhelper.ErrSkipProcessingData // nothing left to pass on
	}
	return ld, nil
}

func hasStartEvent(lrs plog.LogRecordSlice) bool {
	for k := 0; k < lrs.Len(); k++ {
		if n := lrs.At(k).EventName(); n == contract.StartEventName || n == contract.StartsEventName {
			return true
		}
	}
	return false
}

// startEvent starts tracking the instance a start event announces; its
// deadline is the event's timestamp + the probe's dMax, and it is due
// (reported if its span has not arrived) at the deadline + timeout_grace. A
// start event whose span has already ended is counted and not tracked; *now
// is the time that is judged at, read from the clock on first use in the
// batch.
func (p *deltaqProcessor) startEvent(lr plog.LogRecord, res *resourceInfo, now *int64) {
	p.tracker.Remember()
	tid, sid := lr.TraceID(), lr.SpanID()
	if tid.IsEmpty() || sid.IsEmpty() {
		p.malformedStart(tid, sid, reasonMissingIDs)
		return
	}
	// A start event without a start time is refused as such whatever
	// probe it names, as the deltaq connector refuses it (invalid).
	ts := lr.Timestamp()
	if ts == 0 || ts > math.MaxInt64 {
		p.malformedStart(tid, sid, reasonInvalidTimestamp)
		return
	}
	attrs := lr.Attributes()
	// A deltaq.probe that is not a string names no probe: it must not
	// leave ok set and pi at 0, the first probe.
	var pi int
	ok := false
	if v, has := attrs.Get(contract.AttrProbe); has && v.Type() == pcommon.ValueTypeStr {
		pi, ok = p.startProbe(v.Str())
	}
	if !ok {
		p.malformedStart(tid, sid, reasonUnknownProbe)
		return
	}
	pr := &p.m.probes[pi]
	name := pr.name
	if v, ok := attrs.Get(contract.AttrSpanName); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		name = storedString(v.Str())
	}
	var th uint64
	if v, ok := attrs.Get(contract.AttrTraceState); ok && v.Type() == pcommon.ValueTypeStr {
		th, _ = contract.Threshold(v.Str())
	}
	inst := p.startInstance(inflight.Key{TraceID: tid, SpanID: sid}, pi, int64(ts), th)
	inst.Service, inst.Name = res.storedServiceName(), name
	if *now == 0 {
		*now = p.clock.Now().UnixNano()
	}
	l := p.tracker.Lock()
	p.track(l, &inst, *now)
	l.Unlock()
}

// startsEvent starts tracking the instances a batch start event announces,
// each as startEvent does one, under one hold of the tracker; their
// synthetic timeout spans take the probe's name. A malformed record is
// counted once (reason malformed_batch) and none of its entries is read.
func (p *deltaqProcessor) startsEvent(lr plog.LogRecord, res *resourceInfo, now *int64) {
	p.tracker.Remember()
	starts, probe, err := contract.ReadStarts(lr.Attributes())
	if err != contract.StartsOK {
		p.stats.malformed[reasonMalformedBatch].Add(1)
		if ce := p.logger.Check(zap.DebugLevel, "deltaq: batch start event refused"); ce != nil {
			ce.Write(zap.String("reason", err.Error()), zap.String("probe", probe[:min(len(probe), contract.MaxNameLength)]))
		}
		return
	}
	pi, known := p.startProbe(probe)
	service := res.storedServiceName()
	if *now == 0 {
		*now = p.clock.Now().UnixNano()
	}
	l := p.tracker.Lock()
	defer l.Unlock()
	var e contract.StartEntry
	for i := range starts.Len() {
		starts.Read(i, &e)
		switch {
		case e.TraceID == [16]byte{} || e.SpanID == [8]byte{}:
			p.malformedStart(e.TraceID, e.SpanID, reasonMissingIDs)
		case !e.Valid(): // no start time, whatever the probe (startEvent)
			p.malformedStart(e.TraceID, e.SpanID, reasonInvalidTimestamp)
		case !known:
			p.malformedStart(e.TraceID, e.SpanID, reasonUnknownProbe)
		default:
			inst := p.startInstance(inflight.Key{TraceID: e.TraceID, SpanID: e.SpanID}, pi, e.Start, e.Threshold)
			inst.Service, inst.Name = service, p.m.probes[pi].name
			p.track(l, &inst, *now)
		}
	}
}

// startProbe returns the index of the probe named name, and false when
// there is none. No configured probe name is longer than
// contract.MaxNameLength: a longer one is refused before the lookup, which
// would hash all of it.
func (p *deltaqProcessor) startProbe(name string) (int, bool) {
	if len(name) > contract.MaxNameLength {
		return 0, false
	}
	pi, ok := p.m.byName[name]
	return int(pi), ok
}

// startInstance returns the instance of span k of probe pi started at
// start (> 0) with sampling threshold th: its deadline start + the probe's
// dMax, due at the deadline + timeout_grace.
func (p *deltaqProcessor) startInstance(k inflight.Key, pi int, start int64, th uint64) inflight.Instance {
	deadline := addSat(start, p.m.probes[pi].currentDMax())
	return inflight.Instance{
		Threshold: th,
		Key:       k,
		Probe:     pi,
		Start:     start,
		Deadline:  deadline,
		Due:       addSat(deadline, p.grace),
	}
}

// track tracks inst on the held tracker at now and counts what that did: a
// start event after its span, a duplicate, an eviction.
func (p *deltaqProcessor) track(l inflight.Locked, inst *inflight.Instance, now int64) {
	var ev inflight.Eviction
	switch l.Track(inst, now, &ev) {
	case inflight.AfterEnd:
		p.stats.startAfterEnd[inst.Probe].Add(1)
		if ce := p.logger.Check(zap.DebugLevel, "deltaq: start event after its span, not tracked"); ce != nil {
			ce.Write(zap.String("probe", p.m.probes[inst.Probe].name), zap.Stringer("trace_id", pcommon.TraceID(inst.Key.TraceID)),
				zap.Stringer("span_id", pcommon.SpanID(inst.Key.SpanID)))
		}
		return
	case inflight.Duplicate:
		p.malformedStart(inst.Key.TraceID, inst.Key.SpanID, reasonDuplicateStart)
		return
	case inflight.Stale:
		p.malformedStart(inst.Key.TraceID, inst.Key.SpanID, reasonStaleStart)
		return
	case inflight.Future:
		p.malformedStart(inst.Key.TraceID, inst.Key.SpanID, reasonFutureStart)
		return
	}
	if ev.Evicted {
		p.stats.evictions[ev.State].Add(1)
		p.stats.endedEvictions.Add(int64(ev.Cut))
		if ce := p.logger.Check(zap.DebugLevel, "deltaq: max_in_flight reached, oldest instance evicted"); ce != nil {
			ce.Write(zap.String("probe", p.m.probes[ev.Instance.Probe].name), zap.Stringer("state", ev.State))
		}
	}
}

func (p *deltaqProcessor) malformedStart(tid pcommon.TraceID, sid pcommon.SpanID, reason int) {
	p.stats.malformed[reason].Add(1)
	if ce := p.logger.Check(zap.DebugLevel, "deltaq: start event refused"); ce != nil {
		ce.Write(zap.String("reason", reasonValues[reason]), zap.Stringer("trace_id", tid), zap.Stringer("span_id", sid))
	}
}

// expire reports the instances whose due time (deadline + timeout_grace)
// has passed by now (ns since the Unix epoch) as synthetic timeout spans,
// sent to the traces pipeline's next consumer, and forgets the timed-out
// instances whose late window has passed and the ended spans whose
// ended_window has passed. The next consumer has sendTimeout to take the
// spans, and no longer than the processor runs: one that blocks (an exporter
// without a sending queue, or with block_on_overflow, while its endpoint is
// down) costs the spans, counted as dropped, rather than holding the timer,
// whose later timeouts would wait behind it, and the shutdown, which waits
// for the timer.
func (p *deltaqProcessor) expire(ctx context.Context, now int64) {
	fired, cut := p.tracker.Expire(now, p.fired[:0])
	p.fired = fired
	if cut > 0 {
		p.stats.endedEvictions.Add(int64(cut))
	}
	if len(fired) == 0 {
		return
	}
	for i := range fired {
		p.stats.instances[fired[i].Probe][outcomeTimeout].Add(1)
		p.stats.startTimeouts[fired[i].Probe].Add(1)
		if a := p.m.probes[fired[i].Probe].auto; a != nil {
			a.Censor() // no span, no delay: longer than its dMax
		}
	}
	td := p.syntheticSpans(fired)
	clear(fired) // drop the strings
	if p.tracesNext == nil {
		p.stats.syntheticDropped.Add(int64(len(fired)))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.sendTimeout)
	err := p.tracesNext.ConsumeTraces(ctx, td)
	cancel()
	if err != nil {
		p.stats.syntheticDropped.Add(int64(len(fired)))
		if ce := p.logger.Check(zap.DebugLevel, "deltaq: synthetic timeout spans refused by the next consumer"); ce != nil {
			ce.Write(zap.Int("spans", len(fired)), zap.Error(err))
		}
	}
}

// syntheticSpans builds one span per timed-out instance (the contract in
// internal/contract): the started span's trace and span ids, start = the start
// event's timestamp, end = start + dMax (whatever the grace), status ERROR,
// and the outcome attributes with deltaq.outcome = timeout and
// deltaq.synthetic = true. Spans are grouped in one resource per
// service.name.
func (p *deltaqProcessor) syntheticSpans(fired []inflight.Instance) ptrace.Traces {
	td := ptrace.NewTraces()
	byService := make(map[string]ptrace.SpanSlice)
	for i := range fired {
		in := &fired[i]
		spans, ok := byService[in.Service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			if in.Service != "" {
				rs.Resource().Attributes().PutStr(attrServiceName, in.Service)
			}
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(metadata.ScopeName)
			spans = ss.Spans()
			byService[in.Service] = spans
		}
		pr := &p.m.probes[in.Probe]
		s := spans.AppendEmpty()
		s.SetTraceID(in.Key.TraceID)
		s.SetSpanID(in.Key.SpanID)
		if in.Threshold != 0 {
			// The span never came: its start event's threshold stands for
			// its tracestate, so the timeout counts as the span would have.
			s.TraceState().FromRaw(contract.ThresholdTraceState(in.Threshold))
		}
		s.SetName(in.Name)
		s.SetStartTimestamp(pcommon.Timestamp(in.Start))
		s.SetEndTimestamp(pcommon.Timestamp(in.Deadline))
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(syntheticStatusMessage)
		a := s.Attributes()
		a.EnsureCapacity(5)
		a.PutStr(contract.AttrProbe, pr.name)
		a.PutStr(contract.AttrOutcome, contract.Timeout)
		// The dMax the instance's deadline was set by: an auto probe's may
		// have changed since.
		putLayout(a, pr, in.Deadline-in.Start)
		a.PutBool(contract.AttrSynthetic, true)
	}
	return td
}

// storedString returns s, cut to at most contract.MaxNameLength bytes, as a
// copy of its own: a string the processor keeps (in an in-flight instance)
// costs at most that much whatever the input, and does not keep alive the
// buffer of the batch it came in. The cut is at a UTF-8 rune boundary, so a
// valid name stays valid; in invalid UTF-8 (no rune start among the
// utf8.UTFMax bytes that end at the bound) it is at the bound.
func storedString(s string) string {
	const bound = contract.MaxNameLength
	if len(s) > bound {
		cut := bound
		for i := bound; i > bound-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) { // s[i] starts the first rune left out
				cut = i
				break
			}
		}
		s = s[:cut]
	}
	return strings.Clone(s)
}

// addSat returns a + b for b ≥ 0, saturating at the largest int64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
