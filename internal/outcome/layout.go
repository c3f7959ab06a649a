// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package outcome

import (
	"slices"
	"sync"
	"sync/atomic"
)

// MaxNameLength bounds, in bytes, a probe name, a span name or a service
// name that the components keep or put on a series: the processor refuses
// a longer probe name in its configuration, the connector and the exporter refuse and count
// an instance whose probe name is longer, and stored span and service names
// are truncated to it. Prometheus and most backends accept far longer label
// values; the bound keeps one span from putting megabytes on every point.
const MaxNameLength = 256

// Layout is the shape of a probe's ΔQ histogram: dMax in nanoseconds and the
// number of bins (bin width DMaxNs/Bins), or, for a probe with `binning:
// log-linear`, the log-linear buckets LogLinear (DMaxNs = LogLinear.High,
// Bins = 0). A probe's layout comes from configuration, never from span
// data alone: the spans of a log-linear probe carry its dMax but no bin
// count (the contract in outcome.go), so only a reader of this process,
// through the registry, learns its buckets.
type Layout struct {
	DMaxNs int64
	Bins   int
	// LogLinear is the probe's log-linear binning; zero for uniform bins.
	LogLinear LogLinear
}

// LogLinear is a log-linear binning as deltaq.LogLinear describes it (the
// same fields, so that either converts to the other): this package stays
// free of the algebra, for sdk/deltaqstart imports it into applications.
type LogLinear struct {
	Factor    int64
	Low, High int64
	Steps     int64
}

// IsLogLinear reports whether the layout has log-linear buckets.
func (l Layout) IsLogLinear() bool { return l.LogLinear != (LogLinear{}) }

// Valid reports whether the layout has a positive dMax and either a bin
// count or log-linear buckets that end at dMax (not both).
func (l Layout) Valid() bool {
	if l.IsLogLinear() {
		return l.Bins == 0 && l.DMaxNs > 0 && l.LogLinear.High == l.DMaxNs
	}
	return l.DMaxNs > 0 && l.Bins > 0
}

// The registry holds the probes configured in the deltaq processors of this
// process, so that an exporter or connector in the same collector takes a
// probe's layout from the processor's configuration rather than from the
// attributes of the spans it reads, and can warn at start about probes its
// diagram names that no processor produces.
var registry struct {
	mu     sync.RWMutex
	owners map[any]map[string]Layout
	order  []any // registration order: the first owner of a name wins
	// gen counts the changes of the registry (Register, Unregister,
	// SetLayout), so that a reader can tell with one atomic load whether a
	// layout it looked up may have changed.
	gen atomic.Uint64
}

// Generation returns the number of changes made to the registry so far. A
// reader that caches layouts looks them up again when it changes: a
// processor whose probe chooses its dMax from observation (dmax: auto)
// announces each new dMax through SetLayout.
func Generation() uint64 { return registry.gen.Load() }

// SetLayout changes the layout of one probe that owner registered, and
// reports whether owner had registered it. Readers see the change through
// LookupLayout and Generation.
func SetLayout(owner any, name string, l Layout) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	m, ok := registry.owners[owner]
	if !ok {
		return false
	}
	if _, ok := m[name]; !ok {
		return false
	}
	m[name] = l
	registry.gen.Add(1)
	return true
}

// Register records the probes of one processor instance (owner), replacing
// what that owner registered before.
func Register(owner any, probes map[string]Layout) {
	cp := make(map[string]Layout, len(probes))
	for n, l := range probes {
		cp[n] = l
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.owners == nil {
		registry.owners = make(map[any]map[string]Layout)
	}
	if _, ok := registry.owners[owner]; !ok {
		registry.order = append(registry.order, owner)
	}
	registry.owners[owner] = cp
	registry.gen.Add(1)
}

// Unregister forgets the probes of owner.
func Unregister(owner any) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, ok := registry.owners[owner]; !ok {
		return
	}
	delete(registry.owners, owner)
	registry.order = slices.DeleteFunc(registry.order, func(o any) bool { return o == owner })
	registry.gen.Add(1)
}

// LookupLayout returns the layout of a probe configured in a registered
// processor; when several processors configure the probe, the first
// registered wins.
func LookupLayout(name string) (Layout, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	for _, o := range registry.order {
		if l, ok := registry.owners[o][name]; ok {
			return l, true
		}
	}
	return Layout{}, false
}

// RegisteredProbes returns the sorted names of the probes of every
// registered processor.
func RegisteredProbes() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	var names []string
	for _, m := range registry.owners {
		for n := range m {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
