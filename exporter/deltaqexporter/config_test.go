package deltaqexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	id := component.NewID(metadata.Type)
	if name != "" {
		id = component.NewIDWithName(metadata.Type, name)
	}
	sub, err := cm.Sub(id.String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, time.Second, cfg.Interval)
	assert.Equal(t, time.Duration(0), cfg.Lag, "lag 0 means one interval")
	assert.Equal(t, 30, cfg.History)
	assert.Equal(t, 1000, cfg.MaxProbes)
	assert.Equal(t, []float64{0.25, 0.5, 0.75, 0.9, 0.99}, cfg.Quantiles)
	assert.Equal(t, 32, cfg.CDFPoints)
	assert.Equal(t, 1, cfg.RearmWindows)
	assert.Equal(t, SnapshotConfig{Enabled: true, Before: 5, After: 5 * time.Second}, cfg.Snapshot)
	assert.Equal(t, int64(60), cfg.QueueConfig.Get().QueueSize)
	assert.False(t, cfg.HTTP.HasValue(), "OTLP/gRPC unless an http section is given")
	// Without an endpoint the default configuration is not valid.
	require.ErrorContains(t, confmap.Validate(cfg), `"endpoint"`)
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
		want.Interval = 5 * time.Second
		want.Lag = 2 * time.Second
		want.History = 10
		want.MaxProbes = 50
		want.Quantiles = []float64{0.5, 0.99}
		want.CDFPoints = 20
		want.DiagramFile = "testdata/checkout.dq"
		want.Probes = map[string]ProbeConfig{"checkout": {
			DMax: 2 * time.Second, Bins: 200,
			QTA: QTAConfig{
				Points:     []QTAPoint{{150 * time.Millisecond, 0.25}, {250 * time.Millisecond, 0.5}, {350 * time.Millisecond, 0.75}},
				MaxFailure: 0.05,
			},
			Triggers: TriggersConfig{QTA: true, Failure: true, MaxInstances: 10000, MaxDivergence: 0.2},
		}}
		want.RearmWindows = 3
		want.Snapshot = SnapshotConfig{Enabled: true, Before: 2, After: 10 * time.Second, Directory: "testdata"}
		assert.Equal(t, want, cfg)

		ac, err := cfg.AnalysisConfig()
		require.NoError(t, err)
		assert.Equal(t, 2, ac.Snapshot.After, "10 s after at a 5 s interval is 2 windows")
		assert.Equal(t, 2*time.Second, ac.Lag)
		require.NotNil(t, ac.Diagram)
		_, ok := ac.Diagram.Probe("stock")
		assert.True(t, ok, "the diagram file was parsed")
	})
	t.Run("http", func(t *testing.T) {
		cfg := loadConfig(t, "http")
		require.NoError(t, confmap.Validate(cfg))
		require.True(t, cfg.HTTP.HasValue())
		want := confighttp.NewDefaultClientConfig()
		want.Endpoint = "http://otel-backend:4318"
		assert.Equal(t, configoptional.Some(want), cfg.HTTP)
		assert.Equal(t, configgrpc.NewDefaultClientConfig(), cfg.ClientConfig)
		ac, err := cfg.AnalysisConfig()
		require.NoError(t, err)
		assert.Equal(t, time.Second, ac.Lag, "lag 0 is one interval")
	})
}

func TestLoadInvalidConfig(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"no_endpoint", `requires a non-empty "endpoint"`},
		{"bad_diagram", `"diagram": diagram:1:`},
		{"empty_diagram", `"diagram": the outcome diagram defines no outcome`},
		{"two_diagrams", `set "diagram" or "diagram_file", not both`},
		{"bad_qta", `probe "checkout": qta: point 1 at 150ms does not follow 250ms (delays must increase)`},
		{"trigger_without_qta", `the qta and failure triggers need a qta`},
		{"dmax_without_bins", `dmax and bins must be set together`},
		{"lag_too_long", `"lag" 1m0s is more than 16 intervals`},
		{"zero_interval", `"interval" must be positive`},
		{"bad_quantile", `quantile 1.5 is not in (0, 1)`},
		{"blocking_queue", `"sending_queue::block_on_overflow" must be false`},
		{"missing_snapshot_dir", `"snapshot::directory"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
