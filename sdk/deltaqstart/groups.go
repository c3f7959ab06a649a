// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

// The batch form's piece of work beyond encoding: grouping a drain's starts
// by probe (each span's sampling threshold is otsampling's).

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
