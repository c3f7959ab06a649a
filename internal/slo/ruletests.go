// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// The rule tests feed promtool synthetic deltaq metrics in which one
// objective of every probe follows a scenario, and check the alerts the
// rules raise against a model of the rules, which counts as Prometheus 2
// and Prometheus 3 both do. The counters are sampled twice a step (the
// evaluation interval, the shortest window): Prometheus 3's ranges are
// open at their start, (t − W, t], so a rate over the shortest window
// sampled once a step would read one sample, and no rate. The error ratio
// over a window ending at t is the ratio of the increments the range
// reads: those of (t − W, t] under Prometheus 2, whose range [t − W, t]
// holds the sample at t − W, and under Prometheus 3 those after the
// first sample in the window, of (t − W + half a step, t]; before t = W
// both read from the first sample at 0. rate() extrapolates numerator
// and denominator alike, so the ratio is exact: every counter starts
// well above what it adds over the test, so that no extrapolation is cut
// short at zero, which would cut one counter's and not another's. A
// tier's condition holds from the first evaluation t₁ at which both
// windows exceed its threshold, and it fires at the first evaluation at
// or after t₁ + for. Each check sits two steps clear of the modelled
// transition under both versions, and where both have the same alerts
// firing, so that rounding in the model cannot decide it.
//
// Scenarios, each over every objective (the objective's budget b):
//   - healthy: error ratio b/2 (burn 0.5×) throughout — no alert of any
//     tier, pending or firing, ever (over the longest `for` and a short
//     window: the ratio is constant from the first sample), and the budget
//     remaining 0.5 at the end;
//   - fast: healthy for the first tier's long window, then its factor F
//     × 1.5 (capped at an error ratio of 1) — not yet at t₁ − 2 steps, that
//     tier's page firing two steps after its `for`;
//   - slow: healthy for the last tier's short window, then a burn a
//     quarter above the last tier's factor (below every other tier's) — the
//     last tier's ticket fires, and no page, pending or firing, ever.

// testRate is the instances per step of the synthetic probes, and
// samplesPerStep the samples of their counters per step.
const (
	testRate       = 600
	samplesPerStep = 2
)

// rangeStart is how a version of Prometheus bounds a range selector or a
// subquery at its start: Prometheus 2 holds a sample at t − d in the
// range [t − d, t], Prometheus 3 reads (t − d, t] (its migration guide,
// "Range selectors and lookback exclude samples coinciding with the left
// boundary").
type rangeStart bool

const (
	closedStart rangeStart = true  // Prometheus 2
	openStart   rangeStart = false // Prometheus 3
)

// rangeStarts are the versions the tests are written for.
var rangeStarts = []rangeStart{closedStart, openStart}

// scenario is a piecewise-constant error ratio: rh before step t0, rb from
// it, over span steps.
type scenario struct {
	name     string
	rh, rb   float64
	t0, span int
	// qoo, for a QoO objective, are the windows the test sends, which the
	// model counts (ratioOver); its rules count them alike in both
	// versions.
	qoo *qooWindows
}

// ratioOver is the modelled error ratio over a window of length d at step
// t, ranges starting as rs.
func (s scenario) ratioOver(t int, d, step time.Duration, rs rangeStart) float64 {
	if s.qoo != nil {
		return s.qoo.ratio(t, steps(d, step), d == step)
	}
	return s.ratio(t, steps(d, step), rs)
}

// ratio is the modelled error ratio over the last w steps at step t; NaN at
// t = 0 (one sample: no rate). The range reads the increments of steps
// t − w + 1 … t, but for an open start, from t = w on, not the first
// sample's share of step t − w + 1.
func (s scenario) ratio(t, w int, rs rangeStart) float64 {
	lo := max(0, t-w)
	if t == lo {
		return math.NaN()
	}
	healthy := float64(max(0, min(t, s.t0)-lo)) // steps lo+1 … t0
	bad, n := s.rh*healthy+s.rb*(float64(t-lo)-healthy), float64(t-lo)
	if rs == openStart && t-w >= 0 {
		first := s.rb // of step lo + 1
		if lo+1 <= s.t0 {
			first = s.rh
		}
		bad, n = bad-first/samplesPerStep, n-1.0/samplesPerStep
	}
	return bad / n
}

// firing returns the step at which the tier's condition first holds and
// the step at which it fires, or −1, −1 if it never fires within the span.
func (s scenario) firing(a Alert, b float64, step time.Duration, rs rangeStart) (active, fires int) {
	forSteps := int(math.Ceil(float64(a.forOf()) / float64(step)))
	active = -1
	for t := 1; t <= s.span; t++ {
		if s.holds(a, b, step, t, rs) {
			if active < 0 {
				active = t
			}
			if t-active >= forSteps {
				return active, t
			}
		} else {
			active = -1
		}
	}
	return -1, -1
}

// firingBoth is firing under both versions: the earlier step at which the
// condition first holds and the later at which the tier fires, or −1, −1
// if it never fires in one of them.
func (s scenario) firingBoth(a Alert, b float64, step time.Duration) (active, fires int) {
	active, fires = s.span+1, 0
	for _, rs := range rangeStarts {
		act, f := s.firing(a, b, step, rs)
		if f < 0 {
			return -1, -1
		}
		active, fires = min(active, act), max(fires, f)
	}
	return active, fires
}

// holds reports whether tier a's condition holds at step t: both its
// windows' error ratios above its factor times the budget b.
func (s scenario) holds(a Alert, b float64, step time.Duration, t int, rs rangeStart) bool {
	return s.ratioOver(t, a.Long, step, rs)/b > a.Factor && s.ratioOver(t, a.Short, step, rs)/b > a.Factor
}

// firingAt reports whether tier a's alert is firing at step t by the
// model: its condition has held at every step from one at least its `for`
// before t. A burn that hovers at the tier's factor (a slow burn counted
// in whole windows) can fire and resolve again.
func (s scenario) firingAt(a Alert, b float64, step time.Duration, t int, rs rangeStart) bool {
	forSteps := int(math.Ceil(float64(a.forOf()) / float64(step)))
	active := -1
	for u := 1; u <= t && u <= s.span; u++ {
		if s.holds(a, b, step, u, rs) {
			if active < 0 {
				active = u
			}
		} else {
			active = -1
		}
	}
	return active >= 0 && t-active >= forSteps
}

// firingTiers returns the labels of the alerts of o (of severity, or every
// one for "") firing at step t, and whether both versions have the same
// ones firing.
func (p *Plan) firingTiers(o *Objective, s scenario, step time.Duration, t int, severity string) ([]string, bool) {
	var exp []string
	agree := true
	for _, a := range o.Alerts {
		if severity != "" && a.Severity != severity {
			continue
		}
		fires := s.firingAt(a, o.Budget, step, t, closedStart)
		agree = agree && fires == s.firingAt(a, o.Budget, step, t, openStart)
		if fires {
			exp = append(exp, p.alertLabels(o, a))
		}
	}
	return exp, agree
}

// checkStep is the step at which a test checks tier a firing, first from
// step fires: two steps after it, clear of the modelled transition, or
// the first step after where both versions have a firing and the same
// tiers of severity firing; but for a QoO objective, whose model counts
// the windows as the rules do, the step fires itself when the alert,
// firing then, has resolved by two steps after (a burn hovering at the
// factor in whole windows: 1.25× from a minute, with a window of 1 s
// scored on 6 s steps, fired at 4m48s and was under 1× at 5m). −1 if
// there is none within the span.
func (p *Plan) checkStep(o *Objective, a Alert, s scenario, step time.Duration, fires int, severity string) int {
	if s.qoo != nil && !s.firingAt(a, o.Budget, step, fires+2, closedStart) {
		return fires
	}
	for c := fires + 2; c <= s.span; c++ {
		_, agree := p.firingTiers(o, s, step, c, severity)
		if agree && s.firingAt(a, o.Budget, step, c, closedStart) && s.firingAt(a, o.Budget, step, c, openStart) {
			return c
		}
	}
	return -1
}

func steps(d, step time.Duration) int { return int(d / step) }

// testStep is the evaluation step of the tests: the shortest window
// (sampled samplesPerStep times, so that its rate() reads two samples in
// Prometheus 3 too), or the evaluation interval when that is longer.
// promtool's time grows with the square of the steps (every evaluation
// reads the long windows), so a finer step would make the slow burn's
// days of series take minutes.
func (p *Plan) testStep() time.Duration {
	return max(p.Options.Interval, p.Windows[0])
}

// RuleTests writes a promtool test file for the rule file at rulesPath
// (relative to the test file). Objectives over an exponential histogram are
// left out (promtool's series notation of this Prometheus has no native
// histograms); the file says so.
func (p *Plan) RuleTests(rulesPath string) []byte {
	step := p.testStep()
	var b bytes.Buffer
	b.WriteString("# Unit tests of the generated burn-rate rules, generated with them by `deltaq slo`:\n")
	fmt.Fprintf(&b, "#   promtool test rules THIS_FILE  (the promtool of Prometheus 2 or 3)\n# Scenarios per objective (see internal/slo, ruletests.go): a healthy burn of 0.5× never\n")
	b.WriteString("# alerts; a fast burn pages after its tier's `for`; a slow burn just above the last tier's factor\n")
	b.WriteString("# opens a ticket and never pages.\n")
	// The groups read one another's records at the same evaluation: promtool
	// keeps an order only for the groups it is told (group_eval_order), so
	// without it a budget could be read before the SLI it divides.
	fmt.Fprintf(&b, "rule_files:\n  - %s\n\nevaluation_interval: %s\n\ngroup_eval_order: [deltaq-slo-sli, deltaq-slo-budget, deltaq-slo-alerts]\n\ntests:\n",
		quote(rulesPath), FormatDuration(step))
	byProbe := map[string][]*Objective{}
	var names []string
	var qoo []*Objective
	for i := range p.Objectives {
		o := &p.Objectives[i]
		if o.Kind == QoO {
			qoo = append(qoo, o)
			continue
		}
		if o.Exponential {
			fmt.Fprintf(&b, "  # Not tested here: %s (exponential histogram).\n", o.Describe())
			continue
		}
		if step%(samplesPerStep*time.Millisecond) != 0 {
			fmt.Fprintf(&b, "  # Not tested here: %s (the shortest window %s does not split into %d samples of whole milliseconds).\n",
				o.Describe(), FormatDuration(step), samplesPerStep)
			continue
		}
		if byProbe[o.Probe] == nil {
			names = append(names, o.Probe)
		}
		byProbe[o.Probe] = append(byProbe[o.Probe], o)
	}
	sort.Strings(names)
	for k := 0; ; k++ {
		var os []*Objective
		for _, n := range names {
			if k < len(byProbe[n]) {
				os = append(os, byProbe[n][k])
			}
		}
		if len(os) == 0 {
			break
		}
		for _, kind := range []string{"healthy", "fast", "slow"} {
			p.testGroup(&b, kind, os, byProbe, step)
		}
	}
	for _, o := range qoo {
		for _, kind := range []string{"healthy", "fast", "slow"} {
			p.qooTestGroup(&b, kind, o, step)
		}
	}
	return b.Bytes()
}

// scenarioOf returns the scenario kind for objective o.
func (p *Plan) scenarioOf(kind string, o *Objective, step time.Duration) scenario {
	first, last := o.Alerts[0], o.Alerts[len(o.Alerts)-1]
	s := scenario{name: kind, rh: o.Budget / 2}
	switch kind {
	case "healthy":
		s.rb = s.rh
		// Constant from the first sample: every window reads b/2 at once,
		// so the longest `for` and a short window more show the steady state.
		longestFor := time.Duration(0)
		for _, a := range o.Alerts {
			longestFor = max(longestFor, a.forOf())
		}
		s.span = steps(longestFor+last.Short, step) + 2
	case "fast":
		s.t0 = steps(first.Long, step)
		s.rb = math.Min(1, 1.5*first.Factor*o.Budget)
	case "slow":
		s.t0 = steps(last.Short, step)
		burn := 1.25 * last.Factor
		for _, a := range o.Alerts[:len(o.Alerts)-1] {
			burn = math.Min(burn, (last.Factor+a.Factor)/2)
		}
		s.rb = math.Min(1, burn*o.Budget)
	}
	if s.span == 0 {
		// Long enough for the tier under test to fire, with margin.
		s.span = s.t0 + 3*steps(p.Options.Period, step)
		a := first
		if kind == "slow" {
			a = last
		}
		if _, f := s.firingBoth(a, o.Budget, step); f >= 0 {
			s.span = f + 4
		}
	}
	return s
}

// testGroup writes one test group: scenario kind on objective os[i] of
// each probe.
func (p *Plan) testGroup(b *bytes.Buffer, kind string, os []*Objective, byProbe map[string][]*Objective, step time.Duration) {
	scs := make([]scenario, len(os))
	span := 0
	for i, o := range os {
		scs[i] = p.scenarioOf(kind, o, step)
		span = max(span, scs[i].span)
	}
	fmt.Fprintf(b, "  - name: %s\n    interval: %s\n    input_series:\n", quote(kind+": "+os[0].Name+" and the like"),
		FormatDuration(step/samplesPerStep))
	for i, o := range os {
		p.testSeries(b, o, byProbe[o.Probe], scs[i], span)
	}
	b.WriteString("    promql_expr_test:\n")
	for i, o := range os {
		p.testChecks(b, o, scs[i], step)
	}
}

// counter writes the expanding notation of a counter sampled
// samplesPerStep times a step that grows by a per step before step t0 and
// by c from it, over span steps. It starts at testRate × span, more than
// it adds over the test: rate() extrapolates toward a range's start no
// further than to where the counter would have been zero, and from 0 it
// would cut the extrapolation of a counter growing faster in the range
// than before short, and not that of another.
func counter(a, c float64, t0, span int) string {
	start := float64(testRate * span)
	a, c = a/samplesPerStep, c/samplesPerStep
	t0, span = t0*samplesPerStep, span*samplesPerStep
	if t0 <= 0 {
		return fmt.Sprintf("%s+%sx%d", formatNumber(start), formatNumber(c), span)
	}
	return fmt.Sprintf("%s+%sx%d %s+%sx%d", formatNumber(start), formatNumber(a), t0-1, formatNumber(start+a*float64(t0)),
		formatNumber(c), span-t0)
}

// testSeries writes the probe's input series for a scenario on o: every le
// series its objectives read, and its outcome counters.
func (p *Plan) testSeries(b *bytes.Buffer, o *Objective, all []*Objective, s scenario, span int) {
	n := float64(testRate)
	series := func(name, labels, values string) {
		fmt.Fprintf(b, "      - series: %s\n        values: %s\n", quote(fmt.Sprintf(`%s{job="otelcol-deltaq", instance="c1", deltaq_probe=%s%s}`,
			name, quote(o.Probe), labels)), quote(values))
	}
	// bad is the scenario's bad count per step; latency misses are late
	// successes, availability misses failures.
	badH, badB := s.rh*n, s.rb*n
	// Misses are failures when no bucket tells late from on time.
	missesFail := o.Kind == Success || o.Le == "+Inf"
	les := map[string]bool{"+Inf": true}
	for _, x := range all {
		if x.Le != "" {
			les[x.Le] = true
		}
	}
	var sorted []string
	for le := range les {
		sorted = append(sorted, le)
	}
	sort.Strings(sorted)
	for _, le := range sorted {
		good := func(bad float64) float64 {
			if missesFail {
				return n - bad // every success is fast
			}
			if le == o.Le || (le != "+Inf" && o.Le != "+Inf" && parseLe(le) < parseLe(o.Le)) {
				return n - bad // below the objective's delay: the late ones are late here too
			}
			return n
		}
		series(metricBucket, fmt.Sprintf(`, le=%s`, quote(le)), counter(good(badH), good(badB), s.t0, span))
	}
	if missesFail {
		series(metricOutcomes, `, deltaq_outcome="success"`, counter(n-badH, n-badB, s.t0, span))
		series(metricOutcomes, `, deltaq_outcome="failure"`, counter(badH, badB, s.t0, span))
	} else {
		series(metricOutcomes, `, deltaq_outcome="success"`, counter(n, n, s.t0, span))
		series(metricOutcomes, `, deltaq_outcome="failure"`, counter(0, 0, s.t0, span))
	}
	series(metricOutcomes, `, deltaq_outcome="timeout"`, counter(0, 0, s.t0, span))
}

func parseLe(s string) float64 {
	var x float64
	_, _ = fmt.Sscan(s, &x)
	return x
}

// testChecks writes the checks of scenario s on objective o.
func (p *Plan) testChecks(b *bytes.Buffer, o *Objective, s scenario, step time.Duration) {
	at := func(t int) string { return FormatDuration(time.Duration(t) * step) }
	alerts := fmt.Sprintf(`ALERTS{alertname=%s, deltaq_probe=%s, %s=%s`, quote(o.alertName()), quote(o.Probe), LabelSLO, quote(o.Name))
	check := func(comment, expr string, t int, exp []string) {
		fmt.Fprintf(b, "      # %s\n      - expr: %s\n        eval_time: %s\n", comment, quote(expr), at(t))
		if len(exp) == 0 {
			b.WriteString("        exp_samples: []\n")
			return
		}
		b.WriteString("        exp_samples:\n")
		for _, e := range exp {
			fmt.Fprintf(b, "          - labels: %s\n            value: 1\n", quote(e))
		}
	}
	firingAt := func(t int, severity string) []string {
		exp, _ := p.firingTiers(o, s, step, t, severity)
		return exp
	}
	unchecked := func(a Alert, fires int) {
		fmt.Fprintf(b, "      # Not checked: tier %s fires at %s, and up to %s Prometheus 2 and 3 differ in what else fires.\n",
			a.Tier, at(fires), at(s.span))
	}
	switch s.name {
	case "healthy":
		check(fmt.Sprintf("%s; burn 0.5×: no alert, pending or firing, ever.", sentence(o.Describe())),
			fmt.Sprintf("count_over_time(%s}[%s])", alerts, at(s.span)), s.span, nil)
		left, within := s.budgetLeft(s.span, p.Options.Period, step, o.Budget)
		what := "Half the error budget is left."
		if s.qoo != nil {
			what = fmt.Sprintf("%s of the error budget is left (the windows counted).", formatNumber(left))
		}
		check(what, fmt.Sprintf("abs(%s%s - %s) < bool %s",
			RecordBudgetRemaining, o.selector(), formatNumber(left), strconv.FormatFloat(within, 'g', 3, 64)), s.span, []string{o.seriesLabels()})
	case "fast":
		a := o.Alerts[0]
		active, fires := s.firingBoth(a, o.Budget, step)
		if fires < 0 {
			fmt.Fprintf(b, "      # %s: the model has the fast burn never fire tier %s.\n", o.Describe(), a.Tier)
			return
		}
		win := fmt.Sprintf(`, %s=%s`, LabelWindow, quote(FormatDuration(a.Long)+"/"+FormatDuration(a.Short)))
		check(fmt.Sprintf("%s; burn %s× from %s: tier %s not yet active at %s,", sentence(o.Describe()),
			formatNumber(s.rb/o.Budget), at(s.t0), a.Tier, at(active-2)), alerts+win+"}", active-2, nil)
		c := p.checkStep(o, a, s, step, fires, a.Severity)
		if c < 0 {
			unchecked(a, fires)
			return
		}
		check(fmt.Sprintf("active from %s, firing after its `for` of %s.", at(active), FormatDuration(a.forOf())),
			alerts+`, alertstate="firing", severity=`+quote(a.Severity)+"}", c, firingAt(c, a.Severity))
	case "slow":
		a := o.Alerts[len(o.Alerts)-1]
		if a.Severity == Critical {
			// Every tier pages (--tiers without a warning one, or the
			// warning tiers refused for this objective): a slow burn
			// above the last one's factor pages too.
			fmt.Fprintf(b, "      # %s: the last tier, %s, pages: the slow burn pages too.\n", sentence(o.Describe()), a.Tier)
		} else {
			check(fmt.Sprintf("%s; burn %s× from %s: never a page, pending or firing,", sentence(o.Describe()),
				formatNumber(s.rb/o.Budget), at(s.t0)), fmt.Sprintf("count_over_time(%s, severity=%s}[%s])", alerts, quote(Critical), at(s.span)), s.span, nil)
		}
		_, fires := s.firingBoth(a, o.Budget, step)
		if fires < 0 {
			fmt.Fprintf(b, "      # The model has the slow burn never fire tier %s.\n", a.Tier)
			return
		}
		c := p.checkStep(o, a, s, step, fires, "")
		if c < 0 {
			unchecked(a, fires)
			return
		}
		check(fmt.Sprintf("but tier %s fires at %s.", a.Tier, at(fires)), alerts+`, alertstate="firing"}`, c, firingAt(c, ""))
	}
}

// seriesLabels are the labels of o's recorded series in a test's output.
func (o *Objective) seriesLabels() string {
	s := fmt.Sprintf(`{job="otelcol-deltaq", deltaq_probe=%s, %s=%s`, quote(o.Probe), LabelSLO, quote(o.Name))
	if o.Kind == Latency {
		s += fmt.Sprintf(`, %s=%s`, LabelLe, quote(o.Seconds))
	}
	if o.Kind == QoO {
		s += fmt.Sprintf(`, %s=%s`, LabelQoOMin, quote(formatNumber(o.MinScore)))
	}
	return s + "}"
}

// budgetLeft is the modelled budget remaining at step t, 1 − the error
// ratio over the period / b, and how far from it the check may find it:
// 0.5 for a healthy burn of b/2 counted exactly. For a QoO objective the
// average over the period of the recorded rates, which Prometheus 2 reads
// at the steps of [t − period, t] and 3 of (t − period, t]: the middle of
// the two, and half their distance more.
func (s scenario) budgetLeft(t int, period, step time.Duration, b float64) (left, within float64) {
	if s.qoo == nil {
		return 0.5, 0.001
	}
	n := steps(period, step)
	var lefts [2]float64
	for i, lo := range []int{t - n, t - n + 1} {
		events, bad := s.qoo.sums(lo, t)
		lefts[i] = 1 - float64(bad)/float64(events)/b
	}
	left = math.Round((lefts[0]+lefts[1])/2*1e6) / 1e6
	return left, 0.001 + math.Abs(lefts[0]-lefts[1])/2
}

// alertLabels are the labels of a firing alert's ALERTS series.
func (p *Plan) alertLabels(o *Objective, a Alert) string {
	return fmt.Sprintf(`ALERTS{alertname=%s, alertstate="firing", severity=%s, %s=%s, %s=%s, %s`,
		quote(o.alertName()), quote(a.Severity), LabelWindow, quote(FormatDuration(a.Long)+"/"+FormatDuration(a.Short)),
		LabelBurnRate, quote(formatNumber(a.Factor)), o.seriesLabels()[1:])
}
