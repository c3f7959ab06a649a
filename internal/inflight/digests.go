// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "math/rand/v2"

// digests maps 64-bit digests, distinct in their 32-bit tags (tag), to
// slots: an open-addressing table with linear probing and backward-shift
// deletion, so that the churn of the span path (an insert a start event, a
// deletion a span) leaves no tombstones behind, and a look-up touches one
// or two cache lines. A tag's home position is a multiply-shift hash under
// two random seeds drawn for each table: the ids are the senders', and a
// sender who does not know the seeds cannot aim many digests at one
// position. Equal tags never enter (keyIndex keeps their keys in a map of whole keys).
// A position holds its tag and its slot side by side, 8 bytes, so that a
// look-up of a table too large for the cache misses it once, not twice,
// and eight positions share a cache line.
type digests struct {
	pos   []digestPos
	mask  uint64
	shift uint
	xor   uint64
	mul   uint64 // odd
	n     int
}

// digestPos is a position of digests: a digest's tag and its slot + 1 (0
// is an empty position).
type digestPos struct {
	key  uint32
	slot int32
}

// tag folds a digest to the 32 bits a position holds. Two digests of one
// tag are two keys of one digest to the table: the second goes to
// keyIndex's map of whole keys. By chance that happens to about n²/2³³
// of n keys in flight (a pair at 10⁵); a sender who forges ids can make
// it happen at will, as with equal digests, and gains no more: a longer
// map.
//
// The fold multiplies (Fibonacci hashing) rather than xors the halves: a
// digest whose halves are equal, as of ids whose trace id's high half
// repeats the span id, would fold to 0.
func tag(k uint64) uint32 { return uint32(k * 0x9e3779b97f4a7c15 >> 32) }

// minDigests is the size of a new table; it doubles past half full.
const minDigests = 64

func newDigests() digests {
	d := digests{xor: rand.Uint64(), mul: rand.Uint64() | 1}
	d.alloc(minDigests)
	return d
}

// alloc makes an empty table of size positions, a power of two.
func (d *digests) alloc(size int) {
	d.pos = make([]digestPos, size)
	d.mask = uint64(size - 1)
	d.shift = 64
	for s := size; s > 1; s >>= 1 {
		d.shift--
	}
}

// home returns the position at which the probe for tag t starts: the top
// bits of the product, as many as the table's size has, so that no mask
// is needed; the shift is below 64 (alloc), which the &63 tells the
// compiler, so that it does not test for a larger one.
func (d *digests) home(t uint32) uint64 { return ((uint64(t) ^ d.xor) * d.mul) >> (d.shift & 63) }

// get returns the slot of k.
func (d *digests) get(k uint64) (int32, bool) {
	_, i, ok := d.lookup(k)
	return i, ok
}

// lookup returns the position of k and its slot when k is held; when it
// is not, pos is the free position its probe ended at, where setAt puts
// k as long as the table has not changed since.
func (d *digests) lookup(k uint64) (pos uint64, slot int32, found bool) {
	t := tag(k)
	for h := d.home(t); ; h = (h + 1) & d.mask {
		p := &d.pos[h]
		if p.slot == 0 {
			return h, 0, false
		}
		if p.key == t {
			return h, p.slot - 1, true
		}
	}
}

// set records slot i for k, whose tag is not held.
func (d *digests) set(k uint64, i int32) { d.setTag(tag(k), i) }

// setTag records slot i for tag t, which is not held.
func (d *digests) setTag(t uint32, i int32) {
	if 2*(d.n+1) > len(d.pos) {
		d.grow()
	}
	h := d.home(t)
	for d.pos[h].slot != 0 {
		h = (h + 1) & d.mask
	}
	d.pos[h] = digestPos{key: t, slot: i + 1}
	d.n++
}

// setAt is set at pos, the free position lookup(k) returned, with no
// change to the table since: the span path looks a key up before it adds
// it, and the look-up's probe is not repeated. It falls back to set when
// the table must grow first.
func (d *digests) setAt(pos, k uint64, i int32) {
	if 2*(d.n+1) > len(d.pos) {
		d.set(k, i)
		return
	}
	d.pos[pos] = digestPos{key: tag(k), slot: i + 1}
	d.n++
}

// grow doubles the table.
func (d *digests) grow() {
	old := d.pos
	d.alloc(2 * len(old))
	d.n = 0
	for _, p := range old {
		if p.slot != 0 {
			d.setTag(p.key, p.slot-1)
		}
	}
}

// clear forgets every digest, keeping the table's size.
func (d *digests) clear() {
	clear(d.pos)
	d.n = 0
}

// del forgets k, which is held.
func (d *digests) del(k uint64) {
	t := tag(k)
	h := d.home(t)
	for d.pos[h].slot == 0 || d.pos[h].key != t {
		if d.pos[h].slot == 0 {
			return
		}
		h = (h + 1) & d.mask
	}
	d.delAt(h)
}

// delAt empties position h, which holds a tag, and moves back the
// entries of its probe run that may stand in its place, so that no
// look-up stops short.
//
// The table is read into locals: a position moved back is a store that
// would otherwise make the compiler load the table and its mask again for
// every position the loop looks at.
func (d *digests) delAt(h uint64) {
	pos, mask := d.pos, d.mask
	for j := h; ; {
		j = (j + 1) & mask
		p := pos[j]
		if p.slot == 0 {
			break
		}
		// The entry at j stays when its home lies cyclically in (h, j].
		if home := d.home(p.key); (j-home)&mask < (j-h)&mask {
			continue
		}
		pos[h] = p
		h = j
	}
	pos[h].slot = 0
	d.n--
}
