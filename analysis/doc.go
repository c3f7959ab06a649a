// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package analysis is the ΔQ analysis shared by the deltaq exporter and the
// deltaq analyze command: one implementation, two front ends. It has no
// collector types in its API.
//
// An Engine receives outcome instances (thesis 3.3) and groups them into
// polling windows by end time (thesis 3.6): window k holds the instances
// that ended in [k·I, (k+1)·I) and closes Lag after its end, so instances
// that end just before a boundary but arrive late still count. Each probe
// has, per window, a fixed-memory deltaq.Histogram whose shape (dMax, bins)
// is the probe's layout.
//
// # Layouts and probes
//
// Hostile or unlucky input must not corrupt the ΔQs, so configuration, not
// span data, decides: a probe's layout is the one of Config.Probes, else
// the one Config.LookupLayout gives (the deltaq processor that produces the
// probe), else that of the probe's first accepted instance, and it does not
// change while the probe is tracked. An instance that carries another dMax
// or bin count is classified under the probe's layout from its own delay
// (Engine.Add); a timeout whose own dMax is shorter than the probe's cannot
// be placed and is refused. Configured probes are always tracked; at most
// Config.MaxProbes others are, and those idle for Config.ProbeIdleTimeout
// are forgotten. Every instance not counted is counted by reason (Drops).
//
// When a window closes the Engine computes, for every known probe:
//
//   - the observed ΔQ of the window (thesis 4.1.1); an empty window has
//     counts of zero and no ΔQ, never a zero-delay one;
//   - the calculated ΔQ from the outcome diagram, for probes the diagram
//     defines as an expression, from the observed ΔQs of their components
//     (thesis 3.4, 4.1.1);
//   - the mean and 95 % band of the last K observed ΔQs (thesis 4.1.5, with
//     the Student t band μ ± t(0.975, n−1)·s/√n), kept by a
//     deltaq.RunningBand per probe;
//   - the QTA verdict (thesis 2.1.6, 4.1.3), quantiles, failure ratio and
//     the divergence sup_t |F_obs(t) − F_calc(t)| between observed and
//     calculated ΔQ, which grows when the components stop being independent
//     (thesis 2.1.8), the early sign of overload. The divergence is withheld
//     when the probe or an input of its expression is under-resolved (most
//     of its successes in the first bin), because each such stage adds up
//     to half a bin to the calculated ΔQ;
//   - triggers (thesis 3.5; conditions of the draft's section 5.6) and
//     snapshots (thesis 3.5.1).
//
// # Triggers and re-arming
//
// A trigger fires once when its condition becomes true, and not again while
// the condition holds. It re-arms after the condition has been false in
// Config.RearmWindows consecutive windows (default 1). A window that cannot
// decide a condition — no instance, so no observed ΔQ; for divergence no
// calculated ΔQ, or a withheld divergence — neither fires the trigger nor
// counts towards re-arming.
// The conditions, per probe:
//
//   - qta: F_obs(dₖ) < pₖ for some QTA point (dₖ, pₖ): fewer instances than
//     agreed completed by dₖ (draft 5.6.2, "Percentiles");
//   - failure: failure ratio > MaxFailure, i.e. success(ΔQ_obs) <
//     success(QTA) (draft 5.6.2, "Failure");
//   - load: instances in the window > MaxInstances (draft 5.6.1);
//   - divergence: sup_t |F_obs(t) − F_calc(t)| > MaxDivergence.
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package analysis
