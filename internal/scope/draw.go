// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// How the scope draws what it collected: one text frame per redraw.

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// Frame sets the size of each probe's plot in the terminal scope.
type Frame struct {
	Width  int // columns, in [8, 1000]
	Height int // rows, in [3, 200]; 17 puts a row on every quarter
}

// DefaultFrame is the plot size of the terminal scope by default.
var DefaultFrame = Frame{Width: 64, Height: 17}

// Validate reports a size outside its range.
func (o Frame) Validate() error {
	if o.Width < 8 || o.Width > 1000 {
		return fmt.Errorf("--width %d: want a plot width in [8, 1000] columns", o.Width)
	}
	if o.Height < 3 || o.Height > 200 {
		return fmt.Errorf("--height %d: want a plot height in [3, 200] rows", o.Height)
	}
	return nil
}

// plotIndent is the width of the labels left of a plot (" 0.75 │").
const plotIndent = 7

// fitWidth narrows the plots to a terminal of cols columns (at least 8
// wide): a row wider than the terminal wraps into two, the curves lost
// in the breaks. Unknown (0) columns leave them as they are.
func (o Frame) fitWidth(cols int) Frame {
	if cols > 0 && o.Width > cols-plotIndent {
		o.Width = max(8, cols-plotIndent)
	}
	return o
}

// Marks of the plot, drawn in this order so that later ones cover earlier ones:
// the band between the lower and upper bounds, the mean, the QTA, the calculated
// ΔQ and on top the observed ΔQ.
const (
	markBand       = '.'
	markMean       = '+'
	markQTA        = '='
	markCalculated = '*'
	markObserved   = '#'
)

// renderScope returns one frame of the scope: a header, then for every probe (by
// name) its state line, its ΔQ plot and quantile table, then the latest
// triggers. It reads s and nothing else: a frame depends only on the data
// received and, for the dates it shows (stamp), on the scope's clock. Every string that came from the network (probe names, outcome and
// series values, trigger attributes) is shown through printable, so that no
// sender can move the cursor, clear the screen or retitle the terminal.
func renderScope(s *scopeState, o Frame) string {
	today := s.now()
	var b strings.Builder
	fmt.Fprintf(&b, "ΔQ scope · %d probes · %d metric batches · %d triggers · %d snapshots\n",
		len(s.probes), s.metricBatches, s.triggersSeen, s.snapshots)
	if s.malformed > 0 {
		fmt.Fprintf(&b, "ignored %d malformed data points (no deltaq.probe, bad deltaq.le/deltaq.q, non-finite value, QTA probability, failure ratio or divergence outside [0, 1], negative outcome count, QoO score outside [0, 100] or of an unknown series, or a timestamp more than --max-ahead ahead of this machine's clock), snapshot records (no deltaq.snapshot.id) or trigger records (stamped more than --max-ahead ahead of this machine's clock)\n", s.malformed)
	}
	if line := cutsLine(s.cuts); line != "" {
		b.WriteString(line + "\n")
	}
	if line := silentLine(s, today); line != "" {
		b.WriteString(line + "\n")
	}
	if len(s.probes) == 0 {
		b.WriteString("\nwaiting for deltaq metrics…\n")
	}
	names := make([]string, 0, len(s.probes))
	for name := range s.probes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.WriteByte('\n')
		renderProbe(&b, name, s.probes[name], o, today)
	}
	b.WriteString("\ntriggers")
	if len(s.triggers) == 0 {
		b.WriteString(": none\n")
		return b.String()
	}
	fmt.Fprintf(&b, " (latest %d, newest last):\n", len(s.triggers))
	for _, t := range s.triggers {
		fmt.Fprintf(&b, "  %s %-5s %s %s", stamp(t.at, today), printable.String(t.severity), printable.String(t.probe), printable.String(t.kind))
		for _, d := range t.details {
			b.WriteString(" " + printable.String(d))
		}
		b.WriteByte('\n')
		if len(t.links) > 0 {
			b.WriteString("    traces:")
			for _, l := range t.links {
				b.WriteString(" " + printable.String(l))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// silentLine says that no metrics came for three of the connector's
// intervals (at least 5 s), or is empty: else the last frame stands as if
// the windows still came.
func silentLine(s *scopeState, now time.Time) string {
	gap := now.Sub(s.lastBatch)
	if s.interval == 0 || gap < max(3*s.interval, 5*time.Second) {
		return ""
	}
	return fmt.Sprintf("no metrics for %v, where a window came every %v: has the collector stopped, or stopped sending here?",
		gap.Round(time.Second), s.interval)
}

// cutsLine names what the bounds cut (Limits), or is empty when nothing was.
func cutsLine(c cuts) string {
	var parts []string
	for _, n := range []struct {
		count int
		what  string
	}{
		{c.ProbesRefused, "data points of probes without a slot (--max-probes)"},
		{c.ProbesExpired, "silent probes expired (--probe-ttl)"},
		{c.SeriesRefused, "data points of series beyond --max-series"},
		{c.PointsCut, "points beyond --max-points"},
		{c.NamesRefused, "data points with names beyond --max-name"},
		{c.AttrsCut, "trigger attributes cut (--max-attr)"},
	} {
		if n.count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.count, n.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "bounds cut: " + strings.Join(parts, ", ")
}

// stamp writes t in UTC to the millisecond: its time of day when it is on
// today's date (UTC), else with its date too, so that a window or trigger
// of another day does not pass for one of today.
func stamp(t, today time.Time) string {
	if sameDay(t, today) {
		return t.UTC().Format("15:04:05.000Z")
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// sameDay reports whether a and b are on the same date (UTC).
func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}

// renderProbe draws one probe's window; today is the scope's clock (stamp).
func renderProbe(b *strings.Builder, name string, p *probeView, o Frame, today time.Time) {
	fmt.Fprintf(b, "── %s ── window ending %s\n", printable.String(name), stamp(p.updated, today))
	b.WriteString(probeStateLine(p) + "\n")
	if len(p.outcomes) > 0 {
		b.WriteString(totalsLine(outcomesAt(p.outcomes, p.updated), p.updated) + "\n")
	}
	if p.qta.exact() {
		b.WriteString(qtaLine(p.qta) + "\n")
	}
	if line := qooLine(p.qoo); line != "" {
		b.WriteString(line + "\n")
	}
	renderPlot(b, p.curves, p.qta, o)
	renderQuantiles(b, p.quantiles)
}

// qtaLine states a QTA received exactly: the probability required by each
// delay, then the failure bound.
func qtaLine(q qtaReading) string {
	parts := make([]string, 0, len(q.points)+1)
	for _, pt := range q.points {
		parts = append(parts, fmt.Sprintf("F(%s) ≥ %s", distribution.FormatDuration(pt.delay), strconv.FormatFloat(pt.p, 'g', -1, 64)))
	}
	if q.maxFailure.ok {
		parts = append(parts, fmt.Sprintf("failure ≤ %s%%", strconv.FormatFloat(100*q.maxFailure.v, 'g', 4, 64)))
	}
	return "QTA: " + strings.Join(parts, ", ")
}

// qtaSteps is the QTA curve a plot of dMax xmax draws for a QTA received
// exactly: its points up to xmax, then the failure bound as a last step at
// xmax (deltaq.QTA.RequiredSteps, the curve the connector samples into
// deltaq.cdf). ok is false when the QTA is not a valid one.
func qtaSteps(q qtaReading, xmax float64) (steps []curvePoint, ok bool) {
	dq := deltaq.QTA{Points: make([]deltaq.Step, len(q.points)), MaxFailure: q.maxFailure.v}
	for i, pt := range q.points {
		dq.Points[i] = deltaq.Step{Delay: pt.delay, P: pt.p}
	}
	required, err := dq.RequiredSteps(xmax)
	if err != nil {
		return nil, false
	}
	for _, st := range required {
		steps = append(steps, curvePoint{delay: st.Delay, p: st.P})
	}
	return steps, true
}

// probeStateLine is a probe's QTA state, failure ratio, divergence and the
// outcome counts of its window (countsText), "–" when they are not known:
// the scope did not receive the window before it to count from.
func probeStateLine(p *probeView) string {
	var state []string
	switch {
	case !p.violation.ok:
		state = append(state, "QTA -")
	case p.violation.v > 0:
		state = append(state, "QTA BROKEN")
	default:
		state = append(state, "QTA met")
	}
	if p.failure.ok {
		state = append(state, "failure "+percentText(p.failure.v)+"%")
	}
	if p.divergence.ok {
		state = append(state, fmt.Sprintf("divergence %.3f", p.divergence.v))
	}
	if len(p.outcomes) > 0 {
		o := outcomesAt(p.outcomes, p.updated)
		in := "– (no window before it to count from)"
		if len(o.window) > 0 {
			in = countsText(o.window)
		}
		state = append(state, "in window: "+in)
	}
	return strings.Join(state, " │ ")
}

// percentText writes a ratio in [0, 1] as a percentage to two decimals,
// with more digits where two would round it to 0 or 100 and it is neither
// (app.js's percentText alike): a failure ratio of 0.003 % under a QTA
// that allows 0.001 % read "failure 0.00%" beside "QTA BROKEN".
func percentText(v float64) string {
	x := 100 * v
	s := strconv.FormatFloat(x, 'f', 2, 64)
	switch {
	case v > 0 && s == "0.00":
		return strconv.FormatFloat(x, 'g', 2, 64)
	case v < 1 && s == "100.00":
		for d := 3; d <= 10 && strings.TrimRight(s, "0") == "100."; d++ {
			s = strconv.FormatFloat(x, 'f', d, 64)
		}
	}
	return s
}

// totalsLine states the cumulative outcome counts of a window, since the
// stream's start when the connector sent it: at its time of day when it is
// on the window's day (UTC), else with its date.
func totalsLine(o windowOutcomes, end time.Time) string {
	since := ""
	if !o.since.IsZero() {
		layout := "2006-01-02 15:04:05Z"
		if sameDay(o.since, end) {
			layout = "15:04:05Z"
		}
		since = " since " + o.since.UTC().Format(layout)
	}
	return "total" + since + ": " + countsText(o.totals)
}

// countsText lists outcome counts by kind: success, timeout and failure
// first, then any other by name.
func countsText(counts map[string]float64) string {
	kinds := slices.Collect(maps.Keys(counts))
	rank := map[string]int{contract.Success: 0, contract.Timeout: 1, contract.Failure: 2}
	sort.Slice(kinds, func(i, j int) bool {
		ri, iok := rank[kinds[i]]
		rj, jok := rank[kinds[j]]
		if iok != jok {
			return iok
		}
		if ri != rj {
			return ri < rj
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %s", printable.String(k), strconv.FormatFloat(counts[k], 'f', -1, 64)))
	}
	return strings.Join(parts, ", ")
}

// renderPlot draws the CDF curves against delay, with the QTA received
// exactly in place of the sampled QTA curve when there is one. Column c stands for the delay
// x_c = xmax·(c+1)/width, so the last column is the largest delay received (dMax);
// row r for probability 1 − r/(height−1). ΔQ curves are linear between their
// points (mass is uniform within a bin) and start at F(0) = 0; the QTA is a step
// function and holds its value until its next point.
func renderPlot(b *strings.Builder, curves map[string][]curvePoint, qta qtaReading, o Frame) {
	xmax := 0.0
	for _, pts := range curves {
		for _, pt := range pts {
			xmax = math.Max(xmax, pt.delay)
		}
	}
	if xmax <= 0 {
		b.WriteString("  (no CDF points in this window)\n")
		return
	}
	if qta.exact() {
		if steps, ok := qtaSteps(qta, xmax); ok {
			curves = maps.Clone(curves)
			curves[seriesQTA] = steps
		}
	}
	grid := plotCurves(curves, xmax, o)
	for r := range grid {
		label := ""
		if p := 1 - float64(r)/float64(o.Height-1); r == 0 || r == o.Height-1 || isQuarter(p) {
			label = strconv.FormatFloat(p, 'f', 2, 64)
		}
		fmt.Fprintf(b, "%5s │%s\n", label, strings.TrimRight(string(grid[r]), " "))
	}
	b.WriteString("      └" + strings.Repeat("─", o.Width) + "\n")
	renderDelayAxis(b, xmax, o.Width)
	renderLegend(b, curves)
}

// plotCurves returns the plot's grid of height rows of width marks (see
// renderPlot), with the curves drawn in the order of the marks.
func plotCurves(curves map[string][]curvePoint, xmax float64, o Frame) [][]rune {
	w, h := o.Width, o.Height
	grid := make([][]rune, h)
	for r := range grid {
		grid[r] = []rune(strings.Repeat(" ", w))
	}
	row := func(p float64) int {
		if !(p >= 0) { // also NaN, from hostile deltaq.le values
			p = 0
		}
		p = math.Min(1, p)
		return int(math.Round((1 - p) * float64(h-1)))
	}
	x := func(c int) float64 { return xmax * float64(c+1) / float64(w) }

	if lo, up := curves[seriesLower], curves[seriesUpper]; len(lo) > 0 && len(up) > 0 {
		for c := 0; c < w; c++ {
			top, bottom := row(linearCDF(up, x(c))), row(linearCDF(lo, x(c)))
			for r := min(top, bottom); r <= max(top, bottom); r++ {
				grid[r][c] = markBand
			}
		}
	}
	trace := func(pts []curvePoint, at func([]curvePoint, float64) float64, mark rune) {
		if len(pts) == 0 {
			return
		}
		prev := row(0)
		for c := 0; c < w; c++ {
			r := row(at(pts, x(c)))
			// Join to the previous column's row (exclusive) so that steep
			// rises stay visible.
			for rr := min(prev, r); rr <= max(prev, r); rr++ {
				if rr != prev || rr == r {
					grid[rr][c] = mark
				}
			}
			prev = r
		}
	}
	trace(curves[seriesMean], linearCDF, markMean)
	trace(curves[seriesQTA], stepCDF, markQTA)
	trace(curves[seriesCalculated], linearCDF, markCalculated)
	trace(curves[seriesObserved], linearCDF, markObserved)
	return grid
}

// renderDelayAxis writes the delay labels under a plot of width columns:
// under the first column's left edge (0), the middle and the end (xmax).
// A label is written only with a space between it and the others, the end
// first, then 0, then the middle: under a narrow plot they ran into one
// another and read as other numbers ("54001.08e+04s" for 5400s and
// 1.08e+04s, "012.525us" for 0, 12.5us and 25us).
func renderDelayAxis(b *strings.Builder, xmax float64, width int) {
	axis := []rune(strings.Repeat(" ", width+7))
	var taken [][2]int // the columns [from, to) of the labels written
	put := func(col int, s string) {
		n := len([]rune(s))
		col = max(0, min(col, len(axis)-n))
		for _, t := range taken {
			if col < t[1]+1 && t[0] < col+n+1 {
				return
			}
		}
		taken = append(taken, [2]int{col, col + n})
		copy(axis[col:], []rune(s))
	}
	end := distribution.FormatDuration(xmax)
	put(7+width-len([]rune(end)), end)
	put(6, "0")
	mid := distribution.FormatDuration(xmax / 2)
	put(7+width/2-1-len([]rune(mid))/2, mid)
	b.WriteString(strings.TrimRight(string(axis), " ") + "\n")
}

// renderLegend names the marks of the curves present.
func renderLegend(b *strings.Builder, curves map[string][]curvePoint) {
	var legend []string
	for _, s := range []struct {
		series string
		text   string
	}{
		{seriesObserved, "# observed"},
		{seriesCalculated, "* calculated"},
		{seriesMean, "+ mean"},
		{seriesLower, ". 95% band"},
		{seriesQTA, "= QTA"},
	} {
		if len(curves[s.series]) > 0 {
			legend = append(legend, s.text)
		}
	}
	b.WriteString("       " + strings.Join(legend, "   ") + "\n")
}

// isQuarter reports whether p is (to rounding) a multiple of 0.25.
func isQuarter(p float64) bool {
	return math.Abs(p*4-math.Round(p*4)) < 1e-9
}

// linearCDF evaluates a ΔQ's CDF at t from its points: linear between points,
// from F(0) = 0 to the first point, and constant after the last (the intangible
// mass never arrives).
func linearCDF(pts []curvePoint, t float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].delay >= t })
	switch {
	case i == len(pts):
		return pts[len(pts)-1].p
	case pts[i].delay == t:
		return pts[i].p
	}
	x0, y0 := 0.0, 0.0
	if i > 0 {
		x0, y0 = pts[i-1].delay, pts[i-1].p
	}
	if pts[i].delay <= x0 {
		return pts[i].p
	}
	return y0 + (pts[i].p-y0)*(t-x0)/(pts[i].delay-x0)
}

// stepCDF evaluates a step CDF (a QTA) at t: the value of the last point at or
// before t, and 0 before the first.
func stepCDF(pts []curvePoint, t float64) float64 {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].delay > t })
	if i == 0 {
		return 0
	}
	return pts[i-1].p
}

// renderQuantiles prints one row per series and one column per quantile.
func renderQuantiles(b *strings.Builder, quantiles map[string]map[float64]float64) {
	if len(quantiles) == 0 {
		return
	}
	var qs []float64
	var series []string
	for s, m := range quantiles {
		series = append(series, s)
		for q := range m {
			if !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
	}
	sort.Float64s(qs)
	sort.Slice(series, func(i, j int) bool {
		ri, rj := slices.Index(seriesOrder, series[i]), slices.Index(seriesOrder, series[j])
		if ri < 0 {
			ri = len(seriesOrder)
		}
		if rj < 0 {
			rj = len(seriesOrder)
		}
		if ri != rj {
			return ri < rj
		}
		return series[i] < series[j]
	})
	fmt.Fprintf(b, "  %-10s", "quantile")
	for _, q := range qs {
		fmt.Fprintf(b, " %9s", strconv.FormatFloat(q, 'g', -1, 64))
	}
	b.WriteByte('\n')
	for _, s := range series {
		fmt.Fprintf(b, "  %-10s", printable.String(s))
		for _, q := range qs {
			cell := "-"
			if v, ok := quantiles[s][q]; ok {
				cell = distribution.FormatDuration(v)
			}
			fmt.Fprintf(b, " %9s", cell)
		}
		b.WriteByte('\n')
	}
}
