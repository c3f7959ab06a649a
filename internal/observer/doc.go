// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package observer is the ΔQ observer shared by the deltaq exporter and the
// deltaq connector: in ΔQSD terms (the thesis, sections 3.5, 3.6, 4.1, 4.2
// and 4.4) it is the observer that watches the outcome instances the deltaq
// processor writes on spans, groups them into polling windows, and for each
// window computes every probe's observed ΔQ, the calculated ΔQs of the
// outcome diagram, the 95 % confidence bands, QTA checks, triggers and
// snapshots.
//
// It holds everything the two components share except the collector glue:
// the configuration (the analysis options of analysis.Config squashed in,
// the output options, the collector's bounds), reading instances from spans, the window
// timer, the OTLP metrics and logs built from each window (split into
// requests of at most max_request_bytes), snapshot files with retention,
// the offline analysis of recorded traces, and the self-telemetry. Its
// output goes to a metrics and a logs consumer that the component supplies
// at Start: the exporter's OTLP senders or the connector's next pipelines.
// The analysis itself is the analysis package.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package observer // import "github.com/deltaq-otel/deltaq/internal/observer"
