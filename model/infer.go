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

// maxChains caps the distinct inferred chains a report keeps;
// maxChainDepth the transitions of the paths the posterior sums over.
const (
	maxChains     = 1000
	maxChainDepth = 32
)

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
	// Probability is the posterior probability that the chain is the
	// missing one given the orphans: with the learned transition
	// frequencies P(c | p), a hypothesis is an ancestor candidate a and a
	// path a → m₁ → … → m of operations, of weight
	// w = Π P(along the path) · Π_o P(o | m) over the orphans' operations
	// o; Probability = w(chain) / Σ w over every candidate and every path of
	// at most maxChainDepth transitions. A chain that is the only way to
	// the orphans' operations is certain (1). With several orphan groups in
	// a trace, each group's is its own.
	Probability float64 `json:"probability"`
	// PathProbability is w(chain) itself: the product of P(child | parent)
	// along the chain and P(orphan | last).
	PathProbability float64 `json:"path_probability"`
	Count           uint64  `json:"count"`
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
	sums  map[int32][]float64 // pathSums by source
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
		total: make([]float64, nOps+1), cache: map[int32]*paths{}, sums: map[int32][]float64{}, chain: map[string]*Inferred{}}
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

// fix is one inferred chain of missing spans, to splice into a trace.
type fix struct {
	parent [8]byte // the known ancestor's span id
	chain  []int32 // ops of the missing spans
	id     [8]byte // the last one's span id (the orphans' parent)
	lo, hi int64
}

// repair infers the missing parents of every orphan group of one trace,
// reports them and returns the spans with the inferred ones appended (each
// spanning its orphans' hull), or nil when the trace has no root or a group
// could not be resolved.
func (inf *inference) repair(spans []Span) []Span {
	t := &inf.l.t
	t.build(spans)
	rooted := make([]bool, len(spans))
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
	var fixes []fix
	ok := true
	for _, id := range ids {
		inf.rep.Groups++
		f, resolved, hung := inf.resolve(spans, rooted, groups[id])
		if !resolved {
			inf.rep.Unresolved++
			ok = false
			continue
		}
		inf.rep.Resolved++
		if !hung {
			ok = false // no root to hang it from: reported, not learned
			continue
		}
		f.id = id
		fixes = append(fixes, f)
	}
	if !ok || !inf.l.cfg.Infer {
		return nil
	}
	return inf.splice(spans, fixes)
}

// resolve infers the chain of missing spans above one orphan group g: the
// most likely path, over the candidate ancestors, from an ancestor's
// operation to an operation whose calls explain the orphans' operations. It
// reports the chain; resolved is false when no path exists, hung false
// when the chain hangs from the virtual start (a trace without a root).
func (inf *inference) resolve(spans []Span, rooted []bool, g []int32) (f fix, resolved, hung bool) {
	lo, hi := spans[g[0]].Start, spans[g[0]].End
	orphanOps := make([]int32, len(g))
	for k, i := range g {
		lo, hi = min(lo, spans[i].Start), max(hi, spans[i].End)
		orphanOps[k] = inf.opIndex(&spans[i])
	}
	if slices.Contains(orphanOps, -1) {
		return fix{}, false, false // an operation no coherent trace had
	}
	cands := inf.candidates(spans, rooted, lo, hi)
	bestCost, bestCand, bestM := math.Inf(1), int32(-1), int32(-1)
	evidence := 0.0 // Σ over candidates and paths of P(path)·P(orphans | its end)
	for _, cand := range cands {
		src := inf.start
		if cand >= 0 {
			src = inf.opIndex(&spans[cand])
		}
		if src < 0 {
			continue
		}
		ps, sums := inf.paths(src), inf.pathSums(src)
		for m := range ps.dist {
			like := 0.0 // −log P(orphans | m)
			for _, o := range orphanOps {
				like += inf.weight(int32(m), o)
			}
			evidence += sums[m] * math.Exp(-like)
			// Ties go to the later (deeper) candidate.
			if c := ps.dist[m] + like; c <= bestCost && !math.IsInf(c, 1) {
				bestCost, bestCand, bestM = c, cand, int32(m)
			}
		}
	}
	if bestM < 0 {
		return fix{}, false, false
	}
	src := inf.start
	if bestCand >= 0 {
		src = inf.opIndex(&spans[bestCand])
	}
	ps := inf.paths(src)
	var chain []int32
	for m := bestM; m >= 0 && len(chain) <= len(ps.dist); m = ps.prev[m] {
		chain = append(chain, m)
	}
	slices.Reverse(chain)
	forward := math.Exp(-bestCost)
	inf.report(bestCand, spans, chain, orphanOps, forward, min(1, forward/evidence))
	if bestCand < 0 {
		return fix{}, true, false
	}
	return fix{parent: spans[bestCand].SpanID, chain: chain, lo: lo, hi: hi}, true, true
}

// candidates returns the spans a missing chain may hang from: the rooted
// known spans whose interval holds [lo, hi], else the roots, else −1 for
// the virtual start.
func (inf *inference) candidates(spans []Span, rooted []bool, lo, hi int64) []int32 {
	t := &inf.l.t
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
	if len(cands) == 0 {
		cands = append(cands, -1)
	}
	return cands
}

// splice returns the spans with the inferred chains appended, each
// inferred span covering its orphans' hull.
func (inf *inference) splice(spans []Span, fixes []fix) []Span {
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
			op := inf.l.opList[o]
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

// report aggregates one inferred chain, with its posterior probability and
// that of its path.
func (inf *inference) report(cand int32, spans []Span, chain, orphans []int32, path, posterior float64) {
	l := inf.l
	name := func(o int32) string { return Key(l.opList[o].service, l.opList[o].name) }
	in := Inferred{Probability: posterior, PathProbability: path}
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

// pathSums returns (cached) for every operation m the sum over all paths
// src → … → m of one to maxChainDepth transitions of the product of their
// P(c | p): v₁ = P(· | src), v_{k+1}(c) = Σ_p v_k(p)·P(c | p), Σ_k v_k.
func (inf *inference) pathSums(src int32) []float64 {
	if s, ok := inf.sums[src]; ok {
		return s
	}
	n := len(inf.out)
	sum, v, next := make([]float64, n), make([]float64, n), make([]float64, n)
	for c, cnt := range inf.out[src] {
		v[c] = cnt / inf.total[src]
	}
	for k := 0; k < maxChainDepth; k++ {
		mass := 0.0
		clear(next)
		for p, vp := range v {
			if vp == 0 {
				continue
			}
			sum[p] += vp
			mass += vp
			for c, cnt := range inf.out[p] {
				next[c] += vp * cnt / inf.total[p]
			}
		}
		if mass < 1e-300 {
			break
		}
		v, next = next, v
	}
	inf.sums[src] = sum
	return sum
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
