// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Bounds of QoOConfig.
const (
	// MaxQoOMinInstances bounds qoo::min_instances.
	MaxQoOMinInstances = 1_000_000
	// MaxQoOMinRate bounds qoo::min_rate, per second.
	MaxQoOMinRate = 1e9
)

// QoOConfig is a probe's Quality of Outcome requirement (`qoo:`), the
// network performance requirement specification of the QoO draft
// (section 3.2) for an outcome: the delays at some percentiles and the
// loss ratio at which the outcome is optimal (ROP, score 100) and at which
// it becomes unacceptable (CPUP, score 0), and optionally a minimum rate.
// Percentiles are read over the completed instances and the failure and
// timeout ratio is the loss (deltaq.QoORequirement.Measure). The zero
// QoOConfig is no requirement.
type QoOConfig struct {
	// ROP and CPUP are the two thresholds; they name the same
	// percentiles, and CPUP is looser than ROP at each of them and in
	// max_failure.
	ROP  QoOThreshold `mapstructure:"rop"`
	CPUP QoOThreshold `mapstructure:"cpup"`
	// MinRate is the minimum rate of completed instances per second, which
	// stands for the QoO draft's minimum throughput (section 3.3.4): a
	// window below it scores 0. Zero is none.
	MinRate float64 `mapstructure:"min_rate"`
	// MinInstances raises the fewest completed instances a window needs for
	// a score above the rule the percentiles set
	// (deltaq.QoORequirement.MinInstances: ⌈1/(1 − p)⌉ for the highest
	// percentile below 1). Zero adds nothing; at most MaxQoOMinInstances.
	MinInstances int64 `mapstructure:"min_instances"`
}

// QoOThreshold is one threshold of a QoO requirement: delays at
// percentiles of the completed instances, and a failure ratio.
type QoOThreshold struct {
	Points []QoOPoint `mapstructure:"points"`
	// MaxFailure is the ratio of failures and timeouts over all
	// instances at this threshold, in [0, 1].
	MaxFailure float64 `mapstructure:"max_failure"`
}

// QoOPoint is a percentile–delay pair: the P-th percentile (a fraction,
// 0.99 for the 99th, 0 for the least delay) of the completed instances'
// delays is Delay. Both are written: left out, either would read as 0,
// a valid value (the least delay; no delay at all) that nobody wrote.
type QoOPoint struct {
	P     float64       `mapstructure:"p" confcheck:"required"`
	Delay time.Duration `mapstructure:"delay" confcheck:"required"`
}

// checkPercentile refuses a qoo point's p outside [0, 1] (0 is the least
// delay, which the QoO draft lists among the percentiles), and says how to
// write a percentage (p: 99) as the fraction it meant.
func checkPercentile(p float64) error {
	switch {
	case p > 1 && p <= 100:
		return fmt.Errorf("%v is not in [0, 1]: p is a fraction, %v %% is %v", p, p, p/100)
	case math.IsNaN(p) || p < 0 || p > 1:
		return fmt.Errorf("%v is not in [0, 1]", p)
	}
	return nil
}

// IsZero reports whether q is no requirement.
func (q QoOConfig) IsZero() bool {
	return len(q.ROP.Points) == 0 && len(q.CPUP.Points) == 0 && q.ROP.MaxFailure == 0 &&
		q.CPUP.MaxFailure == 0 && q.MinRate == 0 && q.MinInstances == 0
}

// Requirement returns q in the algebra's terms (delays in seconds, one
// entry per percentile, increasing), or every problem of q (problems).
func (q QoOConfig) Requirement() (deltaq.QoORequirement, error) {
	r, errs := q.compile()
	if len(errs) > 0 {
		return deltaq.QoORequirement{}, errors.Join(errs...)
	}
	return r, nil
}

// problems returns the problems of a probe's qoo option, each naming the
// option under qoo (qoo.cpup.points[0].delay: …) and saying how to mend
// it; none for the zero QoOConfig, which is no requirement.
func (q QoOConfig) problems() []error {
	if q.IsZero() {
		return nil
	}
	_, errs := q.compile()
	for i, err := range errs {
		errs[i] = confpath.Under(confpath.Fields("qoo"), err)
	}
	return errs
}

// compile returns q in the algebra's terms, or its problems.
func (q QoOConfig) compile() (deltaq.QoORequirement, []error) {
	errs := q.ROP.check("rop")
	errs = append(errs, q.CPUP.check("cpup")...)
	r := deltaq.QoORequirement{ROPLoss: q.ROP.MaxFailure, CPUPLoss: q.CPUP.MaxFailure, MinRate: q.MinRate}
	if len(q.ROP.Points) == 0 && len(q.CPUP.Points) == 0 && q.ROP.MaxFailure == 0 && q.CPUP.MaxFailure == 0 {
		// Only min_rate or min_instances: one problem, not also the
		// ratios' order.
		errs = append(errs, errors.New("needs rop and cpup: the delays at some percentiles and the failure ratio at which the probe is optimal (rop) and unacceptable (cpup)"))
	} else {
		errs = append(errs, q.pair(&r)...)
		errs = append(errs, q.checkLoss()...)
	}
	if math.IsNaN(q.MinRate) || q.MinRate < 0 || q.MinRate > MaxQoOMinRate {
		errs = append(errs, confpath.Errorf(confpath.Fields("min_rate"), "must be a rate in [0, %g] of completed instances per second, got %v", float64(MaxQoOMinRate), q.MinRate))
	}
	if q.MinInstances < 0 || q.MinInstances > MaxQoOMinInstances {
		errs = append(errs, confpath.Errorf(confpath.Fields("min_instances"), "must be in [0, %d], got %d", MaxQoOMinInstances, q.MinInstances))
	}
	if len(errs) == 0 {
		// Everything Validate checks was checked above, in the options'
		// terms; this is a safety net.
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return r, errs
}

// check returns the problems of one threshold's own points, named under
// qoo.<side>.
func (t QoOThreshold) check(side string) []error {
	var errs []error
	for i, p := range t.Points {
		if err := checkPercentile(p.P); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields(side, "points").Index(i).Field("p"), err))
		}
		if p.Delay < 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields(side, "points").Index(i).Field("delay"), "must be ≥ 0, got %s", p.Delay))
		}
		for j := range i {
			if t.Points[j].P == p.P {
				errs = append(errs, confpath.Errorf(confpath.Fields(side, "points").Index(i).Field("p"), "%v is given twice (points[%d] too): give each percentile once", p.P, j))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	sorted := slices.Clone(t.Points)
	slices.SortFunc(sorted, func(a, b QoOPoint) int { return cmp.Compare(a.P, b.P) })
	for i := 1; i < len(sorted); i++ {
		if lo, hi := sorted[i-1], sorted[i]; hi.Delay < lo.Delay {
			errs = append(errs, confpath.Errorf(confpath.Fields(side, "points"), "the delay falls from %s at p %v to %s at p %v: a higher percentile is never a shorter delay", lo.Delay, lo.P, hi.Delay, hi.P))
		}
	}
	return errs
}

// pair fills r.Latency with ROP's and CPUP's points, percentile by
// percentile, and returns the problems: a percentile one side names and
// the other does not (the QoO draft, section 3.2.1, asks for the same in
// both), and a CPUP delay not longer than ROP's.
func (q QoOConfig) pair(r *deltaq.QoORequirement) []error {
	var errs []error
	for i, p := range q.ROP.Points {
		if checkPercentile(p.P) != nil {
			continue // check refused it; no partner to look for
		}
		j := slices.IndexFunc(q.CPUP.Points, func(c QoOPoint) bool { return c.P == p.P })
		if j < 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields("cpup"), "has no point at p %v, which rop.points[%d] has: rop and cpup name the same percentiles; add {p: %v, delay: …} to cpup.points, longer than rop's %s", p.P, i, p.P, p.Delay))
			continue
		}
		c := q.CPUP.Points[j]
		if c.Delay <= p.Delay {
			errs = append(errs, confpath.Errorf(confpath.Fields("cpup", "points").Index(j).Field("delay"), "%s is not looser than rop's %s at p %v: the score falls from 100 at the rop delay to 0 at the cpup delay, so the cpup delay must be longer", c.Delay, p.Delay, p.P))
		}
		r.Latency = append(r.Latency, deltaq.QoOLatency{Percentile: p.P, ROP: p.Delay.Seconds(), CPUP: c.Delay.Seconds()})
	}
	for j, c := range q.CPUP.Points {
		if checkPercentile(c.P) != nil {
			continue
		}
		if !slices.ContainsFunc(q.ROP.Points, func(p QoOPoint) bool { return p.P == c.P }) {
			errs = append(errs, confpath.Errorf(confpath.Fields("rop"), "has no point at p %v, which cpup.points[%d] has: rop and cpup name the same percentiles; add {p: %v, delay: …} to rop.points, shorter than cpup's %s", c.P, j, c.P, c.Delay))
		}
	}
	slices.SortFunc(r.Latency, func(a, b deltaq.QoOLatency) int { return cmp.Compare(a.Percentile, b.Percentile) })
	return errs
}

// checkLoss returns the problems of the failure ratios: rop's in [0, 1),
// cpup's above it and at most 1.
func (q QoOConfig) checkLoss() []error {
	rop, cpup := q.ROP.MaxFailure, q.CPUP.MaxFailure
	var errs []error
	for _, s := range []struct {
		side string
		v    float64
	}{{"rop", rop}, {"cpup", cpup}} {
		if s.v > 1 && s.v <= 100 {
			errs = append(errs, confpath.Errorf(confpath.Fields(s.side, "max_failure"), "%v is not in [0, 1]: max_failure is a fraction, %v %% is %v", s.v, s.v, s.v/100))
		} else if math.IsNaN(s.v) || s.v < 0 || s.v > 1 {
			errs = append(errs, confpath.Errorf(confpath.Fields(s.side, "max_failure"), "%v is not in [0, 1]", s.v))
		}
	}
	if len(errs) == 0 && !(cpup > rop) {
		errs = append(errs, confpath.Errorf(confpath.Fields("cpup", "max_failure"), "%v is not looser than rop.max_failure %v: the loss score falls from 100 at rop's ratio to 0 at cpup's, so cpup's must be larger (for a requirement on delays alone, rop.max_failure: 0 and cpup.max_failure: 1)", cpup, rop))
	}
	return errs
}

// QoOResult is a probe's Quality of Outcome in one window: the score of
// its observed ΔQ and, where the outcome diagram calculates the probe, of
// its calculated ΔQ — the score the parts predict for the whole.
type QoOResult struct {
	// Requirement is the probe's qoo option in the algebra's terms.
	Requirement deltaq.QoORequirement
	// MinInstances is the fewest completed instances a score is read from:
	// the larger of Requirement.MinInstances and qoo::min_instances.
	MinInstances int64
	// Observed and Calculated are the scores of the two ΔQs.
	Observed, Calculated QoOScore
}

// QoOScore is the score of one ΔQ of a probe in one window.
type QoOScore struct {
	// Present is true when there is a ΔQ to score (an observed ΔQ, or a
	// calculated one).
	Present bool
	// OK is true when the score is given: the ΔQ has at least MinInstances
	// completed instances, or without them a loss (or rate) component
	// already at 0, which makes the score 0 whatever the latency.
	// Withheld is true when Present and not OK: too few instances.
	OK, Withheld bool
	// Completed is the number of independent completed instances the
	// percentiles are read over: the successes' share of the effective
	// instances (Kish's count under sampling), for a calculated ΔQ its
	// tangible share of the instances its inputs are worth.
	Completed float64
	// QoO is the score and its components; Measured what they were
	// computed from.
	QoO      deltaq.QoO
	Measured deltaq.QoOMeasurement
}

// scoreQoO sets pr.QoO for a probe with a qoo requirement: the observed ΔQ
// at the analysis resolution (ProbeResult.Analysis) scored with the
// window's rate of completed instances, its successes over its sampling
// period (Result.SamplingPeriod), the calculated ΔQ without a rate (a rate
// is counted, not composed).
func (a *analyzer) scoreQoO(r *Result, pr *ProbeResult, s *probeState) {
	if s.cfg.QoO.IsZero() {
		return
	}
	req, err := s.cfg.QoO.Requirement()
	if err != nil {
		return // Config.Check refused it.
	}
	res := &QoOResult{Requirement: req, MinInstances: max(req.MinInstances(), s.cfg.QoO.MinInstances)}
	span := r.SamplingPeriod.Seconds()
	switch {
	case pr.Analysis != nil:
		w := sample{instances: pr.EffectiveInstances, hasLoss: true}
		w.loss, _ = newQTACounts(pr).failed()
		if n := pr.Counts.Total(); n > 0 {
			w.completed = pr.EffectiveInstances * float64(pr.Counts.Success) / float64(n)
		}
		if span > 0 {
			w.rate, w.hasRate = perSecond(pr.Counts.Success, r.SamplingPeriod), true
		}
		if pr.fine != nil {
			w.least, w.hasLeast = pr.fine.Least(pr.fineCut)
			w.latency, w.latencyOK = countedPercentiles(req, pr, 1-w.loss)
		}
		res.Observed = scoreOne(req, res.MinInstances, *pr.Analysis, w)
	case req.MinRate > 0 && span > 0:
		// A window without an instance: no latency or loss to read, but a
		// rate of 0, below the minimum, which makes the score 0 (the QoO
		// draft, section 3.3.4) — an outage shows as one.
		res.Observed = QoOScore{Present: true, OK: true, QoO: deltaq.QoO{HasRate: true},
			Measured: deltaq.QoOMeasurement{HasRate: true}}
	}
	if pr.Calculated != nil {
		worth := a.calculatedCount(pr.Name, false)
		w := sample{instances: worth, completed: worth * pr.Calculated.Tangible()}
		res.Calculated = scoreOne(req, res.MinInstances, *pr.Calculated, w)
	}
	pr.QoO = res
}

// perSecond returns n instances over the period d as a rate per second,
// rounded once from the exact quotient n·10⁹/d: then a rate exactly at a
// min_rate meets it (the QoO draft, section 3.3.4: M_Throughput ≥
// R_Throughput). n over d.Seconds() rounds twice, and 55 instances over
// 550 ms were 99.99999999999999 a second, below a min_rate of 100.
func perSecond(n int64, d time.Duration) float64 {
	if n >= 0 && n <= (1<<53)/int64(time.Second) && d <= 1<<53 {
		return float64(n) * 1e9 / float64(d) // n·10⁹ and d exact: one rounding
	}
	num := new(big.Int).Mul(big.NewInt(n), big.NewInt(1e9))
	f, _ := new(big.Rat).SetFrac(num, big.NewInt(int64(d))).Float64()
	return f
}

// sample is what a ΔQ to score was read from: its independent instances,
// the completed ones among them, and the rate of completed instances per
// second when known.
type sample struct {
	instances, completed, rate float64
	hasRate                    bool
	// least is the least delay of the completed instances read at the
	// analysis resolution, when hasLeast: a tighter lower bound than the
	// ΔQ's grid gives for p 0.
	least    float64
	hasLeast bool
	// latency holds, where latencyOK, the delay at each percentile of the
	// requirement read from the analysis counts (countedPercentiles).
	latency   []float64
	latencyOK []bool
	// loss is the failure ratio read from the counts when hasLoss
	// (qtaCounts.failed): the ΔQ's intangible mass counts a share of the
	// analysis bucket that holds dMax as lost.
	loss    float64
	hasLoss bool
}

// countedPercentiles reads each percentile p > 0 of req over the completed
// instances of the probe's window from its analysis counts, as its
// quantiles are read (LogLinearHistogram.Quantiles): the delay by which
// p·F(dMax) of the instances completed, F(dMax) = tangible the share that
// completed within dMax (qtaCounts.failed), within the bucket of the count where that fraction is reached
// (under 1/64 of the delay wide). The Analysis ΔQ spreads its instances
// over grid bins of dMax/4096 or wider — 4.2 ms for a dMax of 10 s, 0.27 s
// for one of 10 minutes — and read there a 99th percentile of delays of 1
// to 3 ms as 4.2 ms with a 10 s dMax, a median as 134 ms with a 10 minute
// one (TestQoOPercentilesFromCounts).
func countedPercentiles(req deltaq.QoORequirement, pr *ProbeResult, tot float64) ([]float64, []bool) {
	qs := make([]float64, len(req.Latency))
	for i, l := range req.Latency {
		qs[i] = math.Min(l.Percentile*tot, tot)
	}
	delays, ok := make([]float64, len(qs)), make([]bool, len(qs))
	pr.fine.QuantilesWithin(qs, pr.fineCut, pr.completedWithin(), delays, ok)
	return delays, ok
}

// scoreOne scores d, read from w, against req. With fewer than
// minInstances completed instances the percentiles are not read, and the
// score is given only when it is 0 whatever they are: a loss component at
// 0 from at least minInstances instances, or a rate below the minimum (a
// rate is counted, not estimated from a sample).
func scoreOne(req deltaq.QoORequirement, minInstances int64, d deltaq.DeltaQ, w sample) QoOScore {
	s := QoOScore{Present: true, Completed: w.completed}
	m := req.Measure(d)
	m.Rate, m.HasRate = w.rate, w.hasRate
	if w.hasLoss {
		m.Loss = w.loss
	}
	for i, l := range req.Latency {
		switch {
		case m.Latency == nil:
		case l.Percentile == 0 && w.hasLeast:
			m.Latency[i] = max(m.Latency[i], w.least) // both lower bounds
		case l.Percentile > 0 && w.latencyOK != nil && w.latencyOK[i]:
			m.Latency[i] = w.latency[i]
		}
	}
	enough := func(n float64) bool { return n >= float64(minInstances)-1e-9 }
	if !enough(w.completed) {
		m.Latency = nil
	}
	q, err := req.Score(m)
	if err != nil {
		s.Withheld = true
		return s
	}
	s.QoO, s.Measured = q, m
	s.OK = enough(w.completed) || (enough(w.instances) && q.Loss == 0) || (q.HasRate && q.Rate == 0)
	s.Withheld = !s.OK
	if s.Withheld {
		s.QoO = deltaq.QoO{}
	}
	return s
}
