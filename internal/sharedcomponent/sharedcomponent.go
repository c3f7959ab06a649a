// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package sharedcomponent keeps one value per component ID for a factory
// whose component the collector creates several times under one ID, once
// per pipeline or pair of signals: the processor's traces and logs sides
// share one in-flight table, the connector's outputs one analysis. The
// collector's contrib components keep such a map too (their
// internal/sharedcomponent); this one is the deltaq components' single copy.
package sharedcomponent // import "github.com/deltaq-otel/deltaq/internal/sharedcomponent"

import (
	"sync"

	"go.opentelemetry.io/collector/component"
)

// Map holds one value per component ID, made on first use and forgotten
// when released, so that a collector that reloads its configuration builds
// fresh values. The zero Map is empty and ready to use.
type Map[V comparable] struct {
	mu sync.Mutex
	m  map[component.ID]V
}

// LoadOrCreate returns the value of id, making it with create on first
// use. create receives the value's release function, which forgets the
// value (if it is still id's: a released and re-created ID keeps its new
// value); an error of create leaves the map unchanged.
func (m *Map[V]) LoadOrCreate(id component.ID, create func(release func()) (V, error)) (V, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.m[id]; ok {
		return v, nil
	}
	var v V
	release := func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if cur, ok := m.m[id]; ok && cur == v {
			delete(m.m, id)
		}
	}
	v, err := create(release)
	if err != nil {
		var zero V
		return zero, err
	}
	if m.m == nil {
		m.m = make(map[component.ID]V)
	}
	m.m[id] = v
	return v, nil
}

// Load returns the value of id, if any.
func (m *Map[V]) Load(id component.ID) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[id]
	return v, ok
}

// Len returns the number of IDs that have a value.
func (m *Map[V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}
