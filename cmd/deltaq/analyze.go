// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// The analyze subcommand: offline ΔQ analysis of recorded traces with the
// collector's own components. The deltaq processor, built by its factory from
// the processors.deltaq section of a collector configuration, maps the spans
// to outcome instances; the deltaq exporter's analysis, configured from the
// exporters.deltaq section, turns the whole input into one window.

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processortest"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/dist"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/observer"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

func init() {
	register(command{
		name:    "analyze",
		usage:   "analyze --config FILE.yaml [--json] [--plot DIR] [--processor ID] [--exporter ID] TRACES.json...",
		summary: "analyse recorded traces as the deltaq processor and exporter would",
		help: `Analyze reads traces written by the collector's file exporter (OTLP JSON: one
ExportTraceServiceRequest per line, or documents laid out in any other way,
such as one indented document) and analyses them with the collector's own
components, configured from a collector configuration file: the deltaq
processor of the processors section (--processor, default "deltaq") maps the
spans to outcome instances, and the analysis of the deltaq exporter of the
exporters section (--exporter, default "deltaq") — its probes, QTAs,
quantiles and outcome diagram — treats the whole input as one window. The
exporter's OTLP settings are not used.

The input is streamed: each line goes through the processor into the analysis
before the next is read, so memory holds one line and the analysis, whatever
the size of the files; a line may be up to 64 MiB long. A file that is not
one document per line (its first line is not a whole JSON value) is read one
document at a time instead: each document is held whole, up to 1 GiB. Errors
name the file and the line, as FILE:LINE.

For every probe it prints the instances by outcome, the quantiles of the
observed ΔQ ("unreachable" when the failures leave a quantile out of reach),
the failure ratio, the QTA verdict, and, where the diagram calculates the
probe, the calculated quantiles and the divergence sup |F_obs − F_calc|.

--json prints {"probes": {NAME: {"count", "success", "timeout", "failure",
"quantiles": {"0.5": seconds or null, …}, "failure_ratio", "qta": {"pass", …},
"calculated_quantiles", "divergence"}}}; failure_ratio and qta are null for a
probe without instances, qta is absent for a probe without a QTA.

--plot DIR writes DIR/PROBE.png for every probe with instances: the observed
CDF, the calculated CDF and the QTA on one plot, like the thesis's figures.
The file names keep letters, digits, '.', '-' and '_' of the probe name.

Control characters, invalid UTF-8 and bidirectional overrides in probe names
(which may come from span data) are shown as Go escapes (\x1b, \u202e) in the
text output and the plot titles; --json escapes them the JSON way.`,
		run: runAnalyze,
	})
}

func runAnalyze(args []string, stdout, stderr io.Writer) int {
	c := commands["analyze"]
	fs := newFlags(&c, stderr)
	cfgPath := fs.String("config", "", "collector configuration `FILE` (YAML) with the deltaq processor and exporter")
	asJSON := fs.Bool("json", false, "print JSON")
	plotDir := fs.String("plot", "", "write one PNG per probe into `DIR`")
	procID := fs.String("processor", "deltaq", "component `ID` of the deltaq processor in the processors section")
	expID := fs.String("exporter", "deltaq", "component `ID` of the deltaq exporter in the exporters section")
	files, status, ok := parseArgs(fs, args)
	if !ok {
		return status
	}
	if *cfgPath == "" {
		return fs.usageError("--config is required")
	}
	if len(files) == 0 {
		return fs.usageError("no trace files")
	}
	fail := func(err error) int {
		// Errors quote the input (the JSON unmarshaler shows the bytes
		// around a syntax error): escape them like the output.
		fmt.Fprintf(stderr, "deltaq analyze: %s\n", printableLines(err.Error()))
		return exitFail
	}

	pcfg, ecfg, err := loadCollectorConfig(*cfgPath, *procID, *expID)
	if err != nil {
		return fail(err)
	}
	// The analysis is made once the processor has started, as in a
	// collector, where the exporter's analysis learns the probes the
	// processors of the process configure (internal/outcome's registry).
	var an *observer.OfflineAnalysis
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		return an.ConsumeTraces(ctx, td)
	})
	if err != nil {
		return fail(err)
	}
	proc, err := newProcessor(pcfg, next)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	if an, err = observer.NewOfflineAnalysis(&ecfg.Config); err != nil {
		_ = proc.Shutdown(ctx)
		return fail(fmt.Errorf("%s: exporters::%s: %w", *cfgPath, *expID, err))
	}
	// Each document goes through the processor into the analysis before
	// the next is read: memory holds one document and the analysis state.
	for _, f := range files {
		err = readTraceFile(f, maxTraceLine, maxTraceDocument, func(td ptrace.Traces) error {
			if err := proc.ConsumeTraces(ctx, td); err != nil {
				return fmt.Errorf("deltaq processor: %w", err)
			}
			return nil
		})
		if err != nil {
			break
		}
	}
	if serr := proc.Shutdown(ctx); serr != nil && err == nil {
		err = fmt.Errorf("deltaq processor: %w", serr)
	}
	if err != nil {
		return fail(err)
	}
	res, stats := an.Result()
	if *plotDir != "" {
		if err := writePlots(*plotDir, res); err != nil {
			return fail(err)
		}
	}
	if *asJSON {
		return writeAnalysisJSON(stdout, stderr, res, stats)
	}
	writeAnalysisText(stdout, res, stats)
	return exitOK
}

// loadCollectorConfig reads the processor and exporter sections of a
// collector configuration into the components' own configuration structs.
func loadCollectorConfig(path, procID, expID string) (proc any, exp *deltaqexporter.Config, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := confmap.NewRetrievedFromYAML(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	conf, err := r.AsConf()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	section := func(kind, id string) (*confmap.Conf, error) {
		key := kind + "::" + id
		if !conf.IsSet(key) {
			return nil, fmt.Errorf("%s: no %s section %q", path, kind, id)
		}
		return conf.Sub(key)
	}
	psub, err := section("processors", procID)
	if err != nil {
		return nil, nil, err
	}
	pcfg := deltaqprocessor.NewFactory().CreateDefaultConfig()
	if err := psub.Unmarshal(pcfg); err != nil {
		return nil, nil, fmt.Errorf("%s: processors::%s: %w", path, procID, err)
	}
	if err := confmap.Validate(pcfg); err != nil {
		return nil, nil, fmt.Errorf("%s: processors::%s: %w", path, procID, err)
	}
	esub, err := section("exporters", expID)
	if err != nil {
		return nil, nil, err
	}
	ecfg := deltaqexporter.NewFactory().CreateDefaultConfig().(*deltaqexporter.Config)
	if err := esub.Unmarshal(ecfg); err != nil {
		return nil, nil, fmt.Errorf("%s: exporters::%s: %w", path, expID, err)
	}
	// Validate would also ask for an endpoint, which an offline analysis
	// does not need; the analysis options get the one check the connector
	// and the exporter run (bounds, diagram, probes).
	if err := ecfg.Config.Check(); err != nil {
		return nil, nil, fmt.Errorf("%s: exporters::%s: %w", path, expID, err)
	}
	return pcfg, ecfg, nil
}

// newProcessor creates the deltaq processor from its factory with pcfg,
// starts it, and sends what it passes on to next.
func newProcessor(pcfg any, next consumer.Traces) (processor.Traces, error) {
	ctx := context.Background()
	f := deltaqprocessor.NewFactory()
	proc, err := f.CreateTraces(ctx, processortest.NewNopSettings(f.Type()), pcfg, next)
	if err != nil {
		return nil, fmt.Errorf("deltaq processor: %w", err)
	}
	if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
		return nil, fmt.Errorf("deltaq processor: %w", err)
	}
	return proc, nil
}

// formatQ formats a quantile as a JSON key and in text.
func formatQ(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

func writeAnalysisText(w io.Writer, r *analysis.Result, st analysis.Stats) {
	fmt.Fprintf(w, "%d instances", st.Counted)
	if d := st.Dropped.Total(); d > 0 {
		var parts []string
		for reason, n := range st.Dropped {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, analysis.DropReason(reason)))
			}
		}
		fmt.Fprintf(w, " (not counted: %s)", strings.Join(parts, ", "))
	}
	if st.Counted > 0 {
		fmt.Fprintf(w, ", ending from %s to %s", r.Start.Format("2006-01-02T15:04:05.000Z07:00"), r.End.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	fmt.Fprintln(w)
	for i := range r.Probes {
		p := &r.Probes[i]
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
	}
	for _, t := range r.Triggers {
		fmt.Fprintf(w, "\ntrigger %s on %s: observed %.4g, required %.4g\n", t.Kind, printable(t.Probe), t.Observed, t.Required)
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

func writeAnalysisJSON(stdout, stderr io.Writer, r *analysis.Result, st analysis.Stats) int {
	out := analysisJSON{Counted: st.Counted, Probes: map[string]*probeAnalysisJSON{}}
	if st.Counted > 0 {
		out.Window = &windowJSON{Start: r.Start.Format("2006-01-02T15:04:05.999999999Z07:00"), End: r.End.Format("2006-01-02T15:04:05.999999999Z07:00")}
	}
	for reason, n := range st.Dropped {
		if n > 0 {
			if out.Dropped == nil {
				out.Dropped = map[string]int64{}
			}
			out.Dropped[analysis.DropReason(reason).String()] = n
		}
	}
	for i := range r.Probes {
		p := &r.Probes[i]
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
		out.Probes[p.Name] = pj
	}
	for _, t := range r.Triggers {
		out.Trigger = append(out.Trigger, triggerAnalysisJSON{Probe: t.Probe, Trigger: t.Kind.String(), Observed: t.Observed, Required: t.Required})
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

// writePlots draws one CDF plot per probe with an observed or calculated
// ΔQ: observed (solid), calculated (dashed) and QTA (step, red), delay in
// seconds on x up to the observed ΔQ's dMax.
func writePlots(dir string, r *analysis.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	used := map[string]bool{}
	for i := range r.Probes {
		p := &r.Probes[i]
		if p.Observed == nil && p.Calculated == nil {
			continue
		}
		name := fileName(p.Name)
		for n := 2; used[name]; n++ {
			name = fileName(p.Name) + "-" + strconv.Itoa(n)
		}
		used[name] = true
		if err := plotProbe(filepath.Join(dir, name+".png"), p); err != nil {
			return fmt.Errorf("plot of %s: %w", printable(p.Name), err)
		}
	}
	return nil
}

// fileName keeps the letters, digits, '.', '-' and '_' of a probe name.
func fileName(probe string) string {
	var b strings.Builder
	for _, r := range probe {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		s = "probe"
	}
	return s
}

func plotProbe(path string, p *analysis.ProbeResult) error {
	pl := plot.New()
	pl.Title.Text = "ΔQ of " + printable(p.Name)
	pl.X.Label.Text = "delay (s)"
	pl.Y.Label.Text = "P(completed within delay)"
	pl.Y.Min, pl.Y.Max = 0, 1
	pl.Legend.Top = false
	pl.Legend.Left = false
	pl.Add(plotter.NewGrid())
	xmax := 0.0
	if p.Observed != nil {
		xmax = p.Observed.DMax()
	} else {
		xmax = p.Calculated.DMax()
	}
	pl.X.Min, pl.X.Max = 0, xmax
	add := func(label string, xys plotter.XYs, c color.Color, dashes []vg.Length) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
		pl.Add(l)
		pl.Legend.Add(label, l)
		return nil
	}
	if p.Observed != nil {
		if err := add("observed", cdfPoints(*p.Observed, xmax), color.RGBA{0x1f, 0x77, 0xb4, 0xff}, nil); err != nil {
			return err
		}
	}
	if p.Calculated != nil {
		if err := add("calculated", cdfPoints(*p.Calculated, xmax), color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, []vg.Length{vg.Points(5), vg.Points(3)}); err != nil {
			return err
		}
	}
	if p.QTA != nil {
		if err := add("QTA", qtaPoints(p.QTA, xmax), color.RGBA{0xd6, 0x27, 0x28, 0xff}, nil); err != nil {
			return err
		}
	}
	return pl.Save(6*vg.Inch, 4*vg.Inch, path)
}

// cdfPoints returns the CDF of d at 0 and at every bin edge up to xmax:
// d's CDF is linear between edges, so the polyline is exact.
func cdfPoints(d deltaq.DeltaQ, xmax float64) plotter.XYs {
	edges := d.CDFEdges(nil)
	xys := plotter.XYs{{X: 0, Y: 0}}
	w := d.Width()
	for i, f := range edges {
		x := float64(i+1) * w
		if x > xmax {
			xys = append(xys, plotter.XY{X: xmax, Y: d.CDF(xmax)})
			break
		}
		xys = append(xys, plotter.XY{X: x, Y: f})
	}
	return xys
}

// qtaPoints returns the QTA's required steps up to xmax (deltaq.QTA.RequiredSteps:
// the points, then the failure bound's step at xmax) as the corners of a
// plotted step function starting at (0, 0).
func qtaPoints(q *deltaq.QTA, xmax float64) plotter.XYs {
	xys := plotter.XYs{{X: 0, Y: 0}}
	steps, err := q.RequiredSteps(xmax)
	if err != nil {
		return xys
	}
	level := 0.0
	for _, s := range steps {
		xys = append(xys, plotter.XY{X: s.Delay, Y: level}, plotter.XY{X: s.Delay, Y: s.P})
		level = s.P
	}
	if last := xys[len(xys)-1]; last.X < xmax {
		xys = append(xys, plotter.XY{X: xmax, Y: level})
	}
	return xys
}
