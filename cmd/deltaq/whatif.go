// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/figure"
	"github.com/deltaq-otel/deltaq/internal/report"
	"github.com/deltaq-otel/deltaq/model"
	"github.com/deltaq-otel/deltaq/whatif"
)

// whatifCommand is the whatif command's entry of the command table.
func whatifCommand() command {
	return command{
		name:    "whatif",
		usage:   "whatif MODELDIR --set TARGET=EXPR... [--root PROBE] [--qta D:P,...] [--max-failure F] [--qoo REQ] [--plot DIR] [--json]",
		summary: "predict what changes to the parts of a learned model do to the whole",
		help: `Whatif reads a model written by deltaq model (MODELDIR/model.dq and
model.json), applies the interventions given with --set to the exclusive
times of its nodes, and prints for each root operation (or --root) the
end-to-end ΔQ the outcome diagram predicts before and after: quantiles, mean,
failure mass and, with --qta, whether each meets the QTA; for a retry or a
hedge, the load it adds: the expected attempts beyond the first per call of
the node and per request of its root. --plot DIR draws both CDFs, with the
QTA, to DIR/PROBE-whatif.png.

` + whatif.Help + `

Several --set apply in order; two on one node compose. One on a call (remove
or a resilience pattern) stands for its whole span: a --set after it on a
node it calls, or on its exclusive time, would change nothing and is an
error; give those first. The QTA is a list of points DELAY:P, "P of the
instances complete within DELAY", e.g. --qta 10ms:0.5,50ms:0.95, with at
most --max-failure of them failing (default: 1 − the largest P).

` + qooHelp + ` Whatif prints the score before and after: "what does
a twice slower payment do to the checkout's Quality of Outcome?" is
--set 'pay.charge=2*X' --qoo '…'.`,
		run: parsed(parseWhatifArgs, runWhatif),
	}
}

// interventionFlag collects --set TARGET=EXPR flags.
type interventionFlag []whatif.Intervention

func (f *interventionFlag) String() string {
	var s []string
	for _, iv := range *f {
		s = append(s, iv.Target+"="+iv.Text)
	}
	return strings.Join(s, " ")
}

func (f *interventionFlag) Set(s string) error {
	iv, err := whatif.Parse(s)
	if err != nil {
		return err
	}
	*f = append(*f, iv)
	return nil
}

// parseQTA parses "D:P,D:P,…" with the failure bound maxFailure (< 0: 1 −
// the largest P).
func parseQTA(s string, maxFailure float64) (deltaq.QTA, error) {
	var pts []deltaq.Step
	top := 0.0
	for _, item := range strings.Split(s, ",") {
		d, p, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok {
			return deltaq.QTA{}, fmt.Errorf("point %q: want DELAY:P, e.g. 10ms:0.5", item)
		}
		delay, err := distribution.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return deltaq.QTA{}, fmt.Errorf("point %q: %v", item, err)
		}
		prob, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return deltaq.QTA{}, fmt.Errorf("point %q: probability %q is not a number", item, p)
		}
		pts = append(pts, deltaq.Step{Delay: delay, P: prob})
		top = max(top, prob)
	}
	if maxFailure < 0 {
		maxFailure = max(0, 1-top)
	}
	return deltaq.NewQTA(pts, maxFailure)
}

// whatifRoot is one root operation of whatif's output.
type whatifRoot struct {
	Operation string        `json:"operation"`
	Before    model.Summary `json:"before"`
	After     model.Summary `json:"after"`
	// QTA verdicts, present with --qta.
	QTABefore *bool `json:"qta_before,omitempty"`
	QTAAfter  *bool `json:"qta_after,omitempty"`
	// Quality of Outcome before and after, present with --qoo.
	QoOBefore *report.QoO `json:"qoo_before,omitempty"`
	QoOAfter  *report.QoO `json:"qoo_after,omitempty"`
	// Loads of the resilience patterns on the root's nodes.
	Loads []model.Load `json:"loads,omitempty"`
}

// whatifOptions is whatif's command line.
type whatifOptions struct {
	dir     string
	ivs     interventionFlag
	roots   listFlag
	qta     *deltaq.QTA
	qoo     *deltaq.QoORequirement
	plotDir string
	json    bool
}

func parseWhatifArgs(args []string, stderr io.Writer) (o whatifOptions, status int, ok bool) {
	fs := newFlags(whatifCommand(), stderr)
	fs.Var(&o.ivs, "set", "intervention `TARGET=EXPR` (repeatable, see above)")
	fs.Var(&o.roots, "root", "print the root operation of probe `PROBE` (repeatable; default: all)")
	qtaText := fs.String("qta", "", "QTA `D:P,...` to check before and after")
	maxFailureText := fs.String("max-failure", "", "the QTA's largest failure `ratio` (default: 1 − the largest P)")
	qooText := fs.String("qoo", "", "Quality of Outcome requirement `pP:ROP/CPUP,...,loss:ROP/CPUP` to score before and after (see above)")
	fs.StringVar(&o.plotDir, "plot", "", "write a plot per root operation to `DIR`")
	fs.BoolVar(&o.json, "json", false, "print JSON: {\"interventions\": [...], \"roots\": {PROBE: {operation, before, after, qta_before, qta_after, qoo_before, qoo_after, loads}}}")
	if o.dir, status, ok = parseOne(fs, args, "MODELDIR"); !ok {
		return o, status, false
	}
	maxFailure := -1.0
	if *maxFailureText != "" || fs.given("max-failure") {
		f, err := strconv.ParseFloat(*maxFailureText, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return o, fs.usageError("--max-failure %s: want a ratio in [0, 1]", printable(*maxFailureText)), false
		}
		// It bounds the failures of the --qta: alone it was taken and
		// nothing was checked against it.
		if *qtaText == "" && !fs.given("qta") {
			return o, fs.usageError("--max-failure %s: it bounds the failures of a --qta, and none is given", printable(*maxFailureText)), false
		}
		maxFailure = f
	}
	// Given empty, --qta was taken for not given.
	if *qtaText != "" || fs.given("qta") {
		q, err := parseQTA(*qtaText, maxFailure)
		if err != nil {
			return o, fs.usageError("--qta %s: %v", printable(*qtaText), err), false
		}
		o.qta = &q
	}
	if *qooText != "" || fs.given("qoo") {
		r, err := parseQoO(*qooText)
		if err != nil {
			return o, fs.usageError("--qoo %s: %v", printable(*qooText), err), false
		}
		o.qoo = &r
	}
	return o, exitOK, true
}

func runWhatif(o whatifOptions, stdout, stderr io.Writer) int {
	fail := failure("whatif", stderr)
	data, err := os.ReadFile(filepath.Join(o.dir, modelJSONFile))
	if err != nil {
		return fail(err)
	}
	m, err := model.Decode(data)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", filepath.Join(o.dir, modelJSONFile), err))
	}
	d, ok := loadDiagram("whatif", filepath.Join(o.dir, modelDiagramFile), stderr)
	if !ok {
		return exitFail
	}
	preds, err := m.Predict(d, o.ivs)
	if err != nil {
		return fail(err)
	}
	selected, err := selectRoots(preds, o.roots, m.Roots)
	if err != nil {
		return fail(err)
	}
	out, err := whatifRoots(selected, o.qta, o.qoo)
	if err != nil {
		return fail(err)
	}
	var plots []string
	if o.plotDir != "" {
		if plots, err = plotWhatif(o.plotDir, selected, o.qta); err != nil {
			return fail(err)
		}
	}
	if o.json {
		var texts []string
		for _, iv := range o.ivs {
			texts = append(texts, iv.Target+"="+iv.Text)
		}
		b, err := json.MarshalIndent(struct {
			Interventions []string              `json:"interventions"`
			Roots         map[string]whatifRoot `json:"roots"`
		}{texts, out}, "", "  ")
		if err != nil {
			return fail(err)
		}
		stdout.Write(append(b, '\n'))
		// On stderr, as analyze and eval list theirs: stdout is the
		// JSON. They went unlisted.
		listFiles(stderr, plots)
		return exitOK
	}
	writeWhatif(stdout, m, o, selected, out)
	listFiles(stdout, plots)
	return exitOK
}

// selectRoots returns the predictions of the root probes asked for, each
// once however often it is asked for, all without any.
func selectRoots(preds []model.Prediction, roots, all []string) ([]model.Prediction, error) {
	if len(roots) == 0 {
		return preds, nil
	}
	var selected []model.Prediction
	for i, r := range roots {
		if slices.Contains(roots[:i], r) {
			continue
		}
		found := false
		for _, p := range preds {
			if p.Root == r {
				selected, found = append(selected, p), true
			}
		}
		if !found {
			return nil, fmt.Errorf("--root %s: the model's roots are %s", r, strings.Join(all, ", "))
		}
	}
	return selected, nil
}

// whatifRoots summarises the predictions, with the QTA's verdicts and the
// Quality of Outcome scores.
func whatifRoots(preds []model.Prediction, qta *deltaq.QTA, qoo *deltaq.QoORequirement) (map[string]whatifRoot, error) {
	out := map[string]whatifRoot{}
	for _, p := range preds {
		r := whatifRoot{Operation: p.Operation, Before: model.Summarize(p.Before), After: model.Summarize(p.After), Loads: p.Loads}
		if qta != nil {
			for _, v := range []struct {
				dq  deltaq.DeltaQ
				res **bool
			}{{p.Before, &r.QTABefore}, {p.After, &r.QTAAfter}} {
				chk, err := qta.Check(v.dq)
				if err != nil {
					return nil, err
				}
				*v.res = &chk.OK
			}
		}
		if qoo != nil {
			var err error
			if _, r.QoOBefore, err = scoreQoO(*qoo, p.Before); err != nil {
				return nil, err
			}
			if _, r.QoOAfter, err = scoreQoO(*qoo, p.After); err != nil {
				return nil, err
			}
		}
		out[p.Root] = r
	}
	return out, nil
}

// writeWhatif prints the interventions and the predictions as text.
func writeWhatif(w io.Writer, m *model.Model, o whatifOptions, preds []model.Prediction, out map[string]whatifRoot) {
	for _, iv := range o.ivs {
		nodes, _ := m.Targets(iv)
		var probes []string
		for _, n := range nodes {
			probes = append(probes, n.Probe)
		}
		fmt.Fprintf(w, "set %s=%s on %s\n", printable(iv.Target), printable(iv.Text), printable(strings.Join(probes, ", ")))
	}
	for _, p := range preds {
		r := out[p.Root]
		fmt.Fprintf(w, "\n%s (%s): predicted end-to-end ΔQ\n", printable(r.Operation), printable(p.Root))
		writeSummaries(w, model.ReportQuantiles, []string{"before", "after"}, []model.Summary{r.Before, r.After})
		if o.qta != nil {
			verdict := func(ok *bool) string {
				if *ok {
					return "pass"
				}
				return "fail"
			}
			fmt.Fprintf(w, "  %-10s %12s %12s\n", "QTA", verdict(r.QTABefore), verdict(r.QTAAfter))
		}
		if o.qoo != nil {
			fmt.Fprintf(w, "  %-10s %12s %12s\n", "QoO", report.FormatScore(r.QoOBefore.Score), report.FormatScore(r.QoOAfter.Score))
		}
		for _, ld := range r.Loads {
			fmt.Fprintf(w, "  load of %s on %s: %s extra attempts per call, %s per request\n", printable(ld.Intervention), printable(ld.Probe),
				strconv.FormatFloat(ld.PerCall, 'f', 4, 64), strconv.FormatFloat(ld.PerRequest, 'f', 4, 64))
		}
	}
}

// plotWhatif draws the before and after CDFs of each prediction, with the
// QTA, and returns the files written.
func plotWhatif(dir string, preds []model.Prediction, qta *deltaq.QTA) ([]string, error) {
	var plots []figure.Named
	for _, p := range preds {
		plots = append(plots, figure.Named{Name: p.Root, Plot: &figure.CDF{
			Title: "what-if: " + p.Operation,
			Curves: []figure.Curve{
				{Label: "before", DQ: p.Before, Color: figure.Observed},
				{Label: "after", DQ: p.After, Color: figure.Calculated, Dashed: true},
			},
			QTA: qta,
		}})
	}
	return figure.DrawCDFs(dir, "-whatif.png", plots)
}
