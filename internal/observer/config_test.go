package observer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The defaults are within the bounds, and the default configuration is
// valid as it is.
func TestDefaultConfig(t *testing.T) {
	cfg := NewDefaultConfig()
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
	require.NoError(t, cfg.Check())
	ac, err := cfg.AnalysisConfig()
	require.NoError(t, err)
	assert.Equal(t, time.Second, ac.Lag, "lag 0 is one interval")
	assert.Equal(t, 5, ac.Snapshot.After, "5 s after at a 1 s interval is 5 windows")
}

// TestBoundsEnds checks that both ends of every range are accepted, and
// that one step past is refused with a message naming the option.
func TestBoundsEnds(t *testing.T) {
	base := func() *Config {
		cfg := NewDefaultConfig()
		return &cfg
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
				assert.NoError(t, cfg.Check())
			}
			cfg := base()
			tt.out(cfg)
			assert.EqualError(t, cfg.CheckBounds(), tt.wantText)
		})
	}
	// Without a directory the file bounds bound nothing and are not checked.
	cfg := base()
	cfg.Snapshot.MaxFiles, cfg.Snapshot.MaxBytes = 0, 0
	assert.NoError(t, cfg.Check())
}

// TestProbeNameLength checks the bound on a probe name,
// outcome.MaxNameLength = 256 bytes: the message cuts the name to 32 bytes,
// and not inside a UTF-8 sequence ("Δ" is 2 bytes, so 16 of them fill 32).
func TestProbeNameLength(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Probes = map[string]ProbeConfig{strings.Repeat("a", 256): {}}
	assert.NoError(t, cfg.CheckBounds())
	cfg.Probes = map[string]ProbeConfig{strings.Repeat("a", 257): {}}
	assert.EqualError(t, cfg.CheckBounds(), `"probes": the name "`+strings.Repeat("a", 32)+`"… of 257 bytes is longer than the maximum 256`)
	cfg.Probes = map[string]ProbeConfig{"x" + strings.Repeat("Δ", 200): {}} // 401 bytes
	assert.EqualError(t, cfg.CheckBounds(), `"probes": the name "x`+strings.Repeat("Δ", 15)+`"… of 401 bytes is longer than the maximum 256`)
}
