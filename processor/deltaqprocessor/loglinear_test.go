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

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// searchLayout is testdata/config_loglinear.yaml's binning.
var searchLayout = deltaq.LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}

// TestLogLinearBinningConfig: `binning: log-linear` is read from YAML, its
// dMax is binning.high, and a duration without a unit is refused by name.
func TestLogLinearBinningConfig(t *testing.T) {
	cfg := loadValidConfig(t, "config_loglinear.yaml")
	require.Len(t, cfg.Probes, 2)
	// A map: the probes in name order, neither more specific.
	require.Equal(t, []string{"payment", "search"}, []string{cfg.Probes[0].Name, cfg.Probes[1].Name})
	assert.Equal(t, &deltaq.BinningConfig{Kind: "log-linear", Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10}, cfg.Probes[1].Binning)
	assert.Nil(t, cfg.Probes[0].Binning)
	d, errs := cfg.Probes[1].DMaxNanos()
	assert.Empty(t, errs)
	assert.Equal(t, int64(10*time.Second), d)

	raw := map[string]any{"probes": []any{map[string]any{
		"name": "search", "binning": map[string]any{"kind": "log-linear", "factor": 10, "low": 1, "high": "10s", "steps": 10},
	}}}
	err := createDefaultConfig().(*Config).Unmarshal(confmap.NewFromStringMap(raw))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "probes[0].binning.low: 1 has no unit")
}

// TestLogLinearBinningErrors: every problem of a binning, and every field
// it excludes, is reported naming the field.
func TestLogLinearBinningErrors(t *testing.T) {
	good := func() ProbeConfig {
		return ProbeConfig{Name: "search", Binning: &deltaq.BinningConfig{Kind: "log-linear", Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10}}
	}
	n := 2
	for _, c := range []struct {
		edit func(*ProbeConfig)
		want string
	}{
		{func(pc *ProbeConfig) { pc.Binning.Kind = "linear" }, `binning.kind: must be log-linear, got "linear"`},
		{func(pc *ProbeConfig) { pc.Binning.Factor = 1 }, "binning.factor: must be at least 2, got 1"},
		{func(pc *ProbeConfig) { pc.Binning.Steps = 15 }, "binning.steps: must be a positive multiple of binning.factor 10, got 15"},
		{func(pc *ProbeConfig) { pc.Binning.Low = 0 }, "binning.low: must be in (0s, binning.high 10s), got 0s"},
		{func(pc *ProbeConfig) { pc.Binning.High = 48 * time.Hour }, "binning.high: must be in [1µs, 24h0m0s], got 48h0m0s"},
		{func(pc *ProbeConfig) { pc.Binning.High = 5 * time.Second }, "binning: high 5s is not low 1ms times a power of the factor 10; use 1s or 10s"},
		{func(pc *ProbeConfig) { pc.Binning.High = 3 * time.Millisecond }, "binning: high 3ms is not low 1ms times a power of the factor 10; use 1ms or 10ms"},
		// From 3ns to 3s by tens in 20 steps: [3ns, 30ns) in steps of 1.5ns.
		{func(pc *ProbeConfig) { pc.Binning.Low, pc.Binning.High, pc.Binning.Steps = 3, 3*time.Second, 20 }, "not whole nanoseconds"},
		// 1ns to 10s by tens in 1000 steps: far more than 1000 buckets.
		{func(pc *ProbeConfig) { pc.Binning.Low, pc.Binning.Steps = 1, 1000 }, "buckets, more than 1000"},
		{func(pc *ProbeConfig) { pc.Bins = 100 }, "bins, binning: set either bins or binning, not both"},
		{func(pc *ProbeConfig) { pc.DMax = time.Second }, "dmax, exponent: the dMax of a probe with binning is binning.high; set neither"},
		{func(pc *ProbeConfig) { pc.Exponent = &n }, "dmax, exponent: the dMax of a probe with binning is binning.high; set neither"},
		{func(pc *ProbeConfig) { pc.DMaxAuto = true }, "binning, dmax: auto: set one or the other"},
		{func(pc *ProbeConfig) { pc.DMaxMax = time.Second }, "dmax_min, dmax_max, dmax_sample, dmax_period, dmax_changes_per_hour: only with dmax: auto"},
	} {
		pc := good()
		c.edit(&pc)
		err := testConfig(pc).Validate()
		if err == nil || !strings.Contains(err.Error(), `probes[0]`) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %+v: %v, want an error of probes[0] containing %q", pc, *pc.Binning, err, c.want)
		}
	}
	require.NoError(t, testConfig(good()).Validate())
}

// TestLogLinearProbeRegistersAndMarksSpans: the registry holds the probe's
// buckets (dMax = high, no bins), for a connector or exporter of the same
// collector; its spans carry deltaq.dmax_ns and no deltaq.bins, and its
// timeouts are judged by dMax = high.
func TestLogLinearProbeRegistersAndMarksSpans(t *testing.T) {
	pc := ProbeConfig{Name: "search", Binning: &deltaq.BinningConfig{Kind: "log-linear", Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10}}
	h := newHarness(t, testConfig(pc))
	l, ok := h.state.Layouts.LookupLayout("search")
	require.True(t, ok)
	assert.Equal(t, deltaq.Layout{DMaxNs: int64(10 * time.Second), LogLinear: searchLayout}, l)
	assert.True(t, l.Valid())

	h.consumeTraces(tracesOf(
		spanSpec{name: "search", id: 1, duration: 3 * time.Millisecond},
		spanSpec{name: "search", id: 2, duration: 9 * time.Second},
		spanSpec{name: "search", id: 3, duration: 11 * time.Second},
	))
	spans, _ := allSpans(h.tsink.AllTraces())
	require.Len(t, spans, 3)
	assert.Equal(t, map[string]any{contract.AttrProbe: "search", contract.AttrDMaxNs: int64(10 * time.Second)}, attrsOf(spans[0]),
		"the first span of the batch carries the dMax, and no bins")
	assert.Equal(t, map[string]any{contract.AttrProbe: "search"}, attrsOf(spans[1]), "9s is within high")
	assert.Equal(t, map[string]any{contract.AttrProbe: "search", contract.AttrOutcome: contract.Timeout, contract.AttrDMaxNs: int64(10 * time.Second)},
		attrsOf(spans[2]), "11s is beyond high")
}
