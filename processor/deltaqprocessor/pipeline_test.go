// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/service/telemetry"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// The pipeline test runs the processor inside a collector (otelcol) built
// from factories: a receiver the test pushes data into, the deltaq processor
// in a traces and a logs pipeline, and an exporter that hands what it
// receives back to the test.

var (
	pushType    = component.MustNewType("push")
	captureType = component.MustNewType("capture")
)

// pushReceiver exposes the next consumers the collector gives it.
type pushReceiver struct {
	mu     sync.Mutex
	traces consumer.Traces
	logs   consumer.Logs
	ready  chan struct{} // closed when both signals' receivers have started
	starts int
}

func (r *pushReceiver) factory() receiver.Factory {
	start := func(context.Context, component.Host) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.starts++; r.starts == 2 {
			close(r.ready)
		}
		return nil
	}
	return receiver.NewFactory(pushType, func() component.Config { return &struct{}{} },
		receiver.WithTraces(func(_ context.Context, _ receiver.Settings, _ component.Config, next consumer.Traces) (receiver.Traces, error) {
			r.mu.Lock()
			r.traces = next
			r.mu.Unlock()
			return receiverComponent{StartFunc: start}, nil
		}, component.StabilityLevelStable),
		receiver.WithLogs(func(_ context.Context, _ receiver.Settings, _ component.Config, next consumer.Logs) (receiver.Logs, error) {
			r.mu.Lock()
			r.logs = next
			r.mu.Unlock()
			return receiverComponent{StartFunc: start}, nil
		}, component.StabilityLevelStable))
}

type receiverComponent struct {
	component.StartFunc
	component.ShutdownFunc
}

// captureExporter sends every batch it receives to channels.
type captureExporter struct {
	traces chan ptrace.Traces
	logs   chan plog.Logs
}

type tracesExporter struct {
	component.StartFunc
	component.ShutdownFunc
	consumer.Traces
}

type logsExporter struct {
	component.StartFunc
	component.ShutdownFunc
	consumer.Logs
}

func (e *captureExporter) factory() exporter.Factory {
	tc, _ := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error { e.traces <- td; return nil })
	lc, _ := consumer.NewLogs(func(_ context.Context, ld plog.Logs) error { e.logs <- ld; return nil })
	return exporter.NewFactory(captureType, func() component.Config { return &struct{}{} },
		exporter.WithTraces(func(context.Context, exporter.Settings, component.Config) (exporter.Traces, error) {
			return tracesExporter{Traces: tc}, nil
		}, component.StabilityLevelStable),
		exporter.WithLogs(func(context.Context, exporter.Settings, component.Config) (exporter.Logs, error) {
			return logsExporter{Logs: lc}, nil
		}, component.StabilityLevelStable))
}

// pipelineConfig is the collector configuration: the README's example,
// with the test's receiver and exporter.
const pipelineConfig = `
receivers:
  push: {}
processors:
  deltaq:
    timer_resolution: 1ms
    probes:
      checkout:
        match:
          span_name: POST /checkout
        dmax: 20ms
        bins: 20
exporters:
  capture: {}
service:
  pipelines:
    traces:
      receivers: [push]
      processors: [deltaq]
      exporters: [capture]
    logs:
      receivers: [push]
      processors: [deltaq]
      exporters: [capture]
`

type stringProvider struct{ yaml string }

func (p stringProvider) Retrieve(context.Context, string, confmap.WatcherFunc) (*confmap.Retrieved, error) {
	return confmap.NewRetrievedFromYAML([]byte(p.yaml))
}
func (stringProvider) Scheme() string                 { return "test" }
func (stringProvider) Shutdown(context.Context) error { return nil }

func TestCollectorPipeline(t *testing.T) {
	recv := &pushReceiver{ready: make(chan struct{})}
	exp := &captureExporter{traces: make(chan ptrace.Traces, 16), logs: make(chan plog.Logs, 16)}
	factories := func() (otelcol.Factories, error) {
		var f otelcol.Factories
		var err error
		if f.Receivers, err = otelcol.MakeFactoryMap(recv.factory()); err != nil {
			return f, err
		}
		if f.Processors, err = otelcol.MakeFactoryMap[processor.Factory](NewFactory()); err != nil {
			return f, err
		}
		if f.Exporters, err = otelcol.MakeFactoryMap(exp.factory()); err != nil {
			return f, err
		}
		f.Telemetry = telemetry.NewFactory(func() component.Config { return &struct{}{} })
		return f, nil
	}
	col, err := otelcol.NewCollector(otelcol.CollectorSettings{
		BuildInfo:               component.NewDefaultBuildInfo(),
		Factories:               factories,
		DisableGracefulShutdown: true,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{ResolverSettings: confmap.ResolverSettings{
			URIs: []string{"test:config"},
			ProviderFactories: []confmap.ProviderFactory{confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider {
				return stringProvider{yaml: pipelineConfig}
			})},
		}},
	})
	require.NoError(t, err)
	runErr := make(chan error, 1)
	go func() { runErr <- col.Run(context.Background()) }()
	select {
	case <-recv.ready:
	case err := <-runErr:
		t.Fatalf("collector stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("collector did not start")
	}
	defer func() {
		col.Shutdown()
		require.NoError(t, <-runErr)
	}()
	ctx := context.Background()
	wait := func(what string) ptrace.Traces {
		t.Helper()
		select {
		case td := <-exp.traces:
			return td
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s", what)
			return ptrace.Traces{}
		}
	}

	// A span of the probe is mapped on its way through the traces pipeline.
	now := time.Now()
	require.NoError(t, recv.traces.ConsumeTraces(ctx, tracesOf(
		spanSpec{name: "POST /checkout", id: 1, start: now, duration: 5 * time.Millisecond},
		spanSpec{name: "GET /", id: 2, start: now, duration: time.Second},
	)))
	spans, _ := allSpans([]ptrace.Traces{wait("mapped span")})
	require.Len(t, spans, 2)
	assert.Equal(t, outcomeAttrs("checkout", contract.Success, 20*time.Millisecond, 20), attrsOf(spans[0]))
	assert.Empty(t, attrsOf(spans[1]))

	// A start event on the logs pipeline whose span never comes becomes a
	// synthetic timeout span on the traces pipeline, in real time; the
	// start event itself goes no further, other log records do.
	ld := logsOf(startEvent{probe: "checkout", service: "shop", id: 3, at: time.Now()})
	ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().AppendEmpty().Body().SetStr("ordinary")
	require.NoError(t, recv.logs.ConsumeLogs(ctx, ld))
	select {
	case got := <-exp.logs:
		require.Equal(t, 1, got.LogRecordCount())
		assert.Equal(t, "ordinary", got.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str())
	case <-time.After(30 * time.Second):
		t.Fatal("no logs")
	}
	spans, resources := allSpans([]ptrace.Traces{wait("synthetic timeout span")})
	require.Len(t, spans, 1)
	assert.Equal(t, spanID(3), spans[0].SpanID())
	assert.Equal(t, true, attrsOf(spans[0])[contract.AttrSynthetic])
	assert.Equal(t, contract.Timeout, attrsOf(spans[0])[contract.AttrOutcome])
	assert.Equal(t, "shop", resources[0].Attributes().AsRaw()["service.name"])
}
