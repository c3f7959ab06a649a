// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "encoding/binary"

// keyIndex finds a tracked instance's slot by its key. Most keys are found
// by a 64-bit digest of the trace and span ids (short, digests.go), which
// hashes and compares in a few nanoseconds where a map keyed by the
// 24-byte Key hashes all of it, and the span path looks a key up for every
// matched span. A key whose digest (its tag) another tracked key holds already
// — by chance, or forged — goes to long, keyed by the whole Key, so that
// no two instances are ever confused; the slot's own key is compared on
// every hit.
type keyIndex struct {
	short digests
	long  map[Key]int32
}

func newKeyIndex() keyIndex { return keyIndex{short: newDigests()} }

// digest mixes the span id and the two halves of the trace id, each
// multiplied by an odd constant of its own before they are xored. The ids
// are random by W3C Trace Context, but not all tracers make them so, and
// ids built from counters (a process, a sequence number, an index, as
// dqload builds them) xored as they are cancel one another's differences:
// 320,000 such keys had 50,688 digests among them (TestDigestOfCountedIDs),
// and all but one key of each digest went to keyIndex's or Ended's map of
// whole keys. A product is not linear in the bits xor flips, and the digests of
// such keys are as distinct as those of random ones.
func digest(k *Key) uint64 {
	hi := binary.LittleEndian.Uint64(k.TraceID[:8])
	lo := binary.LittleEndian.Uint64(k.TraceID[8:])
	return binary.LittleEndian.Uint64(k.SpanID[:])*digestSpan ^ lo*digestLow ^ hi*digestHigh
}

// The multipliers of digest: odd, with their bits well spread (the 64-bit
// constants of Fibonacci hashing, xxHash and MurmurHash3's finaliser).
const (
	digestSpan = 0x9e3779b97f4a7c15
	digestLow  = 0xc2b2ae3d27d4eb4f
	digestHigh = 0xff51afd7ed558ccd
)

// len returns the number of keys held.
func (x *keyIndex) len() int { return x.short.n + len(x.long) }

// noPos is a keyHit's pos when the key is not, or is not to be, in short.
const noPos = ^uint64(0)

// keyHit is what find found of a key: its slot, if held, and its
// position in short, where it is held or where put puts it (noPos: in
// long), so that neither put nor del repeats the look-up's probe; and its
// digest, which put records.
type keyHit struct {
	pos, digest uint64
	slot        int32
	found       bool
}

// find looks k up among slots. One look-up of short serves both a later
// put, when k is not held, and a later del, when it is.
func (x *keyIndex) find(k *Key, slots []slot) keyHit {
	dig := digest(k)
	pos, j, taken := x.short.lookup(dig)
	if taken && slots[j].inst.Key == *k {
		return keyHit{pos: pos, digest: dig, slot: j, found: true}
	}
	if len(x.long) > 0 {
		if j, ok := x.long[*k]; ok {
			return keyHit{pos: noPos, digest: dig, slot: j, found: true}
		}
	}
	if taken { // k's digest is another key's: k goes to long
		pos = noPos
	}
	return keyHit{pos: pos, digest: dig}
}

// get returns the slot of k among slots.
func (x *keyIndex) get(k *Key, slots []slot) (int32, bool) {
	h := x.find(k, slots)
	return h.slot, h.found
}

// put records slot i for k, which find did not find (h) with no change to
// the index since: in short when its digest is free, else in long.
func (x *keyIndex) put(k *Key, i int32, h keyHit) {
	if h.pos != noPos {
		x.short.setAt(h.pos, h.digest, i)
		return
	}
	if x.long == nil {
		x.long = make(map[Key]int32)
	}
	x.long[*k] = i
}

// del forgets k, which is held: in long when it is there, else in short.
// long is empty but for keys whose digests collide, so that a key in
// short costs one length test more than its removal from short; its tag
// removed from short when the key is in long would be another key's.
func (x *keyIndex) del(k *Key) {
	if len(x.long) > 0 {
		if _, ok := x.long[*k]; ok {
			delete(x.long, *k)
			return
		}
	}
	x.short.del(digest(k))
}

// delHit forgets k, which find found (h) with no change to the index
// since.
func (x *keyIndex) delHit(k *Key, h keyHit) {
	if h.pos == noPos {
		delete(x.long, *k)
		return
	}
	x.short.delAt(h.pos)
}
