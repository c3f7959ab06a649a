// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// QoOObjective is a time-slice objective on a probe's Quality of Outcome
// ("Quality of Outcome", draft-ietf-ippm-qoo-10): the observed score is at
// least MinScore in at least a share Target of the probe's scored windows.
type QoOObjective struct {
	// MinScore is in (0, 100]; Target in (0, 1).
	MinScore, Target float64
}

// ParseQoOObjective reads "SCORE:TARGET", such as "80:0.99": a score of at
// least 80 in 99 % of the windows.
func ParseQoOObjective(s string) (QoOObjective, error) {
	score, target, ok := strings.Cut(s, ":")
	if !ok {
		return QoOObjective{}, fmt.Errorf("%q: want SCORE:TARGET, such as 80:0.99 (a score of at least 80 in 99 %% of the windows)", s)
	}
	var q QoOObjective
	var err error
	if q.MinScore, err = strconv.ParseFloat(score, 64); err != nil {
		if n, isPercent := strings.CutSuffix(score, "%"); isPercent {
			if _, nerr := strconv.ParseFloat(n, 64); nerr == nil {
				return q, fmt.Errorf("%q: score %q: write it without %%, as %s (scores run from 0 to 100)", s, score, n)
			}
		}
		return q, fmt.Errorf("%q: score %q is not a number", s, score)
	}
	if q.Target, err = strconv.ParseFloat(target, 64); err != nil {
		// A percentage: the fraction from the digits shifted, the nearest
		// float to it.
		if n, isPercent := strings.CutSuffix(target, "%"); isPercent {
			if fraction, nerr := strconv.ParseFloat(n+"e-2", 64); nerr == nil {
				return q, fmt.Errorf("%q: target %q is a percentage; write the fraction %s", s, target, formatNumber(fraction))
			}
		}
		return q, fmt.Errorf("%q: target %q is not a number", s, target)
	}
	return q, q.Validate()
}

// Validate checks the ranges of q.
func (q QoOObjective) Validate() error {
	var errs []error
	if !(q.MinScore > 0 && q.MinScore <= 100) {
		errs = append(errs, fmt.Errorf("score %s: want a score in (0, 100] (every window scores at least 0)", formatNumber(q.MinScore)))
	}
	switch {
	case q.Target > 1 && q.Target < 100:
		errs = append(errs, fmt.Errorf("target %s: want a share of the windows in (0, 1): %s %% is %s", formatNumber(q.Target),
			formatNumber(q.Target), formatNumber(q.Target/100)))
	case !(q.Target > 0 && q.Target < 1):
		errs = append(errs, fmt.Errorf("target %s: want a share of the windows in (0, 1)", formatNumber(q.Target)))
	}
	return errors.Join(errs...)
}

// Names the QoO objectives' rules read and add.
const (
	// metricQoOScore is deltaq.qoo.score after remote write.
	metricQoOScore = "deltaq_qoo_score_percent"
	// AlertQoOName is the name of the burn-rate alerts of QoO objectives.
	AlertQoOName = "DeltaQQoOBudgetBurn"
	// LabelQoOMin is the score a good window reaches, on the QoO
	// objectives' series.
	LabelQoOMin = "deltaq_qoo_min"
	// DefaultQoORunbookURL is the QoO alerts' runbook_url by default.
	DefaultQoORunbookURL = "https://github.com/deltaq-otel/deltaq/blob/main/docs/runbook.md#quality-of-outcome-budget-burn"
)

// addQoO adds the QoO objective of a probe, or records why not.
func (p *Plan) addQoO(pr Probe) {
	q := pr.QoO
	o := Objective{Probe: pr.Name, Name: "qoo-" + formatNumber(q.MinScore), Kind: QoO, MinScore: q.MinScore,
		Target: q.Target, Budget: complement(q.Target), Interval: pr.Interval}
	switch base := p.Windows[0]; {
	case q.Validate() != nil:
		p.Refusals = append(p.Refusals, Refusal{pr.Name, o.Name, q.Validate().Error()})
		return
	case pr.Interval <= 0:
		p.Refusals = append(p.Refusals, Refusal{pr.Name, o.Name, "the connector has no windows (interval 0): no window to score"})
		return
	case pr.Interval%time.Millisecond != 0:
		p.Refusals = append(p.Refusals, Refusal{pr.Name, o.Name, fmt.Sprintf(
			"the windows' interval %s is not a whole number of milliseconds, which Prometheus's timestamps are", pr.Interval)})
		return
	case base < pr.Interval:
		p.Refusals = append(p.Refusals, Refusal{pr.Name, o.Name, fmt.Sprintf(
			"the shortest window %s holds no whole window of the probe (interval %s): shorten the interval or lengthen the tiers' windows",
			FormatDuration(base), pr.Interval)})
		return
	}
	o.Note = fmt.Sprintf("windows whose observed deltaq.qoo.score is at least %s, one sample per window of %s; "+
		"a window whose score was withheld for too few instances has no sample and does not count",
		formatNumber(q.MinScore), FormatDuration(pr.Interval))
	p.addObjective(o, 0) // its own test above: a subquery counts the windows
}

// scoreSelector selects the probe's observed score.
func (o *Objective) scoreSelector() string {
	return fmt.Sprintf(`%s{deltaq_probe=%s, deltaq_series="observed"}`, metricQoOScore, quote(o.Probe))
}

// badWindows is 1 for a window scoring below MinScore and 0 for one at or
// above it, at the window's own time only: inside a subquery of step
// Interval each step reads the sample of the window that ended then, and
// the freshness test drops the earlier sample the lookback would repeat
// when a window has none (a withheld score).
func (o *Objective) badWindows() string {
	s := o.scoreSelector()
	return fmt.Sprintf("(%s < bool %s) and (time() - timestamp(%s) < %s)", s, formatNumber(o.MinScore), s,
		formatNumber(o.Interval.Seconds()))
}

// qooRules writes the SLI rules of a QoO objective: the scored and the bad
// windows per second over the shortest window b, counted window by window
// (a subquery of step Interval), and the error ratio over every window:
// over b the ratio of the two, over a longer window w the ratio of their
// sums over w (each of the windows in w counted as often as b's rates
// overlap it, which the ratio cancels but at w's far edge). Counting every
// window of w directly would evaluate w/Interval steps at every evaluation:
// 259,200 for 3 d of 1 s windows.
//
// Each range is a millisecond short of its window (qooRange), so that it
// counts the same windows and rates in Prometheus 2 and 3.
func (p *Plan) qooRules(b *bytes.Buffer, o *Objective) {
	base := FormatDuration(p.Windows[0])
	per := formatNumber(p.Windows[0].Seconds())
	sub := fmt.Sprintf("[%s:%s]", qooRange(p.Windows[0]), FormatDuration(o.Interval))
	fmt.Fprintf(b, "      # Its ranges are a millisecond short of their windows: they read the steps of (t - %s, t], as Prometheus 2\n", base)
	b.WriteString("      # and 3 both do (a range of Prometheus 2 holds a sample at its start, one of 3 not).\n")
	events, errs := RecordEvents+":rate"+base, RecordErrors+":rate"+base
	record(b, events, fmt.Sprintf("sum by (job, deltaq_probe) (\n  count_over_time((%s)%s)\n) / %s", o.badWindows(), sub, per), o.labels())
	record(b, errs, fmt.Sprintf("sum by (job, deltaq_probe) (\n  sum_over_time((%s)%s)\n) / %s", o.badWindows(), sub, per), o.labels())
	for _, w := range p.Windows {
		ws := FormatDuration(w)
		expr := fmt.Sprintf("%s%s\n/ %s%s", errs, o.selector(), events, o.selector())
		if w != p.Windows[0] {
			expr = fmt.Sprintf("sum_over_time(%s%s[%s])\n/ sum_over_time(%s%s[%s])", errs, o.selector(), qooRange(w), events,
				o.selector(), qooRange(w))
		}
		record(b, RecordErrorRatio+":rate"+ws, expr, o.labels())
	}
}

// qooRange is the range of a QoO rule over window w: a millisecond
// shorter. Its subquery's steps fall on whole multiples of the windows'
// interval, and the records it sums on the evaluations of its group, a
// whole number of evaluation intervals apart. With the range w itself,
// Prometheus 2's [t − w, t] held a step or record at t − w that
// Prometheus 3's (t − w, t] leaves out: at every evaluation that fell on a
// step (all of promtool's) one window more, the one ending at t − w, which
// the evaluation at t − w counted too (7 windows of 10 s in a minute,
// where Prometheus 3 counts 6), and over the longer windows one record
// more, always. Timestamps are whole milliseconds, so Prometheus 2's
// [t − w + 1 ms, t] is (t − w, t], and Prometheus 3's (t − w + 1 ms, t] is
// too but for a step at t − w + 1 ms: at evaluations 1 ms before a step,
// which promtool's never are and a server's group's are for one offset in
// as many as the windows' interval has milliseconds, Prometheus 3 counts
// one window fewer.
func qooRange(w time.Duration) string { return FormatDuration(w - time.Millisecond) }

// alertName is the name of the objective's burn-rate alerts.
func (o *Objective) alertName() string {
	if o.Kind == QoO {
		return AlertQoOName
	}
	return AlertName
}

// runbookURL is the runbook_url of the objective's alerts.
func (p *Plan) runbookURL(o *Objective) string {
	if o.Kind == QoO {
		return p.Options.QoORunbookURL
	}
	return p.Options.RunbookURL
}

// errorWords names the error ratio of the objective in an alert's
// description.
func (o *Objective) errorWords() string {
	if o.Kind == QoO {
		return fmt.Sprintf("the share of the windows of probe {{ $labels.deltaq_probe }} scoring below %s", formatNumber(o.MinScore))
	}
	return "the error ratio of probe {{ $labels.deltaq_probe }}"
}

// hasQoO reports whether the plan has a QoO objective.
func (p *Plan) hasQoO() bool {
	for i := range p.Objectives {
		if p.Objectives[i].Kind == QoO {
			return true
		}
	}
	return false
}

// qooWindows is the window pattern of a QoO rule test: the windows of each
// step, bad ones first, then one withheld (no sample) when two good ones
// are left, then good ones, so that a withheld window follows a bad one,
// which the rules must not count again.
type qooWindows struct {
	perStep int   // windows per step
	bad     []int // bad windows of step s (s ≥ 1); step 0 is the first window alone, good
}

// withheld is the number of withheld windows of step t.
func (w qooWindows) withheld(t int) int {
	if t >= 1 && w.bad[t] <= w.perStep-2 {
		return 1
	}
	return 0
}

// newQoOWindows spreads the scenario's error ratio over the steps: the
// bad windows up to step s are ⌊Σ ratio · perStep⌋, so that every range
// holds the scenario's ratio to one window.
func newQoOWindows(s scenario, perStep int) qooWindows {
	w := qooWindows{perStep: perStep, bad: make([]int, s.span+1)}
	cum, prev := 0.0, 0
	for t := 1; t <= s.span; t++ {
		r := s.rh
		if t > s.t0 {
			r = s.rb
		}
		cum += r * float64(perStep)
		n := int(math.Floor(cum + 1e-9))
		w.bad[t] = min(n-prev, perStep)
		prev = n
	}
	return w
}

// counts returns the scored and the bad windows the subquery over the
// shortest window, one step, reads at step t: the windows ending in
// (t − 1 step, t].
func (w qooWindows) counts(t int) (events, bad int) {
	if t == 0 {
		return 1, 0
	}
	return w.perStep - w.withheld(t), w.bad[t]
}

// sums returns the counts of the steps lo … t (from 0).
func (w qooWindows) sums(lo, t int) (events, bad int) {
	for s := max(0, lo); s <= t; s++ {
		e, b := w.counts(s)
		events, bad = events+e, bad+b
	}
	return events, bad
}

// ratio is the modelled error ratio over the last n steps at step t: over
// the shortest window (base) the subquery's counts, over a longer one the
// sums of the recorded rates at the steps of (t − n, t].
func (w qooWindows) ratio(t, n int, base bool) float64 {
	if base {
		e, b := w.counts(t)
		return float64(b) / float64(e)
	}
	events, bad := w.sums(t-n+1, t)
	return float64(bad) / float64(events)
}

// series writes the score samples: MinScore/2 for a bad window, 100 for a
// good one, none ("_") for a withheld one, run-length encoded (promtool's
// "v xN" is N + 1 samples).
func (w qooWindows) series(minScore float64) string {
	type run struct {
		v string
		n int
	}
	runs := []run{{"100", 1}}
	add := func(v string, n int) {
		if n == 0 {
			return
		}
		if last := &runs[len(runs)-1]; last.v == v {
			last.n += n
			return
		}
		runs = append(runs, run{v, n})
	}
	for t := 1; t < len(w.bad); t++ {
		add(formatNumber(minScore/2), w.bad[t])
		add("_", w.withheld(t))
		add("100", w.perStep-w.bad[t]-w.withheld(t))
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = r.v
		if r.n > 1 {
			parts[i] += fmt.Sprintf("x%d", r.n-1)
		}
	}
	return strings.Join(parts, " ")
}

// qooTestGroup writes one test group of a QoO objective: scenario kind
// (the QTA objectives' healthy, fast and slow burns) sent as the scores of
// the probe's windows, one sample per window (the group's interval), the
// bad ones at half the objective's score. The model counts the windows as
// the rules do (qooWindows), so the checks stand two steps clear of what
// the rules compute, not of an idealised burn.
func (p *Plan) qooTestGroup(b *bytes.Buffer, kind string, o *Objective, step time.Duration) {
	if step%o.Interval != 0 {
		if kind == "healthy" {
			fmt.Fprintf(b, "  # Not tested here: %s (the step %s is not a whole number of windows of %s).\n",
				o.Describe(), FormatDuration(step), FormatDuration(o.Interval))
		}
		return
	}
	s := p.scenarioOf(kind, o, step)
	perStep := int(step / o.Interval)
	// Room for the counted burn to fire later than the ideal one.
	s.span += s.span/4 + 8
	w := newQoOWindows(s, perStep)
	s.qoo = &w
	if kind != "healthy" {
		a := o.Alerts[0]
		if kind == "slow" {
			a = o.Alerts[len(o.Alerts)-1]
		}
		if _, f := s.firingBoth(a, o.Budget, step); f >= 0 && f+4 < s.span {
			s.span = f + 4
			w.bad = w.bad[:s.span+1]
		}
	}
	fmt.Fprintf(b, "  - name: %s\n    interval: %s\n    input_series:\n", quote(kind+": "+o.Probe+" "+o.Name), FormatDuration(o.Interval))
	fmt.Fprintf(b, "      - series: %s\n        values: %s\n", quote(fmt.Sprintf(
		`%s{job="otelcol-deltaq", instance="c1", deltaq_probe=%s, deltaq_series="observed"}`, metricQoOScore, quote(o.Probe))),
		quote(w.series(o.MinScore)))
	b.WriteString("    promql_expr_test:\n")
	p.testChecks(b, o, s, step)
}
