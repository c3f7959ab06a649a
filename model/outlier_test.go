// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fiveMsTraces returns n traces of GET /x, 5 ms, calling db for 3 ms, 10
// ms apart from 1 November 2026.
func fiveMsTraces(n int) []Span {
	base := float64(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()) / 1e6
	var spans []Span
	for i := range n {
		s0 := base + float64(i)*10
		spans = append(spans, sp(uint64(i+1), 1, 0, "GET /x", s0, s0+5), sp(uint64(i+1), 2, 1, "db", s0+1, s0+4))
	}
	return spans
}

// rootSpan is a span alone in trace tr, from start to end ns.
func rootSpan(tr uint64, name string, start, end int64) Span {
	s := Span{Service: "svc", Name: name, Start: start, End: end}
	binary.BigEndian.PutUint64(s.TraceID[8:], tr)
	s.SpanID[7] = 1
	return s
}

// TestExtremeOutliersDoNotSetTheBins: 108 traces of 5 ms and 8 spans with
// extreme timestamps (a start at the epoch, an end in November 2026) made
// the model's bins 35 s wide and its observed median 19 s, with no doubt
// about it. The bulk of the durations sets the bins, the 8 are timeouts
// and a doubt names them, whether they are spans of the same operation or
// of one of their own; durations 4000 times the others, with nothing
// between, are extreme too.
func TestExtremeOutliersDoNotSetTheBins(t *testing.T) {
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, c := range []struct {
		name, op string
		start    func(k int) int64 // of the k-th extreme span
		of       uint64
		from     float64 // the extreme durations are at least this long, s
	}{
		{"epoch start, same operation", "GET /x", func(k int) int64 { return int64(k) }, 116, 9.7 * 3600},
		{"epoch start, own operation", "GET /y", func(k int) int64 { return int64(k) }, 8, 9.7 * 3600},
		{"20 s, same operation", "GET /x", func(k int) int64 { return end - 20e9 + int64(k)*1e6 }, 116, 19.9},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans := fiveMsTraces(108)
			for k := range 8 {
				spans = append(spans, rootSpan(uint64(1000+k), c.op, c.start(k), end+int64(k)*1e6))
			}
			m, d := build(t, Config{}, spans, DefaultBins)
			if m.BinWidth > 5.1e-6 {
				t.Errorf("bin width %v s, want 5 ms / 1000 bins", m.BinWidth)
			}
			v, err := m.Validate(d)
			if err != nil {
				t.Fatal(err)
			}
			x := v[0]
			if x.Operation != "svc.GET /x" || math.Abs(*x.Observed.Quantiles[0]-0.005) > 0.0001 || math.Abs(*x.Predicted.Quantiles[0]-0.005) > 0.0001 {
				t.Errorf("%s: median observed %v, predicted %v; want 5 ms", x.Operation, *x.Observed.Quantiles[0], *x.Predicted.Quantiles[0])
			}
			if len(m.Outliers) != 1 {
				t.Fatalf("outliers %+v, want one node", m.Outliers)
			}
			o := m.Outliers[0]
			if o.Operation != "svc."+c.op || o.Spans != 8 || o.Of != c.of || o.From < c.from || o.Rest > 0.0051 && c.of > 8 {
				t.Errorf("outlier %+v", o)
			}
			ds := Doubts(m.Stats, m.Outliers, v, time.Second)
			if len(ds) == 0 || !strings.HasPrefix(ds[0].What, "8 spans last implausibly long") || !strings.Contains(ds[0].What, "8 of the "+strconv.FormatUint(c.of, 10)+" of svc."+c.op) {
				t.Errorf("doubts %+v", ds)
			}
		})
	}
}

// TestNoExtremesInRealShapes: a heavy tail, two modes of more than a tenth
// each, and a few durations a hundred times the others are no outliers;
// the bins still cover them.
func TestNoExtremesInRealShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for name, draw := range map[string]func(i int) float64{ // ms
		"exponential":   func(int) float64 { return rng.ExpFloat64() * 5 },
		"lognormal σ=2": func(int) float64 { return math.Exp(rng.NormFloat64()*2) * 5 },
		"two modes":     func(i int) float64 { return map[bool]float64{true: 5000, false: 5}[i%4 == 0] },
		"100 times":     func(i int) float64 { return map[bool]float64{true: 500, false: 5}[i%20 == 0] },
	} {
		var s Sketch
		for i := range 1000 {
			s.Add(int64(draw(i) * 1e6))
		}
		if n, _, rest := s.Extremes(); n != 0 || rest != s.Max() || s.BulkQuantile(0.999) != s.Quantile(0.999) {
			t.Errorf("%s: %d extreme outliers, the rest at most %v (longest %v)", name, n, rest, s.Max())
		}
	}
	// Every duration beyond the sketch's range: no bulk at all.
	var s Sketch
	s.Add(1 << 50)
	if n, _, rest := s.Extremes(); n != 1 || rest != 0 || s.BulkMax() != 0 || s.BulkQuantile(0.5) != 0 {
		t.Errorf("one duration of 2⁵⁰ ns: %d extreme outliers, the rest at most %v", n, rest)
	}
}
