// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../bin/mdatagen metadata.yaml

// Package deltaqconnector implements the deltaq connector, the
// collector-native way to turn traces into ΔQ metrics and logs: it reads the
// outcome instances that the deltaq processor writes on spans, or matches
// its own probes in the spans (probes with a match, internal/spanmatch);
// on a gateway it merges agents' windows from its metrics input. It groups
// the instances into polling windows, computes each probe's observed ΔQ, the calculated
// ΔQs of the outcome diagram, confidence bands, QTA checks and triggers (the
// thesis, sections 3.5, 3.6, 4.1, 4.2 and 4.4), and emits them into the
// metrics and logs pipelines that name it as a receiver. The analysis is
// the ΔQ observer of internal/core, the same as the deltaq exporter's:
// same configuration, same metrics and log events.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"
