// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The slo subcommand: the QTAs of a collector configuration as error
// budgets and multi-window, multi-burn-rate alerts (package internal/offline
// reads the configuration, package internal/slo does the work; this file
// writes the files).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/internal/offline"
	"github.com/deltaq-otel/deltaq/internal/slo"
)

// sloCommand is the slo command's entry of the command table.
func sloCommand() command {
	return command{
		name:    "slo",
		usage:   "slo --config FILE.yaml... [--processor ID] [--exporter ID | --connector ID] [--format F] [-o FILE] [--tests FILE] [--period D] [--tiers T] [--max-error-ratio R] [--interval D] [--runbook-url URL] [--qoo [PROBE=]SCORE:TARGET]... [--service NAME] [--strict]",
		summary: "write error budgets and burn-rate alerts (Prometheus, OpenSLO, Sloth) for the QTAs of a collector configuration",
		help: `Slo reads a collector configuration as analyze does (the deltaq
processor, and the QTAs of the deltaq exporter or connector) and writes
each QTA as service-level objectives: every point "at least p of the
instances within d" (good = instances completed within d, total = every
instance, failures and timeouts included; target p) and max_failure f
(good = successes; target 1 − f).

--format prometheus (the default) writes Prometheus rules: the error ratio
of each objective over every window of the tiers (deltaq:slo_error_ratio:
rate5m, …), the error budget remaining over the period
(deltaq:slo_error_budget_remaining:ratio), and an alert
DeltaQErrorBudgetBurn per tier with labels severity (critical: page;
warning: ticket; the vocabulary of the project's other rules),
deltaq_probe, deltaq_slo, deltaq_slo_window and deltaq_slo_burn_rate, and
a runbook_url. --tests FILE writes promtool unit tests of those rules
(needs -o), for the promtool of Prometheus 2 or 3: a healthy burn never
alerts, a fast burn pages after its tier's for, a slow burn opens a
ticket and never pages.
--format openslo writes OpenSLO (openslo/v1) documents, --format sloth a
Sloth (prometheus/v1) spec, of the same objectives.

Tiers (--tiers, SEVERITY:FACTOR:LONG:SHORT[:FOR], comma-separated) default
to the Site Reliability Workbook's: critical:14.4:1h:5m, critical:6:6h:30m,
warning:3:1d:2h, warning:1:3d:6h over --period 30d, alerting when 2 %, 5 %,
10 % and 10 % of the budget are gone; over another period the windows scale
with it (7d: critical:14.4:14m:1m10s, …), so that each tier alerts at the
same share of the budget. For defaults to a fifth of the short window. A tier alerts when the error ratio over both windows
exceeds factor × budget. No window burns faster than 1/budget, so for a
target such as 0.5 (budget 0.5, at most 2×) a tier whose threshold would
pass --max-error-ratio (0.9) is derived: factor = 0.9 / budget, the budget
then lasting period × budget / 0.9. A derived tier that repeats a shorter
one's factor, or whose factor is not above 1, is refused, and so is an
objective without a budget (p = 1, max_failure 0). So is a tier whose short
window holds fewer than two of the probe's windows (the connector's or the
exporter's interval): rate() needs two samples in its range.

A point's delay must be a bucket bound of deltaq.observed (a bin edge of
the probe, from the processor's or the connector's probe layout) for an
exact SLI; otherwise the point is refused, naming the nearest bin edges. A
point at or beyond dMax counts every success. With
histogram: {exponential: {}} the SLI is histogram_fraction(0, d, …),
approximate: off by at most the share of the successes in the bucket
holding d. A probe with dmax: auto has no fixed bucket bounds: its
points are refused unless the histogram is exponential.

--qoo SCORE:TARGET adds to every probe with a qoo requirement a time-slice
objective on its Quality of Outcome: the observed score (deltaq.qoo.score)
is at least SCORE in at least TARGET of the probe's scored windows, such as
--qoo 80:0.99. Each window with a score is an event, one below SCORE a bad
one (a window whose score was withheld for too few instances does not
count): budget 1 − TARGET, the same tiers, counted window by window at the
connector's interval. --qoo PROBE=SCORE:TARGET sets one probe's (repeatable;
it overrides a bare --qoo). Its alert is DeltaQQoOBudgetBurn, with the same
labels and the runbook's section "Quality of Outcome budget burn".

An agent's configuration with windows_only is refused: its metrics are
its windows alone, none of the series the rules read; give the
gateway's.

Refusals are printed on stderr and listed in the rules file's header;
--strict makes them an error (exit 1). Output goes to stdout, or to -o FILE.`,
		run: parsed(parseSLOArgs, runSLO),
	}
}

type sloOptions struct {
	cfg                                collectorConfig
	format, out, tests, service, tiers string
	strict                             bool
	opts                               slo.Options
	// qoo are the --qoo objectives by probe; "" for every probe with a
	// qoo requirement.
	qoo map[string]slo.QoOObjective
}

// ratioFlag is a float flag for a ratio: a percentage (5%) is refused with
// the fraction to write, as the configuration's ratios are.
type ratioFlag float64

func (r *ratioFlag) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }

func (r *ratioFlag) Set(s string) error {
	if n, isPercent := strings.CutSuffix(strings.TrimSpace(s), "%"); isPercent {
		// The fraction from the digits shifted, the nearest float to it.
		if fraction, err := strconv.ParseFloat(strings.TrimSpace(n)+"e-2", 64); err == nil {
			return fmt.Errorf("%s is a percentage; write the fraction %s", s, strconv.FormatFloat(fraction, 'g', -1, 64))
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("parse error")
	}
	*r = ratioFlag(v)
	return nil
}

func parseSLOArgs(args []string, stderr io.Writer) (o sloOptions, status int, ok bool) {
	fs := newFlags(sloCommand(), stderr)
	o.cfg.flags(fs)
	fs.StringVar(&o.format, "format", "prometheus", "`format` of the output: prometheus, openslo or sloth")
	fs.StringVar(&o.out, "o", "", "write the output to `FILE` instead of stdout (- is stdout)")
	fs.StringVar(&o.tests, "tests", "", "also write promtool unit tests of the rules to `FILE` (format prometheus, with -o)")
	fs.StringVar(&o.service, "service", "deltaq", "service `NAME` of the OpenSLO and Sloth documents")
	period := fs.String("period", "30d", "SLO `period` (Prometheus duration: 30d, 28d, 1h)")
	fs.StringVar(&o.tiers, "tiers", "", "alert `tiers` SEVERITY:FACTOR:LONG:SHORT[:FOR],… (default the Workbook's)")
	o.opts.MaxErrorRatio = slo.DefaultMaxErrorRatio
	fs.Var((*ratioFlag)(&o.opts.MaxErrorRatio), "max-error-ratio", "largest error `ratio` a derived tier waits for, in (0, 1), a fraction")
	interval := fs.String("interval", "30s", "evaluation `interval` of the rule groups (--format prometheus)")
	fs.StringVar(&o.opts.RunbookURL, "runbook-url", slo.DefaultRunbookURL, "runbook_url of the alerts (--format prometheus or sloth)")
	fs.BoolVar(&o.strict, "strict", false, "fail when an objective or tier is refused")
	var qoo listFlag
	fs.Var(&qoo, "qoo", "objective `[PROBE=]SCORE:TARGET` on the Quality of Outcome score, such as 80:0.99 (repeatable)")
	rest, status, ok := parseArgs(fs, args)
	if !ok {
		return o, status, false
	}
	var err error
	switch {
	case len(rest) > 0:
		return o, fs.usageError("unexpected arguments: %s", strings.Join(rest, " ")), false
	case len(o.cfg.Paths) == 0:
		return o, fs.usageError("--config is required"), false
	case o.format != "prometheus" && o.format != "openslo" && o.format != "sloth":
		return o, fs.usageError("--format %q: want prometheus, openslo or sloth", o.format), false
	case o.tests != "" && (o.format != "prometheus" || o.out == "" || o.out == "-"):
		return o, fs.usageError("--tests needs --format prometheus and -o (the tests name the rules file)"), false
	case o.tests != "" && absPath(o.tests) == absPath(o.out):
		return o, fs.usageError("--tests %s: the rules file itself (-o); the tests need a file of their own", o.tests), false
	}
	if err = o.cfg.checkFlags(fs); err != nil {
		return o, fs.usageError("%s", err), false
	}
	if o.opts.Period, err = slo.ParseDuration(*period); err != nil {
		return o, fs.usageError("--period: %s", err), false
	}
	if o.opts.Interval, err = slo.ParseDuration(*interval); err != nil {
		return o, fs.usageError("--interval: %s", err), false
	}
	if o.tiers != "" {
		if o.opts.Tiers, err = slo.ParseTiers(o.tiers); err != nil {
			return o, fs.usageError("--tiers: %s", err), false
		}
	}
	if o.qoo, err = parseQoOFlags(qoo); err != nil {
		return o, fs.usageError("%s", err), false
	}
	if err := o.flagsGivenInVain(fs); err != nil {
		return o, fs.usageError("%s", err), false
	}
	// The options are the flags' alone: their problems are the flags',
	// found before the configuration is read.
	if err := o.opts.Check(); err != nil {
		if o.tiers == "" && strings.Contains(err.Error(), "tier ") {
			err = fmt.Errorf("%w\n(the default tiers, scaled to --period %s: give --tiers for this period)", err, *period)
		}
		return o, fs.usageError("%s", err), false
	}
	// A runbook of one's own is every alert's.
	o.opts.QoORunbookURL = o.opts.RunbookURL
	if o.opts.RunbookURL == slo.DefaultRunbookURL {
		o.opts.QoORunbookURL = slo.DefaultQoORunbookURL
	}
	return o, exitOK, true
}

// flagsGivenInVain returns the error of a flag given empty or zero (taken
// for its default), or of one the format writes nothing of (taken and
// unsaid).
func (o *sloOptions) flagsGivenInVain(fs *flagSet) error {
	for _, f := range []struct {
		name  string
		empty bool
	}{{"max-error-ratio", o.opts.MaxErrorRatio == 0}, {"service", o.service == ""}, {"runbook-url", o.opts.RunbookURL == ""}} {
		if f.empty && fs.given(f.name) {
			return fmt.Errorf("--%s: given empty or zero; leave it out for the default", f.name)
		}
	}
	for _, f := range []struct{ name, formats, what string }{
		{"interval", "prometheus", "the rule groups' evaluation interval"},
		{"runbook-url", "prometheus sloth", "the alerts' runbook_url"},
		{"service", "openslo sloth", "the documents' service"},
	} {
		if fs.given(f.name) && !slices.Contains(strings.Fields(f.formats), o.format) {
			return fmt.Errorf("--%s: --format %s writes nothing of it (%s: --format %s)", f.name, o.format, f.what,
				strings.Join(strings.Fields(f.formats), " or "))
		}
	}
	return nil
}

// parseQoOFlags reads the --qoo options by probe ("" for a bare one).
func parseQoOFlags(flags []string) (map[string]slo.QoOObjective, error) {
	out := map[string]slo.QoOObjective{}
	for _, f := range flags {
		probe, spec, named := strings.Cut(f, "=")
		if !named {
			probe, spec = "", f
		} else if probe == "" {
			return nil, fmt.Errorf("--qoo %q: no probe before =", f)
		}
		if _, dup := out[probe]; dup {
			what := "a bare --qoo"
			if probe != "" {
				what = fmt.Sprintf("probe %q", probe)
			}
			return nil, fmt.Errorf("--qoo %q: %s is given twice", f, what)
		}
		q, err := slo.ParseQoOObjective(spec)
		if err != nil {
			return nil, fmt.Errorf("--qoo: %w", err)
		}
		out[probe] = q
	}
	return out, nil
}

func runSLO(o sloOptions, stdout, stderr io.Writer) int {
	fail := failure("slo", stderr)
	loaded, err := o.cfg.Load()
	if err != nil {
		return fail(err)
	}
	probes, err := offline.SLOProbes(loaded)
	if err != nil {
		return fail(err)
	}
	if probes, err = offline.SLOQoO(loaded, probes, o.qoo); err != nil {
		return fail(err)
	}
	plan, err := slo.New(probes, o.opts)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", loaded.Where, err))
	}
	for _, r := range plan.Refusals {
		fmt.Fprintf(stderr, "deltaq slo: not alerted on: %s\n", printableLines(r.String())) // the name is quoted already
	}
	if o.strict && len(plan.Refusals) > 0 {
		return fail(fmt.Errorf("%d refusals (--strict)", len(plan.Refusals)))
	}
	source := strings.Join(o.cfg.Paths, " + ")
	var out []byte
	switch o.format {
	case "prometheus":
		out = plan.Rules(source)
	case "openslo":
		out = plan.OpenSLO(source, o.service)
	case "sloth":
		out = plan.Sloth(source, o.service)
	}
	if o.out == "" || o.out == "-" {
		_, err = stdout.Write(out)
		return statusOf(err, fail)
	}
	// The tests name the rules file by its path from their directory, as
	// promtool reads rule_files: from both made absolute, so that one may
	// be given relative and the other not.
	var rel string
	if o.tests != "" {
		if rel, err = filepath.Rel(filepath.Dir(absPath(o.tests)), absPath(o.out)); err != nil {
			return fail(fmt.Errorf("--tests %s: no path leads from it to the rules file %s: %w", o.tests, o.out, err))
		}
	}
	if err := os.WriteFile(o.out, out, 0o644); err != nil {
		return fail(err)
	}
	if o.tests != "" {
		if err := os.WriteFile(o.tests, plan.RuleTests(filepath.ToSlash(rel)), 0o644); err != nil {
			return fail(err)
		}
	}
	return exitOK
}

// absPath is path made absolute, or as it is when the working directory
// cannot be read.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

func statusOf(err error, fail func(error) int) int {
	if err != nil {
		return fail(err)
	}
	return exitOK
}
