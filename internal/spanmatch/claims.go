// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

import (
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Claims records which probes each deltaq processor and each deltaq
// connector of one collector matches in the spans. A probe matched in both
// would be counted twice by a connector downstream of the processor (once
// from the processor's deltaq.probe, once from its own match) and would
// have two layouts; Claim refuses it when the second component is built,
// which the collector does for `otelcol validate` too. The components are
// given their collector's Claims (internal/collectorstate); the zero Claims is
// empty and ready to use.
type Claims struct {
	mu     sync.Mutex
	owners map[any]claim
}

// claim is what one component matches.
type claim struct {
	component string // `processor "deltaq"`, `connector "deltaq/x"`
	kind      string
	names     map[string]struct{}
}

// Claim records that a component of the given kind ("processor" or
// "connector") and ID matches the probes names in spans, as owner, and
// returns nil; or, recording nothing, an error naming the first probe, by
// name, that a component of the other kind already matches, and both
// components.
// Components of the same kind may match the same probe: each counts its
// own spans. Release forgets owner's claim.
func (claims *Claims) Claim(owner any, kind, id string, names []string) error {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	c := claim{component: fmt.Sprintf("%s %q", kind, id), kind: kind, names: make(map[string]struct{}, len(names))}
	for _, n := range names {
		c.names[n] = struct{}{}
	}
	for _, n := range slices.Sorted(maps.Keys(c.names)) {
		for o, other := range claims.owners {
			if _, ok := other.names[n]; ok && o != owner && other.kind != kind {
				return fmt.Errorf("probe %q is matched in the spans by both the deltaq %s and the deltaq %s, "+
					"which would count its instances twice: keep its match in one of them, "+
					"in the connector's probes unless the probe needs start events and real-time timeouts (the processor)",
					n, other.component, c.component)
			}
		}
	}
	if claims.owners == nil {
		claims.owners = make(map[any]claim)
	}
	claims.owners[owner] = c
	return nil
}

// Release forgets the probes owner claimed.
func (claims *Claims) Release(owner any) {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	delete(claims.owners, owner)
}
