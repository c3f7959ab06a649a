// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// Version is the version of the model's JSON form.
const Version = 1

// Build resolution: the bin width of a root operation and its calls is
// the 99.9th percentile of its durations (of a root none of whose
// instances succeeded, its exclusive times) over bins bins; a node's ΔQ has as many bins
// as its largest sample needs, at most maxBinsFactor·bins (the rest is
// counted as a timeout, Dist.Beyond). Extreme outliers (Sketch.Extremes)
// count in neither: the bulk of the durations sets the bins, and the
// outliers are timeouts, reported (Model.Outliers).
const (
	DefaultBins    = 1000
	horizonQ       = 0.999
	maxBinsFactor  = 8
	maxProbeName   = 100
	choiceSuffix   = "_alt"
	parallelSuffix = "_par"
	selfSuffix     = "_self"
)

// MaxBinsLimit is the largest bins Build accepts: a node's ΔQ may take
// maxBinsFactor times as many, within deltaq.MaxBins.
const MaxBinsLimit = deltaq.MaxBins / maxBinsFactor

// Model is a learned ΔQ model: the nodes of the calling-context tree with
// their exclusive-time ΔQs and execution patterns. Its JSON form is what
// `deltaq model` writes as model.json; Diagram gives the outcome diagram.
type Model struct {
	Version int `json:"version"`
	// BinWidth of the ΔQs of the nodes, in seconds: those of the first
	// root operation and its calls, and of every node without a
	// bin width of its own (Node.BinWidth).
	BinWidth float64 `json:"bin_width"`
	Stats    Stats   `json:"stats"`
	// Roots are the probes of the root operations, most frequent first.
	Roots []string `json:"roots"`
	// Nodes, parents before children.
	Nodes []Node `json:"nodes"`
	// Outliers are the nodes whose durations include extreme outliers,
	// in the order of Nodes.
	Outliers []Outlier `json:"outliers,omitempty"`

	index map[string]int // by probe
}

// Node is one node of the calling-context tree: an operation reached by
// one path of calls from a root operation.
type Node struct {
	// Probe is the node's name in the outcome diagram: its definition (a
	// node with children or a root), else its outcome.
	Probe string `json:"probe"`
	// Outcome is the diagram's outcome for the node's exclusive time:
	// Probe + "_self" for a definition, Probe for a leaf.
	Outcome   string `json:"outcome"`
	Service   string `json:"service"`
	Operation string `json:"operation"`
	// Parent is the probe of the calling node; "" for a root.
	Parent string `json:"parent,omitempty"`
	// BinWidth of the node's ΔQs, in seconds, when it is not the model's
	// (Model.Width): each root operation has its own, and its calls
	// have it too.
	BinWidth  float64 `json:"bin_width,omitempty"`
	Instances uint64  `json:"instances"`
	// CallProbability is the fraction of the parent's instances that call
	// this node at least once; CallsPerParent the mean number of calls.
	CallProbability float64 `json:"call_probability,omitempty"`
	CallsPerParent  float64 `json:"calls_per_parent,omitempty"`
	// Patterns are the execution patterns, most frequent first, of the
	// instances that did not fail with the root (of the others when
	// none did not): such an instance may have stopped short, and its
	// failure is in the exclusive times already. One whose failure a
	// caller recovered from took its time, and counts.
	Patterns []Pattern `json:"patterns,omitempty"`
	// Exclusive is the ΔQ of the exclusive time: a failure that
	// originates in the span (it failed, none of its children did) and
	// reached the root (every span above it failed too) is intangible
	// mass; one that a caller recovered from (it did not fail, or went on
	// to another call after it) took its time.
	Exclusive Dist `json:"exclusive"`
	// Duration is the observed ΔQ of the span's duration (failed spans
	// intangible).
	Duration Dist `json:"duration"`
}

// Outlier is a node some of whose durations are extreme outliers
// (Sketch.Extremes): far longer than the others, with nothing between, or
// beyond 9.7 hours. They do not set the bins; they count as timeouts.
type Outlier struct {
	Probe     string `json:"probe"`
	Operation string `json:"operation"`
	// Spans is the number of extreme durations, Of the number of
	// durations (successful instances) of the node.
	Spans uint64 `json:"spans"`
	Of    uint64 `json:"of"`
	// From and Longest bound the extreme durations, Rest is the longest
	// of the others, in seconds.
	From    float64 `json:"from"`
	Longest float64 `json:"longest"`
	Rest    float64 `json:"rest"`
}

// Key returns "service.operation".
func (n *Node) Key() string { return Key(n.Service, n.Operation) }

// Bins says the bin widths of the model: one, or each root operation's
// (its probe in parentheses) when they differ.
func (m *Model) Bins() string {
	var parts []string
	same := true
	for _, r := range m.Roots {
		n, _ := m.Node(r)
		w := m.Width(n)
		same = same && w == m.BinWidth
		parts = append(parts, distribution.FormatDuration(w)+" ("+r+")")
	}
	if same {
		return distribution.FormatDuration(m.BinWidth)
	}
	return strings.Join(parts, ", ")
}

// Width returns the bin width of the ΔQs of node n, in seconds: its own,
// else the model's.
func (m *Model) Width(n *Node) float64 {
	if n.BinWidth != 0 {
		return n.BinWidth
	}
	return m.BinWidth
}

// Leaf reports whether the node never called anything and is no root: it
// is then an outcome of the diagram, not a definition.
func (n *Node) Leaf() bool { return n.Parent != "" && n.Probe == n.Outcome }

// Pattern is one execution pattern: steps run one after the other, the
// calls of a step in parallel.
type Pattern struct {
	// Steps hold the probes of the nodes called, sorted within a step.
	Steps [][]string `json:"steps"`
	Count uint64     `json:"count"`
}

// Dist is a ΔQ on the model's bin width.
type Dist struct {
	// Samples is the number of instances it was built from.
	Samples uint64 `json:"samples"`
	// Failure is the intangible mass.
	Failure float64 `json:"failure"`
	// Beyond is the number of samples beyond the last bin (timeouts,
	// part of Failure).
	Beyond float64 `json:"beyond,omitempty"`
	// PDF holds the bin masses; trailing empty bins are left out.
	PDF []float64 `json:"pdf"`
	// AtZero says that the mass, in the first bin only, is a point at 0
	// rather than spread over the bin: an exclusive time that took under
	// a quarter of a bin on average (a span that only wraps its calls).
	// Spread, it adds half a bin to every sequence it is in, which a
	// chain of such spans adds up.
	AtZero bool `json:"at_zero,omitempty"`
}

// DeltaQ returns the ΔQ of d on bins of width w.
func (d Dist) DeltaQ(w float64) (deltaq.DeltaQ, error) {
	switch {
	case len(d.PDF) == 0:
		return deltaq.Never(w, 1)
	case d.AtZero && len(d.PDF) > 1:
		return deltaq.DeltaQ{}, fmt.Errorf("at_zero with %d bins, want 1", len(d.PDF))
	case d.AtZero:
		zero, err := deltaq.Point(0, w, 1)
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		// The point's mass, the rest intangible.
		return deltaq.Scale(zero, min(max(d.PDF[0], 0), 1))
	}
	return deltaq.New(w, d.PDF)
}

// sketchDist returns the Dist of a sketch plus intangible instances on the
// model's bins; an empty one (a node seen only as inferred) is a zero delay.
// With point, durations that all lie within the first bin, under a quarter
// of it on average, are a point at 0 (Dist.AtZero): the nearer of the two
// forms the first bin can take, 0 and spread over the bin (of mean half a
// bin).
func sketchDist(s *Sketch, intangible uint64, w float64, bins int, point bool) (Dist, error) {
	n := s.Count() + intangible
	if n == 0 {
		return Dist{PDF: []float64{1}, AtZero: point}, nil
	}
	// Up to the longest duration + 1 ns, where the sketch's buckets are
	// cut (Sketch.Build): on bins below 1 ns, the longest duration's
	// bucket reached past a bin more than it.
	nb := min(max(int(math.Ceil((s.BulkMax()+1e-9)/w))+1, 1), maxBinsFactor*bins, deltaq.MaxBins)
	dq, beyond, err := s.Build(w, nb, intangible)
	if err != nil {
		return Dist{}, err
	}
	pdf := dq.PDF()
	last := len(pdf)
	for last > 1 && pdf[last-1] == 0 {
		last--
	}
	return Dist{Samples: n, Failure: dq.Intangible(), Beyond: beyond, PDF: pdf[:last],
		AtZero: point && last == 1 && s.Max() < w && s.Mean() < w/4}, nil
}

// Build makes the model of what l learned (call Finish first), with each
// root operation's durations resolved into about bins bins: every root
// operation has its bin width, and the nodes of its calls have it too (a
// node belongs to one root's calls). One width for all, the slowest
// root's, held a request of milliseconds in the first bins of a model
// that also had a batch job of seconds.
func Build(l *Learner, bins int) (*Model, error) {
	if bins < 1 || bins > MaxBinsLimit {
		return nil, fmt.Errorf("model: bins = %d outside [1, %d]", bins, MaxBinsLimit)
	}
	if len(l.nodes) == 0 {
		st := l.stats
		inc := st.Incoherence
		return nil, fmt.Errorf("model: no coherent trace to learn from (%d spans, %d traces: %d spans without their parent, %d traces without a root, %d spans in cycles, %d spans that end before they start; %d traces deeper than the depth limit)",
			st.Spans, st.Traces, inc.MissingParent, inc.NoRoot, inc.Cycle, inc.NegativeDuration, st.TooDeep)
	}
	// Children of each node; roots.
	kids := make([][]int32, len(l.nodes))
	var roots []int32
	for i, nd := range l.nodes {
		switch {
		case nd.instances == 0:
			// made by a trace that then hit MaxNodes: never learned
		case nd.parent < 0:
			roots = append(roots, int32(i))
		default:
			kids[nd.parent] = append(kids[nd.parent], int32(i))
		}
	}
	byCount := func(a, b int32) int {
		na, nb := l.nodes[a], l.nodes[b]
		return cmp.Or(cmp.Compare(nb.instances, na.instances), cmp.Compare(l.nodeKey(na), l.nodeKey(nb)))
	}
	slices.SortFunc(roots, byCount)
	// Parents before children, breadth first; names in that order; the
	// width of each node its root's.
	order := slices.Clone(roots)
	width := make([]float64, len(l.nodes))
	for _, r := range roots {
		width[r] = l.rootWidth(r, kids, bins)
	}
	for k := 0; k < len(order); k++ {
		ks := kids[order[k]]
		slices.SortFunc(ks, byCount)
		for _, c := range ks {
			width[c] = width[order[k]]
		}
		order = append(order, ks...)
	}
	names := newNames()
	m := &Model{Version: Version, BinWidth: width[roots[0]], Stats: l.stats}
	probe := make([]string, len(l.nodes))
	for _, i := range order {
		nd := l.nodes[i]
		probe[i] = names.unique(sanitize(l.nodeKey(nd)))
		if nd.parent < 0 {
			m.Roots = append(m.Roots, probe[i])
		}
	}
	for _, i := range order {
		n, err := l.modelNode(i, probe, len(kids[i]) > 0, names, width[i], bins)
		if err != nil {
			return nil, err
		}
		if width[i] != m.BinWidth {
			n.BinWidth = width[i]
		}
		m.Nodes = append(m.Nodes, n)
		if k, from, rest := l.nodes[i].dur.Extremes(); k > 0 {
			m.Outliers = append(m.Outliers, Outlier{Probe: n.Probe, Operation: n.Key(), Spans: k, Of: l.nodes[i].dur.Count(),
				From: from, Longest: l.nodes[i].dur.Max(), Rest: rest})
		}
	}
	return m, m.index0()
}

// rootWidth returns the bin width of root node r and its calls: the 99.9th
// percentile of its durations that are not extreme outliers (of its
// exclusive times when none of its instances succeeded: its failures came
// from its calls) over bins bins; else the longest duration of a node of
// its calls; else 1 µs over bins (every span took no time: any width will
// do).
func (l *Learner) rootWidth(r int32, kids [][]int32, bins int) float64 {
	nd := l.nodes[r]
	d := &nd.dur
	if d.Count() == 0 {
		d = &nd.excl
	}
	horizon := d.BulkQuantile(horizonQ)
	if horizon == 0 {
		for stack := []int32{r}; len(stack) > 0; {
			i := stack[len(stack)-1]
			stack = append(stack[:len(stack)-1], kids[i]...)
			horizon = math.Max(horizon, l.nodes[i].dur.BulkMax())
		}
	}
	if horizon == 0 {
		horizon = 1e-6
	}
	return horizon / float64(bins)
}

// modelNode makes the Node of learned node i: names (probe, by node
// index), patterns, call probability and the ΔQs of its exclusive time and
// duration on bins of width w.
func (l *Learner) modelNode(i int32, probe []string, hasKids bool, names *names, w float64, bins int) (Node, error) {
	nd := l.nodes[i]
	o := l.opList[nd.op]
	n := Node{Probe: probe[i], Outcome: probe[i], Service: o.service, Operation: o.name, Instances: nd.instances}
	if nd.parent >= 0 {
		pn := l.nodes[nd.parent]
		n.Parent = probe[nd.parent]
		n.CallProbability = float64(nd.calledIn) / float64(pn.instances)
		n.CallsPerParent = float64(nd.instances) / float64(pn.instances)
	}
	// The patterns of the instances that did not fail with the root:
	// one that did may have stopped short (a failed call ends a
	// sequence, and its failure is in the diagram already), and counted
	// as a pattern of its own it would be chosen for instances that do
	// not fail. Those of the others stand when there are none.
	succeeded := slices.ContainsFunc(nd.patterns, func(p patternStats) bool { return p.ok > 0 })
	for _, p := range nd.patterns {
		count := p.count
		if succeeded {
			count = p.ok
		}
		if count == 0 {
			continue
		}
		steps := make([][]string, len(p.steps))
		for s, st := range p.steps {
			for _, c := range st {
				steps[s] = append(steps[s], probe[c])
			}
			slices.Sort(steps[s])
		}
		n.Patterns = append(n.Patterns, Pattern{Steps: steps, Count: count})
	}
	// Most frequent first, ties in the order of their steps: the model
	// does not depend on the order traces were learned in.
	slices.SortFunc(n.Patterns, func(a, b Pattern) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), slices.CompareFunc(a.Steps, b.Steps, slices.Compare[[]string]))
	})
	if hasKids || nd.parent < 0 {
		n.Outcome = names.unique(probe[i] + selfSuffix)
	}
	var err error
	if n.Exclusive, err = sketchDist(&nd.excl, nd.exclFail, w, bins, true); err != nil {
		return Node{}, fmt.Errorf("model: exclusive time of %s: %w", n.Key(), err)
	}
	if n.Duration, err = sketchDist(&nd.dur, nd.durFail, w, bins, false); err != nil {
		return Node{}, fmt.Errorf("model: duration of %s: %w", n.Key(), err)
	}
	return n, nil
}

func (l *Learner) nodeKey(nd *nodeStats) string {
	o := l.opList[nd.op]
	return Key(o.service, o.name)
}

// index0 indexes the nodes by probe and checks the references between
// them.
func (m *Model) index0() error {
	m.index = make(map[string]int, len(m.Nodes))
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if _, dup := m.index[n.Probe]; dup {
			return fmt.Errorf("model: nodes[%d]: probe %s appears twice", i, n.Probe)
		}
		m.index[n.Probe] = i
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if _, ok := m.index[n.Parent]; n.Parent != "" && !ok {
			return fmt.Errorf("model: nodes[%d] (%s): parent %s is no node", i, n.Probe, n.Parent)
		}
		for _, p := range n.Patterns {
			for _, st := range p.Steps {
				for _, c := range st {
					if _, ok := m.index[c]; !ok {
						return fmt.Errorf("model: nodes[%d] (%s): pattern calls %s, which is no node", i, n.Probe, c)
					}
				}
			}
		}
	}
	for _, r := range m.Roots {
		if _, ok := m.index[r]; !ok {
			return fmt.Errorf("model: root %s is no node", r)
		}
	}
	// A node's calls within calls are bounded as in learning (MaxDepth),
	// which also refuses parents in a cycle: the diagram of a deeper
	// model costs the square of its depth to evaluate.
	for i := range m.Nodes {
		n := &m.Nodes[i]
		for depth := 0; n.Parent != ""; depth++ {
			if depth >= MaxDepthLimit {
				return fmt.Errorf("model: nodes[%d] (%s): more than %d calls deep, or its parents form a cycle", i, m.Nodes[i].Probe, MaxDepthLimit)
			}
			n = &m.Nodes[m.index[n.Parent]]
		}
	}
	return nil
}

// Node returns the node of a probe.
func (m *Model) Node(probe string) (*Node, bool) {
	i, ok := m.index[probe]
	if !ok {
		return nil, false
	}
	return &m.Nodes[i], true
}

// Diagram writes the model as an outcome diagram: a definition per node
// with children (and per root), whose chain is the node's exclusive time
// followed by the steps of its pattern; a step of parallel calls is an
// all-to-finish, several patterns a probabilistic choice weighted by their
// frequencies (an optional call is a pattern with it and one without).
// With a single root operation, system is that root.
func (m *Model) Diagram() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# ΔQ model learned from %d traces (%d spans); bins of %s.\n", m.Stats.Learned, m.Stats.Spans,
		printable.String(m.Bins()))
	b.WriteString("# A definition is a span (an operation in one calling context); its _self\n")
	b.WriteString("# outcome is the span's exclusive time, observed in model.json.\n")
	names := newNames()
	for _, n := range m.Nodes {
		names.taken[n.Probe] = true
		names.taken[n.Outcome] = true
	}
	ref := func(probe string) string {
		c, _ := m.Node(probe)
		if c.Leaf() {
			return c.Outcome
		}
		return "s:" + c.Probe
	}
	chain := func(n *Node, p *Pattern) string {
		parts := []string{n.Outcome}
		if p != nil {
			for _, st := range p.Steps {
				if len(st) == 1 {
					parts = append(parts, ref(st[0]))
					continue
				}
				refs := make([]string, len(st))
				for k, c := range st {
					refs[k] = ref(c)
				}
				parts = append(parts, "a:"+names.unique(n.Probe+parallelSuffix)+"("+strings.Join(refs, ", ")+")")
			}
		}
		return strings.Join(parts, " -> ")
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		if n.Leaf() {
			continue
		}
		// The names come from span data: a line break in one would end
		// the comment and make the rest of the name diagram text.
		fmt.Fprintf(&b, "\n# %s: %d instances", printable.String(n.Key()), n.Instances)
		if n.Parent != "" {
			fmt.Fprintf(&b, ", called in %.4g %% of the instances of %s", 100*n.CallProbability, printable.String(n.Parent))
		}
		b.WriteString(".\n")
		switch len(n.Patterns) {
		case 0:
			fmt.Fprintf(&b, "%s = %s;\n", n.Probe, chain(n, nil))
		case 1:
			fmt.Fprintf(&b, "%s = %s;\n", n.Probe, chain(n, &n.Patterns[0]))
		default:
			ws := choiceWeights(n.Patterns)
			bs := make([]string, len(n.Patterns))
			for k := range n.Patterns {
				bs[k] = chain(n, &n.Patterns[k])
			}
			fmt.Fprintf(&b, "%s = p:%s[%s](%s);\n", n.Probe, names.unique(n.Probe+choiceSuffix),
				strings.Join(ws, ", "), strings.Join(bs, ", "))
		}
	}
	if len(m.Roots) == 1 {
		fmt.Fprintf(&b, "\n# The whole system: the only root operation.\n%s = s:%s;\n", diagram.SystemName, m.Roots[0])
	}
	src := []byte(b.String())
	if d, err := diagram.Parse("model.dq", src); err == nil {
		return diagram.Format(d)
	}
	return src // ParseDiagram reports what is wrong
}

// choiceWeights returns the weights of a choice between patterns, in
// millionths so that they read well and sum to exactly 1 as written: each
// rounded, at least one millionth, the first (most frequent) taking the
// rounding remainder.
func choiceWeights(ps []Pattern) []string {
	total := uint64(0)
	for _, p := range ps {
		total += p.Count
	}
	u := make([]int64, len(ps))
	rest := int64(1_000_000)
	for k := len(ps) - 1; k > 0; k-- {
		u[k] = max(1, int64(math.Round(float64(ps[k].Count)/float64(total)*1e6)))
		rest -= u[k]
	}
	u[0] = rest
	out := make([]string, len(ps))
	for k, v := range u {
		out[k] = strconv.FormatFloat(float64(v)/1e6, 'f', -1, 64)
	}
	return out
}

// ParseDiagram parses and validates the model's diagram, formatted.
func (m *Model) ParseDiagram() (*diagram.Diagram, error) {
	return diagram.Parse("model.dq", m.Diagram())
}

// Inputs returns the ΔQ of every node's exclusive time, by outcome name:
// the inputs that evaluate the diagram.
func (m *Model) Inputs() (map[string]deltaq.DeltaQ, error) {
	in := make(map[string]deltaq.DeltaQ, len(m.Nodes))
	for i := range m.Nodes {
		n := &m.Nodes[i]
		dq, err := n.Exclusive.DeltaQ(m.Width(n))
		if err != nil {
			return nil, fmt.Errorf("model: exclusive time of %s: %w", n.Probe, err)
		}
		in[n.Outcome] = dq
	}
	return in, nil
}

// names hands out distinct diagram names.
type names struct{ taken map[string]bool }

func newNames() *names {
	return &names{taken: map[string]bool{diagram.SystemName: true}}
}

// unique returns base, or base_2, base_3, … if taken, and takes it.
func (n *names) unique(base string) string {
	name := base
	for k := 2; n.taken[name]; k++ {
		name = base + "_" + strconv.Itoa(k)
	}
	n.taken[name] = true
	return name
}

// sanitize turns "service.operation" into a name of the diagram language:
// runs of characters other than ASCII letters and digits become one '_',
// a leading digit gets an "n_" in front, and the result is cut to
// maxProbeName bytes.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for i := 0; i < len(s) && b.Len() < maxProbeName; i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
			under = false
		} else if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	out := strings.TrimRight(b.String(), "_")
	switch {
	case out == "":
		return "op"
	case out[0] >= '0' && out[0] <= '9':
		return "n_" + out
	}
	return out
}

// Encode returns the model's JSON form (model.json), indented as
// json.MarshalIndent does with two spaces, with each array of numbers (a
// ΔQ's bins) on one line.
func (m *Model) Encode() ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(indentJSON(b), '\n'), nil
}

// indentJSON indents the compact JSON b as json.MarshalIndent(v, "", "  ")
// does, but keeps each array that holds only numbers on one line, in one
// pass: strings are copied as they are (a span name "GET [1, 2]" is the
// data's; a pattern over the indented text changed it), and an array's
// bytes are scanned once as its own and once more as the text around it.
// A regular expression over MarshalIndent's output, a line per number,
// took 51 s and 1.4 GB for the 45 MB of a model of 10,000 nodes.
func indentJSON(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/4)
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j, len(b)-1)
			out = append(out, b[i:j+1]...)
			i = j
		case '{', '[':
			if j, ok := numberArray(b, i); ok && c == '[' {
				out = append(out, b[i:j]...)
				i = j - 1
				continue
			}
			out = append(out, c)
			if i+1 < len(b) && (b[i+1] == '}' || b[i+1] == ']') {
				out = append(out, b[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return out
}

// numberArray reports whether b[i], a '[', starts an array of numbers
// only, with a digit, and returns the offset after its ']'.
func numberArray(b []byte, i int) (int, bool) {
	digit := false
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == ']':
			return j + 1, digit
		case '0' <= c && c <= '9':
			digit = true
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == ',' || isJSONSpace(c):
		default:
			return 0, false
		}
	}
	return 0, false
}

// isJSONSpace reports JSON's white space (RFC 8259, section 2).
func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Decode reads a model's JSON form and checks that its nodes refer to
// each other consistently.
func Decode(data []byte) (*Model, error) {
	var m Model
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	switch {
	case m.Version != Version:
		return nil, fmt.Errorf("model: version %d, want %d", m.Version, Version)
	case !(m.BinWidth > 0) || math.IsInf(m.BinWidth, 0):
		return nil, fmt.Errorf("model: bin_width %v must be finite and > 0", m.BinWidth)
	case len(m.Nodes) == 0 || len(m.Roots) == 0:
		return nil, fmt.Errorf("model: no nodes or no roots")
	}
	for i := range m.Nodes {
		if w := m.Nodes[i].BinWidth; w != 0 && (!(w > 0) || math.IsInf(w, 0)) {
			return nil, fmt.Errorf("model: nodes[%d] (%s): bin_width %v must be finite and > 0", i, m.Nodes[i].Probe, w)
		}
		if err := m.Nodes[i].check(m.Width(&m.Nodes[i])); err != nil {
			return nil, fmt.Errorf("model: nodes[%d] (%s): %w", i, m.Nodes[i].Probe, err)
		}
	}
	return &m, m.index0()
}

// check refuses what Build never writes and the predictions would take
// as it is: a ΔQ that is none, a failure mass or a call probability
// outside [0, 1], a negative number of calls (what-if's load multiplies
// them).
func (n *Node) check(w float64) error {
	if _, err := n.Exclusive.DeltaQ(w); err != nil {
		return fmt.Errorf("exclusive: %w", err)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"exclusive.failure", n.Exclusive.Failure},
		{"duration.failure", n.Duration.Failure},
		{"call_probability", n.CallProbability},
	} {
		if !(f.v >= 0 && f.v <= 1) {
			return fmt.Errorf("%s %v is outside [0, 1]", f.name, f.v)
		}
	}
	if !(n.CallsPerParent >= 0) || math.IsInf(n.CallsPerParent, 0) {
		return fmt.Errorf("calls_per_parent %v must be finite and ≥ 0", n.CallsPerParent)
	}
	return nil
}
