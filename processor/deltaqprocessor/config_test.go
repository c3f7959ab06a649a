package deltaqprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

func ptr[T any](v T) *T { return &v }

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

func TestLoadValidConfig(t *testing.T) {
	tests := []struct {
		name string
		want *Config
	}{
		{
			name: "",
			want: &Config{
				MaxInFlight:     defaultMaxInFlight,
				TimerResolution: defaultTimerResolution,
				LateWindow:      defaultLateWindow,
				MaxEnded:        defaultMaxEnded,
				EndedWindow:     defaultEndedWindow,
				Probes:          []ProbeConfig{{Name: "checkout", DMax: 50 * time.Millisecond, Bins: 50}},
			},
		},
		{
			name: "full",
			want: &Config{
				MaxInFlight:     5000,
				TimerResolution: 5 * time.Millisecond,
				TimeoutGrace:    200 * time.Millisecond,
				LateWindow:      30 * time.Second,
				MaxEnded:        20000,
				EndedWindow:     10 * time.Second,
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
			want: &Config{
				MaxInFlight:     defaultMaxInFlight,
				TimerResolution: defaultTimerResolution,
				LateWindow:      defaultLateWindow,
				MaxEnded:        defaultMaxEnded,
				EndedWindow:     defaultEndedWindow,
				Probes: []ProbeConfig{
					{Name: "fine", Exponent: ptr(-10), Bins: 1},
					{Name: "coarse", Exponent: ptr(10), Bins: 1000},
				},
			},
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

func TestLoadInvalidConfig(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string
	}{
		{"no_probes", "probes: at least one probe is required"},
		{"missing_name", "probes[0]: name: must not be empty"},
		{"duplicate_names", `probes[1] "checkout": name: duplicate probe name (also probes[0])`},
		{"bad_regexp", `probes[0] "items": match.span_name_regexp: error parsing regexp: missing closing ): ` + "`GET /items/(`"},
		{"name_and_regexp", `probes[0] "items": match.span_name, match.span_name_regexp: set at most one`},
		{"dmax_missing", `probes[0] "checkout": dmax: a positive dmax (or an exponent) is required`},
		{"dmax_zero", `probes[0] "checkout": dmax: a positive dmax (or an exponent) is required`},
		{"dmax_negative", `probes[0] "checkout": dmax: must be positive, got -5ms`},
		{"dmax_below_bins", `probes[0] "checkout": dmax: 500ns is less than 1ns per bin with 1000 bins`},
		{"dmax_and_exponent", `probes[0] "checkout": dmax, exponent: set either dmax or exponent, not both`},
		{"bins_zero", `probes[0] "checkout": bins: must be in [1, 1000], got 0`},
		{"bins_too_many", `probes[0] "checkout": bins: must be in [1, 1000], got 1001`},
		{"exponent_too_low", `probes[0] "checkout": exponent: must be in [-10, 10], got -11`},
		{"exponent_too_high", `probes[0] "checkout": exponent: must be in [-10, 10], got 11`},
		{"bad_span_kind", `probes[0] "checkout": match.span_kind: unknown span kind "serverish" (want internal, server, client, producer or consumer)`},
		{"bad_attribute_value", `probes[0] "checkout": match.attributes["http.request.method"]: value has unsupported type []interface {} (want string, number or boolean)`},
		{"bad_op", `probes[0] "checkout": failure.conditions[0].op: unknown operator "=>" (want ==, !=, <, <=, > or >=)`},
		{"ordering_needs_number", `failure.conditions[0].value: operator >= needs a number, got "500"`},
		{"condition_without_attribute", `probes[0] "checkout": failure.conditions[0].attribute: must not be empty`},
		{"condition_without_value", `probes[0] "checkout": failure.conditions[0].value: value is required`},
		{"max_in_flight_zero", "max_in_flight: must be at least 1, got 0"},
		{"timer_resolution_too_fine", "timer_resolution: must be at least 1ms, got 100µs"},
		{"late_window_zero", "late_window: must be positive, got 0s"},
		{"timeout_grace_negative", "timeout_grace: must be in [0s, 1h0m0s], got -1ms"},
		{"timeout_grace_too_long", "timeout_grace: must be in [0s, 1h0m0s], got 2h0m0s"},
		{"max_ended_one", "max_ended: must be at least 2, got 1"},
		{"ended_window_zero", "ended_window: must be positive, got 0s"},
		{"two_problems", `probes[0] "checkout": bins: must be in [1, 1000], got 5000` + "\n" +
			`probes[0] "checkout": dmax: must be positive, got -1ms`},
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
