// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"time"
)

// Config bounds what a Learner holds. The zero value of a field takes its
// default.
type Config struct {
	// Grace is how much trace time (the latest span end seen) must pass
	// after a trace's last span arrived before the trace is closed.
	Grace time.Duration
	// MaxOpenTraces caps the traces being assembled, MaxOpenSpans their
	// spans; beyond either the trace closest to its deadline is closed
	// early (Stats.Evicted).
	MaxOpenTraces int
	MaxOpenSpans  int
	// MaxSpansPerTrace caps one trace; further spans are dropped
	// (Stats.SpansDropped).
	MaxSpansPerTrace int
	// MaxDepth caps the depth of a trace (its spans' calls within calls,
	// a root at depth 0): a deeper trace is left out (Stats.TooDeep), since
	// each level is a definition of the diagram and its evaluation grows
	// with the depth's square.
	MaxDepth int
	// MaxNodes caps the calling-context tree; a trace that would add a
	// node beyond it is left out (Stats.NodeCap).
	MaxNodes int
	// MaxPatterns caps the distinct execution patterns of one node; an
	// instance of a further pattern keeps its exclusive time but not its
	// pattern (Stats.PatternsDropped).
	MaxPatterns int
	// MaxHeldSpans caps the spans of the incoherent traces held until
	// Finish for inference (Stats.NotHeld counts the traces not held).
	MaxHeldSpans int
	// Infer adds the traces whose missing parents were inferred to the
	// model (their inferred spans contribute calls and patterns, not
	// exclusive times).
	Infer bool
}

// Defaults of Config.
const (
	DefaultGrace            = 5 * time.Second
	DefaultMaxOpenTraces    = 100_000
	DefaultMaxOpenSpans     = 1_000_000
	DefaultMaxSpansPerTrace = 10_000
	DefaultMaxDepth         = 64
	DefaultMaxNodes         = 10_000
	DefaultMaxPatterns      = 32
	DefaultMaxHeldSpans     = 200_000
)

// MaxDepthLimit is the largest MaxDepth accepted.
const MaxDepthLimit = 1000

// withDefaults returns c with defaults for zero fields, or an error naming
// a negative one.
func (c Config) withDefaults() (Config, error) {
	set := func(name string, v *int, def int) error {
		switch {
		case *v < 0:
			return fmt.Errorf("model: %s = %d must be ≥ 0 (0: default %d)", name, *v, def)
		case *v == 0:
			*v = def
		}
		return nil
	}
	if c.Grace < 0 {
		return c, fmt.Errorf("model: Grace = %v must be ≥ 0", c.Grace)
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.MaxDepth > MaxDepthLimit {
		return c, fmt.Errorf("model: MaxDepth = %d must be at most %d", c.MaxDepth, MaxDepthLimit)
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxOpenTraces", &c.MaxOpenTraces, DefaultMaxOpenTraces},
		{"MaxOpenSpans", &c.MaxOpenSpans, DefaultMaxOpenSpans},
		{"MaxSpansPerTrace", &c.MaxSpansPerTrace, DefaultMaxSpansPerTrace},
		{"MaxDepth", &c.MaxDepth, DefaultMaxDepth},
		{"MaxNodes", &c.MaxNodes, DefaultMaxNodes},
		{"MaxPatterns", &c.MaxPatterns, DefaultMaxPatterns},
		{"MaxHeldSpans", &c.MaxHeldSpans, DefaultMaxHeldSpans},
	} {
		if err := set(f.name, f.v, f.def); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Incoherence counts what is wrong with traces, by kind.
type Incoherence struct {
	// MissingParent: spans whose parent span never arrived (orphans).
	MissingParent uint64 `json:"missing_parent"`
	// OutsideParent: spans that start before or end after their parent
	// (clipped to it); one that ends before it starts is counted as a
	// NegativeDuration only (its times are wrong, not its clock skewed),
	// and a call that ends after its caller failed is one the caller gave
	// up on (a timeout), not counted.
	OutsideParent uint64 `json:"outside_parent"`
	// NoRoot: traces with no root span after the grace period.
	NoRoot uint64 `json:"no_root"`
	// ExtraRoots: root spans beyond the first of a trace (each is learned
	// as its own root operation).
	ExtraRoots uint64 `json:"extra_roots"`
	// DuplicateSpan: spans whose id an earlier span of the trace had.
	DuplicateSpan uint64 `json:"duplicate_span"`
	// NegativeDuration: spans that end before they start: their trace's
	// timestamps are wrong, and it is left out.
	NegativeDuration uint64 `json:"negative_duration"`
	// Cycle: spans whose parent links form a cycle.
	Cycle uint64 `json:"cycle"`
}

func (a *Incoherence) add(b Incoherence) {
	a.MissingParent += b.MissingParent
	a.OutsideParent += b.OutsideParent
	a.NoRoot += b.NoRoot
	a.ExtraRoots += b.ExtraRoots
	a.DuplicateSpan += b.DuplicateSpan
	a.NegativeDuration += b.NegativeDuration
	a.Cycle += b.Cycle
}

// excludes reports whether the kinds found make a trace unfit to learn
// from as it is. A span that ends before it starts has no duration to
// learn: taken as 0, it would make its operation, and every one it
// enters, look faster than it is.
func (a Incoherence) excludes() bool {
	return a.MissingParent > 0 || a.NoRoot > 0 || a.Cycle > 0 || a.NegativeDuration > 0
}

// Stats counts what a Learner did.
type Stats struct {
	Spans           uint64 `json:"spans"`
	Traces          uint64 `json:"traces"`           // closed
	Learned         uint64 `json:"learned"`          // traces in the model
	Excluded        uint64 `json:"excluded"`         // incoherent traces left out
	Repaired        uint64 `json:"repaired"`         // incoherent traces learned with inferred parents (Config.Infer)
	Evicted         uint64 `json:"evicted"`          // traces closed early: MaxOpenTraces
	SpansDropped    uint64 `json:"spans_dropped"`    // MaxSpansPerTrace
	NodeCap         uint64 `json:"node_cap"`         // traces left out: MaxNodes
	TooDeep         uint64 `json:"too_deep"`         // traces left out: MaxDepth
	PatternsDropped uint64 `json:"patterns_dropped"` // instances whose pattern was not kept: MaxPatterns
	NotHeld         uint64 `json:"not_held"`         // incoherent traces not held for inference: MaxHeldSpans
	// Reopened counts traces that received a span after they were closed
	// (among the last MaxOpenTraces closed): the grace was too short for
	// the file, or the trace was closed early.
	Reopened    uint64      `json:"reopened"`
	Incoherence Incoherence `json:"incoherence"`
}

// openTrace is a trace being assembled.
type openTrace struct {
	id       [16]byte
	spans    []Span
	deadline int64 // trace time after which it closes
	touched  bool  // the record being read added to it
}

// queued is an open trace in the queue, with its deadline when queued.
// Every deadline is the watermark at the trace's last span plus the grace,
// so the queue is in deadline order by construction: a trace whose
// deadline moved on since is queued again at the back when it reaches the
// front.
type queued struct {
	t        *openTrace
	deadline int64
}

// op is an interned service and operation.
type op struct{ service, name string }

// ctxKey identifies a node of the calling-context tree: its parent node
// (−1 for a root) and its operation.
type ctxKey struct{ parent, op int32 }

// nodeStats is what is learned of one node.
type nodeStats struct {
	parent    int32
	op        int32
	instances uint64 // spans of the node, inferred ones included
	calledIn  uint64 // parent instances that called it at least once
	excl      Sketch // exclusive times of instances where no failure originated that reached the root
	exclFail  uint64 // instances where a failure originated and reached the root
	dur       Sketch // durations of successful instances
	durFail   uint64 // failed instances
	patIndex  map[string]int32
	patterns  []patternStats
}

// patternStats is one execution pattern of a node: steps of child nodes,
// with the instances that had it and those of them that did not fail with
// the root.
type patternStats struct {
	steps [][]int32
	count uint64
	ok    uint64
}

// Learner assembles spans into traces and learns the calling-context tree,
// exclusive times and execution patterns from them. It is not safe for
// concurrent use.
type Learner struct {
	cfg    Config
	grace  int64
	open   map[[16]byte]*openTrace
	queue  []queued // open traces by the deadline they had when queued
	head   int      // queue[head:] is the queue
	free   []*openTrace
	mark   int64 // watermark: the latest span end of the records read
	latest int64 // the latest span end read, the current record's included
	// touched are the traces the current record added to.
	touched []*openTrace
	// closed holds the ids of the last MaxOpenTraces traces closed, ring
	// in order of closing (next is the slot to reuse), so that a span of a
	// trace closed too soon is noticed (Stats.Reopened).
	closed map[[16]byte]struct{}
	ring   [][16]byte
	next   int
	// group, groupOff and groupBuf are groupByTrace's buffers.
	group    map[[16]byte]int32
	groupOff []int32
	groupBuf []Span
	ops      map[op]int32
	opList   []op
	ctx      map[ctxKey]int32
	nodes    []*nodeStats
	held     []*openTrace // incoherent traces kept for inference
	stats    Stats

	openSpans, heldSpans int // spans of the open and of the held traces

	t       tree
	nodeOf  []int32 // node of each span of the trace being learned
	key     []byte
	stepBuf []int32
	called  []int32
	inf     *inference // set by Finish

	// cuts are the first trace each bound cut, by bound.
	cuts []Cut
}

// Cut names the first trace a bound cut: Bound is the Config field
// (MaxDepth, MaxNodes, MaxSpansPerTrace), Detail says what the trace had.
type Cut struct {
	Bound string `json:"bound"`
	// Trace is the trace id, in hex.
	Trace  string `json:"trace"`
	Detail string `json:"detail"`
}

// cut records the first trace a bound cut.
func (l *Learner) cut(bound string, trace [16]byte, detail string) {
	for _, c := range l.cuts {
		if c.Bound == bound {
			return
		}
	}
	l.cuts = append(l.cuts, Cut{Bound: bound, Trace: hex.EncodeToString(trace[:]), Detail: detail})
}

// Cuts returns the first trace each bound cut (MaxDepth, MaxNodes,
// MaxSpansPerTrace), in the order they happened.
func (l *Learner) Cuts() []Cut { return l.cuts }

// NewLearner returns a Learner with the bounds of cfg.
func NewLearner(cfg Config) (*Learner, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Learner{
		cfg:    cfg,
		grace:  int64(cfg.Grace),
		open:   map[[16]byte]*openTrace{},
		closed: map[[16]byte]struct{}{},
		ops:    map[op]int32{},
		ctx:    map[ctxKey]int32{},
	}, nil
}

// Stats returns the counts so far.
func (l *Learner) Stats() Stats { return l.stats }

// Add takes one span as a record of its own (AddRecord): the trace clock
// moves to its end, and traces whose grace period has passed are closed
// and learned before it returns. A span read within a larger record must
// go in with that record's AddRecord, not here.
func (l *Learner) Add(s *Span) {
	l.add(s)
	l.endRecord()
}

// AddRecord takes the spans of one record: a request or document of a
// trace file, whatever the order in which it lists resources and spans. The
// record is taken whole before the trace clock moves: its spans join their
// traces, then the clock moves to the latest span end of the record and
// the traces whose grace has passed since the record are closed. So a
// record that lists spans by service (as exporters and trace backends
// write them) is learned as if it listed them by trace; the grace applies
// between records.
//
// The spans are grouped by trace id in place (in the order of each trace's
// first span, skipped when they already are), and the open-trace bounds are enforced only between
// traces of the record: a record with more traces than MaxOpenTraces, or
// more spans than MaxOpenSpans, closes whole traces of itself early
// (Stats.Evicted), which is learned correctly unless a trace continues in a
// later record. Memory: the caller's spans, plus the open traces (at most
// MaxOpenSpans + MaxSpansPerTrace spans, about 100 bytes each).
func (l *Learner) AddRecord(spans []Span) {
	l.groupByTrace(spans)
	for i := range spans {
		l.add(&spans[i])
	}
	l.endRecord()
}

// groupByTrace groups spans by trace id in place, the traces in the order
// of their first span, keeping the order of each trace's spans; spans
// already grouped are left as they are. It is a counting sort over the
// traces (two map look-ups a span), through reused buffers.
func (l *Learner) groupByTrace(spans []Span) {
	grouped := true
	for i := 1; i < len(spans) && grouped; i++ {
		grouped = spans[i].TraceID == spans[i-1].TraceID || bytes.Compare(spans[i-1].TraceID[:], spans[i].TraceID[:]) < 0
	}
	if grouped {
		return
	}
	if l.group == nil {
		l.group = map[[16]byte]int32{}
	}
	clear(l.group)
	l.groupOff = l.groupOff[:0]
	for i := range spans {
		g, ok := l.group[spans[i].TraceID]
		if !ok {
			g = int32(len(l.groupOff))
			l.group[spans[i].TraceID] = g
			l.groupOff = append(l.groupOff, 0)
		}
		l.groupOff[g]++
	}
	at := int32(0)
	for g, c := range l.groupOff {
		l.groupOff[g], at = at, at+c
	}
	l.groupBuf = resize(l.groupBuf, len(spans))
	for i := range spans {
		g := l.group[spans[i].TraceID]
		l.groupBuf[l.groupOff[g]] = spans[i]
		l.groupOff[g]++
	}
	copy(spans, l.groupBuf)
	clear(l.groupBuf) // drop the names it holds
}

// add puts a span in its trace without moving the trace clock; a new trace
// first makes room within the open-trace bounds.
func (l *Learner) add(s *Span) {
	l.stats.Spans++
	t := l.open[s.TraceID]
	if t == nil {
		for len(l.open) > 0 && (len(l.open) >= l.cfg.MaxOpenTraces || l.openSpans > l.cfg.MaxOpenSpans) {
			l.stats.Evicted++
			l.close(l.popFront())
		}
		if _, again := l.closed[s.TraceID]; again {
			l.stats.Reopened++
			delete(l.closed, s.TraceID)
		}
		t = l.newTrace(s.TraceID)
	}
	if !t.touched {
		t.touched = true
		l.touched = append(l.touched, t)
	}
	if len(t.spans) >= l.cfg.MaxSpansPerTrace {
		l.stats.SpansDropped++
		l.cut("MaxSpansPerTrace", s.TraceID, fmt.Sprintf("more than %d spans", l.cfg.MaxSpansPerTrace))
	} else {
		t.spans = append(t.spans, *s)
		l.openSpans++
		// Share the names of known operations rather than hold the
		// caller's copies while the trace is open.
		if id, ok := l.ops[op{s.Service, s.Name}]; ok {
			o := &l.opList[id]
			t.spans[len(t.spans)-1].Service, t.spans[len(t.spans)-1].Name = o.service, o.name
		}
	}
	l.latest = max(l.latest, s.End)
}

// endRecord moves the trace clock to the latest span end read, restarts
// the grace of the traces the record added to, and closes the traces whose
// grace has passed.
func (l *Learner) endRecord() {
	// The grace runs from the watermark, not the span's end, so that a
	// span from an earlier part of the corpus (another file) does not
	// close its trace at once.
	l.mark = l.latest
	for _, t := range l.touched {
		if t.touched {
			t.touched = false
			// Saturated: a watermark within the grace of the largest
			// time (a span ending in the year 2262) wrapped the deadline
			// negative, closing each trace at the end of its record.
			t.deadline = l.mark + min(l.grace, math.MaxInt64-l.mark)
		}
	}
	clear(l.touched)
	l.touched = l.touched[:0]
	for l.head < len(l.queue) && l.queue[l.head].deadline < l.mark {
		if t := l.pop(); t != nil {
			l.close(t)
		}
	}
	for l.openSpans > l.cfg.MaxOpenSpans {
		l.stats.Evicted++
		l.close(l.popFront())
	}
}

// newTrace opens a trace, reusing a closed one's memory.
func (l *Learner) newTrace(id [16]byte) *openTrace {
	var t *openTrace
	if n := len(l.free); n > 0 {
		t = l.free[n-1]
		l.free = l.free[:n-1]
		t.spans = t.spans[:0]
	} else {
		t = &openTrace{}
	}
	t.id, t.deadline = id, l.mark+l.grace
	l.open[id] = t
	l.queue = append(l.queue, queued{t, t.deadline})
	return t
}

// close learns a trace removed from the heap and recycles it, unless it
// is held for inference.
func (l *Learner) close(t *openTrace) {
	delete(l.open, t.id)
	t.touched = false
	if len(l.ring) < l.cfg.MaxOpenTraces {
		l.ring = append(l.ring, t.id)
	} else {
		delete(l.closed, l.ring[l.next])
		l.ring[l.next] = t.id
		l.next = (l.next + 1) % len(l.ring)
	}
	l.closed[t.id] = struct{}{}
	l.openSpans -= len(t.spans)
	l.stats.Traces++
	if l.learn(t.spans, len(t.spans)) {
		l.free = append(l.free, t)
	}
}

// learn builds the tree of a trace whose first real spans are genuine
// (the rest inferred) and adds it to the model. It returns false when it
// kept the spans (an incoherent trace held for inference).
func (l *Learner) learn(spans []Span, real int) bool {
	t := &l.t
	t.build(spans)
	if real == len(spans) {
		l.stats.Incoherence.add(t.inc)
	}
	if int(t.maxDepth) > l.cfg.MaxDepth {
		l.cut("MaxDepth", spans[0].TraceID, fmt.Sprintf("%d calls deep", t.maxDepth))
		l.stats.TooDeep++
		return true
	}
	if t.inc.excludes() {
		if real < len(spans) {
			return true // an inferred repair that still fails: drop it
		}
		l.stats.Excluded++
		if t.inc.MissingParent == 0 || l.heldSpans+len(spans) > l.cfg.MaxHeldSpans {
			if t.inc.MissingParent > 0 {
				l.stats.NotHeld++
			}
			return true
		}
		l.held = append(l.held, &openTrace{spans: spans})
		l.heldSpans += len(spans)
		return false
	}
	if !l.assign() {
		l.stats.NodeCap++
		l.cut("MaxNodes", spans[0].TraceID, fmt.Sprintf("operations beyond the %d nodes of the model", l.cfg.MaxNodes))
		return true
	}
	for _, i := range t.order {
		l.record(i, int(i) >= real)
	}
	l.stats.Learned++
	if real < len(spans) {
		l.stats.Repaired++
	}
	return true
}

// assign finds or creates the node of every span of the tree, top down;
// false when MaxNodes would be exceeded (nothing is then recorded).
func (l *Learner) assign() bool {
	t := &l.t
	l.nodeOf = resize(l.nodeOf, len(t.spans))
	for _, i := range t.order {
		s := &t.spans[i]
		parent := int32(-1)
		if p := t.parent[i]; p >= 0 {
			parent = l.nodeOf[p]
		}
		// An operation not seen yet needs a new node: it is interned only
		// within MaxNodes, so that the operations are bounded too.
		o, known := l.ops[op{s.Service, s.Name}]
		var n int32
		ok := false
		if known {
			n, ok = l.ctx[ctxKey{parent, o}]
		}
		if !ok {
			if len(l.nodes) >= l.cfg.MaxNodes {
				return false
			}
			if !known {
				o = l.opID(s.Service, s.Name)
			}
			n = int32(len(l.nodes))
			l.ctx[ctxKey{parent, o}] = n
			l.nodes = append(l.nodes, &nodeStats{parent: parent, op: o})
		}
		l.nodeOf[i] = n
	}
	return true
}

// opID interns a service and operation.
func (l *Learner) opID(service, name string) int32 {
	k := op{service, name}
	if id, ok := l.ops[k]; ok {
		return id
	}
	id := int32(len(l.opList))
	l.ops[k] = id
	l.opList = append(l.opList, k)
	return id
}

// record adds span i of the tree to its node: exclusive time and duration
// (unless inferred), pattern and calls.
func (l *Learner) record(i int32, inferred bool) {
	t := &l.t
	s := &t.spans[i]
	nd := l.nodes[l.nodeOf[i]]
	nd.instances++
	if !inferred {
		if t.failed[i] {
			nd.exclFail++
		} else {
			nd.excl.Add(t.excl[i])
		}
		if s.Failed {
			nd.durFail++
		} else {
			nd.dur.Add(s.End - s.Start)
		}
	}
	// The pattern's key: the child nodes of each step, sorted, as
	// uvarints of node+1, each step ended by a 0 byte.
	l.key = l.key[:0]
	l.called = l.called[:0]
	t.steps(i, func(kids []int32) {
		l.stepBuf = l.stepBuf[:0]
		for _, c := range kids {
			l.stepBuf = append(l.stepBuf, l.nodeOf[c])
		}
		slices.Sort(l.stepBuf)
		for _, n := range l.stepBuf {
			l.key = binary.AppendUvarint(l.key, uint64(n)+1)
			l.called = append(l.called, n)
		}
		l.key = append(l.key, 0)
	})
	slices.Sort(l.called)
	for k, n := range l.called {
		if k == 0 || n != l.called[k-1] {
			l.nodes[n].calledIn++
		}
	}
	if nd.patIndex == nil {
		nd.patIndex = map[string]int32{}
	}
	// An instance whose failure reached the root may have stopped short:
	// its pattern is not one that takes time (Model's patterns).
	ok := uint64(1)
	if t.failedUp[i] {
		ok = 0
	}
	if p, seen := nd.patIndex[string(l.key)]; seen {
		nd.patterns[p].count++
		nd.patterns[p].ok += ok
		return
	}
	if len(nd.patterns) >= l.cfg.MaxPatterns {
		l.stats.PatternsDropped++
		return
	}
	var steps [][]int32
	t.steps(i, func(kids []int32) {
		st := make([]int32, len(kids))
		for k, c := range kids {
			st[k] = l.nodeOf[c]
		}
		slices.Sort(st)
		steps = append(steps, st)
	})
	nd.patIndex[string(l.key)] = int32(len(nd.patterns))
	nd.patterns = append(nd.patterns, patternStats{steps: steps, count: 1, ok: ok})
}

// Finish closes every open trace, infers the missing parents of the held
// incoherent traces (learning the repaired ones with Config.Infer) and
// returns the counts. The Learner takes no spans after it.
func (l *Learner) Finish() Stats {
	for len(l.open) > 0 {
		l.close(l.popFront())
	}
	l.inf = l.infer()
	return l.stats
}

// pop takes the front of the queue, whose queued deadline has passed: the
// trace if its deadline has passed too, else nil after queueing it again
// with its new deadline.
func (l *Learner) pop() *openTrace {
	q := l.dequeue()
	if q.t.deadline >= l.mark {
		l.queue = append(l.queue, queued{q.t, q.t.deadline})
		return nil
	}
	return q.t
}

// popFront takes the open trace with the earliest deadline, whether or
// not it has passed.
func (l *Learner) popFront() *openTrace {
	for {
		q := l.dequeue()
		if q.deadline == q.t.deadline {
			return q.t
		}
		l.queue = append(l.queue, queued{q.t, q.t.deadline}) // its deadline moved on
	}
}

// dequeue removes the front of the queue, compacting it now and then.
func (l *Learner) dequeue() queued {
	q := l.queue[l.head]
	l.queue[l.head] = queued{}
	l.head++
	if l.head > 1024 && l.head*2 > len(l.queue) {
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue, l.head = l.queue[:n], 0
	}
	return q
}
