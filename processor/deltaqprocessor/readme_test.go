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

// TestREADMEOptions: every option of one value that the processor decodes
// has its row in the README's tables, or is named in a row of the option
// that holds it, and every option a row names is one the processor
// decodes.
func TestREADMEOptions(t *testing.T) {
	rows, keys := readmeRows(t)
	documented := make(map[string][]configtest.Row)
	for _, r := range rows {
		for _, opt := range r.Options {
			if _, ok := keys[opt]; !ok {
				t.Errorf("README.md names the option %s, which the processor does not have", opt)
			}
			documented[opt] = append(documented[opt], r)
		}
	}
	for _, msg := range configtest.Undocumented(keys, documented, sep) {
		t.Error("README.md: " + msg)
	}
}

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
// configuration, changes nothing; or the option's zero (or absence, for
// an option decoded into a pointer) stands for it, and the row of one
// whose zero does says so ("`0` = the default").
func TestREADMEDefaults(t *testing.T) {
	rows, keys := readmeRows(t)
	checked := 0
	for _, r := range rows {
		for i, def := range r.Defaults() {
			opt := r.Options[i]
			if !configtest.Scalar(keys[opt]) || strings.Contains(strings.TrimPrefix(opt, "probes[]"), "[]") {
				continue // the options of a list's entries: conditions[].op
			}
			checked++
			withDefault := baseSection(opt)
			configtest.Set(withDefault, sectionPath(opt), sep, configtest.YAMLValue(t, def))
			if reflect.DeepEqual(decode(t, baseSection(opt)), decode(t, withDefault)) {
				continue
			}
			zero, ok := zeroMeans[opt]
			switch {
			case !ok:
				t.Errorf("README.md gives %s the default %s, which is not the processor's", opt, def)
			case keys[opt].Kind() != reflect.Pointer && !r.ZeroStandsFor():
				t.Errorf("README.md: %s's zero stands for its default %s: the row does not say so (`0` = the default)", opt, def)
			case !configtest.Means(zero, def):
				t.Errorf("README.md gives %s the default %s; its zero stands for %v", opt, def, zero)
			}
		}
	}
	require.Greater(t, checked, 12, "the defaults read from the README's tables")
}

// TestREADMEBounds: an option is accepted at each end of the range its
// row gives, when within it, and refused just beyond, with a problem at
// the option's path.
func TestREADMEBounds(t *testing.T) {
	rows, keys := readmeRows(t)
	checked := 0
	for _, r := range rows {
		for _, b := range r.Bounds(sep) {
			typ := keys[b.Option]
			if !configtest.Scalar(typ) {
				continue
			}
			checked++
			for _, c := range b.Cases(t, typ, r) {
				sec := baseSection(b.Option)
				configtest.Set(sec, sectionPath(b.Option), sep, c.Value)
				cfg := createDefaultConfig().(*Config)
				err := confmap.NewFromStringMap(sec).Unmarshal(cfg)
				if err == nil {
					err = cfg.Validate()
				}
				if configtest.Refuses(err, sectionPath(b.Option), sep) == c.Within {
					t.Errorf("README.md: %s %s: %v is %s (%v)", b.Option, b, c.Value, map[bool]string{true: "refused", false: "accepted"}[c.Within], err)
				}
			}
		}
	}
	require.Greater(t, checked, 12, "the ranges read from the README's tables")
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

func decode(t *testing.T, sec map[string]any) *Config {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(sec).Unmarshal(cfg))
	return cfg
}
