// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package slo turns quantitative timeliness agreements into service-level
// objectives with error budgets, and writes the Prometheus recording and
// alerting rules that watch them (multi-window, multi-burn-rate alerts, the
// Site Reliability Workbook, chapter "Alerting on SLOs"), their promtool
// unit tests, and OpenSLO and Sloth documents.
//
// New makes a Plan of a set of Probes under Options. Each QTA point "at
// least p of the instances within d" is a ratio objective (good/total is
// the improper CDF ΔQ(d), target p, budget 1 − p), max_failure f an
// availability objective (target 1 − f, budget f), and a probe's qoo
// requirement can add a time-slice objective on its Quality of Outcome
// score (QoOObjective): an Objective each, alerted on by the Tiers that
// apply to it (Alert). Since an error ratio is at most 1, no window burns a
// budget b faster than 1/b: a tier whose threshold, factor × b, is above
// Options.MaxErrorRatio takes the derived factor MaxErrorRatio/b instead
// (Derive). What cannot be alerted on — an objective without a budget, a
// QTA point that no bucket bound of deltaq.observed counts exactly, a tier
// whose derived factor is not above 1 — is listed, with the reason, in
// Plan.Refusals.
//
// Plan.Rules writes the rule file, Plan.RuleTests its promtool tests,
// Plan.OpenSLO and Plan.Sloth the documents (without the Quality of
// Outcome objectives).
//
// docs/design.md, "SLOs from QTAs", gives the burn-rate arithmetic, the
// exactness of the SLIs and the time-slice objectives in full.
package slo // import "github.com/deltaq-otel/deltaq/internal/slo"

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

// Severity of an alert tier, in the one vocabulary of every rule the project
// ships (examples/prometheus/rules) and generates: critical pages someone
// now, warning opens a ticket for the working day (the Workbook's "page"
// and "ticket"), info is for dashboards and is never sent. Alertmanager
// routes on it (examples/alertmanager/alertmanager.yml).
const (
	Critical = "critical"
	Warning  = "warning"
	Info     = "info"
)

// Tier is one multi-window burn-rate alert: it fires when the error ratio
// over both Long and Short exceeds Factor × the budget, for For.
type Tier struct {
	Severity    string
	Factor      float64
	Long, Short time.Duration
	// For is how long the condition must hold; zero means Short/5, enough
	// to ride out one evaluation's spike and short against the detection
	// time.
	For time.Duration
}

// DefaultPeriod is the Workbook's SLO period.
const DefaultPeriod = 30 * 24 * time.Hour

// DefaultTiers are the Workbook's recommended tiers ("Alerting on SLOs")
// for a period T. A tier of factor F over a long window L alerts once L has
// consumed F·L/T of the period's budget: for 30 days, 14.4× over 1 h and
// 6× over 6 h page at 2 % and 5 % of the budget, 3× over 1 d and 1× over
// 3 d open a ticket at 10 %. For another period the windows scale with T
// (L = L₃₀·T/30 d, rounded to the second) and the factors stay: every tier
// still alerts at the Workbook's share of the budget, and its burn still
// empties the budget in T/F. Keeping the windows would not: over 7 days,
// 14.4× over 1 h would page at 8.6 % of the budget and 1× over 3 d open a
// ticket at 43 %; and factors rescaled to keep the shares over fixed
// windows (3.36×, 1.4×, 0.7×, 0.23×) would open tickets on burns the budget
// outlasts.
func DefaultTiers(period time.Duration) []Tier {
	scale := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * float64(period) / float64(DefaultPeriod)).Round(time.Second)
	}
	day := 24 * time.Hour
	return []Tier{
		{Severity: Critical, Factor: 14.4, Long: scale(time.Hour), Short: scale(5 * time.Minute)},
		{Severity: Critical, Factor: 6, Long: scale(6 * time.Hour), Short: scale(30 * time.Minute)},
		{Severity: Warning, Factor: 3, Long: scale(day), Short: scale(2 * time.Hour)},
		{Severity: Warning, Factor: 1, Long: scale(3 * day), Short: scale(6 * time.Hour)},
	}
}

// Defaults of the other options.
const (
	DefaultMaxErrorRatio = 0.9
	DefaultInterval      = 30 * time.Second
	DefaultRunbookURL    = "https://github.com/deltaq-otel/deltaq/blob/main/docs/runbook.md#error-budget-burn"
)

// Options are the choices of a Plan; New fills the zero ones with the
// defaults.
type Options struct {
	// Period is the SLO period T over which the budget is counted.
	Period time.Duration
	// Tiers are the alerts, in order of increasing long window.
	Tiers []Tier
	// MaxErrorRatio, in (0, 1), caps the error ratio a derived tier waits
	// for (see the package documentation).
	MaxErrorRatio float64
	// Interval is the evaluation interval of the rule groups.
	Interval time.Duration
	// RunbookURL is the runbook_url of the QTA objectives' alerts,
	// QoORunbookURL of the Quality of Outcome objectives'.
	RunbookURL, QoORunbookURL string
}

func (o *Options) fill() {
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.Tiers == nil {
		o.Tiers = DefaultTiers(o.Period)
	}
	if o.MaxErrorRatio == 0 {
		o.MaxErrorRatio = DefaultMaxErrorRatio
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.RunbookURL == "" {
		o.RunbookURL = DefaultRunbookURL
	}
	if o.QoORunbookURL == "" {
		o.QoORunbookURL = DefaultQoORunbookURL
	}
}

// Check validates the options, the zero ones taken as their defaults, as
// New does: a front end can refuse them before it reads the probes.
func (o Options) Check() error {
	o.fill()
	return o.check()
}

// check validates filled options.
func (o *Options) check() error {
	var errs []error
	if o.Period < time.Minute || o.Period > 366*24*time.Hour {
		errs = append(errs, fmt.Errorf("period %s: want 1m to 366d", FormatDuration(o.Period)))
	}
	if !(o.MaxErrorRatio > 0 && o.MaxErrorRatio < 1) {
		errs = append(errs, fmt.Errorf("max error ratio %g: want a value in (0, 1)", o.MaxErrorRatio))
	}
	if o.Interval < time.Second || o.Interval > time.Hour {
		errs = append(errs, fmt.Errorf("interval %s: want 1s to 1h", FormatDuration(o.Interval)))
	}
	if len(o.Tiers) == 0 || len(o.Tiers) > 8 {
		errs = append(errs, fmt.Errorf("%d tiers: want 1 to 8", len(o.Tiers)))
	}
	for i, t := range o.Tiers {
		where := fmt.Sprintf("tier %d (%s)", i+1, t)
		switch {
		case t.Severity != Critical && t.Severity != Warning:
			errs = append(errs, fmt.Errorf("%s: severity %q: want critical (a page) or warning (a ticket)", where, t.Severity))
		case !(t.Factor > 0) || math.IsInf(t.Factor, 0):
			errs = append(errs, fmt.Errorf("%s: burn-rate factor %g: want a positive number", where, t.Factor))
		case t.Short <= 0 || t.Long <= t.Short:
			errs = append(errs, fmt.Errorf("%s: want 0 < short window < long window", where))
		case t.Long > o.Period:
			errs = append(errs, fmt.Errorf("%s: long window beyond the period %s", where, FormatDuration(o.Period)))
		case t.Short < o.Interval:
			errs = append(errs, fmt.Errorf("%s: short window below the evaluation interval %s", where, FormatDuration(o.Interval)))
		case t.For < 0 || t.For > t.Long:
			errs = append(errs, fmt.Errorf("%s: for %s: want 0 to the long window", where, FormatDuration(t.For)))
		}
		if i > 0 && t.Long < o.Tiers[i-1].Long {
			errs = append(errs, fmt.Errorf("%s: tiers must be in order of increasing long window", where))
		}
		if j := slices.Index(o.Tiers[:i], t); j >= 0 {
			errs = append(errs, fmt.Errorf("%s: the same as tier %d: give each tier once", where, j+1))
		}
	}
	return errors.Join(errs...)
}

// String writes a tier as the --tiers option reads it:
// "critical:14.4:1h:5m".
func (t Tier) String() string {
	return fmt.Sprintf("%s:%s:%s:%s", t.Severity, formatNumber(t.Factor), FormatDuration(t.Long), FormatDuration(t.Short))
}

// Share is the part of the budget of period that the tier's long window has
// consumed when it alerts: Factor·Long/period (the Workbook's "budget
// consumption").
func (t Tier) Share(period time.Duration) float64 {
	return t.Factor * float64(t.Long) / float64(period)
}

// shareName writes Share as a percentage to three significant digits.
func (t Tier) shareName(period time.Duration) string {
	return strconv.FormatFloat(100*t.Share(period), 'g', 3, 64)
}

// forOf returns the tier's `for`.
func (t Tier) forOf() time.Duration {
	if t.For > 0 {
		return t.For
	}
	return (t.Short / 5).Round(time.Second)
}

// ParseTiers reads tiers written "SEVERITY:FACTOR:LONG:SHORT[:FOR]",
// comma-separated, durations in Prometheus's form (30s, 5m, 1h, 1d, 1h30m).
func ParseTiers(s string) ([]Tier, error) {
	var tiers []Tier
	for _, f := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(f), ":")
		if len(parts) != 4 && len(parts) != 5 {
			return nil, fmt.Errorf("tier %q: want SEVERITY:FACTOR:LONG:SHORT[:FOR]", f)
		}
		t := Tier{Severity: parts[0]}
		var err error
		if t.Factor, err = strconv.ParseFloat(parts[1], 64); err != nil {
			return nil, fmt.Errorf("tier %q: factor: %w", f, err)
		}
		if t.Long, err = ParseDuration(parts[2]); err != nil {
			return nil, fmt.Errorf("tier %q: long window: %w", f, err)
		}
		if t.Short, err = ParseDuration(parts[3]); err != nil {
			return nil, fmt.Errorf("tier %q: short window: %w", f, err)
		}
		if len(parts) == 5 {
			if t.For, err = ParseDuration(parts[4]); err != nil {
				return nil, fmt.Errorf("tier %q: for: %w", f, err)
			}
		}
		tiers = append(tiers, t)
	}
	return tiers, nil
}

// Probe is what a Plan needs of one probe: its name, its QTA and the form
// of its deltaq.observed histogram.
type Probe struct {
	Name string
	QTA  analysis.QTA
	// Bounds are the explicit bucket bounds of deltaq.observed in seconds,
	// ascending, exactly as the connector writes them (the last is dMax).
	Bounds []float64
	// Layout describes the bins for messages: "100 bins of 2ms up to 200ms".
	Layout string
	// Exponential is set when deltaq.observed is an exponential histogram
	// (histogram: exponential); Bounds then only serve to state the error.
	Exponential bool
	// Scale is the exponential histogram's scale when ScaleKnown (an
	// exponential histogram of a known layout).
	Scale      int
	ScaleKnown bool
	// NoBounds, when Bounds is empty and Exponential false, says why the
	// bucket bounds are not fixed (dmax: auto, a layout no configuration
	// gives).
	NoBounds string
	// QoO, when set, is the probe's objective on its Quality of Outcome
	// score (the probe must have a qoo requirement).
	QoO *QoOObjective
	// Interval is the length of the probe's windows, one sample of each of
	// its series (one score each for QoO); 0 when not known.
	Interval time.Duration
}

// Kind of objective.
type Kind int

const (
	// Latency is a QTA point: instances within Delay.
	Latency Kind = iota
	// Success is max_failure: instances that succeed.
	Success
	// QoO is a QoOObjective: windows whose score reaches MinScore.
	QoO
)

// Objective is one SLO of a probe.
type Objective struct {
	Probe string
	// Name is the value of the deltaq_slo label: "within-40ms" or
	// "success".
	Name  string
	Kind  Kind
	Delay time.Duration
	// Le is the le label of the good bucket as remote write writes it
	// ("0.04", "1", "+Inf"); empty with an exponential histogram. The
	// rules select it in every form a scrape gives it too (leMatcher).
	Le string
	// Seconds is Delay in seconds as written in histogram_fraction and in
	// the deltaq_le label.
	Seconds string
	// Exponential: good comes from histogram_fraction.
	Exponential bool
	// Target is p (Latency), 1 − max_failure (Success) or the share of
	// windows (QoO); Budget 1 − Target.
	Target, Budget float64
	// MinScore is the score a good window reaches, and Interval the length
	// of the windows (QoO).
	MinScore float64
	Interval time.Duration
	// Note says how good is counted when it is not a plain bucket.
	Note string
	// Alerts are the tiers that apply, with their derived factors.
	Alerts []Alert
	// doc is the name of its OpenSLO and Sloth documents (nameDocs).
	doc string
}

// Alert is a tier applied to an objective.
type Alert struct {
	Tier
	// Workbook is the tier's own factor, before Derive.
	Workbook float64
	// Derived is set when Factor is not the tier's (see Derive).
	Derived bool
	// Threshold is Factor × Budget, the error ratio both windows must
	// exceed.
	Threshold float64
	// Exhaustion is Period/Factor: at this burn rate the budget lasts that
	// long.
	Exhaustion time.Duration
}

// Refusal is an objective or a tier that cannot be alerted on, and why.
type Refusal struct {
	Probe, Objective string
	Reason           string
}

func (r Refusal) String() string {
	if r.Objective == "" {
		return fmt.Sprintf("probe %q: %s", r.Probe, r.Reason)
	}
	return fmt.Sprintf("probe %q, objective %s: %s", r.Probe, r.Objective, r.Reason)
}

// Plan is the objectives of a set of probes with their alerts.
type Plan struct {
	Options    Options
	Objectives []Objective
	// Unalerted are the objectives with a budget whose every tier was
	// refused (Derive): no alert, but an objective still, which the
	// OpenSLO documents, having no alerting of their own, describe.
	Unalerted []Objective
	Refusals  []Refusal
	// Windows are the distinct windows of the tiers, ascending.
	Windows []time.Duration
}

// New plans the objectives of probes under o. It returns an error for
// invalid options or a plan without objectives; refused objectives and
// tiers are in Plan.Refusals.
func New(probes []Probe, o Options) (*Plan, error) {
	o.fill()
	if err := o.check(); err != nil {
		return nil, err
	}
	p := &Plan{Options: o}
	seen := map[time.Duration]bool{}
	for _, t := range o.Tiers {
		for _, w := range []time.Duration{t.Short, t.Long} {
			if !seen[w] {
				seen[w] = true
				p.Windows = append(p.Windows, w)
			}
		}
	}
	sort.Slice(p.Windows, func(i, j int) bool { return p.Windows[i] < p.Windows[j] })
	probes = append([]Probe(nil), probes...)
	sort.Slice(probes, func(i, j int) bool { return probes[i].Name < probes[j].Name })
	for _, pr := range probes {
		p.addProbe(pr)
	}
	if len(p.Objectives) == 0 {
		var b strings.Builder
		b.WriteString("no objective to alert on")
		for _, r := range p.Refusals {
			b.WriteString("\n  " + r.String())
		}
		if len(p.Refusals) == 0 {
			b.WriteString(": no probe has a QTA or a Quality of Outcome objective")
		}
		return nil, errors.New(b.String())
	}
	p.nameDocs()
	return p, nil
}

// addProbe adds the objectives of one probe's QTA.
func (p *Plan) addProbe(pr Probe) {
	for _, pt := range pr.QTA.Points {
		o := Objective{Probe: pr.Name, Name: "within-" + durationName(pt.Delay), Kind: Latency, Delay: pt.Delay,
			Seconds: formatNumber(pt.Delay.Seconds()), Target: pt.P, Budget: complement(pt.P)}
		if reason := o.goodBucket(pr); reason != "" {
			p.Refusals = append(p.Refusals, Refusal{pr.Name, o.Name, reason})
			continue
		}
		p.addObjective(o, pr.Interval)
	}
	if pr.QTA.MaxFailure > 0 || len(pr.QTA.Points) > 0 {
		o := Objective{Probe: pr.Name, Name: "success", Kind: Success, Target: complement(pr.QTA.MaxFailure), Budget: pr.QTA.MaxFailure}
		p.addObjective(o, pr.Interval)
	}
	if pr.QoO != nil {
		p.addQoO(pr)
	}
}

// InexactPoint returns why the instances of pr within delay d cannot be
// counted exactly on its deltaq.observed (d between two bin edges, or no
// fixed bounds), as New refuses such a QTA point; "" when they can (d a bin
// edge, at or beyond dMax, or an exponential histogram, which
// interpolates). `deltaq check --config` refuses such a point with it.
func InexactPoint(pr Probe, d time.Duration) string {
	o := Objective{Probe: pr.Name, Kind: Latency, Delay: d, Seconds: formatNumber(d.Seconds())}
	return o.goodBucket(pr)
}

// goodBucket sets how o counts its good instances on the probe's
// histogram, or returns why it cannot be counted exactly.
func (o *Objective) goodBucket(pr Probe) string {
	d := o.Delay.Seconds()
	switch {
	case pr.Exponential:
		o.Exponential = true
		o.Note = "histogram_fraction over the exponential histogram, which interpolates linearly within the bucket holding " +
			o.Seconds + " s: off by at most the share of the successes in that bucket and in the bin around it"
		if pr.ScaleKnown {
			// The bucket (baseⁱ, baseⁱ⁺¹] of the scale that holds d.
			base := math.Exp2(math.Exp2(-float64(pr.Scale)))
			lo := math.Pow(base, float64(deltaq.ExpIndex(d, int32(pr.Scale))))
			o.Note += fmt.Sprintf(" (scale %d: buckets %.3g %% wide, (%s, %s] s around it)", pr.Scale, (base-1)*100,
				strconv.FormatFloat(lo, 'g', 4, 64), strconv.FormatFloat(lo*base, 'g', 4, 64))
		}
		return ""
	case len(pr.Bounds) == 0:
		return "the bucket bounds of deltaq.observed are not fixed (" + pr.NoBounds + "): no le counts the instances within " +
			o.Delay.String() + "; fix the probe's layout or use histogram: {exponential: {}} (histogram_fraction, approximate)"
	}
	dmax := pr.Bounds[len(pr.Bounds)-1]
	if d >= dmax*(1-1e-12) {
		o.Le = "+Inf"
		if d > dmax*(1+1e-12) {
			o.Note = "the delay is beyond dMax (" + formatNumber(dmax) + " s): every success is within it"
		}
		return ""
	}
	i := sort.SearchFloat64s(pr.Bounds, d*(1-1e-12))
	if math.Abs(pr.Bounds[i]-d) <= 1e-12*d {
		// The label as Prometheus's remote-write translation writes the
		// bound: strconv.FormatFloat(bound, 'f', -1, 64) (LeForms lists
		// the others).
		o.Le = strconv.FormatFloat(pr.Bounds[i], 'f', -1, 64)
		return ""
	}
	near := pr.Bounds[i : i+1]
	if i > 0 {
		near = pr.Bounds[i-1 : i+1]
	}
	return fmt.Sprintf("%s is not a bucket bound of deltaq.observed (%s): %s", o.Delay, pr.Layout, edgesWithinReach(near))
}

// edgesWithinReach names the bin edges around a QTA point that is none
// (the one above it, and the one below unless the point is below the
// first), as a QTA delay can name them: a whole number of nanoseconds
// within the tolerance goodBucket matches with. An edge of bins whose
// width is not a whole number of nanoseconds (1 s in 3 bins) is out of
// reach, and said to be.
func edgesWithinReach(edges []float64) string {
	const reach = "dmax a multiple of bins nanoseconds puts every bin edge within reach"
	var named, unreachable []string
	for _, e := range edges {
		if ns := math.Round(e * 1e9); ns > 0 && math.Abs(ns/1e9-e) <= 1e-12*e {
			named = append(named, secondsName(e))
		} else {
			unreachable = append(unreachable, formatNumber(e)+" s")
		}
	}
	var s string
	switch len(named) {
	case 0:
		s = "no QTA delay names a bin edge near it"
	case 1:
		s = "the nearest bin edge is " + named[0] + "; move the QTA point to it for an exact SLI"
	default:
		s = "the nearest bin edges are " + named[0] + " and " + named[1] + "; move the QTA point to one of them for an exact SLI"
	}
	switch len(unreachable) {
	case 1:
		s += " (" + unreachable[0] + " is not a whole number of nanoseconds, which QTA delays are: " + reach + ")"
	case 2:
		s += " (" + unreachable[0] + " and " + unreachable[1] + " are not whole numbers of nanoseconds, which QTA delays are: " + reach + ")"
	}
	return s
}

// addObjective derives o's alerts and adds it, or records why not. every
// is the length of the probe's windows, each a sample of the counters the
// SLI's rates read (0: not known, no tier refused for it).
func (p *Plan) addObjective(o Objective, every time.Duration) {
	if !(o.Budget > 0) {
		p.Refusals = append(p.Refusals, Refusal{o.Probe, o.Name, fmt.Sprintf(
			"target %s leaves no error budget: any miss exhausts it, so no burn rate can be alerted on "+
				"(DeltaQQTAViolation and DeltaQFailureRatioHigh watch it)", formatNumber(o.Target))})
		return
	}
	refuse := func(t Tier, reason string) {
		p.Refusals = append(p.Refusals, Refusal{o.Probe, o.Name, fmt.Sprintf("tier %s: %s", t, reason)})
	}
	// rate() needs two samples in its range: over a short window holding
	// fewer than two of the probe's windows the SLI is there at some
	// evaluations only, and the tier's for never holds. Refused before
	// Derive, so that a longer tier of the same factor takes its place.
	opts := p.Options
	opts.Tiers = nil
	for _, t := range p.Options.Tiers {
		if every > 0 && t.Short < 2*every {
			refuse(t, fmt.Sprintf("its short window %s holds fewer than two of the probe's windows of %s, the samples rate() "+
				"needs: it would not alert; lengthen --period or the tier's windows", FormatDuration(t.Short), FormatDuration(every)))
			continue
		}
		opts.Tiers = append(opts.Tiers, t)
	}
	o.Alerts = Derive(o.Budget, opts, refuse)
	if len(o.Alerts) == 0 {
		p.Refusals = append(p.Refusals, Refusal{o.Probe, o.Name, "no tier left to alert on"})
		p.Unalerted = append(p.Unalerted, o)
		return
	}
	p.Objectives = append(p.Objectives, o)
}

// Derive applies the tiers of o to an objective of budget b in (0, 1].
// A tier whose threshold F·b is at most MaxErrorRatio keeps its factor.
// Above, no window could (F·b ≥ 1) or would in practice burn that fast,
// so the factor becomes F' = MaxErrorRatio/b: the fastest burn that can be
// told apart from "every instance misses", whose budget lasts T/F'. A
// derived tier is refused when F' ≤ 1 (the budget lasts the period even
// then: nothing to page or ticket about) or when an earlier tier, with
// shorter windows, already alerts at the same factor. refuse is called for
// each refused tier.
func Derive(b float64, o Options, refuse func(t Tier, reason string)) []Alert {
	var alerts []Alert
	used := map[float64]bool{}
	for _, t := range o.Tiers {
		a := Alert{Tier: t, Workbook: t.Factor}
		if t.Factor*b > o.MaxErrorRatio {
			// Six significant digits: 0.9/0.1 is 9, not 9.000000000000002.
			a.Factor, _ = strconv.ParseFloat(strconv.FormatFloat(o.MaxErrorRatio/b, 'g', 6, 64), 64)
			a.Derived = true
			if a.Factor <= 1 {
				refuse(t, fmt.Sprintf("the budget %s allows at most a %s× burn (every instance missing); "+
					"even an error ratio of %s burns it at %s×, within the period", formatNumber(b), formatFactor(1/b),
					formatNumber(o.MaxErrorRatio), formatNumber(a.Factor)))
				continue
			}
		}
		key := math.Round(a.Factor*1e9) / 1e9
		if used[key] {
			refuse(t, fmt.Sprintf("its factor %s× repeats that of a tier with shorter windows, which answers sooner", formatNumber(a.Factor)))
			continue
		}
		used[key] = true
		a.Threshold = a.Factor * b
		a.Exhaustion = time.Duration(float64(o.Period) / a.Factor).Round(time.Minute)
		alerts = append(alerts, a)
	}
	return alerts
}

// complement returns 1 − x to 12 significant digits: the budget of a
// target of 0.9 is 0.1, not 0.09999999999999998.
func complement(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(1-x, 'g', 12, 64), 64)
	return r
}

// durationName writes a delay for a label value or a document name: Go's
// form with "us" for "µs" (40ms, 1.5s, 250us).
func durationName(d time.Duration) string {
	return strings.ReplaceAll(d.String(), "µ", "u")
}

// secondsName writes a bin edge given in seconds as a duration.
func secondsName(s float64) string {
	return time.Duration(math.Round(s * 1e9)).String()
}

// formatFactor writes a derived factor to six significant digits, as the
// factors Derive uses: 1/0.95 is 1.05263, not 1.0526315789473684.
func formatFactor(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

// formatNumber writes a float in its shortest form.
func formatNumber(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// formatProduct writes a product of numbers as written (a factor times a
// budget) to 12 significant digits, without the float noise of the product
// itself: 6 × 0.1 is 0.6, not 0.6000000000000001.
func formatProduct(x float64) string { return strconv.FormatFloat(x, 'g', 12, 64) }
