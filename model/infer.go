// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"container/heap"
	"math"
	"slices"
	"sort"
	"strings"
)

// maxChains caps the distinct inferred chains a report keeps.
const maxChains = 1000

// Inferred is one inferred chain of missing parents, with the number of
// orphan groups it explained. Operations are "service.operation".
type Inferred struct {
	// Ancestor is the operation of the known span the chain hangs from,
	// or "" when the trace has no root and the chain starts with a root
	// operation.
	Ancestor string `json:"ancestor"`
	// Missing are the inferred missing spans, outermost first; the last
	// is the orphans' parent.
	Missing []string `json:"missing"`
	// Orphans are the operations of the spans whose parent was missing
	// (siblings that shared it), sorted.
	Orphans []string `json:"orphans"`
	// Probability is that of the chain under the learned transition
	// frequencies: the product of P(child | parent) along it.
	Probability float64 `json:"probability"`
	Count       uint64  `json:"count"`
}

// InferenceReport is what inference found in the held incoherent traces.
type InferenceReport struct {
	// Groups counts the sets of orphans that shared a missing parent.
	Groups uint64 `json:"groups"`
	// Resolved groups got a chain; Unresolved ones had no path in the
	// learned transitions (an operation never seen in a coherent trace).
	Resolved   uint64 `json:"resolved"`
	Unresolved uint64 `json:"unresolved"`
	// Chains, most frequent first; ChainsDropped counts groups whose chain
	// was not kept (beyond maxChains distinct chains).
	Chains        []Inferred `json:"chains"`
	ChainsDropped uint64     `json:"chains_dropped"`
}

// inference holds the transition statistics: the operations plus a
// virtual start whose successors are the root operations.
type inference struct {
	l     *Learner
	start int32               // the virtual start's index, len(opList)
	out   []map[int32]float64 // out[p][c]: transitions p → c
	total []float64           // Σ_c out[p][c]
	cache map[int32]*paths
	chain map[string]*Inferred
	rep   InferenceReport
}

// paths are the shortest paths of at least one transition from a source.
type paths struct {
	dist []float64
	prev []int32 // predecessor on the path; −1 for a first step
}

// infer runs inference over the held traces; with Config.Infer the
// repaired ones are learned.
func (l *Learner) infer() *inference {
	nOps := len(l.opList)
	inf := &inference{l: l, start: int32(nOps), out: make([]map[int32]float64, nOps+1),
		total: make([]float64, nOps+1), cache: map[int32]*paths{}, chain: map[string]*Inferred{}}
	for _, nd := range l.nodes {
		from := inf.start
		if nd.parent >= 0 {
			from = l.nodes[nd.parent].op
		}
		if inf.out[from] == nil {
			inf.out[from] = map[int32]float64{}
		}
		inf.out[from][nd.op] += float64(nd.instances)
		inf.total[from] += float64(nd.instances)
	}
	held := l.held
	l.held = nil
	for _, ht := range held {
		spans := inf.repair(ht.spans)
		if l.cfg.Infer && spans != nil {
			l.learn(spans, len(ht.spans))
		}
	}
	for _, c := range inf.chain {
		inf.rep.Chains = append(inf.rep.Chains, *c)
	}
	sort.Slice(inf.rep.Chains, func(i, j int) bool {
		a, b := inf.rep.Chains[i], inf.rep.Chains[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return strings.Join(a.Missing, ",") < strings.Join(b.Missing, ",")
	})
	return inf
}

// Inference returns what Finish inferred.
func (l *Learner) Inference() InferenceReport {
	if l.inf == nil {
		return InferenceReport{}
	}
	return l.inf.rep
}

// weight is −log P(c | p), +Inf for a transition never seen.
func (inf *inference) weight(p, c int32) float64 {
	n := inf.out[p][c]
	if n == 0 {
		return math.Inf(1)
	}
	return -math.Log(n / inf.total[p])
}

// repair infers the missing parents of every orphan group of one trace,
// reports them and returns the spans with the inferred ones appended (each
// spanning its orphans' hull), or nil when the trace has no root or a group
// could not be resolved.
func (inf *inference) repair(spans []Span) []Span {
	l := inf.l
	t := &l.t
	t.build(spans)
	n := len(spans)
	rooted := make([]bool, n)
	for _, i := range t.order {
		if p := t.parent[i]; p == parentNone || (p >= 0 && rooted[p]) {
			rooted[i] = true
		}
	}
	// Orphan groups by the missing parent's id, in order of appearance.
	groups := map[[8]byte][]int32{}
	var ids [][8]byte
	for i, p := range t.parent {
		if p != parentMissing {
			continue
		}
		id := spans[i].ParentID
		if _, ok := groups[id]; !ok {
			ids = append(ids, id)
		}
		groups[id] = append(groups[id], int32(i))
	}
	type fix struct {
		parent [8]byte // the known ancestor's span id
		chain  []int32 // ops of the missing spans
		id     [8]byte // the last one's span id (the orphans' parent)
		lo, hi int64
	}
	var fixes []fix
	ok := true
	for _, id := range ids {
		g := groups[id]
		inf.rep.Groups++
		lo, hi := spans[g[0]].Start, spans[g[0]].End
		orphanOps := make([]int32, len(g))
		for k, i := range g {
			lo, hi = min(lo, spans[i].Start), max(hi, spans[i].End)
			orphanOps[k] = inf.opIndex(&spans[i])
		}
		// Candidates: known spans whose interval holds the orphans', else
		// the roots, else the virtual start.
		var cands []int32
		for _, i := range t.order {
			if rooted[i] && t.lo[i] <= lo && t.hi[i] >= hi {
				cands = append(cands, i)
			}
		}
		if len(cands) == 0 {
			for _, i := range t.order {
				if t.parent[i] == parentNone {
					cands = append(cands, i)
				}
			}
		}
		bestCost, bestCand, bestM := math.Inf(1), int32(-1), int32(-1)
		try := func(cand, src int32) {
			if src < 0 || slices.Contains(orphanOps, -1) {
				return // an operation no coherent trace had
			}
			ps := inf.paths(src)
			for m := range ps.dist {
				c := ps.dist[m]
				for _, o := range orphanOps {
					c += inf.weight(int32(m), o)
				}
				// Ties go to the later (deeper) candidate.
				if c <= bestCost && !math.IsInf(c, 1) {
					bestCost, bestCand, bestM = c, cand, int32(m)
				}
			}
		}
		if len(cands) == 0 {
			try(-1, inf.start)
		}
		for _, c := range cands {
			try(c, inf.opIndex(&spans[c]))
		}
		if bestM < 0 {
			inf.rep.Unresolved++
			ok = false
			continue
		}
		inf.rep.Resolved++
		src := inf.start
		if bestCand >= 0 {
			src = inf.opIndex(&spans[bestCand])
		}
		ps := inf.paths(src)
		var chain []int32
		for m := bestM; m >= 0; m = ps.prev[m] {
			chain = append(chain, m)
			if len(chain) > len(ps.dist) {
				break // a cycle in prev cannot happen; guard anyway
			}
		}
		for a, b := 0, len(chain)-1; a < b; a, b = a+1, b-1 {
			chain[a], chain[b] = chain[b], chain[a]
		}
		inf.report(bestCand, spans, chain, orphanOps, math.Exp(-bestCost))
		if bestCand < 0 {
			ok = false // no root to hang it from: reported, not learned
			continue
		}
		fixes = append(fixes, fix{parent: spans[bestCand].SpanID, chain: chain, id: id, lo: lo, hi: hi})
	}
	if !ok || !l.cfg.Infer {
		return nil
	}
	out := append([]Span(nil), spans...)
	var serial uint32
	for _, f := range fixes {
		parent := f.parent
		for k, o := range f.chain {
			id := f.id
			if k < len(f.chain)-1 {
				serial++
				id = [8]byte{0xde, 0x17, 0xa0, 0, byte(serial >> 24), byte(serial >> 16), byte(serial >> 8), byte(serial)}
			}
			op := l.opList[o]
			out = append(out, Span{TraceID: spans[0].TraceID, SpanID: id, ParentID: parent,
				Service: op.service, Name: op.name, Start: f.lo, End: f.hi})
			parent = id
		}
	}
	return out
}

// opIndex returns the index of the span's operation, −1 if no coherent
// trace had it (inference adds no operations: the transitions are fixed).
func (inf *inference) opIndex(s *Span) int32 {
	if id, ok := inf.l.ops[op{s.Service, s.Name}]; ok && id < inf.start {
		return id
	}
	return -1
}

// report aggregates one inferred chain.
func (inf *inference) report(cand int32, spans []Span, chain, orphans []int32, p float64) {
	l := inf.l
	name := func(o int32) string { return Key(l.opList[o].service, l.opList[o].name) }
	in := Inferred{Probability: p}
	if cand >= 0 {
		in.Ancestor = Key(spans[cand].Service, spans[cand].Name)
	}
	for _, o := range chain {
		in.Missing = append(in.Missing, name(o))
	}
	for _, o := range orphans {
		in.Orphans = append(in.Orphans, name(o))
	}
	sort.Strings(in.Orphans)
	key := in.Ancestor + "\x00" + strings.Join(in.Missing, "\x01") + "\x00" + strings.Join(in.Orphans, "\x01")
	if c, ok := inf.chain[key]; ok {
		c.Count++
		return
	}
	if len(inf.chain) >= maxChains {
		inf.rep.ChainsDropped++
		return
	}
	in.Count = 1
	inf.chain[key] = &in
}

// paths returns (cached) the shortest paths from src of at least one
// transition, with weights −log P(c | p) (Dijkstra).
func (inf *inference) paths(src int32) *paths {
	if ps, ok := inf.cache[src]; ok {
		return ps
	}
	n := len(inf.out)
	ps := &paths{dist: make([]float64, n), prev: make([]int32, n)}
	for i := range ps.dist {
		ps.dist[i] = math.Inf(1)
		ps.prev[i] = -1
	}
	q := &distHeap{}
	for c := range inf.out[src] {
		if w := inf.weight(src, c); w < ps.dist[c] {
			ps.dist[c] = w
			heap.Push(q, distItem{c, w})
		}
	}
	done := make([]bool, n)
	for q.Len() > 0 {
		it := heap.Pop(q).(distItem)
		if done[it.node] {
			continue
		}
		done[it.node] = true
		for c := range inf.out[it.node] {
			if d := it.dist + inf.weight(it.node, c); d < ps.dist[c] {
				ps.dist[c] = d
				ps.prev[c] = it.node
				heap.Push(q, distItem{c, d})
			}
		}
	}
	inf.cache[src] = ps
	return ps
}

type distItem struct {
	node int32
	dist float64
}

type distHeap []distItem

func (h distHeap) Len() int           { return len(h) }
func (h distHeap) Less(i, j int) bool { return h[i].dist < h[j].dist }
func (h distHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *distHeap) Push(x any)        { *h = append(*h, x.(distItem)) }
func (h *distHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}
