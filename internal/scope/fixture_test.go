// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"context"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// demoBatch is what the connector sends at the close of one window: its
// metrics, and its trigger and snapshot records (none: an empty plog.Logs).
type demoBatch struct {
	metrics pmetric.Metrics
	logs    plog.Logs
}

// Windows of demoBatches: worker_2 is slow in windows demoSlowFrom to
// demoSlowTo − 1; window demoLull has demoLullJobs jobs only.
const (
	demoWindows  = 10
	demoSlowFrom = 5
	demoSlowTo   = 7
	demoJobs     = 40 // jobs per window
	demoLull     = 8
	demoLullJobs = 5
	demoAllJobs  = (demoWindows-1)*demoJobs + demoLullJobs
)

// demoBatches runs the real metric and log builders (internal/core, which
// the connector runs) over a deterministic version of make demo's workload:
// the probes, QTAs, Quality of Outcome requirements and diagram (job =
// worker_1 -> worker_2) of examples/demo/collector.yaml, 40 jobs per 1 s
// window (5 in window 8, a lull), each worker's delay
// the exponential quantile at (i + ½)/40 (mean 5 ms; worker_2's in another
// order). In windows 5 and 6 worker_2 is slow: its delay is 4× + 30 ms (at
// most 95 ms, inside dMax), so F(20 ms) = 0 breaks its QTA and the job's, and
// a tenth of its instances time out (failure ratio 0.1 > 0.01). Snapshots keep 2 windows before the
// trigger's and 2 after. The scores need 10 completed instances (the 90th
// percentile): in the lull job's are withheld, and worker_2's is 0 from its
// rate alone, 5 jobs a second below its min_rate of 20.
func demoBatches(t testing.TB) []demoBatch {
	t.Helper()
	cfg := core.NewDefaultConfig()
	cfg.Interval = time.Second
	cfg.Lag = 500 * time.Millisecond
	cfg.Diagram = "job = worker_1 -> worker_2;"
	cfg.Snapshot = analysis.SnapshotConfig{Enabled: true, Before: 2, After: 2 * time.Second}
	worker := analysis.ProbeConfig{
		DMax: 100 * time.Millisecond, Bins: 100,
		QTA: analysis.QTA{Points: []analysis.QTAPoint{
			{Delay: 20 * time.Millisecond, P: 0.5}, {Delay: 70 * time.Millisecond, P: 0.9},
		}, MaxFailure: 0.01},
		Triggers: analysis.Triggers{QTA: true, Failure: true},
	}
	worker2 := worker
	worker2.QoO = analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 20 * time.Millisecond}, {P: 0.9, Delay: 50 * time.Millisecond}}, MaxFailure: 0.01},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 60 * time.Millisecond}, {P: 0.9, Delay: 95 * time.Millisecond}}, MaxFailure: 0.2},
		MinRate: 20,
	}
	cfg.Probes = map[string]analysis.ProbeConfig{
		"worker_1": worker, "worker_2": worker2,
		"job": {
			QoO: analysis.QoOConfig{
				ROP:  analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 40 * time.Millisecond}, {P: 0.9, Delay: 100 * time.Millisecond}}, MaxFailure: 0.02},
				CPUP: analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 150 * time.Millisecond}, {P: 0.9, Delay: 190 * time.Millisecond}}, MaxFailure: 0.2},
			},
			DMax: 200 * time.Millisecond, Bins: 100,
			QTA: analysis.QTA{Points: []analysis.QTAPoint{
				{Delay: 40 * time.Millisecond, P: 0.5}, {Delay: 100 * time.Millisecond, P: 0.9},
			}, MaxFailure: 0.02},
			Triggers: analysis.Triggers{QTA: true, Failure: true},
		},
	}
	clock := coretest.NewClock(coretest.T0)
	o, err := core.New(&cfg, core.Settings{
		Kind: "connector", Scope: "scope-http-test",
		Telemetry: componenttest.NewNopTelemetrySettings(),
		Now:       clock.Now, Ticks: clock.C, Ticked: clock.Ticked,
	})
	if err != nil {
		t.Fatal(err)
	}
	metrics, logs := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	o.Start(core.Outputs{Metrics: metrics, Logs: logs})
	defer func() {
		if err := o.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	expQuantile := func(mean time.Duration, i int) time.Duration {
		return time.Duration(-float64(mean) * math.Log(1-(float64(i)+0.5)/demoJobs))
	}
	// The engine's first window is the one before T0: close it unseen.
	clock.Tick(coretest.At(cfg.Lag))
	var batches []demoBatch
	for w := range demoWindows {
		slow := w >= demoSlowFrom && w < demoSlowTo
		var spans []coretest.Span
		jobs := demoJobs
		if w == demoLull {
			jobs = demoLullJobs
		}
		for i := range jobs {
			start := coretest.At(time.Duration(w)*time.Second + time.Duration(i)*15*time.Millisecond)
			d1 := expQuantile(5*time.Millisecond, i)
			d2 := expQuantile(5*time.Millisecond, (i*7)%demoJobs)
			if slow {
				d2 = min(4*d2+30*time.Millisecond, 95*time.Millisecond)
			}
			out2, outJob := contract.Success, contract.Success
			if slow && i%10 == 0 {
				d2, out2, outJob = 100*time.Millisecond, contract.Timeout, contract.Timeout
			}
			mid := start.Add(d1)
			spans = append(spans,
				coretest.Span{Probe: "worker_1", Outcome: contract.Success, Start: start, End: mid, DMax: worker.DMax, Bins: 100},
				coretest.Span{Probe: "worker_2", Outcome: out2, Start: mid, End: mid.Add(d2), DMax: worker.DMax, Bins: 100},
				coretest.Span{Probe: "job", Outcome: outJob, Start: start, End: mid.Add(d2), DMax: 200 * time.Millisecond, Bins: 100},
			)
		}
		if err := o.ConsumeTraces(context.Background(), coretest.Traces(spans...)); err != nil {
			t.Fatal(err)
		}
		nm, nl := len(metrics.AllMetrics()), len(logs.AllLogs())
		// Window w ends at w+1 s and closes the lag later.
		clock.Tick(coretest.At(time.Duration(w+1)*time.Second + cfg.Lag))
		b := demoBatch{logs: plog.NewLogs()}
		switch got := metrics.AllMetrics()[nm:]; len(got) {
		case 1:
			b.metrics = got[0]
		default:
			t.Fatalf("window %d: %d metric batches, want 1", w, len(got))
		}
		for _, ld := range logs.AllLogs()[nl:] {
			ld.ResourceLogs().MoveAndAppendTo(b.logs.ResourceLogs())
		}
		batches = append(batches, b)
	}
	return batches
}
