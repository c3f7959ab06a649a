// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// DropReason says why an instance was not counted.
type DropReason int

// Reasons for not counting an instance.
const (
	// DropProbeLimit: the instance names a new probe that no configuration
	// names, and Config.MaxProbes such probes are tracked already.
	DropProbeLimit DropReason = iota
	// DropTooLate: the instance ends in a window that has already closed.
	DropTooLate
	// DropTooEarly: the instance ends in a window beyond the open ones (more
	// than about one interval after the Advance due next).
	DropTooEarly
	// DropInvalid: the instance has no usable outcome, or neither it nor the
	// probe's configuration gives a dMax and a bin count.
	DropInvalid
	// DropLayoutMismatch: a timeout whose own dMax is shorter than the
	// probe's and whose span, if it ended, ended within the probe's dMax:
	// whether it would have ended within the probe's longer dMax, or as a
	// success or a failure, is unknown, so it can be placed neither as a
	// success nor as a timeout of the probe's layout.
	DropLayoutMismatch
	// DropNameTooLong: the probe name is longer than MaxProbeNameLength
	// bytes.
	DropNameTooLong
	// DropMalformed: a success or failure that ends before it starts, or
	// an instance its reader found without a start or an end
	// (Batch.Malformed).
	DropMalformed
	// DropAgentLimit: the instances of an agent's window refused because
	// the window would add an agent beyond Gateway.MaxAgents (merge.go).
	DropAgentLimit
	numDropReasons
)

// MaxProbeNameLength bounds, in bytes, the probe name of an instance: a
// longer name is refused (DropNameTooLong) rather than put on every series
// of the probe. It is the processor → exporter contract's bound.
const MaxProbeNameLength = contract.MaxNameLength

// String returns the reason as used in the self-telemetry attribute:
// probe_limit, too_late, too_early, invalid, layout_mismatch,
// name_too_long, malformed or agent_limit.
func (r DropReason) String() string {
	switch r {
	case DropProbeLimit:
		return "probe_limit"
	case DropTooLate:
		return "too_late"
	case DropTooEarly:
		return "too_early"
	case DropInvalid:
		return "invalid"
	case DropLayoutMismatch:
		return "layout_mismatch"
	case DropNameTooLong:
		return "name_too_long"
	case DropMalformed:
		return "malformed"
	case DropAgentLimit:
		return "agent_limit"
	}
	return fmt.Sprintf("DropReason(%d)", int(r))
}

// Drops counts instances not counted, by reason.
type Drops [numDropReasons]int64

// Total returns the number of dropped instances.
func (d Drops) Total() int64 {
	var n int64
	for _, v := range d {
		n += v
	}
	return n
}

// Engine turns outcome instances into closed windows and analyses each
// closed window (Result). It is safe for concurrent use: ingestion (Begin …
// End) holds a short lock per batch, and the analysis of a closed window runs
// outside that lock so that the instance path does not wait for it.
//
// Windows (thesis 3.6): window k holds the instances whose end time falls in
// [k·I, (k+1)·I), I = Config.Interval, aligned on the Unix epoch. Window k
// closes at (k+1)·I + Config.Lag, so an instance that ends just before a
// boundary but arrives up to Lag later is still counted in its window. A
// timeout ends at start + dMax. With Interval = 0 every instance falls into
// a single window that only Flush closes (offline analysis).
//
// Layouts: a probe's histogram layout (dMax, bins) is decided once, by
// configuration when there is one — Config.Probes, else Config.LookupLayout
// — else by the first accepted instance of the probe, and changes only
// when the processor that produces the probe announces a new one in the
// registry of this process (dmax: auto), at a window boundary: no window
// mixes two layouts (relayout.go). An instance is classified under the probe's
// layout from its own start and end (see Engine.Add), so that an instance
// that carries another dMax or bin count, forged or from an observer
// configured differently, cannot change the layout of a window.
//
// Probes: configured probes (Config.Probes, the diagram's probes,
// Config.ConfiguredProbes, and probes Config.LookupLayout knows) are always
// tracked. At most Config.MaxProbes other probes are tracked at a time;
// one without an instance for Config.ProbeIdleTimeout is forgotten, its
// analysis state (history, totals, triggers) with it, and its place goes to
// the next new probe.
type Engine struct {
	cfg      compiled
	interval int64        // ns; 0: single window
	lag      int64        // ns
	idle     int64        // ns; 0: unconfigured probes never expire
	nslots   int64        // open windows kept
	seed     maphash.Seed // of the hashes of observers' names (windowPrint)

	mu           sync.Mutex // guards everything below up to the analysis state
	byName       map[string]*probe
	probes       []*probe // by index; nil: a free index
	freeIdx      []int    // free indices of probes, reused before growing
	nextKey      uint64   // the next probe's key (probe.key)
	live         int      // probes tracked
	unconfigured int      // of which no configuration names
	k0           int64    // oldest open window
	slots        []slot
	// last is the window of the last instance placed, so that the
	// instances of a batch, which mostly end in one window, find it and
	// its slot without a division (windowIndex).
	last lastWindow
	// known is the last source found among the agents of its window
	// (addWindow): the windows of a request share both, and then find
	// their agent without a hash.
	known    knownSource
	free     map[deltaq.Layout][]*acc
	drops    Drops
	counted  int64
	rebinned int64
	expired  int64
	// lateTimeouts counts timeouts that arrived after their own window had
	// closed and were counted in the oldest open window instead.
	lateTimeouts int64
	// batchClock is the clock of the batch being added (BeginAt), nil for
	// none (Begin); batchAt is its reading in Unix ns, read on first need
	// (clockBack), 0 until then.
	batchClock func() time.Time
	batchAt    int64
	// weightClamped counts instances whose adjusted count was above
	// MaxAdjustedCount.
	weightClamped int64
	// contributions counts the windows given to AddWindow, by fate.
	contributions Contributions
	// layoutChanges counts the layouts probes moved to after their first;
	// layoutsAgreed the layouts agreed by other engines' windows.
	layoutChanges, layoutsAgreed int64
	// saturated counts the running totals that stopped at math.MaxInt64.
	saturated int64
	// Single-window mode: the extent of the instances' ends, and the
	// earliest instance start (Result.SamplingPeriod).
	minEnd, maxEnd int64
	minStart       int64
	// pending are the probes no configuration names whose layout other
	// engines' windows propose but have not agreed on (merge.go).
	pending map[string]*probe
	// llEdges caches the bucket edges of the log-linear layouts of other
	// engines' windows (merge.go); edgesMu, not mu, guards it: windows
	// are checked before mu is taken.
	edgesMu sync.Mutex
	llEdges map[deltaq.LogLinear][]int64
	// gen is the generation of the registry of processor layouts
	// (Config.LayoutGeneration) the layouts were last looked up at.
	gen uint64

	// fine is the analysis resolution (deltaq.Fine), shared by the
	// accumulators' fine histograms.
	fine *deltaq.Fine

	amu sync.Mutex // guards the analysis state
	an  *analyzer
}

// A probe's layout is a deltaq.Layout: dMax and uniform bins, or
// log-linear buckets, made by deltaq.LogLinearLayout, which checks them,
// whose ΔQ is read on their grid (deltaq.Layout.Grid).

// carries reports whether own, the dMax and bins an instance carries, is
// layout l. The spans of a log-linear probe carry its dMax and no bins
// (the contract in internal/contract).
func carries(l *deltaq.Layout, own deltaq.Layout) bool {
	if l.IsLogLinear() {
		return own.DMaxNs == l.DMaxNs && own.Bins == 0
	}
	return own == *l
}

// ownLayout is the layout an instance carries itself (zero: none).
func ownLayout(in *Instance) deltaq.Layout { return deltaq.Layout{DMaxNs: in.DMaxNs, Bins: in.Bins} }

// noWindow is the last window of a probe that has counted no instance.
const noWindow = math.MinInt64

// probe is the ingestion state of one probe.
type probe struct {
	name string
	idx  int
	// key is the probe's part of the prints of the windows merged into
	// its windows (windowPrint): given at registration, never given
	// again, and kept across a reload (Engine.Adopt), where idx may
	// change; so that a print stands for the same probe's window in the
	// engine a reload builds, and never for a probe registered later.
	key uint64
	// configured: a configuration names the probe; it never takes one of
	// the MaxProbes places and never expires.
	configured bool
	// lay is the layout of the probe's windows before the first pending
	// switch; pend are the switches to later layouts, by increasing
	// window, each after the last window with an instance of the layout
	// before (relayout.go).
	lay  deltaq.Layout
	pend []layoutSwitch
	// fixed: the layout comes from Config.Probes, and no announcement of
	// a processor changes it. local: it comes from a processor of this
	// process (Config.LookupLayout). Either way the windows of other
	// engines must have it: they never vote on it (merge.go).
	fixed, local bool
	// cands are the layouts other engines' windows propose for the probe,
	// while none is agreed (merge.go); at most maxCandidates.
	cands []candidate
	// lastK is the window in which an instance of the probe was last
	// counted, noWindow before the first; lastVote the window of the
	// newest window of another engine that proposed a layout for it.
	lastK, lastVote int64
}

// acc accumulates one probe's instances in one window: in hist, or for a
// log-linear layout in ll (hist nil).
type acc struct {
	lay  deltaq.Layout
	hist *deltaq.Histogram
	ll   *deltaq.LogLinearHistogram
	sum  float64 // Σ successful delays × adjusted counts, seconds
	// picks selects the window's exemplars and worst instances.
	picks *picks
	// w1 and w2 are Σw and Σw² over the adjusted counts w of the
	// instances counted here (not those merged from other engines).
	w1, w2 float64
	// fine counts the same instances at the analysis resolution, whatever
	// the layout: a success at its delay, also one that ended after the
	// layout's dMax (a timeout of the probe, whose completion still counts
	// in the composition of a whole with a longer dMax); a timeout whose
	// end is unknown, and a failure, apart.
	fine *deltaq.LogLinearHistogram
	// converted says that display counts were read from another engine's
	// analysis counts (finemerge.go): each at its bucket's upper edge, they
	// bound nothing finer than the buckets.
	converted bool
}

// addFine counts an instance at the analysis resolution by its own
// outcome and delay, whatever the layout's dMax made of it.
func (a *acc) addFine(in *Instance, n int64) {
	switch in.Outcome {
	case Success:
		a.fine.AddN(in.End-in.Start, n) // beyond deltaq.FineHigh: a timeout
	case Failure:
		a.fine.AddFailures(n)
	default:
		if in.Ended && in.End >= in.Start {
			a.fine.AddN(in.End-in.Start, n)
			return
		}
		a.fine.AddTimeouts(n)
	}
}

// fineComplete reports whether the fine histogram holds every instance of
// the accumulator: not so once another engine's window without analysis
// counts was merged in (merge.go), whose analysis then reads the layout's
// histogram.
func (a *acc) fineComplete() bool { return a.fine.Total() == a.total() }

// effective returns the effective number of instances behind total
// counts, Kish's (Σw)²/Σw² ("Survey Sampling", 1965, section 11.7): the
// instances counted here with their adjusted counts w, the total − Σw
// counts merged from other engines taken as instances of weight 1. It is
// the instance count when nothing was sampled, and the number of spans
// when every instance has the same adjusted count.
func (a *acc) effective(total int64) float64 {
	t := float64(total)
	_, w2 := a.weights(total)
	if w2 <= 0 {
		return t
	}
	return t * t / w2
}

// weights returns Σw and Σw² over the adjusted counts w behind total
// counts: the instances counted here and the windows merged with their
// weights, those merged without as w = 1.
func (a *acc) weights(total int64) (w1, w2 float64) {
	t := float64(total)
	return t, a.w2 + t - a.w1
}

// addSuccess counts a success of d ns (0 ≤ d ≤ dMax) with adjusted count
// n; only what the histogram counted as a success enters the sum. It
// returns the bin (bucket) of the success, or −1.
func (a *acc) addSuccess(d, n int64) int {
	s := float64(d) / 1e9
	var bin int
	if a.ll != nil {
		bin = a.ll.AddN(d, n)
	} else {
		bin = a.hist.AddN(s, n)
	}
	if bin >= 0 {
		a.sum += s * float64(n)
	}
	return bin
}

// bins returns the number of bins (buckets) of the accumulator.
func (a *acc) bins() int {
	if a.ll != nil {
		return len(a.ll.Counts())
	}
	return a.hist.Bins()
}

func (a *acc) addTimeout(n int64) {
	if a.ll != nil {
		a.ll.AddTimeouts(n)
		return
	}
	a.hist.AddTimeouts(n)
}

func (a *acc) addFailure(n int64) {
	if a.ll != nil {
		a.ll.AddFailures(n)
		return
	}
	a.hist.AddFailures(n)
}

// total returns the instances counted.
func (a *acc) total() int64 {
	if a.ll != nil {
		return a.ll.Total()
	}
	return a.hist.Total()
}

// reset empties the accumulator for reuse.
func (a *acc) reset() {
	if a.ll != nil {
		a.ll.Reset()
	} else {
		a.hist.Reset()
	}
	a.sum = 0
	a.w1, a.w2 = 0, 0
	a.converted = false
	a.fine.Reset()
	a.picks.reset()
}

// slot is one open window.
type slot struct {
	k    int64
	accs []*acc // by probe index; nil: no instance yet
	// sources are the distinct observers whose windows of configured
	// probes were merged into this one (AddWindow), at most
	// Gateway.MaxAgents, with when they began; nil until the first.
	sources map[string]*agentStarts
	// idle are the observers that said they saw no instance in this
	// window (AddIdle), at most Gateway.MaxAgents apart from sources, each
	// with when it began and the starts of its last two words (a repeat of
	// either is a duplicate); nil until the first.
	idle map[string]*idleAgent
	// prints are the windows of named observers merged into this one, to
	// refuse a delivery repeated (ContributionDuplicate).
	prints printSet
}

// New checks cfg (Config.Check) and returns an engine for it. now is the
// engine's clock at creation: the windows that closed before it are never
// opened. For Interval = 0 now is ignored.
func New(cfg Config, now time.Time) (*Engine, error) {
	cc, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:      *cc,
		interval: int64(cc.Interval),
		lag:      int64(cc.Lag),
		idle:     int64(cc.ProbeIdleTimeout),
		byName:   make(map[string]*probe),
		free:     make(map[deltaq.Layout][]*acc),
		llEdges:  make(map[deltaq.LogLinear][]int64),
		pending:  make(map[string]*probe),
		minEnd:   math.MaxInt64,
		maxEnd:   math.MinInt64,
		minStart: math.MaxInt64,
		fine:     deltaq.NewFine(),
		seed:     maphash.MakeSeed(),
	}
	if e.interval == 0 {
		e.nslots = 1
	} else {
		// Windows from the oldest not yet closed to one interval beyond the
		// clock: ⌈lag/I⌉ + 3. The clock is the last Advance, up to an
		// interval old when the next is due (a collector's window timer
		// ticks at any phase of the window, and may tick late): one window
		// more, so that an instance that has just ended is never beyond
		// the open windows; and as many more as cover an Advance later
		// still (LateAdvance).
		late := int64(max(cc.LateAdvance, 0))
		e.nslots = (e.lag+e.interval-1)/e.interval + 3 + (late+e.interval-1)/e.interval
		e.k0 = floorDiv(now.UnixNano()-e.lag, e.interval)
	}
	e.slots = make([]slot, e.nslots)
	for k := e.k0; k < e.k0+e.nslots; k++ {
		e.slots[e.slotOf(k)].k = k
	}
	an := newAnalyzer(&e.cfg)
	e.an = an
	// Configured probes exist from the start so that their empty windows
	// are reported too.
	e.gen = e.layoutGeneration()
	for _, name := range an.knownProbes() {
		var l deltaq.Layout
		fixed, local := false, false
		pc, ok := e.cfg.Probes[name]
		switch {
		case ok && pc.DMax > 0 && pc.Bins > 0:
			l, fixed = deltaq.Layout{DMaxNs: int64(pc.DMax), Bins: pc.Bins}, true
		case ok && pc.Binning != nil:
			// Checked by compile.
			ll, _ := pc.Binning.LogLinear()
			l, fixed = deltaq.LogLinearLayout(ll)
		default:
			l, local = e.lookup(name)
		}
		p := e.register(name, true, l)
		p.fixed, p.local = fixed, local
	}
	return e, nil
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// lookup returns the layout Config.LookupLayout gives a probe, if valid:
// log-linear buckets are checked (deltaq.LogLinearLayout).
func (e *Engine) lookup(name string) (deltaq.Layout, bool) {
	if e.cfg.LookupLayout == nil {
		return deltaq.Layout{}, false
	}
	l, ok := e.cfg.LookupLayout(name)
	switch {
	case !ok:
		return deltaq.Layout{}, false
	case l.IsLogLinear():
		return deltaq.LogLinearLayout(l.LogLinear)
	}
	return l, l.Valid()
}

// register adds a probe, reusing a free index. Called with mu held.
func (e *Engine) register(name string, configured bool, l deltaq.Layout) *probe {
	name = strings.Clone(name) // do not keep the caller's (pdata) memory alive
	p := &probe{name: name, key: e.nextKey, configured: configured, lay: l, lastK: noWindow, lastVote: noWindow}
	e.nextKey++
	if n := len(e.freeIdx); n > 0 {
		p.idx = e.freeIdx[n-1]
		e.freeIdx = e.freeIdx[:n-1]
		e.probes[p.idx] = p
	} else {
		p.idx = len(e.probes)
		e.probes = append(e.probes, p)
		for i := range e.slots {
			e.slots[i].accs = append(e.slots[i].accs, nil)
		}
	}
	e.byName[name] = p
	e.live++
	if !configured {
		e.unconfigured++
	}
	return p
}

// admit registers a probe seen for the first time in an instance whose own
// layout is own, or says why it cannot: a probe that LookupLayout knows is
// configured; any other needs a valid layout of its own of at most the
// thesis's 1000 bins (the processor's own limit, which bounds the memory an
// instance can ask for) and one of the MaxProbes places. Called with mu
// held.
func (e *Engine) admit(name string, own deltaq.Layout) (*probe, DropReason) {
	if l, ok := e.lookup(name); ok {
		p := e.register(name, true, l)
		p.local = true
		return p, 0
	}
	if !own.Valid() || own.Bins > deltaq.MaxThesisBins {
		return nil, DropInvalid
	}
	if e.unconfigured >= e.cfg.MaxProbes {
		return nil, DropProbeLimit
	}
	return e.register(name, false, own), 0
}

// forget removes an unconfigured probe whose windows have all closed, and
// frees its index. Called with mu held.
func (e *Engine) forget(p *probe) {
	for i := range e.slots {
		e.slots[i].accs[p.idx] = nil // already nil: its windows have closed
	}
	delete(e.byName, p.name)
	e.probes[p.idx] = nil
	e.freeIdx = append(e.freeIdx, p.idx)
	e.live--
	e.unconfigured--
	e.expired++
}

// Batch is a locked ingestion handle returned by Engine.Begin. Add records
// instances; End releases the lock. A Batch must not be used after End.
type Batch struct {
	e *Engine
}

// Begin locks the engine for a batch of Add calls; End must follow. Holding
// one lock per batch rather than per instance keeps the instance path cheap.
func (e *Engine) Begin() Batch {
	e.mu.Lock()
	e.checkLayouts()
	return Batch{e: e}
}

// BeginAt is Begin for a batch added at now(), read on the clock the
// engine's windows are advanced by: a timeout among its instances whose
// window has closed counts in the oldest open window (see Engine.Add) only
// when now is past that window's close. Before it, the clock went back
// after the window closed, and the timeout is too late, as a success
// ending there is: while the clock is back, the timeouts of a timer on it
// would otherwise all go into one window, and none of the successes. The
// clock is read once the engine is held, after any Advance that closed a
// window: read before, a window timer closing the window in between (a
// timer running late, near the close) would look like the clock gone back,
// and its timeouts would be lost. It is read at most once a batch, and
// only for such a timeout, so that a batch of spans pays nothing for it.
func (e *Engine) BeginAt(now func() time.Time) Batch {
	b := e.Begin()
	e.batchClock = now
	return b
}

// End unlocks the engine.
func (b Batch) End() {
	b.e.batchClock, b.e.batchAt = nil, 0
	b.e.mu.Unlock()
}

// Add records one instance. It does not allocate once the probe, its window
// and a histogram of its layout exist (histograms are reused across windows).
func (b Batch) Add(in *Instance) { b.e.add(in) }

// Malformed counts an instance that its reader could not make, for want of
// a start or an end time (a span whose timestamp is zero): it is dropped
// as DropMalformed.
func (b Batch) Malformed() { b.e.drops[DropMalformed]++ }

// Add records one instance under its own lock; prefer Begin/Add/End for
// batches.
//
// The instance is classified under its probe's layout (dMax D, N bins),
// whatever dMax and bins it carries itself; its delay d = End − Start is
// exact, only its bin depends on the layout:
//
//   - a success or failure with d ≤ D keeps its outcome (a success goes
//     into the bin of d among the N bins of width D/N of the probe's
//     histogram); with d > D it is a timeout, as the processor classifies
//     (thesis 3.3: an observer waiting at most D never sees the later end),
//     ending at Start + D;
//   - a timeout ends at Start + D. One whose own dMax is shorter than D is
//     refused (DropLayoutMismatch): it might have ended within D; but not
//     one that Ended after D (its span is longer than D: a timeout under
//     either dMax);
//   - a success or failure with End < Start is refused (DropMalformed);
//   - a success or failure, or a timeout that Ended, whose End lies in a
//     closed window is too late (DropTooLate), whatever its delay: a
//     timeout counts in the oldest open window only when its span ends in
//     an open one, or never ends (a real-time or synthetic timeout), and
//     then, in a batch of BeginAt, only when the clock is past its
//     window's close.
//
// Counted instances whose own layout differs from the probe's are counted
// in Stats.Rebinned.
func (e *Engine) Add(in *Instance) {
	e.mu.Lock()
	e.checkLayouts()
	e.add(in)
	e.mu.Unlock()
}

func (e *Engine) add(in *Instance) {
	if len(in.Probe) > MaxProbeNameLength {
		e.drops[DropNameTooLong]++
		return
	}
	if !e.wellFormed(in) {
		return
	}
	p, why := e.probeFor(in.Probe, ownLayout(in))
	if p == nil {
		e.drops[why]++
		return
	}
	e.place(p, in)
}

// wellFormed reports whether the instance has a valid outcome and, unless
// a timeout, does not end before it starts; if not, the drop is counted.
// Called with mu held.
func (e *Engine) wellFormed(in *Instance) bool {
	if in.Outcome < Success || in.Outcome > Failure {
		e.drops[DropInvalid]++
		return false
	}
	if in.Outcome != Timeout && in.End < in.Start {
		e.drops[DropMalformed]++
		return false
	}
	return true
}

// ProbeRef is a probe whose layout the configuration fixes (Config.Probes
// with its dmax and bins), resolved once by Engine.Ref so that
// Batch.AddTo counts its instances without looking its name up. Such a
// probe is never forgotten, so the reference stays valid for the life of
// the engine.
type ProbeRef struct{ p *probe }

// Ref returns the reference of the probe name, which Config.Probes gives a
// dMax and bins; false for any other probe.
func (e *Engine) Ref(name string) (ProbeRef, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.byName[name]
	if p == nil || !p.configured || !p.fixed {
		return ProbeRef{}, false
	}
	return ProbeRef{p}, true
}

// AddTo records one instance of probe r as Add records an instance that
// names it; in.Probe is not read. It allocates nothing once the probe's
// window and a histogram of its layout exist.
func (b Batch) AddTo(r ProbeRef, in *Instance) {
	e := b.e
	if !e.wellFormed(in) {
		return
	}
	e.place(r.p, in)
}

// place counts an instance of probe p in its window. Called with mu held.
func (e *Engine) place(p *probe, in *Instance) {
	lay, oc, k, ok := e.placeLayout(p, in)
	if !ok {
		return
	}
	s := &e.slots[e.slotFor(k)]
	a := s.accs[p.idx]
	if a == nil {
		a = e.newAcc(*lay)
		s.accs[p.idx] = a
	}
	e.count(a, in, oc, lay.DMaxNs)
	p.lastK = max(p.lastK, k)
	// The instance's own layout, when it carries one (a processor's).
	if (in.DMaxNs != 0 || in.Bins != 0) && !carries(lay, ownLayout(in)) {
		e.rebinned++
	}
	e.counted++
}

// count counts an instance of outcome oc (classified under a layout of
// dMax dmax nanoseconds) in a, with its adjusted count, and offers it to
// the window's picks.
func (e *Engine) count(a *acc, in *Instance, oc Outcome, dmax int64) {
	n := in.Weight
	if n < 1 {
		n = 1
	} else if n > e.cfg.MaxAdjustedCount {
		n = e.cfg.MaxAdjustedCount
		e.weightClamped++
	}
	a.w1 += float64(n)
	a.w2 += float64(n) * float64(n)
	a.addFine(in, n)
	if oc == Success {
		// Most successes are no pick: the exemplar is made for those that
		// are (picks.keeps).
		d := in.End - in.Start
		bin := a.addSuccess(d, n)
		if in.TraceID != ([16]byte{}) && a.picks.keeps(d, bin, a.bins()) {
			ex := Exemplar{TraceID: in.TraceID, SpanID: in.SpanID, Outcome: oc, Delay: d, Time: in.End, Weight: n}
			a.picks.success(&ex, bin, a.bins())
		}
		return
	}
	ex := Exemplar{TraceID: in.TraceID, SpanID: in.SpanID, Outcome: oc, Delay: in.End - in.Start, Time: in.End, Weight: n}
	switch oc {
	case Timeout:
		ex.Delay = dmax // for log-linear buckets, High
		ex.Time = in.Start + ex.Delay
		a.addTimeout(n)
	case Failure:
		a.addFailure(n)
	}
	if ex.TraceID != ([16]byte{}) {
		a.picks.other(&ex)
	}
}

// probeFor returns the probe an instance of the given name and own layout
// counts in, with a valid layout, admitting a new probe; or nil and why
// not. Called with mu held.
func (e *Engine) probeFor(name string, own deltaq.Layout) (*probe, DropReason) {
	p := e.byName[name]
	if p == nil {
		var why DropReason
		if p, why = e.admit(name, own); p == nil {
			return nil, why
		}
	}
	if !p.lay.Valid() {
		// A configured probe without a configured layout: a processor
		// registered after the engine was made, else its first instance.
		if l, ok := e.lookup(p.name); ok {
			p.lay, p.local = l, true
		} else if own.Valid() && own.Bins <= deltaq.MaxThesisBins {
			p.lay = own
		} else {
			return nil, DropInvalid
		}
	}
	return p, 0
}

// lastWindow is a window [lo, hi) of the engine's interval: its index k
// and slot. The zero lastWindow holds no time.
type lastWindow struct{ lo, hi, k, slot int64 }

// windowIndex returns the window of an end time, floorDiv(end, interval),
// from e.last when end lies in it, and remembers it there with its slot.
// Called with mu held.
func (e *Engine) windowIndex(end int64) int64 {
	if l := &e.last; end >= l.lo && end < l.hi {
		return l.k
	}
	k := floorDiv(end, e.interval)
	lo := k * e.interval
	e.last = lastWindow{lo: lo, hi: lo + e.interval, k: k, slot: e.slotOf(k)}
	if e.last.hi < lo { // the window at the end of time
		e.last = lastWindow{}
	}
	return k
}

// slotFor returns slotOf(k), from e.last when k is its window. Called with
// mu held.
func (e *Engine) slotFor(k int64) int64 {
	if l := &e.last; k == l.k && l.hi != l.lo {
		return l.slot
	}
	return e.slotOf(k)
}

// windowOf returns the window instance in, classified as outcome oc
// ending at end (Unix ns), counts in, or false, the drop counted: a
// success or failure whose window has closed is too late, while a timeout
// then counts in the oldest open window, but one that never ended (a
// real-time or synthetic timeout: timerKnown) while the batch's clock is
// back before that window's close (clockBack); any instance beyond the
// open windows is too early. In single-window mode it is window 0, and the
// instance widens the window's extent (end) and its sampling period (its
// start, end). Called with mu held.
func (e *Engine) windowOf(oc Outcome, end int64, in *Instance) (int64, bool) {
	if e.interval == 0 {
		e.minEnd = min(e.minEnd, end)
		e.maxEnd = max(e.maxEnd, end)
		e.minStart = min(e.minStart, in.Start)
		return 0, true
	}
	k := e.windowIndex(end)
	if k < e.k0 {
		if oc != Timeout || timerKnown(in) && e.clockBack(k) {
			e.drops[DropTooLate]++
			return 0, false
		}
		// A timeout is known only when its span finally ends (or a timer
		// fires after a grace): when its own window (start + dMax) has
		// closed, it counts in the oldest open window rather than not at
		// all, so that a slow system does not hide its timeouts.
		k = e.k0
		e.lateTimeouts++
	}
	if k >= e.k0+e.nslots {
		e.drops[DropTooEarly]++
		return 0, false
	}
	return k, true
}

// timerKnown reports whether in is a timeout that never ended, known when
// its timer fired, on the clock of its batch: a real-time or synthetic
// timeout. One judged from its span's end, in an open window, came from a
// clock that did not go back. Read only for an instance of a closed
// window, off the path of the others.
func timerKnown(in *Instance) bool { return in.Outcome == Timeout && !in.Ended }

// clockBack reports whether window k, closed, is not due to close yet by
// the clock of the batch (BeginAt): the clock went back after it closed.
// Called with mu held.
func (e *Engine) clockBack(k int64) bool {
	if e.batchClock == nil {
		return false
	}
	if e.batchAt == 0 {
		e.batchAt = e.batchClock().UnixNano()
	}
	return e.batchAt < (k+1)*e.interval+e.lag
}

// newAcc returns an empty accumulator of layout l, reusing a free one.
func (e *Engine) newAcc(l deltaq.Layout) *acc {
	if f := e.free[l]; len(f) > 0 {
		a := f[len(f)-1]
		e.free[l] = f[:len(f)-1]
		return a
	}
	if l.IsLogLinear() {
		h, err := deltaq.NewLogLinearHistogram(l.LogLinear)
		if err != nil {
			// deltaq.LogLinearLayout checked the buckets.
			panic(fmt.Sprintf("analysis: log-linear histogram for a valid layout: %v", err))
		}
		return &acc{lay: l, ll: h, picks: e.newPicks(), fine: e.fine.NewHistogram()}
	}
	h, err := deltaq.NewHistogram(l.Grid())
	if err != nil {
		// Layout.Valid guarantees a positive width and 1 ≤ bins ≤ MaxBins.
		panic(fmt.Sprintf("analysis: histogram for a valid layout: %v", err))
	}
	return &acc{lay: l, hist: h, picks: e.newPicks(), fine: e.fine.NewHistogram()}
}

// newPicks returns the exemplar and worst-instance selection of a window.
func (e *Engine) newPicks() *picks {
	groups := 0
	if e.cfg.Exemplars.Enabled {
		groups = e.cfg.Exemplars.MaxPerProbe
	}
	return newPicks(groups, e.cfg.WorstInstances)
}

// Stats are the engine's running counters.
type Stats struct {
	// Counted is the number of instances counted into a window.
	Counted int64
	// Dropped counts the instances not counted, by reason.
	Dropped Drops
	// Probes is the number of probes tracked, and UnconfiguredProbes the
	// number of them that no configuration names (at most MaxProbes).
	Probes, UnconfiguredProbes int
	// ExpiredProbes is the number of unconfigured probes forgotten after
	// ProbeIdleTimeout without an instance.
	ExpiredProbes int64
	// Rebinned is the number of instances (among Counted) whose own dMax or
	// bins differed from their probe's layout and that were classified and
	// binned under the probe's layout.
	Rebinned int64
	// LateTimeouts is the number of timeouts (among Counted) whose own
	// window, by start + dMax, had closed when they arrived: they were
	// counted in the oldest open window.
	LateTimeouts int64
	// WeightClamped is the number of instances (among Counted) whose
	// adjusted count was above MaxAdjustedCount and counted as that many.
	WeightClamped int64
	// Contributions counts the windows of other engines given to
	// AddWindow, and their idle words given to AddIdle, by fate.
	Contributions Contributions
	// LayoutChanges counts the times a probe moved to another layout
	// after its first (a processor's dmax: auto, or agents' agreement),
	// each at a window boundary. LayoutsAgreed counts the layouts probes
	// took from the agreement of Gateway.LayoutQuorum agents, the first
	// included.
	LayoutChanges, LayoutsAgreed int64
	// SaturatedTotals counts the probes' running totals (ProbeResult.Totals)
	// that reached math.MaxInt64 and stopped there rather than wrap round.
	SaturatedTotals int64
}

// Closes returns when the window that counts an instance ending at end
// (Unix ns) closes: the first Advance at or after that time closes it, and
// an instance added before then counts in it. In single-window mode
// (Interval = 0) the window closes only at Flush: math.MaxInt64.
func (e *Engine) Closes(end int64) int64 {
	if e.interval == 0 {
		return math.MaxInt64
	}
	return (floorDiv(end, e.interval)+1)*e.interval + e.lag
}

// Beyond reports whether an instance ending at end (Unix ns) is beyond the
// open windows, so that Add would drop it as too early (too_early). Always
// false in single-window mode.
func (e *Engine) Beyond(end int64) bool {
	if e.interval == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.windowIndex(end) >= e.k0+e.nslots
}

// ReferencedProbes returns, sorted, the probes the configuration expects
// instances of: the outcomes of the diagram and the entries of
// Config.Probes (the diagram's definitions and operators are calculated,
// and ConfiguredProbes are produced by the program itself).
func (e *Engine) ReferencedProbes() []string {
	// Set by New and never changed: no lock.
	return slices.Clone(e.an.referenced)
}

// Stats returns the counters since the engine was created.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Counted: e.counted, Dropped: e.drops, Probes: e.live, UnconfiguredProbes: e.unconfigured,
		ExpiredProbes: e.expired, Rebinned: e.rebinned, LateTimeouts: e.lateTimeouts, Contributions: e.contributions,
		WeightClamped: e.weightClamped,
		LayoutChanges: e.layoutChanges, LayoutsAgreed: e.layoutsAgreed, SaturatedTotals: e.saturated}
}

// closing is a window detached from the open set, ready for analysis.
type closing struct {
	start, end int64
	// from and to bound the period the window sampled
	// (Result.SamplingPeriod): start and end, but in single-window mode
	// from the earliest instance start, and for the window Flush closes
	// while the clock is in it (the last, partial one) to the clock.
	from, to int64
	names    []string        // names of the probes tracked at detach time
	accs     []*acc          // parallel to names
	lays     []deltaq.Layout // parallel to names: the window's layout of each (zero: none yet)
	// forget names the probes forgotten after this window: their analysis
	// state goes once the window is analysed.
	forget []string
	// contributors is the number of observers whose windows were merged
	// into it; steady those among them up since its start
	// (slot.contributors), shared the names two observers running at once
	// sent under.
	contributors, steady int
	shared               []string
}

// Advance closes every window whose close time (end + Lag) is at or before
// now, in order, and returns their analyses. Windows that could hold no
// instance because the clock jumped ahead are skipped without a Result. With
// Interval = 0 Advance does nothing (use Flush).
//
// When it closes windows, Advance also forgets the unconfigured probes whose
// last instance's window closed ProbeIdleTimeout or more before now.
func (e *Engine) Advance(now time.Time) []*Result {
	if e.interval == 0 {
		return nil
	}
	t := now.UnixNano()
	e.mu.Lock()
	var cl []closing
	for (e.k0+1)*e.interval+e.lag <= t {
		if len(cl) == int(e.nslots) {
			// Every slot has been closed once: the rest are empty windows of
			// a clock jump; jump the oldest open window forward.
			nk0 := floorDiv(t-e.lag, e.interval)
			for i := range e.slots {
				e.slots[e.slotOf(nk0+int64(i))].k = nk0 + int64(i)
			}
			e.k0 = nk0
			e.advanceLayouts()
			break
		}
		cl = append(cl, e.detach())
	}
	if len(cl) > 0 {
		cl[len(cl)-1].forget = e.expire(t)
		e.expirePending()
	}
	e.mu.Unlock()
	return e.analyse(cl)
}

// expire forgets the unconfigured probes idle at t and returns their names.
// A probe is idle when the window of its last instance closed at least
// ProbeIdleTimeout before t, or when it has counted no instance at all (its
// instances were all dropped). Its windows have then all closed: it holds no
// accumulator. Called with mu held, after the due windows were detached.
func (e *Engine) expire(t int64) []string {
	if e.idle <= 0 || e.unconfigured == 0 {
		return nil
	}
	var gone []string
	for _, p := range e.probes {
		if p == nil || p.configured {
			continue
		}
		// A probe whose layout the agents are still agreeing on lives as
		// long as its newest vote (merge.go).
		if last := max(p.lastK, p.lastVote); last != noWindow {
			closed := (last+1)*e.interval + e.lag
			if closed > t-e.idle {
				continue
			}
		}
		gone = append(gone, p.name)
		e.forget(p)
	}
	return gone
}

// Flush closes every open window regardless of the clock: in single-window
// mode (Interval = 0) the one window, otherwise the windows up to and
// including the one containing now, and those after it up to the last that
// holds instances or other engines' windows. It is meant for shutdown and
// offline analysis. The single window spans the instances' ends, and
// sampled from the earliest instance start to the latest end
// (Result.SamplingPeriod); the window containing now keeps its bounds and
// sampled until now, and one after now sampled nothing (0).
func (e *Engine) Flush(now time.Time) []*Result {
	e.mu.Lock()
	var cl []closing
	if e.interval == 0 {
		c := e.detach()
		if e.minEnd <= e.maxEnd {
			c.start, c.end, c.from, c.to = e.minEnd, e.maxEnd, min(e.minStart, e.minEnd), e.maxEnd
		}
		cl = append(cl, c)
	} else {
		t := now.UnixNano()
		last := floorDiv(t, e.interval)
		// An open window after the clock's that holds instances (a
		// sender's clock ahead, a late Advance: LateAdvance) or other
		// engines' windows closes too, with those before it: they were
		// accepted, and a stop lost them.
		for k := e.k0 + e.nslots - 1; k > last; k-- {
			if e.slots[e.slotOf(k)].holds() {
				last = k
				break
			}
		}
		for e.k0 <= last && len(cl) < int(e.nslots) {
			cl = append(cl, e.detach())
		}
		for i := range cl {
			c := &cl[i]
			switch {
			case c.start <= t && t < c.end:
				// The window the clock is in sampled until the clock: its
				// rate of completed instances is over that part (its
				// bounds stay the interval's, which other engines' windows
				// align to).
				c.to = t
			case c.start > t:
				// One after the clock sampled nothing yet.
				c.from, c.to = c.start, c.start
			}
		}
	}
	e.mu.Unlock()
	return e.analyse(cl)
}

// detach removes window k0 from the open set and opens window k0+nslots in
// its slot. Called with mu held.
func (e *Engine) detach() closing {
	s := &e.slots[e.slotOf(e.k0)]
	c := closing{
		start: e.k0 * e.interval,
		end:   (e.k0 + 1) * e.interval,
		from:  e.k0 * e.interval,
		to:    (e.k0 + 1) * e.interval,
		names: make([]string, 0, e.live),
		accs:  make([]*acc, 0, e.live),
		lays:  make([]deltaq.Layout, 0, e.live),
	}
	for i, p := range e.probes {
		if p != nil {
			c.names = append(c.names, p.name)
			c.accs = append(c.accs, s.accs[i])
			c.lays = append(c.lays, p.layoutAt(e.k0))
		}
	}
	clear(s.accs)
	c.contributors, c.steady, c.shared = s.contributors(e.beganBy(e.k0))
	clear(s.sources)
	clear(s.idle)
	s.prints.reset()
	e.known = knownSource{}
	if e.interval > 0 {
		e.k0++
		s.k = e.k0 + e.nslots - 1
		e.advanceLayouts()
	}
	return c
}

// analyse runs the analysis of detached windows in order and recycles their
// histograms.
func (e *Engine) analyse(cl []closing) []*Result {
	if len(cl) == 0 {
		return nil
	}
	res := make([]*Result, 0, len(cl))
	e.amu.Lock()
	for i := range cl {
		r := e.an.close(&cl[i])
		r.Contributors, r.SteadyContributors, r.SharedSources = cl[i].contributors, cl[i].steady, cl[i].shared
		res = append(res, r)
	}
	sat := e.an.saturated
	e.an.saturated = 0
	e.amu.Unlock()
	e.mu.Lock()
	e.saturated += sat
	// Keep for reuse only the accumulators of layouts a probe uses now:
	// probes come and go with their layouts, and free lists of abandoned
	// layouts would otherwise grow without bound.
	inUse := make(map[deltaq.Layout]bool, len(e.probes))
	for _, p := range e.probes {
		if p != nil {
			inUse[p.lay] = true
			for _, sw := range p.pend {
				inUse[sw.lay] = true
			}
		}
	}
	for l := range e.free {
		if !inUse[l] {
			delete(e.free, l)
		}
	}
	for i := range cl {
		for _, a := range cl[i].accs {
			if a != nil && inUse[a.lay] {
				a.reset()
				e.free[a.lay] = append(e.free[a.lay], a)
			}
		}
	}
	e.mu.Unlock()
	return res
}

// slotOf returns the slot of window k (k mod nslots, also for k < 0).
func (e *Engine) slotOf(k int64) int64 {
	i := k % e.nslots
	if i < 0 {
		i += e.nslots
	}
	return i
}
