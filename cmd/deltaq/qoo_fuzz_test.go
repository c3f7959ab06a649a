// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseRatio reads arbitrary ratios: one read is in [0, 1], the same
// as a percentage as the fraction (to 12 significant digits), and an
// error quotes what was written, its % included.
func FuzzParseRatio(f *testing.F) {
	for _, s := range []string{"0.05", "5%", " 5 % ", "100%", "1", "0", "1.5", "101%", "-0", "NaN", "Inf%", "%", "0x1p-2", "1e-320%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseRatio(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ratio "+strconv.Quote(strings.TrimSpace(s))+": ") {
				t.Fatalf("%q: error %q", s, err)
			}
			return
		}
		if !(v >= 0 && v <= 1) {
			t.Fatalf("%q read as %v", s, v)
		}
		if p, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
			if u, err := parseRatio(strings.TrimSpace(p)); err == nil && math.Abs(u/100-v) > 1e-12 {
				t.Fatalf("%q read as %v, %q as %v", s, v, p, u)
			}
		}
	})
}

// FuzzParseQoOLatency reads arbitrary percentiles and delays of a QoO
// requirement: one read has its percentile in [0, 1] and its delays
// finite and not negative, ROP no later than CPUP or not (that is the
// requirement's check), and an error names the field at fault.
func FuzzParseQoOLatency(f *testing.F) {
	f.Add("p99", "10ms", "20ms")
	f.Add("p0.99", "10ms", "20ms")
	f.Add("p100", "0", "1s")
	f.Add("p", "1ms", "2ms")
	f.Add("pNaN", "1ms", "2ms")
	f.Add("p50", "1e400s", "x")
	f.Fuzz(func(t *testing.T, key, rop, cpup string) {
		key = "p" + key[min(1, len(key)):]
		l, err := parseQoOLatency(key, rop, cpup)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "percentile ") && !strings.HasPrefix(msg, "ROP ") && !strings.HasPrefix(msg, "CPUP ") {
				t.Fatalf("%q %q %q: error %q names no field", key, rop, cpup, msg)
			}
			return
		}
		if !(l.Percentile >= 0 && l.Percentile <= 1) || !(l.ROP >= 0) || !(l.CPUP >= 0) || math.IsInf(l.ROP, 0) || math.IsInf(l.CPUP, 0) {
			t.Fatalf("%q %q %q read as %+v", key, rop, cpup, l)
		}
	})
}
