// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package envdefault

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.yaml.in/yaml/v3"
)

// resolve expands value, a YAML value, as the collector's resolver does with
// this provider as its env provider (the default scheme, as in otelcol).
func resolve(t *testing.T, value string) (any, error) {
	t.Helper()
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"yaml:v: " + value},
		ProviderFactories: []confmap.ProviderFactory{NewFactory(), yamlprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	if err != nil {
		t.Fatal(err)
	}
	conf, err := r.Resolve(context.Background())
	if err != nil {
		return nil, err
	}
	return conf.Get("v"), nil
}

// A default applies to a variable that is unset and, unlike the collector's
// own provider, to one set but empty; every other reading is the
// collector's provider's, types included.
func TestEmptyTakesTheDefault(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    *string // nil: unset
		value  string
		want   any
		errHas string
	}{
		{"unset, default", nil, "${env:DELTAQ_T:-400}", 400, ""},
		{"empty, default", ptr(""), "${env:DELTAQ_T:-400}", 400, ""},
		{"empty, duration default", ptr(""), "${env:DELTAQ_T:-10s}", "10s", ""},
		{"empty, empty default", ptr(""), "${env:DELTAQ_T:-}", "", ""},
		{"empty, in a string", ptr(""), "0.0.0.0:${env:DELTAQ_T:-4317}", "0.0.0.0:4317", ""},
		{"set", ptr("64"), "${env:DELTAQ_T:-400}", 64, ""},
		{"set, a space", ptr(" "), "${env:DELTAQ_T:-400}", nil, ""},
		{"empty, no default", ptr(""), "${env:DELTAQ_T}", nil, ""},
		{"unset, no default", nil, "${env:DELTAQ_T}", nil, ""},
		{"invalid name", ptr(""), "${env:DELTAQ-T:-1}", nil, "invalid name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != nil {
				t.Setenv("DELTAQ_T", *c.env)
				t.Setenv("DELTAQ-T", *c.env)
			} else {
				t.Setenv("DELTAQ_T", "") // restored after the test
				if err := os.Unsetenv("DELTAQ_T"); err != nil {
					t.Fatal(err)
				}
			}
			got, err := resolve(t, c.value)
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("%s: %v, want an error with %q", c.value, err, c.errHas)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("%s (%s): %#v %v, want %#v", c.value, c.name, got, err, c.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// otelcol-deltaq is built with this provider as its env provider, in place
// of the collector's: the builder's configuration names it, and not the
// collector's envprovider, so that the collector and the command line read
// a configuration alike.
func TestBuiltWithThisProvider(t *testing.T) {
	raw, err := os.ReadFile("../../builder-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Providers []struct {
			GoMod  string `yaml:"gomod"`
			Import string `yaml:"import"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	ours := false
	for _, p := range cfg.Providers {
		if p.Import == "github.com/deltaq-otel/deltaq/internal/envdefault" {
			ours = true
		}
		if strings.Contains(p.GoMod, "/envprovider ") || strings.HasSuffix(p.Import, "/envprovider") {
			t.Errorf("builder-config.yaml: provider %q: the collector's env provider, which this package replaces", p.GoMod)
		}
	}
	if !ours {
		t.Error("builder-config.yaml: no provider imports github.com/deltaq-otel/deltaq/internal/envdefault")
	}
}
