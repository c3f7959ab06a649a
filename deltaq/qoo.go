// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"fmt"
	"math"
)

// The Quality of Outcome score (Monclair, Olden and Kunze, "Quality of
// Outcome", IETF Internet-Draft draft-ietf-ippm-qoo-10, sections 3.3 and
// 3.4; "the QoO draft" below) turns latency percentiles, a loss ratio and a
// throughput into one number from 0 to 100 against an application's
// requirements: the Requirements for Optimal Performance (ROP, score 100)
// and the Conditions at the Point of Unacceptable Performance (CPUP, score
// 0), linear in between.
//
// A ΔQ holds everything the score needs. The QoO draft measures latency over
// what arrives and loss apart, so Measure reads each percentile over the
// completed instances only — the p-th percentile is the delay t with
// F(t) = p·F(dMax), F the ΔQ's CDF — and takes the intangible mass (the
// failures and timeouts) as the loss ratio. A timeout is therefore loss,
// never a latency: a requirement's CPUP delays should lie below dMax, where
// the latency score can reach them.

// QoOLatency is one latency percentile of a QoO requirement: the delays, in
// seconds, at which the percentile scores 100 (ROP) and 0 (CPUP).
type QoOLatency struct {
	// Percentile is in [0, 1]: 0.99 is the 99th percentile, 1 the largest
	// delay, 0 the least (the QoO draft, section 3.1.1, lists the 0th among
	// the percentiles a measurement reports).
	Percentile float64
	// ROP and CPUP are delays in seconds, 0 ≤ ROP < CPUP.
	ROP, CPUP float64
}

// QoORequirement is an application's network performance requirement
// specification (the QoO draft, section 3.2): latency percentiles and a loss
// ratio at two thresholds, and an optional minimum rate.
type QoORequirement struct {
	// Latency holds the percentiles, increasing; the QoO draft asks that
	// ROP and CPUP name the same percentiles (section 3.2.1), which one
	// entry per percentile guarantees. It may be empty: loss (and rate)
	// alone then make the score.
	Latency []QoOLatency
	// ROPLoss and CPUPLoss are the loss ratios at the two thresholds,
	// 0 ≤ ROPLoss < CPUPLoss ≤ 1.
	ROPLoss, CPUPLoss float64
	// MinRate is the minimum rate, in completed instances per second, that
	// stands for the draft's minimum throughput (section 3.3.4): below it
	// the score is 0. Zero is no rate requirement.
	MinRate float64
}

// Validate checks r: percentiles in [0, 1], distinct and increasing; ROP
// and CPUP delays finite, 0 ≤ ROP < CPUP for every percentile, and not
// falling as the percentile rises (a higher percentile of a distribution is
// never a shorter delay); 0 ≤ ROPLoss < CPUPLoss ≤ 1; MinRate finite and
// ≥ 0.
func (r QoORequirement) Validate() error {
	var errs []error
	for i, l := range r.Latency {
		if math.IsNaN(l.Percentile) || l.Percentile < 0 || l.Percentile > 1 {
			errs = append(errs, fmt.Errorf("deltaq: QoO: percentile %v of entry %d outside [0, 1]", l.Percentile, i))
		}
		if i > 0 && !(l.Percentile > r.Latency[i-1].Percentile) {
			errs = append(errs, fmt.Errorf("deltaq: QoO: percentile %v of entry %d does not follow %v (percentiles must increase)", l.Percentile, i, r.Latency[i-1].Percentile))
		}
		if !finiteNonNegative(l.ROP) || !finiteNonNegative(l.CPUP) {
			errs = append(errs, fmt.Errorf("deltaq: QoO: delays of percentile %v must be finite and ≥ 0, got ROP %v, CPUP %v", l.Percentile, l.ROP, l.CPUP))
		} else if !(l.CPUP > l.ROP) {
			errs = append(errs, fmt.Errorf("deltaq: QoO: at percentile %v the CPUP delay %vs must be longer than the ROP delay %vs", l.Percentile, l.CPUP, l.ROP))
		}
		if i > 0 && (l.ROP < r.Latency[i-1].ROP || l.CPUP < r.Latency[i-1].CPUP) {
			errs = append(errs, fmt.Errorf("deltaq: QoO: delays fall from percentile %v to %v", r.Latency[i-1].Percentile, l.Percentile))
		}
	}
	if !finiteNonNegative(r.ROPLoss) || !(r.CPUPLoss > r.ROPLoss) || !(r.CPUPLoss <= 1) {
		errs = append(errs, fmt.Errorf("deltaq: QoO: loss ratios must satisfy 0 ≤ ROP %v < CPUP %v ≤ 1", r.ROPLoss, r.CPUPLoss))
	}
	if !finiteNonNegative(r.MinRate) {
		errs = append(errs, fmt.Errorf("deltaq: QoO: minimum rate %v must be finite and ≥ 0", r.MinRate))
	}
	return errors.Join(errs...)
}

func finiteNonNegative(x float64) bool { return x >= 0 && !math.IsInf(x, 1) }

// MinInstances returns the fewest completed instances from which a score
// reads the requirement's percentiles: ⌈1/(1 − p)⌉ for the highest
// percentile p below 1, so that at least one instance lies beyond it and
// the percentile is not simply the largest delay seen; 1 when every
// percentile is 1 or there is none. The QoO draft sets no minimum (section
// 3.1.1: it "does not enforce a minimum sample count", while calling ten
// samples "clearly insufficient"), but notes that sparse samples bias the
// score upwards for heavy tails (section 4.8): a 99th percentile read from
// 50 instances is their maximum, and says nothing of the tail beyond it.
func (r QoORequirement) MinInstances() int64 {
	n := int64(1)
	for _, l := range r.Latency {
		if l.Percentile < 1 {
			// The tolerance keeps 1/(1 − 0.99) = 100.000…01 at 100.
			need := int64(math.Ceil(1/(1-l.Percentile) - 1e-9))
			n = max(n, need)
		}
	}
	return n
}

// QoOMeasurement is what the score is computed from: the measured delay
// at each percentile of the requirement, the loss ratio and the rate.
type QoOMeasurement struct {
	// Latency holds the measured delay, in seconds, at each percentile of
	// the requirement, in its order; nil when nothing completed (no
	// percentile can be read).
	Latency []float64
	// Loss is the loss ratio in [0, 1].
	Loss float64
	// Rate is the completed instances per second; valid when HasRate.
	Rate    float64
	HasRate bool
}

// Measure reads a measurement from d: each percentile p of r over the
// completed instances only, the delay t with F(t) = p·F(dMax)
// (DeltaQ.Quantile of p·Tangible, interpolated within its bin; for p = 0
// the least delay, DeltaQ.Least), and the intangible mass as the loss. Latency is nil when d has no tangible mass.
// The rate is not in a ΔQ: set Rate and HasRate apart.
func (r QoORequirement) Measure(d DeltaQ) QoOMeasurement {
	m := QoOMeasurement{Loss: d.Intangible()}
	tot := d.Tangible()
	if !(tot > 0) || len(r.Latency) == 0 {
		return m
	}
	m.Latency = make([]float64, len(r.Latency))
	for i, l := range r.Latency {
		if l.Percentile == 0 {
			m.Latency[i], _ = d.Least()
			continue
		}
		t, ok := d.Quantile(math.Min(l.Percentile*tot, tot))
		if !ok {
			// Unreachable only through rounding of p·tot: the last
			// delay.
			t, _ = d.Quantile(tot)
		}
		m.Latency[i] = t
	}
	return m
}

// QoO is a score and its components, each in [0, 100].
type QoO struct {
	// Score is the minimum of the components present (the QoO draft,
	// section 3.3.1).
	Score float64
	// Latency is the latency component, valid when HasLatency (a
	// requirement with percentiles, and something completed); Worst is the
	// index in the requirement's Latency of the percentile that set it.
	Latency    float64
	HasLatency bool
	Worst      int
	// Loss is the loss component, valid when HasLoss: always from Score;
	// only a score of a window with no instance at all, 0 for its rate
	// (analysis), has none.
	Loss    float64
	HasLoss bool
	// Rate is the rate (throughput) component, 100 or 0, valid when
	// HasRate (a MinRate and a measured rate).
	Rate    float64
	HasRate bool
}

// Score computes the QoO draft's score (section 3.3) of m against r:
//
//	per percentile i: mᵢ = clamp(1 − (ML[i] − ROP[i]) / (CPUP[i] − ROP[i]), 0, 1)
//	latency = 100 · minᵢ mᵢ
//	loss    = 100 · clamp(1 − (M_loss − ROP_loss) / (CPUP_loss − ROP_loss), 0, 1)
//	rate    = 100 if M_rate ≥ MinRate else 0
//	QoO     = min(latency, loss, rate)
//
// A measured value at or better than ROP scores 100 and one at or worse
// than CPUP scores 0. A component that cannot be measured (no latency when
// nothing completed, no rate when m has none) is left out of the minimum;
// without latencies every instance was lost, which the loss component
// scores. m.Latency must be nil or as long as r.Latency.
func (r QoORequirement) Score(m QoOMeasurement) (QoO, error) {
	if err := r.Validate(); err != nil {
		return QoO{}, err
	}
	if m.Latency != nil && len(m.Latency) != len(r.Latency) {
		return QoO{}, fmt.Errorf("deltaq: QoO: %d measured latencies for %d percentiles", len(m.Latency), len(r.Latency))
	}
	if math.IsNaN(m.Loss) || m.Loss < 0 || m.Loss > 1 {
		return QoO{}, fmt.Errorf("deltaq: QoO: measured loss %v outside [0, 1]", m.Loss)
	}
	q := QoO{Loss: 100 * interpolate(m.Loss, r.ROPLoss, r.CPUPLoss), HasLoss: true}
	q.Score = q.Loss
	if len(m.Latency) > 0 {
		q.HasLatency, q.Latency = true, 100
		for i, l := range r.Latency {
			if math.IsNaN(m.Latency[i]) {
				return QoO{}, fmt.Errorf("deltaq: QoO: measured latency at percentile %v is NaN", l.Percentile)
			}
			if s := 100 * interpolate(m.Latency[i], l.ROP, l.CPUP); s < q.Latency {
				q.Latency, q.Worst = s, i
			}
		}
		q.Score = math.Min(q.Score, q.Latency)
	}
	if r.MinRate > 0 && m.HasRate {
		q.HasRate = true
		if m.Rate >= r.MinRate {
			q.Rate = 100
		}
		q.Score = math.Min(q.Score, q.Rate)
	}
	return q, nil
}

// interpolate returns clamp(1 − (x − rop)/(cpup − rop), 0, 1), rop < cpup,
// rounded to 1e-11 (a billionth of a point of the score): that removes the
// binary rounding of decimal inputs — (0.35 − 0.2)/(0.5 − 0.2) is
// 0.49999999999999983 in floating point — so that the draft's example
// scores exactly 50, and is far below any difference a score can show.
func interpolate(x, rop, cpup float64) float64 {
	m := 1 - (x-rop)/(cpup-rop)
	return math.Round(math.Min(math.Max(m, 0), 1)*1e11) / 1e11
}

// ScoreDeltaQ is Score of the measurement Measure reads from d, with the
// rate given (hasRate false: no rate component).
func (r QoORequirement) ScoreDeltaQ(d DeltaQ, rate float64, hasRate bool) (QoO, QoOMeasurement, error) {
	if err := d.valid("QoO", 0); err != nil {
		return QoO{}, QoOMeasurement{}, err
	}
	m := r.Measure(d)
	m.Rate, m.HasRate = rate, hasRate
	q, err := r.Score(m)
	return q, m, err
}
