// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDigestsAgainstAMap: random inserts and deletions, over few keys so
// that probe runs form, wrap around the table's end and shift back, agree
// with a map at every step; the table grows and keeps every entry.
func TestDigestsAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		d := newDigests()
		if round%2 == 1 {
			d.mul = 1 << 58 // every key's home from its top bits only: long runs
		}
		model := map[uint64]int32{}
		for step := range 5000 {
			k := rng.Uint64N(300) << 50 // few keys, homes from the top bits
			if _, held := model[k]; held {
				d.del(k)
				delete(model, k)
			} else {
				d.set(k, int32(step))
				model[k] = int32(step)
			}
			checkDigests(t, &d, model, round, step)
		}
	}
}

// TestDigestsAtPositionsAgainstAMap is TestDigestsAgainstAMap through the
// span path's forms: a key looked up once, then set or deleted at the
// position the look-up returned (setAt, delAt).
func TestDigestsAtPositionsAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		d := newDigests()
		if round%2 == 1 {
			d.mul = 1 << 58
		}
		model := map[uint64]int32{}
		for step := range 5000 {
			k := rng.Uint64N(300) << 50
			pos, s, found := d.lookup(k)
			ms, held := model[k]
			if found != held || found && s != ms {
				t.Fatalf("round %d step %d: lookup(%x) = %d, %v; want %d, %v", round, step, k, s, found, ms, held)
			}
			if held {
				d.delAt(pos)
				delete(model, k)
			} else {
				d.setAt(pos, k, int32(step))
				model[k] = int32(step)
			}
			checkDigests(t, &d, model, round, step)
		}
	}
}

// checkDigests fails the test unless d holds as many keys as model and,
// every 97th step, each of model's keys with its slot and not the key 1,
// which no test sets.
func checkDigests(t *testing.T, d *digests, model map[uint64]int32, round, step int) {
	t.Helper()
	at := fmt.Sprintf("round %d step %d", round, step)
	if d.n != len(model) {
		t.Fatalf("%s: %d held, the map %d", at, d.n, len(model))
	}
	if step%97 != 0 {
		return
	}
	for mk, ms := range model {
		if s, ok := d.get(mk); !ok || s != ms {
			t.Fatalf("%s: get(%x) = %d, %v; want %d", at, mk, s, ok, ms)
		}
	}
	if _, ok := d.get(1); ok {
		t.Fatalf("%s: a key never set was found", at)
	}
}
