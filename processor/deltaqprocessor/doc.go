// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../bin/mdatagen metadata.yaml

// Package deltaqprocessor provides the deltaq processor: it maps the spans of
// configured probes to ΔQSD outcome instances (success, timeout, failure) and
// emits timeouts in real time for instances announced by start events whose
// span has not ended within dMax.
//
// An outcome instance is the observation of one execution of an outcome
// between its start and end events (thesis, sections 3.3 and 3.4). Its
// outcome is a success when it ends within dMax, a timeout when it does not
// (the extended notion of failure of section 3.2), and a failure when it
// ends within dMax but the user's failure rule holds. The processor writes
// the result as span attributes (the contract in internal/contract) for the
// deltaq connector or exporter to read; docs/design.md ("The path of a
// span") follows a span through it.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package deltaqprocessor
