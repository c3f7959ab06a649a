// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
)

// NewFactory returns the factory of the deltaq exporter. Its exporters
// share the collector's probe layouts and reload state
// (collectorstate.Collector) with the deltaq processors and connectors.
func NewFactory() exporter.Factory {
	return newFactory(collectorstate.Collector())
}

// newFactory returns a factory whose exporters share st.
func newFactory(st *collectorstate.State) exporter.Factory {
	create := func(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
		return createTraces(ctx, set, cfg, st)
	}
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(create, metadata.TracesStability),
	)
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config, st *collectorstate.State) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(ctx, c, set, st)
	if err != nil {
		return nil, err
	}
	return wrapTraces(ctx, set, c, e)
}

// wrapTraces wraps the exporter in exporterhelper. The traces side has no
// queue and no retry: ConsumeTraces only counts instances into histograms
// and never touches the network. exporterhelper adds the usual exporter
// telemetry (sent and failed spans).
func wrapTraces(ctx context.Context, set exporter.Settings, cfg *Config, e *deltaqExporter) (exporter.Traces, error) {
	return exporterhelper.NewTraces(ctx, set, cfg, e.obs.ConsumeTraces,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
	)
}
