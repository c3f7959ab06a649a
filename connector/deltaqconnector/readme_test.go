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

// readmeOptions are the rows of the README's tables of options, and the
// types of the options the connector decodes: its Config, and the entries
// of probes that the connector matches (MatchedProbe), which Unmarshal
// takes out of probes.
func readmeOptions(t *testing.T) ([]configtest.Row, map[string]reflect.Type) {
	t.Helper()
	keys := configtest.Keys(reflect.TypeFor[Config](), sep)
	for k, typ := range configtest.Keys(reflect.TypeFor[MatchedProbe](), sep) {
		keys["probes::NAME::"+k] = typ
	}
	return configtest.OptionRows(t, "README.md", sep), keys
}

// TestREADMEOptions: every option of one value that the connector decodes
// has its row in the README's tables, or is named in a row of the option
// that holds it (`match` names span_name, …), and every option a row
// names is one the connector decodes.
func TestREADMEOptions(t *testing.T) {
	rows, keys := readmeOptions(t)
	documented := make(map[string][]configtest.Row)
	for _, r := range rows {
		for _, opt := range r.Options {
			if _, ok := keys[opt]; !ok {
				t.Errorf("README.md names the option %s, which the connector does not have", opt)
			}
			documented[opt] = append(documented[opt], r)
		}
	}
	for _, msg := range configtest.Undocumented(keys, documented, sep) {
		t.Error("README.md: " + msg)
	}
}

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
	rows, keys := readmeOptions(t)
	checked := 0
	for _, r := range rows {
		for i, def := range r.Defaults() {
			opt := r.Options[i]
			if !configtest.Scalar(keys[opt]) {
				continue
			}
			checked++
			withDefault := baseSection(opt)
			configtest.Set(withDefault, opt, sep, configtest.YAMLValue(t, def))
			if reflect.DeepEqual(decode(t, baseSection(opt)), decode(t, withDefault)) {
				continue
			}
			zero, ok := zeroMeans[opt]
			switch {
			case !ok:
				t.Errorf("README.md gives %s the default %s, which is not the connector's", opt, def)
			case !r.ZeroStandsFor():
				t.Errorf("README.md: %s's zero stands for its default %s: the row does not say so (`0` = the default)", opt, def)
			case !configtest.Means(zero, def):
				t.Errorf("README.md gives %s the default %s; its zero stands for %v", opt, def, zero)
			}
		}
	}
	require.Greater(t, checked, 40, "the defaults read from the README's tables")
}

// TestREADMEBounds: an option is accepted at each end of the range its
// row gives, when within it, and refused just beyond, with a problem at
// the option's path.
func TestREADMEBounds(t *testing.T) {
	rows, keys := readmeOptions(t)
	checked := 0
	for _, r := range rows {
		for _, b := range r.Bounds(sep) {
			typ := keys[b.Option]
			if !configtest.Scalar(typ) {
				continue
			}
			checked++
			for _, c := range b.Cases(t, typ, r) {
				sec := boundsSection(b.Option)
				configtest.Set(sec, b.Option, sep, c.Value)
				cfg := createDefaultConfig().(*Config)
				err := confmap.NewFromStringMap(sec).Unmarshal(cfg)
				if err == nil {
					err = cfg.Validate()
				}
				if configtest.Refuses(err, b.Option, sep) == c.Within {
					t.Errorf("README.md: %s %s: %v is %s (%v)", b.Option, b, c.Value, map[bool]string{true: "refused", false: "accepted"}[c.Within], err)
				}
			}
		}
	}
	require.Greater(t, checked, 25, "the ranges read from the README's tables")
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

func decode(t *testing.T, sec map[string]any) *Config {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(sec).Unmarshal(cfg))
	return cfg
}
