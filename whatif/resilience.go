// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package whatif

import (
	"fmt"
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// The resilience patterns on the ΔQ of a call. Let x be the call's ΔQ on
// bins of width w, p[i] the mass of bin i = (i·w, (i+1)·w] and F its CDF;
// D is rounded to k = max(1, round(D/w)) bins, D′ = k·w, so that every
// formula below is exact on the grid. An attempt answers within D′ with
// probability s = F(D′) = Σ_{i<k} p[i]; q = 1 − s is that of an attempt
// that is slower or fails. A failure carries no time in a ΔQ, so a failed
// attempt is taken as one that has not answered at D′.
//
// timeout(D): the caller gives up at D′:
//
//	y[i] = p[i] for i < k; intangible mass q.
//
// retry(N, D): attempt j = 0 … N starts at j·D′ when the ones before it
// all timed out, each an independent draw, and is abandoned at its own
// timeout; the call fails when all N + 1 did:
//
//	y[j·k + i] = q^j · p[i]   (i < k, j ≤ N);   intangible mass q^(N+1),
//
// and the attempts A satisfy P(A > j) = q^j for j ≤ N, so the expected
// extra attempts per call are E[A] − 1 = Σ_{j=1..N} q^j = q(1 − q^N)/(1 − q)
// (N when q = 1).
//
// hedge(D): a second attempt is sent at D′ unless the first has answered;
// both race and the first answer wins ("The Tail at Scale", Dean and
// Barroso, section "hedged requests"):
//
//	F_y(t) = 1 − (1 − F(t))·(1 − F(t − D′)),   intangible mass f²
//
// (f the failure mass of x: the call fails only when both attempts do),
// deltaq.FirstToFinish of x and x shifted by D′; the expected extra
// attempts per call are q, which the paper's advice of hedging at the 95th
// percentile keeps near 5 %. The same race of time-shifted independent
// copies is the Haskell deltaq library's retryOverlap; retry(N, D) differs
// by abandoning each attempt at its timeout, which bounds the call at
// (N+1)·D′.

// patternBins returns k, the bins of D on width w.
func (iv Intervention) patternBins(w float64) int {
	return max(1, int(math.Round(iv.D/w)))
}

// applyPattern returns the ΔQ of the call x under the resilience pattern.
// Its errors, as Transform's, do not name the intervention: its callers
// do (TARGET=EXPR, probe NAME: EXPR).
func (iv Intervention) applyPattern(x deltaq.DeltaQ) (deltaq.DeltaQ, error) {
	w := x.Width()
	k := iv.patternBins(w)
	switch iv.Pattern {
	case Timeout:
		return deltaq.Truncate(x, k)
	case Hedge:
		if k+x.Bins() > deltaq.MaxBins {
			return deltaq.DeltaQ{}, fmt.Errorf("%d bins of D plus the call's %d are more than %d bins; a coarser model (--bins) or a shorter D", k, x.Bins(), deltaq.MaxBins)
		}
		shifted := make([]float64, k+x.Bins())
		copy(shifted[k:], x.PDF())
		late, err := deltaq.New(w, shifted)
		if err != nil {
			return deltaq.DeltaQ{}, err
		}
		return deltaq.FirstToFinish(x, late)
	}
	// Retry.
	if (iv.N+1)*k > deltaq.MaxBins {
		return deltaq.DeltaQ{}, fmt.Errorf("%d attempts of %d bins of D are more than %d bins; a coarser model (--bins) or a shorter D", iv.N+1, k, deltaq.MaxBins)
	}
	p := x.PDF()
	s := 0.0
	for i := 0; i < min(k, len(p)); i++ {
		s += p[i]
	}
	q := max(0, 1-s)
	y := make([]float64, (iv.N+1)*k)
	for j, qj := 0, 1.0; j <= iv.N; j, qj = j+1, qj*q {
		for i := 0; i < min(k, len(p)); i++ {
			y[j*k+i] = qj * p[i]
		}
	}
	return deltaq.New(w, y)
}

// ExtraAttempts returns the expected attempts per call beyond the first
// that the intervention adds to a call of ΔQ x (see the formulas above):
// Σ_{j=1..N} q^j for retry(N, D), q for hedge(D), 0 for any other.
func (iv Intervention) ExtraAttempts(x deltaq.DeltaQ) float64 {
	if iv.Pattern != Retry && iv.Pattern != Hedge {
		return 0
	}
	k := iv.patternBins(x.Width())
	p := x.PDF()
	s := 0.0
	for i := 0; i < min(k, len(p)); i++ {
		s += p[i]
	}
	q := min(max(0, 1-s), 1)
	if iv.Pattern == Hedge {
		return q
	}
	extra, qj := 0.0, 1.0
	for j := 1; j <= iv.N; j++ {
		qj *= q
		extra += qj
	}
	return extra
}
