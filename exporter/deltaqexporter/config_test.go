// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/configtest"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// loadConfig returns the section deltaq[/name] of testdata/config.yaml
// decoded over the defaults.
func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	return configtest.LoadDefault[*Config](t, metadata.Type, createDefaultConfig, name)
}

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, core.NewDefaultConfig(), cfg.Config, "the analysis options' defaults")
	assert.Equal(t, int64(60), cfg.QueueConfig.Get().QueueSize)
	// One consumer sends the windows in order (TestWindowsArriveInOrder),
	// in each section.
	assert.Equal(t, 1, cfg.QueueConfig.Get().NumConsumers)
	sections := createDefaultConfig().(*Config)
	assert.Equal(t, 1, sections.HTTP.GetOrInsertDefault().QueueConfig.Get().NumConsumers)
	assert.Equal(t, 1, sections.Logs.GetOrInsertDefault().QueueConfig.Get().NumConsumers)
	assert.False(t, cfg.HTTP.HasValue(), "OTLP/gRPC unless an http section is given")
	assert.False(t, cfg.Logs.HasValue(), "logs go with the metrics unless a logs section is given")
	// The gRPC client is the otlp_grpc exporter's, as the logs section's.
	assert.Equal(t, configcompression.TypeGzip, cfg.ClientConfig.Compression, "gzip, as otlp_grpc")
	logs := createDefaultConfig().(*Config).Logs
	assert.Equal(t, logs.GetOrInsertDefault().ClientConfig.Compression, cfg.ClientConfig.Compression)
	// The timeout of an attempt, as the README gives it: 5 s, in the logs
	// section too, and the otlp_http exporter's 30 s in the http section.
	assert.Equal(t, 5*time.Second, cfg.TimeoutConfig.Timeout)
	assert.Equal(t, 5*time.Second, logs.Get().TimeoutConfig.Timeout)
	assert.Equal(t, 30*time.Second, sections.HTTP.Get().ClientConfig.Timeout)
	// Without an endpoint the default configuration is not valid, and that
	// is its only problem: the defaults are within the bounds.
	require.EqualError(t, confmap.Validate(cfg), `requires a non-empty "endpoint" (OTLP/gRPC) or an "http" section with an endpoint (OTLP/HTTP)`)
	require.NoError(t, cfg.Check())
}

func TestLoadValidConfig(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		cfg := loadConfig(t, "")
		require.NoError(t, confmap.Validate(cfg))
		want := createDefaultConfig().(*Config)
		want.ClientConfig.Endpoint = "localhost:4317"
		assert.Equal(t, want, cfg)
	})
	t.Run("full", func(t *testing.T) {
		cfg := loadConfig(t, "full")
		require.NoError(t, confmap.Validate(cfg))
		want := createDefaultConfig().(*Config)
		want.ClientConfig.Endpoint = "otel-backend:4317"
		want.ClientConfig.TLS.Insecure = true
		want.TimeoutConfig = exporterhelper.TimeoutConfig{Timeout: 10 * time.Second}
		retry := configretry.NewDefaultBackOffConfig()
		retry.InitialInterval, retry.MaxInterval, retry.MaxElapsedTime = time.Second, 10*time.Second, time.Minute
		want.RetryConfig = retry
		want.QueueConfig.Get().QueueSize = 10
		want.queueSizeSet = map[string]bool{"sending_queue": true}
		want.Interval = 5 * time.Second
		want.Lag = 2 * time.Second
		want.History = 10
		want.MaxProbes = 50
		want.ProbeIdleTimeout = time.Minute
		want.MaxRequestBytes = 1 << 20
		want.CDFPoints = 20
		want.DiagramFile = "testdata/checkout.dq"
		coretest.SetFull(&want.Config.Config,
			analysis.QTAPoint{Delay: 150 * time.Millisecond, P: 0.25},
			analysis.QTAPoint{Delay: 250 * time.Millisecond, P: 0.5},
			analysis.QTAPoint{Delay: 350 * time.Millisecond, P: 0.75})
		assert.Equal(t, want, cfg)

		// The diagram file is parsed: its outcomes are referenced probes.
		assert.Equal(t, []string{"auth", "checkout", "stock_a", "stock_b"}, coretest.ReferencedProbes(t, cfg.Config.Config))
	})
	t.Run("http", func(t *testing.T) {
		cfg := loadConfig(t, "http")
		require.NoError(t, confmap.Validate(cfg))
		require.True(t, cfg.HTTP.HasValue())
		def := createDefaultConfig().(*Config)
		want := def.HTTP.GetOrInsertDefault()
		want.ClientConfig.Endpoint = "http://otel-backend:4318"
		assert.Equal(t, configoptional.Some(*want), cfg.HTTP)
		assert.Equal(t, int64(60), cfg.HTTP.Get().QueueConfig.Get().QueueSize, "the exporter's queue default")
		assert.Equal(t, grpcClientConfig(), cfg.ClientConfig)
		wantAnalysis := createDefaultConfig().(*Config).Config
		wantAnalysis.Diagram = "e2e = a -> b;"
		assert.Equal(t, wantAnalysis, cfg.Config, "the analysis options beside the http section")
	})
	t.Run("http_endpoints", func(t *testing.T) {
		cfg := loadConfig(t, "http_endpoints")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, "http://metrics:4318/v1/metrics", cfg.HTTP.Get().MetricsEndpoint)
		assert.Equal(t, "http://events:4318/v1/logs", cfg.HTTP.Get().LogsEndpoint)
	})
	t.Run("items_queue_with_size", func(t *testing.T) {
		cfg := loadConfig(t, "items_queue_with_size")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, int64(1000000), cfg.QueueConfig.Get().QueueSize)
	})
	t.Run("logs", func(t *testing.T) {
		cfg := loadConfig(t, "logs")
		require.NoError(t, confmap.Validate(cfg))
		require.True(t, cfg.Logs.HasValue())
		assert.Equal(t, "metrics-backend:4317", cfg.ClientConfig.Endpoint)
		assert.Equal(t, "events-backend:4317", cfg.Logs.Get().ClientConfig.Endpoint)
		assert.True(t, cfg.Logs.Get().ClientConfig.TLS.Insecure)
		assert.Equal(t, 5*time.Second, cfg.Logs.Get().TimeoutConfig.Timeout)
	})
}

func TestLoadInvalidConfig(t *testing.T) {
	// The invalid analysis options are coretest.InvalidConfigs; these
	// are the exporter's own.
	tests := []coretest.InvalidConfig{
		{Name: "no_endpoint", Want: `requires a non-empty "endpoint"`},
		{Name: "blocking_queue", Want: `sending_queue.block_on_overflow: must be false`},
		{Name: "blocking_http_queue", Want: `http.sending_queue.block_on_overflow: must be false`},
		// The window timer waited for each send, up to one interval, and
		// counted a batch still being sent as dropped.
		{Name: "waiting_queue", Want: `sending_queue.wait_for_result: must be false`},
		// No timeout: an attempt against an endpoint that never answers
		// never ended, and a stop waited for it for ever.
		{Name: "no_timeout", Want: `timeout: 0s: must be positive`},
		{Name: "no_http_timeout", Want: `http.timeout: 0s: must be positive`},
		{Name: "no_logs_timeout", Want: `logs.timeout: 0s: must be positive`},
		{Name: "waiting_logs_queue", Want: `logs.sending_queue.wait_for_result: must be false`},
		// queue_size counts requests by default: 60 items or bytes hold
		// no window, and every window was dropped.
		{Name: "items_queue_without_size", Want: `sending_queue.queue_size: required with sizer items: the default, 60, counts requests`},
		{Name: "bytes_http_queue_without_size", Want: `http.sending_queue.queue_size: required with sizer bytes`},
		{Name: "disabled_queue", Want: `sending_queue.enabled: must be true`},
		{Name: "disabled_http_queue", Want: `http.sending_queue.enabled: must be true`},
		{Name: "disabled_logs_queue", Want: `logs.sending_queue.enabled: must be true`},
		{Name: "http_metrics_endpoint_only", Want: `http: requires an endpoint, or both a metrics_endpoint and a logs_endpoint`},
		{Name: "http_and_logs", Want: `set "http" or "logs", not both`},
		{Name: "http_and_grpc_endpoint", Want: `set "endpoint" (OTLP/gRPC) or "http" (OTLP/HTTP), not both`},
		// The otlp_http sender reads its own section only: these were
		// ignored without a word.
		{Name: "http_with_grpc_options", Want: `timeout, sending_queue, headers: OTLP/gRPC options, not used with "http": set them in the http section`},
		{Name: "logs_without_endpoint", Want: `logs: requires a non-empty "endpoint"`},
		// Endpoints that name no host, as the otlp_grpc exporter refuses
		// them, or that no HTTP request can be sent to: these started,
		// and every send failed.
		{Name: "endpoint_scheme_only", Want: `endpoint: "http://" names no host`},
		{Name: "endpoint_dns_only", Want: `endpoint: "dns:///" names no host`},
		// The logs section's own validation says "requires a non-empty
		// endpoint" of an endpoint that is not empty.
		{Name: "logs_endpoint_scheme_only", Want: `logs.endpoint: "https://" names no host`},
		// Endpoints that the gRPC client cannot dial: a resolver's
		// authority without an endpoint and a scheme in capitals (the
		// client strips http:// and https:// only as written) passed
		// validation, and every send failed; nothing after the scheme but
		// a slash was refused as "address /: missing port in address".
		{Name: "endpoint_scheme_and_slash", Want: `endpoint: "http:///" names no host`},
		{Name: "endpoint_resolver_without_endpoint", Want: `endpoint: "dns://8.8.8.8/" names no host`},
		{Name: "endpoint_upper_case_scheme", Want: `endpoint: "HTTP://otel-backend:4317": the scheme must be written http://`},
		{Name: "logs_endpoint_scheme_and_slash", Want: `logs.endpoint: "https:///" names no host`},
		{Name: "http_endpoint_scheme_only", Want: `http.endpoint: "http://" is not a URL the sender can post to`},
		{Name: "http_endpoint_without_scheme", Want: `http.endpoint: "otel-backend:4318" is not a URL the sender can post to`},
		{Name: "http_signal_endpoints_bad", Want: `http.metrics_endpoint: "https:///v1/metrics" is not a URL the sender can post to: it must be http:// or https:// and a host (and port)` + "\n" +
			`http.logs_endpoint: "grpc://events:4317/v1/logs" is not a URL`},
	}
	tests = append(tests, coretest.InvalidConfigs...)
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.Name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.Want)
		})
	}
}

// TestLoadUndecodableConfig checks, through the collector's loader, the
// configurations refused while decoding: the values Validate would see are
// not the values written.
func TestLoadUndecodableConfig(t *testing.T) {
	tests := append([]coretest.InvalidConfig{
		{Name: "timeout_without_unit", Want: `timeout: 10` + coretest.NoUnit + "\n" + `http.timeout: 30` + coretest.NoUnit},
	}, coretest.UndecodableConfigs...)
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			sub := configtest.Section(t, metadata.Type, tt.Name)
			err := sub.Unmarshal(createDefaultConfig().(*Config))
			require.Error(t, err)
			// The collector's decoder wraps the message; the message itself is
			// on its last lines.
			assert.True(t, strings.HasSuffix(err.Error(), " "+tt.Want), "got %q", err)
		})
	}
}

// TestLoadHeaders: headers written as a map, as every OTLP exporter takes
// them, are read into the client's header list (a list type that decodes
// itself from a map; the configuration's shape check refused it as "must
// be a list, got a map").
func TestLoadHeaders(t *testing.T) {
	cfg := loadConfig(t, "headers")
	require.NoError(t, confmap.Validate(cfg))
	v, ok := cfg.ClientConfig.Headers.Get("authorization")
	assert.True(t, ok)
	assert.Equal(t, "Bearer x", string(v))
	assert.Len(t, cfg.ClientConfig.Headers, 2)
}

// TestGRPCKeys: the top-level keys refused beside an http section are the
// OTLP/gRPC sender's, read from the tags of its fields: the sender's own
// and its client's, the squashed structs flattened, and none of the
// analysis options.
func TestGRPCKeys(t *testing.T) {
	keys := grpcKeys()
	for _, k := range []string{"timeout", "sending_queue", "retry_on_failure", "endpoint", "tls", "headers",
		"compression", "keepalive", "auth", "balancer_name", "wait_for_ready"} {
		assert.Contains(t, keys, k)
	}
	for _, k := range []string{"interval", "probes", "http", "logs", "max_request_bytes", ""} {
		assert.NotContains(t, keys, k)
	}
}

// TestConnectorProbeOptionsRefused: a probe's options that only the
// connector reads (match, failure, dmax: auto: a probe matched in the spans)
// are refused with their path and where they belong; the checks alone took
// failure for the failure trigger and dmax: auto for a malformed duration, and
// dmax: auto's own options (dmax_max, …) were "unknown option".
// A probe with a plain dmax, and the other probes of the section, are read.
func TestConnectorProbeOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		probe map[string]any
		want  string
	}{
		{"match", map[string]any{"dmax": "1s", "bins": 10, "match": map[string]any{"span_name": "x"}},
			`probes["a"].match: an option of a probe the deltaq connector matches in the spans`},
		{"failure", map[string]any{"dmax": "1s", "bins": 10, "failure": map[string]any{"status_error": true}},
			`probes["a"].failure: an option of a probe the deltaq connector matches in the spans`},
		{"dmax_auto", map[string]any{"dmax": "auto", "bins": 10},
			`probes["a"].dmax: auto ranges a probe the deltaq connector matches in the spans`},
		{"dmax_auto_spaced", map[string]any{"dmax": " AUTO "},
			`probes["a"].dmax: auto ranges`},
		{"dmax_auto_ranged", map[string]any{"dmax": "auto", "bins": 10, "dmax_min": "1ms", "dmax_max": "1s", "dmax_sample": 100},
			`probes["a"].dmax: auto ranges a probe the deltaq connector matches in the spans, or the deltaq processor's (dmax: auto on its probe), whose layout this component takes: leave dmax, dmax_min, dmax_max, dmax_sample and bins out here`},
		{"auto_option_plain_dmax", map[string]any{"dmax": "1s", "bins": 10, "dmax_max": "5s"},
			`probes["a"].dmax_max: an option of dmax: auto, which ranges a probe the deltaq connector matches in the spans, or the deltaq processor's`},
		{"plain", map[string]any{"dmax": "1s", "bins": 10}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			err := confmap.NewFromStringMap(map[string]any{
				"endpoint": "collector:4317",
				"probes":   map[string]any{"a": tt.probe, "b": map[string]any{"dmax": "2s", "bins": 20}},
			}).Unmarshal(cfg)
			if tt.want == "" {
				require.NoError(t, err)
				require.NoError(t, confmap.Validate(cfg))
				assert.Len(t, cfg.Probes, 2)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "processor")
			assert.NotContains(t, err.Error(), `probes["b"]`)
			assert.NotContains(t, err.Error(), "unknown option")
		})
	}
}
