// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/figure"
	"github.com/deltaq-otel/deltaq/internal/report"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

// defaultBins is the default number of bins of each assumed ΔQ.
const defaultBins = 1000

// reportQuantiles are the quantiles eval prints.
var reportQuantiles = []float64{0.25, 0.5, 0.75, 0.9, 0.99}

// evalCommand is the eval command's entry of the command table.
func evalCommand() command {
	return command{
		name:    "eval",
		usage:   "eval FILE.dq --outcome NAME=DIST... [--dmax D] [--bins N] [--at D1,D2,...] [--probe NAME]... [--qoo REQ] [--json] [--plot DIR]",
		summary: "evaluate an outcome diagram with assumed outcome distributions",
		help: `Eval is design-time ΔQSD: it assumes a delay distribution for every outcome
of the diagram and calculates the ΔQ of its probes with the ΔQ operators
(sequence = convolution, a: = product of CDFs, f: = 1 − product of
complements, p: = mixture). It prints the probe "system" if the diagram
defines it, otherwise every probe (or the probes named with --probe): the
delay at quantiles 0.25, 0.5, 0.75, 0.9, 0.99 ("unreachable" when the
failure mass leaves the quantile out of reach), the failure mass, and the
CDF at each --at delay. --outcome may also name a definition: its s:
references then use that assumed ΔQ in place of a calculated one.

Each assumed ΔQ has --bins bins covering [0, --dmax], a delay of exactly
dMax a success (bins are upper-inclusive). The default dMax is
the smallest 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10^k seconds above the
largest delay the distributions name (20 × the mean for exp), so that every
distribution fits; mass beyond dMax counts as failure. Both --dmax and the
default are bounded as a probe's dMax is: at least 1us, and at most
86400s (24 hours), where a distribution reaching further is cut (and
eval warns of the mass cut off). Calculated ΔQs grow
to cover their operands (a sequence of two outcomes spans 2·dMax). A delay
that is not a bin edge (a multiple of dMax/bins) lies inside a bin, whose
mass is spread over it: point(5ms) under the default dMax of 6ms reads
P(d ≤ 5ms) = 0.33. For exact values at D, choose --dmax and --bins so that
D is a bin edge (point(5ms) with --dmax 10ms reads 1).

` + distribution.Help + `

` + qooHelp + `

--plot DIR writes DIR/PROBE.png for every probe printed: its CDF drawn as
analyze --plot draws ΔQs (delays in milliseconds up to where the mass ends,
dMax marked), and lists the files written (on stderr with --json).

Quote DISTs for the shell: --outcome 'worker_1=exp(5ms)'.`,
		run: parsed(parseEvalArgs, runEval),
	}
}

// outcomeFlag collects --outcome NAME=DIST flags.
type outcomeFlag struct {
	names []string
	texts []string
	dists []distribution.Dist
}

func (f *outcomeFlag) String() string { return strings.Join(f.texts, " ") }

func (f *outcomeFlag) Set(s string) error {
	name, text, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("want NAME=DIST, got %q", s)
	}
	for _, n := range f.names {
		if n == name {
			return fmt.Errorf("%s given twice", name)
		}
	}
	d, err := distribution.Parse(text)
	if err != nil {
		// The flag package shows the value itself ("invalid value
		// \"a=…\" for flag -outcome"): the error adds the name and where
		// in the distribution, not the text again.
		return fmt.Errorf("%s: %v", name, err)
	}
	f.names = append(f.names, name)
	f.texts = append(f.texts, s)
	f.dists = append(f.dists, d)
	return nil
}

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// evalOptions is eval's command line, checked.
type evalOptions struct {
	path     string
	outcomes outcomeFlag
	probes   listFlag
	at       []float64 // delays at which to print the CDF, in seconds
	width    float64   // of the bins of every assumed ΔQ, from --dmax and --bins
	bins     int
	json     bool
	plotDir  string
	warn     io.Writer // where warnings go (stderr)
	// qoo is the --qoo requirement every printed ΔQ is scored against;
	// nil without.
	qoo *deltaq.QoORequirement
}

// evalUsage prints an error about the command line and returns exitUsage.
// The arguments are names and paths: they are escaped as the output is.
func evalUsage(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "deltaq eval: %s\n", printableLines(fmt.Sprintf(format, a...)))
	return exitUsage
}

// parseEvalArgs parses eval's command line. When ok is false the command
// ends with status.
func parseEvalArgs(args []string, stderr io.Writer) (o evalOptions, status int, ok bool) {
	fs := newFlags(evalCommand(), stderr)
	fs.Var(&o.outcomes, "outcome", "assumed distribution `NAME=DIST` of an outcome (repeat for each outcome)")
	dmaxText := fs.String("dmax", "", "`dMax` of every assumed ΔQ (default: chosen to fit the distributions, see above)")
	fs.IntVar(&o.bins, "bins", defaultBins, "number of bins of every assumed ΔQ")
	var atTexts listFlag
	fs.Var(&atTexts, "at", "comma-separated `delays` at which to print the CDF, e.g. 5ms,10ms (repeatable)")
	fs.Var(&o.probes, "probe", "print the probe `NAME` (repeatable; default: system if defined, else every probe)")
	fs.StringVar(&o.plotDir, "plot", "", "write one PNG plot per probe printed into `DIR`")
	fs.BoolVar(&o.json, "json", false, "print JSON: {\"probes\": {NAME: {cdf_at, quantiles, failure, bin_width, dmax, qoo}}}")
	qooText := fs.String("qoo", "", "Quality of Outcome requirement `pP:ROP/CPUP,...,loss:ROP/CPUP` to score each printed ΔQ against (see above)")
	if o.path, status, ok = parseOne(fs, args, "FILE.dq"); !ok {
		return o, status, false
	}
	if *qooText != "" || fs.given("qoo") {
		r, err := parseQoO(*qooText)
		if err != nil {
			return o, evalUsage(stderr, "--qoo %s: %v", *qooText, err), false
		}
		o.qoo = &r
	}
	for _, atText := range atTexts {
		for i, s := range strings.Split(atText, ",") {
			d, err := distribution.ParseDuration(strings.TrimSpace(s))
			switch {
			case strings.TrimSpace(s) == "":
				return o, evalUsage(stderr, "--at %s: delay %d is empty", atText, i+1), false
			case err != nil:
				return o, evalUsage(stderr, "--at %s: %v", s, err), false
			}
			o.at = append(o.at, d)
		}
	}
	// Checked alone, so that the error names the flag given: it named a
	// --dmax of the default that was not given ("--dmax 25ms --bins -5").
	if o.bins < 1 || o.bins > deltaq.MaxBins {
		return o, evalUsage(stderr, "--bins %d: want a number in [1, %d]", o.bins, deltaq.MaxBins), false
	}
	dmax := evalDefaultDMax(o.outcomes.dists)
	if *dmaxText != "" {
		// The bounds of a probe's dMax in a configuration: beyond them an
		// assumed ΔQ describes nothing a probe could measure (below, its
		// bins would be narrower than the nanoseconds of a timestamp).
		minDMax := deltaq.MinDMax.Seconds()
		if strings.HasPrefix(strings.TrimSpace(*dmaxText), "-") {
			return o, evalUsage(stderr, "--dmax %s: want at least %s, the smallest dMax a probe may have", *dmaxText, distribution.FormatDuration(minDMax)), false
		}
		d, err := distribution.ParseDuration(*dmaxText)
		if err != nil {
			return o, evalUsage(stderr, "--dmax %s: %v", *dmaxText, err), false
		}
		if d < minDMax {
			return o, evalUsage(stderr, "--dmax %s: want at least %s, the smallest dMax a probe may have", *dmaxText, distribution.FormatDuration(minDMax)), false
		}
		if maxDMax := deltaq.MaxDMax.Seconds(); d > maxDMax {
			return o, evalUsage(stderr, "--dmax %s: want at most %gs (%g hours), the largest dMax a probe may have", *dmaxText, maxDMax, deltaq.MaxDMax.Hours()), false
		}
		dmax = d
	}
	width, err := deltaq.WidthFor(dmax, o.bins)
	if err != nil {
		return o, evalUsage(stderr, "--dmax %s --bins %d: %v", distribution.FormatDuration(dmax), o.bins, err), false
	}
	o.width = width
	return o, exitOK, true
}

func runEval(o evalOptions, stdout, stderr io.Writer) int {
	o.warn = stderr
	d, ok := loadDiagram("eval", o.path, stderr)
	if !ok {
		return exitFail
	}
	inputs, err := o.assumed(d)
	if err != nil {
		return evalUsage(stderr, "%v", err)
	}
	selected, err := o.selected(d)
	if err != nil {
		return evalUsage(stderr, "%v", err)
	}
	ev, err := d.Evaluate(inputs)
	if err != nil {
		fmt.Fprintf(stderr, "deltaq eval: %s\n", printableLines(err.Error()))
		return exitFail
	}
	o.warnUnused(d, ev, inputs)
	reports, ok := o.reports(d, ev, inputs, selected, stderr)
	if !ok {
		return exitFail
	}
	var written []string
	if o.plotDir != "" {
		if written, err = writeEvalPlots(o.plotDir, reports); err != nil {
			fmt.Fprintf(stderr, "deltaq eval: %s\n", printableLines(err.Error()))
			return exitFail
		}
	}
	status, listed := exitOK, stdout
	if o.json {
		status = writeJSON(stdout, stderr, reports, o.at, o.qoo)
		listed = stderr
	} else {
		writeText(stdout, reports, o.at, o.qoo)
	}
	listFiles(listed, written)
	return status
}

// writeEvalPlots draws the ΔQ of every report (as analyze draws them) and
// returns the files written.
func writeEvalPlots(dir string, reports []probeReport) ([]string, error) {
	var plots []figure.Named
	for _, rep := range reports {
		color := figure.Calculated
		if rep.source == "assumed" {
			color = figure.Observed
		}
		plots = append(plots, figure.Named{Name: rep.res.Name, Plot: &figure.CDF{
			Title:  fmt.Sprintf("ΔQ of %s (%s)", printable(rep.res.Name), rep.source),
			Curves: []figure.Curve{{Label: rep.source, DQ: rep.dq, Color: color}}}})
	}
	return figure.DrawCDFs(dir, ".png", plots)
}

// assumed builds the ΔQ of every --outcome, which must name an outcome or a
// definition of d.
func (o *evalOptions) assumed(d *diagram.Diagram) (map[string]deltaq.DeltaQ, error) {
	inputs := make(map[string]deltaq.DeltaQ, len(o.outcomes.names))
	for i, name := range o.outcomes.names {
		p, ok := d.Probe(name)
		switch {
		case !ok:
			return nil, fmt.Errorf("--outcome %s: %s has no outcome or definition named %s; %s", name, o.path, name, suggest.Known(name, probeNames(d), 5))
		case p.Kind == diagram.OperatorProbe:
			return nil, fmt.Errorf("--outcome %s: %s is an operator (%s:%s); its ΔQ is always calculated from its branches", name, name, o.path, p.Pos)
		}
		dq, err := o.outcomes.dists[i].Build(o.width, o.bins)
		if err != nil {
			return nil, fmt.Errorf("--outcome %s: %v", o.outcomes.texts[i], err)
		}
		inputs[name] = dq
		o.warnCut(name, i, dq)
	}
	return inputs, nil
}

// evalDefaultDMax is the dMax that fits every distribution of ds
// (distribution.DefaultDMax) within the bounds of a probe's dMax: beyond
// deltaq.MaxDMax no probe could measure the delays (the mass beyond it
// counts as failure, and warnCut says how much); below deltaq.MinDMax the
// default bins would be narrower than the nanoseconds of a timestamp.
func evalDefaultDMax(ds []distribution.Dist) float64 {
	return min(max(distribution.DefaultDMax(ds), deltaq.MinDMax.Seconds()), deltaq.MaxDMax.Seconds())
}

// minCutWarned is the mass beyond dMax that eval warns of: below it the
// cut is within the rounding of the figures it prints.
const minCutWarned = 1e-4

// warnUnused warns of each --outcome given to a definition that nothing
// uses: no s: refers to it, and its own calculation succeeded, so that the
// calculated ΔQ is shown instead.
func (o *evalOptions) warnUnused(d *diagram.Diagram, ev *diagram.Evaluation, inputs map[string]deltaq.DeltaQ) {
	referred := map[string]bool{}
	for _, r := range ev.Results {
		for _, u := range r.Refs {
			referred[u.Name] = true
		}
	}
	for _, name := range o.outcomes.names {
		p, _ := d.Probe(name)
		r, ok := ev.Result(name)
		if p.Kind != diagram.DefinitionProbe || referred[name] || !ok || !r.OK {
			continue
		}
		fmt.Fprintf(o.warn, "deltaq eval: warning: --outcome %s: not used: no s:%s refers to the definition (%s:%s), and its ΔQ is calculated from its outcomes\n",
			printable(name), printable(name), printable(o.path), p.Pos)
	}
}

// warnCut warns when --dmax cut off some of an assumed distribution's mass,
// which then counts as failure: it says how much, and the dMax that would
// keep it (the default eval would have chosen for that distribution).
func (o *evalOptions) warnCut(name string, i int, dq deltaq.DeltaQ) {
	if o.warn == nil {
		return
	}
	d := o.outcomes.dists[i]
	fit := distribution.DefaultDMax([]distribution.Dist{d})
	if fit <= dq.DMax() {
		return
	}
	// Beyond the largest dMax a probe may have, no --dmax keeps the mass:
	// the warning names none that eval would refuse.
	keep := fmt.Sprintf("--dmax %s would keep it", distribution.FormatDuration(fit))
	if fit > deltaq.MaxDMax.Seconds() {
		keep = fmt.Sprintf("no dMax a probe may have (at most %gs) keeps it", deltaq.MaxDMax.Seconds())
	}
	w, err := deltaq.WidthFor(fit, o.bins)
	if err != nil {
		return
	}
	whole, err := d.Build(w, o.bins)
	if err != nil {
		return
	}
	if cut := whole.Tangible() - dq.Tangible(); cut >= minCutWarned {
		fmt.Fprintf(o.warn, "deltaq eval: warning: --outcome %s: dMax %s cuts off %.1f %% of its mass, which counts as failure; %s\n",
			printable(name), distribution.FormatDuration(dq.DMax()), 100*cut, keep)
	}
}

// probeNames returns the names of d's probes, in d's order.
func probeNames(d *diagram.Diagram) []string {
	var names []string
	for _, p := range d.Probes() {
		names = append(names, p.Name)
	}
	return names
}

// selected returns the probes to print: those of --probe, else the system
// probe if d defines one, else every probe.
func (o *evalOptions) selected(d *diagram.Diagram) ([]string, error) {
	var selected []string
	switch {
	case len(o.probes) > 0:
		for _, name := range o.probes {
			if _, ok := d.Probe(name); !ok {
				return nil, fmt.Errorf("--probe %s: %s has no probe named %s; %s", name, o.path, name, suggest.Known(name, probeNames(d), 5))
			}
			// A probe named twice is printed once: twice it was printed
			// twice and drawn into PROBE.png and PROBE-2.png, and the JSON
			// held it once.
			if !slices.Contains(selected, name) {
				selected = append(selected, name)
			}
		}
	case d.System() != nil:
		selected = []string{diagram.SystemName}
	default:
		for _, p := range d.Probes() {
			selected = append(selected, p.Name)
		}
	}
	return selected, nil
}

// reports returns what to print of the selected probes. A probe that could
// not be calculated is reported to stderr, with every outcome that lacks a
// --outcome, and ok is false.
func (o *evalOptions) reports(d *diagram.Diagram, ev *diagram.Evaluation, inputs map[string]deltaq.DeltaQ, selected []string, stderr io.Writer) (reports []probeReport, ok bool) {
	var missing []string
	failed := false
	for _, name := range selected {
		r, _ := ev.Result(name)
		rep := probeReport{res: r, dq: r.DeltaQ, source: "calculated"}
		if r.Kind == diagram.OutcomeProbe {
			rep.source = "assumed"
		}
		if !r.OK {
			if in, ok := inputs[name]; ok {
				// A definition given an assumed ΔQ whose own calculation
				// lacks inputs: show what was assumed.
				rep.dq, rep.source = in, "assumed"
			} else {
				if r.Err != nil {
					msg := fmt.Sprintf("%s: %s: %v", o.path, name, r.Err)
					if errors.Is(r.Err, deltaq.ErrTooManyBins) {
						msg += fmt.Sprintf("; a sequence spans the sum of its parts' ranges: fewer --bins (now %d) fit", o.bins)
					}
					fmt.Fprintf(stderr, "deltaq eval: %s\n", printableLines(msg))
					failed = true
				}
				missing = mergeNames(missing, r.Missing)
				continue
			}
		}
		reports = append(reports, rep)
	}
	for _, name := range missing {
		p, _ := d.Probe(name)
		fmt.Fprintf(stderr, "deltaq eval: no --outcome for %s %s (%s:%s)\n", probeKind(p), printable(name), printable(o.path), p.Pos)
	}
	return reports, !failed && len(missing) == 0
}

// probeReport is one probe to print.
type probeReport struct {
	res    *diagram.Result
	dq     deltaq.DeltaQ
	source string // "calculated" or "assumed"
}

// mergeNames returns the sorted union of two sorted name lists.
func mergeNames(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, n := range b {
		found := false
		for _, m := range out {
			found = found || m == n
		}
		if !found {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// failureMass returns the intangible mass rounded to 1e-9, so that rounding
// noise of the operators prints as 0.
func failureMass(dq deltaq.DeltaQ) float64 {
	return math.Round(dq.Intangible()*1e9) / 1e9
}

func writeText(w io.Writer, reports []probeReport, at []float64, qoo *deltaq.QoORequirement) {
	for i, rep := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		dq := rep.dq
		fmt.Fprintf(w, "%s (%s): %s ΔQ, %d bins of %s, dMax %s\n", printable(rep.res.Name), probeKind(rep.res.Probe), rep.source,
			dq.Bins(), distribution.FormatDuration(dq.Width()), distribution.FormatDuration(dq.DMax()))
		if rep.source == "calculated" {
			for _, u := range rep.res.Refs {
				// The ΔQ given for a definition is an --outcome's:
				// assumed, as eval observes nothing.
				src := u.Source.String()
				if u.Source == diagram.Observed {
					src = "assumed"
				}
				fmt.Fprintf(w, "  %-10s %s ΔQ used\n", "s:"+printable(u.Name), src)
			}
		}
		fmt.Fprintf(w, "  %-10s", "quantiles")
		for _, q := range reportQuantiles {
			v, ok := dq.Quantile(q)
			s := "unreachable"
			if ok {
				s = distribution.FormatDuration(v)
			}
			fmt.Fprintf(w, " %s=%s", strconv.FormatFloat(q, 'g', -1, 64), s)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %-10s %s\n", "failure", strconv.FormatFloat(failureMass(dq), 'g', 6, 64))
		if len(at) > 0 {
			fmt.Fprintf(w, "  %-10s", "P(d ≤ t)")
			for _, t := range at {
				fmt.Fprintf(w, " %s: %s", distribution.FormatDuration(t), strconv.FormatFloat(dq.CDF(t), 'f', 6, 64))
			}
			fmt.Fprintln(w)
		}
		if qoo != nil {
			// ScoreDeltaQ fails only for an invalid requirement or ΔQ,
			// which parseQoO and the operators rule out.
			if q, _, err := scoreQoO(*qoo, dq); err == nil {
				fmt.Fprintf(w, "  %-10s %s\n", "QoO", report.DescribeQoO(*qoo, q))
			}
		}
	}
}

// jsonProbe is one probe of the --json output; delays are in seconds.
type jsonProbe struct {
	CDFAt     map[string]float64  `json:"cdf_at"`
	Quantiles map[string]*float64 `json:"quantiles"`
	Failure   float64             `json:"failure"`
	BinWidth  float64             `json:"bin_width"`
	DMax      float64             `json:"dmax"`
	// QoO is the score against --qoo, absent without it.
	QoO *report.QoO `json:"qoo,omitempty"`
}

func writeJSON(stdout, stderr io.Writer, reports []probeReport, at []float64, qoo *deltaq.QoORequirement) int {
	out := struct {
		Probes map[string]jsonProbe `json:"probes"`
	}{Probes: map[string]jsonProbe{}}
	for _, rep := range reports {
		dq := rep.dq
		p := jsonProbe{
			CDFAt:     map[string]float64{},
			Quantiles: map[string]*float64{},
			Failure:   failureMass(dq),
			BinWidth:  dq.Width(),
			DMax:      dq.DMax(),
		}
		for _, t := range at {
			p.CDFAt[strconv.FormatFloat(t, 'g', -1, 64)] = dq.CDF(t)
		}
		for _, q := range reportQuantiles {
			key := strconv.FormatFloat(q, 'g', -1, 64)
			if v, ok := dq.Quantile(q); ok {
				p.Quantiles[key] = &v
			} else {
				p.Quantiles[key] = nil
			}
		}
		if qoo != nil {
			if _, j, err := scoreQoO(*qoo, dq); err == nil {
				p.QoO = j
			}
		}
		out.Probes[rep.res.Name] = p
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "deltaq eval: %v\n", err)
		return exitFail
	}
	stdout.Write(append(b, '\n'))
	return exitOK
}
