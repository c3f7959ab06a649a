// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// services records, per probe, the service.name of the resources its
// instances came from, so that the probe's series can be sliced by
// application (contract.AttrService). The collector's own resource, which
// every batch of output carries, names the collector, not the application.
//
// A service name is whatever a sender writes in its resource, so the label
// is bounded three ways (services::*): a name is cut to
// contract.MaxNameLength bytes; a probe names at most maxPerProbe services,
// the first ones seen, and a further service makes the list end with
// contract.ServiceOverflow; a service (and the overflow) unseen for
// idleWindows windows is forgotten, so that its place goes to the services
// that still send.
type services struct {
	mu      sync.Mutex
	byProbe map[string]*probeServices
	// maxPerProbe is services::max_per_probe; idleWindows is
	// services::idle_timeout in windows, 0 to keep services as long as
	// their probe (an analysis without a window timer).
	maxPerProbe int
	idleWindows uint64
	// window is the builder's window number of the last report: the
	// instances of batches noted since are in later windows.
	window uint64
}

// expired reports whether a service last seen in window seen, and not
// since, has been idle for idleWindows windows by window w.
func (s *services) expired(seen, w uint64) bool {
	return s.idleWindows > 0 && w-seen >= s.idleWindows
}

// configure sets the bounds of a configuration (services::*) whose windows
// are interval long and whose probes are forgotten after probeIdle.
func (s *services) configure(c ServicesConfig, interval, probeIdle time.Duration) {
	s.maxPerProbe = c.MaxPerProbe
	idle := c.IdleTimeout
	if idle <= 0 {
		idle = probeIdle
	}
	s.idleWindows = 0
	if interval > 0 && idle > 0 {
		s.idleWindows = uint64((idle + interval - 1) / interval)
	}
}

// swap exchanges what s and o record and their bounds: a builder that
// closes the windows of another configuration's observer (a reload to
// another interval, flushPredecessor) names its probes' services for them.
func (s *services) swap(o *services) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	s.byProbe, o.byProbe = o.byProbe, s.byProbe
	s.maxPerProbe, o.maxPerProbe = o.maxPerProbe, s.maxPerProbe
	s.idleWindows, o.idleWindows = o.idleWindows, s.idleWindows
	s.window, o.window = o.window, s.window
}

// adopt takes over the services old, the builder's before a configuration
// reload, recorded, so that the windows closed before the next span still
// name them; the builder's window numbers continue old's. With other
// bounds (services::*) the label starts afresh, from the spans to come.
func (s *services) adopt(old *services) {
	old.mu.Lock()
	defer old.mu.Unlock()
	if old.maxPerProbe != s.maxPerProbe || old.idleWindows != s.idleWindows {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byProbe, s.window = old.byProbe, old.window
	old.byProbe = nil
}

// probeServices are the services of one probe.
type probeServices struct {
	names []serviceName // sorted by name, at most services.maxPerProbe
	// overflow is a service beyond maxPerProbe seen: the label ends with
	// contract.ServiceOverflow. overflowSeen and overflowFresh age it as a
	// service's are.
	overflow      bool
	overflowFresh bool
	overflowSeen  uint64
	label         string // the value of contract.AttrService
	stale         bool   // label must be rebuilt
	seen          uint64 // the builder's window number when last reported
	// fresh is true when a batch named the probe since the last report: a
	// probe whose first instances arrive as a window closes is kept until
	// the analysis reports it.
	fresh bool
}

// serviceName is one service of a probe: its name, the window it was last
// reported in, and whether a batch named it since.
type serviceName struct {
	name  string
	seen  uint64
	fresh bool
}

// probeService is one (probe, service) pair seen in a batch; with
// overflow, the probe's services at another collector (an agent) outnumbered
// its places, and service is empty.
type probeService struct {
	probe, service string
	overflow       bool
}

// batchServices collects the distinct (probe, service) pairs of one batch
// of spans, so that the lock is taken once per batch, not per span.
type batchServices struct {
	pairs []probeService
	last  probeService
}

// add records the pair unless it is the previous one or already recorded.
func (b *batchServices) add(probe, service string) {
	p := probeService{probe: probe, service: service}
	if p == b.last {
		return
	}
	b.last = p
	if !slices.Contains(b.pairs, p) {
		b.pairs = append(b.pairs, p)
	}
}

// appendLabel appends to pairs the services of an agent's window of the
// probe: the names of its label (contract.AttrService), joined by ",", the
// last of them contract.ServiceOverflow when the agent's probe had more
// services than places. An agent names at most maxServicesMaxPerProbe
// services and the overflow value; a label of more names is not an
// agent's, and its further names are taken for the overflow value, so that
// a forged label of many names costs no more than an agent's.
func appendLabel(pairs []probeService, probe, label string) []probeService {
	for names := 0; label != ""; names++ {
		if names > maxServicesMaxPerProbe {
			return append(pairs, probeService{probe: probe, overflow: true})
		}
		var name string
		name, label, _ = strings.Cut(label, ",")
		if name == contract.ServiceOverflow && label == "" {
			return append(pairs, probeService{probe: probe, overflow: true})
		}
		if name != "" {
			pairs = append(pairs, probeService{probe: probe, service: name})
		}
	}
	return pairs
}

// serviceCuts counts, for one batch, the (probe, service) pairs whose
// service the label could not name as it is: too long, or beyond the
// probe's places (the services_bounded counter).
type serviceCuts struct{ tooLong, overflow int }

// note merges the pairs of a batch and returns what the bounds cut.
func (s *services) note(pairs []probeService) serviceCuts {
	var cuts serviceCuts
	if len(pairs) == 0 {
		return cuts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byProbe == nil {
		s.byProbe = make(map[string]*probeServices)
	}
	maxPerProbe := s.maxPerProbe
	if maxPerProbe <= 0 {
		maxPerProbe = DefaultServicesMaxPerProbe
	}
	for _, p := range pairs {
		ps := s.byProbe[p.probe]
		if ps == nil {
			// The strings point into the batch's memory: keep copies.
			ps = &probeServices{}
			s.byProbe[strings.Clone(p.probe)] = ps
		}
		ps.fresh = true
		if p.overflow {
			ps.overflowFresh = true
			if !ps.overflow {
				ps.overflow, ps.stale = true, true
			}
			continue
		}
		name := p.service
		if len(name) > contract.MaxNameLength {
			name = cutName(name, contract.MaxNameLength)
			cuts.tooLong++
		}
		if !utf8.ValidString(name) {
			// A label value that is not UTF-8 is refused, with the
			// whole request, by decoders that check it (proto3
			// strings, Prometheus labels).
			name = cutName(strings.ToValidUTF8(name, "\uFFFD"), contract.MaxNameLength)
		}
		if !ps.add(name, maxPerProbe, s.window+1, s.expired) {
			cuts.overflow++
		}
	}
	return cuts
}

// add records a service of the probe, in window w; false when the probe
// has no place left for it and it counts as the overflow. A service idle
// long enough to be forgotten at the next report gives its place now, so
// that a service still sending takes it at once.
func (ps *probeServices) add(service string, maxPerProbe int, w uint64, expired func(seen, w uint64) bool) bool {
	i, found := slices.BinarySearchFunc(ps.names, service, func(n serviceName, s string) int {
		return strings.Compare(n.name, s)
	})
	if found {
		ps.names[i].fresh = true
		return true
	}
	if len(ps.names) >= maxPerProbe {
		n := len(ps.names)
		ps.names = slices.DeleteFunc(ps.names, func(n serviceName) bool { return !n.fresh && expired(n.seen, w) })
		if len(ps.names) == n {
			ps.overflowFresh = true
			if !ps.overflow {
				ps.overflow, ps.stale = true, true
			}
			return false
		}
		i, _ = slices.BinarySearchFunc(ps.names, service, func(n serviceName, s string) int {
			return strings.Compare(n.name, s)
		})
	}
	ps.names = slices.Insert(ps.names, i, serviceName{name: strings.Clone(service), fresh: true})
	ps.stale = true
	return true
}

// labels returns the service label of every probe in names (empty when
// none is known), marks them reported in window w, forgets the services
// unseen for idleWindows windows, and forgets the probes neither reported
// in w nor named by a batch since the last report: those the analysis has
// forgotten.
func (s *services) labels(names []string, w uint64, out []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = w
	for _, n := range names {
		if ps := s.byProbe[n]; ps != nil {
			ps.seen = w
		}
	}
	for n, ps := range s.byProbe {
		if ps.seen != w && !ps.fresh {
			delete(s.byProbe, n)
			continue
		}
		ps.fresh = false
		s.age(ps, w)
	}
	out = out[:0]
	for _, n := range names {
		l := ""
		if ps := s.byProbe[n]; ps != nil {
			l = ps.labelOf()
		}
		out = append(out, l)
	}
	return out
}

// age marks the services a batch named since the last report as seen in
// window w, and forgets those (and the overflow) unseen for idleWindows
// windows.
func (s *services) age(ps *probeServices, w uint64) {
	kept := ps.names[:0]
	for _, n := range ps.names {
		if n.fresh {
			n.seen, n.fresh = w, false
		} else if s.expired(n.seen, w) {
			ps.stale = true
			continue
		}
		kept = append(kept, n)
	}
	ps.names = kept
	if ps.overflowFresh {
		ps.overflowSeen, ps.overflowFresh = w, false
	} else if ps.overflow && s.expired(ps.overflowSeen, w) {
		ps.overflow, ps.stale = false, true
	}
}

// labelOf returns the probe's label: its services, sorted and joined by
// ",", then contract.ServiceOverflow when a service found no place.
func (ps *probeServices) labelOf() string {
	if !ps.stale {
		return ps.label
	}
	ps.stale = false
	var b strings.Builder
	for i, n := range ps.names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(n.name)
	}
	if ps.overflow {
		if len(ps.names) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(contract.ServiceOverflow)
	}
	ps.label = b.String()
	return ps.label
}
