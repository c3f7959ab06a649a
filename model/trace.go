// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"errors"
	"slices"
)

// Parent markers of tree.parent for spans without a parent index.
const (
	parentNone      = -1 // a root span
	parentMissing   = -2 // the parent span never arrived: an orphan
	parentDuplicate = -3 // a second span of the same id, ignored
)

// smallTrace is the number of spans up to which parents are found by a
// linear scan rather than a map.
const smallTrace = 24

// tree is one trace's spans linked into trees, with the effective
// (clipped) interval and the exclusive time of each span. Its buffers are
// reused from trace to trace.
type tree struct {
	spans  []Span
	parent []int32 // index of the parent span, or a parent marker
	kidOff []int32 // children of span i: kids[kidOff[i]:kidOff[i+1]]
	kids   []int32 // sorted by start within each parent
	order  []int32 // every span reachable from a root or an orphan, parents first
	lo, hi []int64 // effective interval [lo, hi): the span's, clipped to its parent's
	excl   []int64 // exclusive time, ns
	failed []bool  // a failure originates here and reaches the root (failedUp, and no child failed)
	// failedUp marks the spans that failed with every span above them:
	// a failure there reached the root (or the top of an orphan's tree).
	failedUp []bool
	// gaveUp marks the calls that a failed caller gave up on: they were
	// in flight when it ended; recovered the failed calls that their
	// caller recovered from (failures).
	gaveUp, recovered []bool
	depth             []int32 // 0 for a root or an orphan, its parent's + 1 else
	idx               map[[8]byte]int32

	// wrongTime marks the spans that end before they start: their times
	// are wrong (set to zero length at the start) and count as such, not
	// also as outside their parent.
	wrongTime []bool

	maxDepth int32 // the largest depth

	inc Incoherence // what build found in this trace
}

// build links spans (which it keeps) into trees and computes every
// reachable span's effective interval and exclusive time.
func (t *tree) build(spans []Span) {
	n := len(spans)
	t.spans = spans
	t.inc = Incoherence{}
	t.parent = resize(t.parent, n)
	t.kidOff = resize(t.kidOff, n+1)
	t.kids = resize(t.kids, n)
	t.lo, t.hi, t.excl = resize(t.lo, n), resize(t.hi, n), resize(t.excl, n)
	t.failed = resize(t.failed, n)
	t.failedUp = resize(t.failedUp, n)
	t.gaveUp = resize(t.gaveUp, n)
	t.recovered = resize(t.recovered, n)
	t.depth = resize(t.depth, n)
	t.wrongTime = resize(t.wrongTime, n)
	t.maxDepth = 0
	t.order = t.order[:0]
	for i := range spans {
		t.wrongTime[i] = spans[i].End < spans[i].Start
		if t.wrongTime[i] {
			t.inc.NegativeDuration++
			spans[i].End = spans[i].Start
		}
	}
	t.link()
	t.children()
	t.walk()
	// Spans neither reachable from a root nor from an orphan are in a
	// cycle of parent links.
	reached := len(t.order)
	for _, p := range t.parent {
		if p == parentDuplicate {
			reached++
		}
	}
	t.inc.Cycle += uint64(n - reached)
	for _, i := range t.order {
		t.excl[i] = t.exclusive(i, nil)
	}
	t.failures()
}

// failures finds where each failure originates. A failure counts where it
// originates (the span failed, none of its calls did), and only when it
// reached the root: one that a caller recovered from took its time, and
// the diagram, which makes a call's failure its caller's, would count it
// as the system's. A caller recovered from a failed call when its own span
// did not fail, or when it went on to another call after it (a retry, a
// fallback). A span that failed while a call of it was still in flight
// (the call ended after it) gave up on the call: the failure is the
// call's, a timeout, of the one that ended last (an all-to-finish waits
// for it); counted as the caller's own, the call's time, clipped at the
// give-up, was a completion.
func (t *tree) failures() {
	spans := t.spans
	clear(t.gaveUp)
	clear(t.recovered)
	for _, i := range t.order { // parents first
		own := spans[i].Failed && !t.recovered[i] || t.gaveUp[i]
		t.failedUp[i] = own
		if p := t.parent[i]; p >= 0 {
			t.failedUp[i] = own && t.failedUp[p]
		}
		t.failed[i] = t.failedUp[i]
		kids := t.kids[t.kidOff[i]:t.kidOff[i+1]]
		late := int32(-1)
		for _, c := range kids {
			// The kids are in order of start (sortByStart): the caller went
			// on after c when its last call, another, started once c ended.
			last := kids[len(kids)-1]
			t.recovered[c] = spans[c].Failed && (!spans[i].Failed || last != c && spans[last].Start >= spans[c].End)
			switch {
			case spans[c].Failed && !t.recovered[c]:
				t.failed[i] = false
			case spans[c].End > spans[i].End && (late < 0 || spans[c].End > spans[late].End):
				late = c
			}
		}
		if t.failed[i] && spans[i].Failed && late >= 0 {
			t.gaveUp[late] = true
			t.failed[i] = false
		}
	}
}

// children fills the children lists of every span: a counting sort on the
// parent, then each list by start.
func (t *tree) children() {
	spans := t.spans
	n := len(spans)
	clear(t.kidOff)
	for _, p := range t.parent {
		if p >= 0 {
			t.kidOff[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		t.kidOff[i] += t.kidOff[i-1]
	}
	next := t.excl // the fill cursor of each parent; excl is computed below
	for i := 0; i < n; i++ {
		next[i] = int64(t.kidOff[i])
	}
	for i, p := range t.parent {
		if p >= 0 {
			t.kids[next[p]] = int32(i)
			next[p]++
		}
	}
	for i := 0; i < n; i++ {
		ks := t.kids[t.kidOff[i]:t.kidOff[i+1]]
		if len(ks) > 1 {
			sortByStart(ks, spans)
		}
	}
}

// walk orders the spans reachable from a root or an orphan, parents first
// (breadth first), with their effective intervals (clipped to the
// parent's) and depths.
func (t *tree) walk() {
	spans := t.spans
	// Roots and orphans first, then breadth first.
	for i, p := range t.parent {
		if p == parentNone || p == parentMissing {
			t.order = append(t.order, int32(i))
			t.lo[i], t.hi[i] = spans[i].Start, spans[i].End
			t.depth[i] = 0
		}
	}
	for k := 0; k < len(t.order); k++ {
		i := t.order[k]
		for _, c := range t.kids[t.kidOff[i]:t.kidOff[i+1]] {
			s := &spans[c]
			// A call that a failed caller gave up on ends after it
			// without a clock skewed.
			gaveUp := spans[i].Failed && s.Start >= spans[i].Start
			if !t.wrongTime[c] && (s.Start < spans[i].Start || s.End > spans[i].End && !gaveUp) {
				t.inc.OutsideParent++
			}
			t.lo[c] = min(max(s.Start, t.lo[i]), t.hi[i])
			t.hi[c] = max(min(s.End, t.hi[i]), t.lo[c])
			t.depth[c] = t.depth[i] + 1
			t.maxDepth = max(t.maxDepth, t.depth[c])
			t.order = append(t.order, c)
		}
	}
}

// link sets parent for every span and counts roots beyond the first,
// orphans and duplicates.
func (t *tree) link() {
	spans := t.spans
	n := len(spans)
	roots := 0
	if n > smallTrace {
		if t.idx == nil {
			t.idx = make(map[[8]byte]int32, n)
		}
		clear(t.idx)
	}
	for i := range spans {
		t.parent[i] = parentNone
		if n > smallTrace {
			if _, dup := t.idx[spans[i].SpanID]; dup {
				t.parent[i] = parentDuplicate
				continue
			}
			t.idx[spans[i].SpanID] = int32(i)
			continue
		}
		for j := 0; j < i; j++ {
			if spans[j].SpanID == spans[i].SpanID && t.parent[j] != parentDuplicate {
				t.parent[i] = parentDuplicate
				break
			}
		}
	}
	for i := range spans {
		if t.parent[i] == parentDuplicate {
			t.inc.DuplicateSpan++
			continue
		}
		s := &spans[i]
		if s.IsRoot() {
			roots++
			continue
		}
		p := int32(parentMissing)
		if n > smallTrace {
			if j, ok := t.idx[s.ParentID]; ok {
				p = j
			}
		} else {
			for j := range spans {
				if spans[j].SpanID == s.ParentID && t.parent[j] != parentDuplicate {
					p = int32(j)
					break
				}
			}
		}
		if p == int32(i) {
			p = parentMissing // a span that is its own parent
		}
		if p == parentMissing {
			t.inc.MissingParent++
		}
		t.parent[i] = p
	}
	if roots == 0 {
		t.inc.NoRoot++
	} else {
		t.inc.ExtraRoots += uint64(roots - 1)
	}
}

// exclusive returns the exclusive time of span i, the length of its
// effective interval not covered by any child's; with gaps, it also
// appends the uncovered intervals to *gaps.
func (t *tree) exclusive(i int32, gaps *[]Interval) int64 {
	lo, hi := t.lo[i], t.hi[i]
	cur := lo // everything before cur is accounted for
	var excl int64
	for _, c := range t.kids[t.kidOff[i]:t.kidOff[i+1]] {
		if t.lo[c] > cur {
			excl += t.lo[c] - cur
			if gaps != nil {
				*gaps = append(*gaps, Interval{cur, t.lo[c]})
			}
		}
		cur = max(cur, t.hi[c])
	}
	if hi > cur {
		excl += hi - cur
		if gaps != nil {
			*gaps = append(*gaps, Interval{cur, hi})
		}
	}
	return excl
}

// steps groups the children of span i into sequential steps: a child that
// overlaps the current step (starts before every child of it has ended)
// by at least half the shorter of the two joins it (they run in
// parallel), any other starts the next step (follows). It calls step with
// each step's children, in order.
func (t *tree) steps(i int32, step func(kids []int32)) {
	ks := t.kids[t.kidOff[i]:t.kidOff[i+1]]
	begin := 0
	var start, end int64
	for k, c := range ks {
		if k > begin && t.follows(c, start, end) {
			step(ks[begin:k])
			begin = k
		}
		if k == begin {
			start, end = t.lo[c], t.hi[c]
		} else {
			end = max(end, t.hi[c])
		}
	}
	if len(ks) > 0 {
		step(ks[begin:])
	}
}

// follows reports whether child c, which starts no earlier than the step
// [start, end) of its siblings, comes after the step rather than in
// parallel with it: it starts when the step has ended, or overlaps it by
// less than half the shorter of the two. Of the two compositions, that
// is the one whose extent is nearer theirs, E + d − o (E the step's
// extent, d the child's duration, o their overlap): a sequence, E + d, is
// o off; an all-to-finish, max(E, d), min(E, d) − o. So sequential calls
// that seem to overlap by a little (a clock skewed between hosts by
// microseconds, a span ended just after the next call began) stay a
// sequence, and calls in flight together stay parallel.
func (t *tree) follows(c int32, start, end int64) bool {
	if t.lo[c] >= end {
		return true
	}
	overlap := min(end, t.hi[c]) - t.lo[c]
	return 2*overlap < min(end-start, t.hi[c]-t.lo[c])
}

// sortByStart sorts span indices by start, then end (insertion sort: the
// children of one span are few).
func sortByStart(ks []int32, spans []Span) {
	less := func(a, b int32) bool {
		if spans[a].Start != spans[b].Start {
			return spans[a].Start < spans[b].Start
		}
		return spans[a].End < spans[b].End
	}
	if len(ks) > 32 {
		slices.SortStableFunc(ks, func(a, b int32) int {
			switch {
			case less(a, b):
				return -1
			case less(b, a):
				return 1
			}
			return 0
		})
		return
	}
	for k := 1; k < len(ks); k++ {
		for j := k; j > 0 && less(ks[j], ks[j-1]); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Interval is the half-open interval [Start, End) of Unix nanoseconds.
type Interval struct{ Start, End int64 }

// ErrNotOneTree is returned by ExclusiveIntervals for spans that are not a
// single tree.
var ErrNotOneTree = errors.New("model: the spans are not one tree with a root")

// ExclusiveIntervals returns, for each span of one trace (in the order
// given), the intervals of its exclusive time: those of its interval, clipped
// to its parent's, that no child of it covers (Siphon, equation 1). When no
// two children of a span overlap, the intervals of all spans partition the
// root's interval, so |I_root| = Σ T_exc (Siphon, equation 2); where
// children run in parallel their overlap is exclusive time of each.
func ExclusiveIntervals(spans []Span) ([][]Interval, error) {
	var t tree
	t.build(slices.Clone(spans))
	if t.inc.NoRoot > 0 || t.inc.ExtraRoots > 0 || t.inc.MissingParent > 0 || t.inc.Cycle > 0 || t.inc.DuplicateSpan > 0 {
		return nil, ErrNotOneTree
	}
	out := make([][]Interval, len(spans))
	for _, i := range t.order {
		var gaps []Interval
		t.exclusive(i, &gaps)
		out[i] = gaps
	}
	return out, nil
}
