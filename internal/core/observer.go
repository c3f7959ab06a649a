// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// Settings are what a component gives its observer.
type Settings struct {
	// Kind is the component's kind, "exporter" or "connector": with ID,
	// the key of the state handed over across a reload.
	Kind string
	// Instruments are the component's self-telemetry, made by its
	// generated TelemetryBuilder; nil records nothing.
	Instruments *Instruments
	// Layouts is the registry of the probe layouts the deltaq processors
	// of the collector configure (collectorstate.State, from the factory); nil:
	// no processor registers any.
	Layouts *contract.Layouts
	// Handover carries the observer's state across a configuration reload
	// of the collector (collectorstate.State, from the factory); nil: a reload
	// starts afresh.
	Handover *reload.Handover
	// Scope is the instrumentation scope of the output: the component's
	// import path.
	Scope string
	// Telemetry are the component's telemetry settings: the logger, the
	// MeterProvider of the self-telemetry, and the collector's resource,
	// copied onto every output batch so that the series of several
	// collectors observing the same probe stay apart downstream.
	Telemetry component.TelemetrySettings
	// Version is the collector's version, the scope version of the output.
	Version string
	// ID is the component's ID ("deltaq", "deltaq/gateway"): across a
	// configuration reload the observer of the same Kind and ID takes
	// over the state of its predecessor (package reload). Empty: none.
	ID string
	// Now is the clock; nil means time.Now. Ticks, when not nil, replaces
	// the interval ticker. Tests set both so that windows close without
	// sleeping.
	Now   func() time.Time
	Ticks <-chan time.Time
	// SpanProbes, when not nil, are probes the observer finds in the spans
	// themselves (the connector's probes with a match); their names are
	// entries of the configuration's probes, with a dMax and bins.
	SpanProbes *SpanProbes
	// StartEvents, when not nil, are the options of the start events the
	// observer takes (ConsumeLogs) for the instances of SpanProbes, whose
	// timeouts it counts in real time (starts.go): the connector's
	// start_events. StartTicks, when not nil, replaces the timeout
	// timer's ticker. SpanInstruments are the self-telemetry of the start
	// events and of the auto probes of SpanProbes.
	StartEvents     *inflight.Options
	StartTicks      <-chan time.Time
	SpanInstruments *SpanInstruments
	// Ticked, when not nil, is called by the window timer and the timeout
	// timer once the work of each tick they took from Ticks or StartTicks
	// is done, with the channel of the tick: a test's clock
	// (coretest.Clock) waits for it, so that a tick's work is over before
	// the test moves on, and never overlaps what the test does next.
	Ticked func(ticks <-chan time.Time)
}

// Outputs are the consumers of an observer's output: the exporter's OTLP
// senders, or the connector's next metrics and logs pipelines. A nil
// consumer means that the signal is not wanted: it is not built.
type Outputs struct {
	Metrics consumer.Metrics
	Logs    consumer.Logs
}

// Observer is the ΔQ observer of one component. ConsumeTraces counts the
// outcome instances into the analysis engine's windows under the engine's
// lock and nothing else; a timer (Start) closes the windows in order, turns
// each into OTLP metrics and logs and hands them to the Outputs. The traces
// path never waits for the output, and an output that refuses a batch costs
// that batch (counted in output_dropped), never the windows after it.
type Observer struct {
	cfg    *Config
	set    Settings
	logger *zap.Logger
	tel    *Instruments
	// layouts is the collector's registry of processor layouts.
	layouts *contract.Layouts
	// handover carries the state across a reload.
	handover *reload.Handover
	engine   *analysis.Engine
	build    *builder
	now      func() time.Time

	out     Outputs
	stop    chan struct{}
	done    chan struct{}
	running bool // the window timer was started
	runCtx  context.Context
	cancel  context.CancelFunc
	once    sync.Once

	prev     analysis.Stats // for telemetry deltas, used by the timer only
	dropAttr [len(analysis.Drops{})]metric.MeasurementOption
	trigAttr map[analysis.TriggerKind]metric.MeasurementOption
	fateAttr [len(analysis.Contributions{})]metric.MeasurementOption
	sigAttr  map[string]metric.MeasurementOption
	// boundAttr are the bound attribute's too_long and overflow.
	boundAttr [2]metric.MeasurementOption
	// referenced are the outcomes of the diagram and the entries of
	// probes, sorted.
	referenced []string
	// settle is a gateway's settling after its start (missingAgents),
	// carried across a reload (handover.go). Used by the timer only.
	settle settling
	// latest is the latest time a tick was given, and back is set while
	// the clock is more than an interval behind it (clockBack); used by
	// the timer only.
	latest time.Time
	back   bool
	// coarseWarned holds the probes warned about as under-resolved, so that
	// each is warned about once; used by the timer only.
	coarseWarned map[string]bool
	// layoutsWarned holds the probes of a gateway warned about as merged
	// from windows of other layouts, once each, and qtaWarned those whose
	// QTA reaches beyond their dMax; used by the timer only.
	layoutsWarned, qtaWarned map[string]bool
	// sharedWarned holds the agent names a gateway warned about as sent
	// under by two agents at once, at most maxSharedWarned; used by the
	// timer only.
	sharedWarned map[string]bool
	// snapshots writes and prunes the snapshot files; made at the first
	// snapshot, used by the timer only.
	snapshots *snapshotStore
	// adopted are the probes carried over a reload, checked at Start
	// (handover.go); nil when nothing was adopted.
	adopted []adoptedProbe
	// predecessor is the state parked before a reload that could not be
	// carried over, whose open windows Start flushes (flushPredecessor);
	// nil without.
	predecessor *parked
	// spans are the probes matched in the spans themselves
	// (Settings.SpanProbes), resolved in the engine; nil without.
	spans *spanProbes
	// starts is the start-event path (Settings.StartEvents); nil without.
	starts *starts
	// auto are the auto probes of spans (autoprobes.go); nil without.
	auto *autoProbes
	// spanIns are Settings.SpanInstruments, complete.
	spanIns *SpanInstruments
	// wire caches what reading the agents' windows learnt of their
	// layouts (windows.go); it has its own lock.
	wire *wireCache
	// scratch holds *windowScratch: the windows of a request being read,
	// with their buffers and a reader of wire, reused by the requests
	// ConsumeMetrics serves one after the other, one per concurrent
	// request.
	scratch sync.Pool
}

// New makes the observer of cfg, which the component has validated
// (Config.Check); its windows are aligned on the Unix epoch and the first
// is the one holding the current time.
func New(cfg *Config, set Settings) (*Observer, error) {
	if err := cfg.checkLive(); err != nil {
		return nil, err
	}
	logger := set.Telemetry.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	o := &Observer{
		cfg:    cfg,
		set:    set,
		logger: logger,
		now:    set.Now,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.layouts = set.Layouts; o.layouts == nil {
		o.layouts = new(contract.Layouts)
	}
	if o.handover = set.Handover; o.handover == nil {
		o.handover = reload.New()
	}
	if set.Telemetry.MeterProvider == nil {
		return nil, errors.New("deltaq observer: no MeterProvider in the telemetry settings")
	}
	if err := o.checkMadeBefore(); err != nil {
		return nil, err
	}
	if o.tel = set.Instruments; o.tel == nil {
		o.tel = noInstruments()
	}
	// The state a predecessor parked across a reload is claimed before the
	// engine is made: the auto probes take their chosen dMax first, so that
	// the engine starts with the layouts they had, not their dmax_max.
	var old *parked
	if set.ID != "" {
		if st, ok := o.handover.Claim(o.reloadKey()); ok {
			old = st.(*parked)
		}
	}
	now := o.now()
	if err := o.newEngine(now, old); err != nil {
		if old != nil {
			o.handover.Park(o.reloadKey(), old)
		}
		return nil, err
	}
	o.referenced = o.engine.ReferencedProbes()

	o.build = newBuilder(cfg.CDFPoints, cfg.exponentialMaxSize(), set.Scope, set.Version, now)
	o.settle = settling{expected: cfg.Gateway.ExpectedAgents, from: now}
	o.build.emitWindows = cfg.EmitWindows
	o.build.measure = cfg.MaxRequestBytes > 0
	o.build.services.configure(cfg.Services, cfg.Interval, cfg.ProbeIdleTimeout)
	o.build.windowsOnly = cfg.EmitWindows && cfg.WindowsOnly
	if set.Telemetry.Resource != (pcommon.Resource{}) {
		set.Telemetry.Resource.CopyTo(o.build.resource)
	}
	o.makeAttrs()
	o.runCtx, o.cancel = context.WithCancel(context.Background())
	o.wire = newWireCache()
	if old != nil {
		o.adopt(old)
	}
	o.spans = resolve(set.SpanProbes, o.engine, o.auto.rangesOf(), o.now)
	o.takeStarts(old)
	if set.ID != "" {
		// The processors that feed this component are made after it: each
		// runs this check once its probes are registered (misspelled).
		o.layouts.AddReader(o, o.checkReferences)
	}
	return o, nil
}

// makeAttrs makes the attributes of the self-telemetry.
func (o *Observer) makeAttrs() {
	for r := range o.dropAttr {
		o.dropAttr[r] = attrOption("reason", analysis.DropReason(r).String())
	}
	for c := range o.fateAttr {
		o.fateAttr[c] = attrOption("fate", analysis.Contribution(c).String())
	}
	o.trigAttr = make(map[analysis.TriggerKind]metric.MeasurementOption)
	for _, k := range []analysis.TriggerKind{analysis.TriggerQTA, analysis.TriggerFailure, analysis.TriggerLoad, analysis.TriggerDivergence, analysis.TriggerSlackTrend} {
		o.trigAttr[k] = attrOption("trigger", k.String())
	}
	o.boundAttr = [2]metric.MeasurementOption{attrOption("bound", "too_long"), attrOption("bound", "overflow")}
	o.sigAttr = map[string]metric.MeasurementOption{"metrics": attrOption("signal", "metrics"), "logs": attrOption("signal", "logs")}
}

// newEngine makes the analysis engine, the auto probes of the spans first:
// the engine looks their layouts up. Each auto probe keeps the dMax the
// observer old (nil: none) had chosen across a reload: made with its
// dmax_max instead, the engine saw the probe's layout change (a warning that
// it starts afresh, and two layout changes counted, for a probe whose
// layout did not change).
func (o *Observer) newEngine(now time.Time, old *parked) error {
	o.spanIns = completeSpanInstruments(o.set.SpanInstruments)
	o.auto = newAutoProbes(o.set.SpanProbes)
	if old != nil {
		o.auto.adoptRanges(old.ranges)
	}
	ac := o.cfg.engineConfig(o.layouts)
	o.auto.configure(&ac)
	// The band is read at the deltaq.cdf edges alone (builder.curves).
	ac.BandPoints = o.cfg.CDFPoints
	// A tick's sends may hold the window timer for sendDeadline, longer
	// than an interval under a second: the instances that end meanwhile
	// must still find their windows open.
	ac.LateAdvance = o.sendDeadline() - o.cfg.Interval
	var err error
	o.engine, err = analysis.New(ac, now)
	return err
}

func attrOption(k, v string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(k, v)))
}

// ConsumeTraces counts the outcome instances among the spans. Spans without
// the deltaq.probe attribute are not instances and are ignored; a span
// marked deltaq.late was already counted as a timeout when its instance
// timed out and is not counted again. It only takes the engine's lock: it
// never waits for the output.
//
// The batch is on the observer's clock (Engine.BeginAt): a deltaq
// processor's synthetic timeout span is known when it arrives, as the
// connector's own timeout of a start event is known when its timer fires,
// so after the clock went back one whose window closed before the step is
// too late, as the connector's is; counted, every synthetic timeout of the
// step went into the oldest open window, and none of its successes. The
// clock is read only for such a timeout.
func (o *Observer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	b := o.engine.BeginAt(o.now)
	var bs batchServices
	addTraces(b, td, &bs, o.spans)
	b.End()
	o.noteServices(ctx, bs.pairs)
	return nil
}

// noteServices records the services of a batch's instances (pairs of
// probe and service) for the probes' labels, and counts what the bounds
// cut.
func (o *Observer) noteServices(ctx context.Context, pairs []probeService) {
	if cuts := o.build.services.note(pairs); cuts != (serviceCuts{}) {
		if cuts.tooLong > 0 {
			o.tel.ServicesBounded.Add(ctx, int64(cuts.tooLong), o.boundAttr[0])
		}
		if cuts.overflow > 0 {
			o.tel.ServicesBounded.Add(ctx, int64(cuts.overflow), o.boundAttr[1])
		}
	}
}

// Start hands the observer its outputs and starts the window timer. Call it
// once; the processors of the collector, created before any component
// starts, have registered their probes by then. It refuses to start, with
// the closest defined names, when a probe the configuration names looks
// misspelled (checkProduced).
func (o *Observer) Start(out Outputs) error {
	if err := o.checkProduced(); err != nil {
		return err
	}
	o.out = out
	o.layouts.Settle()
	if o.set.ID != "" {
		o.handover.Watch()
		o.handover.Done()
	}
	o.auto.begin(o.now())
	o.announceAuto()
	if o.predecessor != nil {
		o.flushPredecessor(o.now())
	}
	if o.adopted != nil {
		o.afterAdoption()
	} else {
		o.expireCarried()
	}
	ticks := o.set.Ticks
	var ticker *time.Ticker
	if ticks == nil {
		ticker = time.NewTicker(o.cfg.Interval)
		ticks = ticker.C
	}
	o.running = true
	go o.run(ticks, ticker)
	o.startTimer()
	return nil
}

// run is the window timer.
func (o *Observer) run(ticks <-chan time.Time, ticker *time.Ticker) {
	o.every(ticks, ticker, o.done, func() { o.tick(o.now()) })
}

// every calls fn at every tick until the observer stops, then stops the
// ticker (nil: none) and closes done: the loop of the observer's timers.
func (o *Observer) every(ticks <-chan time.Time, ticker *time.Ticker, done chan struct{}, fn func()) {
	defer close(done)
	if ticker != nil {
		defer ticker.Stop()
	}
	for {
		select {
		case <-o.stop:
			return
		case <-ticks:
			fn()
			if o.set.Ticked != nil {
				o.set.Ticked(ticks)
			}
		}
	}
}

// missingAgents returns how many of the windows results a gateway with
// expected_agents counts in windows_missing_agents: those of fewer
// contributors, but not those it could not have got whole since its start.
// A window that began before the start is never counted: its agents sent
// their windows of it, all or in part, before the gateway could take them
// (to its predecessor, or to no one). After the start the agents come back
// each in its own time — an agent's OTLP/gRPC exporter reconnects to a
// gateway that was down with gRPC's backoff (1 s, 1.6 times longer an
// attempt): after an outage of 30 s, up to about 20 s after the gateway is
// back. So the gateway settles: the windows that miss an agent before
// every expected agent has reached one are held, and forgotten once one
// window has them all, each up throughout it
// (analysis.Result.SteadyContributors); should none by the windows that begin
// settleMissing after the start, some agent never came back (or none ever
// reached it), and the windows held count then, with every one after. A
// reload carries the settling, or begins it again when it changed
// expected_agents (adoptSettling). Used by the timer only.
func (o *Observer) missingAgents(results []*analysis.Result) int64 {
	exp := o.settle.expected
	start := o.build.start.AsTime()
	st := &o.settle
	var n int64
	for _, r := range results {
		switch {
		case r.Start.Before(start):
		case st.settled:
			if r.Contributors < exp {
				n++
			}
		case r.SteadyContributors >= exp:
			// Every expected agent, each up throughout the window: an
			// agent restarted in it under a new name (a random
			// service.instance.id) is two contributors, the name it had
			// and the one it took, and settled it while another agent was
			// still away.
			st.settled, st.held = true, 0
		default:
			// Held, as the settled gateway would count it: a window of
			// every expected name (one of them begun in it) misses none.
			if r.Contributors < exp {
				st.held++
			}
			if r.Start.Sub(st.from) >= o.settleMissing() {
				st.settled = true
				n += st.held
				st.held = 0
			}
		}
	}
	return n
}

// settling is where a gateway with expected_agents stands in its settling
// (missingAgents).
type settling struct {
	// expected is the expected_agents it settles for.
	expected int
	// from is when it began to settle: its start, or the reload that
	// changed expected_agents.
	from time.Time
	// settled: a window that began after the start had every expected
	// agent, or began settleMissing after from; held are the windows that
	// missed one until then.
	settled bool
	held    int64
}

// settleMissing is how long after its start a gateway waits at most for
// every expected agent before it counts the windows they miss: its lag and
// two intervals — an agent's window is sent at most its lag and an
// interval after its end — and at least agentsReturn.
func (o *Observer) settleMissing() time.Duration {
	lag := o.cfg.Lag
	if lag <= 0 {
		lag = o.cfg.Interval
	}
	return max(lag+2*o.cfg.Interval, agentsReturn)
}

// agentsReturn is the least a gateway waits after its start for every
// expected agent (settleMissing): gRPC's reconnection backoff brings the
// agents of a gateway that was down for a minute back within about 30 s of
// its return, and the windows of a gateway deployed again are whole by then.
const agentsReturn = time.Minute

// clockBack warns, once a step, when the clock has gone back more than an
// interval behind the latest tick (an NTP step, a clock set by hand): the
// windows are aligned on the clock's time, as the spans' ends are, and
// those it had passed have closed, so none closes until it is back there,
// and the instances that end meanwhile, in windows closed already, are
// dropped as too_late. Silent, the outage showed only as windows missing
// downstream.
func (o *Observer) clockBack(now time.Time) {
	switch {
	case now.After(o.latest) || o.latest.IsZero():
		o.latest, o.back = now, false
	case !o.back && o.latest.Sub(now) > o.cfg.Interval:
		o.back = true
		o.logger.Warn("deltaq: the clock went back; no window closes until it is back where it was, and the instances that end before then are dropped (too_late)",
			zap.Duration("step", o.latest.Sub(now)), zap.Time("until", o.latest))
	}
}

// tick closes the windows due at now, oldest first, and sends their
// output, within sendDeadline of the tick.
func (o *Observer) tick(now time.Time) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(o.runCtx, o.sendDeadline())
	defer cancel()
	o.clockBack(now)
	o.stepRanges(now)
	results := o.engine.Advance(now)
	for _, r := range results {
		o.inspect(ctx, r)
		o.emit(ctx, r, now)
	}
	if o.cfg.Gateway.ExpectedAgents > 0 {
		if missing := o.missingAgents(results); missing > 0 {
			o.tel.WindowsMissingAgents.Add(ctx, missing)
		}
	}
	o.closed(ctx, len(results), began)
	o.recordStats(ctx)
}

// closed records n windows closed since began in the self-telemetry.
func (o *Observer) closed(ctx context.Context, n int, began time.Time) {
	if n > 0 {
		o.tel.WindowsClosed.Add(ctx, int64(n))
		o.tel.WindowCloseDuration.Record(ctx, time.Since(began).Seconds()/float64(n))
	}
}

// recordStats adds to the self-telemetry what the engine counted since the
// last call: by the timer, at every tick, and by Shutdown, once it has
// stopped.
func (o *Observer) recordStats(ctx context.Context) {
	st := o.engine.Stats()
	add := func(c metric.Int64Counter, d int64, opts ...metric.AddOption) {
		if d > 0 {
			c.Add(ctx, d, opts...)
		}
	}
	add(o.tel.Instances, st.Counted-o.prev.Counted)
	add(o.tel.LateTimeouts, st.LateTimeouts-o.prev.LateTimeouts)
	add(o.tel.InstancesRebinned, st.Rebinned-o.prev.Rebinned)
	add(o.tel.InstancesWeightClamped, st.WeightClamped-o.prev.WeightClamped)
	add(o.tel.ProbesExpired, st.ExpiredProbes-o.prev.ExpiredProbes)
	add(o.tel.LayoutChanges, st.LayoutChanges-o.prev.LayoutChanges)
	add(o.tel.LayoutsAgreed, st.LayoutsAgreed-o.prev.LayoutsAgreed)
	add(o.tel.TotalsSaturated, st.SaturatedTotals-o.prev.SaturatedTotals)
	for r, n := range st.Dropped {
		add(o.tel.InstancesDropped, n-o.prev.Dropped[r], o.dropAttr[r])
	}
	o.tel.Probes.Record(ctx, int64(st.Probes))
	o.prev = st
}

// warnOtherLayouts warns, once a probe, that a gateway merged the probe's
// windows from agents of another layout than the one it shows: agents
// whose dmax: auto chose another dMax than the probe's first window (their
// learning phase, at dmax_max), or agents and a gateway configured
// differently. It accepted them silently, and an unpinned probe stayed in
// the agents' learning-phase layout for good.
func (o *Observer) warnOtherLayouts(r *analysis.Result) {
	for i := range r.Probes {
		p := &r.Probes[i]
		if !p.OtherLayouts || o.layoutsWarned[p.Name] {
			continue
		}
		if o.layoutsWarned == nil {
			o.layoutsWarned = make(map[string]bool)
		}
		o.layoutsWarned[p.Name] = true
		top := p.Width * float64(p.Bins)
		if n := len(p.Edges); n > 0 {
			top = p.Edges[n-1]
		}
		o.logger.Warn(fmt.Sprintf("probe %s: agents' windows of another layout are read into the probe's (%v in %d bins), its probes entry's or its first window's: "+
			"each bucket at its upper edge, and a span between the two dMax in the window of the agent's deadline; "+
			"give the agents and the gateway one dmax and bins, or pin the probe's dmax and bins here (agents with dmax: auto re-range)",
			p.Name, time.Duration(math.Round(top*1e9)), p.Bins),
			zap.String("probe", p.Name))
	}
}

// warnQTABeyondDMax warns, once a probe, that its QTA has a point beyond
// the dMax of its window: the instances between the two are timeouts,
// which the point reads as late, so that it can fail however fast they
// were. A processor's dmax: auto, which does not see the QTA, chooses such
// a dMax silently (its dmax_min must be raised to the QTA's last point).
func (o *Observer) warnQTABeyondDMax(r *analysis.Result) {
	for i := range r.Probes {
		p := &r.Probes[i]
		if p.QTA == nil || len(p.QTA.Points) == 0 || o.qtaWarned[p.Name] {
			continue
		}
		last := p.QTA.Points[len(p.QTA.Points)-1].Delay
		top := p.Width * float64(p.Bins)
		if n := len(p.Edges); n > 0 {
			top = p.Edges[n-1]
		}
		if top <= 0 || last <= top*(1+1e-9) {
			continue
		}
		if o.qtaWarned == nil {
			o.qtaWarned = make(map[string]bool)
		}
		o.qtaWarned[p.Name] = true
		o.logger.Warn(fmt.Sprintf("probe %s: its QTA's last point, %v, is beyond its dMax, %v: the instances between the two are timeouts, "+
			"which the point reads as late; raise the probe's dmax (or the dmax_min of a processor's dmax: auto probe) to the QTA's last point",
			p.Name, time.Duration(math.Round(last*1e9)), time.Duration(math.Round(top*1e9))),
			zap.String("probe", p.Name))
	}
}

// warnSharedSources warns, once a name, that two agents running at once
// send their windows under one name (service.instance.id): the gateway
// counts agents by it, so they count as one contributor, and with
// expected_agents their windows count as missing one. Their instances
// are merged, each agent's once: the windows of two agents differ in
// their deltaq.agent.start. Without the warning, agents given one fixed
// name (a DaemonSet's configuration with a literal id) showed only as
// agents missing that were all up.
func (o *Observer) warnSharedSources(r *analysis.Result) {
	for _, name := range r.SharedSources {
		if o.sharedWarned[name] || len(o.sharedWarned) >= maxSharedWarned {
			continue
		}
		if o.sharedWarned == nil {
			o.sharedWarned = make(map[string]bool)
		}
		o.sharedWarned[name] = true
		o.logger.Warn(fmt.Sprintf("agents: two agents running at once send their windows as %q; the gateway counts agents by service.instance.id, "+
			"so they count as one contributor (with expected_agents, as one missing): give each agent a service.instance.id of its own "+
			"(the node's or the host's name)", name),
			zap.String("agent", name))
	}
}

// maxSharedWarned bounds the agent names warned about as shared: a
// sender can claim any name.
const maxSharedWarned = 64

// inspect counts what a closed window says about the input rather than the
// system: referenced probes without instances, and under-resolved probes,
// about each of which it warns once (while the probe is tracked).
func (o *Observer) inspect(ctx context.Context, r *analysis.Result) {
	if n := len(r.NoInstances); n > 0 {
		o.tel.ReferencedProbeEmptyWindows.Add(ctx, int64(n))
	}
	o.warnOtherLayouts(r)
	o.warnQTABeyondDMax(r)
	o.warnSharedSources(r)
	coarse := int64(0)
	for i := range r.Probes {
		p := &r.Probes[i]
		if !p.UnderResolved {
			continue
		}
		coarse++
		if o.coarseWarned[p.Name] {
			continue
		}
		if o.coarseWarned == nil {
			o.coarseWarned = make(map[string]bool)
		}
		o.coarseWarned[p.Name] = true
		w, msg := p.DiagramWidth, "the diagram's analysis grid, which spans its slowest probe's delays: the divergence of the wholes it enters is withheld"
		switch {
		case w == 0 && p.Analysis != p.Observed:
			w, msg = p.AnalysisWidth, "its analysis grid, which spans its dmax: use a smaller dmax"
		case w == 0 && p.Edges != nil: // a merged window without analysis counts
			w, msg = p.Edges[0], "its first bucket [0, low): use a smaller binning low"
		case w == 0:
			w, msg = p.Width, "its own bins: use a smaller dmax or more bins"
		}
		o.logger.Warn(fmt.Sprintf("probe %s: most instances are shorter than one bin (%s) of %s",
			p.Name, time.Duration(math.Round(w*1e9)), msg),
			zap.String("probe", p.Name), zap.Float64("bin_width_seconds", w))
	}
	if coarse > 0 {
		o.tel.UnderResolvedWindows.Add(ctx, coarse)
	}
	if n := qooWithheld(r); n > 0 {
		o.tel.QooScoresWithheld.Add(ctx, n)
	}
	// Forget the warnings of probes no longer tracked, so that names that
	// come and go do not grow the set.
	if len(o.coarseWarned) > len(r.Probes) || len(o.layoutsWarned) > len(r.Probes) || len(o.qtaWarned) > len(r.Probes) {
		tracked := make(map[string]bool, len(r.Probes))
		for i := range r.Probes {
			tracked[r.Probes[i].Name] = true
		}
		for _, warned := range []map[string]bool{o.coarseWarned, o.layoutsWarned, o.qtaWarned} {
			for n := range warned {
				if !tracked[n] {
					delete(warned, n)
				}
			}
		}
	}
}

// checkProduced looks, at start, at the referenced probes — the outcomes
// of the diagram and the entries of probes — that no deltaq processor of
// this collector produces and the component does not count itself. Such a
// probe's instances may come from another collector, so it is only warned
// about (its empty windows are counted by referenced_probe_empty_windows);
// but when this collector has probes of its own and one of them is at most
// two edits from the missing name, the name is taken for a misspelling and
// refused, so that the collector does not start with a diagram that can
// never be calculated. `deltaq check --config` finds the same mistakes
// before start.
func (o *Observer) checkProduced() error {
	typos, missing := o.misspelled(o.layouts.RegisteredProbes())
	if len(typos) > 0 {
		return typos
	}
	if len(missing) > 0 {
		o.logger.Warn("no deltaq processor of this collector produces these probes of the diagram or probes; their instances may come from another collector",
			zap.Strings("probes", missing))
	}
	return nil
}

// checkMadeBefore runs the component's reader check against the probes of
// the deltaq processors made before it (those of a pipeline that does not
// feed it, or one it shares with a pipeline made earlier), which ran their
// readers' checks without it, so that validate refuses what the start
// (checkProduced) would. A component without an ID has no reader check.
func (o *Observer) checkMadeBefore() error {
	if o.set.ID == "" {
		return nil
	}
	return o.checkReferences(o.layouts.RegisteredProbes())
}

// checkReferences refuses, naming the component, the probes it names that
// look misspelled given defined, the probes of the deltaq processors made
// so far: its reader's check (contract.ReferenceCheck). A probe that a
// processor's configuration declares (contract.Layouts.Declare) is left to
// the check at start (checkProduced): the processor that defines it may
// not be made yet.
func (o *Observer) checkReferences(defined []string) error {
	typos, _ := o.misspelled(defined)
	typos = slices.DeleteFunc(typos, func(u analysis.UnknownProbe) bool { return o.layouts.Declared(u.Name) })
	if len(typos) > 0 {
		return fmt.Errorf("%s: %w", confpath.Section(o.set.Kind+"s", o.set.ID), typos)
	}
	return nil
}

// misspelled is Config.misspelled with the processors' probes produced
// and the probes the component matches in the spans.
func (o *Observer) misspelled(produced []string) (typos analysis.ReferenceError, missing []string) {
	defined := slices.Clone(produced)
	if sp := o.set.SpanProbes; sp != nil {
		defined = append(defined, sp.Names...)
	}
	return o.cfg.misspelled(defined)
}

// emit hands one window's metrics and logs to the outputs and writes its
// completed snapshots. Output larger than max_request_bytes goes in several
// batches (split.go), each handed over on its own: a batch the output
// refuses costs that batch only, which is counted and logged, never the
// windows after it.
func (o *Observer) emit(ctx context.Context, r *analysis.Result, now time.Time) {
	limit := o.cfg.MaxRequestBytes
	if out := o.out.Metrics; out != nil {
		if n := o.build.split.metrics(o.build.metrics(r), limit, func(md pmetric.Metrics) {
			if err := out.ConsumeMetrics(ctx, md); err != nil {
				o.dropped(ctx, "metrics", err)
			}
		}); n > 0 {
			o.oversized(ctx, "metrics", n)
		}
	}
	for i := range r.Triggers {
		o.tel.TriggersFired.Add(ctx, 1, o.trigAttr[r.Triggers[i].Kind])
	}
	if out := o.out.Logs; out != nil {
		if ld, ok := o.build.logs(r, now); ok {
			if n := o.build.split.logs(ld, limit, func(ld plog.Logs) {
				if err := out.ConsumeLogs(ctx, ld); err != nil {
					o.dropped(ctx, "logs", err)
				}
			}); n > 0 {
				o.oversized(ctx, "logs", n)
			}
		}
	}
	if dir := o.cfg.Snapshot.Directory; dir != "" && len(r.Snapshots) > 0 {
		if o.snapshots == nil {
			o.snapshots = newSnapshotStore(dir, o.cfg.Snapshot.MaxFiles, o.cfg.Snapshot.MaxBytes, o.logger)
		}
		for _, s := range r.Snapshots {
			removed, err := o.snapshots.write(s)
			if err != nil {
				o.logger.Warn("cannot write ΔQ snapshot", zap.Int64("snapshot", s.ID), zap.Error(err))
			}
			if removed > 0 {
				o.tel.SnapshotFilesRemoved.Add(ctx, int64(removed))
			}
		}
	}
}

func (o *Observer) dropped(ctx context.Context, signal string, err error) {
	o.tel.OutputDropped.Add(ctx, 1, o.sigAttr[signal])
	o.logger.Warn("dropping ΔQ output: the next consumer did not accept it", zap.String("signal", signal), zap.Error(err))
}

// oversized counts the n data points or log records of a window dropped
// because each alone is larger than max_request_bytes.
func (o *Observer) oversized(ctx context.Context, signal string, n int) {
	o.tel.OutputOversized.Add(ctx, int64(n), o.sigAttr[signal])
	o.logger.Warn("dropping ΔQ output larger than max_request_bytes on its own", zap.String("signal", signal),
		zap.Int("items", n), zap.Int("max_request_bytes", o.cfg.MaxRequestBytes))
}

// sendDeadline bounds the sends of one tick: one interval, at least a
// second. A next consumer that sends synchronously and blocks (an exporter
// without a sending queue whose endpoint is down retries for minutes) held
// the timer: no window closed, and the instances beyond the open windows
// were dropped as too_early. Past it a send is abandoned and its batch
// counted in output_dropped.
func (o *Observer) sendDeadline() time.Duration { return max(o.cfg.Interval, time.Second) }

// Shutdown stops the window timer and closes the windows still open, the
// current one included though it is partial: they hold instances already
// accepted, and the timeouts of start events due by then. Their output goes to the outputs, which the component shuts
// down afterwards (an exporter's queue drains then). Later calls do
// nothing.
//
// When ctx ends before the timeout timer has stopped (busy counting
// timeouts), the windows are still flushed, their sends bounded by the
// send deadline alone, and ctx's error is returned after: the timer's
// counting goes into the engine under its lock, as beside a tick, and only
// the timeouts due since its last tick are left out. Returning at once
// lost every instance of the open windows.
func (o *Observer) Shutdown(ctx context.Context) error {
	var err error
	o.once.Do(func() {
		o.layouts.RemoveReader(o)
		close(o.stop)
		o.cancel()
		if !o.running {
			return
		}
		// The window timer builds output with what a flush builds it
		// with: while it is still sending, nothing can be flushed.
		select {
		case <-o.done:
		case <-ctx.Done():
			err = ctx.Err()
			return
		}
		timerErr := o.stopTimer(ctx)
		if timerErr != nil {
			ctx = context.WithoutCancel(ctx)
		}
		defer func() { err = timerErr }() // after the flush or the hand-over
		// What the engine counted since the timer's last tick is in the
		// self-telemetry too, the engine handed over or not.
		o.recordStats(ctx)
		if o.set.ID != "" && o.handOver() {
			return
		}
		// The last windows' sends are bounded as a tick's are: a blocked
		// next consumer must not hold the collector's stop.
		sctx, cancel := context.WithTimeout(ctx, o.sendDeadline())
		defer cancel()
		now := o.now()
		if o.starts != nil && o.starts.done != nil && timerErr == nil {
			// The timeouts due since the timeout timer's last tick count,
			// as its next tick would have counted them, in the windows
			// flushed now. Beside a timer still running they are its
			// own (expire is not safe beside itself), and left out.
			o.expire(now.UnixNano())
		}
		began := time.Now()
		results := o.engine.Flush(now)
		for _, r := range results {
			o.inspect(sctx, r)
			o.emit(sctx, r, now)
		}
		o.closed(sctx, len(results), began)
		o.recordStats(sctx)
	})
	return err
}

// Stats returns the engine's instance counters.
func (o *Observer) Stats() analysis.Stats { return o.engine.Stats() }
