package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// The comparison uses batches of 1000 minimal spans (one resource, ten span
// names, no attributes), the shape of the design's reference figures. Every
// span is matched by a probe, so every span becomes an outcome instance that
// the exporter windows: the deltaq side does its full per-span work.
const (
	batchSize = 1000
	names     = 10
)

func minimalBatch() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	start := time.Now()
	for i := range batchSize {
		s := spans.AppendEmpty()
		s.SetName(fmt.Sprintf("op-%d", i%names))
		var tid [16]byte
		var sid [8]byte
		tid[0], tid[1], tid[15] = byte(i>>8), byte(i), 1
		sid[0], sid[1], sid[7] = byte(i>>8), byte(i), 1
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i%100) * time.Millisecond)))
	}
	return td
}

// run feeds a fresh copy of the batch per iteration (copied with the timer
// stopped: the processor adds attributes to the spans it maps) and reports
// ns/span and allocs/span besides the per-batch figures.
func run(b *testing.B, next consumer.Traces) {
	ctx := context.Background()
	src := minimalBatch()
	batches := make([]ptrace.Traces, 0, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(batches) == 0 {
			b.StopTimer()
			for range cap(batches) {
				td := ptrace.NewTraces()
				src.CopyTo(td)
				batches = append(batches, td)
			}
			b.StartTimer()
		}
		td := batches[len(batches)-1]
		batches = batches[:len(batches)-1]
		if err := next.ConsumeTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchSize), "ns/span")
}

// BenchmarkSpanmetrics is contrib's spanmetrics connector v0.162.0 with its
// default configuration, writing to a no-op metrics consumer.
func BenchmarkSpanmetrics(b *testing.B) {
	f := spanmetricsconnector.NewFactory()
	cfg := f.CreateDefaultConfig()
	conn, err := f.CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(f.Type()), cfg, consumertest.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	if err := conn.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Shutdown(context.Background()) }()
	run(b, conn)
}

// BenchmarkDeltaQ is the deltaq processor with ten probes (one per span name)
// feeding the deltaq exporter, as in a collector's traces pipeline. The
// exporter's OTLP endpoint is unreachable and its interval long: what is
// measured is the per-span path (mapping, attributes, windowing), not the
// once-per-interval window close, which BenchmarkExporterWindow covers.
func BenchmarkDeltaQ(b *testing.B) {
	ctx := context.Background()
	ef := deltaqexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*deltaqexporter.Config)
	ecfg.ClientConfig.Endpoint = "127.0.0.1:1"
	ecfg.Interval = time.Hour
	exp, err := ef.CreateTraces(ctx, exportertest.NewNopSettings(ef.Type()), ecfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()

	pf := deltaqprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*deltaqprocessor.Config)
	for i := range names {
		pcfg.Probes = append(pcfg.Probes, deltaqprocessor.ProbeConfig{
			Name:  fmt.Sprintf("op-%d", i),
			Match: deltaqprocessor.MatchConfig{SpanName: fmt.Sprintf("op-%d", i)},
			DMax:  time.Second,
			Bins:  1000,
		})
	}
	if err := pcfg.Validate(); err != nil {
		b.Fatal(err)
	}
	proc, err := pf.CreateTraces(ctx, processortest.NewNopSettings(pf.Type()), pcfg, exp)
	if err != nil {
		b.Fatal(err)
	}
	if err := proc.Start(ctx, componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = proc.Shutdown(ctx) }()
	run(b, proc)
}
