// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/inflight"
)

// parked is what an observer hands to its successor across a configuration
// reload (package reload): the analysis engine with its open windows and
// history, and the output's running streams, so that the cumulative
// series continue without a reset.
type parked struct {
	engine *analysis.Engine
	start  pcommon.Timestamp
	cum    map[string]*cumulative
	outs   map[string]*outStream
	// starts are the instances in flight from start events, with the
	// probes they refer to by index and those probes' dMax (an auto
	// probe's in force); nil when the observer took no start events.
	starts *parkedStarts
	// ranges are the decided auto probes' dMax, by name.
	ranges map[string]parkedRange
	// services are the probes' services (the deltaq.service label), and
	// windows the builder's window number they are seen by.
	services *services
	windows  uint64
	// after is the builder's end of a predecessor of another interval
	// (builder.after), whose held windows may still be open.
	after pcommon.Timestamp
	// settle is the gateway's settling after its start (missingAgents).
	settle settling
}

// parkedStarts is the start-event state an observer hands over.
type parkedStarts struct {
	tracker *inflight.Tracker
	names   []string
	dMaxNs  []int64
	// auto marks the probes with dmax: auto, whose instances each carry
	// the deadline of the dMax in force at their start.
	auto []bool
}

// reloadKey is the key of an observer's parked state: the component's kind
// and ID.
func (o *Observer) reloadKey() string { return o.set.Kind + "/" + o.set.ID }

// park hands the observer's state to the observer of the same component
// that the reload builds, instead of flushing the open windows. Called by
// Shutdown after the window timer stopped.
func (o *Observer) park() {
	// Layout changes announced since the last batch (an auto probe's dMax
	// chosen at its last tick) are the old configuration's, taken now:
	// the new configuration's components are not built yet.
	o.engine.CheckLayouts()
	st := &parked{engine: o.engine, start: o.build.start, cum: o.build.cum, outs: o.build.outs, ranges: o.auto.parkRanges(),
		services: &o.build.services, windows: o.build.windows, after: o.build.after, settle: o.settle}
	if o.starts != nil && o.spans != nil {
		ps := &parkedStarts{tracker: o.starts.tracker, names: o.spans.Names, dMaxNs: make([]int64, len(o.spans.Names)), auto: o.spans.autoMask()}
		for i := range ps.dMaxNs {
			ps.dMaxNs[i] = o.spans.dMax(int32(i)) // an auto probe's in force
		}
		st.starts = ps
	}
	o.handover.Park(o.reloadKey(), st)
	o.logger.Info("configuration reload: handing the open windows and the ΔQ history to the reloaded component")
}

// handOver parks the observer's state when its shutdown is part of a
// reload, and reports whether it did. A reload whose configuration the
// collector refuses stops the collector: the open windows are flushed then,
// as at a stop, since no successor will start to close them.
func (o *Observer) handOver() bool {
	pending, refused := o.handover.Status()
	if pending {
		o.park()
		return true
	}
	if refused != nil {
		o.logger.Warn("configuration reload refused: the collector stops; flushing the open windows as at a stop",
			zap.Error(refused))
	}
	return false
}

// afterAdoption runs when the component starts after a reload: every
// processor of the new configuration has registered its probes by then (the
// collector builds connectors and exporters before the processors that
// feed them), so a carried probe whose processor changed its dmax or bins
// is known now; the engine moves it to the new layout from its next window,
// and its band starts afresh. The windows due while the components were
// rebuilt close at once.
func (o *Observer) afterAdoption() {
	for _, a := range o.adopted {
		name := a.name
		l, registered := o.layouts.LookupLayout(name)
		if a.ok && registered && l.Valid() && a.layout != l {
			o.logger.Warn("configuration reload: the probe starts afresh", zap.String("probe", name),
				zap.String("reason", "its dmax or bins changed: the new layout applies from its next window"),
				zap.Duration("dmax", time.Duration(l.DMaxNs)), zap.Int("bins", l.Bins))
		}
	}
	o.adopted = nil
	o.expireCarried()
	o.tick(o.now())
}

// expireCarried times out the instances carried over a reload that fell
// due while the components were rebuilt, before the windows due then close
// (afterAdoption), so that they count in the windows of their deadlines.
func (o *Observer) expireCarried() {
	if o.starts != nil && o.starts.tracker.Len() > 0 {
		o.expire(o.now().UnixNano())
	}
}

// adopt takes over the state an observer of the same component parked
// before a reload; called by New, before the window timer starts.
func (o *Observer) adopt(st *parked) {
	ad := o.engine.Adopt(st.engine)
	if ad.Reason != "" {
		// The predecessor parked its open windows instead of flushing
		// them: they close at Start (flushPredecessor), as at a stop.
		o.predecessor = st
		o.logger.Warn("configuration reload: nothing carried over; the open windows are flushed as at a stop and every probe starts afresh",
			zap.String("reason", ad.Reason))
		return
	}
	o.build.start = st.start
	o.build.cum = st.cum
	o.build.outs = st.outs
	o.build.windows = st.windows
	o.build.after = st.after
	o.build.services.adopt(st.services)
	o.adoptSettling(st.settle)
	// Each carried probe's layout as carried, compared at Start with the
	// one its processor registers then: by Start a batch of the engine may
	// have moved the probe to the new layout already (a processor in
	// another pipeline that started first sends its timeouts on), and the
	// engine's layout would no longer tell the change.
	o.adopted = make([]adoptedProbe, len(ad.Carried))
	for i, name := range ad.Carried {
		l, ok := o.engine.Layout(name)
		o.adopted[i] = adoptedProbe{name: name, layout: l, ok: ok}
	}
	o.logger.Info("configuration reload: open windows, history, totals and trigger states carried over",
		zap.Strings("probes", ad.Carried))
	for name, why := range ad.Fresh {
		o.logger.Warn("configuration reload: the probe starts afresh", zap.String("probe", name), zap.String("reason", why))
	}
}

// flushPredecessor closes the open windows of a predecessor whose state
// could not be carried over (another interval: the windows do not line
// up), as its stop would have: each probe's streams, and its services
// (deltaq.service), continue in them to their end, and the component's
// own start afresh, after them (builder.after). Its windows were handed
// over rather than flushed at its shutdown, and were lost, their
// instances never counted. Called by Start, once the outputs are known.
func (o *Observer) flushPredecessor(now time.Time) {
	st := o.predecessor
	o.predecessor = nil
	b := o.build
	swap := func() {
		b.start, st.start = st.start, b.start
		b.cum, st.cum = st.cum, b.cum
		b.outs, st.outs = st.outs, b.outs
		b.windows, st.windows = st.windows, b.windows
		b.services.swap(st.services)
	}
	swap()
	defer swap()
	ctx, cancel := context.WithTimeout(o.runCtx, o.sendDeadline())
	defer cancel()
	results := st.engine.Flush(now)
	for _, r := range results {
		o.inspect(ctx, r)
		o.emit(ctx, r, now)
	}
	if n := len(results); n > 0 {
		// The last flushed window ends up to an interval of the
		// predecessor after now, later than the windows of the new
		// interval open since before it (builder.after).
		b.after = pcommon.NewTimestampFromTime(results[n-1].End)
	}
}

// adoptSettling takes over the settling of a gateway's predecessor
// (missingAgents), whose start the builder carries: when expected_agents is
// unchanged, a gateway that had had every expected agent counts a window
// that misses one at once, and one still settling counts the windows its
// predecessor held should an agent not come back in the minute after the
// start (not carried, a reloaded gateway settled again, and forgot both).
// With another expected_agents it settles afresh from the reload, as a
// gateway started with that configuration: the agents it expects now may
// come with it.
func (o *Observer) adoptSettling(old settling) {
	if old.expected == o.settle.expected {
		o.settle = old
		return
	}
	if o.settle.expected > 0 {
		o.logger.Info("configuration reload: gateway::expected_agents changed; the gateway waits for its agents again",
			zap.Int("expected_agents", o.settle.expected), zap.Int("was", old.expected),
			zap.Duration("at_most", o.settleMissing()))
	}
}

// adoptStarts takes over the instances in flight that the observer old
// parked: an instance keeps its deadline and state when its probe is still
// matched with the same dMax, or is still dmax: auto (its deadline is the
// dMax in force at its start, whatever the dMax in force now: they were
// dropped when the probe had chosen its dMax since the old observer
// started); the others are dropped, as the log says. A
// started instance waits for its span until just before the window of its
// deadline closes (reloadHold), whatever its grace, and times out if its
// span does not come, whether start events still come or not.
func (o *Observer) adoptStarts(old *parked) {
	ps := old.starts
	if ps == nil {
		return
	}
	remap := make([]int32, len(ps.names))
	for i, name := range ps.names {
		remap[i] = -1
		if o.spans == nil {
			continue
		}
		j, ok := o.spans.byName[name]
		if ok && (o.spans.dMax(j) == ps.dMaxNs[i] || ps.auto[i] && o.spans.isAuto(j)) {
			remap[i] = j
		}
	}
	hold := o.reloadHold()
	m := ps.tracker.MoveTo(o.starts.tracker, func(in *inflight.Instance) bool {
		if in.Probe < 0 || in.Probe >= len(remap) || remap[in.Probe] < 0 {
			return false
		}
		in.Probe = int(remap[in.Probe])
		in.Due = hold(in.Deadline)
		return true
	}, o.now().UnixNano())
	o.logger.Info("configuration reload: instances in flight from start events carried over",
		zap.Int("carried", m.Instances), zap.Int("dropped", m.Dropped),
		zap.Int("evicted", m.Evicted[inflight.Started]+m.Evicted[inflight.TimedOut]),
		zap.Int("remembered_spans", m.Remembered), zap.Int("remembered_spans_cut", m.Cut))
	if m.Cut > 0 {
		o.starts.ins.EndedEvictions.Add(o.runCtx, int64(m.Cut))
	}
	for st, n := range m.Evicted {
		if n > 0 {
			o.starts.ins.InFlightEvictions.Add(o.runCtx, int64(n), o.starts.stateAttr[st])
		}
	}
	if m.Instances > 0 {
		// The timer runs for them, a logs input or not: a configuration
		// that takes the component out of the logs pipeline still waits
		// for their spans, and counts those that do not come.
		o.starts.expected = true
	}
}

// reloadHold returns when an instance of deadline d carried over a reload
// times out if its span has not come: just before the window that counts
// the timeout closes (Engine.Closes, less two ticks of the timer and
// holdMargin), and never before d. A
// reload stops the receivers, and the spans sent meanwhile come only when
// their clients resend them, after a backoff (about 1 s for a gRPC
// connection, 2.5 to 7.5 s for an OTLP exporter's first retry): at its
// grace alone such an instance timed out before its span came (3 to 4 a
// probe at 50 instances a second and one reload, 34 at 150). Held, its
// span counts by its own duration; a timeout still counts in the window
// of its deadline, as the window's output cannot show the difference
// before it closes.
func (o *Observer) reloadHold() func(d int64) int64 {
	// holdMargin is the time the timer's expiry and the engine's batch may
	// take before the window's tick.
	const holdMargin = 100 * time.Millisecond
	margin := 2*int64(o.starts.tracker.Options().TimerResolution) + int64(holdMargin)
	return func(d int64) int64 {
		return max(d, o.engine.Closes(d)-margin)
	}
}

// adoptedProbe is a probe carried over a reload with the layout it was
// carried in (ok: the engine had one).
type adoptedProbe struct {
	name   string
	layout deltaq.Layout
	ok     bool
}
