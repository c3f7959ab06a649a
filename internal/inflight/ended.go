// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "sort"

// Ended remembers the keys of spans that ended, whether they ended a
// tracked instance or not, so that a start event arriving after its span
// (the traces and logs pipelines run independently, an SDK may send the
// start event and the span together, and a retried request delivers a
// start event again after its span) is recognised and not tracked as a new
// instance, which would time out and count the instance a second time.
// It remembers too, with their probes, the timed-out instances the table
// forgets while their span may still come (AddLate), so that the span is
// late and not a second outcome.
//
// A key is recognised for a window after it was added. Memory is bounded by
// capacity, and kept cheap on the span path, with two generations: keys are
// added to the current one; when it holds capacity/2 keys it becomes the
// previous one, and the previous one is dropped whole. Add reports how many
// of the dropped keys were still inside their window (cut by the bound, not
// by time). Expire drops a generation once all of its keys are past their
// window, so a key is held at most about two windows, and a set that nothing
// is added to is empty once its newest key is past its window. Adding a key
// costs one look-up and one insertion, never a deletion (the span path's share of the
// work): the generations are cleared and reused, and no operation allocates once
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
	// when callers race (Add), but for a clock gone back: then its time.
	last int64
}

// endedGen is one generation of keys with the times they were added. Its
// keys are filed as the table files its instances' (keyIndex, keyindex.go):
// by the tag of their digest in index.short, which holds the key's
// position in keys and times, its whole key compared there; a key whose
// tag another key of the generation holds already goes to index.long. The
// span path adds a key for every span it looks up, most of which end no
// instance where an SDK leaves out the start events of the spans that end
// before it sends them: a Go map keyed by the 24-byte Key hashed all of
// it, looked it up and inserted it in two probes, and could not be read
// ahead (warm), so that a loaded collector missed the cache on it once a
// span, in turn.
type endedGen struct {
	index keyIndex
	keys  []Key
	// times holds the times of keys in the order they were added (so
	// non-decreasing): the first and last are the generation's span of time,
	// and a binary search counts the keys still inside their window.
	times []int64
	// late maps those of keys that are the keys of timed-out instances
	// the table forgot (AddLate) to their probes; nil until the first.
	// Each is in keys too, so the generation's bound bounds it.
	late map[Key]int
}

func newEndedGen() endedGen { return endedGen{index: newKeyIndex()} }

// find returns the position of k, whose digest is dig, in g's keys, if g
// holds it, and, when it does not, where put records it (keyHit.pos).
// Unlike the table's index, a generation never forgets one key, only all
// of them (reset): a key whose tag index.short does not hold is not in
// index.long either.
func (g *endedGen) find(k *Key, dig uint64) (at int32, h keyHit, found bool) {
	pos, i, taken := g.index.short.lookup(dig)
	if !taken {
		return 0, keyHit{pos: pos, digest: dig}, false
	}
	if g.keys[i] == *k {
		return i, keyHit{}, true
	}
	if j, ok := g.index.long[*k]; ok {
		return j, keyHit{}, true
	}
	return 0, keyHit{pos: noPos, digest: dig}, false // k's tag is another key's: k goes to long
}

// put appends k, which find did not find (h) with no change to g since,
// added at time at.
func (g *endedGen) put(k *Key, h keyHit, at int64) {
	g.index.put(k, int32(len(g.keys)), h)
	g.keys = append(g.keys, *k)
	g.times = append(g.times, at)
}

// time returns the time k was added to g, if g holds it.
func (g *endedGen) time(k *Key, dig uint64) (int64, bool) {
	i, _, ok := g.find(k, dig)
	if !ok {
		return 0, false
	}
	return g.times[i], true
}

// len returns the number of keys g holds.
func (g *endedGen) len() int { return len(g.times) }

// reset empties g, keeping its storage.
func (g *endedGen) reset() {
	g.index.short.clear()
	clear(g.index.long)
	g.keys = g.keys[:0]
	g.times = g.times[:0]
	clear(g.late)
}

// NewEnded returns an empty set that remembers at most capacity keys
// (capacity is rounded down to an even number, at least 2), each for window
// nanoseconds after it was added (at least zero).
func NewEnded(capacity int, window int64) *Ended {
	half := max(capacity/2, 1)
	return &Ended{
		half:   half,
		window: max(window, 0),
		cur:    newEndedGen(),
		prev:   newEndedGen(),
	}
}

// Len returns the number of keys held, including keys past their window that
// Expire has not yet dropped.
//
// The start events' path asks for every event whether any key is held.
func (e *Ended) Len() int { return e.cur.len() + e.prev.len() }

// Capacity returns the bound on Len.
func (e *Ended) Capacity() int { return 2 * e.half }

// Contains reports whether k was added less than a window before now
// (nanoseconds since the Unix epoch).
func (e *Ended) Contains(k Key, now int64) bool {
	dig := digest(&k)
	at, ok := e.cur.time(&k, dig)
	if !ok {
		if at, ok = e.prev.time(&k, dig); !ok {
			return false
		}
	}
	return addSat(at, e.window) > now
}

// Add remembers k from time at (nanoseconds since the Unix epoch); a time
// earlier than that of the previous Add is taken as that time (callers
// racing), but one earlier by more than a window is the clock gone back: the
// current generation, of times ahead of the clock, becomes the previous one,
// and k starts a generation at the clock's time. Taken as the times ahead,
// every span added until the clock was back there was held, and counted in
// cut, as inside its window (ended_evictions) however long ago it came. A
// key already in the current generation keeps its time. When the current
// generation is full it becomes the previous one and the previous one is
// dropped; cut is the number of dropped keys that were still inside their
// window. Only the current generation is looked at (one look-up on the
// span path), so a key added again while the previous generation holds it
// is held twice, and counted in cut when the previous is dropped although
// the current still holds it; that takes a span delivered twice, and errs
// towards reporting the bound as tighter than it is.
func (e *Ended) Add(k Key, at int64) (cut int) {
	dig := digest(&k)
	_, h, found := e.cur.find(&k, dig)
	if found {
		return 0
	}
	back := at < e.last && e.last-at > e.window
	if !back {
		at = max(at, e.last)
	}
	e.last = at
	if e.cur.len() >= e.half || back && e.cur.len() > 0 {
		cut = e.prev.inWindow(at, e.window)
		e.prev.reset()
		e.cur, e.prev = e.prev, e.cur
		_, h, _ = e.cur.find(&k, dig) // in the emptied generation
	}
	e.cur.put(&k, h, at)
	return cut
}

// AddLate remembers k as Add does, as the key of a timed-out instance of
// probe that the table forgets while its span may still come: max_in_flight
// evicted it, or its late window passed before ended_window. Its span, if it
// comes while the generation that holds k is kept, is late (Late), not a
// second outcome, and its start event delivered again is after its end.
func (e *Ended) AddLate(k Key, at int64, probe int) (cut int) {
	cut = e.Add(k, at) // k is in the current generation now
	if e.cur.late == nil {
		e.cur.late = make(map[Key]int)
	}
	e.cur.late[k] = probe
	return cut
}

// Late returns the probe of the timed-out instance that k was remembered
// as (AddLate), when a generation holds it so.
func (e *Ended) Late(k *Key) (probe int, ok bool) {
	if probe, ok = e.cur.late[*k]; !ok {
		probe, ok = e.prev.late[*k]
	}
	return probe, ok
}

// AnyLate reports whether any key is remembered as a timed-out instance's:
// the span path looks a key up in Late only then.
func (e *Ended) AnyLate() bool { return len(e.cur.late)+len(e.prev.late) > 0 }

// keepLate renumbers the probes of the timed-out instances remembered by
// keep, a reload's (Tracker.MoveTo): one whose probe keep refuses is
// remembered as an ended span alone, whose span is counted.
func (e *Ended) keepLate(keep func(*Instance) bool) {
	for _, g := range [...]*endedGen{&e.cur, &e.prev} {
		for k, p := range g.late {
			in := Instance{Key: k, Probe: p}
			if keep(&in) {
				g.late[k] = in.Probe
			} else {
				delete(g.late, k)
			}
		}
	}
}

// MoveTo adds the spans e remembers to dst, one made with another
// capacity or window (a configuration reload), oldest first, each at the
// time it was added: dst keeps the newest it holds, for its own window.
// e is left empty. It returns the spans dst forgot while still inside its
// window (Add's cut).
func (e *Ended) MoveTo(dst *Ended) (cut int) {
	for _, g := range []*endedGen{&e.prev, &e.cur} {
		for i := range g.keys {
			if p, late := g.late[g.keys[i]]; late {
				cut += dst.AddLate(g.keys[i], g.times[i], p)
			} else {
				cut += dst.Add(g.keys[i], g.times[i])
			}
		}
		g.reset()
	}
	return cut
}

// warmTag reads the position of the current generation's index, and with
// both the previous one's, at which the look-up of a key of tag tg will
// start, and returns what it read (Table.warm, which reads ahead for the
// span path and the start events alike): the spans are each added here
// (Add looks in the current generation), the start events each looked up
// (Contains looks in both), and a set too large for the cache missed it
// once a key, in turn.
func (e *Ended) warmTag(tg uint32, both bool) uint32 {
	cur := &e.cur.index.short
	acc := uint32(cur.pos[cur.home(tg)].slot)
	if both {
		prev := &e.prev.index.short
		acc += uint32(prev.pos[prev.home(tg)].slot)
	}
	return acc
}

// Expire drops the generations whose keys are all past their window at now;
// the current generation, once its oldest key is past its window, becomes the
// previous one, to be dropped when its newest is. It returns how many keys it
// dropped.
func (e *Ended) Expire(now int64) (forgotten int) {
	if e.prev.expired(now, e.window) {
		forgotten += e.prev.len()
		e.prev.reset()
	}
	if e.prev.len() == 0 && len(e.cur.times) > 0 && addSat(e.cur.times[0], e.window) <= now {
		e.cur, e.prev = e.prev, e.cur
		if e.prev.expired(now, e.window) {
			forgotten += e.prev.len()
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
