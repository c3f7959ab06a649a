// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"errors"
	"go/scanner"
	"math"
	"testing"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"3ms", 3e-3}, {"2.5ms", 2.5e-3}, {"1s", 1}, {"10ns", 1e-8}, {"7us", 7e-6}, {"7µs", 7e-6},
		{"0", 0}, {"0s", 0}, {" 4ms ", 4e-3},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	// The number written is the one read: the float nearest to it, as Go's
	// own literal 4.5e-3 is, so that eval's JSON keys --at 4.5ms as
	// "0.0045", not as 4.5·10⁻³ computed in floating point
	// ("0.0045000000000000005").
	for in, want := range map[string]float64{
		"4.5ms": 4.5e-3, "0.3ms": 0.3e-3, "17.3ms": 17.3e-3, "0.7us": 0.7e-6, "2.3ns": 2.3e-9,
		"1.1s": 1.1, " 4.5ms": 4.5e-3, ".5ms": 0.5e-3, "1.ms": 1e-3,
		"1.5e+04s": 1.5e4, "8.64e+04s": 86400, "2E3s": 2000, "5e-1s": 0.5,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v exactly", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"3":  "1:2: expected a unit (ns, us, ms or s) after 3",
		"3m": "1:2: expected a unit (ns, us, ms or s) after 3",
		// The number as written (it said "after 9.999999e+06").
		"9999999h": "1:8: expected a unit (ns, us, ms or s) after 9999999",
		"ms":       `1:1: expected a number, found "ms"`,
		"-1ms":     `1:1: expected a number that is not negative, found "-1ms"`,
		"1ms2":     `1:4: unexpected "2" after the duration`,
		"1.2.3s":   `1:1: bad number "1.2.3"`,
		// An e without digits is no exponent.
		"3e":   "1:2: expected a unit (ns, us, ms or s) after 3",
		"3e+s": "1:2: expected a unit (ns, us, ms or s) after 3",
		"":     "1:1: expected a number, found end of text",
	} {
		if _, err := ParseDuration(in); err == nil || err.Error() != want {
			t.Errorf("ParseDuration(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestParseDist(t *testing.T) {
	const w, n = 1e-3, 100 // 1 ms bins, dMax 100 ms
	tests := []struct {
		in      string
		horizon float64
		at      float64 // a delay
		cdf     float64 // the expected CDF there
		fail    float64 // the expected intangible mass
	}{
		// Point mass on the edge 3 ms: in the bin that edge closes (uniform
		// over (2, 3] ms, bins are upper-inclusive): F(2.5 ms) = 0.5, F(3 ms) = 1.
		// A point on a bin edge is the exact point mass (deltaq.Point).
		{"point(3ms)", 3e-3, 2.5e-3, 0, 0},
		{"point(3ms)", 3e-3, 3e-3, 1, 0},
		{"uniform(1ms,2ms)", 2e-3, 1.5e-3, 0.5, 0},
		{" uniform( 10ms , 30ms ) ", 30e-3, 20e-3, 0.5, 0},
		// Exponential of mean 5 ms: F(10 ms) = 1 − e^{−2} at a bin edge;
		// the tail beyond 100 ms, e^{−20}, is intangible.
		{"exp(5ms)", 100e-3, 10e-3, 1 - math.Exp(-2), math.Exp(-20)},
		{"never", 0, 50e-3, 0, 1},
		// Step CDF: 0.2 at 1 ms, 0.9 at 4 ms (bin edges).
		{"steps(1ms:0.2,4ms:0.9)", 4e-3, 4e-3, 0.9, 0.1},
		{"steps(1ms:0.2, 4ms:0.9)", 4e-3, 2e-3, 0.2, 0.1},
		// Choice: 0.75 of U[1, 2) ms, 0.25 never.
		{"choice(0.75:uniform(1ms,2ms),0.25:never)", 2e-3, 2e-3, 0.75, 0.25},
		{"choice(0.5:point(1ms), 0.5:choice(0.5:point(2ms), 0.5:never))", 2e-3, 3e-3, 0.75, 0.25},
	}
	for _, tt := range tests {
		d, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if h := d.Horizon(); math.Abs(h-tt.horizon) > 1e-12 {
			t.Errorf("%s: horizon %v, want %v", tt.in, h, tt.horizon)
		}
		dq, err := d.Build(w, n)
		if err != nil {
			t.Errorf("%s: build: %v", tt.in, err)
			continue
		}
		if got := dq.CDF(tt.at); math.Abs(got-tt.cdf) > 1e-9 {
			t.Errorf("%s: F(%v) = %v, want %v", tt.in, tt.at, got, tt.cdf)
		}
		if got := dq.Intangible(); math.Abs(got-tt.fail) > 1e-9 {
			t.Errorf("%s: intangible %v, want %v", tt.in, got, tt.fail)
		}
	}
}

func TestParseDistErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "1:1: expected a distribution (point, uniform, exp, never, steps or choice), found end of text",
		"gamma(1ms)":        `1:1: unknown distribution "gamma" (want point, uniform, exp, never, steps or choice)`,
		"unifrom(1ms, 2ms)": `1:1: unknown distribution "unifrom" (did you mean uniform?) (want point, uniform, exp, never, steps or choice)`,
		"point 3ms":         `1:7: expected '(', found "3ms"`,
		"point(3ms":         "1:10: expected ')', found end of text",
		"uniform(2ms,1ms)":  "1:1: uniform(LO,HI) needs LO ≤ HI",
		"uniform(1ms)":      `1:12: expected ',', found ")"`,
		"exp(0s)":           "1:1: exp needs a mean above 0",
		"steps(1ms:1.5)":    "1:11: probability 1.5 is above 1: it is a fraction, 1.5 % is 0.015",
		// A percentage where a probability goes: the fraction to write.
		"steps(1ms:50%,2ms:1)":             "1:11: probability 50% is a percentage; write the fraction 0.5",
		"choice(90%:point(1ms),0.1:never)": "1:8: probability 90% is a percentage; write the fraction 0.9",
		"steps(1ms:95)":                    "1:11: probability 95 is above 1: it is a fraction, 95 % is 0.95",
		"steps(1ms)":                       `1:10: expected ':', found ")"`,
		"choice(0.5:never,0.4:never)":      "1:1: choice weights sum to 0.9, not 1",
		"choice(never)":                    `1:8: expected a number, found "never)"`,
		"never()":                          `1:6: unexpected "()" after the distribution`,
	} {
		if _, err := Parse(in); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) error %v, want %q", in, err, want)
		}
	}
	// Nesting is bounded.
	deep := ""
	for i := 0; i <= maxDepth+1; i++ {
		deep += "choice(1:"
	}
	if _, err := Parse(deep + "never"); err == nil {
		t.Error("deeply nested choice accepted")
	}
	// A decreasing step CDF and a delay given twice are refused where they
	// are written, in any order of the points (they were refused only when
	// built: "deltaq: Steps: probability falls from 1 to 0.5 at delay
	// 0.002 (point 1 after sorting)", and a delay twice was taken).
	for in, want := range map[string]string{
		"steps(1ms:0.5,2ms:0.2)":       "1:15: steps: probability 0.2 at 2ms is below 0.5 at 1ms: a CDF never falls",
		"steps(2ms:0.5,1ms:1)":         "1:7: steps: probability 0.5 at 2ms is below 1 at 1ms: a CDF never falls",
		"steps(1ms:0.5,3ms:1,1ms:0.7)": "1:21: steps: delay 1ms is given twice",
	} {
		if _, err := Parse(in); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) error %v, want %q", in, err, want)
		}
	}
	if _, err := Parse("steps(2ms:1,1ms:0.5)"); err != nil {
		t.Errorf("steps in decreasing order of delay, increasing CDF: %v", err)
	}
}

func TestNiceAbove(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{2e-3, 2.5e-3}, {1e-3, 1.2e-3}, {100e-3, 120e-3}, {0.0999, 0.1}, {7, 8}, {8, 10}, {9.5, 10},
		{10, 12}, {0, 1}, {1e-7, 1.2e-7},
	}
	for _, tt := range tests {
		if got := niceAbove(tt.in); math.Abs(got-tt.want) > 1e-12*tt.want || !(got > tt.in) {
			t.Errorf("niceAbove(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0s", 1.5: "1.5s", 2.5e-3: "2.5ms", 120e-6: "120us", 3e-9: "3ns", 0.0123456: "12.35ms",
	} {
		if got := FormatDuration(in); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestDefaultDMax: the default dMax lies above the largest horizon of the
// distributions given (hand computation: exp(5ms) names 20 means = 100 ms,
// and the next nice value above it is 120 ms).
func TestDefaultDMax(t *testing.T) {
	parse := func(texts ...string) []Dist {
		var ds []Dist
		for _, s := range texts {
			d, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		return ds
	}
	for _, tt := range []struct {
		dists []Dist
		want  float64
	}{
		{nil, 1},
		{parse("never"), 1},
		{parse("exp(5ms)"), 120e-3},
		{parse("point(3ms)", "uniform(1ms,7ms)"), 8e-3},
		{parse("choice(0.5:point(1ms), 0.5:choice(0.5:steps(2ms:1), 0.5:never))"), 2.5e-3},
	} {
		if got := DefaultDMax(tt.dists); math.Abs(got-tt.want) > 1e-12*tt.want {
			t.Errorf("DefaultDMax(%v) = %v, want %v", tt.dists, got, tt.want)
		}
	}
}

// TestFormatDurationParses: what FormatDuration prints reads back with
// ParseDuration to its four significant digits. From 10⁴ s on it prints an
// exponent (1.5e+04s), which was refused ("expected a unit after 1.5"):
// eval's warning suggested a --dmax that eval would not read.
func TestFormatDurationParses(t *testing.T) {
	for _, s := range []float64{3e-9, 120e-6, 2.5e-3, 0.0123456, 1.5, 999, 9999, 15000, 86400, 2.4e5, 3.2e9} {
		text := FormatDuration(s)
		got, err := ParseDuration(text)
		if err != nil || math.Abs(got-s) > 5e-4*s {
			t.Errorf("ParseDuration(FormatDuration(%v) = %q) = %v, %v", s, text, got, err)
		}
	}
}

// TestErrorColumnsCountSpace: an error's column is that of the text as
// written, each space and tab one column, a non-ASCII character as many as
// its bytes (as go/token counts).
func TestErrorColumnsCountSpace(t *testing.T) {
	for in, want := range map[string]int{
		" uniform( 10ms ,  x)": 19, // the x
		"point(\t3ms":          11, // the end, where ')' is missing
		"steps(1ms: 1.5)":      12, // the probability, after the space
		"  exp( 0s )":          3,  // the distribution
		"point(3µs) x":         13, // what follows, after µ's two bytes
	} {
		_, err := Parse(in)
		var e *scanner.Error
		if !errors.As(err, &e) || e.Pos.Line != 1 || e.Pos.Column != want {
			t.Errorf("Parse(%q): %v, want an error at 1:%d", in, err, want)
		}
	}
}
