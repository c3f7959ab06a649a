// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The analyze subcommand: offline ΔQ analysis of recorded traces with the
// collector's own components. The deltaq processor, built by its factory from
// the processors.deltaq section of a collector configuration, maps the spans
// to outcome instances; the analysis of the deltaq exporter or connector,
// configured from its section, analyses them by windows of its interval and
// as one window holding the whole input (offline.NewAnalysis); package
// report writes what it found.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/offline"
	"github.com/deltaq-otel/deltaq/internal/report"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
)

// analyzeHelp is deltaq help analyze.
const analyzeHelp = `Analyze reads traces written by the collector's file exporter and analyses
them with the collector's own components, configured from a collector
configuration file: the analysis of the deltaq connector of the connectors
section (--connector; by default the connector "deltaq" when there is no
exporter "deltaq") or of the deltaq exporter of the exporters section
(--exporter, default "deltaq") — its interval, lag, probes, QTAs,
quantiles and outcome diagram — analyses the outcome instances that the
connector's probes with a match find in the spans, judged from each span as
the connector judges them (start events are not read: an instance the
connector timed out from its start event counts only if its span is in the
file, by the span's own duration), and those the deltaq processor of the
processors section maps, when the configuration has one (--processor;
naming one that is not there is an error; by default, of the deltaq
processors of the traces pipelines that send to the connector or
exporter, "deltaq" or the one there is, and "deltaq" when the pipelines
name none). The other deltaq processors of the pipelines are made too, as
the collector makes them, and given no spans: the connector or exporter
takes the layouts of their probes, and one that the collector would
refuse is refused; those of the pipelines that send to the connector or
exporter, whose instances are then not counted, are named in a warning. A
probe with dmax: auto, the connector's or the processor's, is read at its
dmax_max, the layout it has until it has learnt its delays: the collector
chooses its dMax on a timer, by the time that passed, which the reading
of a file does not repeat. The exporter's OTLP settings are not used. A probe
the diagram or the probes name one slip away from a probe of a deltaq
processor of the pipelines, or of one the connector matches, is refused as
misspelled, as the collector refuses it. The configuration
is read as the collector reads it: --config may be repeated, the files
merged in order (maps key by key, a list replaced whole), and
${env:NAME}, ${env:NAME:-default}, ${NAME} and ${file:PATH} are expanded.

Every form the file exporter writes is read, told apart by the content:
format json (one ExportTraceServiceRequest per line; documents laid out in
any other way, such as one indented document, are read too) and format
proto, each with or without compression zstd (records preceded by their
length), and the whole-file zstd stream of its native compression; so is
one protobuf ExportTraceServiceRequest without a length before it (an
OTLP/HTTP request body saved to a file), plain or in a zstd stream, and
the OTLP JSON of a trace that Tempo ("batches" or "trace", its
/api/traces/ID and /api/v2/traces/ID) and Jaeger's API v3 ("result")
return, with trace and span ids in hex or, as Tempo writes them, base64. Other JSON (Jaeger's own, Zipkin's,
OTLP of before scopeSpans, objects without resourceSpans) is refused,
naming its line. A file compressed with gzip is read as the file it holds
(with --compression auto).
--format json|proto and --compression none|zstd force what detection would
choose. A last record cut short (a collector stopped while writing) is
reported with its record number and byte offset, and the records before it
are analysed. A file without traces (a collector stopped before any) is
reported and skipped when other files have some.

The input is streamed: each record goes (through the processor) into the
analysis before the next is read, so memory holds one record and the
analysis, whatever the size of the files; a line or record may be up to
64 MiB long (--max-record), and so may a JSON document laid out over
several lines. Errors
name the file and the line, as FILE:LINE, or the record and its byte offset.
A file named - is standard input (zstdcat traces.zst | deltaq analyze ... -).
A file named twice, by one path or by two (x and ./x, a symbolic link), is
refused: its spans would count twice.

Windows: the instances are counted into windows of the configured interval
(--interval overrides it) by their end time, aligned on multiples of the
interval since the Unix epoch, as the collector counts them; the latest
end of an instance read (a span that a probe matches or the processor
maps: other spans do not move it) stands for the clock, so a window closes
once instances ending the configured lag (--lag overrides it; default one
interval) after it have been read. A first line gives the instances counted and the
earliest and latest of their ends; then a table gives, for each
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

A probe with a qoo requirement gets its Quality of Outcome, in each window
(the table's qoo column) and for the whole input (its qoo line: the
observed and calculated scores with their components, or withheld for too
few completed instances). The rate that min_rate is checked against is the
completed instances over the sampling period: a window's interval (for the
last window, which the input ends in, up to the last instance's end), and for
the whole input the time from the first instance's start to the last
instance's end (a timeout ending at its start + dMax), which holds every
instance whole; 10 instances starting 100 ms apart, each 50 ms long, are
10 over 0.95 s.

--json prints {"window": {"start", "end"} (the earliest and latest instance
end), "counted", "probes": {NAME: {"count", "success", "timeout",
"failure", "quantiles": {"0.5": seconds or null, …}, "failure_ratio",
"qta": {"pass", …}, "calculated_quantiles", "divergence", "qoo":
{"observed": {"score", "latency", "loss", "rate"}, "observed_withheld",
"calculated", "calculated_withheld"}}}, "interval", "windows": [{"start",
"end", "probes": {NAME: {"count", "success", "timeout", "failure",
"quantiles", "failure_ratio", "qta_pass", "divergence", "qoo"}}}],
"unmatched": {"spans", "span_names": [{"name", "count"}], …}};
failure_ratio and qta are null for a probe without instances, qta is
absent for a probe without a QTA, qoo for a probe without a qoo
requirement.

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
JSON way.`

// analyzeCommand is the analyze command's entry of the command table.
func analyzeCommand() command {
	return command{
		name:    "analyze",
		usage:   "analyze --config FILE.yaml... [--json] [--plot DIR] [--interval D] [--lag D] [--processor ID] [--exporter ID | --connector ID] [--format F] [--compression C] [--max-record MiB] TRACES...",
		summary: "analyse recorded traces as the deltaq connector (or processor and exporter) would",
		help:    analyzeHelp,
		run:     parsed(parseAnalyzeArgs, runAnalyze),
	}
}

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
	case len(o.cfg.Paths) == 0:
		return o, fs.usageError("--config is required"), false
	case len(files) == 0:
		return o, fs.usageError("no trace files"), false
	case *format != "auto" && *format != "json" && *format != "proto":
		return o, fs.usageError("--format %q: want auto, json or proto", *format), false
	case *compression != "auto" && *compression != "none" && *compression != "zstd":
		return o, fs.usageError("--compression %q: want auto, none or zstd", *compression), false
	case o.interval < 0 || o.interval == 0 && fs.given("interval"):
		return o, fs.usageError("--interval %s: want a positive duration", o.interval), false
	case o.lag < 0 || o.lag == 0 && fs.given("lag"):
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

func runAnalyze(o analyzeOptions, stdout, stderr io.Writer) int {
	fail := failure("analyze", stderr)
	loaded, err := o.cfg.Load()
	if err != nil {
		return fail(err)
	}
	if err := loaded.WithWindows(o.interval, o.lag); err != nil {
		return fail(err)
	}
	acfg := loaded.Analysis
	an, proc, err := offline.NewAnalysis(loaded, acfg)
	if err != nil {
		return fail(err)
	}
	if idle := loaded.Idle; len(idle) > 0 {
		fmt.Fprintf(stderr, "deltaq analyze: warning: %s: %s, which %s it, %s given no spans here: one processor maps them (--processor), and the instances of the probes of %s are not counted\n",
			printable(loaded.Where), plural(len(idle), "the deltaq processor", "the deltaq processors")+" "+printable(strings.Join(idle, ", ")),
			plural(len(idle), "feeds", "feed"), plural(len(idle), "is", "are"), plural(len(idle), "that one", "those"))
	}
	if un := an.Unproduced(); len(un) > 0 {
		fmt.Fprintf(stderr, "deltaq analyze: warning: %s: nothing of the configuration counts %s (no deltaq processor's probe, none the connector matches): %s\n",
			printable(loaded.Where), plural(len(un), "this probe of the diagram or probes", "these probes of the diagram or probes"), printable(strings.Join(un, ", ")))
	}
	ctx := context.Background()
	rep := report.New(&acfg.Config)
	an.OnWindow(rep.AddWindow, rep.Quantiles()...)
	// Each record goes through the processor into the analysis before the
	// next is read: memory holds one record and the analysis state.
	warnings, err := tracefile.ReadFiles(o.files, o.trace, func(td ptrace.Traces) error {
		rep.AddSpans(td)
		return proc.ConsumeTraces(ctx, td)
	})
	if serr := proc.Shutdown(ctx); serr != nil && err == nil && loaded.Proc != nil {
		// Only the processor's shutdown fails.
		err = fmt.Errorf("%s: %w", loaded.Proc.Where, serr)
	}
	if err != nil {
		return fail(err)
	}
	if rep.SpansRead() == 0 {
		// JSON that is not OTLP ({"foo": 1}) reads as requests without
		// spans: say so, rather than report an analysis of nothing.
		warnings = append(warnings, "the files hold no span: an OTLP trace file holds resourceSpans, as the collector's file exporter writes them")
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "deltaq analyze: warning: %s\n", printableLines(w))
	}
	whole, stats := an.Result()
	rep.Finish(whole, stats, an.WindowStats())
	if err := writeAnalysis(rep, &o, stdout, stderr); err != nil {
		return fail(err)
	}
	return exitOK
}

// writeAnalysis writes the report: the plots to o.plotDir, if asked, then
// the tables (or JSON) to stdout, and the files written to stdout, or to
// stderr under --json.
func writeAnalysis(rep *report.Report, o *analyzeOptions, stdout, stderr io.Writer) error {
	var written []string
	if o.plotDir != "" {
		var err error
		if written, err = rep.WritePlots(o.plotDir); err != nil {
			return err
		}
	}
	listed := stdout
	if o.json {
		if err := rep.WriteJSON(stdout); err != nil {
			return err
		}
		listed = stderr
	} else {
		rep.WriteText(stdout)
	}
	listFiles(listed, written)
	return nil
}
