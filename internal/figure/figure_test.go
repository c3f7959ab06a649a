// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package figure

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// TestCDFRange: the x range ends 1.2 × beyond the delay at which every
// curve reaches 0.999 of its tangible mass, or beyond the QTA's last point;
// within 0.8 of dMax it snaps to 1.05 × dMax, and dMax is shown.
func TestCDFRange(t *testing.T) {
	const w = 0.001 // 1 ms bins, 100 of them: dMax 100 ms
	uniform, err := deltaq.Uniform(0, 0.010, w, 100)
	if err != nil {
		t.Fatal(err)
	}
	// 0.45 in (4, 5] ms and 0.45 in (9, 10] ms: tangible 0.9.
	pdf := make([]float64, 100)
	pdf[4], pdf[9] = 0.45, 0.45
	failing, err := deltaq.New(w, pdf)
	if err != nil {
		t.Fatal(err)
	}
	never, err := deltaq.Never(w, 100)
	if err != nil {
		t.Fatal(err)
	}
	late, err := deltaq.Uniform(0.070, 0.090, w, 100)
	if err != nil {
		t.Fatal(err)
	}
	qta := func(d float64) *deltaq.QTA {
		return &deltaq.QTA{Points: []deltaq.Step{{Delay: d, P: 0.5}}, MaxFailure: 0.1}
	}
	for _, c := range []struct {
		name   string
		curves []deltaq.DeltaQ
		qta    *deltaq.QTA
		xmax   float64
		shown  bool
	}{
		// Uniform on [0, 10 ms]: 0.999 of it by 9.99 ms; × 1.2.
		{"uniform", []deltaq.DeltaQ{uniform}, nil, 0.00999 * 1.2, false},
		// 0.999 × 0.9 = 0.8991 is reached in (9, 10] ms, where the CDF
		// rises from 0.45 to 0.9: at 9 + 0.4491/0.45 = 9.998 ms.
		{"failures", []deltaq.DeltaQ{failing}, nil, 0.009998 * 1.2, false},
		// The largest of the curves' delays.
		{"two curves", []deltaq.DeltaQ{failing, uniform}, nil, 0.009998 * 1.2, false},
		// A QTA point beyond the mass widens the range: 50 ms × 1.2 = 60 ms
		// < 0.8 × 100 ms.
		{"QTA beyond", []deltaq.DeltaQ{uniform}, qta(0.050), 0.060, false},
		// 70 ms × 1.2 = 84 ms ≥ 80 ms: up to 105 ms, dMax shown.
		{"QTA near dMax", []deltaq.DeltaQ{uniform}, qta(0.070), 0.105, true},
		// 0.999 of uniform [70, 90] ms is at 89.98 ms: near dMax.
		{"mass near dMax", []deltaq.DeltaQ{late}, nil, 0.105, true},
		// Nothing tangible: the whole layout.
		{"never", []deltaq.DeltaQ{never}, nil, 0.105, true},
	} {
		xmax, dmax, shown := cdfRange(c.curves, c.qta)
		if math.Abs(xmax-c.xmax) > 1e-12 || dmax != 0.1 || shown != c.shown {
			t.Errorf("%s: range %v, dMax %v, shown %v; want %v, 0.1, %v", c.name, xmax, dmax, shown, c.xmax, c.shown)
		}
	}
}

// TestPlotPoints: the curves are drawn in milliseconds, exactly: the CDF at
// every bin edge then flat to the range's end, the band as one ring (upper
// bound out, lower back), the QTA as steps.
func TestPlotPoints(t *testing.T) {
	d, err := deltaq.Uniform(0, 0.002, 0.001, 4) // 1/2 per 1 ms bin; dMax 4 ms
	if err != nil {
		t.Fatal(err)
	}
	got := cdfPoints(d, 0.005)
	want := [][2]float64{{0, 0}, {1, 0.5}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}
	if len(got) != len(want) {
		t.Fatalf("cdfPoints %v, want %v", got, want)
	}
	for i, p := range got {
		if math.Abs(p.X-want[i][0]) > 1e-9 || math.Abs(p.Y-want[i][1]) > 1e-12 {
			t.Errorf("cdfPoints[%d] = %v, want %v", i, p, want[i])
		}
	}
	// Cut within a bin: the CDF there, 0.25 at 0.5 ms.
	if got := cdfPoints(d, 0.0005); len(got) != 2 || got[1].X != 0.5 || got[1].Y != 0.25 {
		t.Errorf("cdfPoints to 0.5 ms = %v", got)
	}
	b := &deltaq.ConfidenceBand{Width: 0.001, K: 3, Lower: []float64{0.2, 0.6}, Upper: []float64{0.4, 1}}
	ring := bandPoints(b, 0.003)
	wantRing := [][2]float64{{0, 0}, {1, 0.4}, {2, 1}, {3, 1}, {3, 0.6}, {2, 0.6}, {1, 0.2}, {0, 0}}
	for i, p := range ring {
		if i >= len(wantRing) || math.Abs(p.X-wantRing[i][0]) > 1e-9 || math.Abs(p.Y-wantRing[i][1]) > 1e-12 {
			t.Fatalf("bandPoints = %v, want %v", ring, wantRing)
		}
	}
	q := &deltaq.QTA{Points: []deltaq.Step{{Delay: 0.001, P: 0.5}}, MaxFailure: 0.1}
	steps := qtaPoints(q, 0.004, 0.005)
	wantSteps := [][2]float64{{0, 0}, {1, 0}, {1, 0.5}, {4, 0.5}, {4, 0.9}, {5, 0.9}}
	for i, p := range steps {
		if i >= len(wantSteps) || math.Abs(p.X-wantSteps[i][0]) > 1e-9 || math.Abs(p.Y-wantSteps[i][1]) > 1e-12 {
			t.Fatalf("qtaPoints = %v, want %v", steps, wantSteps)
		}
	}
}

// TestDrawCDFBand: a plot with a band, a QTA and dMax in range is written
// at the plots' size (960 × 576 pixels), and the band's shade is in it; a band of one ΔQ,
// which bounds nothing, is not drawn.
func TestDrawCDFBand(t *testing.T) {
	d, err := deltaq.Uniform(0, 0.008, 0.001, 10)
	if err != nil {
		t.Fatal(err)
	}
	b := &deltaq.ConfidenceBand{Width: 0.001, K: 5, Lower: make([]float64, 10), Upper: make([]float64, 10)}
	for i := range b.Upper {
		b.Upper[i] = 1
	}
	dir := t.TempDir()
	shaded := func(band *deltaq.ConfidenceBand) int {
		path := filepath.Join(dir, "p.png")
		p := &CDF{Title: "ΔQ of p", Curves: []Curve{{Label: "observed", DQ: d, Color: Observed}}, Band: band, BandLabel: "band",
			QTA: &deltaq.QTA{Points: []deltaq.Step{{Delay: 0.005, P: 0.5}}, MaxFailure: 0.1}}
		if err := DrawCDF(path, p); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(path)
		defer f.Close()
		img, err := png.Decode(f)
		if err != nil {
			t.Fatal(err)
		}
		// 10 × 6 inches at the image canvas's 96 dots per inch.
		if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 576 {
			t.Errorf("%s is %d × %d pixels, want 960 × 576", path, b.Dx(), b.Dy())
		}
		// Count the pixels of the band's shade over white: blue-ish and
		// light.
		n := 0
		for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
			for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
				r, g, bl, _ := img.At(x, y).RGBA()
				if bl>>8 > 200 && r>>8 > 150 && r>>8 < 215 && g>>8 > 180 && g>>8 < 235 {
					n++
				}
			}
		}
		return n
	}
	with := shaded(b)
	b.K = 1
	without := shaded(b)
	if with < 50000 || without > 1000 {
		t.Errorf("band pixels: %d with a band of 5 ΔQs (want many), %d with one ΔQ (want none)", with, without)
	}
}

// TestPlotFiles: every file name is used once, probes whose names keep the
// same characters numbered from -2.
func TestPlotFiles(t *testing.T) {
	f, err := NewFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range [][2]string{{"a/b", ".png"}, {"a_b", ".png"}, {"a_b", ".windows.png"}, {"a_b.windows", ".png"}, {"\x1b", ".png"}} {
		got = append(got, filepath.Base(f.Path(p[0], p[1])))
	}
	want := []string{"a_b.png", "a_b-2.png", "a_b.windows.png", "a_b.windows-2.png", "_.png"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("file names %q, want %q", got, want)
			break
		}
	}
}

// legendPixels renders p twice, with its legend and without, and returns
// the columns of the pixels that differ (the legend's), and the column of
// the dMax line. place is false to leave the legend where gonum puts it.
func legendPixels(t *testing.T, p *CDF, place bool) (cols map[int]bool, line int) {
	t.Helper()
	render := func(legend bool) image.Image {
		pl, dmaxMS, err := cdfFigure(p)
		if err != nil {
			t.Fatal(err)
		}
		if dmaxMS == 0 {
			t.Fatal("the test's plot draws no dMax line")
		}
		if !legend {
			pl.Legend = plot.NewLegend()
		}
		if !place {
			dmaxMS = 0
		}
		c := renderCDF(pl, dmaxMS)
		if legend {
			data := pl.DataCanvas(draw.New(c))
			_, dmaxMS, _ = cdfFigure(p)
			x := data.X(pl.X.Norm(dmaxMS))
			line = int(float64(x) / 72 * 96) // points to pixels at 96 dpi
		}
		return c.Image()
	}
	with, without := render(true), render(false)
	cols = map[int]bool{}
	b := with.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r1, g1, b1, _ := with.At(x, y).RGBA()
			r2, g2, b2, _ := without.At(x, y).RGBA()
			if r1 != r2 || g1 != g2 || b1 != b2 {
				cols[x] = true
			}
		}
	}
	return cols, line
}

// The what-if plot's legend covered its dMax line: the legend sits at the
// bottom right and the line 5 % short of the right edge. It now ends left
// of the line, which the legend's own pixels (those that differ from the
// plot drawn without it) show; left where gonum puts it, it covers the
// line, so the test can tell.
func TestLegendClearsTheDMaxLine(t *testing.T) {
	// Delays up to 90 ms of a dMax of 100 ms: the plot runs to dMax and
	// draws its line.
	b, err := deltaq.Uniform(0, 0.09, 0.0001, 1000)
	if err != nil {
		t.Fatal(err)
	}
	a, err := deltaq.Uniform(0, 0.045, 0.0001, 1000)
	if err != nil {
		t.Fatal(err)
	}
	p := &CDF{Title: "what-if: GET /checkout", Curves: []Curve{
		{Label: "before", DQ: b, Color: Observed},
		{Label: "after", DQ: a, Color: Calculated, Dashed: true},
	}, QTA: &deltaq.QTA{Points: []deltaq.Step{{Delay: 0.05, P: 0.9}}}}
	cols, line := legendPixels(t, p, true)
	if len(cols) == 0 {
		t.Fatal("no legend drawn")
	}
	for x := range cols {
		if x >= line-2 {
			t.Errorf("legend pixels in column %d, at or right of the dMax line (column %d)", x, line)
			break
		}
	}
	cols, line = legendPixels(t, p, false)
	covered := false
	for x := range cols {
		covered = covered || (x >= line-2 && x <= line+2)
	}
	if !covered {
		t.Error("the legend left at gonum's place does not cover the dMax line: the test cannot tell")
	}
}
