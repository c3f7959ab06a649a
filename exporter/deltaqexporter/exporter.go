// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
)

// deltaqExporter is the deltaq exporter: the collector glue around an
// observer (internal/core), whose output goes to two of the collector's
// own OTLP exporters (otlp_grpc or otlp_http), made from their factories
// with this exporter's configuration: they bring the timeout, retries,
// the bounded sending queue and the classification of errors (a request
// refused as too large is not retried). The traces path never waits for
// the network, and a downstream failure costs data (counted), never the
// process.
type deltaqExporter struct {
	obs        *core.Observer
	metricsOut exporter.Metrics
	logsOut    exporter.Logs
	// wrap, when set, wraps the outputs at start; tests use it to see
	// what the observer hands to the senders.
	wrap func(core.Outputs) core.Outputs
}

// exporterOption adjusts an exporter, and its observer's settings, in tests.
type exporterOption func(*deltaqExporter, *core.Settings)

// newExporter makes an exporter of the collector whose shared state is st.
func newExporter(ctx context.Context, cfg *Config, set exporter.Settings, st *collectorstate.State, opts ...exporterOption) (*deltaqExporter, error) {
	e := &deltaqExporter{}
	ins, err := instruments(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	oset := core.Settings{
		Kind:        "exporter",
		Scope:       metadata.ScopeName,
		Telemetry:   set.TelemetrySettings,
		Instruments: ins,
		// The collector's registry of the processors' probe layouts.
		Layouts:  st.Layouts,
		Handover: st.Reload,
		Version:  set.BuildInfo.Version,
		ID:       set.ID.String(),
	}
	for _, o := range opts {
		o(e, &oset)
	}
	if e.metricsOut, e.logsOut, err = newSenders(ctx, cfg, set); err != nil {
		return nil, err
	}
	if e.obs, err = core.New(&cfg.Config, oset); err != nil {
		return nil, err
	}
	return e, nil
}

// newSenders makes the metrics and the logs sender: otlp_http exporters
// when the http section is present, otherwise otlp_grpc exporters with the
// top-level options, the logs one with the logs section's when present.
// Each is named after this exporter and its signal, such as
// otlp_grpc/deltaq_metrics, in the collector's exporter telemetry and logs.
func newSenders(ctx context.Context, cfg *Config, set exporter.Settings) (exporter.Metrics, exporter.Logs, error) {
	var (
		f          exporter.Factory
		mcfg, lcfg component.Config
	)
	if cfg.HTTP.HasValue() {
		f = otlphttpexporter.NewFactory()
		mcfg, lcfg = cfg.HTTP.Get(), cfg.HTTP.Get()
	} else {
		f = otlpexporter.NewFactory()
		gc := f.CreateDefaultConfig().(*otlpexporter.Config)
		gc.TimeoutConfig = cfg.TimeoutConfig
		gc.QueueConfig = cfg.QueueConfig
		gc.RetryConfig = cfg.RetryConfig
		gc.ClientConfig = cfg.ClientConfig
		mcfg, lcfg = gc, gc
		if cfg.Logs.HasValue() {
			lcfg = cfg.Logs.Get()
		}
	}
	m, err := f.CreateMetrics(ctx, senderSettings(set, f.Type(), "metrics"), mcfg)
	if err != nil {
		return nil, nil, err
	}
	l, err := f.CreateLogs(ctx, senderSettings(set, f.Type(), "logs"), lcfg)
	if err != nil {
		return nil, nil, err
	}
	return m, l, nil
}

// senderSettings are the settings of the sender of one signal: those of
// the exporter, with the ID <sender type>/<exporter type>[_<name>]_<signal>.
// The ID names the sender's metrics (their exporter attribute); its logger
// says it too, under the same key: the collector gave the logger this
// exporter's component attributes, which the sender's warnings (a failed
// export, a retry, a partial success) would otherwise carry alone, the
// metrics sender's and the logs sender's alike.
func senderSettings(set exporter.Settings, typ component.Type, signal string) exporter.Settings {
	name := set.ID.Type().String()
	if n := set.ID.Name(); n != "" {
		name += "_" + n
	}
	set.ID = component.NewIDWithName(typ, name+"_"+signal)
	set.Logger = set.Logger.With(zap.String("exporter", set.ID.String()))
	return set
}

func (e *deltaqExporter) start(ctx context.Context, host component.Host) error {
	if err := e.metricsOut.Start(ctx, host); err != nil {
		return err
	}
	if err := e.logsOut.Start(ctx, host); err != nil {
		return err
	}
	out := core.Outputs{Metrics: e.metricsOut, Logs: e.logsOut}
	if e.wrap != nil {
		out = e.wrap(out)
	}
	return e.obs.Start(out)
}

// shutdown closes the windows still open, hands their output to the
// senders, and shuts the senders down, which drains their queues.
func (e *deltaqExporter) shutdown(ctx context.Context) error {
	return errors.Join(
		e.obs.Shutdown(ctx),
		e.metricsOut.Shutdown(ctx),
		e.logsOut.Shutdown(ctx),
	)
}
