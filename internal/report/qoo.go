// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

// QoO is a Quality of Outcome score in the --json outputs of analyze,
// eval and whatif.
type QoO struct {
	Score   float64  `json:"score"`
	Latency *float64 `json:"latency,omitempty"`
	Loss    *float64 `json:"loss,omitempty"`
	Rate    *float64 `json:"rate,omitempty"`
}

// QoOOf returns the JSON form of a score.
func QoOOf(q deltaq.QoO) *QoO {
	j := &QoO{Score: q.Score}
	if q.HasLoss {
		v := q.Loss
		j.Loss = &v
	}
	if q.HasLatency {
		v := q.Latency
		j.Latency = &v
	}
	if q.HasRate {
		v := q.Rate
		j.Rate = &v
	}
	return j
}

// FormatScore prints a score to four significant digits, without an
// exponent: 50, 33.33, 0.0002, 100. A score below 100 is never shown as
// 100, which only the optimum scores: 99.996 is 99.99.
func FormatScore(x float64) string {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 4, 64), 64)
	if v >= 100 && x < 100 {
		v = 99.99
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// DescribeQoO is the text form of a score: "50 (latency 50 at p99, loss 75)",
// the percentile named the one that set the latency component ("latency
// 100" when none limits it).
func DescribeQoO(r deltaq.QoORequirement, q deltaq.QoO) string {
	return describeQoO(r, q, "latency —, nothing completed")
}

// describeQoO is DescribeQoO, saying noLatency of a score without a
// latency component where the requirement has percentiles.
func describeQoO(r deltaq.QoORequirement, q deltaq.QoO, noLatency string) string {
	lat := noLatency
	switch {
	case q.HasLatency && q.Latency >= 100:
		// Every percentile at or better than its ROP: none sets the
		// component, and naming the first (Worst's 0) read as if it were
		// the worst, or the only one scored.
		lat = "latency 100"
	case q.HasLatency:
		lat = fmt.Sprintf("latency %s at p%s", FormatScore(q.Latency), formatPercentile(r.Latency[q.Worst].Percentile))
	}
	if len(r.Latency) == 0 {
		lat = "no latency requirement"
	}
	loss := "loss —"
	if q.HasLoss {
		loss = "loss " + FormatScore(q.Loss)
	}
	if q.HasRate {
		loss += ", rate " + FormatScore(q.Rate)
	}
	return fmt.Sprintf("%s (%s, %s)", FormatScore(q.Score), lat, loss)
}

// formatPercentile prints a percentile p in [0, 1] as the percentage the
// requirement was written in, to 12 significant digits: 0.07 is 7, not
// the binary product 100 × 0.07 = 7.000000000000001, and a zero of either
// sign is 0.
func formatPercentile(p float64) string {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(100*p, 'g', 12, 64), 64)
	if v == 0 {
		v = 0 // not -0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// hasQoO reports whether a probe of the configuration has a qoo
// requirement: analyze's window table then has a qoo column.
func hasQoO(probes map[string]analysis.ProbeConfig) bool {
	for _, pc := range probes {
		if !pc.QoO.IsZero() {
			return true
		}
	}
	return false
}

// qooCell is the observed score of a window in analyze's tables: the
// score, "withheld" (too few instances), or "" without a score or
// requirement.
func qooCell(q *analysis.QoOResult) string {
	switch {
	case q == nil || !q.Observed.Present:
		return ""
	case q.Observed.Withheld:
		return "withheld"
	}
	return FormatScore(q.Observed.QoO.Score)
}

// writeQoO writes the qoo line of a probe of analyze's whole input: the
// observed and calculated scores, each with its components or why it
// was withheld.
func writeQoO(w io.Writer, p *analysis.ProbeResult) {
	if p.QoO == nil {
		return
	}
	var parts []string
	for _, s := range []struct {
		name  string
		score *analysis.QoOScore
	}{{"observed", &p.QoO.Observed}, {"calculated", &p.QoO.Calculated}} {
		switch {
		case !s.score.Present:
		case s.score.Withheld:
			parts = append(parts, fmt.Sprintf("%s withheld (%s completed instances, %d needed)", s.name,
				strconv.FormatFloat(s.score.Completed, 'g', 4, 64), p.QoO.MinInstances))
		default:
			// A score without latency from completed instances was
			// given by its loss or rate alone: too few completed for
			// the percentiles (scoreOne).
			noLatency := "latency —, nothing completed"
			if s.score.Completed > 0 {
				noLatency = fmt.Sprintf("latency withheld, %s completed instances, %d needed",
					strconv.FormatFloat(s.score.Completed, 'g', 4, 64), p.QoO.MinInstances)
			}
			parts = append(parts, s.name+" "+describeQoO(p.QoO.Requirement, s.score.QoO, noLatency))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %-11s %s\n", "qoo", strings.Join(parts, "; "))
	}
}

// qooAnalysisJSON is a probe's Quality of Outcome in analyze's JSON:
// each score, or withheld.
type qooAnalysisJSON struct {
	Observed           *QoO `json:"observed,omitempty"`
	ObservedWithheld   bool `json:"observed_withheld,omitempty"`
	Calculated         *QoO `json:"calculated,omitempty"`
	CalculatedWithheld bool `json:"calculated_withheld,omitempty"`
}

// qooJSONOf returns a probe's Quality of Outcome for analyze's JSON; nil
// without a requirement.
func qooJSONOf(q *analysis.QoOResult) *qooAnalysisJSON {
	if q == nil {
		return nil
	}
	of := func(s *analysis.QoOScore) *QoO {
		if !s.OK {
			return nil
		}
		return QoOOf(s.QoO)
	}
	return &qooAnalysisJSON{Observed: of(&q.Observed), ObservedWithheld: q.Observed.Withheld,
		Calculated: of(&q.Calculated), CalculatedWithheld: q.Calculated.Withheld}
}
