// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/figure"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
	"github.com/deltaq-otel/deltaq/model"
)

// The files of a model directory.
const (
	modelDiagramFile = "model.dq"
	modelJSONFile    = "model.json"
	modelReportFile  = "report.json"
)

// topInferred is how many inferred chains model prints.
const topInferred = 10

// modelCommand is the model command's entry of the command table.
func modelCommand() command {
	return command{
		name:    "model",
		usage:   "model -o DIR [--bins N] [--grace D] [--max-open N] [--max-depth N] [--max-record MiB] [--infer] [--strict] [--json] [--plot DIR] TRACES...",
		summary: "learn a ΔQ model (outcome diagram and per-node ΔQs) from recorded traces",
		help: `Model learns a ΔQ model of a traced system from trace files written by the
collector's file exporter (any form analyze reads; - is standard input; a file
named twice, by one path or by two, is refused), read one record at a time.
Spans are assembled into traces by trace id; a trace is complete when a grace
period of trace time (--grace; the latest span end read) has passed since its
last span, and at most --max-open traces are assembled at once (the oldest is
closed early beyond it, and counted).

For every span it takes the exclusive time (the time with none of the span's
calls in flight) and the execution pattern (its calls in sequential steps,
calls that overlap by at least half the shorter of them in parallel in one
step), and groups spans by calling
context: an operation (service.operation) reached by one path of calls from a
root operation is a node. From them it writes to DIR:

  model.dq     the outcome diagram: a definition per node with calls,
               "node = node_self -> step -> …", a step of parallel calls an
               all-to-finish a:, alternative patterns (and optional calls) a
               probabilistic choice p: weighted by their frequencies among
               the instances that did not fail with the root; names
               are service.operation with other characters as _
  model.json   every node: its probe and outcome names, call probability,
               patterns and the ΔQs of its exclusive time (failures that
               originate in the span and reach the root as intangible
               mass; one a caller recovered from takes its time) and of
               its duration
  report.json  the validation: for each root operation, the end-to-end ΔQ the
               diagram predicts from the exclusive times against the one
               observed (Kolmogorov–Smirnov distance, quantiles); the counts
               of incoherent traces by kind; the inferred missing parents

Incoherent traces (spans whose parent never arrived, no root, cycles, spans
that end before they start or whose times are 0 or past 2^63 ns, counted
with them as negative durations) are counted and left out. For each orphan span
model infers the most likely chain of missing parents from the transitions
of the coherent traces (the shortest path with weights −log frequency) and
reports it with its probability given the orphan (p: 1 when it is the only
way to the orphan's operation) and that of its path; with --infer the
repaired traces are learned too, except those without a root (their chain
starts at a root operation whose span, and so whose duration, is unknown:
they are reported, not learned). The prediction assumes the parts are
independent (ΔQSD); a large KS distance says they are not.

A record of a file (a request, a document) is read whole before the trace
clock moves, so the order in which it lists resources and spans does not
matter; memory is the largest record, decoded, plus the open traces. When
the model may be wrong (many incoherent traces, traces closed early, spans
outside their parents, a KS distance above 0.1 that the model's resolution
does not explain), the report says so first, with the likely cause, and
--strict makes model exit with status 1.

--plot DIR draws the validation of every root operation into
DIR/ROOT-model.png: the observed end-to-end ΔQ (blue) and the one the model
predicts (green, dashed), as analyze, eval and whatif draw ΔQs, and lists
the files written (on stderr with --json).

deltaq whatif DIR predicts the effect of changes to the nodes.`,
		run: runModel,
	}
}

// modelOptions is model's command line.
type modelOptions struct {
	files  []string
	out    string
	plot   string
	bins   int
	cfg    model.Config
	trace  tracefile.Options
	json   bool
	strict bool
}

func runModel(args []string, stdout, stderr io.Writer) int {
	fs := newFlags(modelCommand(), stderr)
	var o modelOptions
	fs.StringVar(&o.out, "o", "", "write the model to directory `DIR` (created if needed)")
	fs.StringVar(&o.plot, "plot", "", "draw the predicted and observed ΔQ of every root operation into `DIR`")
	fs.IntVar(&o.bins, "bins", model.DefaultBins, fmt.Sprintf("bins over each root operation's 99.9th percentile duration, at most %d", model.MaxBinsLimit))
	fs.DurationVar(&o.cfg.Grace, "grace", model.DefaultGrace, "trace time after a trace's last span before it is complete")
	fs.IntVar(&o.cfg.MaxOpenTraces, "max-open", model.DefaultMaxOpenTraces, "traces assembled at once")
	fs.IntVar(&o.cfg.MaxDepth, "max-depth", model.DefaultMaxDepth, fmt.Sprintf("calls within calls a trace may have, at most %d; deeper traces are left out", model.MaxDepthLimit))
	fs.BoolVar(&o.cfg.Infer, "infer", false, "learn incoherent traces too, with their missing parents inferred")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON (report.json) instead of text")
	fs.BoolVar(&o.strict, "strict", false, "exit with status 1 when the model is unsure (the doubts of the report)")
	maxRecord := maxRecordFlag(fs)
	files, status, ok := parseFiles(fs, args)
	if !ok {
		return status
	}
	o.files = files
	if o.out == "" {
		return fs.usageError("-o DIR is required")
	}
	// Checked before the traces are read, which may take long: Build
	// refused it only after.
	if o.bins < 1 || o.bins > model.MaxBinsLimit {
		return fs.usageError("--bins %d: want a number in [1, %d]", o.bins, model.MaxBinsLimit)
	}
	if o.cfg.Grace <= 0 {
		return fs.usageError("--grace %v: want a duration above 0", o.cfg.Grace)
	}
	if o.cfg.MaxOpenTraces < 1 {
		return fs.usageError("--max-open %d: want at least 1", o.cfg.MaxOpenTraces)
	}
	if o.trace, ok = maxRecord(); !ok {
		return exitUsage
	}
	if o.cfg.MaxDepth < 1 || o.cfg.MaxDepth > model.MaxDepthLimit {
		return fs.usageError("--max-depth %d: want a number in [1, %d]", o.cfg.MaxDepth, model.MaxDepthLimit)
	}
	fail := failure("model", stderr)
	l, err := model.NewLearner(o.cfg)
	if err != nil {
		return fail(err)
	}
	if err := learnFiles(l, o.files, o.trace, stderr); err != nil {
		return fail(err)
	}
	l.Finish()
	warnCuts(stderr, l, o.cfg)
	rep, err := buildModel(l, o)
	if err != nil {
		return fail(err)
	}
	plots, err := plotModel(o.plot, rep.Validation)
	if err != nil {
		return fail(err)
	}
	if o.json {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fail(err)
		}
		stdout.Write(append(b, '\n'))
		// On stderr, as analyze and eval list theirs: stdout is the
		// JSON. They went unlisted.
		listFiles(stderr, plots)
	} else {
		writeModelReport(stdout, rep)
		fmt.Fprintf(stdout, "wrote %s, %s, %s\n", printable(filepath.Join(o.out, modelDiagramFile)),
			printable(filepath.Join(o.out, modelJSONFile)), printable(filepath.Join(o.out, modelReportFile)))
		listFiles(stdout, plots)
	}
	if o.strict && len(rep.Doubts) > 0 {
		fmt.Fprintf(stderr, "deltaq model: --strict: the model is unsure (%d doubts)\n", len(rep.Doubts))
		return exitFail
	}
	return exitOK
}

// warnCuts names the first trace each bound of the learner cut.
func warnCuts(w io.Writer, l *model.Learner, cfg model.Config) {
	st := l.Stats()
	for _, c := range l.Cuts() {
		var what string
		switch c.Bound {
		case "MaxDepth":
			what = fmt.Sprintf("%d traces deeper than --max-depth %d left out", st.TooDeep, cfg.MaxDepth)
		case "MaxNodes":
			what = fmt.Sprintf("%d traces left out beyond the model's node limit", st.NodeCap)
		default:
			what = fmt.Sprintf("%d spans dropped beyond the spans a trace may have", st.SpansDropped)
		}
		fmt.Fprintf(w, "deltaq model: warning: %s; the first: trace %s, %s\n", what, c.Trace, c.Detail)
	}
}

// learnFiles reads the trace files one record at a time into the learner;
// a last record cut short (a collector stopped while writing) is a
// warning, printed after the reading: the records before it were learned.
func learnFiles(l *model.Learner, files []string, opts tracefile.Options, stderr io.Writer) error {
	var record []model.Span
	warnings, err := tracefile.ReadFiles(files, opts, func(td ptrace.Traces) error {
		record = learnRecord(l, td, record[:0])
		return nil
	})
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "deltaq model: warning: %s\n", printableLines(w))
	}
	return nil
}

// modelReport is report.json.
type modelReport struct {
	Nodes int `json:"nodes"`
	// BinWidth is the first root operation's; each validation has its
	// root's.
	BinWidth   float64               `json:"bin_width"`
	Bins       string                `json:"-"`
	Stats      model.Stats           `json:"stats"`
	Validation []model.Validation    `json:"validation"`
	Quantiles  []float64             `json:"quantiles"`
	Inference  model.InferenceReport `json:"inference"`
	// Doubts say why the model may be wrong, most fundamental first.
	Doubts []model.Doubt `json:"doubts"`
	// Cuts name the first trace each bound cut.
	Cuts        []model.Cut `json:"cuts"`
	DiagramFile string      `json:"diagram_file"`
}

// buildModel builds, checks and writes the model and its report.
func buildModel(l *model.Learner, o modelOptions) (*modelReport, error) {
	m, err := model.Build(l, o.bins)
	if err != nil {
		return nil, err
	}
	d, err := m.ParseDiagram()
	if err != nil {
		return nil, fmt.Errorf("the diagram written does not parse (a bug): %w", err)
	}
	v, err := m.Validate(d)
	if err != nil {
		return nil, err
	}
	rep := &modelReport{Nodes: len(m.Nodes), BinWidth: m.BinWidth, Bins: m.Bins(), Stats: l.Stats(), Validation: v,
		Quantiles: model.ReportQuantiles, Inference: l.Inference(), DiagramFile: modelDiagramFile,
		Doubts: model.Doubts(l.Stats(), m.Outliers, v, o.cfg.Grace), Cuts: l.Cuts()}
	js, err := m.Encode()
	if err != nil {
		return nil, err
	}
	rj, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{modelDiagramFile, m.Diagram()}, {modelJSONFile, js}, {modelReportFile, append(rj, '\n')}} {
		if err := os.WriteFile(filepath.Join(o.out, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// learnRecord passes the spans of one record (a request or document) to
// the learner as a whole (model.Learner.AddRecord), through buf, and
// returns buf. Names are cut to contract.MaxNameLength bytes, as everywhere
// in the project.
func learnRecord(l *model.Learner, td ptrace.Traces, buf []model.Span) []model.Span {
	for _, rs := range td.ResourceSpans().All() {
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = cutName(v.AsString())
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				start, end := spanTimes(uint64(sp.StartTimestamp()), uint64(sp.EndTimestamp()))
				buf = append(buf, model.Span{
					TraceID:  [16]byte(sp.TraceID()),
					SpanID:   [8]byte(sp.SpanID()),
					ParentID: [8]byte(sp.ParentSpanID()),
					Service:  service,
					Name:     cutName(sp.Name()),
					Start:    start,
					End:      end,
					Failed:   sp.Status().Code() == ptrace.StatusCodeError,
				})
			}
		}
	}
	l.AddRecord(buf)
	return buf
}

// spanTimes returns a span's start and end as the learner takes them. A
// time of 0 (not set) or past 2⁶³ ns (the year 2262) is wrong, as the
// deltaq processor holds it (an invalid timestamp): a start of 0 would
// make the span last from 1970 to now, counted as an implausibly long
// duration, and int64 would wrap a time past 2⁶³ negative, making the span
// start before its parent. Such a span is given an end before its start,
// the learner's mark of wrong timestamps: its trace is counted (a negative
// duration) and left out. The time that is valid is kept, so that the
// trace clock (the latest end) and the span's place among its family are
// the ones the file gives.
func spanTimes(start, end uint64) (int64, int64) {
	valid := func(t uint64) bool { return t != 0 && t <= math.MaxInt64 }
	switch {
	case valid(start) && valid(end):
		return int64(start), int64(end)
	case valid(start):
		return int64(start), int64(start) - 1
	case valid(end):
		return int64(end), int64(end) - 1
	}
	return 0, -1
}

// cutName cuts a name to at most contract.MaxNameLength bytes at a UTF-8
// rune boundary, as the deltaq processor does: cut at the bound, a name
// ending in a multi-byte character kept its first bytes, invalid UTF-8
// that the report printed as \xc3 and model.json as U+FFFD, another name
// than the processor's. In invalid UTF-8 (no rune start among the
// utf8.UTFMax bytes that end at the bound) the cut is at the bound.
func cutName(s string) string {
	const bound = contract.MaxNameLength
	if len(s) <= bound {
		return s
	}
	cut := bound
	for i := bound; i > bound-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) { // s[i] starts the first rune left out
			cut = i
			break
		}
	}
	return strings.Clone(s[:cut])
}

// writeModelReport prints the report as text.
func writeModelReport(w io.Writer, r *modelReport) {
	if len(r.Doubts) > 0 {
		fmt.Fprintf(w, "THIS MODEL IS UNSURE:\n")
		for _, d := range r.Doubts {
			fmt.Fprintf(w, "  - %s;\n    likely cause: %s.\n", printable(d.What), printable(d.Cause))
		}
		fmt.Fprintln(w)
	}
	st := r.Stats
	fmt.Fprintf(w, "learned %d of %d traces (%d spans): %d nodes, bins of %s\n", st.Learned, st.Traces, st.Spans,
		r.Nodes, printable(r.Bins))
	inc := st.Incoherence
	fmt.Fprintf(w, "incoherent: %d spans without their parent, %d outside their parent, %d traces without a root, %d extra roots, %d duplicate spans, %d negative durations, %d spans in cycles\n",
		inc.MissingParent, inc.OutsideParent, inc.NoRoot, inc.ExtraRoots, inc.DuplicateSpan, inc.NegativeDuration, inc.Cycle)
	fmt.Fprintf(w, "left out: %d incoherent traces (%d learned with inferred parents), %d beyond the node limit, %d deeper than --max-depth; %d traces closed early (--max-open), %d patterns not kept\n",
		st.Excluded, st.Repaired, st.NodeCap, st.TooDeep, st.Evicted, st.PatternsDropped)
	for _, v := range r.Validation {
		fmt.Fprintf(w, "\n%s (%s): %d instances, predicted vs observed: KS distance %s\n", printable(v.Operation), printable(v.Root),
			v.Instances, strconv.FormatFloat(v.KS, 'f', 4, 64))
		writeSummaries(w, r.Quantiles, []string{"predicted", "observed"}, []model.Summary{v.Predicted, v.Observed})
	}
	inf := r.Inference
	if inf.Groups == 0 {
		return
	}
	fmt.Fprintf(w, "\ninferred missing parents: %d orphan groups, %d resolved, %d without a path in the learned transitions\n",
		inf.Groups, inf.Resolved, inf.Unresolved)
	for k, c := range inf.Chains {
		if k == topInferred {
			fmt.Fprintf(w, "  … %d more chains in %s\n", len(inf.Chains)-k, modelReportFile)
			break
		}
		from := c.Ancestor
		if from == "" {
			from = "(no root)"
		}
		fmt.Fprintf(w, "  %6d × %s → [%s] → %s  p=%s (path %s)\n", c.Count, printable(from), printable(strings.Join(c.Missing, " → ")),
			printable(strings.Join(c.Orphans, ", ")), strconv.FormatFloat(c.Probability, 'g', 4, 64), strconv.FormatFloat(c.PathProbability, 'g', 4, 64))
	}
}

// writeSummaries prints ΔQ summaries side by side: a row per quantile,
// then the mean and the failure mass.
func writeSummaries(w io.Writer, qs []float64, heads []string, ss []model.Summary) {
	fmt.Fprintf(w, "  %-10s", "")
	for _, h := range heads {
		fmt.Fprintf(w, " %12s", h)
	}
	fmt.Fprintln(w)
	row := func(label string, val func(s model.Summary) string) {
		fmt.Fprintf(w, "  %-10s", label)
		for _, s := range ss {
			fmt.Fprintf(w, " %12s", val(s))
		}
		fmt.Fprintln(w)
	}
	opt := func(v *float64) string {
		if v == nil {
			return "unreachable"
		}
		return distribution.FormatDuration(*v)
	}
	for k, q := range qs {
		row(strconv.FormatFloat(q, 'g', -1, 64), func(s model.Summary) string { return opt(s.Quantiles[k]) })
	}
	row("mean", func(s model.Summary) string { return opt(s.Mean) })
	row("failure", func(s model.Summary) string { return strconv.FormatFloat(s.Failure, 'g', 4, 64) })
}

// maxRecordFlag defines --max-record, the bound of a trace file's record
// in MiB, and returns its check: the options with both bounds set, or a
// usage error printed.
func maxRecordFlag(fs *flagSet) func() (tracefile.Options, bool) {
	mib := fs.Int("max-record", tracefile.DefaultMaxDocument>>20,
		fmt.Sprintf("`MiB` a line, record or document of a trace file may have, in [1, %d]; a record is decoded whole", tracefile.MaxRecordLimit>>20))
	return func() (tracefile.Options, bool) {
		if *mib < 1 || *mib > tracefile.MaxRecordLimit>>20 {
			fs.usageError("--max-record %d: want MiB in [1, %d]", *mib, tracefile.MaxRecordLimit>>20)
			return tracefile.Options{}, false
		}
		return tracefile.Options{MaxLine: *mib << 20, MaxDocument: *mib << 20}, true
	}
}

// plotModel draws, for each root operation, the observed end-to-end ΔQ and
// the one the model predicts into dir (nothing when dir is empty), and
// returns the files written.
func plotModel(dir string, vs []model.Validation) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	var plots []figure.Named
	for _, v := range vs {
		plots = append(plots, figure.Named{Name: v.Root, Plot: &figure.CDF{
			Title: fmt.Sprintf("model of %s: KS distance %s", printable(v.Operation), strconv.FormatFloat(v.KS, 'f', 4, 64)),
			Curves: []figure.Curve{
				{Label: "observed", DQ: v.ObservedDQ, Color: figure.Observed},
				{Label: "predicted", DQ: v.PredictedDQ, Color: figure.Calculated, Dashed: true},
			},
		}})
	}
	return figure.DrawCDFs(dir, "-model.png", plots)
}
