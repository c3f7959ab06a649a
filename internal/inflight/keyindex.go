// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import "encoding/binary"

// keyIndex finds a tracked instance's slot by its key. Most keys are found
// by a 64-bit digest of the trace and span ids (short, digests.go), which
// hashes and compares in a few nanoseconds where a map keyed by the
// 24-byte Key hashes all of it, and the span path looks a key up for every
// matched span. A key whose digest another tracked key holds already
// — by chance, or forged — goes to long, keyed by the whole Key, so that
// no two instances are ever confused; the slot's own key is compared on
// every hit.
type keyIndex struct {
	short digests
	long  map[Key]int32
}

func newKeyIndex() keyIndex { return keyIndex{short: newDigests()} }

// digest mixes the random parts of the ids: the span id and the trace id's
// low half (W3C Trace Context: the rightmost bytes of a trace id are
// random), and the trace id's high half, rotated.
func digest(k *Key) uint64 {
	hi := binary.LittleEndian.Uint64(k.TraceID[:8])
	return binary.LittleEndian.Uint64(k.SpanID[:]) ^ binary.LittleEndian.Uint64(k.TraceID[8:]) ^ (hi<<32 | hi>>32)
}

// len returns the number of keys held.
func (x *keyIndex) len() int { return x.short.n + len(x.long) }

// find returns the slot of k among slots, and whether k is held; when it
// is not, short says whether k's digest is free for it (put). One look-up
// of short serves both.
func (x *keyIndex) find(k *Key, slots []slot) (i int32, found, short bool) {
	j, taken := x.short.get(digest(k))
	if taken && slots[j].inst.Key == *k {
		return j, true, false
	}
	if len(x.long) > 0 {
		if j, ok := x.long[*k]; ok {
			return j, true, false
		}
	}
	return 0, false, !taken
}

// get returns the slot of k among slots.
func (x *keyIndex) get(k *Key, slots []slot) (int32, bool) {
	i, ok, _ := x.find(k, slots)
	return i, ok
}

// put records slot i for k, which is not held, in short when find said its
// digest is free, else in long; it reports which.
func (x *keyIndex) put(k *Key, i int32, short bool) (long bool) {
	if short {
		x.short.set(digest(k), i)
		return false
	}
	if x.long == nil {
		x.long = make(map[Key]int32)
	}
	x.long[*k] = i
	return true
}

// del forgets k, recorded in long or in short (put's answer).
func (x *keyIndex) del(k *Key, long bool) {
	if long {
		delete(x.long, *k)
		return
	}
	x.short.del(digest(k))
}
