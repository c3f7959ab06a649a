// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package workload is the synthetic system that the dqworkload command runs
// (its documentation describes the system and the flags): the
// discrete-event simulation of the two-worker M/M/1/K system of the thesis's
// chapter 6.1 in its three topologies (Simulator, sim.go), the M/M/1/K
// formulas of its model (MM1K, queueing.go), the batching of its spans and
// start events into OTLP (Batcher, otlp.go) and their sending over
// OTLP/gRPC with a bounded queue (Sender, sender.go). The command is the
// flags, the wall-clock loop and the output around them.
package workload // import "github.com/deltaq-otel/deltaq/internal/workload"
