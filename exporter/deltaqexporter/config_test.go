package deltaqexporter

import (
	"path/filepath"
	"strings"
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
	assert.Equal(t, 10*time.Minute, cfg.ProbeIdleTimeout)
	assert.Equal(t, 3<<20, cfg.MaxRequestBytes)
	assert.Equal(t, []float64{0.25, 0.5, 0.75, 0.9, 0.99}, cfg.Quantiles)
	assert.Equal(t, 32, cfg.CDFPoints)
	assert.Equal(t, 1, cfg.RearmWindows)
	assert.Equal(t, SnapshotConfig{Enabled: true, Before: 5, After: 5 * time.Second, MaxFiles: 100, MaxBytes: 64 << 20}, cfg.Snapshot)
	assert.Equal(t, int64(60), cfg.QueueConfig.Get().QueueSize)
	assert.False(t, cfg.HTTP.HasValue(), "OTLP/gRPC unless an http section is given")
	// Without an endpoint the default configuration is not valid, and that
	// is its only problem: the defaults are within the bounds.
	require.EqualError(t, confmap.Validate(cfg), `requires a non-empty "endpoint" (OTLP/gRPC) or an "http" section with an endpoint (OTLP/HTTP)`)
	require.NoError(t, cfg.CheckBounds())
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
		want.ProbeIdleTimeout = time.Minute
		want.MaxRequestBytes = 1 << 20
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
		want.Snapshot = SnapshotConfig{Enabled: true, Before: 2, After: 10 * time.Second, Directory: "testdata", MaxFiles: 10, MaxBytes: 16 << 20}
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
		// Out of bounds. 1e9 is a float in YAML, integral and within an int:
		// it is decoded exactly and refused here.
		{"interval_too_short", `"interval": 1ns is below the minimum 100ms`},
		{"interval_too_long", `"interval": 2h0m0s is above the maximum 1h0m0s`},
		{"history_too_long", `"history": 1000000000 is above the maximum 1000`},
		{"history_zero", `"history": 0 is below the minimum 1`},
		{"max_probes_zero", `"max_probes": 0 is below the minimum 1`},
		{"max_probes_too_many", `"max_probes": 100001 is above the maximum 100000`},
		{"probe_idle_timeout_too_short", `"probe_idle_timeout": 500ms is below the minimum 1s`},
		{"probe_idle_timeout_too_long", `"probe_idle_timeout": 192h0m0s is above the maximum 168h0m0s`},
		{"probe_idle_timeout_below_interval", `"probe_idle_timeout": 2s is shorter than "interval" 5s`},
		{"max_request_bytes_too_small", `"max_request_bytes": 1000 is below the minimum 65536`},
		{"max_request_bytes_too_large", `"max_request_bytes": 1000000000 is above the maximum 67108864`},
		{"cdf_points_negative", `"cdf_points": -1 is below the minimum 0`},
		{"cdf_points_too_many", `"cdf_points": 10001 is above the maximum 10000`},
		{"too_many_quantiles", `"quantiles": 33 values are more than the maximum 32`},
		{"rearm_windows_too_many", `"rearm_windows": 10001 is above the maximum 10000`},
		{"snapshot_before_too_many", `"snapshot::before": 1000000000 is above the maximum 1000`},
		{"snapshot_after_too_long", `"snapshot::after": 1000000h0m0s is above the maximum 1h0m0s`},
		{"snapshot_max_files_zero", `"snapshot::max_files": 0 is below the minimum 1`},
		{"snapshot_max_bytes_too_small", `"snapshot::max_bytes": 1000 is below the minimum 1048576`},
		{"probe_bins_too_many", `"probes::checkout::bins": 5000 is above the maximum 1000`},
		{"probe_dmax_too_long", `"probes::checkout::dmax": 25h0m0s is above the maximum 24h0m0s`},
		{"qta_delay_too_long", `"probes::checkout::qta::points::1::delay": 25h0m0s is above the maximum 24h0m0s`},
		{"max_instances_too_many", `"probes::checkout::triggers::max_instances": 10000000000000 is above the maximum 1000000000000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestLoadUndecodableConfig checks, through the collector's loader, the
// configurations refused while decoding: the values Validate would see are
// not the values written.
func TestLoadUndecodableConfig(t *testing.T) {
	const noUnit = " has no unit; write a duration such as 500ms or 2s"
	tests := []struct {
		name, want string
	}{
		// Decoded, 500 would be 500ns.
		{"dmax_without_unit", `"probes::checkout::dmax": 500` + noUnit},
		{"interval_without_unit", `"interval": 5` + noUnit},
		{"timeout_without_unit", `"timeout": 10` + noUnit + "\n" + `"http::timeout": 30` + noUnit},
		// Decoded, 1e20 would be -9223372036854775808.
		{"history_huge", `"history": 100000000000000000000 is out of the integer range [-9223372036854775808, 9223372036854775807]`},
		{"before_fraction", `"snapshot::before": 2.5 is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
			require.NoError(t, err)
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			err = sub.Unmarshal(createDefaultConfig().(*Config))
			require.Error(t, err)
			// The collector's decoder wraps the message; the message itself is
			// on its last lines.
			assert.True(t, strings.HasSuffix(err.Error(), " "+tt.want), "got %q", err)
		})
	}
}

// TestBoundsEnds checks that both ends of every range are accepted, and
// that one step past is refused with a message naming the option.
func TestBoundsEnds(t *testing.T) {
	base := func() *Config {
		cfg := createDefaultConfig().(*Config)
		cfg.ClientConfig.Endpoint = "localhost:4317"
		return cfg
	}
	tests := []struct {
		name     string
		lo, hi   func(*Config)
		out      func(*Config)
		wantText string
	}{
		{
			"interval",
			func(c *Config) { c.Interval, c.ProbeIdleTimeout = 100*time.Millisecond, time.Second },
			func(c *Config) { c.Interval, c.ProbeIdleTimeout = time.Hour, time.Hour },
			func(c *Config) { c.Interval = 100*time.Millisecond - 1 },
			`"interval": 99.999999ms is below the minimum 100ms`,
		},
		{
			"history",
			func(c *Config) { c.History = 1 },
			func(c *Config) { c.History = 1000 },
			func(c *Config) { c.History = 1001 },
			`"history": 1001 is above the maximum 1000`,
		},
		{
			"max_probes",
			func(c *Config) { c.MaxProbes = 1 },
			func(c *Config) { c.MaxProbes = 100_000 },
			func(c *Config) { c.MaxProbes = -1 },
			`"max_probes": -1 is below the minimum 1`,
		},
		{
			"probe_idle_timeout",
			func(c *Config) { c.ProbeIdleTimeout = time.Second },
			func(c *Config) { c.ProbeIdleTimeout = 7 * 24 * time.Hour },
			func(c *Config) { c.ProbeIdleTimeout = 7*24*time.Hour + 1 },
			`"probe_idle_timeout": 168h0m0.000000001s is above the maximum 168h0m0s`,
		},
		{
			"max_request_bytes",
			func(c *Config) { c.MaxRequestBytes = 64 << 10 },
			func(c *Config) { c.MaxRequestBytes = 64 << 20 },
			func(c *Config) { c.MaxRequestBytes = 64<<20 + 1 },
			`"max_request_bytes": 67108865 is above the maximum 67108864`,
		},
		{
			"cdf_points",
			func(c *Config) { c.CDFPoints = 0 },
			func(c *Config) { c.CDFPoints = 10_000 },
			func(c *Config) { c.CDFPoints = 10_001 },
			`"cdf_points": 10001 is above the maximum 10000`,
		},
		{
			"rearm_windows",
			func(c *Config) { c.RearmWindows = 0 },
			func(c *Config) { c.RearmWindows = 10_000 },
			func(c *Config) { c.RearmWindows = -1 },
			`"rearm_windows": -1 is below the minimum 0`,
		},
		{
			"snapshot",
			func(c *Config) {
				c.Snapshot.Before, c.Snapshot.After, c.Snapshot.MaxFiles, c.Snapshot.MaxBytes = 0, 0, 1, 1<<20
				c.Snapshot.Directory = "testdata"
			},
			func(c *Config) {
				c.Snapshot.Before, c.Snapshot.After, c.Snapshot.MaxFiles, c.Snapshot.MaxBytes = 1000, time.Hour, 1_000_000, 1<<40
				c.Snapshot.Directory = "testdata"
			},
			func(c *Config) { c.Snapshot.MaxBytes, c.Snapshot.Directory = 1<<40+1, "testdata" },
			`"snapshot::max_bytes": 1099511627777 is above the maximum 1099511627776`,
		},
		{
			"probe",
			func(c *Config) {
				c.Probes = map[string]ProbeConfig{"p": {DMax: 1, Bins: 1, QTA: QTAConfig{Points: []QTAPoint{{Delay: 1, P: 0.5}}}}}
			},
			func(c *Config) {
				c.Probes = map[string]ProbeConfig{"p": {
					DMax: 24 * time.Hour, Bins: 1000,
					QTA:      QTAConfig{Points: []QTAPoint{{Delay: 24 * time.Hour, P: 0.5}}},
					Triggers: TriggersConfig{MaxInstances: 1_000_000_000_000},
				}}
			},
			func(c *Config) { c.Probes = map[string]ProbeConfig{"p": {DMax: time.Second, Bins: 1001}} },
			`"probes::p::bins": 1001 is above the maximum 1000`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, set := range []func(*Config){tt.lo, tt.hi} {
				cfg := base()
				set(cfg)
				assert.NoError(t, cfg.Validate())
			}
			cfg := base()
			tt.out(cfg)
			assert.EqualError(t, cfg.CheckBounds(), tt.wantText)
		})
	}
	// Without a directory the file bounds bound nothing and are not checked.
	cfg := base()
	cfg.Snapshot.MaxFiles, cfg.Snapshot.MaxBytes = 0, 0
	assert.NoError(t, cfg.Validate())
}

// TestProbeNameLength checks the bound on a probe name,
// outcome.MaxNameLength = 256 bytes: the message cuts the name to 32 bytes,
// and not inside a UTF-8 sequence ("Δ" is 2 bytes, so 16 of them fill 32).
func TestProbeNameLength(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Probes = map[string]ProbeConfig{strings.Repeat("a", 256): {}}
	assert.NoError(t, cfg.CheckBounds())
	cfg.Probes = map[string]ProbeConfig{strings.Repeat("a", 257): {}}
	assert.EqualError(t, cfg.CheckBounds(), `"probes": the name "`+strings.Repeat("a", 32)+`"… of 257 bytes is longer than the maximum 256`)
	cfg.Probes = map[string]ProbeConfig{"x" + strings.Repeat("Δ", 200): {}} // 401 bytes
	assert.EqualError(t, cfg.CheckBounds(), `"probes": the name "x`+strings.Repeat("Δ", 15)+`"… of 401 bytes is longer than the maximum 256`)
}
