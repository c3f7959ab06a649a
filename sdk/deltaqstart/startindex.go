// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// Elision's piece of work: finding, from a span that ends, the place of its
// start event in the queue, if it is still there.

// A slot of the index is one word: the generation it was written in (the
// high 32 bits), a tag of the span id (tagBits) and the event's place in
// the queue (posBits). A slot of another generation than the index's is
// free.
const (
	posBits  = 18 // maxQueueSize places
	tagBits  = 14
	genShift = posBits + tagBits
	posMask  = 1<<posBits - 1
	tagMask  = 1<<tagBits - 1
	// maxProbe bounds the slots an insertion or a lookup reads: an event
	// that finds no free slot among them is not indexed (its span's end
	// does not elide it). With the index half full of random span ids
	// (2048 in 4096 slots, 100 times over), no insertion read more than
	// 32 slots, 1 in 34,000 more than 24; a span id repeated within a drain
	// (an application's faulty generator) costs each insertion and lookup
	// maxProbe reads, not a walk along the whole table.
	maxProbe = 32
)

// A place of the queue must fit in a slot.
var _ [1<<posBits - maxQueueSize]struct{}

// startIndex is an open-addressed hash table (linear probing) from the span
// ids of the queued start events to their places in the queue, with at
// least twice as many slots as the queue has places, so that it is at most
// half full. OnStart adds to it under the processor's lock; OnEnd looks in
// it without the lock, and takes the lock only on a slot whose tag matches,
// to check the event at that place. The drain empties it at once by
// starting a new generation: a slot written in an earlier one is free. No
// slot is freed within a generation, so a lookup may stop at the first free
// slot.
//
// A lookup that races with a drain may read slots of either generation: it
// misses only events the drain has taken, and a place it finds is checked
// against the ids of the event the queue holds there. After 2³² − 1 drains
// the generation comes round again, and a slot last written that many
// drains before, and not since, reads as taken for one generation: a
// lookup checks it in vain, and an insertion passes over it.
type startIndex struct {
	slots []atomic.Uint64
	mask  uint64 // len(slots) − 1
	shift uint   // 64 − log₂ len(slots)
	gen   atomic.Uint32
}

// init makes x the index of a queue of queueSize places.
func (x *startIndex) init(queueSize int) {
	k := bits.Len(uint(2*queueSize - 1)) // 2^k ≥ 2 × queueSize
	x.slots, x.mask, x.shift = make([]atomic.Uint64, 1<<k), 1<<k-1, uint(64-k)
	x.gen.Store(1) // the slots start free: of generation 0
}

// spanKey is the span id as a number, the key of the index.
func spanKey(id trace.SpanID) uint64 { return binary.LittleEndian.Uint64(id[:]) }

// home is the first slot of key's probe sequence: Fibonacci hashing, so
// that span ids that are not random (an application's own generator) still
// spread.
func (x *startIndex) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> x.shift }

// add records that the start event of the span of key is at place pos of
// the queue, in the first free slot of key's probe sequence. The
// processor's lock must be held.
func (x *startIndex) add(key uint64, pos int) {
	g := uint64(x.gen.Load())
	i := x.home(key)
	for range maxProbe {
		s := &x.slots[i&x.mask]
		if s.Load()>>genShift != g {
			s.Store(g<<genShift | (key&tagMask)<<posBits | uint64(pos))
			return
		}
		i++
	}
}

// reset empties the index: a new generation, skipping 0, the generation of
// the slots never written. The processor's lock must be held.
func (x *startIndex) reset() {
	g := x.gen.Load() + 1
	if g == 0 {
		g = 1
	}
	x.gen.Store(g)
}

// lookup returns the walk along key's probe sequence, whose next returns
// the places recorded for span ids of key's tag. It does not take the
// processor's lock, which a caller must take to read the queue at a place
// next returns.
func (x *startIndex) lookup(key uint64) probe {
	return probe{x: x, slot: uint64(x.gen.Load())<<genShift | (key&tagMask)<<posBits, i: x.home(key)}
}

// probe is a lookup's walk: the slot it looks for (its generation and tag,
// with place 0), its next slot and the number of slots it has read.
type probe struct {
	x       *startIndex
	slot, i uint64
	n       int
}

// next returns the place recorded in the next slot whose generation and tag
// are the ones looked for, or false at the end of the probe sequence: a free
// slot, or maxProbe slots read.
func (it *probe) next() (pos int, ok bool) {
	for ; it.n < maxProbe; it.n++ {
		v := it.x.slots[it.i&it.x.mask].Load()
		it.i++
		if v&^posMask == it.slot {
			it.n++
			return int(v & posMask), true
		}
		if v>>genShift != it.slot>>genShift {
			break
		}
	}
	it.n = maxProbe
	return 0, false
}
