// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "math/rand/v2"

// digests maps distinct 64-bit digests to slots: an open-addressing table
// with linear probing and backward-shift deletion, so that the churn of
// the span path (an insert a start event, a deletion a span) leaves no
// tombstones behind, and a look-up touches one or two cache lines. A
// digest's home position is a multiply-shift hash under two random
// seeds drawn for each table: the ids are the senders', and a sender who
// does not know the seeds cannot aim many digests at one position. Equal
// digests never enter (keyIndex keeps their keys in a map of whole keys).
type digests struct {
	keys  []uint64
	slots []int32 // the slot + 1; 0 is an empty position
	mask  uint64
	shift uint
	xor   uint64
	mul   uint64 // odd
	n     int
}

// minDigests is the size of a new table; it doubles past half full.
const minDigests = 64

func newDigests() digests {
	d := digests{xor: rand.Uint64(), mul: rand.Uint64() | 1}
	d.alloc(minDigests)
	return d
}

// alloc makes an empty table of size positions, a power of two.
func (d *digests) alloc(size int) {
	d.keys, d.slots = make([]uint64, size), make([]int32, size)
	d.mask = uint64(size - 1)
	d.shift = 64
	for s := size; s > 1; s >>= 1 {
		d.shift--
	}
}

// home returns the position at which the probe for k starts.
func (d *digests) home(k uint64) uint64 { return ((k ^ d.xor) * d.mul) >> d.shift & d.mask }

// get returns the slot of k.
func (d *digests) get(k uint64) (int32, bool) {
	for h := d.home(k); ; h = (h + 1) & d.mask {
		s := d.slots[h]
		if s == 0 {
			return 0, false
		}
		if d.keys[h] == k {
			return s - 1, true
		}
	}
}

// set records slot i for k, which is not held.
func (d *digests) set(k uint64, i int32) {
	if 2*(d.n+1) > len(d.keys) {
		d.grow()
	}
	h := d.home(k)
	for d.slots[h] != 0 {
		h = (h + 1) & d.mask
	}
	d.keys[h], d.slots[h] = k, i+1
	d.n++
}

// grow doubles the table.
func (d *digests) grow() {
	keys, slots := d.keys, d.slots
	d.alloc(2 * len(keys))
	d.n = 0
	for j, s := range slots {
		if s != 0 {
			d.set(keys[j], s-1)
		}
	}
}

// del forgets k, which is held, and moves back the entries of its probe
// run that may stand in its place, so that no look-up stops short.
func (d *digests) del(k uint64) {
	h := d.home(k)
	for d.slots[h] == 0 || d.keys[h] != k {
		if d.slots[h] == 0 {
			return
		}
		h = (h + 1) & d.mask
	}
	for j := h; ; {
		j = (j + 1) & d.mask
		if d.slots[j] == 0 {
			break
		}
		// The entry at j stays when its home lies cyclically in (h, j].
		if home := d.home(d.keys[j]); (j-home)&d.mask < (j-h)&d.mask {
			continue
		}
		d.keys[h], d.slots[h] = d.keys[j], d.slots[j]
		h = j
	}
	d.slots[h] = 0
	d.n--
}
