// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"encoding/binary"
	"testing"
)

// collide returns a key other than k with the same digest: its span id
// and the low half of its trace id differ from k's by the same bits.
func collide(k Key, bits uint64) Key {
	c := k
	binary.LittleEndian.PutUint64(c.SpanID[:], binary.LittleEndian.Uint64(k.SpanID[:])^bits)
	binary.LittleEndian.PutUint64(c.TraceID[8:], binary.LittleEndian.Uint64(k.TraceID[8:])^bits)
	return c
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
