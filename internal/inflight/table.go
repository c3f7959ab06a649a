// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package inflight tracks the outcome instances that have started and not
// yet ended: a table of bounded size keyed by trace and span id, one binary
// min-heap of due times shared by all instances, and an insertion-order list
// that says which instance to evict when the table is full.
//
// An instance announced by a start event is Started until its span arrives.
// If the span has not arrived by its due time (start + dMax, or later by a
// grace that allows for the span's transit to the collector) the instance
// times out (thesis, section 3.2: an input with no output after dMax is a
// failure): Expire hands it back to the caller, which reports the timeout,
// and the table keeps it as TimedOut for a further late window so that a span
// arriving after the timeout is recognised as late and not counted a second
// time. After the late window the instance is forgotten.
//
// Ended, beside the table, remembers the spans that ended with no instance
// tracked, for the start events that arrive after their span.
//
// The table holds no collector types and is not safe for concurrent use; the
// processor guards it with a mutex. No operation allocates once the table has
// grown to its working size: slots are reused through a free list.
package inflight

import "math"

// Key identifies an instance by the trace and span id of its span.
type Key struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// State is the state of a tracked instance.
type State uint8

const (
	// Started: the start event was seen and the span has not arrived; the
	// instance is due at its due time (Instance.Due).
	Started State = iota
	// TimedOut: the due time passed and the timeout was reported; the
	// instance is due (forgotten) at due time + late window.
	TimedOut
)

// String returns "started" or "timed_out".
func (s State) String() string {
	if s == TimedOut {
		return "timed_out"
	}
	return "started"
}

// Instance is what the table remembers about one started instance.
type Instance struct {
	Key Key
	// Probe is the caller's index of the probe the instance belongs to.
	Probe int
	// Start is the start time in nanoseconds since the Unix epoch.
	Start int64
	// Deadline is Start + dMax, in nanoseconds since the Unix epoch.
	Deadline int64
	// Due is when the instance times out if its span has not arrived:
	// Deadline plus a grace for the span's transit. A Due before Deadline
	// (such as zero) means Deadline.
	Due int64
	// Service is the service.name of the process that started the instance.
	Service string
	// Name is the name a synthetic timeout span for the instance takes.
	Name string
	// Threshold is the sampling threshold (ot=th) of the span, from its
	// start event, that its synthetic timeout span carries so that the
	// timeout counts with the span's adjusted count; 0 when none.
	Threshold uint64
}

// Eviction describes the instance Add evicted to make room, if any.
type Eviction struct {
	// Evicted is true when an instance was evicted.
	Evicted bool
	// State is the state the evicted instance was in.
	State State
	// Instance is the evicted instance.
	Instance Instance
}

const none = -1

type slot struct {
	inst  Instance
	due   int64
	state State
	// heap is the slot's position in Table.heap.
	heap int32
	// prev and next link the slots in insertion order (none at the ends).
	prev, next int32
	// long says that the index holds the key by the whole Key (keyIndex).
	long bool
}

// Table is a bounded set of tracked instances. The zero value is not usable;
// call New.
type Table struct {
	capacity   int
	lateWindow int64

	slots []slot
	free  []int32
	index keyIndex
	// heap holds slot indices ordered by slots[i].due (a binary min-heap).
	heap []int32
	// oldest and newest are the ends of the insertion-order list.
	oldest, newest int32

	started, timedOut int
}

// New returns an empty table that holds at most capacity instances (at least
// one) and keeps timed-out instances for lateWindow nanoseconds after their
// due time (at least zero).
func New(capacity int, lateWindow int64) *Table {
	capacity = max(capacity, 1)
	return &Table{
		capacity:   capacity,
		lateWindow: max(lateWindow, 0),
		index:      newKeyIndex(),
		oldest:     none,
		newest:     none,
	}
}

// Len returns the number of tracked instances in either state.
func (t *Table) Len() int { return t.index.len() }

// Counts returns the number of Started and of TimedOut instances.
func (t *Table) Counts() (started, timedOut int) { return t.started, t.timedOut }

// Capacity returns the bound on Len.
func (t *Table) Capacity() int { return t.capacity }

// Add starts tracking inst, due at inst.Due (at inst.Deadline if that is
// later). It returns false, leaving the table unchanged, when an instance
// with the same key is already tracked (in either state). When the table is
// full the oldest tracked instance, in insertion order, is evicted first and
// described in the returned Eviction.
func (t *Table) Add(inst *Instance) (added bool, ev Eviction) {
	_, dup, short := t.index.find(&inst.Key, t.slots)
	if dup {
		return false, Eviction{}
	}
	if t.index.len() >= t.capacity {
		old := t.oldest
		ev = Eviction{Evicted: true, State: t.slots[old].state, Instance: t.slots[old].inst}
		t.remove(old)
	}
	i := t.alloc()
	s := &t.slots[i]
	*s = slot{inst: *inst, due: max(inst.Due, inst.Deadline), state: Started, prev: t.newest, next: none}
	s.inst.Due = s.due
	if t.newest != none {
		t.slots[t.newest].next = i
	} else {
		t.oldest = i
	}
	t.newest = i
	s.long = t.index.put(&inst.Key, i, short)
	t.started++
	s.heap = int32(len(t.heap))
	t.heap = append(t.heap, i)
	t.up(int(s.heap))
	return true, ev
}

// End stops tracking the instance with key k, whose span has arrived, and
// returns it with the state it was in. ok is false when k is not tracked.
func (t *Table) End(k Key) (inst Instance, state State, ok bool) {
	i, ok := t.index.get(&k, t.slots)
	if !ok {
		return Instance{}, Started, false
	}
	inst, state = t.slots[i].inst, t.slots[i].state
	t.remove(i)
	return inst, state, true
}

// end is End for a caller that needs only the instance's probe: nothing
// of the instance is copied out.
func (t *Table) end(k Key) (probe int, state State, ok bool) {
	i, ok := t.index.get(&k, t.slots)
	if !ok {
		return 0, Started, false
	}
	probe, state = t.slots[i].inst.Probe, t.slots[i].state
	t.remove(i)
	return probe, state, true
}

// Expire processes every instance due at or before now (nanoseconds since
// the Unix epoch). Started instances whose due time has passed become
// TimedOut, due again at due time + late window, and are appended to dst;
// TimedOut instances whose late window has passed are forgotten. It returns
// the extended dst and the number of instances forgotten.
func (t *Table) Expire(now int64, dst []Instance) (timedOut []Instance, forgotten int) {
	for len(t.heap) > 0 {
		i := t.heap[0]
		s := &t.slots[i]
		if s.due > now {
			break
		}
		if s.state == TimedOut {
			t.remove(i)
			forgotten++
			continue
		}
		dst = append(dst, s.inst)
		s.state = TimedOut
		t.started--
		t.timedOut++
		s.due = addSat(s.inst.Due, t.lateWindow)
		t.down(0)
	}
	return dst, forgotten
}

// NextDue returns the earliest due time of the tracked instances, and false
// when the table is empty.
func (t *Table) NextDue() (int64, bool) {
	if len(t.heap) == 0 {
		return 0, false
	}
	return t.slots[t.heap[0]].due, true
}

// alloc returns a free slot index.
func (t *Table) alloc() int32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		return i
	}
	t.slots = append(t.slots, slot{})
	return int32(len(t.slots) - 1)
}

// remove unlinks slot i from the index, the heap and the insertion list and
// puts it on the free list.
func (t *Table) remove(i int32) {
	s := &t.slots[i]
	t.index.del(&s.inst.Key, s.long)
	if s.state == TimedOut {
		t.timedOut--
	} else {
		t.started--
	}

	// Heap: move the last element into the hole and restore the order.
	h := int(s.heap)
	last := len(t.heap) - 1
	if h != last {
		t.swap(h, last)
	}
	t.heap = t.heap[:last]
	if h != last {
		if !t.up(h) {
			t.down(h)
		}
	}

	// Insertion-order list.
	if s.prev != none {
		t.slots[s.prev].next = s.next
	} else {
		t.oldest = s.next
	}
	if s.next != none {
		t.slots[s.next].prev = s.prev
	} else {
		t.newest = s.prev
	}

	s.inst.Service, s.inst.Name = "", "" // so that the strings can be collected
	t.free = append(t.free, i)
}

func (t *Table) less(a, b int) bool {
	return t.slots[t.heap[a]].due < t.slots[t.heap[b]].due
}

func (t *Table) swap(a, b int) {
	t.heap[a], t.heap[b] = t.heap[b], t.heap[a]
	t.slots[t.heap[a]].heap = int32(a)
	t.slots[t.heap[b]].heap = int32(b)
}

// up moves heap element j towards the root; it reports whether it moved.
func (t *Table) up(j int) bool {
	moved := false
	for j > 0 {
		parent := (j - 1) / 2
		if !t.less(j, parent) {
			break
		}
		t.swap(j, parent)
		j = parent
		moved = true
	}
	return moved
}

// down moves heap element j towards the leaves.
func (t *Table) down(j int) {
	n := len(t.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && t.less(r, l) {
			c = r
		}
		if !t.less(c, j) {
			return
		}
		t.swap(j, c)
		j = c
	}
}

// addSat returns a + b for b ≥ 0, saturating at the largest int64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// MoveTo moves every instance into dst, oldest first, keeping its state and
// due time, except those for which keep returns false; keep may change the
// instance (its Probe index, say) before it moves. t is left empty. It
// returns the number of instances moved and dropped; instances dst has to
// evict to stay within its capacity count as dropped.
func (t *Table) MoveTo(dst *Table, keep func(*Instance) bool) (moved, dropped int) {
	for i := t.oldest; i != none; i = t.slots[i].next {
		s := t.slots[i]
		if !keep(&s.inst) {
			dropped++
			continue
		}
		added, ev := dst.Add(&s.inst)
		if !added {
			dropped++
			continue
		}
		if ev.Evicted {
			moved--
			dropped++
		}
		moved++
		j, _ := dst.index.get(&s.inst.Key, dst.slots)
		d := &dst.slots[j]
		if s.state == TimedOut {
			d.state = TimedOut
			dst.started--
			dst.timedOut++
		}
		d.due = s.due
		if !dst.up(int(d.heap)) {
			dst.down(int(d.heap))
		}
	}
	*t = *New(t.capacity, t.lateWindow)
	return moved, dropped
}
