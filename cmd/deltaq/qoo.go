// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/dist"
)

// qooHelp documents the --qoo flag of eval and whatif.
const qooHelp = `--qoo scores each printed ΔQ with the Quality of Outcome of "Quality of
Outcome" (IETF draft-ietf-ippm-qoo-10, section 3.3) against a requirement
given as comma-separated items: pP:ROP/CPUP for each percentile P (in
percent) of the completed instances, the delays at which the outcome is
optimal (score 100) and unacceptable (score 0), and loss:ROP/CPUP, the
ratios of failures and timeouts (fractions, or percentages with %), e.g.
--qoo 'p99:200ms/500ms,p99.9:300ms/600ms,loss:1%/5%' (the draft's example).
Percentiles are read over the completed instances; the loss is the failure
mass. The score is the least of the latency and loss components (at design
time there is no rate).`

// parseQoO parses the --qoo requirement: "pP:ROP/CPUP" items and one
// "loss:ROP/CPUP" item, checked by deltaq.QoORequirement.Validate.
func parseQoO(s string) (deltaq.QoORequirement, error) {
	var r deltaq.QoORequirement
	loss := false
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		key, val, ok := strings.Cut(item, ":")
		rop, cpup, ok2 := strings.Cut(val, "/")
		if !ok || !ok2 {
			return r, fmt.Errorf("%q: want pP:ROP/CPUP or loss:ROP/CPUP, e.g. p99:200ms/500ms or loss:1%%/5%%", item)
		}
		switch {
		case key == "loss":
			if loss {
				return r, fmt.Errorf("%q: loss given twice", item)
			}
			loss = true
			var err error
			if r.ROPLoss, err = parseRatio(rop); err != nil {
				return r, fmt.Errorf("%q: %v", item, err)
			}
			if r.CPUPLoss, err = parseRatio(cpup); err != nil {
				return r, fmt.Errorf("%q: %v", item, err)
			}
		case strings.HasPrefix(key, "p"):
			l, err := parseQoOLatency(key, rop, cpup)
			if err != nil {
				return r, fmt.Errorf("%q: %v", item, err)
			}
			r.Latency = append(r.Latency, l)
		default:
			return r, fmt.Errorf("%q: %q is neither a percentile such as p99 nor loss", item, key)
		}
	}
	if !loss {
		return r, fmt.Errorf("no loss:ROP/CPUP item: say what loss is optimal and what unacceptable, e.g. loss:1%%/5%% (loss:0/1 scores delays alone)")
	}
	sortQoOLatency(r.Latency)
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), "deltaq: QoO: ", ""))
	}
	return r, nil
}

// parseQoOLatency parses one percentile item: key "pP" with P in percent.
func parseQoOLatency(key, rop, cpup string) (deltaq.QoOLatency, error) {
	p, err := strconv.ParseFloat(key[1:], 64)
	if err != nil || !(p > 0 && p <= 100) {
		return deltaq.QoOLatency{}, fmt.Errorf("percentile %q: want p and a percentage in (0, 100], e.g. p99 or p99.9", key)
	}
	l := deltaq.QoOLatency{Percentile: p / 100}
	if l.ROP, err = dist.ParseDuration(strings.TrimSpace(rop)); err != nil {
		return l, fmt.Errorf("ROP delay %q: %v", rop, err)
	}
	if l.CPUP, err = dist.ParseDuration(strings.TrimSpace(cpup)); err != nil {
		return l, fmt.Errorf("CPUP delay %q: %v", cpup, err)
	}
	return l, nil
}

// parseRatio parses a ratio in [0, 1], as a fraction or a percentage.
func parseRatio(s string) (float64, error) {
	s = strings.TrimSpace(s)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v/scale >= 0 && v/scale <= 1) {
		return 0, fmt.Errorf("ratio %q: want a fraction in [0, 1] or a percentage such as 5%%", s)
	}
	return v / scale, nil
}

// sortQoOLatency sorts the percentiles, increasing.
func sortQoOLatency(ls []deltaq.QoOLatency) {
	slices.SortStableFunc(ls, func(a, b deltaq.QoOLatency) int { return cmp.Compare(a.Percentile, b.Percentile) })
}

// jsonQoO is a score in the --json outputs.
type jsonQoO struct {
	Score   float64  `json:"score"`
	Latency *float64 `json:"latency,omitempty"`
	Loss    float64  `json:"loss"`
	Rate    *float64 `json:"rate,omitempty"`
}

// scoreQoO scores d against r, for eval's and whatif's outputs.
func scoreQoO(r deltaq.QoORequirement, d deltaq.DeltaQ) (deltaq.QoO, *jsonQoO, error) {
	q, _, err := r.ScoreDeltaQ(d, 0, false)
	if err != nil {
		return q, nil, err
	}
	j := &jsonQoO{Score: q.Score, Loss: q.Loss}
	if q.HasLatency {
		v := q.Latency
		j.Latency = &v
	}
	return q, j, nil
}

// formatScore prints a score to four significant digits: 50, 33.33, 100.
func formatScore(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// describeQoO is the text form of a score: "50 (latency 50 at p99, loss 75)".
func describeQoO(r deltaq.QoORequirement, q deltaq.QoO) string {
	lat := "latency —, nothing completed"
	if q.HasLatency {
		lat = fmt.Sprintf("latency %s at p%s", formatScore(q.Latency),
			strconv.FormatFloat(100*r.Latency[q.Worst].Percentile, 'g', -1, 64))
	}
	if len(r.Latency) == 0 {
		lat = "no latency requirement"
	}
	return fmt.Sprintf("%s (%s, loss %s)", formatScore(q.Score), lat, formatScore(q.Loss))
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
	return formatScore(q.Observed.QoO.Score)
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
			d := s.name + " " + describeQoO(p.QoO.Requirement, s.score.QoO)
			if s.score.QoO.HasRate {
				d = strings.TrimSuffix(d, ")") + ", rate " + formatScore(s.score.QoO.Rate) + ")"
			}
			parts = append(parts, d)
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %-11s %s\n", "qoo", strings.Join(parts, "; "))
	}
}

// qooAnalysisJSON is a probe's Quality of Outcome in analyze's JSON:
// each score, or withheld.
type qooAnalysisJSON struct {
	Observed           *jsonQoO `json:"observed,omitempty"`
	ObservedWithheld   bool     `json:"observed_withheld,omitempty"`
	Calculated         *jsonQoO `json:"calculated,omitempty"`
	CalculatedWithheld bool     `json:"calculated_withheld,omitempty"`
}

// qooJSONOf returns a probe's Quality of Outcome for analyze's JSON; nil
// without a requirement.
func qooJSONOf(q *analysis.QoOResult) *qooAnalysisJSON {
	if q == nil {
		return nil
	}
	of := func(s *analysis.QoOScore) *jsonQoO {
		if !s.OK {
			return nil
		}
		j := &jsonQoO{Score: s.QoO.Score, Loss: s.QoO.Loss}
		if s.QoO.HasLatency {
			v := s.QoO.Latency
			j.Latency = &v
		}
		if s.QoO.HasRate {
			v := s.QoO.Rate
			j.Rate = &v
		}
		return j
	}
	return &qooAnalysisJSON{Observed: of(&q.Observed), ObservedWithheld: q.Observed.Withheld,
		Calculated: of(&q.Calculated), CalculatedWithheld: q.Calculated.Withheld}
}
