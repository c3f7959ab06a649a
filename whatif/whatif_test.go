// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package whatif

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/textpos"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in         string
		a, b, fail float64
		dist, rm   bool
	}{
		{in: "svc.op=0.5*X+1ms", a: 0.5, b: 0.001},
		{in: "svc.op = X", a: 1},
		{in: "svc.op=2 * X", a: 2},
		{in: "svc.op=X+3ms + never 5%", a: 1, b: 0.003, fail: 0.05},
		{in: "svc.op=0*X+5ms", a: 0, b: 0.005},
		{in: "svc.op=exp(5ms)", a: 1, dist: true},
		{in: "svc.op=choice(0.9:point(1ms),0.1:never) + never 1%", a: 1, dist: true, fail: 0.01},
		{in: "svc.op=remove", a: 1, rm: true},
		{in: "GET /a.b=X", a: 1}, // the target is everything before the first '='
	} {
		iv, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if iv.A != tc.a || math.Abs(iv.B-tc.b) > 1e-15 || math.Abs(iv.Fail-tc.fail) > 1e-15 || (iv.Dist != nil) != tc.dist || iv.Remove != tc.rm {
			t.Errorf("%s: %+v", tc.in, iv)
		}
	}
	for _, in := range []string{"svc.op", "=X", "svc.op=", "svc.op=-1*X", "svc.op=X-1ms", "svc.op=X+never 101%", "svc.op=Y", "svc.op=X+1"} {
		if iv, err := Parse(in); err == nil {
			t.Errorf("%s: accepted as %+v", in, iv)
		}
	}
}

// TestParseErrorPositions: an error is at the line and column of the text
// as the user typed it, spaces included, not of the text the regular
// expressions match with the spaces removed; Parse's columns count from
// the start of TARGET=EXPR, ParseExpr's from the start of EXPR.
func TestParseErrorPositions(t *testing.T) {
	const (
		want    = "A*X+B, a distribution, remove, timeout(D), retry(N, D) or hedge(D)"
		neither = "is neither A*X+B nor a distribution, remove, timeout(D), retry(N, D) or hedge(D)"
	)
	for _, c := range []struct {
		in, err string
		target  bool // through Parse
	}{
		{"2 * X + 3m", `1:10: shift "3m": expected a unit (ns, us, ms or s) after 3`, false},
		{"svc.op = 2 * X + 3m", `1:19: svc.op: shift "3m": expected a unit (ns, us, ms or s) after 3`, true},
		{"2 * X\n  + 3m", `2:6: shift "3m": expected a unit (ns, us, ms or s) after 3`, false},
		{"svc.op=X + never 101%", `1:18: svc.op: failure 101% must be a percentage in [0, 100]`, true},
		{"  0.5*Y", `1:3: "0.5*Y" ` + neither + `: expected a distribution (point, uniform, exp, never, steps or choice), found "0.5*Y"`, false},
		{"remvoe", `1:1: "remvoe" ` + neither + `: did you mean remove?`, false},
		{"X + never 0.05", `1:11: failure 0.05 is a fraction; write the percentage: never 5%`, false},
		{"svc.op=exp(5ms) + never 5", `1:25: svc.op: failure 5 has no %; write never 5%`, true},
		{"uniform(2ms, x) + never 5%", `1:14: "uniform(2ms,x)" ` + neither + `: expected a number, found "x)"`, false},
		{"retry(20, 5ms)", `1:7: retry: 20 retries: want a whole number in [1, 10]`, false},
		{"timeout(2, 5ms)", `1:9: timeout(D) takes one argument, got "timeout(2, 5ms)"`, false},
		{"hedge( 5 m )", `1:10: hedge: delay "5m": expected a unit (ns, us, ms or s) after 5`, false},
		{"retry( 5ms)", `1:8: retry(N, D): the number of retries N is missing in "retry( 5ms)"`, false},
		{"hedge( 2h )", `1:9: hedge: delay "2h": expected a unit (ns, us, ms or s) after 2`, false},
		{"timeout( 7200s)", `1:10: timeout: delay 7200s must be above 0 and at most 3600s`, false},
		{"svc.op", `1:7: want TARGET=EXPR, got "svc.op"`, true},
		{" = X", `1:1: want TARGET=EXPR, got " = X"`, true},
		{"   ", `1:1: empty expression: want ` + want, false},
	} {
		var err error
		if c.target {
			_, err = Parse(c.in)
		} else {
			_, err = ParseExpr(c.in)
		}
		var list textpos.ErrorList
		if !errors.As(err, &list) || len(list) != 1 {
			t.Errorf("%q: %v, want one positioned error", c.in, err)
			continue
		}
		if err.Error() != c.err {
			t.Errorf("%q:\n got %s\nwant %s", c.in, err, c.err)
		}
	}
}

// TestTransformSubstitution: a substituted distribution is built on the
// part's bin width over as many bins as it needs: one for a distribution
// that names no delay above 0 (never, point(0)), not 1 s worth of them
// (which left no room for the sequences the part is in); and one that
// does not fit in MaxBins bins of that width is an error, not a ΔQ whose
// mass beyond them silently counts as failure.
func TestTransformSubstitution(t *testing.T) {
	const w = 5e-6 // a model of 5 ms operations on 1000 bins
	x, err := deltaq.Point(0.005, w, 1001)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		expr     string
		bins     int // at most
		tangible float64
	}{
		{"never", 1, 0},
		{"point(0)", 1, 1},
		{"uniform(0,0)", 1, 1},
		{"choice(0.5:point(0),0.5:never)", 1, 0.5},
		{"point(1ms)", 200, 1},           // not the 240 bins of a rounder dMax of 1.2 ms
		{"exp(20ms)", deltaq.MaxBins, 1}, // its tail beyond MaxBins bins is 1e-7
	} {
		iv, err := ParseExpr(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		y, err := iv.Transform(x)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if y.Bins() > c.bins || math.Abs(y.Tangible()-c.tangible) > 1e-6 {
			t.Errorf("%s: %d bins, tangible mass %v; want at most %d bins and %v", c.expr, y.Bins(), y.Tangible(), c.bins, c.tangible)
		}
	}
	for _, expr := range []string{"point(1s)", "uniform(0,1s)", "choice(0.5:point(1ms),0.5:point(2s))"} {
		iv, err := ParseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		if y, err := iv.Transform(x); err == nil || !strings.Contains(err.Error(), "MaxBins") {
			t.Errorf("%s: %v (tangible mass %v), want an error naming MaxBins", expr, err, y.Tangible())
		}
	}
}

// TestPatternTooManyBins: a resilience pattern whose D needs more than
// MaxBins bins of the call's width is an error that says what to change
// and, as Transform's other errors, does not name the intervention, which
// its callers do (TARGET=EXPR: …): the hedge's read "hedge(3600s):
// hedge(3600s): …" in deltaq whatif, the retry's "retry(2, 3600s):
// retry(2, …): …".
func TestPatternTooManyBins(t *testing.T) {
	const w = 5e-6
	x, err := deltaq.Point(0.005, w, 1001)
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{"hedge(3600s)", "retry(2, 3600s)"} {
		iv, err := ParseExpr(expr)
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(expr, "(")
		_, err = iv.Transform(x)
		if err == nil || strings.Contains(err.Error(), name) || !strings.HasSuffix(err.Error(), "bins; a coarser model (--bins) or a shorter D") {
			t.Errorf("%s: %v, want an error that says what to change, without the intervention", expr, err)
		}
	}
}
