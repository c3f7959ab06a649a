// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package collectorstate holds what the deltaq components of one collector share
// across their component IDs: the probe layouts the processors configure,
// with the reference checks of the connectors and exporters that read
// them; which probes each processor and connector matches in the spans;
// and the state they hand over across a configuration reload.
//
// The collector gives its components nothing in common to share this
// through. It makes each component from its own factory, and the code the
// builder generates calls each factory's NewFactory with no argument. Its
// host offers the components only its extensions, and only when they start;
// `otelcol validate` makes the components without starting them or any
// extension. Yet the checks between the components (a misspelled probe in
// a connector's diagram, a probe matched by a processor and a connector)
// must run when they are made, so that validate refuses what a start would.
// So the components of one collector meet in state of the process, and
// this package is its one home: Collector returns it.
//
// Only the NewFactory functions the builder calls, and the main packages
// that stand in for a collector, call Collector (internal/archcheck checks
// it); everything below them is given a *State. Tests make their own with
// New.
package collectorstate // import "github.com/deltaq-otel/deltaq/internal/collectorstate"

import (
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/reload"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// State is what the deltaq components of one collector share.
type State struct {
	// Layouts is the registry of the probe layouts the processors
	// configure, and of the reference checks of the connectors and
	// exporters that read them.
	Layouts *contract.Layouts
	// Claims records which probes each processor and connector matches in
	// the spans.
	Claims *spanmatch.Claims
	// Reload carries the components' state across a configuration reload.
	Reload *reload.Handover
}

// New returns an empty State: no probes, no claims, nothing parked.
func New() *State {
	return &State{Layouts: new(contract.Layouts), Claims: new(spanmatch.Claims), Reload: reload.New()}
}

// collector is the State of the collector this process runs.
var collector = New()

// Collector returns the State of the collector this process runs, the same
// on every call.
func Collector() *State { return collector }
