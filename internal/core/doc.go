// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package core is the ΔQ component the deltaq connector, the deltaq
// exporter and the offline analysis (deltaq analyze) run: in ΔQSD terms
// (the thesis, sections 3.5, 3.6, 4.1, 4.2 and 4.4) it is the observer
// (Observer) that watches the outcome instances of the spans, groups them
// into polling windows, and for each window computes every probe's observed
// ΔQ, the calculated ΔQs of the outcome diagram, the 95 % confidence bands,
// QTA checks, triggers and snapshots.
//
// It holds everything the two components share except the collector glue.
// Where to look:
//
//   - config.go, ranges.go: the options (analysis.Config squashed in, the
//     output options) and their one check, Config.Check;
//   - instances.go: outcome instances read from spans; windows.go: agents'
//     windows read from metrics on a gateway, and the mergeable form an
//     agent emits;
//   - observer.go: the window timer, and what each closed window becomes;
//   - metrics.go, observed.go, logs.go, split.go: the OTLP output, cut
//     into requests of at most max_request_bytes, to the metrics and logs
//     consumers the component supplies at Start (the exporter's OTLP
//     senders or the connector's next pipelines);
//   - snapshot_files.go: snapshot files and their retention;
//   - handover.go: the state carried across a configuration reload;
//   - offline.go: the analysis of recorded traces (deltaq analyze);
//   - telemetry.go: the self-telemetry it records, with the instruments
//     each component declares in its metadata.yaml (Instruments).
//
// The analysis itself is the analysis package; docs/design.md ("The path
// of a span") places this package in the whole.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package core // import "github.com/deltaq-otel/deltaq/internal/core"
