// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"slices"
	"strings"
	"sync"
)

// maxServicesPerProbe bounds the services named on a probe's series. A
// probe matches the spans of one operation, usually of one service (the
// processor's match can say which); a probe that collects more is named
// with the first ones in order and "…".
const maxServicesPerProbe = 4

// services records, per probe, the service.name of the resources its
// instances came from, so that the probe's series can be sliced by
// application (outcome.AttrService). The collector's own resource, which
// every batch of output carries, names the collector, not the application.
type services struct {
	mu      sync.Mutex
	byProbe map[string]*probeServices
}

// probeServices are the services of one probe.
type probeServices struct {
	names []string // sorted, at most maxServicesPerProbe
	more  bool     // a further service was seen
	label string   // the value of outcome.AttrService
	seen  uint64   // the builder's window number when last reported
	// fresh is true when a batch named the probe since the last report: a
	// probe whose first instances arrive as a window closes is kept until
	// the analysis reports it.
	fresh bool
}

// probeService is one (probe, service) pair seen in a batch.
type probeService struct{ probe, service string }

// batchServices collects the distinct (probe, service) pairs of one batch
// of spans, so that the lock is taken once per batch, not per span.
type batchServices struct {
	pairs []probeService
	last  probeService
}

// add records the pair unless it is the previous one or already recorded.
func (b *batchServices) add(probe, service string) {
	p := probeService{probe, service}
	if p == b.last {
		return
	}
	b.last = p
	if !slices.Contains(b.pairs, p) {
		b.pairs = append(b.pairs, p)
	}
}

// note merges the pairs of a batch.
func (s *services) note(pairs []probeService) {
	if len(pairs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byProbe == nil {
		s.byProbe = make(map[string]*probeServices)
	}
	for _, p := range pairs {
		ps := s.byProbe[p.probe]
		if ps == nil {
			// The strings point into the batch's memory: keep copies.
			ps = &probeServices{}
			s.byProbe[strings.Clone(p.probe)] = ps
		}
		ps.fresh = true
		ps.add(p.service)
	}
}

// add records a service of the probe.
func (ps *probeServices) add(service string) {
	i, found := slices.BinarySearch(ps.names, service)
	switch {
	case found:
		return
	case len(ps.names) >= maxServicesPerProbe:
		if !ps.more {
			ps.more = true
			ps.label += ",…"
		}
		return
	}
	ps.names = slices.Insert(ps.names, i, strings.Clone(service))
	ps.label = strings.Join(ps.names, ",")
	if ps.more {
		ps.label += ",…"
	}
}

// labels returns the service label of every probe in names (empty when
// none is known), marks them reported in window w, and forgets the probes
// neither reported in w nor named by a batch since the last report: those
// the analysis has forgotten.
func (s *services) labels(names []string, w uint64, out []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out = out[:0]
	for _, n := range names {
		l := ""
		if ps := s.byProbe[n]; ps != nil {
			ps.seen = w
			l = ps.label
		}
		out = append(out, l)
	}
	for n, ps := range s.byProbe {
		if ps.seen != w && !ps.fresh {
			delete(s.byProbe, n)
		}
		ps.fresh = false
	}
	return out
}
