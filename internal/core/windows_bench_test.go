// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Size of BenchmarkGatewayMerge: agents sending one window each of probes
// probes with bins bins.
const (
	mergeAgents = 64
	mergeProbes = 100
	mergeBins   = 1000
)

// BenchmarkGatewayMerge measures a gateway's work per window: the windows
// of 64 agents, each 100 probes of 1000 bins (dMax 1 s, 1 ms bins), merged
// by ConsumeMetrics from the OTLP metrics the agents emit, one request per
// agent sent from GOMAXPROCS goroutines as the OTLP receiver's concurrent
// handlers call it (with -cpu 1, one after the other), then the merged
// window closed (Advance, analysis, output built and handed to a sender).
// The agents' output is built once, by an agent observer with emit_windows
// (the real builder: every ΔQ metric, deltaq.window among them, which the
// gateway picks out); each agent's copy names it by service.instance.id.
// Each loop moves the windows' bounds to the gateway's next window outside
// the timer. Besides ns/op (one window) it reports the merge and the close
// apart (wall-clock time), and the process's CPU time, in all and during
// the merge: the merge's CPU time is that of every goroutine.
func BenchmarkGatewayMerge(b *testing.B) { benchmarkGatewayMerge(b, 2000) }

// BenchmarkGatewayMergeSparse is BenchmarkGatewayMerge with the windows
// of a realistic load: 5 instances of each probe per agent, 320 per probe
// in the merged window, a few of the 1000 bins occupied. The windows go
// as sparse deltaq.window points (the first edge, dMax and the edges
// around the occupied bins): the merge costs what the instances cost.
func BenchmarkGatewayMergeSparse(b *testing.B) { benchmarkGatewayMerge(b, 5) }

// benchmarkGatewayMerge runs BenchmarkGatewayMerge with perProbe instances
// of each probe in each agent's window.
func benchmarkGatewayMerge(b *testing.B, perProbe int) {
	mds, points := agentRequests(b, perProbe, false)
	gw, cfg, now := gatewayObserver(b)
	ctx := context.Background()
	w := 0
	// window merges the agents' windows of window w and closes it.
	var mergeCPU time.Duration
	window := func() (merge, closing time.Duration) {
		start, c0 := time.Now(), processCPU()
		consumeConcurrently(ctx, gw, mds)
		mid := time.Now()
		mergeCPU += processCPU() - c0
		*now = at(time.Duration(w+1)*time.Second + cfg.Lag)
		gw.tick(*now)
		return mid.Sub(start), time.Since(mid)
	}
	bounds := func() {
		for _, dp := range points {
			setWindowBounds(dp, w)
		}
	}
	// Warm up: fill the band history.
	for ; w < cfg.History+1; w++ {
		bounds()
		window()
	}
	checkMerged(b, gw)
	var merge, closing, cpu time.Duration
	mergeCPU = 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		bounds()
		runtime.GC()
		c0 := processCPU()
		b.StartTimer()
		m, c := window()
		b.StopTimer()
		cpu += processCPU() - c0
		merge += m
		closing += c
		w++
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(merge.Nanoseconds())/n, "merge-ns/op")
	b.ReportMetric(float64(closing.Nanoseconds())/n, "close-ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(mergeCPU.Nanoseconds())/n, "merge-cpu-ns/op")
}

// BenchmarkGatewayMergeDecoded is BenchmarkGatewayMerge as a gateway's
// receiver drives it: each agent's request is decoded from its OTLP
// protobuf form and handed to ConsumeMetrics at once, one request after
// the other, so that the merge reads what was just decoded, as it does in
// a collector (BenchmarkGatewayMerge reads the 64 requests after a
// garbage collection has gone through the heap). merge-ns/op is the time
// spent in ConsumeMetrics alone, the decoding left out: the merge's cost
// on one core.
func BenchmarkGatewayMergeDecoded(b *testing.B) { benchmarkGatewayMergeDecoded(b, 2000, false) }

// BenchmarkGatewayMergeDecodedSparse is BenchmarkGatewayMergeDecoded with
// BenchmarkGatewayMergeSparse's windows.
func BenchmarkGatewayMergeDecodedSparse(b *testing.B) { benchmarkGatewayMergeDecoded(b, 5, false) }

// BenchmarkGatewayMergeDecodedWindowsOnly is BenchmarkGatewayMergeDecoded
// with agents that send their windows alone (windows_only).
func BenchmarkGatewayMergeDecodedWindowsOnly(b *testing.B) {
	benchmarkGatewayMergeDecoded(b, 2000, true)
}

// BenchmarkGatewayMergeDecodedWindowsOnlySparse is
// BenchmarkGatewayMergeDecodedSparse with agents that send their windows
// alone (windows_only).
func BenchmarkGatewayMergeDecodedWindowsOnlySparse(b *testing.B) {
	benchmarkGatewayMergeDecoded(b, 5, true)
}

// benchmarkGatewayMergeDecoded runs BenchmarkGatewayMergeDecoded with
// perProbe instances of each probe in each agent's window, from agents
// with windows_only when windowsOnly.
func benchmarkGatewayMergeDecoded(b *testing.B, perProbe int, windowsOnly bool) {
	mds, _ := agentRequests(b, perProbe, windowsOnly)
	wire := make([][]byte, len(mds))
	var enc pmetric.ProtoMarshaler
	for i, md := range mds {
		var err error
		if wire[i], err = enc.MarshalMetrics(md); err != nil {
			b.Fatal(err)
		}
	}
	gw, cfg, now := gatewayObserver(b)
	ctx := context.Background()
	var dec pmetric.ProtoUnmarshaler
	// merge decodes and merges the agents' windows of window w (the time
	// in ConsumeMetrics returned), then closes it.
	merge := func(w int) (d time.Duration) {
		for _, buf := range wire {
			md, err := dec.UnmarshalMetrics(buf)
			if err != nil {
				b.Fatal(err)
			}
			forEachMetric(md, func(m pmetric.Metric) {
				if m.Name() == contract.MetricWindow {
					for _, dp := range m.Histogram().DataPoints().All() {
						setWindowBounds(dp, w)
					}
				}
			})
			t0 := time.Now()
			_ = gw.ConsumeMetrics(ctx, md)
			d += time.Since(t0)
		}
		*now = at(time.Duration(w+1)*time.Second + cfg.Lag)
		gw.tick(*now)
		return d
	}
	w := 0
	for ; w < cfg.History+1; w++ {
		merge(w)
	}
	checkMerged(b, gw)
	var total time.Duration
	b.ResetTimer()
	for b.Loop() {
		total += merge(w)
		w++
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "merge-ns/op")
	b.ReportMetric(float64(len(wire[0])), "request-B")
}

// agentRequests returns the requests of mergeAgents agents, each the
// output of agentWindows(perProbe, windowsOnly) named by its
// service.instance.id, and their deltaq.window points.
func agentRequests(b *testing.B, perProbe int, windowsOnly bool) ([]pmetric.Metrics, []pmetric.HistogramDataPoint) {
	agentMD := agentWindows(b, perProbe, windowsOnly)
	mds := make([]pmetric.Metrics, mergeAgents)
	var points []pmetric.HistogramDataPoint
	for i := range mds {
		mds[i] = pmetric.NewMetrics()
		for _, md := range agentMD {
			for _, rm := range md.ResourceMetrics().All() {
				rm.CopyTo(mds[i].ResourceMetrics().AppendEmpty())
			}
		}
		rms := mds[i].ResourceMetrics()
		for j := 0; j < rms.Len(); j++ {
			rms.At(j).Resource().Attributes().PutStr("service.instance.id", fmt.Sprintf("agent-%02d", i))
		}
		forEachMetric(mds[i], func(m pmetric.Metric) {
			if m.Name() == contract.MetricWindow {
				for _, dp := range m.Histogram().DataPoints().All() {
					points = append(points, dp)
				}
			}
		})
	}
	if len(points) != mergeAgents*mergeProbes {
		b.Fatalf("%d deltaq.window points, want %d", len(points), mergeAgents*mergeProbes)
	}
	return mds, points
}

// gatewayObserver returns the gateway of the merge benchmarks, which pins
// the probes' layouts as the example gateway does, its configuration and
// its clock.
func gatewayObserver(b *testing.B) (*Observer, *Config, *time.Time) {
	cfg := testConfig()
	cfg.Lag = 3 * time.Second
	cfg.Probes = make(map[string]analysis.ProbeConfig, mergeProbes)
	for p := range mergeProbes {
		cfg.Probes[fmt.Sprintf("probe_%03d", p)] = analysis.ProbeConfig{DMax: time.Second, Bins: mergeBins}
	}
	now := new(time.Time)
	*now = at(0)
	return benchObserver(b, cfg, now), cfg, now
}

// setWindowBounds moves a deltaq.window point to window w.
func setWindowBounds(dp pmetric.HistogramDataPoint, w int) {
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(time.Duration(w) * time.Second)))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(at(time.Duration(w+1) * time.Second)))
}

// checkMerged fails the benchmark unless the gateway counted instances and
// dropped none.
func checkMerged(b *testing.B, gw *Observer) {
	b.Helper()
	if st := gw.Stats(); st.Counted == 0 || st.Dropped != (analysis.Drops{}) {
		b.Fatalf("the gateway counted %d instances and dropped %v", st.Counted, st.Dropped)
	}
}

// consumeConcurrently gives the requests to the gateway's ConsumeMetrics
// from GOMAXPROCS goroutines, each taking the next request not yet taken,
// and returns when all are consumed.
func consumeConcurrently(ctx context.Context, gw *Observer, mds []pmetric.Metrics) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(mds)); i = next.Add(1) - 1 {
				_ = gw.ConsumeMetrics(ctx, mds[i])
			}
		})
	}
	wg.Wait()
}

// agentWindows returns the output of one window of an agent observer with
// emit_windows: mergeProbes probes, each with perProbe instances (2000:
// spread exponentially over hundreds of its mergeBins bins), one in 50 a
// failure; with windows_only when windowsOnly.
func agentWindows(b *testing.B, perProbe int, windowsOnly bool) []pmetric.Metrics {
	b.Helper()
	cfg := testConfig()
	cfg.EmitWindows = true
	cfg.WindowsOnly = windowsOnly
	now := at(0)
	o, err := New(cfg, testSettings(nil, func() time.Time { return now }))
	if err != nil {
		b.Fatal(err)
	}
	sink := new(consumertest.MetricsSink)
	o.Start(Outputs{Metrics: sink})
	defer func() { _ = o.Shutdown(context.Background()) }()
	rng := rand.New(rand.NewPCG(2, 2))
	bt := o.engine.Begin()
	for p := range mergeProbes {
		name := fmt.Sprintf("probe_%03d", p)
		mean := 0.05 + 0.1*float64(p)/mergeProbes
		for j := range perProbe {
			end := t0.UnixNano() + int64(j)*int64(time.Millisecond)/4
			d := int64(rng.ExpFloat64() * mean * 1e9)
			oc := analysis.Success
			if j%50 == 7 {
				oc = analysis.Failure
			}
			// No timeout: one ends at its start + dMax, in the window
			// before.
			d %= int64(time.Second)
			bt.Add(&analysis.Instance{Probe: name, Outcome: oc, Start: end - d, End: end, DMaxNs: int64(time.Second), Bins: mergeBins})
		}
	}
	bt.End()
	now = at(2 * time.Second)
	o.tick(now)
	return sink.AllMetrics()
}

// BenchmarkReadFine measures reading the analysis counts of the 100
// deltaq.window points of one agent's window, per point, from pdata's
// bytes where they lie: BenchmarkGatewayMerge's windows (dense) and
// BenchmarkGatewayMergeSparse's (sparse).
func BenchmarkReadFine(b *testing.B) {
	b.Run("dense", func(b *testing.B) { benchReadFine(b, 2000) })
	b.Run("sparse", func(b *testing.B) { benchReadFine(b, 5) })
}

// benchReadFine runs BenchmarkReadFine with perProbe instances of each
// probe in the window.
func benchReadFine(b *testing.B, perProbe int) {
	var values []pcommon.Value
	for _, md := range agentWindows(b, perProbe, true) {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricWindow {
				return
			}
			for _, dp := range m.Histogram().DataPoints().All() {
				if v, ok := dp.Attributes().Get(contract.AttrFine); ok {
					values = append(values, v)
				}
			}
		})
	}
	if len(values) != mergeProbes {
		b.Fatalf("%d points with analysis counts, want %d", len(values), mergeProbes)
	}
	var w analysis.Window
	b.ResetTimer()
	for b.Loop() {
		for _, v := range values {
			if !readFine(v, &w) {
				b.Fatal("not a window's analysis counts")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(values)), "ns/window")
}
