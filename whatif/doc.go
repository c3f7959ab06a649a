// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package whatif is the language of what-if interventions on the parts of a
// system, and their application to a part's ΔQ: an affine change of its
// delay (A*X + B), a substituted distribution (the language of package
// dist), injected failures (X + never 5%), the removal of a call, and the
// resilience patterns a caller wraps a call in — timeout(D), retry(N, D)
// and hedge(D) — with the extra attempts (load) each costs.
//
// Parse and ParseExpr read the expressions (Help); Intervention.Transform
// applies one to a ΔQ and Intervention.ExtraAttempts gives its load. The
// learned models of package model (`deltaq whatif`) and the live what-if
// scenarios of package analysis both use it. The resilience patterns'
// formulas are derived in resilience.go, after "The Tail at Scale" (Dean
// and Barroso) and the retryOverlap of the Haskell deltaq library.
package whatif
