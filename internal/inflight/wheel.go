// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"math/bits"
	"time"
)

// wheel is the Table's timer wheel (a hashed wheel, "timing wheels", scheme 6): a
// ring of buckets, each a list of the slots due within one bucket width,
// the instance due at d in bucket d/width modulo the ring's size. Adding
// and removing an instance cost a few stores, whatever the number tracked,
// where a binary heap sifts through log₂ n slots scattered in memory on
// every span that ends its instance. Expire walks the buckets its time
// passed since the last call and compares each instance's own due time, so
// that bucketing changes no result: an instance due a ring's turn or more
// ahead is passed over until its turn comes.
//
// The width is a power of two nanoseconds, at most the caller's timer
// resolution (a time's bucket is a shift, not a division), and the ring
// holds the late window and 10 s more, within [64, 8192] buckets: every
// due time of a probe with dMax up to 10 s is one turn ahead at most.
type wheel struct {
	// heads and tails are the ends of each bucket's list (none: empty).
	heads, tails []int32
	mask         int64
	shift        uint
	// tick is the bucket time (due time >> shift) of the last Expire: the
	// first bucket the next one walks, and the earliest an instance is put
	// in (schedule), so that one due already is found.
	tick int64
}

// defaultBucket is the bucket width of a Table made by New.
const defaultBucket = int64(time.Millisecond)

// newWheel returns an empty wheel for a timer of the given resolution and
// a table of the given late window, both in nanoseconds.
func newWheel(resolution, lateWindow int64) wheel {
	resolution = max(resolution, 1)
	shift := uint(bits.Len64(uint64(resolution)) - 1) // 2^shift ≤ resolution
	span := (min(lateWindow, int64(time.Hour)) + int64(10*time.Second)) >> shift
	n := int64(1) << bits.Len64(uint64(span)) // a power of two above span
	return makeWheel(shift, min(max(n, 64), 8192))
}

// makeWheel returns an empty wheel of n buckets (a power of two) of width
// 2^shift.
func makeWheel(shift uint, n int64) wheel {
	w := wheel{heads: make([]int32, n), tails: make([]int32, n), mask: n - 1, shift: shift}
	for i := range w.heads {
		w.heads[i], w.tails[i] = none, none
	}
	return w
}

// tickOf returns the bucket time of t (nanoseconds since the Unix epoch).
func (w *wheel) tickOf(t int64) int64 { return max(t, 0) >> w.shift }

// width returns the bucket width in nanoseconds.
func (w *wheel) width() int64 { return 1 << w.shift }

// schedule puts slot i at the end of the bucket of its due time, or of
// bucket time floor if that is later.
//
// The slots and the links are read into locals, here and in unschedule
// and unlinkLists, so that a store through one slot does not make the
// compiler load the slice and the other links again.
func (t *Table) schedule(i int32, floor int64) {
	w, slots := &t.wheel, t.slots
	s := &slots[i]
	b := max(max(s.due, 0)>>w.shift, floor) & w.mask // tickOf, spelt out to stay within the inlining budget
	tail := w.tails[b]
	s.bucket, s.wprev, s.wnext = uint16(b), tail, none
	if tail == none {
		w.heads[b] = i
	} else {
		slots[tail].wnext = i
	}
	w.tails[b] = i
}

// unschedule takes slot i out of its bucket.
func (t *Table) unschedule(i int32) {
	w, slots := &t.wheel, t.slots
	s := &slots[i]
	prev, next := s.wprev, s.wnext
	if prev != none {
		slots[prev].wnext = next
	} else {
		w.heads[s.bucket] = next
	}
	if next != none {
		slots[next].wprev = prev
	} else {
		w.tails[s.bucket] = prev
	}
}
