// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math/rand/v2"
	"testing"
)

// TestPrintSet: a print found absent is added where find said, found
// again as a duplicate; the set grows and keeps every print, at most half
// full; 0 is never held; reset empties it and keeps its table; a clone is
// a set of its own. Prints of the same low bits (one slot of the table)
// probe past each other, around the table's end.
func TestPrintSet(t *testing.T) {
	var s printSet
	if i, found := s.find(0); i != -1 || found {
		t.Fatalf("find(0) = %d, %v; want -1, false", i, found)
	}
	s.add(-1, 0)
	if s.n != 0 || s.slots != nil {
		t.Fatalf("0 added: %d prints, %d slots", s.n, len(s.slots))
	}
	// Prints that share their low bits, and one whose slot is the last of
	// the table: they wrap around its end.
	same := []uint64{1<<40 | 63, 2<<40 | 63, 3<<40 | 63, 4<<40 | 62}
	for _, wp := range same {
		i, found := s.find(wp)
		if found {
			t.Fatalf("%#x found before it was added", wp)
		}
		s.add(i, wp)
		if _, found := s.find(wp); !found {
			t.Fatalf("%#x not found once added", wp)
		}
	}
	// Random prints, some repeated, against a map.
	r := rand.New(rand.NewPCG(1, 2))
	want := make(map[uint64]bool)
	for _, wp := range same {
		want[wp] = true
	}
	var prints []uint64
	for range 5000 {
		wp := r.Uint64() | 1
		if len(prints) > 0 && r.IntN(4) == 0 {
			wp = prints[r.IntN(len(prints))]
		}
		i, found := s.find(wp)
		if found != want[wp] {
			t.Fatalf("find(%#x) found %v, want %v", wp, found, want[wp])
		}
		if !found {
			s.add(i, wp)
			want[wp] = true
			prints = append(prints, wp)
		}
		if 2*s.n > len(s.slots) {
			t.Fatalf("%d prints in %d slots: more than half full", s.n, len(s.slots))
		}
	}
	if s.n != len(want) {
		t.Fatalf("%d prints held, want %d", s.n, len(want))
	}
	for wp := range want {
		if _, found := s.find(wp); !found {
			t.Fatalf("%#x lost", wp)
		}
	}
	c := s.clone()
	slots := len(s.slots)
	s.reset()
	if s.n != 0 || len(s.slots) != slots {
		t.Fatalf("reset: %d prints, %d slots; want 0, %d", s.n, len(s.slots), slots)
	}
	for wp := range want {
		if _, found := s.find(wp); found {
			t.Fatalf("%#x found after reset", wp)
		}
		if _, found := c.find(wp); !found {
			t.Fatalf("%#x lost from the clone", wp)
		}
	}
	if c.n != len(want) {
		t.Fatalf("the clone holds %d prints, want %d", c.n, len(want))
	}
}

// TestPrintSetOfWindows: the prints of the windows of many agents, or of
// a few agents of many probes, spaced by probe (windowPrint), lie close
// to their slots, as hashed prints do: in 50 random sets of each shape, a
// print is found within 40 slots of where its low bits put it, however
// full the table grew.
func TestPrintSetOfWindows(t *testing.T) {
	for _, tc := range []struct{ agents, probes int }{{64, 100}, {256, 100}, {4, 1000}, {3, 20}, {1000, 10}} {
		longest := uint64(0)
		for seed := range uint64(50) {
			var s printSet
			r := rand.New(rand.NewPCG(seed, uint64(tc.agents)))
			var prints []uint64
			for range tc.agents {
				source, start := r.Uint64(), int64(r.Uint64()>>1)
				for p := range tc.probes {
					wp := windowPrint(uint64(p), source, start)
					i, found := s.find(wp)
					if found {
						t.Fatalf("%d×%d: a print found before it was added", tc.agents, tc.probes)
					}
					s.add(i, wp)
					prints = append(prints, wp)
				}
			}
			mask := uint64(len(s.slots) - 1)
			for _, wp := range prints {
				i, found := s.find(wp)
				if !found {
					t.Fatalf("%d×%d: a print lost", tc.agents, tc.probes)
				}
				longest = max(longest, (uint64(i)-wp)&mask)
			}
		}
		if longest > 40 {
			t.Errorf("%d agents × %d probes: a print %d slots from its own", tc.agents, tc.probes, longest)
		}
	}
}
