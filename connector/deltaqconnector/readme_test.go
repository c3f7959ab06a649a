// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/configtest"
)

// sep is the separator of an option's keys in the README's tables.
const sep = "::"

// readmeRows are the rows of the README's tables of options, and the
// types of the options the connector decodes: its Config, and the entries
// of probes that the connector matches (MatchedProbe), which Unmarshal
// takes out of probes.
func readmeRows(t *testing.T) ([]configtest.Row, map[string]reflect.Type) {
	t.Helper()
	keys := configtest.Keys(reflect.TypeFor[Config](), sep)
	for k, typ := range configtest.Keys(reflect.TypeFor[MatchedProbe](), sep) {
		keys["probes::NAME::"+k] = typ
	}
	return configtest.OptionRows(t, "README.md", sep), keys
}

// readmeOptions are the README's tables of options and what the connector
// decodes, for the checks of configtest.
func readmeOptions(t *testing.T) configtest.Options {
	rows, keys := readmeRows(t)
	return configtest.Options{Component: "the connector", Sep: sep, Rows: rows, Keys: keys, ZeroMeans: zeroMeans,
		Base: baseSection, BoundsBase: boundsSection,
		Decode: func(sec map[string]any) (interface{ Validate() error }, error) {
			cfg := createDefaultConfig().(*Config)
			return cfg, confmap.NewFromStringMap(sec).Unmarshal(cfg)
		}}
}

// TestREADMEOptions: every option of one value that the connector decodes
// has its row in the README's tables, or is named in a row of the option
// that holds it, and every option a row names is one it decodes.
func TestREADMEOptions(t *testing.T) { configtest.CheckOptions(t, readmeOptions(t)) }

// zeroMeans are the defaults that an option's zero stands for, applied by
// the analysis (analysis.Config's defaults).
var zeroMeans = map[string]any{
	"exemplars::max_per_probe":                        analysis.DefaultExemplarsPerProbe,
	"worst_instances":                                 analysis.DefaultWorstInstances,
	"max_adjusted_count":                              analysis.DefaultMaxAdjustedCount,
	"gateway::layout_quorum":                          analysis.DefaultLayoutQuorum,
	"gateway::max_agents":                             analysis.DefaultMaxAgents,
	"gateway::max_unconfigured_probes":                analysis.DefaultMaxUnconfiguredProbes,
	"probes::NAME::triggers::divergence::windows":     1, // DivergenceTrigger.Windows: zero means 1
	"probes::NAME::triggers::divergence::pool":        1, // DivergenceTrigger.Pool: zero means 1
	"probes::NAME::triggers::slack_trend::windows":    analysis.DefaultSlackTrendWindows,
	"probes::NAME::triggers::slack_trend::confidence": analysis.DefaultSlackTrendConfidence,
}

// TestREADMEDefaults: the default a row gives, written in the
// configuration, changes nothing; or the option's zero stands for it, and
// the row says so ("`0` = the default").
func TestREADMEDefaults(t *testing.T) {
	require.Greater(t, configtest.CheckDefaults(t, readmeOptions(t)), 40, "the defaults read from the README's tables")
}

// TestREADMEBounds: an option is accepted at each end of the range its
// row gives, when within it, and refused just beyond, with a problem at
// the option's path.
func TestREADMEBounds(t *testing.T) {
	require.Greater(t, configtest.CheckBounds(t, readmeOptions(t)), 25, "the ranges read from the README's tables")
}

// baseSection is a section in which opt can be set alone: a probe p with
// a layout, an auto probe the connector matches for an auto-ranging
// option.
func baseSection(opt string) map[string]any {
	probe := map[string]any{"dmax": "1s", "bins": 10}
	if leaf := opt[strings.LastIndex(opt, sep)+len(sep):]; strings.HasPrefix(opt, "probes::") && slices.Contains(autoKeys, leaf) {
		probe = map[string]any{"dmax": "auto", "bins": 10, "match": map[string]any{}}
	}
	return map[string]any{"probes": map[string]any{"p": probe}}
}

// boundsSection is baseSection with what some options' ranges hold only
// with: probe p's divergence test on and pooled (for divergence::windows
// and divergence::target), and a snapshot directory (for
// snapshot::max_files and max_bytes).
func boundsSection(opt string) map[string]any {
	sec := baseSection(opt)
	configtest.Set(sec, "probes::NAME::triggers::divergence::alpha", sep, 0.01)
	configtest.Set(sec, "probes::NAME::triggers::divergence::pool", sep, 2)
	configtest.Set(sec, "snapshot::directory", sep, ".")
	return sec
}
