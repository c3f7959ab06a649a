// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/sharedcomponent"
)

// NewFactory returns the factory of the deltaq connector. Its connectors
// share the collector's probe layouts, claims and reload state
// (collectorstate.Collector) with the deltaq processors and exporters.
func NewFactory() connector.Factory {
	return newFactory(collectorstate.Collector(), nil).connectorFactory()
}

// factory shares one analysis per component ID between the traces→metrics
// and the traces→logs connector the collector creates for that ID (one per
// pair of signals it joins), so that the metrics and the logs describe the
// same windows.
type factory struct {
	// adjust, when set, adjusts the observers' settings; tests set the
	// clock with it.
	adjust func(*core.Settings)
	// state is what the factory's connectors share with the other deltaq
	// components of the collector.
	state     *collectorstate.State
	instances sharedcomponent.Map[*shared]
}

func newFactory(st *collectorstate.State, adjust func(*core.Settings)) *factory {
	return &factory{adjust: adjust, state: st}
}

// connectorFactory returns the collector factory backed by f.
func (f *factory) connectorFactory() connector.Factory {
	return connector.NewFactory(
		metadata.Type,
		createDefaultConfig,
		connector.WithTracesToMetrics(f.createTracesToMetrics, metadata.TracesToMetricsStability),
		connector.WithTracesToLogs(f.createTracesToLogs, metadata.TracesToLogsStability),
		connector.WithMetricsToMetrics(f.createMetricsToMetrics, metadata.MetricsToMetricsStability),
		connector.WithMetricsToLogs(f.createMetricsToLogs, metadata.MetricsToLogsStability),
		connector.WithLogsToMetrics(f.createLogsToMetrics, metadata.LogsToMetricsStability),
		connector.WithLogsToLogs(f.createLogsToLogs, metadata.LogsToLogsStability),
	)
}

func (f *factory) createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	return f.attach(set, cfg, inputTraces, func(s *shared) { s.out.Metrics = next })
}

func (f *factory) createTracesToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	return f.attach(set, cfg, inputTraces, func(s *shared) { s.out.Logs = next })
}

// createMetricsToMetrics and createMetricsToLogs make the connectors of a
// gateway: their input is the agents' windows (deltaq.window).
func (f *factory) createMetricsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Metrics, error) {
	return f.attach(set, cfg, inputMetrics, func(s *shared) { s.out.Metrics = next })
}

func (f *factory) createMetricsToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Metrics, error) {
	return f.attach(set, cfg, inputMetrics, func(s *shared) { s.out.Logs = next })
}

// createLogsToMetrics and createLogsToLogs make the connectors that take
// start events (contract.StartEventName log records), for the real-time
// timeouts of the probes the connector matches in the spans.
func (f *factory) createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	return f.attach(set, cfg, inputLogs, func(s *shared) { s.out.Metrics = next })
}

func (f *factory) createLogsToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Logs, error) {
	return f.attach(set, cfg, inputLogs, func(s *shared) { s.out.Logs = next })
}

// attach returns a new connector of the shared analysis of set.ID, making
// the analysis on first use; output sets the connector's next consumer as
// an output of the analysis. The analysis leaves the map when its last
// connector shuts down, so that a collector that reloads its configuration
// builds a fresh one.
func (f *factory) attach(set connector.Settings, cfg component.Config, in input, output func(*shared)) (*deltaqConnector, error) {
	s, err := f.instances.LoadOrCreate(set.ID, func(release func()) (*shared, error) {
		s := &shared{}
		probes := SpanProbes(cfg.(*Config))
		if err := claimMatched(f.state.Claims, s, set.ID, probes); err != nil {
			return nil, err
		}
		obs, err := f.newObserver(set, cfg.(*Config), probes)
		if err != nil {
			f.state.Claims.Release(s)
			return nil, err
		}
		s.obs = obs
		s.release = func() {
			f.state.Claims.Release(s)
			release()
		}
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	output(s)
	if in == inputLogs {
		s.obs.ExpectStartEvents()
	}
	s.live++
	return &deltaqConnector{shared: s, input: in}, nil
}

// newObserver makes the analysis of one component ID.
func (f *factory) newObserver(set connector.Settings, cfg *Config, probes *core.SpanProbes) (*core.Observer, error) {
	ins, starts, err := instruments(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	oset := core.Settings{
		Kind:        "connector",
		Scope:       metadata.ScopeName,
		Telemetry:   set.TelemetrySettings,
		Instruments: ins,
		Layouts:     f.state.Layouts,
		Handover:    f.state.Reload,
		Version:     set.BuildInfo.Version,
		ID:          set.ID.String(),
		SpanProbes:  probes,

		StartEvents:     &cfg.StartEvents,
		SpanInstruments: starts,
	}
	if f.adjust != nil {
		f.adjust(&oset)
	}
	return core.New(&cfg.Config, oset)
}
