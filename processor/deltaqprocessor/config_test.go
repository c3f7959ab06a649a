// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/configtest"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

func ptr[T any](v T) *T { return &v }

// loadConfig returns the section deltaq[/name] of testdata/config.yaml
// decoded over the defaults.
func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	return configtest.LoadDefault[*Config](t, metadata.Type, createDefaultConfig, name)
}

// TestDefaultConfig: the defaults are those of the README's configuration
// table, and every other option is zero. A section that sets only probes
// loads to them with its probes (testConfig, in TestLoadValidConfig).
func TestDefaultConfig(t *testing.T) {
	assert.Equal(t, &Config{Options: inflight.Options{MaxInFlight: 100_000, TimerResolution: 10 * time.Millisecond, LateWindow: time.Minute, MaxEnded: 100_000, EndedWindow: 30 * time.Second}},
		createDefaultConfig())
}

func TestLoadValidConfig(t *testing.T) {
	tests := []struct {
		name string
		want *Config
	}{
		{
			name: "",
			want: byName(testConfig(ProbeConfig{Name: "checkout", DMax: 50 * time.Millisecond, Bins: 50})),
		},
		{
			name: "full",
			want: &Config{
				Options: inflight.Options{
					MaxInFlight:     5000,
					TimerResolution: 5 * time.Millisecond,
					TimeoutGrace:    200 * time.Millisecond,
					LateWindow:      30 * time.Second,
					MaxEnded:        20000,
					EndedWindow:     10 * time.Second,
				},
				probesByName: true,
				Failure: FailureConfig{
					StatusError: ptr(false),
					Conditions:  []ConditionConfig{{Attribute: "deltaq.failed", Value: true}},
				},
				Probes: []ProbeConfig{
					{
						Name: "checkout",
						Match: MatchConfig{
							SpanName:    "POST /checkout",
							ServiceName: "shop",
							SpanKind:    "server",
							Attributes:  map[string]any{"http.request.method": "POST", "shop.tier": 2},
						},
						DMax: 250 * time.Millisecond,
						Bins: 100,
						Failure: &FailureConfig{Conditions: []ConditionConfig{
							{Attribute: "http.response.status_code", Op: ">=", Value: 500},
							{Attribute: "shop.cart.empty", Op: "!=", Value: false},
						}},
					},
					{
						Name:     "items",
						Match:    MatchConfig{SpanNameRegexp: "^GET /items/[0-9]+$"},
						Exponent: ptr(2),
						Bins:     200,
					},
				},
			},
		},
		{
			name: "exponent",
			// In name order: neither is more specific.
			want: byName(testConfig(
				ProbeConfig{Name: "coarse", Exponent: ptr(10), Bins: 1000},
				ProbeConfig{Name: "fine", Exponent: ptr(-10), Bins: 1},
			)),
		},
	}
	for _, tt := range tests {
		t.Run("deltaq/"+tt.name, func(t *testing.T) {
			cfg := loadConfig(t, tt.name)
			assert.Equal(t, tt.want, cfg)
			assert.NoError(t, confmap.Validate(cfg))
		})
	}
}

// byName marks cfg's probes as written as a map, keyed by name.
func byName(cfg *Config) *Config {
	cfg.probesByName = true
	return cfg
}

func TestLoadInvalidConfig(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{"no_probes", "probes: at least one probe is required"},
		{"no_probes_map", "probes: at least one probe is required"},
		{"missing_name", "probes[0].name: must not be empty"},
		{"duplicate_names", `probes[1].name: duplicate probe name (also probes[0])`},
		{"bad_regexp", `probes["items"].match.span_name_regexp: error parsing regexp: missing closing ): ` + "`GET /items/(`"},
		{"name_and_regexp", `probes["items"]: match.span_name, match.span_name_regexp: set at most one`},
		{"dmax_missing", `probes["checkout"].dmax: a positive dmax (or an exponent) is required`},
		{"dmax_zero", `probes["checkout"].dmax: a positive dmax (or an exponent) is required`},
		{"dmax_negative", `probes["checkout"].dmax: must be in [1µs, 24h0m0s], got -5ms`},
		{"dmax_too_short", `probes["checkout"].dmax: must be in [1µs, 24h0m0s], got 500ns`},
		{"dmax_too_long", `probes["checkout"].dmax: must be in [1µs, 24h0m0s], got 25h0m0s`},
		{"dmax_and_exponent", `probes["checkout"]: dmax, exponent: set either dmax or exponent, not both`},
		{"bins_zero", `probes["checkout"].bins: is required (also with dmax: auto), e.g. bins: 100`},
		{"bins_negative", `probes["checkout"].bins: must be in [1, 1000], got -3`},
		{"bins_too_many", `probes["checkout"].bins: must be in [1, 1000], got 1001`},
		{"exponent_too_low", `probes["checkout"].exponent: must be in [-10, 10], got -11`},
		{"exponent_too_high", `probes["checkout"].exponent: must be in [-10, 10], got 11`},
		{"bad_span_kind", `probes["checkout"].match.span_kind: unknown span kind "serverish" (did you mean server?) (want internal, server, client, producer or consumer)`},
		{"bad_attribute_value", `probes["checkout"].match.attributes["http.request.method"]: value must be a string, number or boolean, got a list`},
		{"bad_op", `probes["checkout"].failure.conditions[0].op: unknown operator "=>" (want ==, !=, <, <=, > or >=)`},
		{"ordering_needs_number", `failure.conditions[0].value: operator >= needs a number, got "500"`},
		{"condition_without_attribute", `probes["checkout"].failure.conditions[0].attribute: must not be empty`},
		{"condition_without_value", `probes["checkout"].failure.conditions[0].value: value is required`},
		{"condition_on_contract_key", `probes["checkout"].failure.conditions[0].attribute: "deltaq.outcome" is an attribute the deltaq processor writes (and removes from incoming spans), so no span can carry it here`},
		{"match_on_contract_key", `probes["checkout"]: match.attributes["deltaq.probe"] is an attribute the deltaq processor writes (and removes from incoming spans), so no span can carry it here`},
		{"max_in_flight_zero", "max_in_flight: must be in [1, 10000000], got 0"},
		{"max_in_flight_too_many", "max_in_flight: must be in [1, 10000000], got 10000001"},
		{"timer_resolution_too_fine", "timer_resolution: must be in [1ms, 1s], got 100µs"},
		{"timer_resolution_too_coarse", "timer_resolution: must be in [1ms, 1s], got 2s"},
		{"late_window_zero", "late_window: must be in (0s, 24h0m0s], got 0s"},
		{"late_window_too_long", "late_window: must be in (0s, 24h0m0s], got 25h0m0s"},
		{"timeout_grace_negative", "timeout_grace: must be in [0s, 1h0m0s], got -1ms"},
		{"timeout_grace_too_long", "timeout_grace: must be in [0s, 1h0m0s], got 2h0m0s"},
		{"max_ended_one", "max_ended: must be in [2, 10000000], got 1"},
		// 1e9 is a float in YAML, integral and within an int: decoded exactly.
		{"max_ended_too_many", "max_ended: must be in [2, 10000000], got 1000000000"},
		{"ended_window_zero", "ended_window: must be in (0s, 24h0m0s], got 0s"},
		{"ended_window_too_long", "ended_window: must be in (0s, 24h0m0s], got 48h0m0s"},
		{"two_problems", `probes["checkout"].bins: must be in [1, 1000], got 5000` + "\n" +
			`probes["checkout"].dmax: must be in [1µs, 24h0m0s], got -1ms`},
	}
	for _, tt := range tests {
		t.Run("deltaq/"+tt.name, func(t *testing.T) {
			cfg := loadConfig(t, tt.name)
			err := confmap.Validate(cfg)
			require.Error(t, err)
			assert.Equal(t, tt.wantErr, cfg.Validate().Error())
			// The collector reports the same message.
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// TestLoadUndecodableConfig checks, through the collector's loader, the
// configurations refused while decoding: the values Validate would see are
// not the values written.
func TestLoadUndecodableConfig(t *testing.T) {
	const noUnit = " has no unit; write a duration such as 500ms or 2s"
	const intRange = " is out of the integer range [-9223372036854775808, 9223372036854775807]"
	tests := []struct {
		name, wantErr string
	}{
		// Decoded, 500 would be 500ns: every instance would time out.
		{"dmax_without_unit", "probes[\"checkout\"].dmax: 500" + noUnit},
		{"timer_resolution_without_unit", "timer_resolution: 10" + noUnit},
		// Decoded, 1e20 would be -9223372036854775808 and Validate would
		// say "got -9223372036854775808".
		{"bins_huge", "probes[\"checkout\"].bins: 100000000000000000000" + intRange},
		{"bins_fraction", "probes[\"checkout\"].bins: 2.5 is not an integer"},
		// In the order of the fields of Config.
		{"two_undecodable", "probes[\"checkout\"].dmax: 2.5" + noUnit + "\n" +
			"max_in_flight: 100000000000000000000" + intRange},
		// A newcomer's mistakes, said with how to fix them.
		{"misspelled_options", "timer_resolutoin: unknown option; did you mean timer_resolution?\n" +
			"probes[\"checkout\"].bin: unknown option; did you mean bins or binning?"},
		{"dmax_minutes", `probes["checkout"].dmax: "2min" is not a duration: the units are ns, us (or µs), ms, s, m and h; write 2m`},
	}
	for _, tt := range tests {
		t.Run("deltaq/"+tt.name, func(t *testing.T) {
			sub := configtest.Section(t, metadata.Type, tt.name)
			cfg := createDefaultConfig().(*Config)
			err := sub.Unmarshal(cfg)
			require.Error(t, err)
			// The collector's decoder wraps the message; the message itself is
			// on its last lines.
			assert.True(t, strings.HasSuffix(err.Error(), " "+tt.wantErr), "got %q", err)
		})
	}
}

// TestDMaxBounds checks the ends of the dmax range [1µs, 24h], and that the
// thesis form is bounded by exponent and bins instead: n = −10, N = 1 gives
// 977ns, below 1µs, and is accepted.
func TestDMaxBounds(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 24 * time.Hour} {
		_, errs := (&ProbeConfig{DMax: d, Bins: 1000}).DMaxNanos()
		assert.Empty(t, errs, "dmax %v", d)
	}
	for _, d := range []time.Duration{time.Microsecond - 1, 24*time.Hour + 1} {
		_, errs := (&ProbeConfig{DMax: d, Bins: 1}).DMaxNanos()
		require.Len(t, errs, 1)
		assert.EqualError(t, errs[0], "dmax: must be in [1µs, 24h0m0s], got "+d.String())
	}
	got, errs := (&ProbeConfig{Exponent: ptr(-10), Bins: 1}).DMaxNanos()
	assert.Empty(t, errs)
	assert.Equal(t, int64(977), got)
}

// TestProbeNameLength checks the bound on a probe name,
// contract.MaxNameLength = 256 bytes, counted in bytes (ΔQ is 3 bytes in
// UTF-8: "Δ" is 2 and "Q" is 1).
func TestProbeNameLength(t *testing.T) {
	cfg := testConfig(probeConfig(strings.Repeat("a", 256), time.Second, 10))
	assert.NoError(t, cfg.Validate())
	cfg = testConfig(probeConfig(strings.Repeat("a", 257), time.Second, 10))
	assert.EqualError(t, cfg.Validate(), "probes[0].name: must be at most 256 bytes, got 257")
	cfg = testConfig(probeConfig(strings.Repeat("ΔQ", 86), time.Second, 10)) // 258 bytes
	assert.EqualError(t, cfg.Validate(), "probes[0].name: must be at most 256 bytes, got 258")
}

// TestLimitBounds checks both ends of each limit's range.
func TestLimitBounds(t *testing.T) {
	ok := func(set func(*Config)) {
		t.Helper()
		cfg := testConfig(probeConfig("p", time.Second, 10))
		set(cfg)
		assert.NoError(t, cfg.Validate())
	}
	ok(func(c *Config) { c.MaxInFlight = 1 })
	ok(func(c *Config) { c.MaxInFlight = 10_000_000 })
	ok(func(c *Config) { c.TimerResolution = time.Millisecond })
	ok(func(c *Config) { c.TimerResolution = time.Second })
	ok(func(c *Config) { c.LateWindow = 1 })
	ok(func(c *Config) { c.LateWindow = 24 * time.Hour })
	ok(func(c *Config) { c.MaxEnded = 2 })
	ok(func(c *Config) { c.MaxEnded = 10_000_000 })
	ok(func(c *Config) { c.EndedWindow = 1 })
	ok(func(c *Config) { c.EndedWindow = 24 * time.Hour })
	cfg := testConfig(probeConfig("p", time.Second, 10))
	cfg.MaxEnded = 10_000_001
	assert.EqualError(t, cfg.Validate(), "max_ended: must be in [2, 10000000], got 10000001")
}

// TestTimeoutGraceBounds checks the ends of the timeout_grace range.
func TestTimeoutGraceBounds(t *testing.T) {
	cfg := testConfig(probeConfig("p", time.Second, 10))
	for _, g := range []time.Duration{0, time.Nanosecond, time.Hour} {
		cfg.TimeoutGrace = g
		assert.NoError(t, cfg.Validate(), "timeout_grace %v", g)
	}
	cfg.TimeoutGrace = time.Hour + time.Nanosecond
	assert.EqualError(t, cfg.Validate(), "timeout_grace: must be in [0s, 1h0m0s], got 1h0m0.000000001s")
}

func TestDefaultConfigNeedsProbes(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.EqualError(t, cfg.Validate(), "probes: at least one probe is required")
	cfg.Probes = []ProbeConfig{{Name: "p", DMax: time.Second, Bins: 10}}
	assert.NoError(t, cfg.Validate())
}

// TestDMaxNanos checks dMax = 1 ms·2ⁿ·N (thesis, section 5.1.1, equation
// 5.3) against values worked by hand, including the rounding below n = −6.
func TestDMaxNanos(t *testing.T) {
	tests := []struct {
		exponent, bins int
		want           int64
	}{
		{0, 1, 1_000_000},             // 1 ms
		{0, 50, 50_000_000},           // 50 ms
		{3, 100, 800_000_000},         // 1 ms · 8 · 100
		{10, 1000, 1_024_000_000_000}, // 1024 s, the largest
		{-1, 1, 500_000},              // 0.5 ms
		{-6, 1, 15_625},               // 10⁶/64, exact
		{-7, 1, 7_813},                // 7812.5 rounds away from zero
		{-10, 1, 977},                 // 976.5625 rounds to 977
		{-10, 1000, 976_563},          // 976562.5 rounds to 976563
	}
	for _, tt := range tests {
		pc := ProbeConfig{Exponent: ptr(tt.exponent), Bins: tt.bins}
		got, errs := pc.DMaxNanos()
		require.Empty(t, errs)
		assert.Equal(t, tt.want, got, "exponent %d, bins %d", tt.exponent, tt.bins)
	}
	pc := ProbeConfig{DMax: 50 * time.Millisecond, Bins: 1000}
	got, errs := pc.DMaxNanos()
	require.Empty(t, errs)
	assert.Equal(t, int64(50_000_000), got)
}
