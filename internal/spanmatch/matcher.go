// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

// The matcher: which probes a span belongs to, in configuration order.

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Matcher finds the probes of a span among compiled rules, indexed by their
// position. Exact names are looked up in a nameIndex, so a span that no
// rule names costs one look-up and allocates nothing. Span names that reach
// the expression rules are remembered (up to maxCachedNames of them, of at
// most contract.MaxNameLength bytes), with the list of expressions they
// match, so that each distinct name runs the expressions once. It is safe
// for concurrent use.
type Matcher struct {
	rules []Rule
	// exact maps a span name to the exact-name rules with that name, in
	// order.
	exact nameIndex
	// regexps lists the rules with a span name expression, in order.
	regexps []int32
	// names caches, for span names, the regexps rules whose expression
	// matches the name.
	names nameCache
}

// NewMatcher returns the matcher of rules; Match and AppendMatches return
// indices into rules.
func NewMatcher(rules []Rule) *Matcher {
	m := &Matcher{rules: rules}
	for i := range rules {
		if rules[i].re != nil {
			m.regexps = append(m.regexps, int32(i))
		} else {
			m.exact.add(rules[i].exact, int32(i))
		}
	}
	m.names.init(maxCachedNames)
	return m
}

// Match returns the index of the first rule, in order, whose conditions the
// span meets, or −1: the one probe of a span that can carry only one (the
// processor's deltaq.probe).
func (m *Matcher) Match(span ptrace.Span, res *Resource) int {
	name := span.Name()
	best := -1
	if cands := m.exact.get(name); cands != nil {
		for _, i := range cands {
			if m.rules[i].matchesRest(span, res) {
				best = int(i)
				break
			}
		}
	}
	if len(m.regexps) == 0 {
		return best
	}
	for _, i := range m.regexpMatches(name) {
		if best >= 0 && int(i) > best {
			break
		}
		if m.rules[i].matchesRest(span, res) {
			return int(i)
		}
	}
	return best
}

// AppendMatches appends to dst the index of every rule whose conditions
// the span meets, exact-name rules first, each group in order, and returns
// the extended slice. With a dst of enough capacity (one on the caller's
// stack) it allocates nothing.
func (m *Matcher) AppendMatches(dst []int32, span ptrace.Span, res *Resource) []int32 {
	name := span.Name()
	for _, i := range m.exact.get(name) {
		if m.rules[i].matchesRest(span, res) {
			dst = append(dst, i)
		}
	}
	if len(m.regexps) == 0 {
		return dst
	}
	for _, i := range m.regexpMatches(name) {
		if m.rules[i].matchesRest(span, res) {
			dst = append(dst, i)
		}
	}
	return dst
}

// Holds reports whether the conditions of rule i, its name's included,
// hold for the span: whether AppendMatches would list i. It runs rule i
// alone, for a span whose probe is known from elsewhere (the processor's
// span that ends an instance its start event announced).
func (m *Matcher) Holds(i int, span ptrace.Span, res *Resource) bool {
	r := &m.rules[i]
	name := span.Name()
	if r.re == nil {
		if name != r.exact {
			return false
		}
	} else if !strings.Contains(name, r.rePrefix) || !r.re.MatchString(name) {
		return false
	}
	return r.matchesRest(span, res)
}

// maxIndexedLength is the longest exact name a nameIndex files by its
// length, maxSameLength the most names of one length it compares in turn
// (more it files by a byte, wideNames), and maxWideNames the most it files
// so (more go in its map).
const (
	maxIndexedLength = 64
	maxSameLength    = 4
	maxWideNames     = 64
)

// nameIndex maps span names to the exact-name rules with that name, in
// order. Names of up to maxIndexedLength bytes are filed by their length,
// up to maxSameLength of each length, and compared last byte first: a span
// name of a length no rule has costs a slice look-up, and one of a rule's
// length usually a byte comparison more, less than hashing the name for a
// map (BenchmarkNameIndex). The names of a length that more than
// maxSameLength rules share are filed by a byte (wideNames), up to
// maxWideNames of them; more such names, and longer names, are in a map.
type nameIndex struct {
	byLen [maxIndexedLength + 1][]namedRules
	// wide holds the names of the lengths that more than maxSameLength
	// names share, whose byLen is nil.
	wide [maxIndexedLength + 1]*wideNames
	// mapped marks the lengths of more than maxWideNames names, which are
	// in the map, as the longer names are.
	mapped [maxIndexedLength + 1]bool
	m      map[string][]int32
}

// namedRules are the rules of one exact name.
type namedRules struct {
	name  string
	rules []int32
}

// add appends rule i to the rules of name.
func (x *nameIndex) add(name string, i int32) {
	n := len(name)
	if n > maxIndexedLength || x.mapped[n] {
		x.toMap(name, i)
		return
	}
	if w := x.wide[n]; w != nil {
		if len(w.names) < maxWideNames || w.get(name) != nil {
			w.add(name, i)
			return
		}
		// So many names of this length that two bytes no longer tell
		// them apart in a few comparisons: a map from now on.
		for _, c := range w.names {
			for _, r := range c.rules {
				x.toMap(c.name, r)
			}
		}
		x.wide[n], x.mapped[n] = nil, true
		x.toMap(name, i)
		return
	}
	same := x.byLen[n]
	for j := range same {
		if same[j].name == name {
			same[j].rules = append(same[j].rules, i)
			return
		}
	}
	if len(same) == maxSameLength {
		// Too many names of this length to compare in turn.
		x.wide[n], x.byLen[n] = &wideNames{names: same}, nil
		x.wide[n].add(name, i)
		return
	}
	x.byLen[n] = append(same, namedRules{name: name, rules: []int32{i}})
}

// toMap appends rule i to the rules of name in the map.
func (x *nameIndex) toMap(name string, i int32) {
	if x.m == nil {
		x.m = make(map[string][]int32)
	}
	x.m[name] = append(x.m[name], i)
}

// get returns the rules of name, nil when no exact rule names it.
func (x *nameIndex) get(name string) []int32 {
	n := len(name)
	if n > maxIndexedLength || x.mapped[n] {
		return x.m[name]
	}
	if x.wide[n] != nil {
		return x.wide[n].get(name)
	}
	for j := range x.byLen[n] {
		c := &x.byLen[n][j]
		// The last byte first: names of one length often share their
		// beginning (get_user, get_cart).
		if n == 0 || c.name[n-1] == name[n-1] && c.name == name {
			return c.rules
		}
	}
	return nil
}

// wideNames are the names of one length, more than maxSameLength of them,
// filed by a byte made of their bytes at two positions, chosen where the
// most of them differ: a look-up reads two bytes and compares the names
// filed with them, most often one, where a map hashes the whole name
// (BenchmarkNameIndex). The length is at least 1: there is one name of
// length 0.
type wideNames struct {
	names []namedRules
	// at are the positions filed by (key); head[k] is the first of the
	// names of key k, next[j] the one after names[j], -1 at the end.
	at   [2]int
	head [256]int32
	next []int32
}

// key returns the byte name is filed by: the one at at[0], the low half
// of the one at at[1] in its high half, which tells any two bytes apart
// when both positions are one.
func (w *wideNames) key(name string) uint8 { return name[w.at[0]] ^ name[w.at[1]]<<4 }

// choose sets at[k] to the position, the last of equals (names of one
// length often share their beginning), that gives the names the most
// distinct keys; choosing at[0], it sets at[1] to the same position, so
// that the key is the byte there.
func (w *wideNames) choose(k int) {
	bestAt, best := 0, 0
	for p := len(w.names[0].name) - 1; p >= 0; p-- {
		w.at[k] = p
		if k == 0 {
			w.at[1] = p
		}
		if d := w.distinctKeys(); d > best {
			bestAt, best = p, d
		}
	}
	w.at[k] = bestAt
	if k == 0 {
		w.at[1] = bestAt
	}
}

// distinctKeys returns the number of distinct keys of the names.
func (w *wideNames) distinctKeys() int {
	var seen [256]bool
	n := 0
	for j := range w.names {
		if k := w.key(w.names[j].name); !seen[k] {
			seen[k] = true
			n++
		}
	}
	return n
}

// add appends rule i to the rules of name, and files the names again when
// name is new.
func (w *wideNames) add(name string, i int32) {
	for j := range w.names {
		if w.names[j].name == name {
			w.names[j].rules = append(w.names[j].rules, i)
			return
		}
	}
	w.names = append(w.names, namedRules{name: name, rules: []int32{i}})
	w.choose(0)
	w.choose(1)
	for k := range w.head {
		w.head[k] = -1
	}
	w.next = slices.Grow(w.next[:0], len(w.names))[:len(w.names)]
	for j := len(w.names) - 1; j >= 0; j-- {
		k := w.key(w.names[j].name)
		w.head[k], w.next[j] = int32(j), w.head[k]
	}
}

// get returns the rules of name, of w's length, nil when none.
func (w *wideNames) get(name string) []int32 {
	for j := w.head[w.key(name)]; j >= 0; j = w.next[j] {
		if c := &w.names[j]; c.name == name {
			return c.rules
		}
	}
	return nil
}

// regexpMatches returns the expression rules whose expression matches name,
// in order.
func (m *Matcher) regexpMatches(name string) []int32 {
	if hit, ok := m.names.get(name); ok {
		return hit
	}
	var hit []int32
	for _, i := range m.regexps {
		r := &m.rules[i]
		if strings.Contains(name, r.rePrefix) && r.re.MatchString(name) {
			hit = append(hit, i)
		}
	}
	// A name longer than contract.MaxNameLength runs the expressions every
	// time rather than being kept: the cache must hold whole names to be
	// exact, and its bound counts names, not bytes.
	if len(name) <= contract.MaxNameLength {
		m.names.put(name, hit)
	}
	return hit
}

// maxCachedNames bounds the span names the matcher remembers; each is at most
// contract.MaxNameLength bytes.
const maxCachedNames = 1000

// nameCache maps span names to the regexp rules they match. Readers load an
// immutable map without locking; a new name copies the map (under a mutex),
// which costs O(size) but happens at most maxCachedNames times. Once full,
// names not in it run the expressions every time.
type nameCache struct {
	m     atomic.Pointer[map[string][]int32]
	mu    sync.Mutex
	limit int
}

func (c *nameCache) init(limit int) {
	c.limit = limit
	empty := map[string][]int32{}
	c.m.Store(&empty)
}

func (c *nameCache) get(name string) ([]int32, bool) {
	v, ok := (*c.m.Load())[name]
	return v, ok
}

func (c *nameCache) put(name string, v []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if len(old) >= c.limit {
		return
	}
	if _, ok := old[name]; ok {
		return
	}
	next := make(map[string][]int32, len(old)+1)
	for k, x := range old {
		next[k] = x
	}
	next[strings.Clone(name)] = v
	c.m.Store(&next)
}
