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
// has, per window, a fixed-memory deltaq.Histogram whose shape (dMax, bins)
// is the probe's layout, or, for a probe with log-linear buckets
// (Config.LookupLogLinear), a deltaq.LogLinearHistogram whose observed ΔQ
// is read on a uniform grid (deltaq.LogLinear.GridWidth).
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
// # Layouts and probes
//
// Hostile or unlucky input must not corrupt the ΔQs, so configuration, not
// span data, decides: a probe's layout is the one of Config.Probes, else
// the one Config.LookupLogLinear or Config.LookupLayout gives (the deltaq
// processor that produces the probe), else that of the probe's first accepted instance, and it changes
// only when that processor announces a new one (a probe with dmax: auto),
// at a window boundary, so that no window mixes two layouts (relayout.go).
// An instance that carries another dMax
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
//   - the QTA verdict (thesis 2.1.6, 4.1.3) and the QTA slack, quantiles,
//     failure ratio and the divergence sup_t |F_obs(t) − F_calc(t)| between
//     observed and calculated ΔQ, which grows when the components stop
//     being independent (thesis 2.1.8), the early sign of overload, with
//     its significance, all read at the analysis resolution (fine.go), not
//     the probe's bins. The divergence is withheld when the probe or an
//     input of its expression is under-resolved (most of its successes in
//     the first bin of the diagram's grid), because each such stage adds
//     up to half a bin to the calculated ΔQ;
//   - triggers (thesis 3.5; conditions of the draft's section 5.6) and
//     snapshots (thesis 3.5.1).
//
// # Divergence as a test
//
// Two ΔQs estimated from finite windows differ even when the system is
// exactly what the diagram says: for n instances the distance between an
// empirical CDF and its law is of order 1/√n, 0.1 to 0.2 for the 60 to 200
// instances of a one-second window. So a fixed bound on the distance
// either never fires or fires on noise. Each divergence is therefore
// tested (ProbeResult.DivergenceTest): a two-sample Kolmogorov–Smirnov
// test of H₀ "the observed ΔQ is the calculated one" (deltaq.KSTwoSample,
// which cites the sources):
//
//   - the observed ΔQ is an empirical CDF of n instances, every outcome
//     counted;
//   - the calculated ΔQ is an estimate too, made from its components'
//     observed ΔQs, and is worth m = (Σ 1/nᵢ)⁻¹ instances for components
//     of nᵢ instances (deltaq.EffectiveCount says why this bounds its
//     variance); the statistic is λ = √(n·m/(n+m))·D, as for two
//     independent samples;
//   - ΔQs are improper: the mass that failed or timed out is taken as a
//     point at +∞, so both are proper distributions on [0, ∞] and the
//     difference of the failure ratios is part of D (the value at dMax).
//     D is read over [0, min dMax] only (deltaq.Distance), a subset of
//     [0, ∞], which can only lower it;
//   - the p-value is the asymptotic Kolmogorov distribution's P(K > λ)
//     (deltaq.KolmogorovQ). Binned data make the test conservative: D is
//     read at bin edges, and the null distribution of D for discrete data
//     is smaller than for continuous data;
//   - D is the distance of the observed ΔQ, itself known only within its
//     analysis buckets, beyond the calculated ΔQ's discretisation bounds
//     (ProbeResult.Bounds, deltaq.Bounds.BeyondBounds): the diagram
//     evaluated again on the inputs' pessimistic and optimistic bounds
//     (their masses at the grid edges above and below their buckets),
//     which contain the exact calculated ΔQ of inputs anywhere within
//     their buckets. For that exact ΔQ and any observed CDF within its
//     own bounds, |F_obs − F| ≥ D at the edge where D is reached, so the
//     test keeps its level whatever the resolution: the discretisation
//     error, which no number of instances removes, is not taken for a
//     signal.
//
// Every simplification errs on the side of a larger p-value, so the rate
// of false alarms is at most α. When the components are the stages of the
// probe's own instances (spans of the same traces), the observed and the
// calculated CDFs share their instances and their errors are positively
// correlated: under H₀ their difference is the part of the end-to-end
// indicator that no single stage explains (the residual of its Hoeffding
// decomposition), whose variance is at most the F(1−F)/n of the observed
// CDF alone. The test is then still valid but needlessly weak, and
// DivergenceTrigger.Paired compares the calculated ΔQ as if it were exact
// (m = +Inf) as long as no component has fewer instances than the probe.
// Pooling the last DivergenceTrigger.Pool windows (their CDFs weighted by
// instance counts, the bounds likewise) multiplies the instances tested;
// with DivergenceTrigger.Target the pool is the fewest recent windows
// whose detectable divergence reaches the target. The detectable
// divergence (ProbeResult.DetectableDivergence) is what a quiet test could
// have seen: (λ_α + ½·z₀.₈)/√Nₑ plus the bounds' width, an upper bound of
// the divergence detected with 80 % power. On a two-stage sequence of
// independent stages (this package's tests: 1000 windows of 50, 200 and
// 1000 instances on 0.5 ms bins; 300 windows of 50 and 200 on 2, 1 and
// 0.5 ms bins) no window was significant at α = 0.05, paired or not; with
// dependent stages the power depends on the pairing, on n and on the bins
// (the tests log it).
//
// # QTA slack
//
// For a probe with QTA points, ProbeResult.Slack says how far each point
// (dₖ, pₖ) is from failing: in probability, F_obs(dₖ) − pₖ, and in delay,
// the margin dₖ − Q_obs(pₖ) by which the pₖ-quantile may still move later.
// F_obs(dₖ) is the verdict's own reading of the window's counts
// (qtaread.go): exact where dₖ is an edge of the probe's bins, else off by
// at most the instances of dₖ's analysis bucket. The minimum over the
// points is the headline, negative exactly when the qta trigger's raw
// condition holds. A least-squares line through the minimum
// slack of the last W windows against their end times (SlackTrend)
// extrapolates it, and its slope's standard error (SlackTrend.StdErr)
// weighs each window by the larger of the fit's residual variance and the
// window's binomial variance F(1 − F)/n: the slack_trend trigger fires only
// when both the slope and the line at the horizon are below zero at the
// configured one-sided confidence (Student's t of W − 2 degrees of
// freedom), so that a steady load fires it in at most 1 − confidence of
// the windows.
//
// # Triggers and re-arming
//
// A trigger fires once when its condition becomes true, and not again while
// the condition holds. It re-arms after the condition has been false in
// Config.RearmWindows consecutive windows (default 1). A window that cannot
// decide a condition — no instance, so no observed ΔQ; for divergence no
// calculated ΔQ, or a withheld divergence; for slack_trend fewer than W
// windows with a slack — neither fires the trigger nor counts towards
// re-arming.
// The conditions, per probe:
//
//   - qta: F_obs(dₖ) < pₖ for some QTA point (dₖ, pₖ): fewer instances than
//     agreed completed by dₖ (draft 5.6.2, "Percentiles"); with
//     Triggers.Confidence, only when an exact binomial test finds the
//     breach significant for the window's instances;
//   - failure: failure ratio > MaxFailure, i.e. success(ΔQ_obs) <
//     success(QTA) (draft 5.6.2, "Failure"); with Triggers.Confidence,
//     only when significant likewise;
//   - load: instances in the window > MaxInstances (draft 5.6.1);
//   - divergence: the divergence test's p-value is below α and the
//     distance above MaxDivergence (0 by default) in DivergenceTrigger.Windows
//     consecutive windows that have a test (a window without one neither
//     breaks nor extends the run);
//   - slack_trend: the least-squares line of the minimum QTA slack over
//     the last W windows falls significantly and is significantly below
//     zero at the horizon (SlackTrend.Significant).
//
// Works cited by short name ("the thesis, section 3.6", "the draft, section
// 5.6") are listed in the repository's docs/references.md; the architecture
// and the contracts are described in docs/design.md.
package analysis
