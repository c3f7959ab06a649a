// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// fuzzWindowBase is the deltaq.window point of one window of probe p, 1000
// bins of 1 ms of which four are occupied, two timeouts, analysis counts:
// the point the fuzzed ones are made from.
func fuzzWindowBase() pmetric.HistogramDataPoint {
	b := newBuilder(0, 0, exporterScope, "", t0)
	b.emitWindows = true
	counts := make([]uint64, 1000)
	counts[0], counts[5], counts[6], counts[500] = 1, 2, 3, 4
	p := probeResult(0.001, counts...)
	p.Counts.Timeout = 2
	md := b.metrics(&analysis.Result{Start: at(0), End: at(time.Second), Probes: []analysis.ProbeResult{p}})
	var dp pmetric.HistogramDataPoint
	forEachMetric(md, func(m pmetric.Metric) {
		if m.Name() == contract.MetricWindow {
			dp = m.Histogram().DataPoints().At(0)
		}
	})
	putFine(dp.Attributes(), &analysis.Window{Fine: true, FineIndex: []int{3, 9, 40, 41}, FineCounts: []uint64{1, 2, 3, 4}}, nil)
	return dp
}

func float64sFrom(raw []byte) []float64 {
	out := make([]float64, 0, len(raw)/8)
	for ; len(raw) >= 8; raw = raw[8:] {
		out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(raw)))
	}
	return out
}

func uint64sFrom(raw []byte) []uint64 {
	out := make([]uint64, 0, len(raw)/8)
	for ; len(raw) >= 8; raw = raw[8:] {
		out = append(out, binary.LittleEndian.Uint64(raw))
	}
	return out
}

func bytesOf[T float64 | uint64](vs []T) []byte {
	var b []byte
	for _, v := range vs {
		switch v := any(v).(type) {
		case float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		}
	}
	return b
}

// FuzzReadWindow reads deltaq.window points an agent might send, their
// bounds, bucket counts, timeouts, failures and analysis counts arbitrary,
// and gives those read to an engine. A point read must be a window: its
// overflow bucket its timeouts and failures, its bins within its layout
// (one count a bin, or indices strictly increasing below the bins), its
// successes those of its buckets, its analysis counts those the reference
// decoder (fineFromRaw) reads. The engine must take any window read
// without failing, and one it accepts must count its instances.
func FuzzReadWindow(f *testing.F) {
	base := fuzzWindowBase()
	bounds, counts := base.ExplicitBounds().AsRaw(), base.BucketCounts().AsRaw()
	fine, _ := base.Attributes().Get(contract.AttrFine)
	fineRaw := fine.Bytes().AsRaw()
	f.Add(bytesOf(bounds), bytesOf(counts), int64(2), int64(0), fineRaw)
	f.Add(bytesOf(bounds), bytesOf(counts), int64(1), int64(1), []byte{fineRun, 1, 3, 1, 0, 1})
	f.Add(bytesOf([]float64{0.001, 1}), bytesOf([]uint64{0, 0, 7}), int64(3), int64(4), []byte(nil))
	f.Add(bytesOf([]float64{0.001, 0.002, 1}), bytesOf([]uint64{1, 5, 0, 2}), int64(2), int64(0), []byte{})
	f.Add(bytesOf([]float64{0.001, 0.0015, 1}), bytesOf([]uint64{1, 0, 0, 2}), int64(2), int64(0), fineRaw)
	f.Add(bytesOf(bounds), bytesOf(counts), int64(-1), int64(3), fineRaw)
	f.Add(bytesOf(bounds), bytesOf(counts[:len(counts)-1]), int64(2), int64(0), fineRaw[:len(fineRaw)-1])
	f.Add(bytesOf(bounds), bytesOf(append(counts[:len(counts)-1:len(counts)-1], math.MaxUint64)), int64(math.MaxInt64), int64(math.MaxInt64), []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1})
	f.Fuzz(func(t *testing.T, rawBounds, rawCounts []byte, timeouts, failures int64, rawFine []byte) {
		dp := pmetric.NewHistogramDataPoint()
		base.CopyTo(dp)
		dp.ExplicitBounds().FromRaw(float64sFrom(rawBounds))
		bucketCounts := uint64sFrom(rawCounts)
		dp.BucketCounts().FromRaw(bucketCounts)
		a := dp.Attributes()
		a.PutInt(contract.AttrTimeout, timeouts)
		a.PutInt(contract.AttrFailure, failures)
		if rawFine == nil {
			a.Remove(contract.AttrFine)
			a.Remove(contract.AttrWeightSum)
			a.Remove(contract.AttrWeightSquares)
		} else {
			a.PutEmptyBytes(contract.AttrFine).FromRaw(rawFine)
		}
		var w analysis.Window
		if !readWindow(dp, "agent", &w, freshReader()) {
			return
		}
		n := len(bucketCounts) - 1
		if w.Timeouts != timeouts || w.Failures != failures || timeouts < 0 || failures < 0 ||
			bucketCounts[n] != uint64(timeouts)+uint64(failures) {
			t.Fatalf("timeouts %d and failures %d read as %d and %d beside an overflow of %d",
				timeouts, failures, w.Timeouts, w.Failures, bucketCounts[n])
		}
		if w.Bins <= 0 || n > w.Bins {
			t.Fatalf("%d buckets read as %d bins", n, w.Bins)
		}
		if w.BinIndex == nil {
			if len(w.BinCounts) != w.Bins {
				t.Fatalf("dense counts %d for %d bins", len(w.BinCounts), w.Bins)
			}
		} else if len(w.BinIndex) != len(w.BinCounts) {
			t.Fatalf("%d indices, %d counts", len(w.BinIndex), len(w.BinCounts))
		} else {
			for j, i := range w.BinIndex {
				if i < 0 || i >= w.Bins || j > 0 && i <= w.BinIndex[j-1] {
					t.Fatalf("bin indices %v not increasing within %d bins", w.BinIndex, w.Bins)
				}
			}
		}
		var want, got uint64
		for _, c := range bucketCounts[:n] {
			want += c
		}
		for _, c := range w.BinCounts {
			got += c
		}
		if got != want {
			t.Fatalf("buckets of %d successes read as %d", want, got)
		}
		if rawFine != nil {
			ref, ok := fineFromRaw(rawFine)
			if !ok || !w.Fine || !slices.Equal(ref.FineIndex, w.FineIndex) || ref.FineFirst != w.FineFirst ||
				!slices.Equal(ref.FineCounts, w.FineCounts) {
				t.Fatalf("analysis counts %x read as %v@%d %v, reference %v@%d %v (%v)", rawFine,
					w.FineIndex, w.FineFirst, w.FineCounts, ref.FineIndex, ref.FineFirst, ref.FineCounts, ok)
			}
		}
		e, err := analysis.New(analysis.Config{Interval: time.Second, Lag: time.Second,
			Probes: map[string]analysis.ProbeConfig{"p": {DMax: time.Second, Bins: 1000}}}, t0)
		if err != nil {
			t.Fatal(err)
		}
		if c := e.AddWindow(&w); c == analysis.ContributionAccepted {
			if uint64(timeouts)+uint64(failures)+want > analysis.MaxWindowInstances {
				t.Fatalf("a window of %d instances accepted", uint64(timeouts)+uint64(failures)+want)
			}
			// The engine's window holds the agent's instances.
			var merged analysis.Counts
			for _, r := range e.Flush(at(time.Hour)) {
				for _, p := range r.Probes {
					if p.Name == "p" {
						merged.Success += p.Counts.Success
						merged.Timeout += p.Counts.Timeout
						merged.Failure += p.Counts.Failure
					}
				}
			}
			if uint64(merged.Success) != want || merged.Timeout != timeouts || merged.Failure != failures {
				t.Fatalf("a window of %d successes, %d timeouts, %d failures merged as %+v", want, timeouts, failures, merged)
			}
		}
	})
}
