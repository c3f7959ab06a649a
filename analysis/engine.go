package analysis

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// DropReason says why an instance was not counted.
type DropReason int

// Reasons for not counting an instance.
const (
	// DropProbeLimit: the instance names a new probe beyond Config.MaxProbes.
	DropProbeLimit DropReason = iota
	// DropTooLate: the instance ends in a window that has already closed.
	DropTooLate
	// DropTooEarly: the instance ends in a window beyond the open ones (more
	// than about one interval after the engine's clock).
	DropTooEarly
	// DropInvalid: the instance has no usable outcome, or neither it nor the
	// probe's configuration gives a dMax and a bin count.
	DropInvalid
	numDropReasons
)

// String returns the reason as used in the self-telemetry attribute:
// probe_limit, too_late, too_early or invalid.
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
type Engine struct {
	cfg      Config
	interval int64 // ns; 0: single window
	lag      int64 // ns
	nslots   int64 // open windows kept

	mu      sync.Mutex // guards everything below up to the analysis state
	byName  map[string]*probe
	probes  []*probe // by index
	k0      int64    // oldest open window
	slots   []slot
	free    map[layout][]*acc
	drops   Drops
	counted int64
	// lateTimeouts counts timeouts that arrived after their own window had
	// closed and were counted in the oldest open window instead.
	lateTimeouts int64
	started      bool
	minEnd       int64 // single-window mode: extent of the instances
	maxEnd       int64
	maxBatch     int

	amu sync.Mutex // guards the analysis state
	an  *analyzer
}

// layout is the shape of a probe's histogram: dMax in nanoseconds and bins.
type layout struct {
	dmaxNs int64
	bins   int
}

func (l layout) valid() bool { return l.dmaxNs > 0 && l.bins > 0 && l.bins <= deltaq.MaxBins }

func (l layout) width() float64 { return float64(l.dmaxNs) / 1e9 / float64(l.bins) }

// probe is the ingestion state of one probe.
type probe struct {
	name     string
	idx      int
	fixed    bool   // layout comes from the configuration
	lay      layout // layout for windows opened from now on
	dmaxSecs float64
}

// acc accumulates one probe's instances in one window.
type acc struct {
	lay  layout
	hist *deltaq.Histogram
	sum  float64 // Σ successful delays, seconds
}

// slot is one open window.
type slot struct {
	k    int64
	accs []*acc // by probe index; nil: no instance yet
}

// New returns an engine for cfg. now is the engine's clock at creation: the
// windows that closed before it are never opened. For Interval = 0 now is
// ignored.
func New(cfg Config, now time.Time) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Engine{
		cfg:      cfg,
		interval: int64(cfg.Interval),
		lag:      int64(cfg.Lag),
		byName:   make(map[string]*probe),
		free:     make(map[layout][]*acc),
		minEnd:   math.MaxInt64,
		maxEnd:   math.MinInt64,
	}
	if e.interval == 0 {
		e.nslots = 1
	} else {
		// Windows from the oldest not yet closed to one interval beyond the
		// clock: ⌈lag/I⌉ + 2.
		e.nslots = (e.lag+e.interval-1)/e.interval + 2
		e.k0 = floorDiv(now.UnixNano()-e.lag, e.interval)
	}
	e.slots = make([]slot, e.nslots)
	for i := range e.slots {
		e.slots[i].k = e.k0 + int64(i)
	}
	an, err := newAnalyzer(&e.cfg, now)
	if err != nil {
		return nil, err
	}
	e.an = an
	// Configured probes and the diagram's observable names exist from the
	// start so that their empty windows are reported too.
	for _, name := range an.knownProbes() {
		e.register(name)
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

// register adds a probe; it returns nil when MaxProbes is reached. Called
// with mu held.
func (e *Engine) register(name string) *probe {
	if p := e.byName[name]; p != nil {
		return p
	}
	if len(e.probes) >= e.cfg.MaxProbes {
		return nil
	}
	name = strings.Clone(name) // do not keep the caller's (pdata) memory alive
	p := &probe{name: name, idx: len(e.probes)}
	if pc, ok := e.cfg.Probes[name]; ok && pc.DMax > 0 && pc.Bins > 0 {
		p.fixed = true
		p.lay = layout{dmaxNs: int64(pc.DMax), bins: pc.Bins}
		p.dmaxSecs = pc.DMax.Seconds()
	}
	e.byName[name] = p
	e.probes = append(e.probes, p)
	for i := range e.slots {
		e.slots[i].accs = append(e.slots[i].accs, nil)
	}
	return p
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
	return Batch{e: e}
}

// End unlocks the engine.
func (b Batch) End() { b.e.mu.Unlock() }

// Add records one instance. It does not allocate once the probe, its window
// and a histogram of its layout exist (histograms are reused across windows).
func (b Batch) Add(in *Instance) { b.e.add(in) }

// Add records one instance under its own lock; prefer Begin/Add/End for
// batches.
func (e *Engine) Add(in *Instance) {
	e.mu.Lock()
	e.add(in)
	e.mu.Unlock()
}

func (e *Engine) add(in *Instance) {
	if in.Outcome < Success || in.Outcome > Failure {
		e.drops[DropInvalid]++
		return
	}
	p := e.byName[in.Probe]
	if p == nil {
		if p = e.register(in.Probe); p == nil {
			e.drops[DropProbeLimit]++
			return
		}
	}
	if !p.fixed {
		// Instances may ask for at most the thesis's 1000 bins (the
		// processor's own limit), which bounds the memory of a probe.
		if l := (layout{dmaxNs: in.DMaxNs, bins: in.Bins}); l.valid() && l.bins <= deltaq.MaxThesisBins && l != p.lay {
			// The processor's dMax or bins changed (or this is the first
			// instance): windows opened from now on use the new layout.
			p.lay = l
			p.dmaxSecs = float64(l.dmaxNs) / 1e9
		}
	}
	if !p.lay.valid() {
		e.drops[DropInvalid]++
		return
	}
	end := in.End
	if in.Outcome == Timeout {
		d := in.DMaxNs
		if d <= 0 || p.fixed {
			d = p.lay.dmaxNs
		}
		end = in.Start + d
	}
	var k int64
	if e.interval > 0 {
		k = floorDiv(end, e.interval)
		if k < e.k0 {
			if in.Outcome != Timeout {
				e.drops[DropTooLate]++
				return
			}
			// A timeout is known only when its span finally ends (or a
			// timer fires after a grace): when its own window (start +
			// dMax) has closed, it counts in the oldest open window
			// rather than not at all, so that a slow system does not
			// hide its timeouts.
			k = e.k0
			e.lateTimeouts++
		}
		if k >= e.k0+e.nslots {
			e.drops[DropTooEarly]++
			return
		}
	} else {
		e.minEnd = min(e.minEnd, end)
		e.maxEnd = max(e.maxEnd, end)
	}
	s := &e.slots[e.slotOf(k)]
	a := s.accs[p.idx]
	if a == nil {
		a = e.newAcc(p.lay)
		s.accs[p.idx] = a
	}
	switch in.Outcome {
	case Success:
		d := float64(in.End-in.Start) / 1e9
		before := a.hist.Successes()
		a.hist.Add(d)
		if a.hist.Successes() > before {
			// Only what the histogram counted as a success enters the sum.
			a.sum += d
		}
	case Timeout:
		a.hist.AddTimeout()
	case Failure:
		a.hist.AddFailure()
	}
	e.counted++
}

// newAcc returns an empty accumulator of layout l, reusing a free one.
func (e *Engine) newAcc(l layout) *acc {
	if f := e.free[l]; len(f) > 0 {
		a := f[len(f)-1]
		e.free[l] = f[:len(f)-1]
		return a
	}
	h, err := deltaq.NewHistogram(l.width(), l.bins)
	if err != nil {
		// layout.valid() guarantees a positive width and 1 ≤ bins ≤ MaxBins.
		panic(fmt.Sprintf("analysis: histogram for a valid layout: %v", err))
	}
	return &acc{lay: l, hist: h}
}

// Stats are the engine's running counters.
type Stats struct {
	// Counted is the number of instances counted into a window.
	Counted int64
	// Dropped counts the instances not counted, by reason.
	Dropped Drops
	// Probes is the number of probes tracked.
	Probes int
	// LateTimeouts is the number of timeouts (among Counted) whose own
	// window, by start + dMax, had closed when they arrived: they were
	// counted in the oldest open window.
	LateTimeouts int64
}

// Stats returns the counters since the engine was created.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Counted: e.counted, Dropped: e.drops, Probes: len(e.probes), LateTimeouts: e.lateTimeouts}
}

// closing is a window detached from the open set, ready for analysis.
type closing struct {
	start, end int64
	names      []string // probe names by index at detach time
	accs       []*acc   // by probe index
}

// Advance closes every window whose close time (end + Lag) is at or before
// now, in order, and returns their analyses. Windows that could hold no
// instance because the clock jumped ahead are skipped without a Result. With
// Interval = 0 Advance does nothing (use Flush).
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
			break
		}
		cl = append(cl, e.detach())
	}
	e.mu.Unlock()
	return e.analyse(cl)
}

// Flush closes every open window regardless of the clock: in single-window
// mode (Interval = 0) the one window, otherwise the windows up to and
// including the one containing now. It is meant for shutdown and offline
// analysis.
func (e *Engine) Flush(now time.Time) []*Result {
	e.mu.Lock()
	var cl []closing
	if e.interval == 0 {
		c := e.detach()
		if e.minEnd <= e.maxEnd {
			c.start, c.end = e.minEnd, e.maxEnd
		}
		cl = append(cl, c)
	} else {
		last := floorDiv(now.UnixNano(), e.interval)
		for e.k0 <= last && len(cl) < int(e.nslots) {
			cl = append(cl, e.detach())
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
		names: make([]string, len(e.probes)),
		accs:  make([]*acc, len(e.probes)),
	}
	for i, p := range e.probes {
		c.names[i] = p.name
	}
	copy(c.accs, s.accs)
	clear(s.accs)
	if e.interval > 0 {
		e.k0++
		s.k = e.k0 + e.nslots - 1
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
		res = append(res, e.an.close(&cl[i]))
	}
	e.amu.Unlock()
	e.mu.Lock()
	// Keep for reuse only the accumulators of layouts a probe uses now:
	// layouts come from instance attributes, and free lists of abandoned
	// ones would otherwise grow without bound.
	inUse := make(map[layout]bool, len(e.probes))
	for _, p := range e.probes {
		inUse[p.lay] = true
	}
	for l := range e.free {
		if !inUse[l] {
			delete(e.free, l)
		}
	}
	for i := range cl {
		for _, a := range cl[i].accs {
			if a != nil && inUse[a.lay] {
				a.hist.Reset()
				a.sum = 0
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
