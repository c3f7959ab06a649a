// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"encoding/binary"
	"testing"
)

// collide returns a key other than k with the same digest, as a sender
// who forges ids can make: its span id differs from k's by bits, and the
// low half of its trace id is solved for, through the inverse of its
// multiplier modulo 2⁶⁴.
func collide(k Key, bits uint64) Key {
	c := k
	span := binary.LittleEndian.Uint64(k.SpanID[:])
	lo := binary.LittleEndian.Uint64(k.TraceID[8:])
	binary.LittleEndian.PutUint64(c.SpanID[:], span^bits)
	inv := uint64(digestLow) // Newton's iteration: each step doubles the bits of the inverse that are right
	for range 6 {
		inv *= 2 - digestLow*inv
	}
	lo2 := (lo*digestLow ^ span*digestSpan ^ (span^bits)*digestSpan) * inv
	binary.LittleEndian.PutUint64(c.TraceID[8:], lo2)
	return c
}

// TestDigestOfCountedIDs: ids built from counters, as dqload builds them
// (a stream, a sequence number and an index in the trace id; the stream,
// the index + 1 and the sequence number in the span id), have distinct
// digests and almost all distinct tags: with the ids' halves xored
// unmultiplied, most of them shared a digest with another.
func TestDigestOfCountedIDs(t *testing.T) {
	digests := map[uint64]bool{}
	tags := map[uint32]bool{}
	n := 0
	for stream := range uint32(8) {
		for seq := range uint64(40) {
			for i := range uint32(1000) {
				var k Key
				binary.BigEndian.PutUint32(k.TraceID[0:4], stream)
				binary.BigEndian.PutUint64(k.TraceID[4:12], seq)
				binary.BigEndian.PutUint32(k.TraceID[12:16], i)
				binary.BigEndian.PutUint16(k.SpanID[0:2], uint16(stream))
				binary.BigEndian.PutUint16(k.SpanID[2:4], uint16(i)+1)
				binary.BigEndian.PutUint32(k.SpanID[4:8], uint32(seq))
				d := digest(&k)
				digests[d] = true
				tags[tag(d)] = true
				n++
			}
		}
	}
	// n = 320,000 random 32-bit tags would collide about n²/2³³ ≈ 12 times.
	if len(digests) != n || n-len(tags) > 100 {
		t.Fatalf("%d keys: %d distinct digests, %d distinct tags", n, len(digests), len(tags))
	}
}

// TestKeysWithOneDigest: keys that share a digest — by chance, or forged
// to — are tracked apart, whichever is added, ended or evicted first.
func TestKeysWithOneDigest(t *testing.T) {
	a := key(1)
	b, c := collide(a, 0xff), collide(a, 0xff00)
	if digest(&a) != digest(&b) || digest(&a) != digest(&c) || a == b || b == c {
		t.Fatal("the test's keys do not share a digest")
	}
	for _, order := range [][3]Key{{a, b, c}, {c, b, a}, {b, a, c}} {
		tb := New(2, 0)
		for i, k := range order {
			if ok, ev := tb.Add(&Instance{Key: k, Probe: i, Deadline: int64(100 + i)}); !ok || ev.Evicted != (i == 2) {
				t.Fatalf("Add(%d) = %v, %+v", i, ok, ev)
			}
		}
		// The first was evicted: the others are found with their probe.
		if _, _, ok := tb.End(order[0]); ok {
			t.Fatal("the evicted key was found")
		}
		for i := 2; i >= 1; i-- {
			in, _, ok := tb.End(order[i])
			if !ok || in.Probe != i || in.Key != order[i] {
				t.Fatalf("End(%d) = %+v, %v; want probe %d", i, in, ok, i)
			}
		}
		if tb.Len() != 0 || tb.index.len() != 0 {
			t.Fatalf("%d left tracked, index holds %d", tb.Len(), tb.index.len())
		}
	}
}
