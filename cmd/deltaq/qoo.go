// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/report"
)

// qooHelp documents the --qoo flag of eval and whatif.
const qooHelp = `--qoo scores each printed ΔQ with the Quality of Outcome of "Quality of
Outcome" (IETF draft-ietf-ippm-qoo-10, section 3.3) against a requirement
given as comma-separated items: pP:ROP/CPUP for each percentile P (in
percent, p0 the least delay; p99 is a configuration's p: 0.99, and a P in
(0, 1) such as p0.99 is refused as a fraction written for a percentage)
of the completed instances, the delays at which the outcome is
optimal (score 100) and unacceptable (score 0), and loss:ROP/CPUP, the
ratios of failures and timeouts (fractions, or percentages with %), e.g.
--qoo 'p99:200ms/500ms,p99.9:300ms/600ms,loss:1%/5%' (the draft's example).
Percentiles are read over the completed instances; the loss is the failure
mass. The score is the least of the latency and loss components (at design
time there is no rate).`

// parseQoO parses the --qoo requirement: "pP:ROP/CPUP" items, each
// percentile once, and one "loss:ROP/CPUP" item. Each problem is named by
// the item that has it, its values as written: CPUP looser than ROP in
// every item, and delays that do not fall as the percentile rises (what
// deltaq.QoORequirement.Validate checks).
func parseQoO(s string) (deltaq.QoORequirement, error) {
	var r deltaq.QoORequirement
	loss := false
	// given holds the item that gave each percentile, to name both items
	// of a percentile given twice.
	given := map[float64]string{}
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
			if !(r.CPUPLoss > r.ROPLoss) {
				return r, fmt.Errorf("%q: the CPUP ratio %s is not larger than the ROP ratio %s: the loss score falls from 100 at ROP to 0 at CPUP", item, strings.TrimSpace(cpup), strings.TrimSpace(rop))
			}
		case strings.HasPrefix(key, "p"):
			l, err := parseQoOLatency(key, rop, cpup)
			if err != nil {
				return r, fmt.Errorf("%q: %v", item, err)
			}
			if !(l.CPUP > l.ROP) {
				return r, fmt.Errorf("%q: the CPUP delay %s is not longer than the ROP delay %s: the score falls from 100 at ROP to 0 at CPUP", item, strings.TrimSpace(cpup), strings.TrimSpace(rop))
			}
			if first, ok := given[l.Percentile]; ok {
				firstKey, _, _ := strings.Cut(first, ":")
				return r, fmt.Errorf("%q: %s is given twice (%q too): give each percentile once", item, firstKey, first)
			}
			given[l.Percentile] = item
			r.Latency = append(r.Latency, l)
		default:
			return r, fmt.Errorf("%q: %q is neither a percentile such as p99 nor loss", item, key)
		}
	}
	if !loss {
		return r, fmt.Errorf("no loss:ROP/CPUP item: say what loss is optimal and what unacceptable, e.g. loss:1%%/5%% (loss:0/1 scores delays alone)")
	}
	sortQoOLatency(r.Latency)
	for i := 1; i < len(r.Latency); i++ {
		lo, hi := given[r.Latency[i-1].Percentile], given[r.Latency[i].Percentile]
		loROP, loCPUP := qooDelays(lo)
		hiROP, hiCPUP := qooDelays(hi)
		switch {
		case r.Latency[i].ROP < r.Latency[i-1].ROP:
			return r, fmt.Errorf("%q: the ROP delay %s is shorter than that of %q, %s: a higher percentile is never a shorter delay", hi, hiROP, lo, loROP)
		case r.Latency[i].CPUP < r.Latency[i-1].CPUP:
			return r, fmt.Errorf("%q: the CPUP delay %s is shorter than that of %q, %s: a higher percentile is never a shorter delay", hi, hiCPUP, lo, loCPUP)
		}
	}
	// Everything Validate checks was checked above, in the items' terms;
	// this is a safety net.
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%s", strings.ReplaceAll(err.Error(), "deltaq: QoO: ", ""))
	}
	return r, nil
}

// qooDelays returns the ROP and CPUP delays of a percentile item
// "pP:ROP/CPUP" as written.
func qooDelays(item string) (rop, cpup string) {
	_, val, _ := strings.Cut(item, ":")
	rop, cpup, _ = strings.Cut(val, "/")
	return strings.TrimSpace(rop), strings.TrimSpace(cpup)
}

// parseQoOLatency parses one percentile item: key "pP" with P in percent.
func parseQoOLatency(key, rop, cpup string) (deltaq.QoOLatency, error) {
	p, err := strconv.ParseFloat(key[1:], 64)
	if err != nil || !(p >= 0 && p <= 100) {
		return deltaq.QoOLatency{}, fmt.Errorf("percentile %q: want p and a percentage in [0, 100], e.g. p99, p99.9 or p0 (the least delay)", key)
	}
	// The configuration writes a percentile as a fraction (p: 0.99); here
	// P is in percent, and one in (0, 1) is almost surely that fraction:
	// p0.99 would score the 0.99th percentile, near the least delay.
	// Refused, with the percentage to write, rather than guessed.
	if p > 0 && p < 1 {
		// The percentage from the digits shifted, the nearest float to it
		// (p0.999 is p99.9, not p99.89999999999999).
		percent, err := strconv.ParseFloat(key[1:]+"e2", 64)
		if err != nil || percent < 1 {
			return deltaq.QoOLatency{}, fmt.Errorf("percentile %q: P is a percentage, not a fraction: want p0 or P in [1, 100], e.g. p99 for the 99th percentile (a configuration's p: 0.99)", key)
		}
		written := strconv.FormatFloat(percent, 'g', -1, 64)
		return deltaq.QoOLatency{}, fmt.Errorf("percentile %q: P is a percentage, not a fraction: write p%s for the %sth percentile (a configuration's p: %s); P in (0, 1) is refused", key, written, written, key[1:])
	}
	l := deltaq.QoOLatency{Percentile: fromPercent(p)}
	if l.ROP, err = distribution.ParseDuration(strings.TrimSpace(rop)); err != nil {
		return l, fmt.Errorf("ROP delay %q: %v", rop, err)
	}
	if l.CPUP, err = distribution.ParseDuration(strings.TrimSpace(cpup)); err != nil {
		return l, fmt.Errorf("CPUP delay %q: %v", cpup, err)
	}
	return l, nil
}

// fromPercent returns p % as a fraction, to 12 significant digits: 99.9 is
// 0.999, not 0.9990000000000001 (99.9 itself is not exact in binary).
func fromPercent(p float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(p/100, 'g', 12, 64), 64)
	return f
}

// parseRatio parses a ratio in [0, 1], as a fraction or a percentage.
func parseRatio(written string) (float64, error) {
	written = strings.TrimSpace(written)
	s, scale := written, 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 100
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v/scale >= 0 && v/scale <= 1) {
		// Quoted as written: "150", for 150%, read as a fraction above 1.
		return 0, fmt.Errorf("ratio %q: want a fraction in [0, 1] or a percentage such as 5%%", written)
	}
	if scale == 100 {
		return fromPercent(v), nil
	}
	return v, nil
}

// sortQoOLatency sorts the percentiles, increasing.
func sortQoOLatency(ls []deltaq.QoOLatency) {
	slices.SortStableFunc(ls, func(a, b deltaq.QoOLatency) int { return cmp.Compare(a.Percentile, b.Percentile) })
}

// scoreQoO scores d against r, for eval's and whatif's outputs.
func scoreQoO(r deltaq.QoORequirement, d deltaq.DeltaQ) (deltaq.QoO, *report.QoO, error) {
	q, _, err := r.ScoreDeltaQ(d, 0, false)
	if err != nil {
		return q, nil, err
	}
	return q, report.QoOOf(q), nil
}
