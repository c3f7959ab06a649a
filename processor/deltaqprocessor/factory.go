// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/sharedcomponent"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// NewFactory returns the factory of the deltaq processor. Its processors
// share the collector's probe layouts, claims and reload state
// (collectorstate.Collector) with the deltaq connectors and exporters.
func NewFactory() processor.Factory {
	return newFactory(wallClock{}, collectorstate.Collector()).processorFactory()
}

// NewFactoryFor returns the factory of the deltaq processor of a program
// that stands in for a collector with state of its own, st: the command
// line's offline analysis, which reads back the layouts its processor
// registers there.
func NewFactoryFor(st *collectorstate.State) processor.Factory {
	return newFactory(wallClock{}, st).processorFactory()
}

// factory creates one processor instance per component ID and hands it to
// both the traces and the logs pipeline that name the ID: start events
// arrive on the logs side and the spans that end them on the traces side, so
// both sides must share the in-flight table.
type factory struct {
	clock clock
	// state is what the factory's processors share with the other deltaq
	// components of the collector.
	state     *collectorstate.State
	instances sharedcomponent.Map[*deltaqProcessor]
}

func newFactory(clk clock, st *collectorstate.State) *factory {
	return &factory{clock: clk, state: st}
}

// processorFactory returns the collector factory backed by f.
func (f *factory) processorFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		f.createDefaultConfig,
		processor.WithTraces(f.createTraces, metadata.TracesStability),
		processor.WithLogs(f.createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	return &Config{Options: inflight.DefaultOptions()}
}

// createDefaultConfig is createDefaultConfig with the collector's layout
// registry, where Validate declares the probes (contract.Layouts.Declare).
func (f *factory) createDefaultConfig() component.Config {
	cfg := createDefaultConfig().(*Config)
	cfg.declare = f.state.Layouts
	return cfg
}

// lookup returns the live instance of id, if any.
func (f *factory) lookup(id component.ID) *deltaqProcessor {
	p, _ := f.instances.Load(id)
	return p
}

// instance returns the processor instance of set.ID, creating it on first
// use. The instance leaves the map when it shuts down, so a collector that
// reloads its configuration builds a fresh one.
func (f *factory) instance(set processor.Settings, cfg component.Config) (*deltaqProcessor, error) {
	return f.instances.LoadOrCreate(set.ID, func(release func()) (*deltaqProcessor, error) {
		p, err := newProcessor(set, cfg.(*Config), f.clock, f.state)
		if err != nil {
			return nil, err
		}
		if c := cfg.(*Config); !c.probesByName && len(c.Probes) > 0 {
			set.Logger.Warn(listFormDeprecated)
		}
		p.release = func() {
			p.unregister()
			release()
		}
		return p, nil
	})
}

func (f *factory) createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	p, err := f.instance(set, cfg)
	if err != nil {
		return nil, err
	}
	if err := p.attachTraces(set.ID, next); err != nil {
		// The collector refuses the whole configuration: forget the
		// instance, so that a corrected configuration gets a fresh one
		// rather than this one with its old settings.
		p.release()
		return nil, err
	}
	return processorhelper.NewTraces(ctx, set, cfg, next, p.processTraces,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}

func (f *factory) createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	p, err := f.instance(set, cfg)
	if err != nil {
		return nil, err
	}
	p.attachLogs()
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithStart(p.start),
		processorhelper.WithShutdown(p.shutdown))
}
