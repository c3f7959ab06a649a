// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
)

// deltaqExporter is the deltaq exporter: the collector glue around an
// observer (internal/core), whose output goes to two of the collector's
// own OTLP exporters (otlp_grpc or otlp_http), made from their factories
// with this exporter's configuration, each behind the collector's
// exporterhelper with the configured sending queue and retries
// (senders.go): they bring the timeout of an attempt and the
// classification of errors (a request refused as too large is not
// retried), the layer around them the bounded queue, the retries and a
// shutdown that keeps to its context. The traces path never waits for
// the network, and a downstream failure costs data (counted), never the
// process.
type deltaqExporter struct {
	obs        *core.Observer
	senders    *senders
	metricsOut exporter.Metrics
	logsOut    exporter.Logs
	logger     *zap.Logger
	// wrap, when set, wraps the outputs at start; tests use it to see
	// what the observer hands to the senders.
	wrap func(core.Outputs) core.Outputs
}

// exporterOption adjusts an exporter, and its observer's settings, in tests.
type exporterOption func(*deltaqExporter, *core.Settings)

// newExporter makes an exporter of the collector whose shared state is st.
func newExporter(ctx context.Context, cfg *Config, set exporter.Settings, st *collectorstate.State, opts ...exporterOption) (*deltaqExporter, error) {
	e := &deltaqExporter{logger: set.Logger}
	ins, sins, err := instruments(set.TelemetrySettings)
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
	if e.senders, err = newSenders(ctx, cfg, set, ins.OutputDropped, sins.OutputRejected); err != nil {
		return nil, err
	}
	e.metricsOut, e.logsOut = e.senders.metrics, e.senders.logs
	if e.obs, err = core.New(&cfg.Config, oset); err != nil {
		return nil, err
	}
	return e, nil
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
// senders, and shuts the senders down, which drains their queues. When ctx
// ends first, the sends under way and the requests still queued are
// abandoned (senders.go), counted and logged, and ctx's error returned; so
// are a sender's requests still queued once an attempt of the drain has
// failed as the endpoint's fault.
func (e *deltaqExporter) shutdown(ctx context.Context) error {
	obsErr := e.obs.Shutdown(ctx)
	e.senders.draining.Store(true)
	stop := context.AfterFunc(ctx, e.senders.abort)
	err := errors.Join(e.metricsOut.Shutdown(ctx), e.logsOut.Shutdown(ctx))
	stop()
	e.senders.abort() // nothing is sent after the shutdown
	var abandoned []zap.Field
	for i, signal := range signals {
		if n := e.senders.abandoned[i].Load(); n > 0 {
			abandoned = append(abandoned, zap.Int64(signal, n))
		}
	}
	if len(abandoned) > 0 {
		e.logger.Warn("dropping ΔQ output at shutdown: requests still queued or being sent were abandoned "+
			"(the shutdown's deadline passed, or the endpoint failed an attempt while the queue drained)", abandoned...)
		if ctx.Err() != nil {
			err = errors.Join(err, fmt.Errorf("ΔQ output requests abandoned at shutdown: %w", ctx.Err()))
		}
	}
	return errors.Join(obsErr, err)
}
