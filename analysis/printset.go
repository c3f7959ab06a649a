// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import "slices"

// printSet is a set of window prints (windowPrint), the windows of named
// observers a slot merged: open addressing with linear probing over a
// table of a power of two slots, 0 marking an empty one (0 is no print,
// never held). The prints' low bits index the table as they are, without
// another hash: an observer's are mixed (mix), its windows' a line apart
// by probe (windowPrint, printStride). One probe of the table
// both tells a duplicate and finds where its print goes (find), which the
// window's add then fills (add). A map[uint64]struct{} took two look-ups a
// window, the check's and the add's: 200 instructions (the set's probe,
// 40) and a fifth of the merge's CPU time in BenchmarkGatewayMergeSparse,
// its table's cache misses mostly; the set took its merge-cpu-ns/op from
// 4.3 to 3.5 ms (medians of 8 runs alternating on a busy machine).
type printSet struct {
	slots []uint64 // nil until the first print
	n     int      // prints held
}

// minPrintSlots is the table of the first print.
const minPrintSlots = 64

// find returns the slot of wp, and whether the set holds it; when it does
// not, the slot is where add puts it, valid until the set changes. It
// makes room for one more print first, so that the set stays at most half
// full: linear probing then reads a print's slot and about one more for a
// print not held, the common case. For wp = 0, no print, it returns −1
// and false.
func (s *printSet) find(wp uint64) (int, bool) {
	if wp == 0 {
		return -1, false
	}
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := wp & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case wp:
			return int(i), true
		case 0:
			return int(i), false
		}
	}
}

// add puts wp in slot i, which find returned for it, not held, with no
// change to the set between; i < 0 (no print) adds nothing.
func (s *printSet) add(i int, wp uint64) {
	if i < 0 {
		return
	}
	s.slots[i] = wp
	s.n++
}

// grow doubles the table (or makes the first) and puts the prints back.
func (s *printSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(2*len(old), minPrintSlots))
	mask := uint64(len(s.slots) - 1)
	for _, wp := range old {
		if wp == 0 {
			continue
		}
		i := wp & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = wp
	}
}

// reset empties the set and keeps its table, as a map cleared keeps its
// own: the next window holds as many prints.
func (s *printSet) reset() {
	clear(s.slots)
	s.n = 0
}

// clone returns a copy of the set.
func (s *printSet) clone() printSet {
	return printSet{slots: slices.Clone(s.slots), n: s.n}
}
