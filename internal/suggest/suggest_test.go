// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package suggest

import (
	"slices"
	"testing"
)

// The distances are counted by hand from the definition (optimal string
// alignment: Damerau, 1964).
func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"bin", "bins", 1},
		{"intervall", "interval", 1},
		{"timer_resolutoin", "timer_resolution", 1}, // one transposition
		{"paymnet", "payment", 1},
		{"ca", "abc", 3}, // OSA, not full Damerau–Levenshtein (2)
		{"kitten", "sitting", 3},
		{"µs", "us", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	options := []string{"probes", "interval", "lag", "history", "bins", "dmax", "timer_resolution"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"bin", []string{"bins"}},
		{"intervall", []string{"interval"}},
		{"timer_resolutoin", []string{"timer_resolution"}},
		{"Probes", []string{"probes"}},
		{"hist", []string{"history"}}, // a prefix
		{"zzzzzz", nil},
		{"x", nil},
	} {
		got := Closest(c.name, options, 2)
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	// A distance that rewrites the whole of the longer name is no
	// misspelling: a one-letter name gets no other one-letter name (it got
	// "did you mean a?" for x among a, b, c), but a name one letter short
	// of a two-letter one, or two letters swapped, still gets it.
	short := []string{"a", "b", "ab", "xy"}
	for name, want := range map[string][]string{"x": {"xy"}, "c": nil, "yx": {"xy"}, "y": {"xy"}} {
		if got := Closest(name, short, 2); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Closest(%q) among %q = %q, want %q", name, short, got, want)
		}
	}
	if got := Closest("sytem", []string{"worker_1", "sytems", "system"}, 2); !slices.Equal(got, []string{"sytems", "system"}) {
		t.Errorf("Closest(sytem) = %q, want both at distance 1 in their order", got)
	}
}

func TestHintAndKnown(t *testing.T) {
	if got, want := Hint("paymnet", []string{"inventory", "payment", "checkout"}), " (did you mean payment?)"; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
	if got := Hint("zzz", []string{"inventory"}); got != "" {
		t.Errorf("Hint of nothing close = %q, want empty", got)
	}
	if got, want := Known("sytem", []string{"worker_1", "worker_2", "system"}, 2), "known: system, worker_1, …"; got != want {
		t.Errorf("Known = %q, want %q", got, want)
	}
	if got := Known("x", nil, 3); got != "" {
		t.Errorf("Known of no names = %q", got)
	}
}
