// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package configtest loads the sections of a component's testdata/config.yaml
// the way the collector does, for the components' configuration tests.
package configtest

import (
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

// Section returns the section typ[/name] of testdata/config.yaml (typ alone
// when name is empty), failing the test when the file or the section cannot
// be read.
func Section(t testing.TB, typ component.Type, name string) *confmap.Conf {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	id := component.NewID(typ)
	if name != "" {
		id = component.NewIDWithName(typ, name)
	}
	sub, err := cm.Sub(id.String())
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// Load decodes the section typ[/name] into cfg, which holds the component's
// defaults, and fails the test when decoding does.
func Load(t testing.TB, typ component.Type, name string, cfg component.Config) {
	t.Helper()
	if err := Section(t, typ, name).Unmarshal(cfg); err != nil {
		t.Fatal(err)
	}
}

// LoadDefault returns the section typ[/name] decoded into a fresh default
// configuration of the component, as create (its factory's
// CreateDefaultConfig) returns it; C is the configuration's pointer type.
func LoadDefault[C component.Config](t testing.TB, typ component.Type, create func() component.Config, name string) C {
	t.Helper()
	cfg, ok := create().(C)
	if !ok {
		t.Fatalf("the default configuration is %T, not %T", create(), cfg)
	}
	Load(t, typ, name, cfg)
	return cfg
}
