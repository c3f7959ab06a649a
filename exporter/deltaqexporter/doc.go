// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:generate ../../bin/mdatagen metadata.yaml

// Package deltaqexporter implements the deltaq exporter: it reads the outcome
// instances that the deltaq processor writes on spans, groups them into
// polling windows, computes each probe's observed ΔQ, the calculated ΔQs of
// the outcome diagram, confidence bands, QTA checks and triggers (the
// thesis, sections 3.5, 3.6, 4.1, 4.2 and 4.4), and sends the results as OTLP
// metrics and OTLP logs through the collector's own otlp_grpc or otlp_http
// exporter. It is collector glue around the ΔQ observer of internal/core,
// which the deltaq connector and the offline `deltaq analyze` command share.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
