// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package inflight tracks the outcome instances that have started and not
// yet ended: a table of bounded size keyed by trace and span id, one timer
// wheel of due times shared by all instances (wheel.go), and an
// insertion-order list that says which instance to evict when the table is
// full. The instances added last wait in a ring before they join the wheel
// and the list (young.go): most end before then, and leave neither.
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
// Ended, beside the table, remembers the spans that ended, for the start
// events that arrive after their span, and the timed-out instances that the
// table forgets before their span may come (evicted, or past a late window
// shorter than ended_window), for their late spans.
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
	// Cut is the number of remembered spans forgotten, still inside
	// ended_window, to remember a timed-out instance evicted
	// (Tracker's Track; EndResult.Cut).
	Cut int
}

const none = -1

type slot struct {
	// The fields an end reads and writes come first, within the slot's
	// first 64 bytes with the instance's key and probe: a span's end
	// touches one cache line of its slot, and, when the slot is linked
	// into the wheel and the insertion-order list, one of each
	// neighbour's.
	due int64
	// gen counts the slot's uses (unlink increments it), so that a ref
	// to an instance that has ended is known to be stale.
	gen uint32
	// bucket is the slot's bucket of the wheel, or noBucket while the
	// instance is in neither the wheel nor the insertion-order list but
	// in the young ring. 16 bits hold the wheel's 8192 buckets, and keep
	// the slot's header in 32 bytes.
	bucket uint16
	state  State
	// named says that the instance has a Service or a Name, which unlink
	// clears.
	named bool
	// wprev and wnext link the slots of a bucket (none at the ends).
	wprev, wnext int32
	// prev and next link the slots in insertion order (none at the ends).
	prev, next int32
	inst       Instance
}

// Table is a bounded set of tracked instances. The zero value is not usable;
// call New.
type Table struct {
	capacity   int
	lateWindow int64

	slots []slot
	free  []int32
	index keyIndex
	wheel wheel
	// oldest and newest are the ends of the insertion-order list; the
	// instances of young are newer than all of it.
	oldest, newest int32
	young          young
	// maxYoung bounds the length of young's ring.
	maxYoung int

	started, timedOut int
	// warmed keeps what warm read, so that its loads are not dropped as
	// unused.
	warmed uint32
}

// New returns an empty table that holds at most capacity instances (at least
// one) and keeps timed-out instances for lateWindow nanoseconds after their
// due time (at least zero). Its wheel's buckets are about a millisecond wide
// (newTable).
func New(capacity int, lateWindow int64) *Table {
	return newTable(capacity, lateWindow, defaultBucket)
}

// newTable is New with the wheel's buckets at most resolution wide, the
// timer resolution of the caller's Expire: a finer bucket would only be
// walked more often.
func newTable(capacity int, lateWindow, resolution int64) *Table {
	capacity = max(capacity, 1)
	lateWindow = max(lateWindow, 0)
	return &Table{
		capacity:   capacity,
		lateWindow: lateWindow,
		index:      newKeyIndex(),
		wheel:      newWheel(resolution, lateWindow),
		oldest:     none,
		newest:     none,
		young:      young{minDue: math.MaxInt64},
		maxYoung:   youngBound(capacity),
	}
}

// Len returns the number of tracked instances in either state.
func (t *Table) Len() int { return t.index.len() }

// warm reads what the look-ups of keys (add, end) will read: each key's
// position in the index and, when that holds a slot, the slot's first
// cache line, which holds its key and all an end writes. The look-ups of a
// loaded collector miss the cache (the table's lines go cold between an
// instance's start and its span, while the receiver decodes megabytes),
// and the span path, one span at a time, waits for each miss in turn; the
// reads here depend on nothing but their key, so that the processor has
// those of many keys in flight at once, and the look-ups that follow find
// their lines in the cache. With e not nil it reads, from the same digest,
// where the keys' look-ups among the spans remembered as ended will start
// too (Ended.warmTag; both: in both generations).
func (t *Table) warm(keys []Key, e *Ended, both bool) {
	d := &t.index.short
	pos, slots := d.pos, t.slots
	var acc uint32
	for i := range keys {
		tg := tag(digest(&keys[i]))
		p := pos[d.home(tg)]
		if j := int(p.slot) - 1; j >= 0 && j < len(slots) {
			acc += slots[j].gen
		}
		if e != nil {
			acc += e.warmTag(tg, both)
		}
	}
	t.warmed += acc
}

// warmFree reads both cache lines of each of the next n slots that adds
// will take from the free list (alloc takes its last first), which an add
// writes and reads (its key and generation in the first, its times in the
// second): in a loaded collector they were freed by the spans of an
// earlier request and have gone cold since, and a batch of start events
// waited for each in turn, the stores of one instance's times filling the
// processor's store buffer while the next instance's were built.
func (t *Table) warmFree(n int) {
	free, slots := t.free, t.slots
	var acc uint32
	for k := len(free) - 1; k >= max(len(free)-n, 0); k-- {
		if j := int(free[k]); j < len(slots) {
			acc += slots[j].gen + uint32(slots[j].inst.Start)
		}
	}
	t.warmed += acc
}

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
	added = t.add(inst, &ev)
	return added, ev
}

// add is Add, which describes an eviction in *ev and leaves it alone
// otherwise: the span path adds an instance a start event, and an Eviction
// returned each time, an Instance in it, would be copied each time.
func (t *Table) add(inst *Instance, ev *Eviction) bool {
	h := t.index.find(&inst.Key, t.slots)
	if h.found {
		return false
	}
	if t.started+t.timedOut >= t.capacity { // the index's length, in two loads
		old := t.oldestSlot()
		*ev = Eviction{Evicted: true, State: t.slots[old].state, Instance: t.slots[old].inst}
		t.remove(old)
		h = t.index.find(&inst.Key, t.slots) // the removal may have moved keys
	}
	i := t.alloc()
	slots := t.slots // after alloc, which may grow it
	s := &slots[i]
	// Field by field, and the strings only when set: the whole Instance
	// copied at once goes through the garbage collector's bulk write
	// barrier while it marks, and a free slot's strings are empty already
	// (unlink).
	s.inst.Key, s.inst.Probe = inst.Key, inst.Probe
	s.inst.Start, s.inst.Deadline, s.inst.Threshold = inst.Start, inst.Deadline, inst.Threshold
	s.due = max(inst.Due, inst.Deadline)
	s.inst.Due = s.due
	s.state = Started
	s.named = inst.Service != "" || inst.Name != ""
	if s.named {
		s.inst.Service, s.inst.Name = inst.Service, inst.Name
	}
	s.bucket = noBucket
	t.index.put(&inst.Key, i, h)
	t.started++
	// The instance joins the young ring (young.go), written out here
	// rather than called: the span path adds an instance a start event.
	y := &t.young
	if y.n == len(y.refs) {
		t.makeRoom()
	}
	y.refs[(y.head+y.n)&(len(y.refs)-1)] = ref{slot: i, gen: s.gen}
	y.n++
	if s.due < y.minDue {
		y.minDue = s.due
	}
	return true
}

// End stops tracking the instance with key k, whose span has arrived, and
// returns it with the state it was in. ok is false when k is not tracked.
func (t *Table) End(k Key) (inst Instance, state State, ok bool) {
	h := t.index.find(&k, t.slots)
	if !h.found {
		return Instance{}, Started, false
	}
	inst, state = t.slots[h.slot].inst, t.slots[h.slot].state
	t.index.delHit(&k, h)
	t.unlink(h.slot)
	return inst, state, true
}

// end is End for a caller that needs only the instance's probe: nothing
// of the instance is copied out, and the key's look-up serves its removal.
func (t *Table) end(k *Key) (probe int, state State, ok bool) {
	h := t.index.find(k, t.slots)
	if !h.found {
		return 0, Started, false
	}
	s := &t.slots[h.slot]
	probe, state = s.inst.Probe, s.state
	t.index.delHit(k, h)
	t.unlink(h.slot)
	return probe, state, true
}

// Expire processes every instance due at or before now (nanoseconds since
// the Unix epoch). Started instances whose due time has passed become
// TimedOut, due again at due time + late window, and are appended to dst;
// TimedOut instances whose late window has passed are forgotten. It returns
// the extended dst and the number of instances forgotten. It walks the
// wheel's buckets from the previous call's time to now (all of them, once,
// after a longer pause), and looks at no other instance.
func (t *Table) Expire(now int64, dst []Instance) (timedOut []Instance, forgotten int) {
	dst, forgotten, _ = t.expire(now, dst, nil)
	return dst, forgotten
}

// expire is Expire that remembers in ended, when not nil, the instances it
// forgets as timed out at now (Ended.AddLate), and returns the remembered
// spans that cut.
func (t *Table) expire(now int64, dst []Instance, ended *Ended) (timedOut []Instance, forgotten, cut int) {
	if t.young.minDue <= now {
		// One of the young may be due: all join the wheel, in the
		// buckets Add would have put them in.
		t.link(t.young.n)
	}
	w := &t.wheel
	to := w.tickOf(now)
	from := w.tick
	if to < from {
		// The clock went back: only the bucket of the last call's time
		// can hold an instance due by now (schedule).
		to = from
	}
	if n := int64(len(w.heads)); to-from >= n {
		from = to - n + 1
	}
	for tk := from; tk <= to; tk++ {
		for i := w.heads[tk&w.mask]; i != none; {
			s := &t.slots[i]
			next := s.wnext
			if s.due <= now {
				if s.state == Started {
					dst = append(dst, s.inst)
					s.state = TimedOut
					t.started--
					t.timedOut++
					s.due = addSat(s.inst.Due, t.lateWindow)
				}
				if s.due <= now { // timed out, and its late window passed
					if ended != nil {
						cut += ended.AddLate(s.inst.Key, now, s.inst.Probe)
					}
					t.remove(i)
					forgotten++
				} else {
					// Due again later: in a later bucket, or at this one's
					// end, where this walk skips it.
					t.unschedule(i)
					t.schedule(i, tk)
				}
			}
			i = next
		}
	}
	w.tick = max(w.tick, to)
	return dst, forgotten, cut
}

// NextDue returns the earliest due time of the tracked instances, and false
// when the table is empty. It looks at every instance.
func (t *Table) NextDue() (int64, bool) {
	if t.Len() == 0 {
		return 0, false
	}
	due := int64(math.MaxInt64)
	for i := t.oldest; i != none; i = t.slots[i].next {
		due = min(due, t.slots[i].due)
	}
	y := &t.young
	for k := range y.n {
		r := y.refs[(y.head+k)&(len(y.refs)-1)]
		if s := &t.slots[r.slot]; s.gen == r.gen {
			due = min(due, s.due)
		}
	}
	return due, true
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

// remove unlinks slot i from the index, the wheel and the insertion list and
// puts it on the free list.
func (t *Table) remove(i int32) {
	t.index.del(&t.slots[i].inst.Key)
	t.unlink(i)
}

// unlink is remove for a slot the index no longer holds. A young slot is
// in neither list: its ref in the young ring goes stale with its
// generation.
func (t *Table) unlink(i int32) {
	s := &t.slots[i]
	if s.state == TimedOut {
		t.timedOut--
	} else {
		t.started--
	}
	if s.bucket != noBucket {
		t.unlinkLists(i)
	}
	s.gen++
	if s.named {
		s.inst.Service, s.inst.Name = "", "" // so that the strings can be collected
	}
	t.free = append(t.free, i)
}

// unlinkLists takes slot i out of the wheel and the insertion-order list.
func (t *Table) unlinkLists(i int32) {
	t.unschedule(i)
	slots := t.slots
	s := &slots[i]
	prev, next := s.prev, s.next
	if prev != none {
		slots[prev].next = next
	} else {
		t.oldest = next
	}
	if next != none {
		slots[next].prev = prev
	} else {
		t.newest = prev
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
// instance (its Probe index, say) before it moves, and may hold a started
// instance longer by raising its Due (never shorten it). t is left empty. It
// returns the number of instances moved and dropped (refused by keep); an
// instance dst has to evict to stay within its capacity is neither, and is
// handed to evicted, as Add describes it.
func (t *Table) MoveTo(dst *Table, keep func(*Instance) bool, evicted func(*Eviction)) (moved, dropped int) {
	t.link(t.young.n) // every instance in the insertion-order list
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
			evicted(&ev)
		}
		moved++
		// The instance just added is young in dst: its state and due
		// time are set before it joins the wheel.
		j, _ := dst.index.get(&s.inst.Key, dst.slots)
		d := &dst.slots[j]
		d.due = s.due
		if s.state == TimedOut {
			d.state = TimedOut
			dst.started--
			dst.timedOut++
		} else {
			d.due = max(s.due, s.inst.Due) // keep may hold it longer
		}
		dst.young.minDue = min(dst.young.minDue, d.due)
	}
	*t = *newTable(t.capacity, t.lateWindow, t.wheel.width())
	return moved, dropped
}
