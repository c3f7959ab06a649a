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
	// In single-window mode they are the earliest and latest instance end,
	// where a window merged from another engine (AddWindow) counts with its
	// own start and end, its instances' ends being unknown.
	Start, End time.Time
	// SamplingPeriod is how long the window sampled, the period its QoO
	// rate of completed instances is read over (the QoO draft's "total
	// duration of the sampling period", section 3.1.2): End − Start for a
	// window of the interval, but for the partial window Engine.Flush
	// closes at a time inside it (shutdown, the end of a trace file) from
	// Start to that time, and 0 for one it closes after that time; in
	// single-window mode from the earliest instance start to the latest
	// instance end (End), so that it holds every instance whole — n
	// instances a period T apart, each lasting d, sampled (n − 1)·T + d,
	// where their ends span only (n − 1)·T. A
	// merged window of another engine counts from its start. 0 for a
	// single window without instances.
	SamplingPeriod time.Duration
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
	// Contributors is the number of other engines (agents) whose windows
	// of configured probes were merged into this one (Engine.AddWindow),
	// with those that said they saw no instance in it (Engine.AddIdle): an
	// agent that is up and idle counts, one that is down or whose windows
	// were lost does not. 0 when the engine saw the instances itself.
	Contributors int
	// SteadyContributors are those of the Contributors that were up
	// throughout the window: whose windows or words carry a
	// deltaq.agent.start (Window.SourceStart) from the window's start or
	// before, or none. An agent restarted in the window under
	// another name is two of the Contributors (its name before the
	// restart and its new one) and one of these; an agent restarted under
	// its name is one of both.
	SteadyContributors int
	// SharedSources are the names under which two observers sent windows
	// of one probe in this window, each of a start (Window.SourceStart)
	// from before the window before it: two agents running at once under
	// one name (one service.instance.id), which count as one contributor.
	// A restart under the name gives two starts too, but the agent before
	// the restart stopped before the one after it began, which began in
	// the window then (the window before too is allowed, for the agents'
	// clocks). Idle words, which name no probe, tell none. Nil when none.
	SharedSources []string
}

// ProbeResult is one probe's analysis in one window.
type ProbeResult struct {
	Name string
	// Counts are the instances of the window by outcome; Totals the running
	// totals since the engine started.
	Counts, Totals Counts
	// Width and Bins are the layout of the window's histogram; zero when no
	// instance of the probe was seen in the window. For a probe with
	// log-linear buckets they are the uniform grid its observed ΔQ is read
	// on (deltaq.LogLinear.GridWidth), and Edges gives its buckets.
	Width float64
	Bins  int
	// BinCounts are the histogram's bin counts (successes), a copy; nil when
	// the window is empty. For a log-linear probe, the bucket counts, one
	// per entry of Edges.
	BinCounts []uint64
	// Edges are the upper edges, in seconds, of a log-linear probe's
	// buckets (deltaq.LogLinear.Edges without the 0): bucket j is
	// [Edges[j−1], Edges[j]), the first [0, Edges[0]); nil for uniform bins
	// and for an empty window. Its observed ΔQ is the exact conversion of
	// the buckets to the grid Width × Bins (deltaq.LogLinearHistogram.DeltaQ),
	// whose CDF is exact at every bucket edge on the grid and off by at
	// most the mass of the straddling bucket elsewhere.
	Edges []float64
	// LogLinear is the layout of a log-linear probe's buckets; zero for
	// uniform bins and for an empty window.
	LogLinear deltaq.LogLinear
	// SuccessSum is the sum of the successful delays in seconds, each
	// times its instance's adjusted count.
	SuccessSum float64
	// Exemplars name instances of the window by their spans: with
	// exemplars enabled, the slowest success of each group of bins by
	// increasing delay, then the last timeout and the last failure
	// (ExemplarConfig); nil otherwise. Only the instances seen by this
	// engine are named: windows merged from agents bring counts only.
	Exemplars []Exemplar
	// Worst are the window's worst instances (Config.WorstInstances).
	Worst WorstInstances
	// EffectiveInstances is the number of independent instances behind
	// Counts for the divergence test: Counts.Total() without sampling, the
	// number of spans when each stands for the same number of instances
	// (adjusted count), Kish's (Σw)²/Σw² in general; windows merged from
	// other engines count with the Σw and Σw² they carry (WeightSum,
	// WeightSquares), those that carry none as unsampled.
	EffectiveInstances float64
	// UnderResolved is true when at least half of the window's successes
	// (and at least one) fell into the first bin of the analysis grid (of
	// the diagram's, for a probe of the diagram): the grid is too coarse for
	// the probe's delays, which are all read as half a bin, and its
	// divergence is withheld. The diagram's grid spans its largest delay in
	// deltaq.AnalysisBins bins, so only a probe thousands of times faster
	// than another of its diagram is under-resolved. For a window merged
	// from engines that sent no analysis counts, the first bin (or bucket)
	// of the probe's own layout.
	UnderResolved bool
	// Observed is the observed ΔQ of the window (thesis 4.1.1) in the
	// probe's own layout, what its user sees; nil when the window holds no
	// instance of the probe: an empty window has no ΔQ.
	Observed *deltaq.DeltaQ
	// Analysis is the same window's ΔQ at the analysis resolution
	// (deltaq.Fine) up to the probe's dMax, on the uniform grid of width
	// AnalysisWidth: what the QTA checks, the quantiles and the divergence
	// test read, so that they do not depend on the bins the user chose to
	// see. It is Observed when the window holds counts merged from an
	// engine that sent no analysis counts. UnderResolved is read on it.
	Analysis *deltaq.DeltaQ
	// AnalysisWidth is the width, in seconds, of Analysis's grid:
	// deltaq.AnalysisWidth of the probe's dMax. DiagramWidth is that of the
	// grid the window's diagram composes its probes on (and the calculated
	// ΔQs' width), deltaq.AnalysisWidth of the largest delay its probes
	// reached; 0 for a probe outside the diagram.
	AnalysisWidth, DiagramWidth float64
	// FineIndex and FineCounts are the window's completed instances at the
	// analysis resolution, sparse: FineCounts[j] in bucket FineIndex[j] of
	// deltaq.Fine, increasing (successes, and instances that completed
	// after the probe's dMax); nil when the window's counts include windows
	// merged without them. WeightSum and WeightSquares are Σw and Σw² over
	// the adjusted counts w of the instances behind Counts (instances of
	// merged windows that carried none counted as w = 1): what a gateway
	// needs for the effective count.
	FineIndex                []int
	FineCounts               []uint64
	WeightSum, WeightSquares float64
	// fine holds the window's counts at the analysis resolution while the
	// window is analysed (the observed quantiles are read from them, up to
	// fineCut ns); nil when Analysis is Observed.
	fine    *deltaq.LogLinearHistogram
	fineCut int64
	// fineComplete: FineIndex and FineCounts hold every completed instance.
	fineComplete bool
	// converted: some of the display counts were read from the analysis
	// counts of a window of another layout (finemerge.go), so they bound
	// F(d) no better than fine does; the QTA readings read fine alone.
	converted bool
	// OtherLayouts says that windows of agents in another layout than the
	// probe's were merged, read into it from their analysis counts, each
	// bucket at its upper edge (finemerge.go).
	OtherLayouts bool
	// Calculated is the probe's calculated ΔQ from the outcome diagram
	// (thesis 3.4, 4.1.1), at the analysis resolution up to the probe's
	// dMax, composed from what its parts' instances did up to the largest
	// dMax of the wholes they are part of; nil when the diagram does not
	// define the probe as an expression, or an input of the expression had
	// no instance.
	Calculated *deltaq.DeltaQ
	// Bounds are the calculated ΔQ's discretisation bounds: the diagram
	// evaluated on the inputs' pessimistic and optimistic bounds (their
	// masses at the upper and lower edges of their bins), which contain the
	// exact calculated ΔQ of inputs anywhere within their bins
	// (deltaq.Bounds); nil without a calculated ΔQ. BoundsWidth is their
	// largest CDF gap up to the observed dMax (deltaq.Bounds.Width): a
	// divergence below it cannot be told from the binning, so a width near
	// the divergences that matter says the bins are too coarse.
	Bounds      *deltaq.Bounds
	BoundsWidth float64
	// CalculatedQTACheck is the QTA verdict on the calculated ΔQ, with
	// the pessimistic bound (deltaq.QTA.CheckBounded); nil without a QTA
	// or a calculated ΔQ.
	CalculatedQTACheck *deltaq.QTACheck
	// QTABreachP and FailureBreachP are the p-values of the exact
	// binomial tests that the window breaks a QTA point (the smallest over
	// the points times their number, Bonferroni's bound, so that a QTA of
	// many points is broken by chance no more often than one of a single
	// point) and max_failure (Triggers.Confidence says how they are read);
	// 1 when the bound holds or there is no QTA.
	QTABreachP, FailureBreachP float64
	// WhatIf holds the probe's calculated ΔQ under each what-if scenario
	// (Config.WhatIf) that intervenes on an outcome entering it, in the
	// order of the scenarios' names; a scenario lacking an input in the
	// window, like the calculated ΔQ, has no entry.
	WhatIf []WhatIf
	// Band is the mean and 95 % band of the observed ΔQs of the last
	// History windows with instances (thesis 4.1.5), at the right bin edges
	// (with Config.BandPoints at a few of them, ConfidenceBand.At); nil
	// before the first.
	Band *deltaq.ConfidenceBand
	// QTA is the probe's requirement, or nil; QTACheck is its verdict on the
	// observed ΔQ, read from the window's counts at both resolutions
	// (qtaread.go), nil when there is no QTA or no observed ΔQ.
	QTA      *deltaq.QTA
	QTACheck *deltaq.QTACheck
	// Slack is how far the observed ΔQ is from breaking the QTA's points,
	// and its trend; nil when QTACheck is nil or the QTA has no point.
	Slack *QTASlack
	// Quantiles holds, for each configured q in increasing order, the
	// observed and calculated delays.
	Quantiles []QuantileValue
	// Divergence is the distance sup_t |F_obs(t) − F_calc(t)| between the
	// observed and the calculated ΔQ; valid when HasDivergence.
	Divergence    float64
	HasDivergence bool
	// DivergenceTest is the two-sample Kolmogorov–Smirnov test of the
	// observed against the calculated ΔQ (see the package documentation),
	// over the last DivergencePooled windows with a divergence, this one
	// included (1 without pooling); valid when HasDivergence. Its Distance
	// is the distance of the observed ΔQ beyond the calculated ΔQ's
	// Bounds (deltaq.Bounds.Beyond; the pooled ΔQs' when DivergencePooled
	// > 1), so that the discretisation error is not taken for a signal;
	// its N is the observed instances, its M the calculated ΔQ's effective
	// instances, and P the p-value.
	DivergenceTest   deltaq.KSTest
	DivergencePooled int
	// DetectableDivergence is the smallest divergence beyond the bounds
	// that the test, at the trigger's α (DefaultDivergenceAlpha when the
	// trigger is off), detects with a power of 80 % given the instances it
	// has, plus BoundsWidth: (λ_α + ½·z₀.₈)/√Nₑ + BoundsWidth, Nₑ the
	// test's effective instances. A quiet test says the divergence is
	// probably below it, not that there is none. Valid when HasDivergence.
	DetectableDivergence float64
	// DivergenceWithheld is true when the probe has an observed and a
	// calculated ΔQ but no divergence is reported (HasDivergence false),
	// because the probe or a probe whose observed ΔQ enters its calculated
	// ΔQ is UnderResolved: each under-resolved stage adds up to half a bin
	// to the calculated ΔQ, a divergence of the binning, not of the system.
	// The divergence trigger then cannot decide its condition.
	DivergenceWithheld bool
	// QoO is the probe's Quality of Outcome in the window, of its observed
	// and calculated ΔQs (qoo.go); nil without a qoo requirement.
	QoO *QoOResult
}

// WhatIf is a probe's calculated ΔQ in one window under one what-if
// scenario: the diagram evaluated on the window's observed ΔQs with the
// scenario's interventions applied to its outcomes.
type WhatIf struct {
	Scenario string
	// DeltaQ is the scenario's ΔQ; nil when Err is set.
	DeltaQ *deltaq.DeltaQ
	// Err is set when an intervention or an operator failed in this
	// window, for instance a result above deltaq.MaxBins.
	Err error
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

// QTASlack is the slack of an observed ΔQ against the points of its QTA:
// how far each point is from failing, in probability and in delay.
type QTASlack struct {
	// Points holds one entry per QTA point, in the QTA's order.
	Points []PointSlack
	// Min is the smallest Slack of the points, the headline: negative
	// exactly when the qta trigger's condition holds.
	Min float64
	// MinMargin is the smallest DelayMargin of the points, valid when
	// MarginOK: every point's P is reached within dMax.
	MinMargin float64
	MarginOK  bool
	// Trend is the least-squares trend of Min over the last windows.
	Trend SlackTrend
}

// PointSlack is the slack of one QTA point (Delay, P).
type PointSlack struct {
	// Delay (seconds) and P are the point's.
	Delay, P float64
	// Slack is F_obs(Delay) − P: the probability by which the point holds,
	// negative when it fails.
	Slack float64
	// DelayMargin is Delay − Q_obs(P) in seconds: how much later the
	// observed P-quantile may move before the point fails, negative when
	// it fails. Valid when MarginOK; when P exceeds the observed tangible
	// mass the quantile is unreachable (deltaq.DeltaQ.Quantile) and the
	// margin is below Delay − dMax, unknown.
	DelayMargin float64
	MarginOK    bool
	// Holds says whether the point holds for the pessimistic reading of
	// the window's counts (every instance at the upper edge of its bin or
	// analysis bucket, whichever is tighter), for its curve only, or
	// neither (deltaq.PointCheck.Holds); PessimisticMargin is Delay minus
	// the pessimistic P-quantile, the margin that holds wherever the
	// instances lie in their bins and buckets, valid when
	// PessimisticMarginOK.
	Holds               deltaq.Holds
	PessimisticMargin   float64
	PessimisticMarginOK bool
}

// SlackTrend is the least-squares line through the minimum slack
// (QTASlack.Min) of the last Windows windows with a slack against the
// windows' end times (the thesis's windows, section 3.6), read at the end
// of the current window.
type SlackTrend struct {
	// OK is true once Windows windows have a slack.
	OK bool
	// Windows is the number of windows fitted.
	Windows int
	// Slope is the line's slope, in slack per second.
	Slope float64
	// Fitted is the line's value at the end of the current window.
	Fitted float64
	// Projected is true when the line is below zero now or reaches zero
	// later (Slope < 0); TimeToViolation is then how long after the end of
	// the current window it does, 0 when it is below zero already.
	Projected       bool
	TimeToViolation time.Duration
	// StdErr is the standard error of Slope: Var(b) = Σ dxᵢ²·uᵢ/Sxx², uᵢ
	// the larger of the residual variance of the fit and window i's
	// binomial variance F(1 − F)/nᵢ at its minimum-slack point.
	StdErr float64
	// Upper is the one-sided upper confidence bound, at the
	// slack_trend::confidence, of the line at the horizon (at the end of
	// the current window without a horizon), with Student's t of W − 2
	// degrees of freedom. Falling is true when the slope's upper bound,
	// Slope + t·StdErr, is below zero, and Significant when Upper is too:
	// the crossing within the horizon is significant.
	Upper       float64
	Falling     bool
	Significant bool
}

// TriggerKind names a trigger.
type TriggerKind int

// The triggers (thesis 3.5; draft 5.6).
const (
	TriggerQTA TriggerKind = iota
	TriggerFailure
	TriggerLoad
	TriggerDivergence
	TriggerSlackTrend
	numTriggers
)

// String returns "qta", "failure", "load", "divergence" or "slack_trend".
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
	case TriggerSlackTrend:
		return "slack_trend"
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
	// test's p-value and the level α (the distance is in the window's
	// ProbeResult); for slack_trend the lowest value of the slack line
	// over the horizon and 0.
	Observed, Required float64
	// Delay is the QTA point's delay for a qta trigger, the projected time
	// to violation (SlackTrend.TimeToViolation) for a slack_trend trigger,
	// else zero.
	Delay time.Duration
	// SnapshotID is the snapshot the trigger started or joined; 0 when
	// snapshots are off.
	SnapshotID int64
	// Worst are the worst instances of the probe in the window in which
	// the trigger fired.
	Worst WorstInstances
}
