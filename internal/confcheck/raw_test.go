// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
)

// resolveFile reads a file with the collector's resolver, ${env:…}
// references expanded, and returns its section key.
func resolveFile(t *testing.T, content, key string) *confmap.Conf {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{path},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
	})
	require.NoError(t, err)
	conf, err := r.Resolve(context.Background())
	require.NoError(t, err)
	sub, err := conf.Sub(key)
	require.NoError(t, err)
	return sub
}

// TestCheckExpandedValues: a value expanded from a ${env:…} reference is
// checked as written in the environment (a duration without a unit is
// refused), and Raw keeps it as the collector holds it, so that a map
// built from Raw's decodes as the section does: the variable's text into a
// string field, though it reads as a number.
func TestCheckExpandedValues(t *testing.T) {
	t.Setenv("DQ_TEST_DMAX", "500")
	t.Setenv("DQ_TEST_NAME", "123")
	conf := resolveFile(t, "s:\n  probes:\n    - name: ${env:DQ_TEST_NAME}\n      dmax: ${env:DQ_TEST_DMAX}\n", "s")
	err := Check(conf, &testConfig{}, nil)
	require.Error(t, err)
	assert.Equal(t, "probes[0].dmax: 500 has no unit; write a duration such as 500ms or 2s", err.Error())

	raw := Raw(conf)
	assert.Equal(t, conf.ToStringMap(), valuesOf(raw), "Value gives what ToStringMap gives")
	var cfg struct {
		Probes []struct {
			Name string `mapstructure:"name"`
			DMax int    `mapstructure:"dmax"`
		} `mapstructure:"probes"`
	}
	require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(&cfg))
	assert.Equal(t, "123", cfg.Probes[0].Name)
	assert.Equal(t, 500, cfg.Probes[0].DMax)
}

// valuesOf is v with every expanded value replaced by its parsed value.
func valuesOf(v any) any {
	switch v := Value(v).(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = valuesOf(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = valuesOf(e)
		}
		return l
	default:
		return v
	}
}
