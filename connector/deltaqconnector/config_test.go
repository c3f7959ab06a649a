// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/configtest"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// section returns the section deltaq[/name] of testdata/config.yaml.
func section(t *testing.T, name string) *confmap.Conf {
	t.Helper()
	return configtest.Section(t, metadata.Type, name)
}

// loadConfig returns the section deltaq[/name] of testdata/config.yaml
// decoded over the defaults.
func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	return configtest.LoadDefault[*Config](t, metadata.Type, createDefaultConfig, name)
}

func TestDefaultConfigIsValid(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, core.NewDefaultConfig(), cfg.Config, "the analysis options' defaults, as the exporter's")
	require.NoError(t, confmap.Validate(cfg), "the connector needs no option")
}

func TestLoadValidConfig(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		assert.Equal(t, createDefaultConfig(), loadConfig(t, ""), "an empty section is the default")
	})
	t.Run("full", func(t *testing.T) {
		cfg := loadConfig(t, "full")
		require.NoError(t, confmap.Validate(cfg))
		want := createDefaultConfig().(*Config)
		want.Interval, want.Lag, want.History, want.MaxProbes = 2*time.Second, 3*time.Second, 20, 70
		want.ProbeIdleTimeout, want.MaxRequestBytes, want.CDFPoints = 2*time.Minute, 2<<20, 20
		want.DiagramFile = "testdata/job.dq"
		coretest.SetFull(&want.Config.Config,
			analysis.QTAPoint{Delay: 150 * time.Millisecond, P: 0.25},
			analysis.QTAPoint{Delay: 250 * time.Millisecond, P: 0.5})
		assert.Equal(t, want, cfg)
		// The diagram file is parsed: its outcomes are referenced probes.
		assert.Equal(t, []string{"checkout", "worker_1", "worker_2"}, coretest.ReferencedProbes(t, cfg.Config.Config))
	})
	t.Run("gateway", func(t *testing.T) {
		cfg := loadConfig(t, "gateway")
		require.NoError(t, confmap.Validate(cfg))
		assert.Equal(t, analysis.GatewayConfig{LayoutQuorum: 3, MaxAgents: 16, ExpectedAgents: 4, MaxUnconfiguredProbes: 20}, cfg.Gateway)
		assert.Equal(t, analysis.ProbeConfig{DMax: 200 * time.Millisecond, Bins: 100}, cfg.Probes["job"])
		assert.Equal(t, &deltaq.BinningConfig{Kind: deltaq.BinningLogLinear, Factor: 10, Low: time.Millisecond,
			High: 10 * time.Second, Steps: 10}, cfg.Probes["search"].Binning)
	})
	t.Run("inline_diagram", func(t *testing.T) {
		cfg := loadConfig(t, "inline_diagram")
		require.NoError(t, confmap.Validate(cfg))
		assert.False(t, cfg.Snapshot.Enabled)
		assert.Equal(t, []string{"a", "b"}, coretest.ReferencedProbes(t, cfg.Config.Config), "the inline diagram is parsed")
	})
}

// TestLoadInvalidConfig: every invalid analysis option is refused by the
// collector's validation, with the exporter's message.
func TestLoadInvalidConfig(t *testing.T) {
	for _, tt := range coretest.InvalidConfigs {
		t.Run(tt.Name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.Name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.Want)
		})
	}
}

// TestLoadInvalidGatewayConfig: a quorum above max_agents, more
// unconfigured probes than max_probes and log-linear buckets that are not a
// layout are refused, each named.
func TestLoadInvalidGatewayConfig(t *testing.T) {
	err := confmap.Validate(loadConfig(t, "gateway_bad"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `gateway.layout_quorum: must be in [0, max_agents 16], got 20`)
	assert.Contains(t, err.Error(), `gateway.max_unconfigured_probes: must be in [0, max_probes 1000], got 2000`)
	assert.Contains(t, err.Error(), `probes["search"].binning: high 10s is not low 3ms times a power of the factor 10; use 3s or 30s`)
}

// TestLoadQoOConfig: a probe's qoo requirement is decoded as written and
// checked by the collector's validation, each mistake named with its
// remedy.
func TestLoadQoOConfig(t *testing.T) {
	cfg := loadConfig(t, "qoo")
	require.NoError(t, confmap.Validate(cfg))
	ms := time.Millisecond
	assert.Equal(t, analysis.QoOConfig{
		ROP:          analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.999, Delay: 300 * ms}, {P: 0.99, Delay: 200 * ms}}, MaxFailure: 0.01},
		CPUP:         analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.99, Delay: 500 * ms}, {P: 0.999, Delay: 600 * ms}}, MaxFailure: 0.05},
		MinRate:      4,
		MinInstances: 2000,
	}, cfg.Probes["checkout"].QoO)
	err := confmap.Validate(loadConfig(t, "qoo_bad"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["checkout"].qoo.cpup: has no point at p 0.999, which rop.points[1] has: rop and cpup name the same percentiles; add {p: 0.999, delay: …} to cpup.points, longer than rop's 300ms`)
	assert.Contains(t, err.Error(), `probes["checkout"].qoo.cpup.points[0].delay: 150ms is not looser than rop's 200ms at p 0.99`)
}

// TestLoadUndecodableConfig: what decoding would change without a word is
// refused while decoding, quoted as written.
func TestLoadUndecodableConfig(t *testing.T) {
	for _, tt := range coretest.UndecodableConfigs {
		t.Run(tt.Name, func(t *testing.T) {
			err := section(t, tt.Name).Unmarshal(createDefaultConfig().(*Config))
			require.Error(t, err)
			assert.True(t, strings.HasSuffix(err.Error(), " "+tt.Want), "got %q", err)
		})
	}
}

// TestLoadQoOPointMissing: a qoo point without its p or its delay is
// refused while decoding, at its path; p left out would have read as 0,
// the least delay, a valid percentile that nobody wrote.
func TestLoadQoOPointMissing(t *testing.T) {
	err := section(t, "qoo_missing").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["checkout"].qoo.rop.points[0].p: is missing: it has no default (write 0 for zero)`)
	assert.Contains(t, err.Error(), `probes["checkout"].qoo.cpup.points[0].delay: is missing: it has no default (write 0 for zero)`)
}

// TestLoadEmptyRequirements: a qta or qoo written with nothing in it is
// refused at its path (it read as no requirement, silently).
func TestLoadEmptyRequirements(t *testing.T) {
	err := section(t, "empty_requirements").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["checkout"].qta: is empty, which is no requirement: write its options, or leave it out`)
	assert.Contains(t, err.Error(), `probes["checkout"].qoo: is empty, which is no requirement: write its options, or leave it out`)
}

// TestLoadPercentage: a ratio written as a percentage (the decoder's own
// message was "expected type 'float64', got unconvertible type 'string'")
// is refused while decoding, with the fraction to write.
func TestLoadPercentage(t *testing.T) {
	err := section(t, "percentage").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["checkout"].qta.points[0].p: 95% is a percentage; write the fraction 0.95`)
	assert.Contains(t, err.Error(), `probes["checkout"].qta.max_failure: 1% is a percentage; write the fraction 0.01`)
}

// TestLoadShapes: a value of another shape than its option's is refused at
// its whole path, the probe's included (the decoder's own message for a
// probe's match was "'match' expected a map or struct, got "string"",
// naming no probe), with what the option takes.
func TestLoadShapes(t *testing.T) {
	err := section(t, "shapes").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	for _, want := range []string{
		`probes["auth"].bins: must be an integer, got the string "many"`,
		`probes["auth"].match.span_name: must be a string (quote it: "404"), got the number 404`,
		`probes["pay"].binning: must be a map of its options (factor, high, kind, low, steps), got the string "log-linear"`,
		`probes["pay"].match: must be a map of its options (attributes, service_name, span_kind, span_name, span_name_regexp), got the string "pay"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
}
