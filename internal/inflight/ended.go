// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "sort"

// Ended remembers the keys of spans that ended with no instance tracked for
// them, so that a start event arriving after its span (the traces and logs
// pipelines run independently, and an SDK may send the start event and the
// span together) is recognised and not tracked as a new instance, which
// would time out and count the instance a second time.
//
// A key is recognised for a window after it was added. Memory is bounded by
// capacity, and kept cheap on the span path, with two generations: keys are
// added to the current one; when it holds capacity/2 keys it becomes the
// previous one, and the previous one is dropped whole. Add reports how many
// of the dropped keys were still inside their window (cut by the bound, not
// by time). Expire drops a generation once all of its keys are past their
// window, so a key is held at most about two windows, and a set that nothing
// is added to is empty once its newest key is past its window. Adding a key
// costs one map insertion, never a deletion (the span path's share of the
// work): the maps are cleared and reused, and no operation allocates once
// both have grown to their working size.
//
// Ended holds no collector types and is not safe for concurrent use.
type Ended struct {
	// half is the bound on each generation; the set holds at most 2·half
	// keys.
	half   int
	window int64

	cur, prev endedGen
	// last is the latest time added, so that times stay non-decreasing
	// when callers race.
	last int64
}

// endedGen is one generation of keys with the times they were added.
type endedGen struct {
	keys map[Key]int64
	// times holds the times of keys in the order they were added (so
	// non-decreasing): the first and last are the generation's span of time,
	// and a binary search counts the keys still inside their window.
	times []int64
}

func (g *endedGen) reset() {
	clear(g.keys)
	g.times = g.times[:0]
}

// NewEnded returns an empty set that remembers at most capacity keys
// (capacity is rounded down to an even number, at least 2), each for window
// nanoseconds after it was added (at least zero).
func NewEnded(capacity int, window int64) *Ended {
	half := max(capacity/2, 1)
	return &Ended{
		half:   half,
		window: max(window, 0),
		cur:    endedGen{keys: make(map[Key]int64)},
		prev:   endedGen{keys: make(map[Key]int64)},
	}
}

// Len returns the number of keys held, including keys past their window that
// Expire has not yet dropped.
//
// A generation holds one time per key, so the lengths of the times are
// those of the maps, read without going through the maps' headers: the
// start events' path asks for every event whether any key is held.
func (e *Ended) Len() int { return len(e.cur.times) + len(e.prev.times) }

// Capacity returns the bound on Len.
func (e *Ended) Capacity() int { return 2 * e.half }

// Contains reports whether k was added less than a window before now
// (nanoseconds since the Unix epoch).
func (e *Ended) Contains(k Key, now int64) bool {
	at, ok := e.cur.keys[k]
	if !ok {
		if at, ok = e.prev.keys[k]; !ok {
			return false
		}
	}
	return addSat(at, e.window) > now
}

// Add remembers k from time at (nanoseconds since the Unix epoch); a time
// earlier than that of the previous Add is taken as that time. A key already
// in the current generation keeps its time. When the current generation is
// full it becomes the previous one and the previous one is dropped; cut is the
// number of dropped keys that were still inside their window. Only the current
// generation is looked at (one map access on the span path), so a key added
// again while the previous generation holds it is held twice, and counted in
// cut when the previous is dropped although the current still holds it; that
// takes a span delivered twice, and errs towards reporting the bound as
// tighter than it is.
func (e *Ended) Add(k Key, at int64) (cut int) {
	if _, ok := e.cur.keys[k]; ok {
		return 0
	}
	at = max(at, e.last)
	e.last = at
	if len(e.cur.keys) >= e.half {
		cut = e.prev.inWindow(at, e.window)
		e.prev.reset()
		e.cur, e.prev = e.prev, e.cur
	}
	e.cur.keys[k] = at
	e.cur.times = append(e.cur.times, at)
	return cut
}

// Expire drops the generations whose keys are all past their window at now;
// the current generation, once its oldest key is past its window, becomes the
// previous one, to be dropped when its newest is. It returns how many keys it
// dropped.
func (e *Ended) Expire(now int64) (forgotten int) {
	if e.prev.expired(now, e.window) {
		forgotten += len(e.prev.keys)
		e.prev.reset()
	}
	if len(e.prev.keys) == 0 && len(e.cur.times) > 0 && addSat(e.cur.times[0], e.window) <= now {
		e.cur, e.prev = e.prev, e.cur
		if e.prev.expired(now, e.window) {
			forgotten += len(e.prev.keys)
			e.prev.reset()
		}
	}
	return forgotten
}

// expired reports whether the generation holds keys and all are past their
// window at now.
func (g *endedGen) expired(now, window int64) bool {
	n := len(g.times)
	return n > 0 && addSat(g.times[n-1], window) <= now
}

// inWindow returns the number of keys of the generation still inside their
// window at now: those added after now − window.
func (g *endedGen) inWindow(now, window int64) int {
	i := sort.Search(len(g.times), func(i int) bool { return addSat(g.times[i], window) > now })
	return len(g.times) - i
}
