// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestSlotLayout: a slot's header (due time, generation, bucket, state and
// links) takes 32 bytes, so that the key and probe an end reads share the
// slot's first cache line with it, and a slot is two cache lines.
func TestSlotLayout(t *testing.T) {
	var s slot
	if off, size := unsafe.Offsetof(s.inst), unsafe.Sizeof(s); off != 32 || size != 128 {
		t.Fatalf("slot: instance at byte %d, size %d; want 32, 128", off, size)
	}
}

// checkLists checks the insertion-order list and the wheel's buckets
// against each other: every linked slot is in both, once, and no young
// slot is in either. It returns the number of linked slots.
func checkLists(t *testing.T, tb *Table) int {
	t.Helper()
	linked := 0
	for i := tb.oldest; i != none; i = tb.slots[i].next {
		if tb.slots[i].bucket == noBucket {
			t.Fatalf("young slot %d in the insertion-order list", i)
		}
		linked++
	}
	inWheel := 0
	for b := range tb.wheel.heads {
		for i := tb.wheel.heads[b]; i != none; i = tb.slots[i].wnext {
			if int(tb.slots[i].bucket) != b {
				t.Fatalf("slot %d in bucket %d says bucket %d", i, b, tb.slots[i].bucket)
			}
			inWheel++
		}
	}
	if inWheel != linked {
		t.Fatalf("%d slots in the wheel, %d in the insertion-order list", inWheel, linked)
	}
	return linked
}

// TestYoungEndsLeaveNoTrace: instances that end young never join the lists,
// and the ring stays at its first size however many start and end, a few
// at a time; instances that end after they joined leave the lists empty.
func TestYoungEndsLeaveNoTrace(t *testing.T) {
	tb := New(100_000, 1000)
	for n := range 100_000 {
		tb.Add(inst(n, int64(n), 1_000_000))
		if n >= 5 {
			if _, _, ok := tb.End(key(n - 5)); !ok {
				t.Fatalf("End(%d) found nothing", n-5)
			}
		}
		if n%1000 == 0 {
			tb.Expire(int64(n), nil) // nothing due: the young stay young
		}
	}
	if linked := checkLists(t, tb); linked != 0 || tb.Len() != 5 {
		t.Fatalf("%d linked, %d tracked; want 0, 5", linked, tb.Len())
	}
	if len(tb.young.refs) != minYoung || len(tb.slots) > 6 {
		t.Fatalf("ring of %d refs, %d slots; want %d, at most 6", len(tb.young.refs), len(tb.slots), minYoung)
	}

	// Due at once: every Expire links the young, which then end linked.
	for n := range 10_000 {
		tb.Add(inst(200_000+n, int64(n), 0))
		tb.Expire(0, nil)
		tb.End(key(200_000 + n))
	}
	for n := 99_995; n < 100_000; n++ {
		tb.End(key(n))
	}
	if linked := checkLists(t, tb); linked != 0 || tb.Len() != 0 || tb.oldest != none || tb.newest != none {
		t.Fatalf("%d linked, %d tracked, list ends %d %d; want none", linked, tb.Len(), tb.oldest, tb.newest)
	}
}

// TestYoungRingBounded: while instances outlive the ring, it doubles, and
// stops at youngBound(capacity); eviction takes the oldest in insertion
// order throughout, young or linked.
func TestYoungRingBounded(t *testing.T) {
	const capacity = 1000
	tb := New(capacity, 10)
	for n := range 50_000 {
		ok, ev := tb.Add(inst(n, int64(n), 1e12))
		if !ok || ev.Evicted != (n >= capacity) || (ev.Evicted && ev.Instance.Key != key(n-capacity)) {
			t.Fatalf("Add(%d) = %v, %+v; want instance %d evicted", n, ok, ev, n-capacity)
		}
		if len(tb.young.refs) > youngBound(capacity) {
			t.Fatalf("after %d adds, a ring of %d refs; bound %d", n+1, len(tb.young.refs), youngBound(capacity))
		}
	}
	if len(tb.young.refs) != youngBound(capacity) {
		t.Fatalf("ring of %d refs; want it grown to %d", len(tb.young.refs), youngBound(capacity))
	}
	checkLists(t, tb)
}

// TestYoungSlotReuse: a slot freed by an end and taken by the next
// instance is told apart from its former instance by its generation: the
// stale ref is neither evicted nor linked.
func TestYoungSlotReuse(t *testing.T) {
	tb := New(2, 10_000)
	k1, k2 := key(1), key(2)
	tb.Add(inst(1, 0, 100))
	first, _ := tb.index.get(&k1, tb.slots)
	tb.End(k1)
	tb.Add(inst(2, 0, 200))
	if second, _ := tb.index.get(&k2, tb.slots); second != first {
		t.Fatalf("instance 2 in slot %d, not in the freed slot %d", second, first)
	}
	tb.Add(inst(3, 0, 300))
	if _, ev := tb.Add(inst(4, 0, 400)); !ev.Evicted || ev.Instance.Key != k2 {
		t.Fatalf("eviction %+v; want instance 2", ev)
	}
	out, _ := tb.Expire(1000, nil)
	if len(out) != 2 || out[0].Key != key(3) || out[1].Key != key(4) {
		t.Fatalf("Expire = %v; want instances 3 and 4, once each", out)
	}
	if s, to := tb.Counts(); s != 0 || to != 2 || checkLists(t, tb) != 2 {
		t.Fatalf("Counts = %d, %d; want 0, 2, both linked", s, to)
	}
}

// TestLinkKeepsOrder: linking any number of the young at any time, among
// adds and ends, keeps every tracked instance, its due time and the
// insertion order: the instances are evicted in the order they were added,
// and NextDue is the earliest of theirs.
func TestLinkKeepsOrder(t *testing.T) {
	const capacity = 300
	tb := New(capacity, 10)
	rng := rand.New(rand.NewPCG(5, 6))
	var order []int // the tracked instances in insertion order
	due := map[int]int64{}
	next := 0
	for range 5000 {
		switch op := rng.IntN(10); {
		case op < 5 && len(order) < capacity:
			d := 1 + rng.Int64N(1000)
			tb.Add(inst(next, 0, d))
			order, due[next] = append(order, next), d
			next++
		case op < 8 && len(order) > 0:
			j := rng.IntN(len(order))
			tb.End(key(order[j]))
			delete(due, order[j])
			order = append(order[:j], order[j+1:]...)
		default:
			tb.link(rng.IntN(tb.young.n + 1))
		}
		checkLists(t, tb)
		if len(order) > 0 {
			want := int64(1 << 62)
			for _, d := range due {
				want = min(want, d)
			}
			if got, _ := tb.NextDue(); got != want {
				t.Fatalf("NextDue = %d, want %d", got, want)
			}
		}
	}
	for len(order) < capacity {
		tb.Add(inst(next, 0, 5000))
		order = append(order, next)
		next++
	}
	for _, n := range order {
		if _, ev := tb.Add(inst(next, 0, 5000)); !ev.Evicted || ev.Instance.Key != key(n) {
			t.Fatalf("eviction %+v; want instance %d", ev.Instance.Key, n)
		}
		next++
	}
}
