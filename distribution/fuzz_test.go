// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package distribution

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// checkParseError fails unless err is one error with a position inside s.
func checkParseError(t *testing.T, s string, err error) {
	t.Helper()
	var list textpos.ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("%q: error %T %v is not one positioned error", s, err, err)
	}
	if e := list[0]; !e.Pos.IsValid() || e.Pos.Offset > len(s) || e.Msg == "" {
		t.Fatalf("%q: error %q at %+v", s, e.Msg, e.Pos)
	}
}

// FuzzParseDuration reads arbitrary durations. An error is placed within
// the text; a duration read is finite and not negative, is the decimal
// number written correctly rounded (computed exactly, big.Rat) when that
// is a normal float, and what FormatDuration prints for it (four
// significant digits) reads back to it within that precision.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"2.5ms", "0", "1.5e+04s", "3µs", "4.5ms", "1e400s", "1e-400ns", " 7 s", "5m", "1.2.3s", ".", "1e", "-1s", "0x1s", "4.5e0ms", "1e1us", "1e99999999999999999999ms", "1e-99999999999ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		if !(d >= 0) || math.IsInf(d, 0) {
			t.Fatalf("%q read as %v", s, d)
		}
		if want, ok := exactSeconds(s); ok && want >= 0x1p-1022 && want != d {
			t.Fatalf("%q read as %v, the decimal written is %v", s, d, want)
		}
		out := FormatDuration(d)
		back, err := ParseDuration(out)
		if err != nil || math.Abs(back-d) > 5e-4*d {
			t.Fatalf("%q read as %v, printed %q, read back as %v, %v", s, d, out, back, err)
		}
	})
}

// exactSeconds returns the duration s, one number and a unit, as the
// float nearest to the decimal it writes, computed exactly.
func exactSeconds(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	for _, u := range []struct {
		name string
		exp  int64
	}{{"ns", 9}, {"us", 6}, {"µs", 6}, {"ms", 3}, {"s", 0}} {
		if num, ok := strings.CutSuffix(s, u.name); ok {
			num = strings.TrimSpace(num)
			if i := strings.IndexAny(num, "eE"); i >= 0 {
				if x, err := strconv.Atoi(num[i+1:]); err != nil || x < -400 || x > 400 {
					return 0, false // 10^x too costly to compute exactly
				}
			}
			r, ok := new(big.Rat).SetString(num)
			if !ok || strings.ContainsAny(num, "xX_/") {
				return 0, false
			}
			f, _ := r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(u.exp), nil))).Float64()
			return f, true
		}
	}
	return 0, false
}

// FuzzParse reads arbitrary distributions: an error is placed within the
// text, and a distribution read has a horizon that is a delay (finite, not
// negative), and what it builds on 100 bins up to its default dMax has a
// mean within them.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"point(2ms)", "uniform(1ms, 3ms)", "exp(5ms)", "steps(1ms:0.5, 2ms:1)",
		"choice(0.9: point(1ms), 0.1: exp(10ms))", "steps(2ms:0.5, 1ms:0.6)", "uniform(3ms,1ms)",
		"choice(0.5:point(1ms)", "point(1e400s)", "steps(1ms:50%)", "choice(" + "choice(0.5:" + "point(1ms)))", "point(1e80s)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := Parse(s)
		if err != nil {
			checkParseError(t, s, err)
			return
		}
		if h := d.Horizon(); !(h >= 0) || math.IsInf(h, 0) {
			t.Fatalf("%q: horizon %v", s, h)
		}
		if dmax := DefaultDMax([]Dist{d}); dmax > 0 && !math.IsInf(dmax, 0) {
			if dq, err := d.Build(dmax/100, 100); err == nil {
				// Within dMax, to the rounding of the bins' width.
				if m, ok := dq.Mean(); ok && !(m >= 0 && m <= dmax*(1+1e-12)) {
					t.Fatalf("%q: a ΔQ of mean %v up to dMax %v", s, m, dmax)
				}
			}
		}
	})
}
