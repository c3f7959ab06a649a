// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package suggest finds, for a name a user wrote that matches nothing, the
// names they probably meant, so that an error message can say how to fix the
// mistake ("unknown option bin; did you mean bins?").
//
// Closeness is the Damerau–Levenshtein distance in its optimal-string-
// alignment form (insertions, deletions, substitutions and transpositions of
// adjacent characters each cost one; Damerau, "A technique for computer
// detection and correction of spelling errors", 1964), compared without
// regard to case.
package suggest // import "github.com/deltaq-otel/deltaq/internal/suggest"

import (
	"fmt"
	"slices"
	"strings"
)

// Closest returns the candidates nearest to name, nearest first (ties in the
// candidates' order), that are plausibly what was meant: at a distance of at
// most max(1, len(name)/3), or of which name is a prefix or which are a
// prefix of name, and not at a distance that rewrites every character of
// the longer of the two (a one-letter name is no misspelling of another
// one-letter name). It returns at most n names; none when nothing is close.
func Closest(name string, candidates []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	limit := max(1, len([]rune(name))/3)
	lower := strings.ToLower(name)
	var found []scored
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lower {
			found = append(found, scored{c, 0})
			continue
		}
		d := Distance(lower, lc)
		prefix := len(lower) >= 3 && len(lc) >= 3 && (strings.HasPrefix(lc, lower) || strings.HasPrefix(lower, lc))
		whole := d >= max(len([]rune(lower)), len([]rune(lc)))
		if d <= limit && !whole || prefix {
			found = append(found, scored{c, d})
		}
	}
	slices.SortStableFunc(found, func(a, b scored) int { return a.d - b.d })
	out := make([]string, 0, min(n, len(found)))
	for _, f := range found {
		if len(out) == n {
			break
		}
		if !slices.Contains(out, f.name) {
			out = append(out, f.name)
		}
	}
	return out
}

// Hint returns " (did you mean x?)" or " (did you mean x or y?)" for the
// closest candidates of name, or "" when none is close. It is meant to be
// appended to an error message.
func Hint(name string, candidates []string) string {
	c := Closest(name, candidates, 2)
	switch len(c) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(" (did you mean %s?)", c[0])
	}
	return fmt.Sprintf(" (did you mean %s or %s?)", c[0], c[1])
}

// Known returns "known: a, b, c" listing names sorted nearest to name first
// (then alphabetically), at most n of them followed by "…" when there are
// more; "" when names is empty.
func Known(name string, names []string, n int) string {
	if len(names) == 0 {
		return ""
	}
	sorted := slices.Clone(names)
	lower := strings.ToLower(name)
	slices.SortStableFunc(sorted, func(a, b string) int {
		if d := Distance(lower, strings.ToLower(a)) - Distance(lower, strings.ToLower(b)); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	more := ""
	if len(sorted) > n {
		sorted, more = sorted[:n], ", …"
	}
	return "known: " + strings.Join(sorted, ", ") + more
}

// Distance is the optimal-string-alignment distance between a and b,
// counted in runes: the least number of insertions, deletions, substitutions
// and transpositions of two adjacent runes that turn a into b, no substring
// edited twice. Distance("bin", "bins") = 1, Distance("ab", "ba") = 1.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the dynamic programme: i-2, i-1 and i.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
