// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The analyze subcommand: offline ΔQ analysis of recorded traces with the
// collector's own components. The deltaq processor, built by its factory from
// the processors.deltaq section of a collector configuration, maps the spans
// to outcome instances; the analysis of the deltaq exporter or connector,
// configured from its section, analyses them by windows of its interval and
// as one window holding the whole input (observer.OfflineAnalysis).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/metric/noop"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/dist"
	"github.com/deltaq-otel/deltaq/internal/observer"
	"github.com/deltaq-otel/deltaq/internal/outcome"
	"github.com/deltaq-otel/deltaq/internal/process"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// analyzeCommand is the analyze command's entry of the command table.
func analyzeCommand() command {
	return command{
		name:    "analyze",
		usage:   "analyze --config FILE.yaml... [--json] [--plot DIR] [--interval D] [--processor ID] [--exporter ID | --connector ID] [--format F] [--compression C] TRACES...",
		summary: "analyse recorded traces as the deltaq connector (or processor and exporter) would",
		help: `Analyze reads traces written by the collector's file exporter and analyses
them with the collector's own components, configured from a collector
configuration file: the analysis of the deltaq connector of the connectors
section (--connector; by default the connector "deltaq" when there is no
exporter "deltaq") or of the deltaq exporter of the exporters section
(--exporter, default "deltaq") — its interval, lag, probes, QTAs,
quantiles and outcome diagram — analyses the outcome instances that the
connector's probes with a match find in the spans, judged from each span as
the connector judges them, and those the deltaq processor of the
processors section maps, when the configuration has one (--processor,
default "deltaq"; naming one that is not there is an error). The exporter's OTLP settings are not used. The configuration
is read as the collector reads it: --config may be repeated, the files
merged in order (maps key by key, a list replaced whole), and
${env:NAME}, ${env:NAME:-default}, ${NAME} and ${file:PATH} are expanded.

Every form the file exporter writes is read, told apart by the content:
format json (one ExportTraceServiceRequest per line; documents laid out in
any other way, such as one indented document, are read too) and format
proto, each with or without compression zstd (records preceded by their
length), and the whole-file zstd stream of its native compression.
--format json|proto and --compression none|zstd force what detection would
choose. A last record cut short (a collector stopped while writing) is
reported with its record number and byte offset, and the records before it
are analysed.

The input is streamed: each record goes (through the processor) into the
analysis before the next is read, so memory holds one record and the
analysis, whatever the size of the files; a line or record may be up to
64 MiB long, and so may a JSON document laid out over several lines. Errors
name the file and the line, as FILE:LINE, or the record and its byte offset.

Windows: the instances are counted into windows of the configured interval
(--interval overrides it) by their end time, aligned on multiples of the
interval since the Unix epoch, as the collector counts them; the latest
span end read stands for the clock, so a window closes once spans ending
lag (default one interval) after it have been read. A table gives, for each
window with instances and each probe in it, the instances by outcome, the
median and 0.95 quantile (or the configured quantiles, when set), the QTA
verdict and, with a diagram, the divergence. Up to 10000 windows are kept
for the table, --json and the plots; later ones are counted.

Then, for the whole input as one window, it prints for every probe the
instances by outcome, the quantiles of the observed ΔQ ("unreachable" when
the failures leave a quantile out of reach), the failure ratio, the QTA
verdict, and, where the diagram calculates the probe, the calculated
quantiles and the divergence sup |F_obs − F_calc|. When no span matched any
probe, it says so and lists the most frequent span names read instead.

--json prints {"counted", "probes": {NAME: {"count", "success", "timeout",
"failure", "quantiles": {"0.5": seconds or null, …}, "failure_ratio",
"qta": {"pass", …}, "calculated_quantiles", "divergence"}}, "interval",
"windows": [{"start", "end", "probes": {NAME: {"count", "success",
"timeout", "failure", "quantiles", "failure_ratio", "qta_pass",
"divergence"}}}], "unmatched": {"spans", "span_names": [{"name",
"count"}], …}}; failure_ratio and qta are null for a probe without
instances, qta is absent for a probe without a QTA.

--plot DIR writes, for every probe with instances, DIR/PROBE.png: the CDFs
of the observed and calculated ΔQs of the whole input, the 95 % band of the
observed ΔQs of the last windows (history), the QTA and dMax, like the
thesis's figures, delays in milliseconds up to where the curves' mass ends;
and DIR/PROBE.windows.png: the quantiles and the failure ratio per window
over time. The file names keep letters, digits, '.', '-' and '_' of the
probe name; the files written are listed (on stderr with --json).

Control characters, invalid UTF-8 and bidirectional overrides in probe and
span names (which come from span data) are shown as Go escapes (\x1b,
\u202e) in the text output and the plot titles; --json escapes them the
JSON way.`,
		run: runAnalyze,
	}
}

// maxWindowRows bounds the windows kept for the table, --json and the
// plots; later windows are analysed (and count in the whole input) but
// only counted.
const maxWindowRows = 10000

// analyzeOptions is analyze's command line.
type analyzeOptions struct {
	cfg      collectorConfig
	plotDir  string
	interval time.Duration
	lag      time.Duration
	json     bool
	trace    tracefile.Options
	files    []string
}

func parseAnalyzeArgs(args []string, stderr io.Writer) (o analyzeOptions, status int, ok bool) {
	fs := newFlags(analyzeCommand(), stderr)
	o.cfg.flags(fs)
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.plotDir, "plot", "", "write two PNG plots per probe into `DIR`")
	fs.DurationVar(&o.interval, "interval", 0, "window length `D` (default: the configured interval)")
	fs.DurationVar(&o.lag, "lag", 0, "how long `D` after its end a window waits for late spans (default: the configured lag; at most 16 intervals)")
	format := fs.String("format", "auto", "`format` of the trace files: auto, json or proto")
	maxRecord := maxRecordFlag(fs)
	compression := fs.String("compression", "auto", "`compression` of the trace files: auto, none or zstd")
	files, status, ok := parseArgs(fs, args)
	if !ok {
		return o, status, false
	}
	switch {
	case len(o.cfg.paths) == 0:
		return o, fs.usageError("--config is required"), false
	case len(files) == 0:
		return o, fs.usageError("no trace files"), false
	case *format != "auto" && *format != "json" && *format != "proto":
		return o, fs.usageError("--format %q: want auto, json or proto", *format), false
	case *compression != "auto" && *compression != "none" && *compression != "zstd":
		return o, fs.usageError("--compression %q: want auto, none or zstd", *compression), false
	case o.interval < 0:
		return o, fs.usageError("--interval %s: want a positive duration", o.interval), false
	case o.lag < 0:
		return o, fs.usageError("--lag %s: want a positive duration", o.lag), false
	}
	if err := o.cfg.checkFlags(fs); err != nil {
		return o, fs.usageError("%s", err), false
	}
	if o.trace, ok = maxRecord(); !ok {
		return o, exitUsage, false
	}
	if *format != "auto" {
		o.trace.Format = *format
	}
	if *compression != "auto" {
		o.trace.Compression = *compression
	}
	o.files = files
	return o, exitOK, true
}

func runAnalyze(args []string, stdout, stderr io.Writer) int {
	o, status, ok := parseAnalyzeArgs(args, stderr)
	if !ok {
		return status
	}
	fail := func(err error) int {
		// Errors quote the input (the JSON unmarshaler shows the bytes
		// around a syntax error): escape them like the output.
		fmt.Fprintf(stderr, "deltaq analyze: %s\n", printableLines(err.Error()))
		return exitFail
	}
	loaded, err := o.cfg.load()
	if err != nil {
		return fail(err)
	}
	acfg := loaded.analysis
	if o.interval > 0 {
		acfg.Interval = o.interval
	}
	if o.lag > 0 {
		acfg.Lag = o.lag
	}
	// Validate would also ask an exporter for an endpoint, which an offline
	// analysis does not need; the analysis options get the one check the
	// connector and the exporter run (bounds, diagram, probes).
	if err := acfg.Check(); err != nil {
		return fail(fmt.Errorf("%s: %w", loaded.where, err))
	}
	an, proc, err := newAnalysis(loaded, acfg)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	rep := &analyzeReport{cfg: acfg, qs: tableQuantiles(acfg.Quantiles), bands: map[string]*deltaq.ConfidenceBand{}}
	an.OnWindow(rep.addWindow)
	warnings, err := feedTraceFiles(ctx, &o, proc, rep)
	if serr := proc.Shutdown(ctx); serr != nil && err == nil {
		err = fmt.Errorf("deltaq processor: %w", serr)
	}
	if err != nil {
		return fail(err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "deltaq analyze: warning: %s\n", printableLines(w))
	}
	rep.whole, rep.stats = an.Result()
	rep.windowStats = an.WindowStats()
	status, err = rep.write(&o, stdout, stderr)
	if err != nil {
		return fail(err)
	}
	return status
}

// newAnalysis makes the offline analysis of the configuration, and what the
// traces go through on their way to it: the deltaq processor, if the
// configuration has one, started, as in a collector, before the analysis,
// which learns the layouts of the probes it configures (internal/outcome's
// registry); else the analysis itself, which finds the connector's probes
// in the spans. A probe both match is refused, as the collector refuses it.
func newAnalysis(loaded *loadedConfig, acfg *observer.Config) (*observer.OfflineAnalysis, processor.Traces, error) {
	var an *observer.OfflineAnalysis
	var proc processor.Traces
	st := process.New() // the components' shared state, as in a collector of its own
	if loaded.proc != nil {
		next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
			return an.ConsumeTraces(ctx, td)
		})
		if err != nil {
			return nil, nil, err
		}
		if proc, err = newProcessor(st, loaded.proc, next); err != nil {
			return nil, nil, err
		}
	}
	shut := func() {
		if proc != nil {
			_ = proc.Shutdown(context.Background())
		}
	}
	if sp := loaded.spans; sp != nil {
		claims := st.Claims
		err := claims.Claim(loaded, "connector", loaded.connID, sp.Names)
		claims.Release(loaded)
		if err != nil {
			shut()
			return nil, nil, fmt.Errorf("%s: %w", loaded.where, err)
		}
	}
	an, err := observer.NewOfflineAnalysis(acfg, st.Layouts, loaded.spans)
	if err != nil {
		shut()
		return nil, nil, fmt.Errorf("%s: %w", loaded.where, err)
	}
	if proc == nil {
		proc = offlineInput{an}
	}
	return an, proc, nil
}

// offlineInput hands the traces straight to the analysis, when no deltaq
// processor maps them.
type offlineInput struct{ *observer.OfflineAnalysis }

func (offlineInput) Start(context.Context, component.Host) error { return nil }
func (offlineInput) Shutdown(context.Context) error              { return nil }

// feedTraceFiles sends the records of the trace files through the
// processor into the analysis, each before the next is read: memory holds
// one record and the analysis state. A truncated file is a warning, not an
// error: its records before the cut were analysed.
func feedTraceFiles(ctx context.Context, o *analyzeOptions, proc processor.Traces, rep *analyzeReport) (warnings []string, err error) {
	for _, f := range o.files {
		err = tracefile.Read(f, o.trace, func(td ptrace.Traces) error {
			rep.names.add(td)
			if err := proc.ConsumeTraces(ctx, td); err != nil {
				return err
			}
			return nil
		})
		var te *tracefile.TruncatedError
		if errors.As(err, &te) {
			warnings = append(warnings, te.Error())
			err = nil
		}
		if err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

// write writes the report: the plots to o.plotDir, if asked, then the
// tables (or JSON) to stdout, and the files written to stdout, or to
// stderr under --json. It returns the exit status.
func (rep *analyzeReport) write(o *analyzeOptions, stdout, stderr io.Writer) (int, error) {
	var written []string
	if o.plotDir != "" {
		var err error
		if written, err = rep.writePlots(o.plotDir); err != nil {
			return exitFail, err
		}
	}
	status := exitOK
	if o.json {
		status = rep.writeJSON(stdout, stderr)
	} else {
		rep.writeText(stdout)
	}
	listed := stdout
	if o.json {
		listed = stderr
	}
	for _, p := range written {
		fmt.Fprintf(listed, "wrote %s\n", printable(p))
	}
	return status, nil
}

// newProcessor creates the deltaq processor of the components whose shared
// state is st from its factory with pcfg, starts it, and sends what it
// passes on to next. Its logs go nowhere and its self-telemetry is not
// recorded: the command reports what it found.
func newProcessor(st *process.State, pcfg any, next consumer.Traces) (processor.Traces, error) {
	ctx := context.Background()
	f := deltaqprocessor.NewFactoryFor(st)
	set := processor.Settings{
		ID: component.NewID(f.Type()),
		TelemetrySettings: component.TelemetrySettings{Logger: zap.NewNop(), TracerProvider: nooptrace.NewTracerProvider(),
			MeterProvider: noop.NewMeterProvider(), Resource: pcommon.NewResource()},
		BuildInfo: component.NewDefaultBuildInfo(),
	}
	proc, err := f.CreateTraces(ctx, set, pcfg, next)
	if err != nil {
		return nil, fmt.Errorf("deltaq processor: %w", err)
	}
	if err := proc.Start(ctx, noHost{}); err != nil {
		return nil, fmt.Errorf("deltaq processor: %w", err)
	}
	return proc, nil
}

// noHost is the host of a component the command runs alone: no
// extensions.
type noHost struct{}

func (noHost) GetExtensions() map[component.ID]component.Component { return nil }

// discard is a traces consumer that drops what it is given.
var discard, _ = consumer.NewTraces(func(context.Context, ptrace.Traces) error { return nil })

// tableQuantiles returns the quantiles of the window table: the median and
// the 0.95 quantile, or the configured quantiles when they are not the
// defaults.
func tableQuantiles(configured []float64) []float64 {
	if len(configured) == 0 || slices.Equal(configured, analysis.DefaultQuantiles) {
		return []float64{0.5, 0.95}
	}
	return configured
}

// analyzeReport gathers what analyze prints and plots: the whole input's
// analysis, and what it keeps of each window with instances (at most
// maxWindowRows) and of the span names read.
type analyzeReport struct {
	cfg   *observer.Config
	qs    []float64 // the quantiles of the windows
	whole *analysis.Result
	// stats are the whole input's instance counters, windowStats those of
	// the windows.
	stats, windowStats analysis.Stats
	rows               []windowRow
	// empty counts the windows closed without any instance after the
	// first with instances, notKept the windows with instances beyond
	// maxWindowRows.
	empty, notKept int
	// bands holds the latest 95 % band of each probe.
	bands map[string]*deltaq.ConfidenceBand
	names spanNames
}

// windowRow is what analyze keeps of one window.
type windowRow struct {
	start, end time.Time
	probes     []windowProbe // the probes with instances, by name
	triggers   []analysis.TriggerEvent
}

// windowProbe is one probe's values in one window.
type windowProbe struct {
	name   string
	counts analysis.Counts
	// quantiles are at analyzeReport.qs, in seconds; NaN: unreachable.
	quantiles []float64
	failure   float64
	// qta is the QTA's verdict: +1 pass, -1 fail, 0 no QTA.
	qta           int8
	divergence    float64
	hasDivergence bool
	// qoo is the observed Quality of Outcome's cell (qooCell).
	qoo string
}

// verdict writes the QTA's verdict in the window table.
func (p *windowProbe) verdict() string {
	switch p.qta {
	case 1:
		return "pass"
	case -1:
		return "FAIL"
	}
	return "-"
}

// addWindow keeps what the report needs of a closed window.
func (r *analyzeReport) addWindow(res *analysis.Result) {
	for i := range res.Probes {
		if p := &res.Probes[i]; p.Band != nil {
			r.bands[p.Name] = p.Band
		}
	}
	row := windowRow{start: res.Start, end: res.End, triggers: res.Triggers}
	for i := range res.Probes {
		p := &res.Probes[i]
		if p.Observed == nil {
			continue
		}
		wp := windowProbe{name: p.Name, counts: p.Counts, quantiles: make([]float64, len(r.qs)),
			divergence: p.Divergence, hasDivergence: p.HasDivergence, qoo: qooCell(p.QoO)}
		for j, q := range r.qs {
			v, ok := p.Analysis.Quantile(q)
			if !ok {
				v = math.NaN()
			}
			wp.quantiles[j] = v
		}
		wp.failure, _ = p.FailureRatio()
		if c := p.QTACheck; c != nil {
			wp.qta = -1
			if c.OK {
				wp.qta = 1
			}
		}
		row.probes = append(row.probes, wp)
	}
	switch {
	case len(row.probes) == 0:
		// Windows before the first with instances (open from the start,
		// within the lag) are not counted.
		if len(r.rows)+r.notKept > 0 {
			r.empty++
		}
	case len(r.rows) >= maxWindowRows:
		r.notKept++
	default:
		r.rows = append(r.rows, row)
	}
}

// unmatched reports whether no span matched any probe: nothing counted,
// nothing dropped.
func (r *analyzeReport) unmatched() bool {
	return r.stats.Counted == 0 && r.stats.Dropped.Total() == 0
}

// tooLate returns the instances the windows dropped beyond the whole
// input's drops: those that ended in a window already closed.
func (r *analyzeReport) tooLate() int64 {
	return r.windowStats.Dropped[analysis.DropTooLate]
}

// formatQ formats a quantile as a JSON key and in text.
func formatQ(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// textTime writes a time in the text output, in UTC.
func textTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func (r *analyzeReport) writeText(w io.Writer) {
	res, st := r.whole, r.stats
	fmt.Fprintf(w, "%d instances", st.Counted)
	if d := st.Dropped.Total(); d > 0 {
		fmt.Fprintf(w, " (not counted: %s)", formatDrops(st.Dropped))
	}
	if st.Counted > 0 {
		fmt.Fprintf(w, ", ending from %s to %s", textTime(res.Start), textTime(res.End))
	}
	fmt.Fprintln(w)
	if r.unmatched() {
		r.names.writeText(w)
		return
	}
	r.writeWindows(w)
	fmt.Fprintf(w, "\nthe whole input as one window:\n")
	for i := range res.Probes {
		p := &res.Probes[i]
		fmt.Fprintf(w, "\n%s: %d instances: %d success, %d timeout, %d failure\n", printable(p.Name), p.Counts.Total(), p.Counts.Success, p.Counts.Timeout, p.Counts.Failure)
		if p.Observed == nil {
			if p.Calculated != nil {
				writeQuantiles(w, "calculated", p.Quantiles, true)
			}
			continue
		}
		fmt.Fprintf(w, "  %-11s %d bins of %s, dMax %s\n", "histogram", p.Bins, dist.FormatDuration(p.Width), dist.FormatDuration(p.Observed.DMax()))
		writeQuantiles(w, "observed", p.Quantiles, false)
		fr, _ := p.FailureRatio()
		fmt.Fprintf(w, "  %-11s %s\n", "failure", strconv.FormatFloat(fr, 'g', 6, 64))
		if p.Calculated != nil {
			writeQuantiles(w, "calculated", p.Quantiles, true)
		}
		if p.HasDivergence {
			fmt.Fprintf(w, "  %-11s %s\n", "divergence", strconv.FormatFloat(p.Divergence, 'g', 4, 64))
		}
		if c := p.QTACheck; c != nil {
			verdict := "pass"
			if !c.OK {
				verdict = "FAIL"
			}
			var parts []string
			for _, pc := range c.Points {
				rel := "≥"
				if !pc.OK {
					rel = "<"
				}
				parts = append(parts, fmt.Sprintf("F(%s) = %.4g %s %.4g", dist.FormatDuration(pc.Delay), pc.Observed, rel, pc.P))
			}
			rel := "≤"
			if !c.FailureOK {
				rel = ">"
			}
			parts = append(parts, fmt.Sprintf("failure %.4g %s %.4g", c.Failure, rel, c.MaxFailure))
			fmt.Fprintf(w, "  %-11s %s: %s\n", "qta", verdict, strings.Join(parts, "; "))
		}
		writeQoO(w, p)
	}
	for _, t := range res.Triggers {
		fmt.Fprintf(w, "\ntrigger %s on %s: observed %.4g, required %.4g\n", t.Kind, printable(t.Probe), t.Observed, t.Required)
	}
}

// formatDrops writes the non-zero drop counters as "2 too_late, 1 invalid".
func formatDrops(d analysis.Drops) string {
	var parts []string
	for reason, n := range d {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, analysis.DropReason(reason)))
		}
	}
	return strings.Join(parts, ", ")
}

// lagHint advises how to count the instances that arrived too late: the
// spans of the files ended up to names.behind before spans read earlier,
// so a lag of that much, rounded up to a millisecond, keeps their windows
// open; a lag longer than analysis.MaxLagIntervals intervals is refused, so
// past it the advice is to sort the input or widen the windows.
func (r *analyzeReport) lagHint(lag time.Duration) string {
	need := time.Duration(r.names.behind).Truncate(time.Millisecond) + time.Millisecond
	if need <= lag {
		return ""
	}
	if need > analysis.MaxLagIntervals*r.cfg.Interval {
		return fmt.Sprintf(": the input's spans end up to %s before spans read earlier; sort them by end time, or widen the windows with --interval",
			dist.FormatDuration(need.Seconds()))
	}
	return fmt.Sprintf(": --lag %s would count them", dist.FormatDuration(need.Seconds()))
}

// writeWindows writes the window table and the triggers of the windows.
func (r *analyzeReport) writeWindows(w io.Writer) {
	if r.cfg.Interval <= 0 {
		return
	}
	lag := r.cfg.Lag
	if lag == 0 {
		lag = r.cfg.Interval
	}
	fmt.Fprintf(w, "\nwindows of %s by span end time, closed %s after their end: %d with instances", dist.FormatDuration(r.cfg.Interval.Seconds()),
		dist.FormatDuration(lag.Seconds()), len(r.rows)+r.notKept)
	if r.empty > 0 {
		fmt.Fprintf(w, ", %d without (not shown)", r.empty)
	}
	if r.notKept > 0 {
		fmt.Fprintf(w, "; the last %d not kept (at most %d are; see --interval)", r.notKept, maxWindowRows)
	}
	if n := r.tooLate(); n > 0 {
		fmt.Fprintf(w, "; %d instances ended in a window already closed (too_late, not counted in the windows)%s", n, r.lagHint(lag))
	}
	fmt.Fprintln(w)
	if len(r.rows) == 0 {
		return
	}
	diagram := r.cfg.Diagram != "" || r.cfg.DiagramFile != ""
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"window start (UTC)", "probe", "instances", "success", "timeout", "failure"}
	for _, q := range r.qs {
		head = append(head, "q"+formatQ(q))
	}
	head = append(head, "qta")
	if diagram {
		head = append(head, "divergence")
	}
	qoo := hasQoO(r.cfg.Probes)
	if qoo {
		head = append(head, "qoo")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.rows {
		for i, p := range row.probes {
			start := ""
			if i == 0 {
				start = textTime(row.start)
			}
			cells := []string{start, printable(p.name), strconv.FormatInt(p.counts.Total(), 10),
				strconv.FormatInt(p.counts.Success, 10), strconv.FormatInt(p.counts.Timeout, 10), strconv.FormatInt(p.counts.Failure, 10)}
			for _, v := range p.quantiles {
				s := "unreachable"
				if !math.IsNaN(v) {
					s = dist.FormatDuration(v)
				}
				cells = append(cells, s)
			}
			cells = append(cells, p.verdict())
			if diagram {
				d := "-"
				if p.hasDivergence {
					d = strconv.FormatFloat(p.divergence, 'g', 4, 64)
				}
				cells = append(cells, d)
			}
			if qoo {
				cells = append(cells, p.qoo)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
	}
	tw.Flush()
	for _, row := range r.rows {
		for _, t := range row.triggers {
			fmt.Fprintf(w, "trigger %s on %s in the window from %s: observed %.4g, required %.4g\n", t.Kind, printable(t.Probe),
				textTime(row.start), t.Observed, t.Required)
		}
	}
}

func writeQuantiles(w io.Writer, label string, qs []analysis.QuantileValue, calculated bool) {
	fmt.Fprintf(w, "  %-11s", label)
	for _, q := range qs {
		v, ok := q.Observed, q.ObservedOK
		if calculated {
			v, ok = q.Calculated, q.CalculatedOK
		}
		s := "unreachable"
		if ok {
			s = dist.FormatDuration(v)
		}
		fmt.Fprintf(w, " %s=%s", formatQ(q.Q), s)
	}
	fmt.Fprintln(w)
}

// JSON output. Delays are in seconds.
type (
	analysisJSON struct {
		Window  *windowJSON                   `json:"window,omitempty"`
		Counted int64                         `json:"counted"`
		Dropped map[string]int64              `json:"dropped,omitempty"`
		Probes  map[string]*probeAnalysisJSON `json:"probes"`
		Trigger []triggerAnalysisJSON         `json:"triggers,omitempty"`
		// The windows: their length and lag in seconds, those with
		// instances, and the counts of the others.
		Interval       float64             `json:"interval,omitempty"`
		Lag            float64             `json:"lag,omitempty"`
		Windows        []windowRowJSON     `json:"windows"`
		WindowsDropped map[string]int64    `json:"windows_dropped,omitempty"`
		WindowsEmpty   int                 `json:"windows_empty"`
		WindowsNotKept int                 `json:"windows_not_kept"`
		Unmatched      *unmatchedSpansJSON `json:"unmatched,omitempty"`
	}
	windowJSON struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	probeAnalysisJSON struct {
		Count               int64               `json:"count"`
		Success             int64               `json:"success"`
		Timeout             int64               `json:"timeout"`
		Failure             int64               `json:"failure"`
		Quantiles           map[string]*float64 `json:"quantiles"`
		FailureRatio        *float64            `json:"failure_ratio"`
		QTA                 *qtaJSON            `json:"qta,omitempty"`
		CalculatedQuantiles map[string]*float64 `json:"calculated_quantiles,omitempty"`
		Divergence          *float64            `json:"divergence,omitempty"`
		QoO                 *qooAnalysisJSON    `json:"qoo,omitempty"`
		hasQTA              bool
	}
	qtaJSON struct {
		Pass       bool           `json:"pass"`
		Points     []qtaPointJSON `json:"points"`
		Failure    float64        `json:"failure"`
		MaxFailure float64        `json:"max_failure"`
		FailureOK  bool           `json:"failure_ok"`
	}
	qtaPointJSON struct {
		Delay    float64 `json:"delay"`
		P        float64 `json:"p"`
		Observed float64 `json:"observed"`
		OK       bool    `json:"ok"`
	}
	triggerAnalysisJSON struct {
		Probe    string  `json:"probe"`
		Trigger  string  `json:"trigger"`
		Observed float64 `json:"observed"`
		Required float64 `json:"required"`
	}
	windowRowJSON struct {
		Start    string                     `json:"start"`
		End      string                     `json:"end"`
		Probes   map[string]windowProbeJSON `json:"probes"`
		Triggers []triggerAnalysisJSON      `json:"triggers,omitempty"`
	}
	windowProbeJSON struct {
		Count        int64               `json:"count"`
		Success      int64               `json:"success"`
		Timeout      int64               `json:"timeout"`
		Failure      int64               `json:"failure"`
		Quantiles    map[string]*float64 `json:"quantiles"`
		FailureRatio float64             `json:"failure_ratio"`
		QTAPass      *bool               `json:"qta_pass,omitempty"`
		Divergence   *float64            `json:"divergence,omitempty"`
		// QoO is the observed Quality of Outcome's score: "withheld",
		// absent without a qoo requirement.
		QoO string `json:"qoo,omitempty"`
	}
)

// MarshalJSON writes "qta": null for a probe with a QTA but no instances,
// and leaves the key out for a probe without a QTA.
func (p *probeAnalysisJSON) MarshalJSON() ([]byte, error) {
	type plain probeAnalysisJSON
	b, err := json.Marshal((*plain)(p))
	if err != nil || !p.hasQTA || p.QTA != nil {
		return b, err
	}
	return append(b[:len(b)-1], []byte(`,"qta":null}`)...), nil
}

// jsonTime writes a time in the JSON output.
func jsonTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// dropsJSON returns the non-zero drop counters by reason, nil if none.
func dropsJSON(d analysis.Drops) map[string]int64 {
	var out map[string]int64
	for reason, n := range d {
		if n > 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out[analysis.DropReason(reason).String()] = n
		}
	}
	return out
}

func triggersJSON(ts []analysis.TriggerEvent) []triggerAnalysisJSON {
	var out []triggerAnalysisJSON
	for _, t := range ts {
		out = append(out, triggerAnalysisJSON{Probe: t.Probe, Trigger: t.Kind.String(), Observed: t.Observed, Required: t.Required})
	}
	return out
}

func (r *analyzeReport) writeJSON(stdout, stderr io.Writer) int {
	res, st := r.whole, r.stats
	out := analysisJSON{Counted: st.Counted, Probes: map[string]*probeAnalysisJSON{}, Dropped: dropsJSON(st.Dropped),
		Trigger: triggersJSON(res.Triggers), Windows: []windowRowJSON{}, WindowsDropped: dropsJSON(r.windowStats.Dropped),
		WindowsEmpty: r.empty, WindowsNotKept: r.notKept}
	if st.Counted > 0 {
		out.Window = &windowJSON{Start: jsonTime(res.Start), End: jsonTime(res.End)}
	}
	if r.cfg.Interval > 0 {
		out.Interval = r.cfg.Interval.Seconds()
		out.Lag = r.cfg.Lag.Seconds()
		if r.cfg.Lag == 0 {
			out.Lag = out.Interval
		}
	}
	for i := range res.Probes {
		p := &res.Probes[i]
		pj := &probeAnalysisJSON{
			Count: p.Counts.Total(), Success: p.Counts.Success, Timeout: p.Counts.Timeout, Failure: p.Counts.Failure,
			Quantiles: map[string]*float64{}, hasQTA: p.QTA != nil,
		}
		for _, q := range p.Quantiles {
			pj.Quantiles[formatQ(q.Q)] = optional(q.Observed, q.ObservedOK)
		}
		if fr, ok := p.FailureRatio(); ok {
			pj.FailureRatio = &fr
		}
		if c := p.QTACheck; c != nil {
			qj := &qtaJSON{Pass: c.OK, Failure: c.Failure, MaxFailure: c.MaxFailure, FailureOK: c.FailureOK, Points: []qtaPointJSON{}}
			for _, pc := range c.Points {
				qj.Points = append(qj.Points, qtaPointJSON{Delay: pc.Delay, P: pc.P, Observed: pc.Observed, OK: pc.OK})
			}
			pj.QTA = qj
		}
		if p.Calculated != nil {
			pj.CalculatedQuantiles = map[string]*float64{}
			for _, q := range p.Quantiles {
				pj.CalculatedQuantiles[formatQ(q.Q)] = optional(q.Calculated, q.CalculatedOK)
			}
		}
		if p.HasDivergence {
			d := p.Divergence
			pj.Divergence = &d
		}
		pj.QoO = qooJSONOf(p.QoO)
		out.Probes[p.Name] = pj
	}
	for _, row := range r.rows {
		rj := windowRowJSON{Start: jsonTime(row.start), End: jsonTime(row.end), Probes: map[string]windowProbeJSON{}, Triggers: triggersJSON(row.triggers)}
		for _, p := range row.probes {
			pj := windowProbeJSON{Count: p.counts.Total(), Success: p.counts.Success, Timeout: p.counts.Timeout, Failure: p.counts.Failure,
				Quantiles: map[string]*float64{}, FailureRatio: p.failure, Divergence: optional(p.divergence, p.hasDivergence), QoO: p.qoo}
			for j, q := range r.qs {
				pj.Quantiles[formatQ(q)] = optional(p.quantiles[j], !math.IsNaN(p.quantiles[j]))
			}
			if p.qta != 0 {
				pass := p.qta > 0
				pj.QTAPass = &pass
			}
			rj.Probes[p.name] = pj
		}
		out.Windows = append(out.Windows, rj)
	}
	if r.unmatched() {
		out.Unmatched = r.names.json()
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "deltaq analyze: %v\n", err)
		return exitFail
	}
	stdout.Write(append(b, '\n'))
	return exitOK
}

func optional(v float64, ok bool) *float64 {
	if !ok {
		return nil
	}
	return &v
}

// writePlots draws, for every probe with an observed or calculated ΔQ of
// the whole input, its ΔQ plot (drawCDF: observed solid, calculated dashed,
// the band of its last windows, the QTA, dMax), and for every probe with
// windows its plot over time. It returns the files written.
func (r *analyzeReport) writePlots(dir string) ([]string, error) {
	files, err := newPlotFiles(dir)
	if err != nil {
		return nil, err
	}
	var written []string
	for i := range r.whole.Probes {
		p := &r.whole.Probes[i]
		if p.Observed == nil && p.Calculated == nil {
			continue
		}
		cp := &cdfPlot{title: "ΔQ of " + printable(p.Name), qta: p.QTA}
		if p.Observed != nil {
			cp.curves = append(cp.curves, cdfCurve{label: "observed", dq: *p.Observed, color: colorObserved})
		}
		if p.Calculated != nil {
			cp.curves = append(cp.curves, cdfCurve{label: "calculated", dq: *p.Calculated, color: colorCalculated, dashes: dashed})
		}
		if b := r.bands[p.Name]; b != nil {
			cp.band, cp.bandLabel = b, fmt.Sprintf("95 %% band (last %d windows)", b.K)
		}
		path := files.path(p.Name, ".png")
		if err := drawCDF(path, cp); err != nil {
			return written, fmt.Errorf("plot of %s: %w", printable(p.Name), err)
		}
		written = append(written, path)
	}
	for _, name := range r.windowProbes() {
		s := r.series(name)
		path := files.path(name, ".windows.png")
		if err := drawTimeSeries(path, s); err != nil {
			return written, fmt.Errorf("plot over time of %s: %w", printable(name), err)
		}
		written = append(written, path)
	}
	return written, nil
}

// windowProbes returns, sorted, the probes with instances in a kept window.
func (r *analyzeReport) windowProbes() []string {
	seen := map[string]bool{}
	var names []string
	for _, row := range r.rows {
		for _, p := range row.probes {
			if !seen[p.name] {
				seen[p.name] = true
				names = append(names, p.name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// series returns the values of probe in the windows in which it has
// instances.
func (r *analyzeReport) series(probe string) *timeSeries {
	s := &timeSeries{title: "ΔQ of " + printable(probe) + " per window of " + dist.FormatDuration(r.cfg.Interval.Seconds()),
		interval: r.cfg.Interval, qs: r.qs}
	if pc, ok := r.cfg.Probes[probe]; ok && (len(pc.QTA.Points) > 0 || pc.QTA.MaxFailure > 0) {
		mf := pc.QTA.MaxFailure
		s.maxFailure = &mf
	}
	for _, row := range r.rows {
		for _, p := range row.probes {
			if p.name == probe {
				s.starts = append(s.starts, row.start)
				s.values = append(s.values, p.quantiles)
				s.failure = append(s.failure, p.failure)
			}
		}
	}
	return s
}

// maxSpanNames bounds the distinct span names spanNames tracks, and
// topSpanNames the names it reports.
const (
	maxSpanNames = 1000
	topSpanNames = 10
)

// spanNames counts the spans read by name, to report the most frequent
// names of an input that no probe matches. At most maxSpanNames distinct
// names are tracked, each cut to outcome.MaxNameLength bytes; the spans of
// further names are counted in untracked.
type spanNames struct {
	counts           map[string]int64
	spans, untracked int64
	// latestEnd is the latest end time read so far, behind the most a span
	// ended before a span read earlier: the lag that would have kept every
	// window open for it.
	latestEnd, behind pcommon.Timestamp
}

// forEachSpan calls fn with every span of td.
func forEachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				fn(spans.At(k))
			}
		}
	}
}

func (s *spanNames) add(td ptrace.Traces) {
	if s.counts == nil {
		s.counts = make(map[string]int64)
	}
	forEachSpan(td, func(span ptrace.Span) {
		s.spans++
		if end := span.EndTimestamp(); end < s.latestEnd {
			s.behind = max(s.behind, s.latestEnd-end)
		} else {
			s.latestEnd = end
		}
		name := span.Name()
		if len(name) > outcome.MaxNameLength {
			name = name[:outcome.MaxNameLength]
		}
		if _, ok := s.counts[name]; !ok && len(s.counts) >= maxSpanNames {
			s.untracked++
			return
		}
		if _, ok := s.counts[name]; !ok {
			name = strings.Clone(name) // do not keep the pdata alive
		}
		s.counts[name]++
	})
}

// nameCount is one span name and its number of spans.
type nameCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// top returns the n most frequent names, by count then name.
func (s *spanNames) top(n int) []nameCount {
	all := make([]nameCount, 0, len(s.counts))
	for name, c := range s.counts {
		all = append(all, nameCount{Name: name, Count: c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return all[i].Name < all[j].Name
	})
	return all[:min(n, len(all))]
}

func (s *spanNames) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nno span matched any probe: %d spans read", s.spans)
	if s.spans == 0 {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "; the most frequent span names:\n")
	for _, nc := range s.top(topSpanNames) {
		fmt.Fprintf(w, "  %8d  %s\n", nc.Count, printable(nc.Name))
	}
	if s.untracked > 0 {
		fmt.Fprintf(w, "(%d spans were not tracked by name: only the first %d distinct names are)\n", s.untracked, maxSpanNames)
	}
}

// unmatchedSpansJSON is the "unmatched" object of --json.
type unmatchedSpansJSON struct {
	Spans          int64       `json:"spans"`
	SpanNames      []nameCount `json:"span_names"`
	UntrackedSpans int64       `json:"untracked_spans"`
	TrackedNames   int         `json:"tracked_names_limit"`
}

func (s *spanNames) json() *unmatchedSpansJSON {
	return &unmatchedSpansJSON{Spans: s.spans, SpanNames: s.top(topSpanNames), UntrackedSpans: s.untracked, TrackedNames: maxSpanNames}
}
