// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/figure"
)

// assertPNG checks that path is a PNG image of the plots' size: 10 × 6
// inches at the image canvas's 96 dots per inch, 960 × 576 pixels.
func assertPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != 960 || b.Dy() != 576 {
		t.Errorf("%s is %d × %d pixels, want 960 × 576", path, b.Dx(), b.Dy())
	}
}

// TestEvalPlot: eval --plot draws the evaluated ΔQs as analyze does, one
// PNG per probe printed, and lists them.
func TestEvalPlot(t *testing.T) {
	dq := writeTemp(t, "s.dq", "system = a -> b;\n")
	dir := filepath.Join(t.TempDir(), "plots")
	status, stdout, stderr := runCmd("eval", dq, "--outcome", "a=exp(5ms)", "--outcome", "b=uniform(1ms,2ms)", "--probe", "system", "--probe", "a", "--plot", dir)
	if status != exitOK {
		t.Fatalf("status %d, stderr %s", status, stderr)
	}
	for _, name := range []string{"system", "a"} {
		path := filepath.Join(dir, name+".png")
		assertPNG(t, path)
		assertContainsAll(t, "stdout", stdout, "wrote "+path+"\n")
	}
	status, stdout, stderr = runCmd("eval", dq, "--outcome", "a=exp(5ms)", "--outcome", "b=uniform(1ms,2ms)", "--json", "--plot", dir)
	if status != exitOK || !strings.HasPrefix(stdout, "{") || !strings.Contains(stderr, "wrote "+filepath.Join(dir, "system.png")) {
		t.Errorf("--json --plot: status %d, stdout %q, stderr %q", status, stdout, stderr)
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
			if c == figure.Observed || c == figure.Calculated {
				count[c]++
			}
		}
	}
	if count[figure.Observed] < 500 || count[figure.Calculated] < 300 {
		t.Errorf("pixels of the observed curve %d, of the predicted %d: want both curves drawn", count[figure.Observed], count[figure.Calculated])
	}
}

// TestPlotListedWithJSON: model and whatif with --json --plot list the
// files they draw on stderr, as analyze and eval do (stdout is the JSON);
// they listed none.
func TestPlotListedWithJSON(t *testing.T) {
	dir, _ := learnShop(t)
	plots := t.TempDir()
	status, stdout, stderr := runCmd("model", shopFile, "-o", t.TempDir(), "--json", "--plot", plots)
	want := "wrote " + filepath.Join(plots, "frontend_GET_checkout-model.png") + "\n"
	if status != exitOK || !json.Valid([]byte(stdout)) || !strings.Contains(stderr, want) {
		t.Errorf("model --json --plot: status %d, stderr %q, want it to list %q; stdout JSON: %v", status, stderr, want, json.Valid([]byte(stdout)))
	}
	status, stdout, stderr = runCmd("whatif", dir, "--set", "cart.get=2*X", "--json", "--plot", plots)
	want = "wrote " + filepath.Join(plots, "frontend_GET_checkout-whatif.png") + "\n"
	if status != exitOK || !json.Valid([]byte(stdout)) || !strings.Contains(stderr, want) {
		t.Errorf("whatif --json --plot: status %d, stderr %q, want it to list %q; stdout JSON: %v", status, stderr, want, json.Valid([]byte(stdout)))
	}
}

// TestREADMEFigure keeps the README's first figure from going stale: it is
// what `deltaq analyze --plot` draws for the e2e probe of the shipped
// traces, byte for byte (the plots use embedded fonts, so the PNG is the
// same on every machine). `make figures` rewrites it.
func TestREADMEFigure(t *testing.T) {
	dir := t.TempDir()
	status, _, stderr := runCmd("analyze", "--plot", dir, "--config", analyzeConfig, analyzeTraces)
	if status != exitOK {
		t.Fatalf("analyze --plot: status %d: %s", status, stderr)
	}
	got, err := os.ReadFile(filepath.Join(dir, "e2e.png"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/deltaq-e2e.png")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/deltaq-e2e.png is not what deltaq analyze --plot draws now: run make figures, and check the README's caption")
	}
}
