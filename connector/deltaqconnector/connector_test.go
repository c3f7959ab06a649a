// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// at: times after a window boundary.
var at = coretest.At

// traces holds n instances of probe "p" (dMax 20 ms, 20 bins) ending at
// end, 3 ms long, of the given outcome.
func traces(oc string, end time.Duration, n int) ptrace.Traces {
	specs := make([]coretest.Span, n)
	for i := range specs {
		specs[i] = coretest.Span{Probe: "p", Outcome: oc, Start: at(end - 3*time.Millisecond), End: at(end),
			DMax: 20 * time.Millisecond, Bins: 20}
	}
	return coretest.Traces(specs...)
}

// pair is the traces→metrics and traces→logs connectors of one ID, made by
// a factory whose observers run on clk, with the telemetry of tel.
type pair struct {
	metrics, logs connector.Traces
}

func newPair(t *testing.T, f *factory, id component.ID, cfg *Config, tel *componenttest.Telemetry, m consumer.Metrics, l consumer.Logs) pair {
	t.Helper()
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = id
	if tel != nil {
		set.TelemetrySettings = tel.NewTelemetrySettings()
	}
	cf := f.connectorFactory()
	var p pair
	var err error
	p.metrics, err = cf.CreateTracesToMetrics(context.Background(), set, cfg, m)
	require.NoError(t, err)
	p.logs, err = cf.CreateTracesToLogs(context.Background(), set, cfg, l)
	require.NoError(t, err)
	for _, c := range []connector.Traces{p.metrics, p.logs} {
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
	}
	return p
}

// consume sends td to both connectors, as the collector does when one
// traces pipeline feeds both.
func (p pair) consume(t *testing.T, td ptrace.Traces) {
	t.Helper()
	require.NoError(t, p.metrics.ConsumeTraces(context.Background(), td))
	require.NoError(t, p.logs.ConsumeTraces(context.Background(), td))
}

func (p pair) shutdown(t *testing.T) {
	t.Helper()
	require.NoError(t, p.metrics.Shutdown(context.Background()))
	require.NoError(t, p.logs.Shutdown(context.Background()))
}

func clockFactory(clk *coretest.Clock) *factory {
	return newFactory(collectorstate.New(), func(s *core.Settings) { s.Now, s.Ticks, s.Ticked = clk.Now, clk.C, clk.Ticked })
}

// outcomes returns the deltaq.outcomes totals of the last metrics batch
// that has them, by outcome.
func outcomes(mds []pmetric.Metrics) map[string]int64 {
	out := map[string]int64{}
	for _, md := range mds {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != contract.MetricOutcomes {
				continue
			}
			dps := ms.At(i).Sum().DataPoints()
			for j := range dps.Len() {
				oc, _ := dps.At(j).Attributes().Get(contract.AttrOutcome)
				out[oc.Str()] = dps.At(j).IntValue() // cumulative
			}
		}
	}
	return out
}

func events(lds []plog.Logs) map[string]int {
	out := map[string]int{}
	for _, ld := range lds {
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range lrs.Len() {
			out[lrs.At(i).EventName()]++
		}
	}
	return out
}

// TestInstancesToMetricsAndLogs: instances in, metrics and logs out, from
// one analysis. Both connectors receive every batch, as from a collector's
// traces pipeline, and each instance counts once. Window 2's failures break
// the QTA (at most 10 % failures): the failure trigger and its snapshot go
// to the logs pipeline.
func TestInstancesToMetricsAndLogs(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	cfg := createDefaultConfig().(*Config)
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {
		QTA:      analysis.QTA{MaxFailure: 0.1},
		Triggers: analysis.Triggers{Failure: true},
	}}
	cfg.Snapshot.Before, cfg.Snapshot.After = 1, 0
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), cfg, nil, msink, lsink)

	p.consume(t, traces(contract.Success, 500*time.Millisecond, 10))
	p.consume(t, traces(contract.Success, 1500*time.Millisecond, 5))
	p.consume(t, traces(contract.Failure, 1600*time.Millisecond, 5))
	clk.Tick(at(2 * time.Second)) // closes [0, 1s)
	assert.Equal(t, map[string]int64{contract.Success: 10, contract.Timeout: 0, contract.Failure: 0}, outcomes(msink.AllMetrics()))
	assert.Empty(t, lsink.AllLogs(), "window 1 meets the QTA")
	clk.Tick(at(3 * time.Second)) // closes [1s, 2s)
	assert.Equal(t, map[string]int64{contract.Success: 15, contract.Timeout: 0, contract.Failure: 5}, outcomes(msink.AllMetrics()))
	// One trigger record; the snapshot holds window 1 and window 2, one
	// record per probe and window.
	assert.Equal(t, map[string]int{contract.EventTrigger: 1, contract.EventSnapshot: 2}, events(lsink.AllLogs()))
	p.shutdown(t)
}

// TestShutdownFlushesOpenWindows: the windows still open when the
// connectors shut down, the current one included, go downstream then.
func TestShutdownFlushesOpenWindows(t *testing.T) {
	clk := coretest.NewClock(at(1500 * time.Millisecond))
	msink := new(consumertest.MetricsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), createDefaultConfig().(*Config), nil, msink, consumertest.NewNop())
	p.consume(t, traces(contract.Success, 200*time.Millisecond, 2))
	p.consume(t, traces(contract.Failure, 1200*time.Millisecond, 1))
	require.Empty(t, msink.AllMetrics(), "no window has reached its close time")
	require.NoError(t, p.metrics.Shutdown(context.Background()))
	assert.Equal(t, map[string]int64{contract.Success: 2, contract.Timeout: 0, contract.Failure: 1}, outcomes(msink.AllMetrics()),
		"flushed with the first connector to shut down, while both pipelines still run")
	require.NoError(t, p.logs.Shutdown(context.Background()))
}

// blocking is a metrics consumer that refuses every batch, after waiting
// for release the first time.
type blocking struct {
	once             sync.Once
	entered, release chan struct{}
}

func (b *blocking) ConsumeMetrics(context.Context, pmetric.Metrics) error {
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
	return errors.New("refused")
}

func (*blocking) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// TestRefusingConsumerNeitherBlocksNorGoesUncounted: while the next
// metrics consumer holds the window timer, ConsumeTraces still returns at
// once; every batch it refuses is counted in
// otelcol_connector_deltaq_output_dropped.
func TestRefusingConsumerNeitherBlocksNorGoesUncounted(t *testing.T) {
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	clk := coretest.NewClock(at(time.Second))
	next := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), createDefaultConfig().(*Config), tel, next, consumertest.NewNop())

	p.consume(t, traces(contract.Success, 500*time.Millisecond, 1))
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		clk.Tick(at(2 * time.Second)) // the timer closes [0, 1s) and blocks in the consumer
	}()
	<-next.entered
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.consume(t, traces(contract.Success, 1500*time.Millisecond, 1))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ConsumeTraces waited for the next consumer")
	}
	close(next.release)
	<-ticked
	clk.Tick(at(3 * time.Second)) // closes [1s, 2s), refused at once
	p.shutdown(t)                 // flushes [2s, 3s) and [3s, 4s), refused

	assert.Equal(t, map[string]int64{"signal=metrics": 4}, telemetrytest.Sum(t, tel, "otelcol_connector_deltaq_output_dropped"),
		"four windows, each refused and counted")
}

// TestOneAnalysisPerComponentID: the connectors of an ID share one
// analysis, those of another ID have their own, and an ID whose connectors
// all shut down gets a fresh analysis next time (a configuration reload).
func TestOneAnalysisPerComponentID(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	f := clockFactory(clk)
	cfg := createDefaultConfig().(*Config)
	a := newPair(t, f, component.NewID(metadata.Type), cfg, nil, consumertest.NewNop(), consumertest.NewNop())
	b := newPair(t, f, component.NewIDWithName(metadata.Type, "other"), cfg, nil, consumertest.NewNop(), consumertest.NewNop())
	sa := a.metrics.(*deltaqConnector).shared
	assert.Same(t, sa, a.logs.(*deltaqConnector).shared)
	assert.NotSame(t, sa, b.metrics.(*deltaqConnector).shared)
	assert.True(t, a.metrics.(*deltaqConnector).feeds.Load() != a.logs.(*deltaqConnector).feeds.Load(), "exactly one feeds the analysis")
	a.shutdown(t)
	b.shutdown(t)
	assert.Zero(t, f.instances.Len(), "no analysis left in the factory")

	c := newPair(t, f, component.NewID(metadata.Type), cfg, nil, consumertest.NewNop(), consumertest.NewNop())
	assert.NotSame(t, sa, c.metrics.(*deltaqConnector).shared)
	c.shutdown(t)
}

// A connector whose configuration the analysis refuses is not made, and
// leaves nothing behind.
func TestInvalidConfigRefused(t *testing.T) {
	f := newFactory(collectorstate.New(), nil)
	cfg := createDefaultConfig().(*Config)
	cfg.Diagram = "e2e = a -> ;"
	_, err := f.connectorFactory().CreateTracesToMetrics(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.ErrorContains(t, err, `diagram: diagram:1:`)
	assert.Zero(t, f.instances.Len(), "no analysis left in the factory")
}
