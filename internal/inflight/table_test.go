// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func key(n int) Key {
	var k Key
	k.TraceID[0] = byte(n)
	k.TraceID[1] = byte(n >> 8)
	k.TraceID[2] = byte(n >> 16)
	k.SpanID[0] = 1
	return k
}

func inst(n int, start, dMax int64) *Instance {
	return &Instance{Key: key(n), Probe: n % 3, Start: start, Deadline: start + dMax, Name: "p"}
}

func TestAddEndExpire(t *testing.T) {
	tb := New(10, 100)
	if ok, ev := tb.Add(inst(1, 0, 50)); !ok || ev.Evicted {
		t.Fatalf("Add = %v, %+v; want added, no eviction", ok, ev)
	}
	if ok, _ := tb.Add(inst(2, 10, 50)); !ok {
		t.Fatal("Add(2) refused")
	}
	if ok, _ := tb.Add(inst(1, 20, 50)); ok {
		t.Fatal("duplicate key accepted")
	}
	if s, to := tb.Counts(); s != 2 || to != 0 {
		t.Fatalf("Counts = %d, %d; want 2, 0", s, to)
	}

	// Instance 2 ends before its deadline: it is gone, and never times out.
	got, st, ok := tb.End(key(2))
	if !ok || st != Started || got.Start != 10 || got.Deadline != 60 {
		t.Fatalf("End(2) = %+v, %v, %v", got, st, ok)
	}
	if _, _, ok := tb.End(key(2)); ok {
		t.Fatal("End(2) twice succeeded")
	}

	// Just before the deadline of 1 (50) nothing is due; at 50 it times out.
	if out, f := tb.Expire(49, nil); len(out) != 0 || f != 0 {
		t.Fatalf("Expire(49) = %v, %d", out, f)
	}
	out, f := tb.Expire(50, nil)
	if len(out) != 1 || out[0].Key != key(1) || f != 0 {
		t.Fatalf("Expire(50) = %v, %d; want instance 1", out, f)
	}
	if s, to := tb.Counts(); s != 0 || to != 1 {
		t.Fatalf("Counts after timeout = %d, %d; want 0, 1", s, to)
	}
	// A timed-out instance is reported once only.
	if out, _ := tb.Expire(149, nil); len(out) != 0 {
		t.Fatalf("Expire(149) reported %v again", out)
	}
	// Its late span finds it TimedOut.
	if _, st, ok := tb.End(key(1)); !ok || st != TimedOut {
		t.Fatalf("End(1) after timeout = %v, %v; want TimedOut", st, ok)
	}
	if tb.Len() != 0 {
		t.Fatalf("Len = %d, want 0", tb.Len())
	}
}

func TestLateWindowForgets(t *testing.T) {
	tb := New(10, 100)
	tb.Add(inst(1, 0, 50))
	tb.Expire(50, nil)
	// Forgotten at deadline (50) + late window (100) = 150, not before.
	if _, f := tb.Expire(149, nil); f != 0 || tb.Len() != 1 {
		t.Fatalf("forgotten early: f=%d len=%d", f, tb.Len())
	}
	if _, f := tb.Expire(150, nil); f != 1 || tb.Len() != 0 {
		t.Fatalf("Expire(150): f=%d len=%d; want 1, 0", f, tb.Len())
	}
	if _, _, ok := tb.End(key(1)); ok {
		t.Fatal("forgotten instance still found")
	}
}

// TestGraceDelaysTimeout: an instance with a due time after its deadline
// (a grace for transit) times out at the due time, keeps its deadline, and is
// forgotten a late window after the due time.
func TestGraceDelaysTimeout(t *testing.T) {
	tb := New(10, 100)
	in := inst(1, 0, 50)
	in.Due = 80
	tb.Add(in)
	if d, _ := tb.NextDue(); d != 80 {
		t.Fatalf("NextDue = %d, want 80", d)
	}
	if out, _ := tb.Expire(79, nil); len(out) != 0 {
		t.Fatalf("Expire(79) = %v; want nothing within the grace", out)
	}
	out, _ := tb.Expire(80, nil)
	if len(out) != 1 || out[0].Deadline != 50 || out[0].Due != 80 {
		t.Fatalf("Expire(80) = %+v; want instance 1, deadline 50, due 80", out)
	}
	if _, f := tb.Expire(179, nil); f != 0 {
		t.Fatal("forgotten before due time + late window")
	}
	if _, f := tb.Expire(180, nil); f != 1 {
		t.Fatal("not forgotten at due time + late window")
	}

	// A due time before the deadline (zero: not set) means the deadline.
	tb.Add(inst(2, 0, 50))
	if d, _ := tb.NextDue(); d != 50 {
		t.Fatalf("NextDue without grace = %d, want 50", d)
	}
}

func TestEvictsOldestInsertion(t *testing.T) {
	tb := New(3, 1000)
	// Insertion order 1, 2, 3 with deadlines in the opposite order, so that
	// eviction by deadline and eviction by age would differ.
	tb.Add(inst(1, 0, 300))
	tb.Add(inst(2, 0, 200))
	tb.Add(inst(3, 0, 100))
	ok, ev := tb.Add(inst(4, 0, 50))
	if !ok || !ev.Evicted || ev.Instance.Key != key(1) || ev.State != Started {
		t.Fatalf("Add(4) = %v, %+v; want instance 1 evicted", ok, ev)
	}
	if tb.Len() != 3 {
		t.Fatalf("Len = %d, want 3", tb.Len())
	}
	// The oldest is now 2; time 3 out and check the state is reported.
	tb.Expire(100, nil) // times out 4 (50) and 3 (100)
	_, ev = tb.Add(inst(5, 0, 10))
	if ev.Instance.Key != key(2) || ev.State != Started {
		t.Fatalf("second eviction = %+v; want instance 2, Started", ev)
	}
	_, ev = tb.Add(inst(6, 0, 10))
	if ev.Instance.Key != key(3) || ev.State != TimedOut {
		t.Fatalf("third eviction = %+v; want instance 3, TimedOut", ev)
	}
}

func TestDeadlineSaturates(t *testing.T) {
	tb := New(2, math.MaxInt64)
	tb.Add(&Instance{Key: key(1), Deadline: math.MaxInt64 - 5})
	if out, _ := tb.Expire(math.MaxInt64-5, nil); len(out) != 1 {
		t.Fatalf("Expire at deadline = %v", out)
	}
	if d, ok := tb.NextDue(); !ok || d != math.MaxInt64 {
		t.Fatalf("NextDue = %d, %v; want MaxInt64 (saturated)", d, ok)
	}
}

// TestAgainstModel drives the table and a naive model with the same random
// operations and compares every observable result.
//
// The wheel's buckets change no result: the table of New (1 ms buckets,
// all these times in one), and wheels of 4 ns buckets in a ring of 64 and
// of 1 ns buckets in a ring of 8 (due times many turns ahead), with the
// clock jumping past a whole turn now and then, answer alike.
func TestAgainstModel(t *testing.T) {
	const capacity, late = 50, 40
	checkAgainstModel(t, New(capacity, late), false)
	t.Run("young ring growing", func(t *testing.T) {
		// A bound above the table's capacity, so that the ring grows
		// and links half of itself at sizes other than the first.
		tb := New(capacity, late)
		tb.maxYoung = 4 * minYoung
		checkAgainstModel(t, tb, true)
	})
	for _, w := range []struct {
		shift uint
		n     int64
	}{{2, 64}, {0, 8}} {
		t.Run(fmt.Sprintf("wheel %d×%d ns", w.n, 1<<w.shift), func(t *testing.T) {
			tb := New(capacity, late)
			tb.wheel = makeWheel(w.shift, w.n)
			checkAgainstModel(t, tb, true)
		})
	}
}

// checkAgainstModel runs TestAgainstModel's operations on tb, made with
// capacity 50 and late window 40; jumps moves the clock by 500 now and then.
func checkAgainstModel(t *testing.T, tb *Table, jumps bool) {
	type mInst struct {
		inst  Instance
		state State
		due   int64
		seq   int
	}
	const capacity, late = 50, 40
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[Key]*mInst{}
	seq := 0
	now := int64(0)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 5: // add
			n := rng.IntN(200)
			in := inst(n, now, 1+rng.Int64N(100))
			if rng.IntN(2) == 0 { // a grace after the deadline
				in.Due = in.Deadline + rng.Int64N(50)
			}
			ok, ev := tb.Add(in)
			_, dup := model[in.Key]
			if ok == dup {
				t.Fatalf("step %d: Add ok=%v, model dup=%v", step, ok, dup)
			}
			if dup {
				continue
			}
			if len(model) == capacity {
				var oldest *mInst
				for _, m := range model {
					if oldest == nil || m.seq < oldest.seq {
						oldest = m
					}
				}
				if !ev.Evicted || ev.Instance.Key != oldest.inst.Key || ev.State != oldest.state {
					t.Fatalf("step %d: eviction %+v, model oldest %+v", step, ev, oldest)
				}
				delete(model, oldest.inst.Key)
			} else if ev.Evicted {
				t.Fatalf("step %d: eviction below capacity", step)
			}
			seq++
			in.Due = max(in.Due, in.Deadline) // End returns the due time in force
			model[in.Key] = &mInst{inst: *in, state: Started, due: in.Due, seq: seq}
		case op < 8: // end
			k := key(rng.IntN(200))
			got, st, ok := tb.End(k)
			m, mok := model[k]
			if ok != mok || (ok && (got != m.inst || st != m.state)) {
				t.Fatalf("step %d: End = %+v %v %v, model %+v %v", step, got, st, ok, m, mok)
			}
			delete(model, k)
		default: // advance time and expire
			now += rng.Int64N(30)
			if jumps && rng.IntN(20) == 0 {
				now += 500
			}
			out, forgotten := tb.Expire(now, nil)
			var want []Key
			wantForgotten := 0
			for k, m := range model {
				if m.due > now {
					continue
				}
				if m.state == Started {
					want = append(want, k)
					m.state = TimedOut
					m.due = m.inst.Due + late
					if m.due <= now {
						// Due again within the same call: forgotten too.
						delete(model, k)
						wantForgotten++
					}
				} else {
					delete(model, k)
					wantForgotten++
				}
			}
			var got []Key
			for _, in := range out {
				got = append(got, in.Key)
			}
			cmp := func(a, b Key) int {
				return slices.Compare(append(a.TraceID[:], a.SpanID[:]...), append(b.TraceID[:], b.SpanID[:]...))
			}
			slices.SortFunc(got, cmp)
			slices.SortFunc(want, cmp)
			if !slices.Equal(got, want) || forgotten != wantForgotten {
				t.Fatalf("step %d: Expire(%d) = %v, %d; model %v, %d", step, now, got, forgotten, want, wantForgotten)
			}
		}
		s, to := tb.Counts()
		ms, mto := 0, 0
		for _, m := range model {
			if m.state == Started {
				ms++
			} else {
				mto++
			}
		}
		if tb.Len() != len(model) || s != ms || to != mto {
			t.Fatalf("step %d: Len/Counts = %d %d %d, model %d %d %d", step, tb.Len(), s, to, len(model), ms, mto)
		}
	}
}

func TestOperationsDoNotAllocateAtWorkingSize(t *testing.T) {
	tb := New(1000, 10)
	for i := range 1000 {
		tb.Add(inst(i, 0, int64(i)))
	}
	buf := make([]Instance, 0, 1000)
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		// Evict one (full table), end one, expire a few.
		tb.Add(inst(1000+n%500, int64(n), 5))
		tb.End(key(n % 1000))
		buf, _ = tb.Expire(int64(n), buf[:0])
		n++
	})
	if allocs != 0 {
		t.Fatalf("allocs per run = %v, want 0", allocs)
	}
}

func BenchmarkAddEnd(b *testing.B) {
	tb := New(100000, 1e9)
	for i := range 10000 {
		tb.Add(inst(i, 0, int64(i)))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		k := 10000 + n%50000
		tb.Add(inst(k, int64(n), 1e6))
		tb.End(key(k))
		n++
	}
}

// TestExpireAfterTheClockWentBack: an instance added with a due time before
// the last Expire's is found by the next, even at an earlier time (the
// wheel puts it in the bucket that call walks first).
func TestExpireAfterTheClockWentBack(t *testing.T) {
	tb := New(10, 100)
	tb.wheel = makeWheel(2, 64)
	tb.Expire(10_000, nil)
	tb.Add(inst(1, 400, 100)) // due 500
	tb.Add(inst(2, 9_950, 100))
	if out, _ := tb.Expire(9_000, nil); len(out) != 1 || out[0].Key != key(1) {
		t.Fatalf("Expire(9000) = %v; want instance 1", out)
	}
	if out, _ := tb.Expire(10_049, nil); len(out) != 0 {
		t.Fatalf("Expire(10049) = %v; want nothing", out)
	}
	if out, _ := tb.Expire(10_050, nil); len(out) != 1 || out[0].Key != key(2) {
		t.Fatalf("Expire(10050) = %v; want instance 2", out)
	}
}

// TestAddKeepsEveryField: Add copies an instance field by field (table.go);
// every field of Instance, each set (by reflection, so that a field added
// later is set too), comes back whole from End.
func TestAddKeepsEveryField(t *testing.T) {
	var in Instance
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Name == "Key" {
			continue
		}
		switch f := v.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(1000 + i))
		case reflect.Uint64:
			f.SetUint(uint64(1000 + i))
		case reflect.String:
			f.SetString(fmt.Sprintf("field %d", i))
		default:
			t.Fatalf("field %s of kind %v: set it here", v.Type().Field(i).Name, f.Kind())
		}
	}
	in.Key = key(7)      // its own type, fixed: trace and span id
	in.Due = in.Deadline // the slot's due time is the later of the two
	tb := New(10, 100)
	if ok, _ := tb.Add(&in); !ok {
		t.Fatal("not added")
	}
	if got, _, ok := tb.End(in.Key); !ok || !reflect.DeepEqual(got, in) {
		t.Errorf("End = %+v, %v; want %+v", got, ok, in)
	}
}
