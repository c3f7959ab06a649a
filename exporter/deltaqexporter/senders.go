// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The sending of each signal is two layers:
//
//   - the collector's otlp_grpc or otlp_http exporter (the client), made
//     from its factory without its sending queue and retries: it encodes,
//     sends one attempt of at most timeout, and classifies the error
//     (permanent, or throttled with the server's delay);
//   - an exporterhelper of this exporter's around it, under the sender's
//     name (otlp_grpc/deltaq_metrics, …), with the configuration's
//     sending_queue and retry_on_failure: the queue, the retries, and the
//     collector's exporter telemetry (sent and failed items, queue size).
//
// The split lets a shutdown keep to its context: the collector's queue
// drains at shutdown, one attempt per request queued, each of up to
// timeout, and it cuts the senders' contexts off the caller's, so that a
// stop against an endpoint that does not answer took timeout × the
// requests queued / num_consumers whatever its deadline. Here each attempt
// runs under the senders' abort context, which the shutdown cancels when
// its own context ends: the attempt in flight fails at once, each request
// still queued fails without being sent, and they are counted
// (output_dropped) and logged.
//
// The collector's own shutdown has no deadline (nor has the shutdown of a
// configuration reload, during which no pipeline runs); so once an attempt
// of the drain has failed other than permanently (the endpoint down or not
// answering, not a request it refuses), a sender's requests still queued
// are abandoned the same way, rather than each waiting out its timeout
// against an endpoint that just failed.

// errAbandoned is the error of a request abandoned at shutdown: it is not
// retried.
var errAbandoned = errors.New("abandoned at shutdown: the shutdown's deadline passed, or the endpoint failed an attempt while the queue drained")

// partialSuccessMessage is the warning with which the collector's
// otlp_grpc and otlp_http exporters report an OTLP partial success, with
// the items rejected in a field of their signal.
const partialSuccessMessage = "Partial success response"

// rejectedFields are the fields of partialSuccessMessage that count the
// items rejected, by signal.
var rejectedFields = map[string]string{"metrics": "dropped_data_points", "logs": "dropped_log_records"}

// failedAttemptPrefix starts the error a queue-less exporterhelper logs
// for each failed send: the client's, whose failures the outer layer
// retries, logs (a retry, or the request dropped) and counts itself.
const failedAttemptPrefix = "Exporting failed. Rejecting data."

// exporterhelperScope is the instrumentation scope of exporterhelper's
// telemetry, which the outer layer records; the client's would count every
// item twice, and every failed attempt as a failed item.
const exporterhelperScope = "go.opentelemetry.io/collector/exporter/exporterhelper"

// senders are the two senders of an exporter, and what they share.
type senders struct {
	metrics exporter.Metrics
	logs    exporter.Logs

	// abortCtx ends when the shutdown's context does: the attempts under
	// way then and the requests still queued are abandoned.
	abortCtx context.Context
	abort    context.CancelFunc

	dropped, rejected metric.Int64Counter
	// draining is set when the shutdown starts; drainFailed, by signal,
	// once an attempt has failed other than permanently since then.
	draining    atomic.Bool
	drainFailed [2]atomic.Bool
	// abandoned counts the requests abandoned, by signal (signalIndex).
	abandoned [2]atomic.Int64
}

// signals are the two output signals, in the order of senders.abandoned.
var signals = [2]string{"metrics", "logs"}

func signalIndex(signal string) int {
	if signal == "logs" {
		return 1
	}
	return 0
}

func signalAttr(signal string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal)))
}

// newSenders makes the metrics and the logs sender: otlp_http exporters
// when the http section is present, otherwise otlp_grpc exporters with the
// top-level options, the logs one with the logs section's when present.
// Each is named after this exporter and its signal, such as
// otlp_grpc/deltaq_metrics, in the collector's exporter telemetry and logs.
// dropped counts the requests abandoned at shutdown, rejected the items
// endpoints rejected in partial successes.
func newSenders(ctx context.Context, cfg *Config, set exporter.Settings, dropped, rejected metric.Int64Counter) (*senders, error) {
	var (
		f          exporter.Factory
		mcfg, lcfg component.Config
	)
	if cfg.HTTP.HasValue() {
		f = otlphttpexporter.NewFactory()
		h := *cfg.HTTP.Get()
		mcfg, lcfg = &h, &h
	} else {
		f = otlpexporter.NewFactory()
		gc := f.CreateDefaultConfig().(*otlpexporter.Config)
		gc.TimeoutConfig = cfg.TimeoutConfig
		gc.QueueConfig = cfg.QueueConfig
		gc.RetryConfig = cfg.RetryConfig
		gc.ClientConfig = cfg.ClientConfig
		mcfg, lcfg = gc, gc
		if cfg.Logs.HasValue() {
			lc := *cfg.Logs.Get()
			lcfg = &lc
		}
	}
	s := &senders{dropped: dropped, rejected: rejected}
	s.abortCtx, s.abort = context.WithCancel(context.Background())

	client, queue, retry, attrs := splitSender(mcfg, "metrics")
	cset := s.clientSettings(senderSettings(set, f.Type(), "metrics"), "metrics")
	mc, err := f.CreateMetrics(ctx, cset, client)
	if err != nil {
		return nil, err
	}
	s.metrics, err = exporterhelper.NewMetrics(ctx, senderSettings(set, f.Type(), "metrics"), client,
		func(ctx context.Context, md pmetric.Metrics) error {
			return s.send(ctx, "metrics", func(ctx context.Context) error { return mc.ConsumeMetrics(ctx, md) })
		}, outerOptions(mc, queue, retry, attrs)...)
	if err != nil {
		return nil, err
	}

	client, queue, retry, attrs = splitSender(lcfg, "logs")
	cset = s.clientSettings(senderSettings(set, f.Type(), "logs"), "logs")
	lc, err := f.CreateLogs(ctx, cset, client)
	if err != nil {
		return nil, err
	}
	s.logs, err = exporterhelper.NewLogs(ctx, senderSettings(set, f.Type(), "logs"), client,
		func(ctx context.Context, ld plog.Logs) error {
			return s.send(ctx, "logs", func(ctx context.Context) error { return lc.ConsumeLogs(ctx, ld) })
		}, outerOptions(lc, queue, retry, attrs)...)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// outerOptions are the options of the layer around the client c: the
// configuration's queue and retries, no timeout of its own (the client
// bounds each attempt), the client's start and shutdown (its connection
// closes after the queue has drained) and the endpoint's attributes on the
// exporter telemetry, as the client would have set them.
func outerOptions(c component.Component, queue configoptional.Optional[exporterhelper.QueueBatchConfig],
	retry configretry.BackOffConfig, attrs []attribute.KeyValue,
) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(retry),
		exporterhelper.WithQueue(queue),
		exporterhelper.WithStart(c.Start),
		exporterhelper.WithShutdown(c.Shutdown),
		exporterhelper.WithAttrs(attrs...),
	}
}

// splitSender returns a copy of an otlp_grpc or otlp_http exporter's
// configuration without its queue and retries (the client's), the queue
// and the retries, and the attributes that exporter gives its telemetry
// for the endpoint of signal.
func splitSender(cfg component.Config, signal string) (client component.Config, queue configoptional.Optional[exporterhelper.QueueBatchConfig],
	retry configretry.BackOffConfig, attrs []attribute.KeyValue,
) {
	switch c := cfg.(type) {
	case *otlpexporter.Config:
		cp := *c
		queue, retry = cp.QueueConfig, cp.RetryConfig
		cp.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
		cp.RetryConfig.Enabled = false
		return &cp, queue, retry, grpcEndpointAttrs(cp.ClientConfig.Endpoint)
	case *otlphttpexporter.Config:
		cp := *c
		queue, retry = cp.QueueConfig, cp.RetryConfig
		cp.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
		cp.RetryConfig.Enabled = false
		endpoint := cp.MetricsEndpoint
		if signal == "logs" {
			endpoint = cp.LogsEndpoint
		}
		if endpoint == "" {
			endpoint = strings.TrimSuffix(cp.ClientConfig.Endpoint, "/") + "/v1/" + signal
		}
		return &cp, queue, retry, httpEndpointAttrs(endpoint)
	}
	panic("deltaq exporter: not an OTLP exporter's configuration")
}

// grpcEndpointAttrs and httpEndpointAttrs are the attributes the
// otlp_grpc and otlp_http exporters give their telemetry for an endpoint
// (their endpointAttributes).
func grpcEndpointAttrs(endpoint string) []attribute.KeyValue {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return []attribute.KeyValue{semconv.ServerAddress(endpoint)}
	}
	out := []attribute.KeyValue{semconv.ServerAddress(host)}
	if n, err := strconv.Atoi(port); err == nil {
		out = append(out, semconv.ServerPort(n))
	}
	return out
}

func httpEndpointAttrs(endpoint string) []attribute.KeyValue {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil // refused by Validate
	}
	out := []attribute.KeyValue{semconv.ServerAddress(u.Hostname())}
	if u.Path != "" {
		out = append(out, semconv.URLPath(u.Path))
	}
	if n, err := strconv.Atoi(u.Port()); err == nil {
		out = append(out, semconv.ServerPort(n))
	}
	return out
}

// clientSettings are the settings of a signal's client: the sender's,
// without exporterhelper's telemetry (the outer layer records it), with a
// logger that counts the items of the partial successes it reports and
// leaves out its report of each failed attempt.
func (s *senders) clientSettings(set exporter.Settings, signal string) exporter.Settings {
	ts := &set.TelemetrySettings
	ts.MeterProvider = meterWithout{ts.MeterProvider}
	ts.TracerProvider = tracerWithout{ts.TracerProvider}
	field, attr := rejectedFields[signal], signalAttr(signal)
	count := func(n int64) { s.rejected.Add(context.Background(), n, attr) }
	set.Logger = set.Logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return clientCore{Core: c, rejected: rejectedCounter{field: field, count: count}}
	}))
	return set
}

// send makes one attempt of a request under the abort context; once that
// has ended, or an attempt of the signal's has failed other than
// permanently while the queue drains, the request is abandoned, counted
// and not retried.
func (s *senders) send(ctx context.Context, signal string, attempt func(context.Context) error) error {
	i := signalIndex(signal)
	if s.abortCtx.Err() != nil || s.drainFailed[i].Load() {
		return s.abandon(signal)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.abortCtx, cancel)
	defer stop()
	// An attempt of the drain is one that began once the shutdown had: one
	// under way before (its answer late) says nothing of the endpoint now.
	ofDrain := s.draining.Load()
	err := attempt(ctx)
	if err != nil && s.abortCtx.Err() != nil {
		return s.abandon(signal)
	}
	if err != nil && ofDrain && !consumererror.IsPermanent(err) {
		s.drainFailed[i].Store(true)
	}
	return err
}

func (s *senders) abandon(signal string) error {
	s.abandoned[signalIndex(signal)].Add(1)
	s.dropped.Add(context.Background(), 1, signalAttr(signal))
	return consumererror.NewPermanent(errAbandoned)
}

// meterWithout and tracerWithout hide exporterhelper's instrumentation
// scope from a client; its gRPC or HTTP client's own telemetry stays.
type meterWithout struct{ metric.MeterProvider }

func (p meterWithout) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	if name == exporterhelperScope {
		return metricnoop.Meter{}
	}
	return p.MeterProvider.Meter(name, opts...)
}

type tracerWithout struct{ trace.TracerProvider }

func (p tracerWithout) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	if name == exporterhelperScope {
		return tracenoop.Tracer{}
	}
	return p.TracerProvider.Tracer(name, opts...)
}

// clientCore is the log core of a client: it counts the items of each
// partial success the client reports, whatever the log level, and drops
// the client's report of a failed attempt.
type clientCore struct {
	zapcore.Core
	rejected rejectedCounter
}

func (c clientCore) With(fields []zapcore.Field) zapcore.Core {
	return clientCore{Core: c.Core.With(fields), rejected: c.rejected}
}

// Enabled lets warnings through to Check: a partial success is counted
// even when warnings are not logged.
func (c clientCore) Enabled(l zapcore.Level) bool {
	return l >= zapcore.WarnLevel || c.Core.Enabled(l)
}

func (c clientCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	switch {
	case e.Message == partialSuccessMessage:
		ce = ce.AddCore(e, c.rejected)
	case strings.HasPrefix(e.Message, failedAttemptPrefix):
		return ce
	}
	return c.Core.Check(e, ce)
}

// rejectedCounter is the core that counts the items of a partial success:
// the value of its field.
type rejectedCounter struct {
	field string
	count func(int64)
}

func (r rejectedCounter) Enabled(zapcore.Level) bool        { return true }
func (r rejectedCounter) With([]zapcore.Field) zapcore.Core { return r }
func (r rejectedCounter) Sync() error                       { return nil }
func (r rejectedCounter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, r)
}

func (r rejectedCounter) Write(_ zapcore.Entry, fields []zapcore.Field) error {
	for _, f := range fields {
		if f.Key == r.field && f.Type == zapcore.Int64Type && f.Integer > 0 {
			r.count(f.Integer)
		}
	}
	return nil
}
