// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// Result is the analysis of one closed window.
type Result struct {
	// Start and End bound the window: instances that ended in [Start, End).
	// In single-window mode they are the earliest and latest instance end.
	Start, End time.Time
	// Probes holds every known probe, sorted by name, including the probes
	// without an instance in this window.
	Probes []ProbeResult
	// Triggers are the triggers that fired in this window.
	Triggers []TriggerEvent
	// Snapshots are the snapshots completed by this window.
	Snapshots []*Snapshot
	// NoInstances lists, sorted, the referenced probes — the outcomes of
	// the diagram and the entries of Config.Probes — that had no instance
	// in this window: their producer may be down, misconfigured, or in
	// another collector whose instances do not reach this engine.
	NoInstances []string
}

// ProbeResult is one probe's analysis in one window.
type ProbeResult struct {
	Name string
	// Counts are the instances of the window by outcome; Totals the running
	// totals since the engine started.
	Counts, Totals Counts
	// Width and Bins are the layout of the window's histogram; zero when no
	// instance of the probe was seen in the window.
	Width float64
	Bins  int
	// BinCounts are the histogram's bin counts (successes), a copy; nil when
	// the window is empty.
	BinCounts []uint64
	// SuccessSum is the sum of the successful delays in seconds.
	SuccessSum float64
	// UnderResolved is true when at least half of the window's successes
	// (and at least one) fell into the first bin: the layout is too coarse
	// for the probe's delays, which are all read as half a bin.
	UnderResolved bool
	// Observed is the observed ΔQ of the window (thesis 4.1.1); nil when the
	// window holds no instance of the probe: an empty window has no ΔQ.
	Observed *deltaq.DeltaQ
	// Calculated is the probe's calculated ΔQ from the outcome diagram
	// (thesis 3.4, 4.1.1); nil when the diagram does not define the probe as
	// an expression, or an input of the expression had no instance.
	Calculated *deltaq.DeltaQ
	// Band is the mean and 95 % band of the observed ΔQs of the last
	// History windows with instances (thesis 4.1.5), at the right bin edges;
	// nil before the first.
	Band *deltaq.ConfidenceBand
	// QTA is the probe's requirement, or nil; QTACheck is its verdict on the
	// observed ΔQ, nil when there is no QTA or no observed ΔQ.
	QTA      *deltaq.QTA
	QTACheck *deltaq.QTACheck
	// Quantiles holds, for each configured q in increasing order, the
	// observed and calculated delays.
	Quantiles []QuantileValue
	// Divergence is the distance sup_t |F_obs(t) − F_calc(t)| between the
	// observed and the calculated ΔQ; valid when HasDivergence.
	Divergence    float64
	HasDivergence bool
	// DivergenceWithheld is true when the probe has an observed and a
	// calculated ΔQ but no divergence is reported (HasDivergence false),
	// because the probe or a probe whose observed ΔQ enters its calculated
	// ΔQ is UnderResolved: each under-resolved stage adds up to half a bin
	// to the calculated ΔQ, a divergence of the binning, not of the system.
	// The divergence trigger then cannot decide its condition.
	DivergenceWithheld bool
}

// FailureRatio returns the intangible mass of the observed ΔQ, the fraction
// of the window's instances that timed out or failed; ok is false for an
// empty window.
func (p *ProbeResult) FailureRatio() (ratio float64, ok bool) {
	if p.Observed == nil {
		return 0, false
	}
	return p.Observed.Intangible(), true
}

// QuantileValue is the delay at quantile Q of the observed and of the
// calculated ΔQ. A quantile above a ΔQ's tangible mass is unreachable
// (deltaq.DeltaQ.Quantile) and is reported as not OK, never as dMax.
type QuantileValue struct {
	Q                        float64
	Observed, Calculated     float64
	ObservedOK, CalculatedOK bool
}

// TriggerKind names a trigger.
type TriggerKind int

// The triggers (thesis 3.5; draft 5.6).
const (
	TriggerQTA TriggerKind = iota
	TriggerFailure
	TriggerLoad
	TriggerDivergence
	numTriggers
)

// String returns "qta", "failure", "load" or "divergence".
func (k TriggerKind) String() string {
	switch k {
	case TriggerQTA:
		return "qta"
	case TriggerFailure:
		return "failure"
	case TriggerLoad:
		return "load"
	case TriggerDivergence:
		return "divergence"
	}
	return "unknown"
}

// TriggerEvent is a trigger that fired.
type TriggerEvent struct {
	Probe string
	Kind  TriggerKind
	// Time is the end of the window in which the trigger fired.
	Time time.Time
	// Observed and Required are the values compared: for qta F_obs(Delay)
	// and the point's p; for failure the failure ratio and MaxFailure; for
	// load the window's instance count and MaxInstances; for divergence the
	// distance and MaxDivergence.
	Observed, Required float64
	// Delay is the QTA point's delay for a qta trigger, else zero.
	Delay time.Duration
	// SnapshotID is the snapshot the trigger started or joined; 0 when
	// snapshots are off.
	SnapshotID int64
}
