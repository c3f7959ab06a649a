// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/configtest"
)

// sep is the separator of an option's keys in the README's tables.
const sep = "."

// readmeRows are the rows of the README's tables of options, each option
// a path from the processor's section (a probe's under probes[], as Keys
// names them), and the types of the options the processor decodes. The
// tables are the processor's options, a probe's, and a failure rule's
// (the processor's and a probe's).
func readmeRows(t *testing.T) ([]configtest.Row, map[string]reflect.Type) {
	t.Helper()
	prefixes := [][]string{{""}, {"probes[]."}, {"failure.", "probes[].failure."}}
	var rows []configtest.Row
	for _, r := range configtest.OptionRows(t, "README.md", sep) {
		require.Less(t, r.Table, len(prefixes), "README.md: a table of options this test does not know")
		for _, p := range prefixes[r.Table] {
			pr := r
			pr.Options = nil
			for _, opt := range r.Options {
				pr.Options = append(pr.Options, p+opt)
			}
			rows = append(rows, pr)
		}
	}
	return rows, configtest.Keys(reflect.TypeFor[Config](), sep)
}

// readmeOptions are the README's tables of options and what the processor
// decodes, for the checks of configtest.
func readmeOptions(t *testing.T) configtest.Options {
	rows, keys := readmeRows(t)
	return configtest.Options{Component: "the processor", Sep: sep, Rows: rows, Keys: keys, ZeroMeans: zeroMeans,
		Path: sectionPath, Base: baseSection,
		Decode: func(sec map[string]any) (interface{ Validate() error }, error) {
			cfg := createDefaultConfig().(*Config)
			return cfg, confmap.NewFromStringMap(sec).Unmarshal(cfg)
		}}
}

// TestREADMEOptions: every option of one value that the processor decodes
// has its row in the README's tables, or is named in a row of the option
// that holds it, and every option a row names is one it decodes.
func TestREADMEOptions(t *testing.T) { configtest.CheckOptions(t, readmeOptions(t)) }

// zeroMeans are the defaults that an option's zero (or absence) stands
// for.
var zeroMeans = map[string]any{
	"probes[].dmax_min":              autorange.DefaultMin,
	"probes[].dmax_max":              autorange.DefaultMax,
	"probes[].dmax_sample":           autorange.DefaultSample,
	"probes[].dmax_period":           autorange.DefaultPeriod,
	"probes[].dmax_changes_per_hour": autorange.DefaultChangesPerHour,
	// spanmatch.FailureConfig.StatusError: absent is true.
	"failure.status_error":          true,
	"probes[].failure.status_error": true,
}

// TestREADMEDefaults: the default a row gives, written in the
// configuration, changes nothing; or the option's zero stands for it, and
// the row says so ("`0` = the default").
func TestREADMEDefaults(t *testing.T) {
	require.Greater(t, configtest.CheckDefaults(t, readmeOptions(t)), 12, "the defaults read from the README's tables")
}

// TestREADMEBounds: an option is accepted at each end of the range its
// row gives, when within it, and refused just beyond, with a problem at
// the option's path.
func TestREADMEBounds(t *testing.T) {
	require.Greater(t, configtest.CheckBounds(t, readmeOptions(t)), 12, "the ranges read from the README's tables")
}

// sectionPath is opt's path in a section of one probe, named p: NAME for
// the probe.
func sectionPath(opt string) string { return strings.Replace(opt, "probes[]", "probes.NAME", 1) }

// baseSection is a section in which opt can be set alone: a probe p of
// dmax 1s and 10 bins, or of dmax: auto for an auto-ranging option.
func baseSection(opt string) map[string]any {
	probe := map[string]any{"dmax": "1s", "bins": 10}
	if strings.HasPrefix(opt, "probes[].dmax_") {
		probe["dmax"] = "auto"
	}
	return map[string]any{"probes": map[string]any{"p": probe}}
}
