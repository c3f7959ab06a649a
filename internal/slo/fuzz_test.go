// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"math/big"
	"strings"
	"testing"
	"time"
)

// FuzzParseDuration reads arbitrary durations. One accepted is positive
// and at most 10 years; one written in Prometheus's form (Go's refused) is
// exactly the sum of its terms, computed without overflow; and the
// Prometheus form FormatDuration writes for it reads back to it, rounded
// to a millisecond.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"30d", "1h30m", "250ms", "1w", "1.5h", "0s", "-5m", "3650d", "3661d", "1d1d", "5x",
		"999999999w", "999999999d999999999d", "10", "1m0s500ms", "", "30501w", "87841h",
	} {
		f.Add(s)
	}
	units := map[string]int64{"w": 7 * 24 * 3600e3, "d": 24 * 3600e3, "h": 3600e3, "m": 60e3, "s": 1e3, "ms": 1}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			if !strings.Contains(err.Error(), "duration") {
				t.Fatalf("%q: error %q does not say what was refused", s, err)
			}
			return
		}
		if d <= 0 || d > 10*366*24*time.Hour {
			t.Fatalf("%q read as %v", s, d)
		}
		if _, goErr := time.ParseDuration(s); goErr != nil {
			// The sum of the terms, in milliseconds, with no overflow.
			sum := new(big.Int)
			for rest := s; rest != ""; {
				i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
				j := strings.IndexFunc(rest[i:], func(r rune) bool { return r >= '0' && r <= '9' })
				if j < 0 {
					j = len(rest) - i
				}
				n, _ := new(big.Int).SetString(rest[:i], 10)
				sum.Add(sum, n.Mul(n, big.NewInt(units[rest[i:i+j]])))
				rest = rest[i+j:]
			}
			if max := big.NewInt(10 * 366 * 24 * 3600e3); sum.Cmp(max) > 0 || sum.Int64() != d.Milliseconds() {
				t.Fatalf("%q read as %v: its terms add to %v ms", s, d, sum)
			}
		}
		if want := d.Round(time.Millisecond); want > 0 {
			back, err := ParseDuration(FormatDuration(d))
			if err != nil || back != want {
				t.Fatalf("%q read as %v, written %q, read back as %v, %v", s, d, FormatDuration(d), back, err)
			}
		}
	})
}

// TestParseDurationBounded: a duration beyond 10 years is refused in
// either form, and one whose nanoseconds overflow an int64 is not read as
// what they wrap to (30501 weeks wrapped to 72h25m).
func TestParseDurationBounded(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"1w": 7 * 24 * time.Hour, "1h30m": 90 * time.Minute, "1.5h": 90 * time.Minute, "3660d": 3660 * 24 * time.Hour,
	} {
		if d, err := ParseDuration(s); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", s, d, err, want)
		}
	}
	for _, s := range []string{"30501w", "999999999w", "3661d", "3660d1d", "87841h", "999999999h999999999h"} {
		if d, err := ParseDuration(s); err == nil || !strings.Contains(err.Error(), "at most 10 years") {
			t.Errorf("%q: %v, %v; want refused as beyond 10 years", s, d, err)
		}
	}
}

// FuzzParseTiers reads arbitrary tiers: each one read has positive windows
// and the fields as written.
func FuzzParseTiers(f *testing.F) {
	f.Add("page:14.4:1h:5m,ticket:1:3d:6h:1h")
	f.Add("page:14.4:1h")
	f.Add("page:x:1h:5m")
	f.Add("a:1:999999999w:1s")
	f.Fuzz(func(t *testing.T, s string) {
		tiers, err := ParseTiers(s)
		if err != nil {
			if !strings.Contains(err.Error(), "tier ") {
				t.Fatalf("%q: error %q names no tier", s, err)
			}
			return
		}
		if len(tiers) != strings.Count(s, ",")+1 {
			t.Fatalf("%q: %d tiers", s, len(tiers))
		}
		for _, tr := range tiers {
			if tr.Long <= 0 || tr.Short <= 0 || tr.For < 0 {
				t.Fatalf("%q: tier %+v", s, tr)
			}
		}
	})
}

// FuzzParseQoOObjective reads arbitrary objectives: one read has its score
// in (0, 100] and its target in (0, 1).
func FuzzParseQoOObjective(f *testing.F) {
	for _, s := range []string{"80:0.99", "80%:0.99", "80:99%", "0:0.5", "100:1", "NaN:0.5", "80:NaN", "1e2:0.5", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQoOObjective(s)
		if err != nil {
			return
		}
		if !(q.MinScore > 0 && q.MinScore <= 100 && q.Target > 0 && q.Target < 1) {
			t.Fatalf("%q read as %+v", s, q)
		}
	})
}
