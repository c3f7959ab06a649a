// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
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
	assert.Equal(t, analysis.SnapshotConfig{Enabled: true, Before: 5, After: 5 * time.Second, MaxFiles: 100, MaxBytes: 64 << 20}, cfg.Snapshot)
	require.NoError(t, cfg.Check())
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
			`interval: 99.999999ms is below the minimum 100ms`,
		},
		{
			"services.max_per_probe",
			func(c *Config) { c.Services.MaxPerProbe = 1 },
			func(c *Config) { c.Services.MaxPerProbe = 32 },
			func(c *Config) { c.Services.MaxPerProbe = 33 },
			`services.max_per_probe: 33 is above the maximum 32`,
		},
		{
			"services.idle_timeout",
			func(c *Config) { c.Services.IdleTimeout = time.Second },
			func(c *Config) { c.Services.IdleTimeout = 7 * 24 * time.Hour },
			func(c *Config) { c.Services.IdleTimeout = time.Second - 1 },
			`services.idle_timeout: 999.999999ms is below the minimum 1s`,
		},
		{
			"history",
			func(c *Config) { c.History = 1 },
			func(c *Config) { c.History = 1000 },
			func(c *Config) { c.History = 1001 },
			`history: 1001 is above the maximum 1000`,
		},
		{
			"max_probes",
			func(c *Config) { c.MaxProbes = 1 },
			func(c *Config) { c.MaxProbes = 100_000 },
			func(c *Config) { c.MaxProbes = 0 },
			`max_probes: 0 is below the minimum 1`,
		},
		{
			"probe_idle_timeout",
			func(c *Config) { c.ProbeIdleTimeout = time.Second },
			func(c *Config) { c.ProbeIdleTimeout = 7 * 24 * time.Hour },
			func(c *Config) { c.ProbeIdleTimeout = 7*24*time.Hour + 1 },
			`probe_idle_timeout: 168h0m0.000000001s is above the maximum 168h0m0s`,
		},
		{
			"max_request_bytes",
			func(c *Config) { c.MaxRequestBytes = 64 << 10 },
			func(c *Config) { c.MaxRequestBytes = 64 << 20 },
			func(c *Config) { c.MaxRequestBytes = 64<<20 + 1 },
			`max_request_bytes: 67108865 is above the maximum 67108864`,
		},
		{
			"cdf_points",
			func(c *Config) { c.CDFPoints = 0 },
			func(c *Config) { c.CDFPoints = 10_000 },
			func(c *Config) { c.CDFPoints = 10_001 },
			`cdf_points: 10001 is above the maximum 10000`,
		},
		{
			"rearm_windows",
			func(c *Config) { c.RearmWindows = 0 },
			func(c *Config) { c.RearmWindows = 10_000 },
			func(c *Config) { c.RearmWindows = 10_001 },
			`rearm_windows: 10001 is above the maximum 10000`,
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
			`snapshot.max_bytes: 1099511627777 is above the maximum 1099511627776`,
		},
		{
			"probe",
			func(c *Config) {
				// dmax as the processor's: deltaq.MinDMax.
				c.Probes = map[string]analysis.ProbeConfig{"p": {DMax: deltaq.MinDMax, Bins: 1, QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 1, P: 0.5}}}}}
			},
			func(c *Config) {
				c.Probes = map[string]analysis.ProbeConfig{"p": {
					DMax: 24 * time.Hour, Bins: 1000,
					QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 24 * time.Hour, P: 0.5}}},
					Triggers: analysis.Triggers{MaxInstances: 1_000_000_000_000},
				}}
			},
			func(c *Config) { c.Probes = map[string]analysis.ProbeConfig{"p": {DMax: time.Second, Bins: 1001}} },
			`probes["p"].bins: 1001 is above the maximum 1000`,
		},
		{
			"probe dmax below the processor's minimum",
			func(c *Config) { c.Probes = map[string]analysis.ProbeConfig{"p": {DMax: deltaq.MinDMax, Bins: 10}} },
			func(c *Config) { c.Probes = map[string]analysis.ProbeConfig{"p": {DMax: deltaq.MaxDMax, Bins: 10}} },
			func(c *Config) { c.Probes = map[string]analysis.ProbeConfig{"p": {DMax: deltaq.MinDMax - 1, Bins: 10}} },
			`probes["p"].dmax: 999ns is below the minimum 1µs`,
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
			assert.EqualError(t, cfg.checkBounds(), tt.wantText)
		})
	}
	// Without a directory the file bounds bound nothing and are not checked.
	cfg := base()
	cfg.Snapshot.MaxFiles, cfg.Snapshot.MaxBytes = 0, 0
	assert.NoError(t, cfg.Check())
}

// TestIntervalAboveTheDefaultIdleTimeout: an interval above 10m is refused
// while probe_idle_timeout keeps its default, 10m; the message says that
// the 10m is the default, and what to set.
func TestIntervalAboveTheDefaultIdleTimeout(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Interval = 20 * time.Minute
	assert.EqualError(t, cfg.Check(), "probe_idle_timeout: 10m0s (its default) is shorter than interval 20m0s: a probe would be forgotten between two of its windows; set probe_idle_timeout to at least the interval")
	cfg.ProbeIdleTimeout = 5 * time.Minute
	cfg.Interval = 6 * time.Minute
	assert.EqualError(t, cfg.Check(), "probe_idle_timeout: 5m0s is shorter than interval 6m0s: a probe would be forgotten between two of its windows; set probe_idle_timeout to at least the interval")
	cfg.ProbeIdleTimeout = 20 * time.Minute
	cfg.Interval = 20 * time.Minute
	assert.NoError(t, cfg.Check())
}

// TestProbeNameLength checks the bound on a probe name,
// contract.MaxNameLength = 256 bytes: the message cuts the name to 32 bytes,
// and not inside a UTF-8 sequence ("Δ" is 2 bytes, so 16 of them fill 32).
func TestProbeNameLength(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{strings.Repeat("a", 256): {}}
	assert.NoError(t, cfg.checkBounds())
	cfg.Probes = map[string]analysis.ProbeConfig{strings.Repeat("a", 257): {}}
	assert.EqualError(t, cfg.checkBounds(), `probes: the name "`+strings.Repeat("a", 32)+`"… of 257 bytes is longer than the maximum 256`)
	cfg.Probes = map[string]analysis.ProbeConfig{"x" + strings.Repeat("Δ", 200): {}} // 401 bytes
	assert.EqualError(t, cfg.checkBounds(), `probes: the name "x`+strings.Repeat("Δ", 15)+`"… of 401 bytes is longer than the maximum 256`)
}

// TestNegativeOptionsReportedOnce: a negative value is refused by
// analysis.Config.Check, naming the option, and not a second time by the
// collector's bounds.
func TestNegativeOptionsReportedOnce(t *testing.T) {
	cfg := NewDefaultConfig()
	cfg.History, cfg.MaxProbes, cfg.ProbeIdleTimeout, cfg.RearmWindows = -1, -1, -time.Second, -1
	cfg.Snapshot.Before, cfg.Snapshot.After = -1, -time.Second
	cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: -1, Bins: -1,
		QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: -1, P: 0.5}}},
		Triggers: analysis.Triggers{MaxInstances: -1}}}
	require.NoError(t, cfg.checkBounds(), "the bounds leave negative values to the analysis")
	err := cfg.Check()
	require.Error(t, err)
	msg := err.Error()
	for _, key := range []string{`history: must be ≥ 0, got -1`, `max_probes: must be ≥ 0, got -1`,
		`probe_idle_timeout: must be ≥ 0, got -1s`, `rearm_windows: must be ≥ 0, got -1`,
		`snapshot.before: must be ≥ 0, got -1`, `snapshot.after: must be ≥ 0, got -1s`,
		`probes["p"].dmax: must not be negative, got -1ns`, `probes["p"].bins: must not be negative, got -1`, `probes["p"].qta.points[0].delay: must be > 0, got -1ns`,
		`probes["p"].triggers.max_instances: must be ≥ 0, got -1`} {
		assert.Equal(t, 1, strings.Count(msg, key), "%s in %q", key, msg)
	}
	assert.Len(t, strings.Split(msg, "\n"), 10, "one line per problem: %q", msg)

	// An interval of zero is an offline analysis, not a collector's; a
	// negative one is refused in the same words.
	cfg = NewDefaultConfig()
	cfg.Interval = 0
	assert.EqualError(t, cfg.Check(), `interval: must be positive, got 0s`)
	_, err = New(&cfg, Settings{})
	assert.EqualError(t, err, `interval: must be positive, got 0s`, "New refuses it too: its timer needs an interval")
	cfg.Interval = -time.Second
	assert.EqualError(t, cfg.Check(), `interval: must be positive, got -1s`, "the same rule as for zero, said once")
}

// componentConfig is a component's configuration: Config squashed into it, as
// the deltaq exporter and connector do.
type componentConfig struct {
	Config   `mapstructure:",squash"`
	Endpoint string `mapstructure:"endpoint"`
}

func decode(t *testing.T, yaml string) (*componentConfig, error) {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(yaml))
	require.NoError(t, err)
	conf, err := r.AsConf()
	require.NoError(t, err)
	c := &componentConfig{Config: NewDefaultConfig()}
	return c, Unmarshal(conf, c)
}

// TestUnmarshalEveryOption: every option of a component's section decodes
// into its field, through the two squashed levels (component, Config,
// analysis.Config); the raw checks of Unmarshal reach the analysis options
// in nested sections.
func TestUnmarshalEveryOption(t *testing.T) {
	c, err := decode(t, `
endpoint: backend:4317
interval: 5s
lag: 2s
history: 10
max_probes: 50
probe_idle_timeout: 1m
max_request_bytes: 1048576
quantiles: [0.5, 0.99]
cdf_points: 20
diagram: "e2e = a -> b;"
probes:
  checkout:
    dmax: 2s
    bins: 200
    qta:
      points: [{delay: 150ms, p: 0.25}, {delay: 250ms, p: 0.5}]
      max_failure: 0.05
    triggers: {qta: true, failure: true, max_instances: 10000, max_divergence: 0.2}
rearm_windows: 3
snapshot: {enabled: false, before: 2, after: 10s, directory: testdata, max_files: 10, max_bytes: 16777216}
exemplars: {enabled: false, max_per_probe: 16}
worst_instances: 7
max_adjusted_count: 4096
services: {max_per_probe: 8, idle_timeout: 2m}
`)
	require.NoError(t, err)
	want := componentConfig{Endpoint: "backend:4317", Config: Config{
		Config: analysis.Config{
			Interval: 5 * time.Second, Lag: 2 * time.Second, History: 10, MaxProbes: 50, ProbeIdleTimeout: time.Minute,
			Quantiles: []float64{0.5, 0.99},
			Diagram:   "e2e = a -> b;",
			Probes: map[string]analysis.ProbeConfig{"checkout": {
				DMax: 2 * time.Second, Bins: 200,
				QTA: analysis.QTA{
					Points:     []analysis.QTAPoint{{Delay: 150 * time.Millisecond, P: 0.25}, {Delay: 250 * time.Millisecond, P: 0.5}},
					MaxFailure: 0.05,
				},
				Triggers: analysis.Triggers{QTA: true, Failure: true, MaxInstances: 10000, MaxDivergence: 0.2},
			}},
			RearmWindows:   3,
			Snapshot:       analysis.SnapshotConfig{Before: 2, After: 10 * time.Second, Directory: "testdata", MaxFiles: 10, MaxBytes: 16 << 20},
			Exemplars:      analysis.ExemplarConfig{MaxPerProbe: 16},
			WorstInstances: 7, MaxAdjustedCount: 4096,
		},
		MaxRequestBytes: 1 << 20,
		CDFPoints:       20,
		Services:        ServicesConfig{MaxPerProbe: 8, IdleTimeout: 2 * time.Minute},
	}}
	assert.Equal(t, want, *c)
	require.NoError(t, c.Check())

	for _, tt := range []struct{ yaml, want string }{
		{"snapshot: {after: 10}", `snapshot.after: 10 has no unit`},
		{"probes: {p: {qta: {points: [{delay: 5, p: 0.5}]}}}", `probes["p"].qta.points[0].delay: 5 has no unit`},
		{"snapshot: {windows: 2}", `snapshot.windows: unknown option; the options here are after, before, directory, enabled, max_bytes, max_files`},
		{"snapshot: {befor: 2}", `snapshot.befor: unknown option; did you mean before?`},
		{"intervall: 1s", `intervall: unknown option; did you mean interval?`},
		// Set by the program only, never decoded.
		{"configured_probes: [x]", `configured_probes: unknown option`},
	} {
		_, err := decode(t, tt.yaml)
		require.Error(t, err, tt.yaml)
		assert.Contains(t, err.Error(), tt.want, tt.yaml)
	}
}

// TestWindowsOnlyNeedsEmitWindows: windows_only without emit_windows would
// leave the output empty; it is refused, saying why.
func TestWindowsOnlyNeedsEmitWindows(t *testing.T) {
	cfg := testConfig()
	cfg.WindowsOnly = true
	assert.ErrorContains(t, cfg.Check(), "windows_only: needs emit_windows: true")
	cfg.EmitWindows = true
	assert.NoError(t, cfg.Check())
}

// TestCheckRefusesMisspelledOutcome: Check (the connector's and the
// exporter's Validate) refuses, with the start's message, an outcome of the
// diagram or a QTA's probe one slip from a probe the component counts
// itself, so that `otelcol validate` refuses a configuration with no deltaq
// processor that start would refuse; a name near none of them, or a
// component that counts no probe of its own (a processor's probes are
// checked once the processor is made), is left to the start.
func TestCheckRefusesMisspelledOutcome(t *testing.T) {
	cfg := testConfig()
	cfg.Diagram = "checkout = inventory -> paymnet;"
	own := analysis.ProbeConfig{DMax: time.Second, Bins: 100}
	cfg.Probes = map[string]analysis.ProbeConfig{"inventory": own, "payment": own, "chekout": {QTA: analysis.QTA{MaxFailure: 0.1}}}
	assert.EqualError(t, cfg.Check(),
		"diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n"+
			`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)`)

	cfg.Diagram = "checkout = inventory -> billing;"
	cfg.Probes = map[string]analysis.ProbeConfig{"inventory": own, "payment": own}
	assert.NoError(t, cfg.Check(), "billing is near no probe: its instances may come from a processor or another collector")

	cfg.Diagram = "checkout = inventory -> paymnet;"
	cfg.Probes = map[string]analysis.ProbeConfig{"payment": {QTA: analysis.QTA{MaxFailure: 0.1}}}
	assert.NoError(t, cfg.Check(), "no probe of its own: the processors' probes are compared when they are made")
}
