// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package figure draws the plots of the command line (analyze, eval, model
// and whatif --plot) as PNG images: one implementation of the ΔQ plot
// (CDFs, dMax, 95 % band, QTA; like the thesis's figures) for all of them,
// and analyze's plot over time of each probe's quantiles and failure ratio
// per window. Delays are drawn in milliseconds. Titles are drawn as given:
// a caller escapes what came from outside (package printable).
package figure

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// Size of every plot: 960 × 576 pixels at the image canvas's 96 dots per
// inch.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 6 * vg.Inch
)

// The x range of a ΔQ plot (cdfRange): up to the delay by which every curve
// has reached rangeQuantile of its tangible mass (and beyond the last QTA
// point), plus rangeMargin; when that comes within dmaxSnap of dMax, up to
// dMax and a little beyond (dmaxOverhang), so that dMax is drawn.
const (
	rangeQuantile = 0.999
	rangeMargin   = 1.2
	dmaxSnap      = 0.8
	dmaxOverhang  = 1.05
)

// Colours of the curves (Observed for an observed or assumed ΔQ, or the one
// before a change; Calculated for a calculated or predicted one, or the one
// after), the band and the marks.
var (
	Observed       = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	Calculated     = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	colorQTA       = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	colorBand      = color.NRGBA{0x1f, 0x77, 0xb4, 0x50}
	colorDMax      = color.RGBA{0x55, 0x55, 0x55, 0xff}
	colorsQuantile = []color.Color{
		color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
		color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff}, color.RGBA{0xe3, 0x77, 0xc2, 0xff},
	}
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
)

// Curve is one CDF of a ΔQ plot, drawn solid or dashed.
type Curve struct {
	Label  string
	DQ     deltaq.DeltaQ
	Color  color.Color
	Dashed bool
}

// CDF is one ΔQ plot: the CDFs of a probe, the 95 % band of its observed
// ΔQs (drawn when Band has K ≥ 2 ΔQs: one ΔQ bounds nothing) and its QTA,
// each optional.
type CDF struct {
	Title     string
	Curves    []Curve
	Band      *deltaq.ConfidenceBand
	BandLabel string
	QTA       *deltaq.QTA
}

// cdfRange returns the x range [0, xmax] of a ΔQ plot of curves and qta, in
// seconds, the largest dMax of the curves, and whether dMax lies in the
// range (it is then drawn; else it is named in the axis label). Delays
// beyond the mass of the curves would squeeze it into the left edge: the
// range ends rangeMargin beyond the delay at which each curve reaches
// rangeQuantile of its tangible mass (failures never arrive: a curve
// stopping at 0.9 is followed to 0.9 · rangeQuantile) and beyond the QTA's
// last point. A curve without tangible mass, or no curve, shows dMax.
func cdfRange(curves []deltaq.DeltaQ, qta *deltaq.QTA) (xmax, dmax float64, dmaxShown bool) {
	hi := 0.0
	for _, d := range curves {
		dmax = max(dmax, d.DMax())
		if t := d.Tangible(); t > 0 {
			if x, ok := d.Quantile(rangeQuantile * t); ok {
				hi = max(hi, x)
			}
		}
	}
	if qta != nil {
		for _, p := range qta.Points {
			hi = max(hi, p.Delay)
		}
	}
	if hi <= 0 {
		hi = dmax
	}
	xmax = hi * rangeMargin
	if dmax > 0 && xmax >= dmax*dmaxSnap {
		return dmax * dmaxOverhang, dmax, true
	}
	return xmax, dmax, false
}

// ms converts seconds to milliseconds, the unit of the plots.
func ms(s float64) float64 { return s * 1e3 }

// newPlot returns a plot with the title and axis labels in readable sizes.
func newPlot(title, x, y string) *plot.Plot {
	pl := plot.New()
	pl.Title.Text = title
	pl.Title.TextStyle.Font.Size = vg.Points(16)
	pl.X.Label.Text, pl.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&pl.X, &pl.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(13)
		a.Tick.Label.Font.Size = vg.Points(11)
	}
	pl.Legend.TextStyle.Font.Size = vg.Points(11)
	pl.Add(plotter.NewGrid())
	return pl
}

// addLine adds a polyline to pl and to its legend (when label is set).
func addLine(pl *plot.Plot, label string, xys plotter.XYs, c color.Color, dashes []vg.Length) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(2), dashes
	pl.Add(l)
	if label != "" {
		pl.Legend.Add(label, l)
	}
	return nil
}

// DrawCDF writes the ΔQ plot p to path as a PNG image.
func DrawCDF(path string, p *CDF) error {
	pl, dmaxMS, err := cdfFigure(p)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := renderCDF(pl, dmaxMS).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cdfFigure builds the ΔQ plot p, and returns where it draws the dMax line,
// in milliseconds (0: not drawn).
func cdfFigure(p *CDF) (pl *plot.Plot, dmaxMS float64, err error) {
	dqs := make([]deltaq.DeltaQ, len(p.Curves))
	for i, c := range p.Curves {
		dqs[i] = c.DQ
	}
	xmax, dmax, dmaxShown := cdfRange(dqs, p.QTA)
	xlabel := "delay (ms)"
	if !dmaxShown && dmax > 0 {
		xlabel = fmt.Sprintf("delay (ms); dMax %s, beyond the range drawn", distribution.FormatDuration(dmax))
	}
	pl = newPlot(p.Title, xlabel, "P(completed within delay)")
	pl.X.Min, pl.X.Max = 0, ms(xmax)
	pl.Y.Min, pl.Y.Max = 0, 1.02
	pl.Legend.Top, pl.Legend.Left = false, false
	if b := p.Band; b != nil && b.K >= 2 {
		poly, err := plotter.NewPolygon(bandPoints(b, xmax))
		if err != nil {
			return nil, 0, err
		}
		poly.Color, poly.LineStyle.Width = colorBand, 0
		pl.Add(poly)
		pl.Legend.Add(p.BandLabel, poly)
	}
	for _, c := range p.Curves {
		var dashes []vg.Length
		if c.Dashed {
			dashes = dashed
		}
		if err := addLine(pl, c.Label, cdfPoints(c.DQ, xmax), c.Color, dashes); err != nil {
			return nil, 0, err
		}
	}
	if p.QTA != nil && dmax > 0 {
		if err := addLine(pl, "QTA", qtaPoints(p.QTA, dmax, xmax), colorQTA, nil); err != nil {
			return nil, 0, err
		}
	}
	if dmaxShown {
		label := "dMax " + distribution.FormatDuration(dmax)
		if err := addLine(pl, label, plotter.XYs{{X: ms(dmax), Y: 0}, {X: ms(dmax), Y: 1.02}}, colorDMax, []vg.Length{vg.Points(2), vg.Points(3)}); err != nil {
			return nil, 0, err
		}
		dmaxMS = ms(dmax)
	}
	return pl, dmaxMS, nil
}

// legendGap is the room left between the legend and the dMax line, in
// points (vg.Length's unit).
const legendGap vg.Length = 8

// renderCDF draws a ΔQ plot on a PNG canvas of plotWidth × plotHeight.
// The legend sits at the bottom right, where the curves, rising to their
// tangible mass, leave room; a dMax line drawn near the right edge (dMax is
// drawn 5 % short of it) would run through it, so the legend moves left of
// the line.
func renderCDF(pl *plot.Plot, dmaxMS float64) vgimg.PngCanvas {
	c := vgimg.PngCanvas{Canvas: vgimg.New(plotWidth, plotHeight)}
	dc := draw.New(c)
	if dmaxMS > 0 {
		// The legend's right edge is the canvas's, plus XOffs (plot.Legend
		// draws it in the canvas less the axes, whose right edge is the
		// canvas's).
		data := pl.DataCanvas(dc)
		line := data.X(pl.X.Norm(dmaxMS))
		if right := dc.Max.X; right > line-legendGap {
			pl.Legend.XOffs = line - legendGap - right
		}
	}
	pl.Draw(dc)
	return c
}

// cdfPoints returns, in milliseconds, the CDF of d at 0 and at every bin
// edge up to xmax seconds, then flat to xmax: d's CDF is linear between
// edges and constant beyond dMax, so the polyline is exact.
func cdfPoints(d deltaq.DeltaQ, xmax float64) plotter.XYs {
	edges := d.CDFEdges(nil)
	xys := plotter.XYs{{X: 0, Y: 0}}
	w := d.Width()
	for i, f := range edges {
		x := float64(i+1) * w
		if x >= xmax {
			break
		}
		xys = append(xys, plotter.XY{X: ms(x), Y: f})
	}
	return append(xys, plotter.XY{X: ms(xmax), Y: d.CDF(xmax)})
}

// bandPoints returns the 95 % band as one closed ring: the upper bound at
// the bin edges up to xmax, then the lower bound back to 0. The band, like
// a CDF, is linear between edges; beyond its last edge it stays constant.
func bandPoints(b *deltaq.ConfidenceBand, xmax float64) plotter.XYs {
	at := func(v []float64, x float64) float64 {
		// The bound at x, interpolated between the edges (0 at x = 0).
		i := x / b.Width
		k := int(i)
		if k >= len(v) {
			return v[len(v)-1]
		}
		lo := 0.0
		if k > 0 {
			lo = v[k-1]
		}
		return lo + (v[k]-lo)*(i-float64(k))
	}
	xs := []float64{0}
	for i := range b.Upper {
		x := float64(i+1) * b.Width
		if x >= xmax {
			break
		}
		xs = append(xs, x)
	}
	xs = append(xs, xmax)
	ring := make(plotter.XYs, 0, 2*len(xs))
	for _, x := range xs {
		ring = append(ring, plotter.XY{X: ms(x), Y: at(b.Upper, x)})
	}
	for i := len(xs) - 1; i >= 0; i-- {
		ring = append(ring, plotter.XY{X: ms(xs[i]), Y: at(b.Lower, xs[i])})
	}
	return ring
}

// qtaPoints returns, in milliseconds, the QTA's required steps for a ΔQ of
// dMax dmax (deltaq.QTA.RequiredSteps: the points, then the failure
// bound's step at dmax) as the corners of a step function starting at
// (0, 0) and drawn to xmax seconds.
func qtaPoints(q *deltaq.QTA, dmax, xmax float64) plotter.XYs {
	xys := plotter.XYs{{X: 0, Y: 0}}
	steps, err := q.RequiredSteps(dmax)
	if err != nil {
		return xys
	}
	level := 0.0
	for _, s := range steps {
		if s.Delay > xmax {
			break
		}
		xys = append(xys, plotter.XY{X: ms(s.Delay), Y: level}, plotter.XY{X: ms(s.Delay), Y: s.P})
		level = s.P
	}
	return append(xys, plotter.XY{X: ms(xmax), Y: level})
}

// TimeSeries is one probe's values per window, for its plot over time.
type TimeSeries struct {
	Title string
	// Interval is the windows' length: the time axis extends half of it
	// beyond the first and the last window start.
	Interval time.Duration
	// Quantiles are the quantiles; Values[i][j] is quantile Quantiles[j] of
	// window i in seconds, NaN where unreachable.
	Quantiles []float64
	Starts    []time.Time
	Values    [][]float64
	// Failure[i] is the failure ratio of window i; MaxFailure, when set,
	// the QTA's bound on it.
	Failure    []float64
	MaxFailure *float64
}

// DrawTimeSeries writes the plot over time of s to path as a PNG image: the
// quantiles per window above, the failure ratio per window below, on a
// common time axis (UTC). A quantile is drawn in runs of the windows in
// which it is reachable.
func DrawTimeSeries(path string, s *TimeSeries) error {
	top := newPlot(s.Title, "", "delay (ms)")
	bottom := newPlot("", "window start (UTC)", "failure ratio")
	format := "15:04:05"
	if n := len(s.Starts); n > 0 && s.Starts[n-1].Sub(s.Starts[0]) >= 24*time.Hour {
		format = "01-02 15:04"
	}
	x := func(i int) float64 { return float64(s.Starts[i].UnixNano()) / 1e9 }
	for _, pl := range []*plot.Plot{top, bottom} {
		pl.X.Tick.Marker = plot.TimeTicks{Format: format}
		if n := len(s.Starts); n > 0 {
			// One time range for both panels.
			pl.X.Min, pl.X.Max = x(0)-s.Interval.Seconds()/2, x(n-1)+s.Interval.Seconds()/2
		}
	}
	// Delays are high in their panel, failure ratios low in theirs.
	top.Legend.Top, top.Legend.Left = false, true
	bottom.Legend.Top, bottom.Legend.Left = true, true
	if err := drawQuantileRuns(top, s, x); err != nil {
		return err
	}
	if err := drawFailureRatio(bottom, s, x); err != nil {
		return err
	}
	img := vgimg.New(plotWidth, plotHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Points(8), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(12)}
	cs := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(cs[0][0])
	bottom.Draw(cs[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// drawQuantileRuns draws each quantile over the windows on the top panel,
// one line per run of windows that have it (an unreachable quantile, NaN,
// breaks the line), and scales the delay axis from 0 to 1.1 × the peak.
func drawQuantileRuns(top *plot.Plot, s *TimeSeries, x func(int) float64) error {
	top.Y.Min = 0
	qpeak := 0.0
	for j, q := range s.Quantiles {
		c := colorsQuantile[j%len(colorsQuantile)]
		label := "q " + strconv.FormatFloat(q, 'g', -1, 64)
		var run plotter.XYs
		flush := func() error {
			if len(run) == 0 {
				return nil
			}
			err := addPointsLine(top, label, run, c)
			label, run = "", nil
			return err
		}
		for i := range s.Starts {
			v := s.Values[i][j]
			if math.IsNaN(v) {
				if err := flush(); err != nil {
					return err
				}
				continue
			}
			run = append(run, plotter.XY{X: x(i), Y: ms(v)})
			qpeak = max(qpeak, v)
		}
		if err := flush(); err != nil {
			return err
		}
	}
	if qpeak > 0 {
		top.Y.Max = ms(qpeak) * 1.1
	}
	return nil
}

// drawFailureRatio draws the failure ratio of every window on the bottom
// panel, with the QTA's max_failure as a dashed bound, on a scale from 0 to
// 1.2 × the peak (at least 0.01, at most 1).
func drawFailureRatio(bottom *plot.Plot, s *TimeSeries, x func(int) float64) error {
	fr := make(plotter.XYs, len(s.Starts))
	peak := 0.0
	for i := range s.Starts {
		fr[i] = plotter.XY{X: x(i), Y: s.Failure[i]}
		peak = max(peak, s.Failure[i])
	}
	if len(fr) > 0 {
		if err := addPointsLine(bottom, "failure ratio", fr, colorQTA); err != nil {
			return err
		}
	}
	if s.MaxFailure != nil {
		peak = max(peak, *s.MaxFailure)
		if len(fr) > 0 {
			bound := plotter.XYs{{X: fr[0].X, Y: *s.MaxFailure}, {X: fr[len(fr)-1].X, Y: *s.MaxFailure}}
			if err := addLine(bottom, "QTA max_failure", bound, colorDMax, dashed); err != nil {
				return err
			}
		}
	}
	bottom.Y.Min, bottom.Y.Max = 0, min(1, max(0.01, peak*1.2))
	return nil
}

// addPointsLine adds a line with a dot at each point (a window) to pl.
func addPointsLine(pl *plot.Plot, label string, xys plotter.XYs, c color.Color) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	pts.Color, pts.Radius, pts.Shape = c, vg.Points(2), draw.CircleGlyph{}
	pl.Add(l, pts)
	if label != "" {
		pl.Legend.Add(label, l, pts)
	}
	return nil
}

// Named is a ΔQ plot and the name its file is named for (Files.Path).
type Named struct {
	Name string
	Plot *CDF
}

// DrawCDFs draws the plots into dir, made if need be, each into the file
// Path(Name, suffix) names, and returns the files written. An error names
// the plot, escaped (printable.String).
func DrawCDFs(dir, suffix string, plots []Named) ([]string, error) {
	files, err := NewFiles(dir)
	if err != nil {
		return nil, err
	}
	var written []string
	for _, p := range plots {
		path := files.Path(p.Name, suffix)
		if err := DrawCDF(path, p.Plot); err != nil {
			return written, fmt.Errorf("plot of %s: %w", printable.String(p.Name), err)
		}
		written = append(written, path)
	}
	return written, nil
}

// Files names the files of a plot directory: each name once.
type Files struct {
	dir  string
	used map[string]bool
}

// NewFiles makes the directory dir, if need be, and returns the namer of
// its files.
func NewFiles(dir string) (*Files, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Files{dir: dir, used: map[string]bool{}}, nil
}

// Path returns the path of a new file for probe with the given suffix
// (".png"): the probe's name as fileName keeps it, numbered from -2 when
// that file name is taken.
func (f *Files) Path(probe, suffix string) string {
	base := fileName(probe)
	name := base + suffix
	for n := 2; f.used[name]; n++ {
		name = base + "-" + strconv.Itoa(n) + suffix
	}
	f.used[name] = true
	return filepath.Join(f.dir, name)
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
