// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// MaxNameLength bounds, in bytes, a probe name, a span name or a service
// name that the components keep or put on a series: the processor refuses
// a longer probe name in its configuration, the connector and the exporter refuse and count
// an instance whose probe name is longer, and stored span and service names
// are truncated to it. Prometheus and most backends accept far longer label
// values; the bound keeps one span from putting megabytes on every point.
const MaxNameLength = 256

// Layouts is the registry of the probe layouts (deltaq.Layout) configured
// in the deltaq processors of one collector, so that its connector or
// exporter takes a probe's layout from the processor's configuration
// rather than from the attributes of the spans it reads, and can warn at
// start about probes its diagram names that no processor produces. A
// probe's layout comes from configuration, never from span data alone: the
// spans of a log-linear probe carry its dMax but no bin count (the contract
// in outcome.go), so only a reader of this process, through the registry,
// learns its buckets. The components are given their collector's registry
// (internal/collectorstate); the zero Layouts is empty and ready to use.
type Layouts struct {
	mu     sync.RWMutex
	owners map[any]map[string]deltaq.Layout
	order  []any // registration order: the first owner of a name wins
	// gen counts the changes of the registry (Register, Unregister,
	// SetLayout), so that a reader can tell with one atomic load whether a
	// layout it looked up may have changed.
	gen atomic.Uint64
	// readers are the reference checks of the connectors and exporters
	// (AddReader); rmu guards them.
	rmu     sync.Mutex
	readers map[any]ReferenceCheck
	// declared are the probes the processors' configurations name
	// (Declare) since the collector last started its components (Settle),
	// guarded by rmu.
	declared map[string]struct{}
}

// MaxDeclared bounds the probes Declare keeps for one configuration: past
// it, names are no longer added, and the checks made before every
// processor is made may again take a probe that a processor made later
// defines for a misspelling.
const MaxDeclared = 1 << 16

// Declare records the probes a deltaq processor's configuration names,
// when the collector validates it, before it makes any component. The
// reference checks run while components are being made (CheckReaders, a
// reader's own check when it is made) see only the processors made so
// far: a probe that a processor made later defines, one or two edits from
// a probe of one made earlier (checkout and checkouts in two processors),
// looked misspelled, and the collector refused a valid configuration,
// depending on the order it made them in. Such a check leaves a declared
// probe to the check at start, when every processor is made (Declared).
// A processor in no pipeline, which the collector validates but never
// makes, declares its probes too: a misspelling of one of them is found at
// start, not by validate. The declarations last until the components
// start (Settle).
func (r *Layouts) Declare(names ...string) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	if r.declared == nil {
		r.declared = make(map[string]struct{})
	}
	for _, n := range names {
		if len(r.declared) >= MaxDeclared {
			return
		}
		r.declared[n] = struct{}{}
	}
}

// Settle forgets the declared probes: a deltaq component starts, so the
// collector has made every component of the configuration that declared
// them, and the check at start sees every processor's probes. A reload
// validates its configuration, which declares its own, and makes its
// components again. Kept, the names of every configuration a collector
// had been reloaded into piled up, until MaxDeclared stopped Declare; and
// a probe of an earlier configuration was left to the start, so that
// validate passed a misspelling of it that the start refused.
func (r *Layouts) Settle() {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	r.declared = nil
}

// Declared reports whether a processor's configuration named probe
// (Declare) since the components last started (Settle).
func (r *Layouts) Declared(probe string) bool {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	_, ok := r.declared[probe]
	return ok
}

// Generation returns the number of changes made to the registry so far. A
// reader that caches layouts looks them up again when it changes: a
// processor whose probe chooses its dMax from observation (dmax: auto)
// announces each new dMax through SetLayout.
func (r *Layouts) Generation() uint64 { return r.gen.Load() }

// SetLayout changes the layout of one probe that owner registered, and
// reports whether owner had registered it. Readers see the change through
// LookupLayout and Generation.
func (r *Layouts) SetLayout(owner any, name string, l deltaq.Layout) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.owners[owner]
	if !ok {
		return false
	}
	if _, ok := m[name]; !ok {
		return false
	}
	m[name] = l
	r.gen.Add(1)
	return true
}

// Register records the probes of one processor instance (owner), replacing
// what that owner registered before.
func (r *Layouts) Register(owner any, probes map[string]deltaq.Layout) {
	cp := make(map[string]deltaq.Layout, len(probes))
	for n, l := range probes {
		cp[n] = l
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owners == nil {
		r.owners = make(map[any]map[string]deltaq.Layout)
	}
	if _, ok := r.owners[owner]; !ok {
		r.order = append(r.order, owner)
	}
	r.owners[owner] = cp
	r.gen.Add(1)
}

// Unregister forgets the probes of owner.
func (r *Layouts) Unregister(owner any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.owners[owner]; !ok {
		return
	}
	delete(r.owners, owner)
	r.order = slices.DeleteFunc(r.order, func(o any) bool { return o == owner })
	r.gen.Add(1)
}

// LookupLayout returns the layout of a probe configured in a registered
// processor; when several processors configure the probe, the first
// registered wins.
func (r *Layouts) LookupLayout(name string) (deltaq.Layout, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, o := range r.order {
		if l, ok := r.owners[o][name]; ok {
			return l, true
		}
	}
	return deltaq.Layout{}, false
}

// Earlier returns the layout of probe name that an owner registered before
// owner did — the one LookupLayout gives readers — when it is not l: the
// instances owner produces with l are then refused by every reader
// (layout_mismatch).
func (r *Layouts) Earlier(owner any, name string, l deltaq.Layout) (deltaq.Layout, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, o := range r.order {
		if o == owner {
			break
		}
		if first, ok := r.owners[o][name]; ok {
			return first, !first.Equal(l)
		}
	}
	return deltaq.Layout{}, false
}

// RegisteredProbes returns the sorted names of the probes of every
// registered processor.
func (r *Layouts) RegisteredProbes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []string
	for _, m := range r.owners {
		for n := range m {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ReferenceCheck is a reader's check of the probes it names against the
// probes the processors of the process define (RegisteredProbes): it
// returns an error for a name that is, by all appearances, misspelled.
type ReferenceCheck func(defined []string) error

// AddReader records the reference check of a reader (owner) made before the
// processors that feed it: the collector makes the components of a
// pipeline from its end, so a connector exists before the processors of
// the pipelines it ends. RemoveReader forgets it.
func (r *Layouts) AddReader(owner any, check ReferenceCheck) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	if r.readers == nil {
		r.readers = make(map[any]ReferenceCheck)
	}
	r.readers[owner] = check
}

// RemoveReader forgets the reference check of owner.
func (r *Layouts) RemoveReader(owner any) {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	delete(r.readers, owner)
}

// CheckReaders runs the check of every reader against the probes
// registered now, and joins their errors: a processor calls it once its
// probes are registered, so that a misspelled probe in a connector's
// diagram or QTAs stops the collector at start, and `validate`, which
// makes the components without starting them.
func (r *Layouts) CheckReaders() error {
	defined := r.RegisteredProbes()
	r.rmu.Lock()
	checks := make([]ReferenceCheck, 0, len(r.readers))
	for _, c := range r.readers {
		checks = append(checks, c)
	}
	r.rmu.Unlock()
	var errs []error
	for _, c := range checks {
		if err := c(defined); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
