// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// SpanInstruments are the self-telemetry of the probes an observer matches
// in the spans (the connector's): their start events and their `dmax:
// auto`; nil fields record nothing.
type SpanInstruments struct {
	// StartEvents counts the start events read, by result (startResults).
	StartEvents metric.Int64Counter
	// StartTimeouts counts the instances timed out in real time, by probe;
	// LateSpans the spans that ended them after that, not counted again.
	StartTimeouts, LateSpans metric.Int64Counter
	// StartEventsMismatched counts the instances ended by a span that the
	// match of the probe their start event named does not select, by that
	// probe.
	StartEventsMismatched metric.Int64Counter
	// InFlightEvictions counts the tracked instances evicted by
	// max_in_flight, by state; EndedEvictions the remembered spans
	// forgotten by max_ended inside ended_window.
	InFlightEvictions, EndedEvictions metric.Int64Counter
	// InFlight is the number of instances tracked, by state, at each tick.
	InFlight metric.Int64Gauge
	// Dmax is an auto probe's dMax in force, in seconds, by probe, at each
	// window; DmaxChanges counts its changes, DmaxChangesSuppressed those
	// dmax_changes_per_hour held back.
	Dmax                               metric.Float64Gauge
	DmaxChanges, DmaxChangesSuppressed metric.Int64Counter
}

// The results of a start event (StartInstruments.StartEvents).
const (
	startTracked = iota
	startDuplicate
	startAfterEnd
	startUnknownProbe
	startInvalid
	startStale
	startFuture
	startResults
)

var startResultNames = [startResults]string{"tracked", "duplicate", "after_end", "unknown_probe", "invalid", "stale", "future"}

// starts is the real-time timeout path of an observer that takes start
// events (Settings.StartEvents): the instances they announce, tracked
// (internal/inflight) until the span of the instance arrives, and a timer
// that counts those whose span has not arrived by start + dMax + grace as
// timeouts, straight into the engine. Only the probes the observer matches
// in the spans itself (SpanProbes) take start events: their spans end the
// instances.
type starts struct {
	tracker *inflight.Tracker
	grace   int64
	// ins are the observer's instruments of the probes matched in spans.
	ins *SpanInstruments
	// resultAttr, stateAttr and probeAttr are the instruments' attributes.
	resultAttr [startResults]metric.MeasurementOption
	stateAttr  [2]metric.MeasurementOption
	probeAttr  []metric.MeasurementOption
	// names are the span probes' names; warned[i] is set once a mismatched
	// instance of probe i was logged at warn level (mismatched).
	names  []string
	warned []atomic.Bool
	logger *zap.Logger
	// fired is the timer's reusable buffer; in the instances the timer adds.
	fired []inflight.Instance
	in    analysis.Instance
	// serviceNames holds a copy of each service.name the start events came
	// with, which their instances keep (Instance.Service) for the timeouts
	// to count for, as a span's instance counts for its resource's: one
	// copy a service rather than one an instance, and no reference into a
	// batch of log records. Read and written under the tracker's lock;
	// emptied when it holds maxServiceNames.
	serviceNames map[string]string
	// expected says that a logs input is attached (Observer.ExpectStartEvents),
	// or that instances were carried over a reload (adoptStarts): the timer
	// runs.
	expected bool
	done     chan struct{}
}

// newStarts returns the start-event path of an observer whose span probes
// are named names.
func newStarts(opts inflight.Options, ins *SpanInstruments, names []string, logger *zap.Logger) *starts {
	s := &starts{tracker: inflight.NewTracker(opts), grace: int64(opts.TimeoutGrace), ins: ins,
		names: names, warned: make([]atomic.Bool, len(names)), logger: logger}
	for r := range s.resultAttr {
		s.resultAttr[r] = attrOption("result", startResultNames[r])
	}
	s.stateAttr = [2]metric.MeasurementOption{attrOption("state", inflight.Started.String()), attrOption("state", inflight.TimedOut.String())}
	s.probeAttr = make([]metric.MeasurementOption, len(names))
	for i, n := range names {
		s.probeAttr[i] = attrOption("probe", n)
	}
	return s
}

// maxServiceNames bounds starts.serviceNames: far more services than a
// probe's label names (services::max_per_probe), few enough that forged
// names cost little.
const maxServiceNames = 1024

// serviceName returns the service.name of a start event's resource, as
// its instances keep it: a copy of its first contract.MaxNameLength + 1
// bytes (the label cuts it to contract.MaxNameLength, and counts a longer
// name as too long), shared by the instances of the same service. Call
// it with the tracker held.
func (s *starts) serviceName(res pcommon.Resource) string {
	r := spanmatch.NewResource(res)
	name := r.ServiceName()
	if name == "" {
		return ""
	}
	name = name[:min(len(name), contract.MaxNameLength+1)]
	if kept, ok := s.serviceNames[name]; ok {
		return kept
	}
	if s.serviceNames == nil || len(s.serviceNames) >= maxServiceNames {
		s.serviceNames = make(map[string]string)
	}
	kept := strings.Clone(name)
	s.serviceNames[kept] = kept
	return kept
}

// completeSpanInstruments returns a copy of ins (nil: none) whose nil
// instruments record nothing.
func completeSpanInstruments(ins *SpanInstruments) *SpanInstruments {
	c := &SpanInstruments{}
	if ins != nil {
		*c = *ins
	}
	none := noInstruments()
	for _, f := range []*metric.Int64Counter{&c.StartEvents, &c.StartTimeouts, &c.LateSpans, &c.StartEventsMismatched,
		&c.InFlightEvictions, &c.EndedEvictions, &c.DmaxChanges, &c.DmaxChangesSuppressed} {
		if *f == nil {
			*f = none.Instances
		}
	}
	if c.InFlight == nil {
		c.InFlight = none.Probes
	}
	if c.Dmax == nil {
		c.Dmax, _ = noop.NewMeterProvider().Meter("").Float64Gauge("")
	}
	return c
}

// takeStarts makes the start-event path of an observer given
// Settings.StartEvents, taking over the instances in flight of the
// observer old parked across a reload (nil: none).
func (o *Observer) takeStarts(old *parked) {
	if o.set.StartEvents == nil {
		return
	}
	var names []string
	if o.spans != nil {
		names = o.spans.Names
	}
	o.starts = newStarts(*o.set.StartEvents, o.spanIns, names, o.logger)
	if o.spans != nil {
		o.spans.starts = o.starts
	}
	if old != nil {
		o.adoptStarts(old)
	}
}

// ExpectStartEvents says that start events will come (the connector is in
// a logs pipeline): the spans that end are remembered from now on, for
// start events that arrive after their span, and Start starts the timeout
// timer. It does nothing for an observer that
// takes no start events. Call it before Start.
func (o *Observer) ExpectStartEvents() {
	if o.starts == nil {
		return
	}
	o.starts.expected = true
	o.starts.tracker.Remember()
}

// ConsumeLogs tracks the instances that the start events among the log
// records announce, one a record (contract.StartEventName) or many
// (contract.StartsEventName, the batch form); every other record is
// ignored. Each instance is counted, by result, and refused when it names no
// probe the observer matches in the spans, has no trace or span id or no
// start time, repeats an instance tracked, or comes after its span; a batch
// record that is malformed as a whole (contract.DecodeStarts) counts once,
// as invalid.
func (o *Observer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s := o.starts
	if s == nil {
		return nil
	}
	var sb startBatch
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sb.serviceRead = false
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				name := lr.EventName()
				if name != contract.StartEventName && name != contract.StartsEventName {
					continue
				}
				if !sb.held {
					s.tracker.Remember()
					sb.now = o.now().UnixNano()
					sb.lock, sb.held = s.tracker.Lock(), true
				}
				if !sb.serviceRead {
					sb.service, sb.serviceRead = s.serviceName(rls.At(i).Resource()), true
				}
				if name == contract.StartsEventName {
					o.startsEvent(lr, &sb)
				} else {
					sb.counts[o.startEvent(lr, &sb)]++
				}
			}
		}
	}
	sb.release()
	for r, n := range sb.counts {
		if n > 0 {
			s.ins.StartEvents.Add(ctx, n, s.resultAttr[r])
		}
	}
	for st, n := range sb.evicted {
		if n > 0 {
			s.ins.InFlightEvictions.Add(ctx, n, s.stateAttr[st])
		}
	}
	if sb.cut > 0 {
		s.ins.EndedEvictions.Add(ctx, sb.cut)
	}
	return nil
}

// startBatch is a batch of start events' hold of the tracker, the probe of
// the batch's last start event, which the next one most often names too,
// and the counts of the batch's instances, by result, of the instances
// their tracking evicted, by state, and of the remembered spans cut to
// remember the timed-out ones evicted.
type startBatch struct {
	spanBatch
	probe   string
	pi      int32
	counts  [startResults]int64
	evicted [2]int64
	cut     int64
	// ev is the tracker's answer on an eviction (inflight.Locked.Track).
	ev inflight.Eviction
	// inst is the instance being tracked (track).
	inst inflight.Instance
	// service is the service.name of the resource of the start events
	// being read (starts.serviceName), once serviceRead is set.
	service     string
	serviceRead bool
}

// startEvent tracks the instance lr announces, due at its timestamp + the
// probe's dMax + timeout_grace, and returns the result.
func (o *Observer) startEvent(lr plog.LogRecord, sb *startBatch) int {
	tid, sid := lr.TraceID(), lr.SpanID()
	ts := lr.Timestamp()
	attrs := lr.Attributes()
	if tid.IsEmpty() || sid.IsEmpty() || ts == 0 || ts > math.MaxInt64 {
		o.refusedStart("invalid", probeOf(attrs), tid, sid, uint64(ts))
		return startInvalid
	}
	// A deltaq.probe that is not a string names no probe: it must not
	// leave ok set and pi at 0, the first probe in name order.
	var pi int32
	ok := false
	if v, has := attrs.Get(contract.AttrProbe); has && v.Type() == pcommon.ValueTypeStr {
		pi, ok = o.startProbe(v.Str(), sb)
	}
	if !ok {
		o.refusedStart("unknown_probe", probeOf(attrs), tid, sid, uint64(ts))
		return startUnknownProbe
	}
	var th uint64
	if v, ok := attrs.Get(contract.AttrTraceState); ok && v.Type() == pcommon.ValueTypeStr {
		th, _ = contract.Threshold(v.Str())
	}
	inst := &sb.inst
	*inst = inflight.Instance{Key: inflight.Key{TraceID: tid, SpanID: sid}, Probe: int(pi), Start: int64(ts), Threshold: th,
		Service: sb.service}
	inst.Deadline = addSat(inst.Start, o.spans.dMax(pi))
	inst.Due = addSat(inst.Deadline, o.starts.grace)
	return o.track(sb)
}

// startsEvent tracks the instances a batch start event announces, each
// as startEvent does one, and counts them in sb; a malformed record counts
// once, as invalid, and none of its entries is read.
func (o *Observer) startsEvent(lr plog.LogRecord, sb *startBatch) {
	starts, probe, err := contract.ReadStarts(lr.Attributes())
	if err != contract.StartsOK {
		if ce := o.logger.Check(zap.DebugLevel, "deltaq: batch start event refused"); ce != nil {
			ce.Write(zap.String("reason", err.Error()), zap.String("probe", probe[:min(len(probe), contract.MaxNameLength)]))
		}
		sb.counts[startInvalid]++
		return
	}
	pi, known := o.startProbe(probe, sb)
	// What the record's entries share is set once: the probe, its dMax
	// and dMax + the grace; an entry writes its own fields only.
	var dMax, dMaxGrace int64
	inst := &sb.inst
	*inst = inflight.Instance{Probe: int(pi), Service: sb.service}
	if known {
		dMax = o.spans.dMax(pi)
		dMaxGrace = addSat(dMax, o.starts.grace)
	}
	var e contract.StartEntry
	warmed := 0
	for i := range starts.Len() {
		if known && i >= warmed {
			warmed = i + warmAhead
			warmStarts(&starts, i, sb)
		}
		starts.Read(i, &e)
		switch {
		case !e.Valid():
			o.refusedStart("invalid", probe, e.TraceID, e.SpanID, uint64(e.Start))
			sb.counts[startInvalid]++
		case !known:
			o.refusedStart("unknown_probe", probe, e.TraceID, e.SpanID, uint64(e.Start))
			sb.counts[startUnknownProbe]++
		default:
			// Field by field (spanInstance).
			inst.Key.TraceID, inst.Key.SpanID = e.TraceID, e.SpanID
			inst.Start, inst.Threshold = e.Start, e.Threshold
			inst.Deadline, inst.Due = addSat(e.Start, dMax), addSat(e.Start, dMaxGrace)
			sb.counts[o.track(sb)]++
		}
	}
}

// warmStarts warms what tracking the entries of starts from i on, up to
// warmAhead of them, will read and write (inflight.Locked.WarmStarts and
// WarmFree): their keys' positions in the index, and among the spans
// remembered as ended, and the free slots their instances will take. With
// thousands of instances in flight the index's positions miss the cache: a
// start's duplicate check, one entry after the other, took 13 % of a
// loaded collector's CPU (5000-span requests), 4 % with the positions
// warmed; the look-up among the spans remembered, where an SDK leaves out
// the starts of the spans that end before it sends them (make load's
// starts-elided), 11 %. With few in flight, all in the cache, the
// look-ahead costs about 44 instructions an entry.
func warmStarts(starts *contract.Starts, i int, sb *startBatch) {
	var keys [warmAhead]inflight.Key
	n := min(warmAhead, starts.Len()-i)
	for j := range n {
		starts.IDs(i+j, &keys[j].TraceID, &keys[j].SpanID)
	}
	sb.lock.WarmStarts(keys[:n])
	sb.lock.WarmFree(n)
}

// startProbe returns the index of the span probe named name, and false
// when the observer matches no such probe in the spans.
func (o *Observer) startProbe(name string, sb *startBatch) (int32, bool) {
	if sb.probe != "" && name == sb.probe {
		return sb.pi, true
	}
	// No probe name is longer than contract.MaxNameLength: a longer one is
	// refused before the look-up, which would hash all of it.
	if o.spans == nil || len(name) > contract.MaxNameLength {
		return 0, false
	}
	pi, ok := o.spans.byName[name]
	if ok {
		sb.probe, sb.pi = o.spans.Names[pi], pi
	}
	return pi, ok
}

// track tracks sb.inst, the instance a start event announces, due at its
// start (> 0) + the probe's dMax + timeout_grace (Due), counts the
// instance its tracking evicted, if any, and returns the result. The
// instance is filled in place, not passed: the tracker copies it once,
// into its table.
func (o *Observer) track(sb *startBatch) int {
	switch sb.lock.Track(&sb.inst, sb.now, &sb.ev) {
	case inflight.AfterEnd:
		return startAfterEnd
	case inflight.Duplicate:
		o.refusedStart("duplicate", o.spans.Names[sb.inst.Probe], sb.inst.Key.TraceID, sb.inst.Key.SpanID, uint64(sb.inst.Start))
		return startDuplicate
	case inflight.Stale:
		o.refusedStart("stale", o.spans.Names[sb.inst.Probe], sb.inst.Key.TraceID, sb.inst.Key.SpanID, uint64(sb.inst.Start))
		return startStale
	case inflight.Future:
		o.refusedStart("future", o.spans.Names[sb.inst.Probe], sb.inst.Key.TraceID, sb.inst.Key.SpanID, uint64(sb.inst.Start))
		return startFuture
	}
	if sb.ev.Evicted {
		sb.evicted[sb.ev.State]++
		sb.cut += int64(sb.ev.Cut)
	}
	return startTracked
}

// refusedStart logs a start event refused for reason at debug level, with
// what finds its sender: the probe it named (cut to the longest name a
// probe can have), its ids and its start time (0: none, or past the
// largest int64 in a batch's entry).
func (o *Observer) refusedStart(reason, probe string, tid pcommon.TraceID, sid pcommon.SpanID, start uint64) {
	if ce := o.logger.Check(zap.DebugLevel, "deltaq: start event refused"); ce != nil {
		ce.Write(zap.String("reason", reason), zap.String("probe", probe[:min(len(probe), contract.MaxNameLength)]),
			zap.Stringer("trace_id", tid), zap.Stringer("span_id", sid), zap.Uint64("start_time_unix_nano", start))
	}
}

// probeOf returns the deltaq.probe of a start event's attributes, "" when
// it is missing or not a string.
func probeOf(attrs pcommon.Map) string {
	if v, ok := attrs.Get(contract.AttrProbe); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// startTimer starts the timeout timer when start events are expected.
func (o *Observer) startTimer() {
	s := o.starts
	if s == nil || !s.expected {
		return
	}
	if o.spans == nil {
		o.logger.Warn("deltaq: the connector is in a logs pipeline, but none of its probes has a match: start events name probes it matches in the spans, and are refused (unknown_probe)")
	}
	ticks := o.set.StartTicks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(s.tracker.Options().TimerResolution)
		ticks = ticker.C
	}
	s.done = make(chan struct{})
	go o.runTimeouts(ticks, ticker)
}

// stopTimer waits for the timeout timer to stop (o.stop is closed).
func (o *Observer) stopTimer(ctx context.Context) error {
	if o.starts == nil || o.starts.done == nil {
		return nil
	}
	select {
	case <-o.starts.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runTimeouts is the timeout timer.
func (o *Observer) runTimeouts(ticks <-chan time.Time, ticker *time.Ticker) {
	o.every(ticks, ticker, o.starts.done, func() { o.expire(o.now().UnixNano()) })
}

// expire counts the instances due by now as timeouts: each ends at start +
// dMax (its deadline), with the adjusted count of its start event's
// sampling threshold, and never completes, so the analysis resolution
// counts it past every dMax; it counts for the service of its start event,
// as the deltaq processor's synthetic timeout span does.
func (o *Observer) expire(now int64) {
	s := o.starts
	var cut int
	s.fired, cut = s.tracker.Expire(now, s.fired[:0])
	ctx := o.runCtx
	if cut > 0 {
		s.ins.EndedEvictions.Add(ctx, int64(cut))
	}
	if n := len(s.fired); n > 0 {
		// On the clock, read once the engine is held: after the clock went
		// back, the timeouts due in the windows closed already are too
		// late, as their spans would be.
		b := o.engine.BeginAt(o.now)
		for i := range s.fired {
			o.addTimeout(b, &s.fired[i])
		}
		b.End()
		var bs batchServices
		for i := range s.fired {
			if service := s.fired[i].Service; service != "" {
				bs.add(o.spans.Names[s.fired[i].Probe], service)
			}
		}
		o.noteServices(ctx, bs.pairs)
		for i := range s.fired {
			s.ins.StartTimeouts.Add(ctx, 1, s.probeAttr[s.fired[i].Probe])
			o.spans.censor(s.fired[i].Probe) // no span, no delay: longer than its dMax
		}
	}
	started, timedOut := s.tracker.Counts()
	s.ins.InFlight.Record(ctx, int64(started), s.stateAttr[inflight.Started])
	s.ins.InFlight.Record(ctx, int64(timedOut), s.stateAttr[inflight.TimedOut])
}

// addTimeout adds the timeout of a tracked instance to b.
func (o *Observer) addTimeout(b analysis.Batch, f *inflight.Instance) {
	in := &o.starts.in
	*in = analysis.Instance{Probe: o.spans.Names[f.Probe], Outcome: analysis.Timeout, Start: f.Start, End: f.Deadline}
	in.TraceID, in.SpanID = f.Key.TraceID, f.Key.SpanID
	if o.spans.isAuto(int32(f.Probe)) {
		// The layout its deadline was set by, as the processor's synthetic
		// span carries it: an auto probe's dMax may have changed since its
		// start, and under a longer one the instance might have ended in
		// time (analysis, placeLayout). Without it, such a timeout was
		// counted at start + the new dMax, as longer than that.
		in.DMaxNs, in.Bins = f.Deadline-f.Start, o.spans.Auto[f.Probe].Bins
	}
	if f.Threshold != 0 && f.Threshold < 1<<56 {
		a := float64(uint64(1)<<56) / float64(uint64(1)<<56-f.Threshold)
		in.Weight = contract.Weight(a, binary.LittleEndian.Uint64(in.SpanID[:]))
	}
	if o.spans.resolved[f.Probe] {
		b.AddTo(o.spans.refs[f.Probe], in)
	} else {
		b.Add(in)
	}
}

// spanBatch is what a batch of spans keeps of the start-event path: the
// batch's time, read on first use, and the tracker, held from the first
// span that asks it to the batch's end (release), one lock a batch.
type spanBatch struct {
	now  int64
	lock inflight.Locked
	held bool
	// spans are the spans of the scope being added, at the index of the
	// span being added, and those before warmed are warmed already
	// (spanProbes.warm).
	spans      ptrace.SpanSlice
	at, warmed int
}

// release lets the tracker go, if the batch held it.
func (sb *spanBatch) release() {
	if sb.held {
		sb.lock.Unlock()
		sb.held = false
	}
}

// hold reports whether the spans must be looked up in the start events'
// tracker (start events are in use, or instances are tracked), and holds
// it for the batch from the first span that must.
func (sp *spanProbes) hold(sb *spanBatch) bool {
	s := sp.starts
	if s == nil || !sb.held && !s.tracker.Active() {
		return false
	}
	if !sb.held {
		sb.now = sp.clock().UnixNano()
		sb.lock, sb.held = s.tracker.Lock(), true
	}
	return true
}

// warmAhead is the number of spans whose keys are warmed
// (inflight.Locked.Warm) at a time: enough for the processor to overlap
// their cache misses, few enough that their lines stay in the first-level
// cache until their turn.
const warmAhead = 32

// warm warms the tracker's look-ups of the span being added and the
// warmAhead − 1 after it (sb.spans), which the batch holds. It is called
// by the look-up itself (endSpan), so that spans no probe matches, which
// are not looked up, are not warmed either unless they follow a matched
// one closely.
func warm(sb *spanBatch) {
	var keys [warmAhead]inflight.Key
	n := min(warmAhead, sb.spans.Len()-sb.at)
	for i := range n {
		span := sb.spans.At(sb.at + i)
		keys[i].TraceID, keys[i].SpanID = span.TraceID(), span.SpanID()
	}
	sb.lock.Warm(keys[:n])
	sb.warmed = sb.at + n
}

// endSpan ends the tracked instance of a matched span, if any, while start
// events are in use, and returns the probe of the instance it ended, else
// -1, and whether that instance's timeout was counted already (the span is
// late, and not counted again for it). The span is remembered from the
// batch's time, whether it ended an instance or not. in holds the span's
// ids, whatever its times.
func (sp *spanProbes) endSpan(in *analysis.Instance, sb *spanBatch) (ended int32, late bool) {
	// A span without its ids ends no instance (no start event without ids
	// is tracked), and is not remembered: it would take the place of a
	// span a start event may still come for.
	if in.TraceID == ([16]byte{}) || in.SpanID == ([8]byte{}) || !sp.hold(sb) {
		return -1, false
	}
	if sb.at >= sb.warmed {
		warm(sb)
	}
	s := sp.starts
	var k inflight.Key
	k.TraceID, k.SpanID = in.TraceID, in.SpanID
	r := sb.lock.EndKey(&k, sb.now)
	if r.Cut > 0 {
		s.ins.EndedEvictions.Add(context.Background(), int64(r.Cut))
	}
	if !r.Found {
		return -1, false
	}
	if r.State == inflight.TimedOut {
		s.ins.LateSpans.Add(context.Background(), 1, s.probeAttr[r.Probe])
	}
	return int32(r.Probe), r.State == inflight.TimedOut
}

// mismatched counts the instance of probe p that a span of other probes
// only (hits) ended: the start event named a probe whose match does not
// select the span, and the instance ends with no outcome for p. The first
// such instance of each probe is logged at warn level, naming the probes,
// the others at debug level.
func (s *starts) mismatched(p int32, hits []int32, span ptrace.Span) {
	s.ins.StartEventsMismatched.Add(context.Background(), 1, s.probeAttr[p])
	level, msg := zap.DebugLevel, "deltaq: a start event named a probe whose match does not select its span; the instance is not counted for that probe"
	if s.warned[p].CompareAndSwap(false, true) {
		level = zap.WarnLevel
	}
	ce := s.logger.Check(level, msg)
	if ce == nil {
		return
	}
	matched := make([]string, len(hits))
	for i, h := range hits {
		matched[i] = s.names[h]
	}
	ce.Write(zap.String("probe", s.names[p]), zap.Strings("span_probes", matched),
		zap.String("span", span.Name()[:min(len(span.Name()), contract.MaxNameLength)]),
		zap.Stringer("trace_id", span.TraceID()), zap.Stringer("span_id", span.SpanID()))
}

// addSat returns a + b for b ≥ 0, saturating at the largest int64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
