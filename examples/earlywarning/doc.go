// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package earlywarning holds the end-to-end test of the ΔQ early warnings
// through the built collector: the synthetic workload (cmd/dqworkload)
// ramps its load λ up while the deltaq connector (testdata/collector.yaml)
// tests, every window, whether the observed ΔQ of the job departs from the
// one calculated from its stages (the divergence test), and extrapolates
// the job's QTA slack (the slack trend). The test receives the connector's
// metrics and trigger records over OTLP and records a timeline: per window
// the load, the divergence test's p-value, the minimum slack, the QTA
// verdict and the triggers that fired.
//
// Two topologies serve the same two stages: tandem, a server and a buffer
// per stage, whose stage delays are independent at any load (Reich's
// theorem), and shared, one server for both stages, whose stage delays
// depend on each other more as the load rises. The divergence test should
// find the dependence of the shared server before its QTA breaks, and find
// nothing in the tandem while its QTA holds; the slack trend should fire
// before the first window whose breach of the QTA is significant in both
// (a window's raw verdict breaks on its own noise before).
//
// The test needs Linux, the built collector and the Go tool (it builds the
// workload), and runs only when DELTAQ_EARLYWARNING_E2E is set. By default
// it runs one ramp of the shared topology, stopped once the QTA's breach
// is significant (about a minute); DELTAQ_EARLYWARNING_LONG=1 runs full ramps of both
// topologies, then the demo's own configuration (examples/demo/collector.yaml)
// on a shared-server ramp and in its healthy phase, where no trigger may
// fire (about 11 minutes), and prints a Markdown table of the loads at
// which each warning came:
//
//	make build
//	DELTAQ_EARLYWARNING_E2E=1 go test -count=1 -v ./examples/earlywarning/
//	DELTAQ_EARLYWARNING_E2E=1 DELTAQ_EARLYWARNING_LONG=1 go test -count=1 -v -timeout 15m ./examples/earlywarning/
//
// OTELCOL names another collector binary (an absolute path).
package earlywarning
