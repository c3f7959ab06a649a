// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package report is what deltaq analyze reports of recorded traces, from
// the analysis the collector's components make of them
// (core.OfflineAnalysis): a table of the windows with instances
// (counts, quantiles, QTA verdict, divergence, Quality of Outcome), the
// whole input as one window, the triggers, or, when no span matched any
// probe, the most frequent span names read; as text, as JSON, and as plots
// (package figure). It also writes the Quality of Outcome scores as eval
// and whatif print them. Names from span data are escaped in the text and
// the plot titles (package printable); JSON escapes them its own way.
package report

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

// MaxWindowRows bounds the windows kept for the table, --json and the
// plots; later windows are analysed (and count in the whole input) but
// only counted.
const MaxWindowRows = 10000

// tableQuantiles returns the quantiles of the window table: the median and
// the 0.95 quantile, or the configured quantiles when they are not the
// defaults.
func tableQuantiles(configured []float64) []float64 {
	if len(configured) == 0 || slices.Equal(configured, analysis.DefaultQuantiles) {
		return []float64{0.5, 0.95}
	}
	return configured
}

// Report gathers what analyze prints and plots: the whole input's
// analysis, and what it keeps of each window with instances (at most
// MaxWindowRows) and of the span names read.
type Report struct {
	cfg   *analysis.Config
	qs    []float64 // the quantiles of the windows
	whole *analysis.Result
	// stats are the whole input's instance counters, windowStats those of
	// the windows.
	stats, windowStats analysis.Stats
	rows               []windowRow
	// empty counts the windows closed without any instance after the
	// first with instances, notKept the windows with instances beyond
	// MaxWindowRows.
	empty, notKept int
	// bands holds the latest 95 % band of each probe.
	bands map[string]*deltaq.ConfidenceBand
	names spanNames
}

// New returns the report of an analysis configured by cfg.
func New(cfg *analysis.Config) *Report {
	return &Report{cfg: cfg, qs: tableQuantiles(cfg.Quantiles), bands: map[string]*deltaq.ConfidenceBand{}}
}

// Quantiles returns the quantiles of the window table, for the windows'
// analysis to read from their counts (core.OfflineAnalysis.OnWindow).
func (r *Report) Quantiles() []float64 { return slices.Clone(r.qs) }

// windowQuantile returns p's q-quantile in seconds, NaN when unreachable:
// the analysis's, read from the window's counts, when it read q; else from
// the window's Analysis ΔQ, on a grid that can be coarser than the counts.
func windowQuantile(p *analysis.ProbeResult, q float64) float64 {
	for _, v := range p.Quantiles {
		if v.Q == q {
			if !v.ObservedOK {
				return math.NaN()
			}
			return v.Observed
		}
	}
	v, ok := p.Analysis.Quantile(q)
	if !ok {
		return math.NaN()
	}
	return v
}

// Finish gives the report the whole input's analysis and instance counters
// (stats), and those of the windows, once the input is read.
func (r *Report) Finish(whole *analysis.Result, stats, windowStats analysis.Stats) {
	r.whole, r.stats, r.windowStats = whole, stats, windowStats
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
	// quantiles are at Report.qs, in seconds; NaN: unreachable.
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

// AddWindow keeps what the report needs of a closed window: the function
// the analysis calls with each (core.OfflineAnalysis.OnWindow).
func (r *Report) AddWindow(res *analysis.Result) {
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
			wp.quantiles[j] = windowQuantile(p, q)
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
	case len(r.rows) >= MaxWindowRows:
		r.notKept++
	default:
		r.rows = append(r.rows, row)
	}
}

// unmatched reports whether no span matched any probe: nothing counted,
// nothing dropped.
func (r *Report) unmatched() bool {
	return r.stats.Counted == 0 && r.stats.Dropped.Total() == 0
}

// tooLate returns the instances the windows dropped beyond the whole
// input's drops: those that ended in a window already closed.
func (r *Report) tooLate() int64 {
	return r.windowStats.Dropped[analysis.DropTooLate]
}

// formatQ formats a quantile as a JSON key and in text.
func formatQ(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// textTime writes a time in the text output, in UTC.
func textTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
