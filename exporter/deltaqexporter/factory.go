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
)

// NewFactory returns the factory of the deltaq exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	c := cfg.(*Config)
	e, err := newExporter(ctx, c, set)
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
