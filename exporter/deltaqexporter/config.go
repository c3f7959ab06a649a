// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"

	"github.com/deltaq-otel/deltaq/internal/core"
)

// defaultQueueSize is in requests; one request is one window's metrics (or
// logs), so this holds one minute of windows at the default interval.
const defaultQueueSize = 60

// Config is the configuration of the deltaq exporter. The ΔQ output is sent
// by the collector's own OTLP exporters, configured as they are:
//
//   - at the top level, the otlp_grpc exporter's options (endpoint, tls,
//     headers, timeout, retry_on_failure, sending_queue, …), the same
//     fields as otlpexporter.Config; they send metrics, and logs too unless
//     logs is set;
//   - http, when present, is an otlp_http exporter (endpoint, or
//     metrics_endpoint and logs_endpoint, …) that sends both signals
//     instead of OTLP/gRPC;
//   - logs, when present, is an otlp_grpc exporter of its own for the logs
//     (trigger and snapshot events), so that they can go to another
//     endpoint than the metrics.
//
// The analysis options (interval, diagram, probes, …) are squashed from
// core.Config, shared with the deltaq connector.
//
// The gRPC options are otlpexporter.Config's fields rather than an embedded
// otlpexporter.Config: the collector validates every field of a
// configuration, and an embedded otlpexporter.Config would demand a gRPC
// endpoint of a configuration that sends over OTLP/HTTP.
type Config struct {
	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
	// ClientConfig is the OTLP/gRPC client: endpoint, tls, headers, ….
	ClientConfig configgrpc.ClientConfig `mapstructure:",squash"`
	// HTTP, when present, sends both signals over OTLP/HTTP instead of
	// OTLP/gRPC.
	HTTP configoptional.Optional[otlphttpexporter.Config] `mapstructure:"http"`
	// Logs, when present, sends the logs over OTLP/gRPC to their own
	// endpoint; exclusive with HTTP.
	Logs configoptional.Optional[otlpexporter.Config] `mapstructure:"logs"`

	// Config holds the analysis options.
	core.Config `mapstructure:",squash"`

	// unusedWithHTTP are the top-level OTLP/gRPC options (grpcKeys) that
	// the configuration sets beside an http section, which does not read
	// them: found by Unmarshal, reported by Validate.
	unusedWithHTTP []string
	// queueSizeSet are the sending queues (sending_queue, http.sending_queue,
	// logs.sending_queue) whose queue_size the configuration sets: found by
	// Unmarshal, for Validate (checkQueues).
	queueSizeSet map[string]bool

	// prevent unkeyed literal initialization
	_ struct{}
}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal decodes the exporter's section of the collector configuration,
// refusing what decoding would change without a word (core.Unmarshal):
// a duration without a unit, an integer its field cannot hold.
//
// It also notes the top-level OTLP/gRPC options set beside an http
// section: the otlp_http sender reads its own section only, so a
// timeout, retry_on_failure, sending_queue, headers or tls written at the
// top level would be ignored without a word.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	// Into plainConfig, which has no Unmarshal method: the decoder would
	// call this one again on a Conf it did not make itself.
	if err := core.Unmarshal(conf, (*plainConfig)(c)); err != nil {
		return err
	}
	c.unusedWithHTTP = nil
	c.queueSizeSet = nil
	for _, key := range []string{"sending_queue", "http.sending_queue", "logs.sending_queue"} {
		if conf != nil && conf.IsSet(strings.ReplaceAll(key, ".", "::")+"::queue_size") {
			if c.queueSizeSet == nil {
				c.queueSizeSet = map[string]bool{}
			}
			c.queueSizeSet[key] = true
		}
	}
	if conf == nil || !conf.IsSet("http") {
		return nil
	}
	for _, k := range grpcKeys() {
		// endpoint has a message of its own (Validate).
		if k != "endpoint" && conf.IsSet(k) {
			c.unusedWithHTTP = append(c.unusedWithHTTP, k)
		}
	}
	return nil
}

// grpcKeys are the top-level keys of the OTLP/gRPC sender's options: those
// of the fields that Config takes from otlpexporter.Config, as the
// collector's decoder reads their tags (squashed structs flattened).
func grpcKeys() []string {
	var keys []string
	var add func(f reflect.StructField)
	add = func(f reflect.StructField) {
		name, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		switch {
		case name == "" && slices.Contains(strings.Split(opts, ","), "squash"):
			for i := range f.Type.NumField() {
				add(f.Type.Field(i))
			}
		case name != "" && name != "-":
			keys = append(keys, name)
		}
	}
	t := reflect.TypeFor[Config]()
	for _, name := range []string{"TimeoutConfig", "QueueConfig", "RetryConfig", "ClientConfig"} {
		f, _ := t.FieldByName(name)
		add(f)
	}
	return keys
}

// plainConfig is Config without its methods, to decode into.
type plainConfig Config

// grpcClientConfig is the OTLP/gRPC client of the default configuration:
// the otlp_grpc exporter's, gzip compression included, as the logs section
// and the http section have it.
func grpcClientConfig() configgrpc.ClientConfig {
	return otlpexporter.NewFactory().CreateDefaultConfig().(*otlpexporter.Config).ClientConfig
}

// newQueueConfig is the sending queue of the default configuration: one
// consumer, so that the windows go out in order. With several, a window
// waiting for a retry was overtaken by the next one, and the cumulative
// series of its probes went back in time at the backend (refused as
// out-of-order samples by Prometheus, or read as a reset).
func newQueueConfig() configoptional.Optional[exporterhelper.QueueBatchConfig] {
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.QueueSize = defaultQueueSize
	queue.NumConsumers = 1
	return configoptional.Some(queue)
}

func createDefaultConfig() component.Config {
	httpCfg := otlphttpexporter.NewFactory().CreateDefaultConfig().(*otlphttpexporter.Config)
	httpCfg.QueueConfig = newQueueConfig()
	logsCfg := otlpexporter.NewFactory().CreateDefaultConfig().(*otlpexporter.Config)
	logsCfg.QueueConfig = newQueueConfig()
	return &Config{
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:   newQueueConfig(),
		RetryConfig:   configretry.NewDefaultBackOffConfig(),
		ClientConfig:  grpcClientConfig(),
		HTTP:          configoptional.Default(*httpCfg),
		Logs:          configoptional.Default(*logsCfg),
		Config:        core.NewDefaultConfig(),
	}
}

// Validate checks the sending side, then the analysis options once
// (core.Config.Check), the outcome diagram included, so that its own
// error messages (file:line:col) reach the user at start-up. The collector
// validates the http and logs sections itself (an endpoint each).
func (c *Config) Validate() error {
	var errs []error
	if !c.HTTP.HasValue() && c.ClientConfig.Endpoint == "" {
		errs = append(errs, errors.New(`requires a non-empty "endpoint" (OTLP/gRPC) or an "http" section with an endpoint (OTLP/HTTP)`))
	}
	errs = append(errs, checkGRPCEndpoints(c)...)
	if h := c.HTTP.Get(); c.HTTP.HasValue() && h.ClientConfig.Endpoint == "" && (h.MetricsEndpoint == "" || h.LogsEndpoint == "") {
		errs = append(errs, errors.New(`http: requires an endpoint, or both a metrics_endpoint and a logs_endpoint`))
	}
	errs = append(errs, checkHTTPEndpoints(c)...)
	if c.HTTP.HasValue() && c.ClientConfig.Endpoint != "" {
		errs = append(errs, errors.New(`set "endpoint" (OTLP/gRPC) or "http" (OTLP/HTTP), not both: with "http" the gRPC endpoint is not used`))
	}
	if len(c.unusedWithHTTP) > 0 {
		errs = append(errs, fmt.Errorf(`%s: OTLP/gRPC options, not used with "http": set them in the http section`, strings.Join(c.unusedWithHTTP, ", ")))
	}
	if c.HTTP.HasValue() && c.Logs.HasValue() {
		errs = append(errs, errors.New(`set "http" or "logs", not both: "http" sends the logs too`))
	}
	errs = append(errs, checkQueues(c)...)
	errs = append(errs, checkTimeouts(c)...)
	if err := c.Check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkGRPCEndpoints refuses a top-level or logs endpoint that the gRPC
// client cannot dial, saying why: one naming no host after its scheme
// ("http://", "http:///", "dns:///", "dns://8.8.8.8/"), and one whose
// http:// or https:// is not in lower case, which the client does not
// strip and takes for a resolver it does not have. The otlp_grpc
// exporter's own validation passes some of them ("dns://8.8.8.8/",
// "HTTP://host:4317"): the exporter started, and every send failed. The top-level options are copied into an otlp_grpc
// exporter's only when the exporter is created, unvalidated; the logs
// section's own validation says of "https://" that it "requires a
// non-empty endpoint".
func checkGRPCEndpoints(c *Config) []error {
	var errs []error
	if !c.HTTP.HasValue() && c.ClientConfig.Endpoint != "" {
		if err := checkGRPCEndpoint("endpoint", c.ClientConfig.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Logs.HasValue() && c.Logs.Get().ClientConfig.Endpoint != "" {
		if err := checkGRPCEndpoint("logs.endpoint", c.Logs.Get().ClientConfig.Endpoint); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkGRPCEndpoint checks the endpoint of key as the gRPC client reads it
// (configgrpc): http:// and https:// stripped, another scheme a resolver's
// whose endpoint is the URI's path, a unix socket checked by configgrpc.
func checkGRPCEndpoint(key, endpoint string) error {
	for _, scheme := range []string{"http://", "https://"} {
		if len(endpoint) >= len(scheme) && strings.EqualFold(endpoint[:len(scheme)], scheme) && !strings.HasPrefix(endpoint, scheme) {
			return fmt.Errorf("%s: %q: the scheme must be written %s: the gRPC client does not know %s", key, endpoint, scheme, endpoint[:len(scheme)])
		}
	}
	target := endpoint
	switch {
	case strings.HasPrefix(endpoint, "unix:"):
		return nil
	case strings.HasPrefix(endpoint, "http://"), strings.HasPrefix(endpoint, "https://"):
		_, target, _ = strings.Cut(endpoint, "://")
	case strings.Contains(endpoint, "://"):
		if u, err := url.Parse(endpoint); err == nil {
			target = strings.TrimPrefix(u.Path, "/")
		}
	}
	if target == "" || strings.HasPrefix(target, "/") {
		return fmt.Errorf("%s: %q names no host: it must be host:port, after a scheme if any (http://, https://, dns:///)", key, endpoint)
	}
	return nil
}

// checkHTTPEndpoints refuses an http section's endpoint that no request
// can be sent to: the otlp_http sender posts to it (metrics_endpoint and
// logs_endpoint, else endpoint with /v1/metrics or /v1/logs appended),
// and Go's HTTP client sends only to an http or https URL with a host.
// Such an endpoint ("http://", or "otel:4318" without a scheme, which
// parses as the scheme "otel") started, and every send failed.
func checkHTTPEndpoints(c *Config) []error {
	if !c.HTTP.HasValue() {
		return nil
	}
	h := c.HTTP.Get()
	var errs []error
	check := func(key, endpoint string) {
		u, err := url.Parse(endpoint)
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			return
		}
		errs = append(errs, fmt.Errorf("http.%s: %q is not a URL the sender can post to: it must be http:// or https:// and a host (and port)", key, endpoint))
	}
	if h.ClientConfig.Endpoint != "" && (h.MetricsEndpoint == "" || h.LogsEndpoint == "") {
		check("endpoint", h.ClientConfig.Endpoint)
	}
	if h.MetricsEndpoint != "" {
		check("metrics_endpoint", h.MetricsEndpoint)
	}
	if h.LogsEndpoint != "" {
		check("logs_endpoint", h.LogsEndpoint)
	}
	return errs
}

// checkQueues refuses a sending queue whose default size would refuse
// every window (queue_size counts requests by default: with another sizer
// it must be given), and one that would let a send hold the window timer: one that blocks when full, one that waits for each
// request's result (the timer then gives up on a send after one interval
// and counts as dropped a batch that is still queued and sent later), or
// none at all, where the send and its retries run on the timer (for up to
// retry_on_failure::max_elapsed_time while the endpoint is down), and the
// instances of the windows it cannot open meanwhile are dropped as
// too_early.
func checkQueues(c *Config) []error {
	var errs []error
	for _, q := range []struct {
		key     string
		present bool
		queue   configoptional.Optional[exporterhelper.QueueBatchConfig]
	}{
		// Beside an http section the top-level queue is not used, and
		// setting it is refused as such (unusedWithHTTP).
		{"sending_queue", !c.HTTP.HasValue(), c.QueueConfig},
		{"http.sending_queue", c.HTTP.HasValue(), httpQueue(c)},
		{"logs.sending_queue", c.Logs.HasValue(), logsQueue(c)},
	} {
		switch {
		case !q.present:
		case !q.queue.HasValue():
			errs = append(errs, fmt.Errorf("%s.enabled: must be true: without a queue a send and its retries hold the window timer, and the instances of the windows it misses are dropped", q.key))
		case q.queue.Get().BlockOnOverflow:
			errs = append(errs, fmt.Errorf("%s.block_on_overflow: must be false: a full queue drops and counts output instead of stalling the window timer", q.key))
		case q.queue.Get().WaitForResult:
			errs = append(errs, fmt.Errorf("%s.wait_for_result: must be false: the window timer would wait for each send, up to one interval, and count a batch still being sent as dropped", q.key))
		case q.queue.Get().Sizer != exporterhelper.RequestSizerTypeRequests && !c.queueSizeSet[q.key] && q.queue.Get().QueueSize == defaultQueueSize:
			sizer, _ := q.queue.Get().Sizer.MarshalText()
			errs = append(errs, fmt.Errorf("%s.queue_size: required with sizer %s: the default, %d, counts requests, and a window's output is larger than %d %s",
				q.key, sizer, defaultQueueSize, defaultQueueSize, sizer))
		}
	}
	return errs
}

// checkTimeouts refuses a sender without a timeout (0, which the
// collector's exporters take for none): an attempt against an endpoint
// that accepts the connection and never answers would never end, the one
// consumer of the queue with it, and a stop (the collector's has no
// deadline) would wait for it for ever.
func checkTimeouts(c *Config) []error {
	var errs []error
	for _, t := range []struct {
		key     string
		present bool
		timeout time.Duration
	}{
		{"timeout", !c.HTTP.HasValue(), c.TimeoutConfig.Timeout},
		{"http.timeout", c.HTTP.HasValue(), timeoutOf(c.HTTP.HasValue(), func() time.Duration { return c.HTTP.Get().ClientConfig.Timeout })},
		{"logs.timeout", c.Logs.HasValue(), timeoutOf(c.Logs.HasValue(), func() time.Duration { return c.Logs.Get().TimeoutConfig.Timeout })},
	} {
		if t.present && t.timeout <= 0 {
			errs = append(errs, fmt.Errorf("%s: %v: must be positive: without a timeout an attempt against an endpoint that never answers never ends, the queue waits behind it, and a stop waits for ever", t.key, t.timeout))
		}
	}
	return errs
}

// timeoutOf is get's timeout of a section that is present, 0 otherwise.
func timeoutOf(present bool, get func() time.Duration) time.Duration {
	if !present {
		return 0
	}
	return get()
}

// httpQueue and logsQueue are the sending queues of the http and logs
// sections; none when the section is absent.
func httpQueue(c *Config) configoptional.Optional[exporterhelper.QueueBatchConfig] {
	if !c.HTTP.HasValue() {
		return configoptional.None[exporterhelper.QueueBatchConfig]()
	}
	return c.HTTP.Get().QueueConfig
}

func logsQueue(c *Config) configoptional.Optional[exporterhelper.QueueBatchConfig] {
	if !c.Logs.HasValue() {
		return configoptional.None[exporterhelper.QueueBatchConfig]()
	}
	return c.Logs.Get().QueueConfig
}
