// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// legendPixels renders p twice, with its legend and without, and returns
// the columns of the pixels that differ (the legend's), and the column of
// the dMax line. place is false to leave the legend where gonum puts it.
func legendPixels(t *testing.T, p *cdfPlot, place bool) (cols map[int]bool, line int) {
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
	p := &cdfPlot{title: "what-if: GET /checkout", curves: []cdfCurve{
		{label: "before", dq: b, color: colorObserved},
		{label: "after", dq: a, color: colorCalculated, dashes: dashed},
	}, qta: &deltaq.QTA{Points: []deltaq.Step{{Delay: 0.05, P: 0.9}}}}
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

// model --plot draws each root operation's validation: the observed
// end-to-end ΔQ and the predicted one, both on the plot, and lists the file.
func TestModelPlot(t *testing.T) {
	plots := t.TempDir()
	_, out := learnShop(t, "--plot", plots)
	path := filepath.Join(plots, "frontend_GET_checkout-model.png")
	if !strings.Contains(out, "wrote "+path+"\n") {
		t.Fatalf("model --plot does not list %s:\n%s", path, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// Both curves are drawn: pixels of the observed and of the predicted
	// colour.
	count := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0xff}
			if c == colorObserved || c == colorCalculated {
				count[c]++
			}
		}
	}
	if count[colorObserved] < 500 || count[colorCalculated] < 300 {
		t.Errorf("pixels of the observed curve %d, of the predicted %d: want both curves drawn", count[colorObserved], count[colorCalculated])
	}
}
