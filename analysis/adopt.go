// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"maps"
	"slices"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Adoption says what Engine.Adopt carried over.
type Adoption struct {
	// Carried are the probes whose open windows, history, totals and
	// trigger states the new engine took over.
	Carried []string
	// Fresh are the probes of the old engine that start afresh, with why:
	// a layout (dmax, bins) that changed — the probe is carried too: its
	// open windows close in the old layout, the next ones take the new —
	// or an unconfigured probe for which max_probes has no place any more.
	Fresh map[string]string
	// Reason, when not empty, says why nothing was carried over (another
	// interval: the windows do not line up).
	Reason string
}

// Adopt makes e, a new engine of the configuration a reload brings, take
// over the state of old, the engine of the configuration before, so that
// a reload loses nothing: for every probe whose layout did not change, its
// instances in the open windows (and the windows' contributors, and the
// prints that tell a window delivered again, keyed by the probes' keys,
// which the probes keep: adoptKeys), its
// running totals, the observed ΔQs behind its confidence band (the last
// of them that the new history length holds; none when the band's edges,
// Config.BandPoints, changed),
// its trigger states, the windows its divergence test pools and its
// slack history (when its QTA's points are unchanged); and the snapshot
// being recorded, with the windows a snapshot holds before its trigger.
// The new configuration's QTAs, triggers and diagram apply from the next
// window that closes. The windows old had not closed are
// e's to close: none is lost or counted twice. e must not have been used
// yet; old must not be used afterwards. With another interval nothing is
// carried, and old's open windows are the caller's to flush.
func (e *Engine) Adopt(old *Engine) Adoption {
	ad := Adoption{Fresh: make(map[string]string)}
	old.mu.Lock()
	defer old.mu.Unlock()
	old.amu.Lock()
	defer old.amu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.amu.Lock()
	defer e.amu.Unlock()
	if old.interval != e.interval || e.interval == 0 {
		ad.Reason = "the interval changed: windows of the two configurations do not line up"
		return ad
	}
	// old is not asked for its layouts here: the registry may hold the new
	// configuration's by now (a processor built before this engine's
	// component), and old would take a change of configuration for its
	// own. Its owner calls CheckLayouts before it hands old over.
	e.openAt(old)
	e.adoptKeys(old)
	for _, op := range old.probes {
		if op == nil {
			continue
		}
		np := e.byName[op.name]
		// A probe whose layout the new configuration changes keeps its open
		// windows in the old layout and moves to the new one from its next
		// window (relayout.go), where it starts afresh.
		var relayout deltaq.Layout
		switch {
		case np != nil && np.lay.Valid() && op.lay.Valid() && np.lay != op.latest():
			relayout = np.lay
			ad.Fresh[op.name] = "its dmax or bins changed: the new layout applies from its next window"
		case np == nil && e.unconfigured >= e.cfg.MaxProbes:
			ad.Fresh[op.name] = "max_probes has no place for it"
			continue
		case np == nil:
			np = e.register(op.name, false, op.lay)
			np.key = op.key
		}
		// The open windows keep the layouts they were counted in, and the
		// switches still due (relayout.go) with them.
		if op.lay.Valid() {
			np.lay, np.pend = op.lay, append(np.pend[:0], op.pend...)
		}
		np.lastK = op.lastK
		for k := old.k0; k < old.k0+old.nslots && k < e.k0+e.nslots; k++ {
			if a := old.slots[old.slotOf(k)].accs[op.idx]; a != nil {
				e.slots[e.slotOf(k)].accs[np.idx] = a
			}
		}
		if relayout.Valid() {
			e.switchLayout(np, relayout)
		}
		e.an.adopt(old.an, op.name)
		ad.Carried = append(ad.Carried, op.name)
	}
	e.seed = old.seed
	for k := old.k0; k < old.k0+old.nslots && k < e.k0+e.nslots; k++ {
		from, to := &old.slots[old.slotOf(k)], &e.slots[e.slotOf(k)]
		// The entries are the old engine's, which is not used again.
		to.sources, to.idle = maps.Clone(from.sources), maps.Clone(from.idle)
		to.prints = from.prints.clone()
	}
	e.an.nextID = max(e.an.nextID, old.an.nextID)
	e.an.snap.adopt(&old.an.snap)
	slices.Sort(ad.Carried)
	return ad
}

// openAt makes e's open windows start where old's do: the windows old had
// not closed are closed by e. With a shorter lag e keeps fewer windows
// open: it takes as many as old kept, which its next Advance closes down
// to its own lag (the old windows beyond its own number were dropped, with
// their instances). Called by Adopt, with both engines held.
func (e *Engine) openAt(old *Engine) {
	if old.nslots > e.nslots {
		e.nslots = old.nslots
		e.slots = make([]slot, e.nslots)
		for i := range e.slots {
			e.slots[i].accs = make([]*acc, len(e.probes))
		}
	}
	e.k0 = old.k0
	for i := range e.slots {
		e.slots[e.slotOf(e.k0+int64(i))].k = e.k0 + int64(i)
	}
}

// adopt takes over old's recording of snapshots, when the new
// configuration records them: the windows before a trigger (as many as
// the new snapshot::before asks), and the snapshot being recorded, which
// the trigger's record names and the new engine completes, after the
// windows the new snapshot::after asks.
func (s *snapshotRecorder) adopt(old *snapshotRecorder) {
	if !s.cfg.Enabled || !old.cfg.Enabled {
		return
	}
	past := old.past
	if n := len(past); n > s.cfg.Before {
		past = past[n-s.cfg.Before:]
	}
	s.past = append(s.past[:0], past...)
	s.active = old.active
	s.remaining = old.remaining + s.cfg.After - old.cfg.After
}

// adopt takes over the analysis state of probe name from old, keeping the
// new configuration's QTA and trigger settings.
func (a *analyzer) adopt(old *analyzer, name string) {
	os := old.probes[name]
	if os == nil {
		return
	}
	ns := a.state(name)
	ns.totals, ns.width, ns.bins, ns.edges = os.totals, os.width, os.bins, os.edges
	if os.band != nil && ns.band != nil && os.band.Points() == ns.band.Points() {
		// Another history keeps the last ΔQs that fit; other band
		// edges (cdf_points) start it afresh: the ΔQs are kept at the
		// old ones alone.
		if os.band.K() == ns.band.K() {
			ns.band = os.band
		} else if b, err := os.band.Resized(ns.band.K()); err == nil {
			ns.band = b
		}
	}
	ns.trig = os.trig
	// The divergence run and pooled windows count towards the new
	// settings as far as they fit them.
	ns.div.run = min(os.div.run, ns.div.windows)
	if c := cap(ns.div.pool); c > 0 {
		p := os.div.pool
		if len(p) > c {
			p = p[len(p)-c:]
		}
		ns.div.pool = append(ns.div.pool[:0], p...)
	}
	// A window's slack is measured against the QTA's points: under other
	// points the history would show a step the system did not take, which
	// the trend reads as a fall (a tighter QTA) and projects to a
	// violation. The trend then waits for windows of the new points.
	if !slices.Equal(os.cfg.QTA.Points, ns.cfg.QTA.Points) {
		return
	}
	end, mins, vs := os.slack.end, os.slack.min, os.slack.v
	if n := len(end); n > ns.slack.w {
		end, mins, vs = end[n-ns.slack.w:], mins[n-ns.slack.w:], vs[n-ns.slack.w:]
	}
	ns.slack.end = append(ns.slack.end[:0], end...)
	ns.slack.min = append(ns.slack.min[:0], mins...)
	ns.slack.v = append(ns.slack.v[:0], vs...)
}

// CheckLayouts makes the engine take the layout changes announced since
// its last batch (an auto probe's dMax chosen at its last tick), as a batch
// would. An engine handed to Adopt is checked so by its owner before the
// components of the next configuration are built: after that, the
// registry it looks layouts up in may hold theirs.
func (e *Engine) CheckLayouts() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checkLayouts()
}

// Layout returns the layout of the probe's newest windows, as the
// processor registers it; false when the engine does not track the probe
// or has no layout for it yet.
func (e *Engine) Layout(name string) (deltaq.Layout, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.byName[name]
	if p == nil {
		return deltaq.Layout{}, false
	}
	l := p.latest()
	return l, l.Valid()
}

// adoptKeys gives e's probes the keys of their prints (probe.key): a
// probe old tracks keeps its key, whatever index the new configuration
// gives it, and every other takes a key old never gave, so that the
// prints old merged, carried over, stand for the same probes' windows,
// and a window an agent delivers again after the reload is still a
// duplicate however the reload added or removed probes; a print of a
// probe old tracked and e does not (max_probes has no place for it) then
// stands for no probe's window. The prints cost what they cost before the
// reload: one a window merged, kept while the window is open. Called by
// Adopt, with both engines held, before it registers old's other probes
// (which take old's keys).
func (e *Engine) adoptKeys(old *Engine) {
	next := max(e.nextKey, old.nextKey)
	for _, np := range e.probes {
		if np == nil {
			continue
		}
		if op := old.byName[np.name]; op != nil {
			np.key = op.key
			continue
		}
		np.key = next
		next++
	}
	e.nextKey = next
}
