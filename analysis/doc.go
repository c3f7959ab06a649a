// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package analysis is the ΔQ analysis behind every front end: the deltaq
// connector and exporter (through internal/core), a gateway that merges
// agents' windows, and the deltaq command's analyze. It has no collector
// types in its API.
//
// An Engine receives outcome instances (thesis 3.3) and groups them into
// polling windows by end time (thesis 3.6): window k holds the instances
// that ended in [k·I, (k+1)·I) and closes Lag after its end, so instances
// that end just before a boundary but arrive late still count. Each probe
// has a layout (deltaq.Layout) and, per window, a fixed-memory
// deltaq.Histogram of its dMax and bins, or, for log-linear buckets, a
// deltaq.LogLinearHistogram whose observed ΔQ is read on a uniform grid
// (deltaq.Layout.Grid).
//
// Where to look:
//
//   - engine.go: windows, layouts, admission of instances, drops;
//   - analyzer.go: closing a window into a Result (observed and calculated
//     ΔQs, band, QTA, divergence, slack);
//   - trigger.go, snapshot.go: triggers and their re-arming, snapshots;
//   - merge.go: Engine.AddWindows (a request's windows, checked before the
//     lock, added a batch at a time) and Engine.AddWindow, the exact merge
//     of other collectors' windows of the same layout (WindowOf gives a
//     window's mergeable form);
//   - adopt.go, relayout.go: Engine.Adopt, the state carried across a
//     configuration reload, and a probe's move to a new layout;
//   - scenarios.go: Config.WhatIf's scenarios, interventions of package
//     whatif applied to each window's diagram.
//
// The rules behind the numbers — layouts and probes, what a closing window
// computes, the divergence test, the QTA slack and its trend — are in
// docs/design.md, "The analysis"; the triggers' conditions and re-arming
// are in trigger.go.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package analysis
