// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The Prometheus names the rules read (examples/README.md, "Prometheus
// names") and write.
const (
	metricBucket   = "deltaq_observed_seconds_bucket"
	metricNative   = "deltaq_observed_seconds"
	metricOutcomes = "deltaq_outcomes_total"

	// RecordErrorRatio is the error ratio over a window, suffixed with
	// rate<window>: deltaq:slo_error_ratio:rate5m.
	RecordErrorRatio = "deltaq:slo_error_ratio"
	// RecordEvents and RecordErrors are the rates of all instances and of
	// the bad ones over the shortest window, from which the period's
	// ratio is averaged.
	RecordEvents = "deltaq:slo_events"
	RecordErrors = "deltaq:slo_errors"
	// RecordPeriodErrorRatio is the error ratio over the period.
	RecordPeriodErrorRatio = "deltaq:slo_error_ratio:period"
	// RecordObjective and RecordBudget are the target and the error budget
	// (1 − target), constant series for dashboards.
	RecordObjective = "deltaq:slo_objective:ratio"
	RecordBudget    = "deltaq:slo_error_budget:ratio"
	// RecordBudgetRemaining is 1 − period error ratio / budget: 1 untouched,
	// 0 spent, negative overspent.
	RecordBudgetRemaining = "deltaq:slo_error_budget_remaining:ratio"

	// AlertName is the name of every burn-rate alert; severity, the
	// windows and the factor are labels.
	AlertName = "DeltaQErrorBudgetBurn"

	// Labels the rules add: the objective, and on alerts the tier.
	LabelSLO      = "deltaq_slo"
	LabelLe       = "deltaq_le"
	LabelWindow   = "deltaq_slo_window"
	LabelBurnRate = "deltaq_slo_burn_rate"
)

// RecordNames returns every series name the rules record.
func (p *Plan) RecordNames() []string {
	names := []string{}
	for _, w := range p.Windows {
		names = append(names, RecordErrorRatio+":rate"+FormatDuration(w))
	}
	base := "rate" + FormatDuration(p.Windows[0])
	return append(names, RecordEvents+":"+base, RecordErrors+":"+base, RecordPeriodErrorRatio,
		RecordObjective, RecordBudget, RecordBudgetRemaining)
}

// selector matches an objective's recorded series.
func (o *Objective) selector() string {
	return fmt.Sprintf(`{deltaq_probe=%s, %s=%s}`, quote(o.Probe), LabelSLO, quote(o.Name))
}

// labels are the labels an objective's recorded series carry besides job
// and deltaq_probe, as YAML.
func (o *Objective) labels() string {
	s := fmt.Sprintf("deltaq_probe: %s, %s: %s", quote(o.Probe), LabelSLO, quote(o.Name))
	if o.Kind == Latency {
		s += fmt.Sprintf(", %s: %s", LabelLe, quote(o.Seconds))
	}
	if o.Kind == QoO {
		s += fmt.Sprintf(", %s: %s", LabelQoOMin, quote(formatNumber(o.MinScore)))
	}
	return "{" + s + "}"
}

// Describe says what the objective requires, in words.
func (o *Objective) Describe() string {
	probe := textName(o.Probe)
	switch o.Kind {
	case Success:
		return fmt.Sprintf("at least %s of the instances of probe %s succeed (max_failure %s)",
			formatNumber(o.Target), probe, formatNumber(o.Budget))
	case QoO:
		return fmt.Sprintf("the Quality of Outcome of probe %s is at least %s in at least %s of its scored windows",
			probe, formatNumber(o.MinScore), formatNumber(o.Target))
	}
	return fmt.Sprintf("at least %s of the instances of probe %s complete within %s",
		formatNumber(o.Target), probe, o.Delay)
}

// textName is a probe's name as text and comments show it: as it is, or
// quoted with its unprintable characters escaped when it has any (a line
// break in a name would end a comment line of the rules and break their
// YAML, and YAML breaks lines at U+2028 and U+2029 too, which are no
// control characters).
func textName(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}

// literal escapes the delimiters of Go's templates, which Prometheus
// expands in an alert's labels and annotations: text from the
// configuration (a probe named x{{) is shown as it is, not run.
var literal = strings.NewReplacer("{{", `{{ "{{" }}`, "}}", `{{ "}}" }}`).Replace

// totalRate is the rate of every instance of the probe over w.
func (o *Objective) totalRate(w string) string {
	return fmt.Sprintf(`sum by (job, deltaq_probe) (rate(%s{deltaq_probe=%s}[%s]))`, metricOutcomes, quote(o.Probe), w)
}

// goodRate is the rate of the good instances over w (Latency).
func (o *Objective) goodRate(w string) string {
	if o.Exponential {
		h := fmt.Sprintf(`sum by (job, deltaq_probe) (rate(%s{deltaq_probe=%s}[%s]))`, metricNative, quote(o.Probe), w)
		return nativeWithin(o.Seconds, h, true)
	}
	return fmt.Sprintf(`sum by (job, deltaq_probe) (rate(%s{deltaq_probe=%s, %s}[%s]))`, metricBucket, quote(o.Probe), leMatcher(o.Le), w)
}

// nativeWithin counts the observations of the native histogram h at or
// below seconds: histogram_fraction × histogram_count, and 0 where h has
// none. histogram_fraction is NaN for a histogram without observations, so
// without the second case a window whose instances all timed out or failed
// would have a NaN error ratio, which no alert compares above its
// threshold, instead of 1, and a window without instances NaN errors,
// which make the average over the period NaN for the whole period. Laid
// out on lines for a rules file, else on one.
func nativeWithin(seconds, h string, lines bool) string {
	open, sep, end := "(", " ", ")"
	if lines {
		open, sep, end = "(\n    ", "\n    ", "\n  )"
	}
	return fmt.Sprintf("%s(histogram_fraction(0, %s, %s) * histogram_count(%s) and histogram_count(%s) > 0)%sor histogram_count(%s) == 0%s",
		open, seconds, h, h, h, sep, h, end)
}

// errorRate is the rate of the bad instances over w.
func (o *Objective) errorRate(w string) string {
	if o.Kind == Success {
		return fmt.Sprintf(`sum by (job, deltaq_probe) (rate(%s{deltaq_probe=%s, deltaq_outcome=~"timeout|failure"}[%s]))`,
			metricOutcomes, quote(o.Probe), w)
	}
	return fmt.Sprintf("%s\n  - %s", o.totalRate(w), o.goodRate(w))
}

// errorRatio is the SLI's error ratio over w: bad / all. A window without
// instances gives NaN (0/0), which compares false: no alert.
func (o *Objective) errorRatio(w string) string {
	if o.Kind == Success {
		return fmt.Sprintf("%s\n/ %s", o.errorRate(w), o.totalRate(w))
	}
	return fmt.Sprintf("1 - (\n  %s\n  / %s\n)", o.goodRate(w), o.totalRate(w))
}

// Rules writes the Prometheus rule file. source names the configuration
// in the header.
func (p *Plan) Rules(source string) []byte {
	var b bytes.Buffer
	p.header(&b, source)
	iv := FormatDuration(p.Options.Interval)
	base := FormatDuration(p.Windows[0])
	b.WriteString("groups:\n")
	// The SLIs: error ratios over every window, and the short-window rates
	// the period's ratio is averaged from.
	fmt.Fprintf(&b, "  - name: deltaq-slo-sli\n    interval: %s\n    rules:\n", iv)
	for i := range p.Objectives {
		o := &p.Objectives[i]
		fmt.Fprintf(&b, "      # %s (target %s, error budget %s).\n", sentence(o.Describe()), formatNumber(o.Target), formatNumber(o.Budget))
		if o.Kind == QoO {
			fmt.Fprintf(&b, "      # Good windows: %s.\n", o.Note)
			p.qooRules(&b, o)
			continue
		}
		if o.Note != "" {
			fmt.Fprintf(&b, "      # Good instances: %s.\n", o.Note)
		}
		for _, w := range p.Windows {
			ws := FormatDuration(w)
			record(&b, RecordErrorRatio+":rate"+ws, o.errorRatio(ws), o.labels())
		}
		record(&b, RecordEvents+":rate"+base, o.totalRate(base), o.labels())
		record(&b, RecordErrors+":rate"+base, o.errorRate(base), o.labels())
	}
	// The budget: the period's error ratio as the average of the
	// short-window rates (a ratio of averages, so every instance weighs the
	// same), and what is left of the budget.
	fmt.Fprintf(&b, "  - name: deltaq-slo-budget\n    interval: %s\n    rules:\n", iv)
	period := FormatDuration(p.Options.Period)
	for i := range p.Objectives {
		o := &p.Objectives[i]
		record(&b, RecordObjective, fmt.Sprintf("vector(%s)", formatNumber(o.Target)), o.labels())
		record(&b, RecordBudget, fmt.Sprintf("vector(%s)", formatNumber(o.Budget)), o.labels())
		record(&b, RecordPeriodErrorRatio, fmt.Sprintf("avg_over_time(%s:rate%s%s[%s])\n/ avg_over_time(%s:rate%s%s[%s])",
			RecordErrors, base, o.selector(), period, RecordEvents, base, o.selector(), period), o.labels())
		record(&b, RecordBudgetRemaining, fmt.Sprintf("1 - %s%s / %s", RecordPeriodErrorRatio, o.selector(), formatNumber(o.Budget)), o.labels())
	}
	fmt.Fprintf(&b, "  - name: deltaq-slo-alerts\n    interval: %s\n    rules:\n", iv)
	for i := range p.Objectives {
		o := &p.Objectives[i]
		for _, a := range o.Alerts {
			p.alert(&b, o, a)
		}
	}
	return b.Bytes()
}

// header writes the file's opening comment.
func (p *Plan) header(b *bytes.Buffer, source string) {
	o := p.Options
	what := "the QTAs"
	if p.hasQoO() {
		what = "the QTAs and Quality of Outcome objectives"
	}
	fmt.Fprintf(b, "# Error budgets and burn-rate alerts of %s of %s,\n", what, source)
	b.WriteString("# generated by `deltaq slo`: edit the configuration or the options and regenerate.\n#\n")
	fmt.Fprintf(b, "# Period %s; a tier alerts when the error ratio over both its windows exceeds\n", FormatDuration(o.Period))
	b.WriteString("# factor × error budget (the Site Reliability Workbook, \"Alerting on SLOs\"):\n")
	for _, t := range o.Tiers {
		fmt.Fprintf(b, "#   %-8s %5s× over %s and %s, for %s: at %s %% of the budget\n", t.Severity, formatNumber(t.Factor),
			FormatDuration(t.Long), FormatDuration(t.Short), FormatDuration(t.forOf()), t.shareName(o.Period))
	}
	fmt.Fprintf(b, "# A tier whose threshold would pass an error ratio of %s is derived: factor %s / budget\n",
		formatNumber(o.MaxErrorRatio), formatNumber(o.MaxErrorRatio))
	b.WriteString("# (docs/runbook.md, \"Error budget burn\"")
	if p.hasQoO() {
		b.WriteString(", and \"Quality of Outcome budget burn\" for the QoO objectives, whose events are windows")
	}
	b.WriteString(").\n")
	if len(p.Refusals) > 0 {
		b.WriteString("#\n# Not alerted on:\n")
		for _, r := range p.Refusals {
			fmt.Fprintf(b, "#   %s\n", r)
		}
	}
}

// alert writes one tier's alerting rule.
func (p *Plan) alert(b *bytes.Buffer, o *Objective, a Alert) {
	long, short := FormatDuration(a.Long), FormatDuration(a.Short)
	budget, factor := formatNumber(o.Budget), formatNumber(a.Factor)
	expr := fmt.Sprintf("%s:rate%s%s / %s > %s\nand\n%s:rate%s%s / %s > %s",
		RecordErrorRatio, long, o.selector(), budget, factor, RecordErrorRatio, short, o.selector(), budget, factor)
	derived := ""
	if a.Derived {
		derived = fmt.Sprintf(" The tier's %s× would need an error ratio of %s, above %s: its factor here is %s / %s.",
			formatNumber(a.Workbook), strconv.FormatFloat(a.Workbook*o.Budget, 'g', 6, 64), formatNumber(p.Options.MaxErrorRatio),
			formatNumber(p.Options.MaxErrorRatio), budget)
	}
	desc := fmt.Sprintf("%s over %s. Over both the last %s and %s %s "+
		"exceeded %s, a burn rate above %s× (now {{ $value | printf \"%%.3g\" }}×): at this rate the error budget of %s "+
		"is gone in %s.%s", literal(sentence(o.Describe())), FormatDuration(p.Options.Period), long, short, o.errorWords(),
		formatProduct(a.Threshold), factor, budget, FormatDuration(a.Exhaustion), derived)
	fmt.Fprintf(b, "      - alert: %s\n        expr: |-\n%s\n        for: %s\n", o.alertName(), indent(expr, 10), FormatDuration(a.forOf()))
	fmt.Fprintf(b, "        labels:\n          severity: %s\n          deltaq_probe: %s\n          %s: %s\n          %s: %s\n          %s: %s\n",
		a.Severity, quote(literal(o.Probe)), LabelSLO, quote(literal(o.Name)), LabelWindow, quote(long+"/"+short), LabelBurnRate, quote(factor))
	fmt.Fprintf(b, "        annotations:\n          summary: %s\n          description: %s\n          runbook_url: %s\n",
		quote(fmt.Sprintf("Probe {{ $labels.deltaq_probe }}: error budget of %s burning at %s× or more (%s)", literal(o.Name), factor, a.Severity)),
		quote(desc), quote(literal(p.runbookURL(o))))
}

// record writes a recording rule; labels is a YAML flow map or empty.
func record(b *bytes.Buffer, name, expr, labels string) {
	fmt.Fprintf(b, "      - record: %s\n        expr: |-\n%s\n", name, indent(expr, 10))
	if labels != "" {
		fmt.Fprintf(b, "        labels: %s\n", labels)
	}
}

// indent indents every line of s by n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}

// quote writes s as a YAML double-quoted scalar that is also a PromQL
// string: \" and \\, \n, \r and \t, and every other character that is
// not printable as \uXXXX (\UXXXXXXXX beyond the Basic Multilingual
// Plane, which both read, where JSON's surrogate pairs are no character
// to either). JSON's quoting left U+0085 as it is, which YAML takes for a
// line break: the name ended a block scalar's line and broke the rules.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sentence capitalises the first letter.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
