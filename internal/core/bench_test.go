// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// benchDiagram has 10 probes: the definitions d1, d2 and system, the
// operators race and pick, and the outcomes o1 … o5.
const benchDiagram = `
d1 = o1 -> o2;
d2 = s:d1 -> f:race(o3, o4);
system = s:d2 -> p:pick[0.5, 0.5](o5, o1);
`

// benchObserver returns a started observer whose clock is *now and whose
// output is discarded.
func benchObserver(b *testing.B, cfg *Config, now *time.Time) *Observer {
	b.Helper()
	o, err := New(cfg, testSettings(nil, func() time.Time { return *now }))
	if err != nil {
		b.Fatal(err)
	}
	nop := consumertest.NewNop()
	o.Start(Outputs{Metrics: nop, Logs: nop})
	b.Cleanup(func() { _ = o.Shutdown(context.Background()) })
	return o
}

// BenchmarkObserverWindow measures one window close: 100 probes with
// 1000-bin histograms (dMax 1 s, 1 ms bins), 10 of them in the outcome
// diagram, a full band history (K = 30), default quantiles, metrics built as
// OTLP and handed to a sender; with the default cdf_points, with every
// bin edge (cdf_points 0), and with one what-if scenario. Filling the
// window is not timed, and a garbage collection before each close clears
// the filling's garbage.
func BenchmarkObserverWindow(b *testing.B) {
	b.Run("cdf_points=default", func(b *testing.B) { benchWindow(b, DefaultCDFPoints, nil) })
	b.Run("cdf_points=0", func(b *testing.B) { benchWindow(b, 0, nil) })
	// One what-if scenario on o1, which enters d1, d2, system and pick.
	b.Run("cdf_points=default/whatif=1", func(b *testing.B) {
		benchWindow(b, DefaultCDFPoints, map[string]map[string]string{"faster": {"o1": "0.5*X"}})
	})
}

func benchWindow(b *testing.B, cdfPoints int, whatIf map[string]map[string]string) {
	cfg := testConfig()
	cfg.Diagram = benchDiagram
	cfg.CDFPoints = cdfPoints
	cfg.WhatIf = whatIf
	now := at(time.Second)
	exp := benchObserver(b, cfg, &now)

	names := []string{"d1", "d2", "system", "race", "pick", "o1", "o2", "o3", "o4", "o5"}
	for i := len(names); i < 100; i++ {
		names = append(names, fmt.Sprintf("probe_%02d", i))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	// 2000 instances per probe per window, exponential with a mean of
	// 50 ms to 150 ms, so the histograms spread over hundreds of bins. They
	// go straight into the engine: building spans would only add garbage
	// whose collection runs during the timed window close.
	var base []analysis.Instance
	for p, name := range names {
		mean := 0.05 + 0.1*float64(p)/float64(len(names))
		for j := range 2000 {
			end := t0.UnixNano() + int64(j)*int64(time.Millisecond)/4
			d := int64(rng.ExpFloat64() * mean * 1e9)
			oc := analysis.Success
			if d >= int64(time.Second) {
				oc = analysis.Timeout
			}
			base = append(base, analysis.Instance{Probe: name, Outcome: oc, Start: end - d, End: end, DMaxNs: int64(time.Second), Bins: 1000})
		}
	}
	fill := func(w int) {
		shift := int64(w) * int64(time.Second)
		bt := exp.engine.Begin()
		for _, in := range base {
			in.Start += shift
			in.End += shift
			bt.Add(&in)
		}
		bt.End()
	}
	// Warm up: fill the band history.
	w := 0
	for ; w < cfg.History+1; w++ {
		fill(w)
		now = at(time.Duration(w+2) * time.Second)
		exp.tick(now)
	}
	// The machine may be shared: besides wall time, report the process's
	// CPU time (user + system, all threads, so the garbage collector's work
	// counts) spent in the window closes.
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		fill(w)
		now = at(time.Duration(w+2) * time.Second)
		w++
		runtime.GC()
		c0 := processCPU()
		b.StartTimer()
		exp.tick(now)
		b.StopTimer()
		cpu += processCPU() - c0
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkConsumeTraces measures the instance path: batches of 1000
// instance spans (each with two unrelated attributes besides the deltaq.*
// ones) counted into the open window. It reports ns and allocations per
// span. bench/ measures the same path through a collector pipeline.
func BenchmarkConsumeTraces(b *testing.B) {
	specs := make([]span, 1000)
	for i := range specs {
		specs[i] = span{probe: fmt.Sprintf("probe_%d", i%10), outcome: contract.Success,
			end: time.Duration(i) * time.Microsecond, delay: time.Duration(i%50) * time.Millisecond,
			dmax: 50 * time.Millisecond, bins: 500}
	}
	td := instanceTraces(specs...)
	td.MarkReadOnly()
	spans := float64(td.SpanCount())
	now := at(time.Second)
	o := benchObserver(b, testConfig(), &now)
	ctx := context.Background()
	_ = o.ConsumeTraces(ctx, td) // register the probes
	measure(b, spans, func() { _ = o.ConsumeTraces(ctx, td) })
}

// measure runs op in the benchmark loop and reports ns, allocations and
// bytes per span.
func measure(b *testing.B, spans float64, op func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		op()
	}
	b.StopTimer()
	cpu := processCPU() - c0
	runtime.ReadMemStats(&after)
	n := float64(b.N) * spans
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/span")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/span")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/span")
}
