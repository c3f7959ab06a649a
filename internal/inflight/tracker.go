// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"sync"
	"sync/atomic"
)

// Tracker is the in-flight state of the start events of one component: the
// Table of announced instances and the Ended spans beside it, under one
// lock, so that a span and its start event, handled at the same time,
// cannot both miss each other. The deltaq connector and the deltaq
// processor both keep one; it is safe for concurrent use.
//
// The span path asks the tracker only while it is Active: once start
// events are in use (Remember) or while instances are tracked, so that a
// component fed no start events pays one atomic load per span.
type Tracker struct {
	mu    sync.Mutex
	table *Table
	ended *Ended
	opts  Options
	// tracked mirrors table.Len() for the lock-free Active.
	tracked atomic.Int64
	// remember is set once start events are in use: only then are the
	// spans that end remembered (Ended).
	remember atomic.Bool
}

// NewTracker returns an empty tracker bounded by o (checked by
// Options.Check).
func NewTracker(o Options) *Tracker {
	return &Tracker{
		table: newTable(o.MaxInFlight, int64(o.LateWindow), int64(o.TimerResolution)),
		ended: NewEnded(o.MaxEnded, int64(o.EndedWindow)),
		opts:  o,
	}
}

// Options returns the options the tracker was made with.
func (t *Tracker) Options() Options { return t.opts }

// Remember says that start events are in use: from now on a span that ends
// no tracked instance is remembered, so that its start event, if it comes
// later, is recognised (StartAfterEnd) rather than tracked.
func (t *Tracker) Remember() {
	if !t.remember.Load() {
		t.remember.Store(true)
	}
}

// Remembering reports whether Remember was called.
func (t *Tracker) Remembering() bool { return t.remember.Load() }

// Active reports whether a span must be looked up (End): start events are
// in use, or instances are tracked.
func (t *Tracker) Active() bool { return t.remember.Load() || t.tracked.Load() > 0 }

// EndResult is what End found for a span.
type EndResult struct {
	// Probe is the probe of the instance the span ends, when Found: a
	// tracked one, or a timed-out one the table forgot while the spans
	// remembered hold it (Ended.AddLate).
	Probe int
	// State is the state the instance was in: TimedOut means its timeout
	// was reported already, and the span is late.
	State State
	Found bool
	// Cut is the number of remembered spans forgotten, still inside
	// ended_window, to make room for this one (max_ended).
	Cut int
}

// End stops tracking the instance the span of key k ends, if one is
// tracked, and, while start events are in use, remembers the span as ended
// at now (nanoseconds since the Unix epoch).
func (t *Tracker) End(k Key, now int64) EndResult {
	l := t.Lock()
	defer l.Unlock()
	return l.End(k, now)
}

// Locked is a tracker held for a batch of operations (Tracker.Lock): one
// lock for a batch of spans or start events rather than one each.
type Locked struct{ t *Tracker }

// Lock takes the tracker for a batch of operations; Unlock must follow.
func (t *Tracker) Lock() Locked {
	t.mu.Lock()
	return Locked{t}
}

// Unlock releases the tracker.
func (l Locked) Unlock() {
	l.t.tracked.Store(int64(l.t.table.Len()))
	l.t.mu.Unlock()
}

// Warm reads ahead what the starts or ends of keys, about to follow, will
// look up, so that they find it in the cache (Table.warm): a batch of
// spans warms a few dozen keys at a time. While spans are remembered as
// ended, it reads ahead where they will be (Ended.warmTag) too; while none
// is (no start events yet, or all past their window), it reads only the
// table.
func (l Locked) Warm(keys []Key) { l.t.table.warm(keys, l.t.rememberedAny(), false) }

// WarmStarts is Warm for the keys of start events, about to be tracked:
// each is looked up among the spans remembered, in both generations
// (Ended.Contains), when any is.
func (l Locked) WarmStarts(keys []Key) { l.t.table.warm(keys, l.t.rememberedAny(), true) }

// rememberedAny returns the spans remembered as ended when they hold any,
// else nil: the look-aheads read where no key can be found only while the
// set is in use.
func (t *Tracker) rememberedAny() *Ended {
	if t.ended.Len() > 0 {
		return t.ended
	}
	return nil
}

// WarmFree reads ahead the n free slots that the next n instances tracked
// will take (Table.warmFree).
func (l Locked) WarmFree(n int) { l.t.table.warmFree(n) }

// End is Tracker.End on the held tracker.
func (l Locked) End(k Key, now int64) EndResult { return l.EndKey(&k, now) }

// EndKey is End with the key passed by reference, for the span path: a
// Key passed by value is copied in overlapping 16-byte moves, whose loads
// wait for the stores of the key just built (a stall a profile of the
// connector shows), and read by reference it is loaded 8 bytes at a time.
func (l Locked) EndKey(k *Key, now int64) EndResult {
	t := l.t
	var r EndResult
	r.Probe, r.State, r.Found = t.table.end(k)
	if !r.Found && t.ended.AnyLate() {
		// Its instance timed out, and the table forgot it (evicted, or
		// past a late window shorter than ended_window): late all the
		// same.
		if p, late := t.ended.Late(k); late {
			r.Probe, r.State, r.Found = p, TimedOut, true
		}
	}
	// The span is remembered whether it ended an instance or not: a start
	// event of it delivered again (a retried request) is after its span
	// too, and tracked again it would time out, a second outcome.
	if t.remember.Load() {
		r.Cut = t.ended.Add(*k, now)
	}
	return r
}

// StartResult is what Start did with an announced instance.
type StartResult uint8

const (
	// Tracked: the instance is tracked until its span ends it or it is due.
	Tracked StartResult = iota
	// Duplicate: an instance of the same span is tracked already.
	Duplicate
	// AfterEnd: its span ended already (and was counted); not tracked.
	AfterEnd
	// Stale: it was due more than ended_window ago. Its span, had it come
	// by then, is forgotten: whether it came cannot be told, and a timeout
	// counted now could be the second outcome of one instance (a start
	// event held up on its way, a queue of them replayed). Not tracked.
	Stale
	// Future: it starts more than ended_window after now, the bound on
	// how far ahead of the component's clock a start is believed: a
	// sender's clock far ahead, or a forged time. Tracked, it would hold a
	// slot of max_in_flight until it is due (at the largest time, never)
	// and push real instances out. Not tracked.
	Future
)

// Start tracks the instance a start event announces, at now (nanoseconds
// since the Unix epoch), unless its span ended already or it is tracked
// already. A full table evicts its oldest instance first (Eviction).
func (t *Tracker) Start(inst *Instance, now int64) (StartResult, Eviction) {
	t.Remember()
	l := t.Lock()
	defer l.Unlock()
	return l.Start(inst, now)
}

// Start is Tracker.Start on the held tracker; the caller has called
// Remember.
func (l Locked) Start(inst *Instance, now int64) (StartResult, Eviction) {
	var ev Eviction
	r := l.Track(inst, now, &ev)
	return r, ev
}

// Track is Start for the span path: it describes an eviction in *ev,
// whose Evicted it sets, and copies nothing else when there is none.
func (l Locked) Track(inst *Instance, now int64, ev *Eviction) StartResult {
	t := l.t
	ev.Evicted, ev.Cut = false, 0
	if t.ended.Len() > 0 && t.ended.Contains(inst.Key, now) {
		return AfterEnd
	}
	if max(inst.Due, inst.Deadline) < now-int64(t.opts.EndedWindow) {
		return Stale
	}
	if inst.Start > addSat(now, int64(t.opts.EndedWindow)) {
		return Future
	}
	if !t.table.add(inst, ev) {
		return Duplicate
	}
	if ev.Evicted && ev.State == TimedOut {
		// Its timeout was counted, and its span may still come: late, not
		// a second outcome (Ended.AddLate).
		ev.Cut = t.ended.AddLate(ev.Instance.Key, now, ev.Instance.Probe)
	}
	return Tracked
}

// Expire appends to dst the instances due by now (nanoseconds since the
// Unix epoch), which have timed out, and forgets the timed-out instances
// past their late window and the ended spans past ended_window. It returns
// the extended dst and the remembered spans cut to make room (EndResult.Cut).
//
// With a late window shorter than ended_window, a timed-out instance it
// forgets is remembered as timed out (Ended.AddLate): its start event
// delivered again (a retried request) after the late window is not stale
// yet, and tracked it would time out a second time; its span, coming
// after the late window, is late. With a late window at least
// ended_window (the defaults) such a start event is stale.
func (t *Tracker) Expire(now int64, dst []Instance) ([]Instance, int) {
	var ended *Ended
	if t.opts.LateWindow < t.opts.EndedWindow && t.remember.Load() {
		ended = t.ended
	}
	t.mu.Lock()
	dst, _, cut := t.table.expire(now, dst, ended)
	t.ended.Expire(now)
	t.tracked.Store(int64(t.table.Len()))
	t.mu.Unlock()
	return dst, cut
}

// Counts returns the numbers of Started and TimedOut instances tracked.
func (t *Tracker) Counts() (started, timedOut int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.table.Counts()
}

// Len returns the number of instances tracked, in either state.
func (t *Tracker) Len() int { return int(t.tracked.Load()) }

// Capacity returns max_in_flight.
func (t *Tracker) Capacity() int { return t.table.Capacity() }

// RememberedLen returns the number of ended spans remembered.
func (t *Tracker) RememberedLen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended.Len()
}

// Moved is what Tracker.MoveTo handed over.
type Moved struct {
	// Instances are the instances moved, Dropped those keep refused.
	Instances, Dropped int
	// Evicted are the instances the new tracker's max_in_flight could not
	// hold, by state (the oldest go), as a start event's tracking evicts
	// them; a timed-out one is remembered as such (Ended.AddLate), its
	// span late.
	Evicted [2]int
	// Remembered is the number of spans the new tracker remembers as ended
	// after the move; Cut is the number of remembered spans it could not
	// hold (a smaller max_ended) while still inside their ended_window.
	Remembered, Cut int
}

// MoveTo hands t's state to dst, the tracker of the component a
// configuration reload builds: every instance for which keep returns true
// (keep may change its Probe, and hold it longer by raising its Due), with
// its state and due time, and the remembered spans (Ended.MoveTo, unless
// both were made with the same max_ended and ended_window: then the set
// itself). t is left empty. now is the time of the move (nanoseconds since
// the Unix epoch), from which a timed-out instance the new max_in_flight
// evicts is remembered.
func (t *Tracker) MoveTo(dst *Tracker, keep func(*Instance) bool, now int64) Moved {
	t.mu.Lock()
	defer t.mu.Unlock()
	dst.mu.Lock()
	defer dst.mu.Unlock()
	var m Moved
	var late []Instance
	m.Instances, m.Dropped = t.table.MoveTo(dst.table, keep, func(ev *Eviction) {
		m.Evicted[ev.State]++
		if ev.State == TimedOut {
			late = append(late, ev.Instance)
		}
	})
	if t.opts.MaxEnded == dst.opts.MaxEnded && t.opts.EndedWindow == dst.opts.EndedWindow {
		dst.ended, t.ended = t.ended, NewEnded(t.opts.MaxEnded, int64(t.opts.EndedWindow))
	} else {
		m.Cut = t.ended.MoveTo(dst.ended)
	}
	dst.ended.keepLate(keep)
	// Their timeouts were counted and their spans may still come: late, as
	// those Track evicts (kept and renumbered by keep already).
	for i := range late {
		m.Cut += dst.ended.AddLate(late[i].Key, now, late[i].Probe)
	}
	m.Remembered = dst.ended.Len()
	if t.remember.Load() {
		dst.remember.Store(true)
	}
	t.tracked.Store(0)
	dst.tracked.Store(int64(dst.table.Len()))
	return m
}
