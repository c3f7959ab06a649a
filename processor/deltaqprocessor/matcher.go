// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

// The matcher: which probe a span belongs to, in configuration order.

import (
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// matcher finds the probe of a span. Exact names are looked up in a map, so
// a span that no probe names costs one map lookup. Span names that reach the
// regular-expression probes are remembered (up to maxCachedNames of them, of
// at most outcome.MaxNameLength bytes), with the list of expressions they
// match, so that each distinct name runs the expressions once.
type matcher struct {
	probes []probe
	// exact maps a span name to the exact-name probes with that name, in
	// configuration order.
	exact map[string][]int32
	// regexps lists the probes with a span name expression, in configuration
	// order.
	regexps []int32
	// byName maps probe names to indices.
	byName map[string]int32
	// auto lists the probes with dmax: auto.
	auto []int
	// names caches, for span names, the regexps probes whose expression
	// matches the name.
	names nameCache
}

// newMatcher compiles the configuration's probes.
func newMatcher(cfg *Config) (*matcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def, _ := compileFailure("failure", &cfg.Failure)
	m := &matcher{
		probes: make([]probe, len(cfg.Probes)),
		exact:  make(map[string][]int32),
		byName: make(map[string]int32, len(cfg.Probes)),
	}
	for i := range cfg.Probes {
		pc := &cfg.Probes[i]
		m.probes[i], _ = compileProbe(pc, def)
		m.byName[pc.Name] = int32(i)
		if m.probes[i].auto != nil {
			m.auto = append(m.auto, i)
		}
		if m.probes[i].re != nil {
			m.regexps = append(m.regexps, int32(i))
		} else {
			n := pc.exactName()
			m.exact[n] = append(m.exact[n], int32(i))
		}
	}
	m.names.init(maxCachedNames)
	return m, nil
}

// match returns the index of the first probe, in configuration order, whose
// conditions the span meets, or −1.
func (m *matcher) match(span ptrace.Span, res *resourceInfo) int {
	name := span.Name()
	best := -1
	if cands, ok := m.exact[name]; ok {
		for _, i := range cands {
			if m.probes[i].matchesRest(span, res) {
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
		if m.probes[i].matchesRest(span, res) {
			return int(i)
		}
	}
	return best
}

// regexpMatches returns the regexp probes whose expression matches name, in
// configuration order.
func (m *matcher) regexpMatches(name string) []int32 {
	if hit, ok := m.names.get(name); ok {
		return hit
	}
	var hit []int32
	for _, i := range m.regexps {
		p := &m.probes[i]
		if strings.Contains(name, p.rePrefix) && p.re.MatchString(name) {
			hit = append(hit, i)
		}
	}
	// A name longer than outcome.MaxNameLength runs the expressions every
	// time rather than being kept: the cache must hold whole names to be
	// exact, and its bound counts names, not bytes.
	if len(name) <= outcome.MaxNameLength {
		m.names.put(name, hit)
	}
	return hit
}

// maxCachedNames bounds the span names the matcher remembers; each is at most
// outcome.MaxNameLength bytes.
const maxCachedNames = 1000

// nameCache maps span names to the regexp probes they match. Readers load an
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
