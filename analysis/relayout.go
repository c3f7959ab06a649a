// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Layout changes announced by a processor.
//
// A deltaq processor whose probe chooses its own dMax (dmax: auto)
// announces each new layout in its collector's registry
// (contract.Layouts.SetLayout), which advances Config.LayoutGeneration. At
// its next batch (Engine.Begin, or Engine.Add) the engine sees the
// generation move and asks Config.LookupLayout again for every probe
// whose layout does not come from Config.Probes. A probe whose layout
// changed moves to it at a window boundary, so that no window mixes two
// layouts: the windows up to the last one that holds an instance of the
// probe (and any earlier open window) keep the old layout and close with
// it; the first later window, and every one after it, has the new one.
// Until then an instance is classified under the layout of the window it
// ends in. Several changes before the old windows close queue up, one per
// window boundary at most; the queue never holds more entries than there
// are open windows.
//
// The Result of a window carries its own width and bins, so the output
// follows: the observer starts the probe's cumulative deltaq.observed
// stream anew when the layout changes, and the band (deltaq.RunningBand)
// restarts on a ΔQ of another shape.

// layoutSwitch is a layout a probe takes from window from on.
type layoutSwitch struct {
	from int64
	lay  deltaq.Layout
}

// relayout looks up again the layouts of the probes that take theirs from
// Config.LookupLayout, after the registry moved to generation g. Called
// with mu held.
func (e *Engine) relayout(g uint64) {
	e.gen = g
	if e.cfg.LookupLayout == nil {
		return
	}
	for _, p := range e.probes {
		if p == nil || p.fixed {
			continue
		}
		l, ok := e.lookup(p.name)
		if !ok {
			continue
		}
		if !p.configured {
			// A processor registered after the probe was first seen (a
			// reload builds the connector before the processors): the
			// probe is configured from now on, as admit makes it.
			p.configured = true
			e.unconfigured--
		}
		p.local, p.cands = true, nil
		e.switchLayout(p, l)
	}
}

// checkLayouts calls relayout when the registry changed since the engine
// last looked. Called with mu held.
func (e *Engine) checkLayouts() {
	if g := e.layoutGeneration(); g != e.gen {
		e.relayout(g)
	}
}

// layoutGeneration is Config.LayoutGeneration, 0 without one.
func (e *Engine) layoutGeneration() uint64 {
	if e.cfg.LayoutGeneration == nil {
		return 0
	}
	return e.cfg.LayoutGeneration()
}

// latest returns the layout of the probe's newest windows.
func (p *probe) latest() deltaq.Layout { return *p.latestRef() }

// latestRef is latest in place, valid until the next switch.
func (p *probe) latestRef() *deltaq.Layout {
	if n := len(p.pend); n > 0 {
		return &p.pend[n-1].lay
	}
	return &p.lay
}

// layoutAt returns the layout of the probe's window k.
func (p *probe) layoutAt(k int64) deltaq.Layout { return *p.layoutRefAt(k) }

// layoutRefAt is layoutAt in place: the probe's layout or one of its
// pending ones, valid until the next switch.
func (p *probe) layoutRefAt(k int64) *deltaq.Layout {
	l := &p.lay
	for i := range p.pend {
		if k < p.pend[i].from {
			break
		}
		l = &p.pend[i].lay
	}
	return l
}

// switchLayout moves probe p to layout l from the first window after the
// last one that holds an instance of it. Called with mu held.
func (e *Engine) switchLayout(p *probe, l deltaq.Layout) {
	switch {
	case !p.lay.Valid():
		p.lay = l
		return
	case l == p.latest():
		return
	case e.interval == 0:
		// One window: it can take the layout only while it is empty.
		if p.lastK == noWindow {
			p.lay, p.pend = l, p.pend[:0]
			e.layoutChanges++
		}
		return
	}
	e.layoutChanges++
	from := e.k0
	if p.lastK != noWindow {
		from = max(from, p.lastK+1)
	}
	if from <= e.k0 {
		// No open window holds an instance of the probe.
		p.lay, p.pend = l, p.pend[:0]
		return
	}
	// Switches from window from on have no instance yet: l replaces them.
	i := len(p.pend)
	for i > 0 && p.pend[i-1].from >= from {
		i--
	}
	p.pend = p.pend[:i]
	if l != p.latest() {
		p.pend = append(p.pend, layoutSwitch{from: from, lay: l})
	}
}

// advanceLayouts makes the switches due at window k0 the probes' current
// layouts. Called with mu held, when k0 moves.
func (e *Engine) advanceLayouts() {
	for _, p := range e.probes {
		if p == nil || len(p.pend) == 0 {
			continue
		}
		i := 0
		for i < len(p.pend) && p.pend[i].from <= e.k0 {
			p.lay = p.pend[i].lay
			i++
		}
		if i > 0 {
			p.pend = append(p.pend[:0], p.pend[i:]...)
		}
	}
}

// placeLayout returns the layout an instance of probe p is classified
// under, its outcome under it, and its window; false when it
// counts in no window (the drop counted). An instance that ends in a
// window of an older layout than the newest is classified under that
// window's layout; one that would move to a window of yet another layout
// by that classification (a timeout whose end, start + dMax, lies across a
// switch) cannot be placed and is refused as a layout mismatch. Called
// with mu held.
func (e *Engine) placeLayout(p *probe, in *Instance) (*deltaq.Layout, Outcome, int64, bool) {
	// The layouts are read in place: a layout is 48 bytes, and an instance
	// is placed millions of times a second.
	lay := p.latestRef()
	if in.Outcome == Timeout && in.DMaxNs > 0 && in.DMaxNs < lay.DMaxNs && len(p.pend) > 0 && e.interval != 0 {
		// A timeout judged under a shorter dMax than the newest layout's:
		// an instance in flight when an auto probe's dMax went up keeps the
		// deadline it was given, and ends there, in a window that may
		// still have the layout it was judged under. Read under the
		// newest, it was refused as a layout mismatch even then.
		deadline := in.Start + in.DMaxNs
		if in.Start > math.MaxInt64-in.DMaxNs {
			deadline = math.MaxInt64
		}
		lay = p.layoutRefAt(floorDiv(deadline, e.interval))
	}
	oc, end, ok := e.classify(lay.DMaxNs, in)
	if !ok {
		return lay, 0, 0, false
	}
	if oc == Timeout && (in.Outcome != Timeout || in.Ended) && e.endedClosed(in.End) {
		// A span longer than dMax (or one a processor judged a timeout)
		// whose own end lies in a closed window arrived late, as a
		// success of its age does: counted in the oldest open window, a
		// replayed batch of old spans would put its timeouts there and
		// none of its successes.
		e.drops[DropTooLate]++
		return lay, 0, 0, false
	}
	k, ok := e.windowOf(oc, end, in)
	if !ok || len(p.pend) == 0 {
		return lay, oc, k, ok
	}
	at := p.layoutRefAt(k)
	if *at == *lay {
		return lay, oc, k, true
	}
	if oc, end, ok = e.classify(at.DMaxNs, in); !ok {
		return at, 0, 0, false
	}
	k2 := floorDiv(end, e.interval)
	switch {
	case k2 < e.k0 && oc == Timeout && !(timerKnown(in) && e.clockBack(k2)):
		k2 = e.k0 // counted in the oldest open window, as windowOf does
	case k2 < e.k0:
		e.drops[DropTooLate]++
		return at, 0, 0, false
	case k2 >= e.k0+e.nslots:
		e.drops[DropTooEarly]++
		return at, 0, 0, false
	}
	if *p.layoutRefAt(k2) != *at {
		e.drops[DropLayoutMismatch]++
		return at, 0, 0, false
	}
	return at, oc, k2, true
}

// endedClosed reports whether an instance that ended at end (Unix ns), by
// its span, ended in a window that has closed; never in single-window
// mode. Called with mu held.
func (e *Engine) endedClosed(end int64) bool {
	return e.interval != 0 && floorDiv(end, e.interval) < e.k0
}

// classify returns the outcome and end of an instance under a layout of
// dMax dmax nanoseconds (see Engine.Add), or false, the drop counted.
// Called with mu held.
func (e *Engine) classify(dmax int64, in *Instance) (Outcome, int64, bool) {
	oc, end := in.Outcome, in.End
	switch {
	case oc == Timeout:
		// A timeout judged under a shorter dMax might have ended within
		// this one, unless it ended, later than this one: a span longer
		// than dmax is a timeout whatever a processor judged it by (the
		// span of an auto probe mapped after its dMax went down, in a
		// window that still has the longer one).
		if in.DMaxNs > 0 && in.DMaxNs < dmax && (!in.Ended || in.End-in.Start <= dmax) {
			e.drops[DropLayoutMismatch]++
			return 0, 0, false
		}
		// Saturated: a start within dMax of the largest time (a clock in
		// 2262) wrapped round to 1678, in a closed window, and the
		// timeout counted in the oldest open one.
		end = in.Start + dmax
		if in.Start > math.MaxInt64-dmax {
			end = math.MaxInt64
		}
	case in.End-in.Start > dmax:
		oc, end = Timeout, in.Start+dmax
	}
	return oc, end, true
}
