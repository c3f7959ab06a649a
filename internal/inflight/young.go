// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "math"

// young holds the instances added last, in the order they were added,
// before they join the wheel and the insertion-order list (link): a ring
// of refs to their slots. Most instances end before they are due (a
// timeout is the exception), and one that ends while young leaves a stale
// ref behind, where one in the lists unlinks itself from four neighbours
// and its bucket: adding and ending a young instance writes its own slot
// and one ref. One that is linked pays for its ref besides, a few
// instructions. The instances of the ring are newer than those of the
// list, so the oldest instance is the list's first, or the ring's first
// live one when the list is empty.
//
// The young join the lists when one of them may be due (Expire, by
// minDue), and the oldest half when the ring is full; the ring doubles,
// up to maxYoung refs, when more than half of those were still tracked,
// so that it grows only while instances outlive it. A young instance is
// put in the wheel's bucket for its due time or, if that is earlier, for
// the last Expire's time, as Add would have put it.
type young struct {
	refs []ref // a power of two in length, or empty
	// head is the position of the oldest ref, n the number of refs.
	head, n int
	// minDue is at most the earliest due time of the instances of the
	// ring; math.MaxInt64 when the ring is empty.
	minDue int64
}

// ref is a reference to the instance a slot held when the reference was
// made: stale once the slot's generation has moved on. A ref is dropped
// (link) after at most maxYoung refs more have been pushed, far fewer
// than the 2³² uses of one slot that would make its generation come round.
type ref struct {
	slot int32
	gen  uint32
}

// minYoung is the ring's length when first used.
const minYoung = 64

// noBucket is the bucket of a young slot.
const noBucket = math.MaxUint16

// youngBound returns the bound on the ring's length for a table of the
// given capacity: the power of two at or above it, at least minYoung,
// so that the ring holds at most two refs, 16 bytes, per instance the
// table can hold.
func youngBound(capacity int) int {
	n := minYoung
	for n < capacity {
		n *= 2
	}
	return n
}

// makeRoom makes room in the full ring, before Add appends to it: the
// oldest half joins the lists, and the ring doubles, within maxYoung, if
// more than half of those were still tracked.
func (t *Table) makeRoom() {
	y := &t.young
	if len(y.refs) == 0 {
		y.refs = make([]ref, minYoung)
		return
	}
	half := y.n / 2
	if live := t.link(half); 2*live <= half || len(y.refs) >= t.maxYoung {
		return
	}
	refs := make([]ref, 2*len(y.refs))
	mask := len(y.refs) - 1
	for k := range y.n {
		refs[k] = y.refs[(y.head+k)&mask]
	}
	y.refs, y.head = refs, 0
}

// link moves the k oldest refs of the ring out of it: each instance still
// tracked joins the end of the insertion-order list and its bucket of the
// wheel. It returns the number of those.
func (t *Table) link(k int) (live int) {
	y := &t.young
	size := len(y.refs)
	end := y.head + k
	// The refs up to the ring's end, then those from its start.
	live = t.linkRefs(y.refs[y.head:min(end, size)]) + t.linkRefs(y.refs[:max(end-size, 0)])
	y.head, y.n = end&(size-1), y.n-k
	if y.n == 0 {
		y.minDue = math.MaxInt64
	}
	return live
}

// linkRefs is link for the refs of a stretch of the ring. The slots are
// read into a local: the stores of appendOrder and schedule would make
// the compiler load them again for every ref, and most refs are stale,
// passed over in a few instructions.
func (t *Table) linkRefs(refs []ref) (live int) {
	slots := t.slots
	for _, r := range refs {
		if slots[r.slot].gen != r.gen {
			continue
		}
		t.appendOrder(r.slot)
		t.schedule(r.slot, t.wheel.tick)
		live++
	}
	return live
}

// appendOrder puts slot i at the end of the insertion-order list.
func (t *Table) appendOrder(i int32) {
	slots := t.slots
	newest := t.newest
	slots[i].prev, slots[i].next = newest, none
	if newest != none {
		slots[newest].next = i
	} else {
		t.oldest = i
	}
	t.newest = i
}

// oldestSlot returns the slot of the oldest tracked instance, of which
// there is at least one: the list's first, or the ring's first live one,
// the stale refs before which it drops.
func (t *Table) oldestSlot() int32 {
	if t.oldest != none {
		return t.oldest
	}
	y := &t.young
	for {
		r := y.refs[y.head]
		if t.slots[r.slot].gen == r.gen {
			return r.slot
		}
		y.head = (y.head + 1) & (len(y.refs) - 1)
		y.n--
	}
}
