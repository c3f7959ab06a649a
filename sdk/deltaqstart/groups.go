// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"strconv"
	"strings"
)

// The batch form's two pieces of work beyond encoding: grouping a drain's
// starts by probe, and reading each span's sampling threshold.

// probeGroups orders the events of a drain by probe, the probes in the order
// of their first events and each probe's events in queuing order: a
// counting sort, in O(n) and with no allocation once its map and counts
// have grown to the number of probes of a drain. Only the draining goroutine
// uses it.
type probeGroups struct {
	index map[string]int32 // probe → its group, numbered by first event
	next  []int32          // per group: its size, then its next place in order
	of    []int32          // the group of each event of the batch
	order []int32          // the events' indexes, grouped
}

// newProbeGroups returns the groups of batches of at most n events.
func newProbeGroups(n int) probeGroups {
	return probeGroups{index: map[string]int32{}, of: make([]int32, n), order: make([]int32, n)}
}

// sort returns the indexes of batch's events grouped by probe. It is valid
// until reset, which must come before the next call.
func (g *probeGroups) sort(batch []event) []int32 {
	for i := range batch {
		k, ok := g.index[batch[i].probe]
		if !ok {
			k = int32(len(g.next))
			g.index[batch[i].probe] = k
			g.next = append(g.next, 0)
		}
		g.of[i] = k
		g.next[k]++
	}
	place := int32(0)
	for k, n := range g.next {
		g.next[k] = place
		place += n
	}
	order := g.order[:len(batch)]
	for i := range batch {
		k := g.of[i]
		order[g.next[k]] = int32(i)
		g.next[k]++
	}
	return order
}

// same reports whether events i and j of the last sorted batch are of one
// probe.
func (g *probeGroups) same(i, j int32) bool { return g.of[i] == g.of[j] }

// reset forgets the last batch's probes (and the strings of their names).
func (g *probeGroups) reset() {
	clear(g.index)
	g.next = g.next[:0]
}

// otThreshold returns the 56-bit rejection threshold T of ot, the value of
// the OpenTelemetry entry of a span's W3C tracestate (what follows "ot="):
// its th sub-key, 1 to 14 hex digits with the trailing zeros omitted, the
// span having been kept with probability (2⁵⁶ − T)/2⁵⁶ (OpenTelemetry,
// "TraceState: Probability Sampling"). It returns 0, which the batch form
// reads as no threshold, when ot has no valid th (only the first counts),
// and when ot's explicit randomness value rv (exactly 14 hex digits) is
// below T: that threshold would have rejected the span, so the span was not
// kept with it (the specification's "Tracestate handling requirements").
// The collector reads the deltaq.tracestate of a record per span so
// (internal/contract, Threshold); this module imports nothing of the
// collector's, and the tests check both on the same cases. th:0 is 0 too:
// kept with probability 1, as a span without a threshold.
func otThreshold(ot string) uint64 {
	var th, rv uint64
	var hasTh, hasRv, seenTh bool
	// ot is key:value pairs separated by ';'.
	for ot != "" {
		var kv string
		kv, ot, _ = strings.Cut(ot, ";")
		switch {
		case len(kv) < 3:
		case kv[:3] == "th:" && !seenTh:
			seenTh = true
			th, hasTh = hexThreshold(kv[3:])
		case kv[:3] == "rv:" && len(kv) == 3+14:
			rv, hasRv = hexThreshold(kv[3:])
		}
	}
	if !hasTh || hasRv && rv < th {
		return 0
	}
	return th
}

// hexThreshold parses a th (or rv) value: 1 to 14 hex digits, the 56-bit
// value with its trailing zeros omitted.
func hexThreshold(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 14 {
		return 0, false
	}
	// Upper case too, as contrib's sampling package accepts it; no sign.
	t, err := strconv.ParseUint(s, 16, 64)
	return t << (4 * (14 - len(s))), err == nil
}
