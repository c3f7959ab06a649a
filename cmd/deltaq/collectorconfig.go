// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// Reading a collector configuration as the collector reads it, for the
// commands that take one (analyze, slo): the same confmap resolver with the
// file, env and yaml providers the collector is built with
// (builder-config.yaml), so that ${env:NAME}, ${env:NAME:-default},
// ${NAME} (env being the default scheme, as in otelcol) and ${file:…}
// expand, and several --config locations merge in order — maps key by key,
// a list replaced whole.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/observer"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// collectorConfig is the command line of a collector configuration: the
// --config locations and the component IDs to read.
type collectorConfig struct {
	paths                 configPaths
	procID, expID, connID string
	exporterSet, procSet  bool
}

// configPaths is a repeatable --config flag.
type configPaths []string

func (p *configPaths) String() string { return strings.Join(*p, ",") }

func (p *configPaths) Set(v string) error {
	if v == "" {
		return errors.New("empty location")
	}
	*p = append(*p, v)
	return nil
}

// flags adds --config, --processor, --exporter and --connector to fs.
func (c *collectorConfig) flags(fs *flagSet) {
	fs.Var(&c.paths, "config", "collector configuration `FILE` (YAML) with the deltaq connector or exporter, and the deltaq processor if it has one; "+
		"repeat it to merge several in order, as the collector does; a location may also be env:NAME or yaml:KEY: VALUE")
	fs.StringVar(&c.procID, "processor", "deltaq", "component `ID` of the deltaq processor in the processors section (if there is none, the connector's own probes)")
	fs.StringVar(&c.expID, "exporter", "deltaq", "component `ID` of the deltaq exporter in the exporters section")
	fs.StringVar(&c.connID, "connector", "", "component `ID` of the deltaq connector in the connectors section, instead of the exporter")
}

// checkFlags checks the component flags once fs has parsed them.
func (c *collectorConfig) checkFlags(fs *flagSet) error {
	fs.Visit(func(f *flag.Flag) {
		c.exporterSet = c.exporterSet || f.Name == "exporter"
		c.procSet = c.procSet || f.Name == "processor"
	})
	if c.exporterSet && c.connID != "" {
		return errors.New("--exporter and --connector are exclusive")
	}
	return nil
}

// loadedConfig is what a command needs of a collector configuration.
type loadedConfig struct {
	// proc is the deltaq processor's configuration
	// (*deltaqprocessor.Config), validated; nil when the configuration has
	// none (a connector that matches its probes itself).
	proc any
	// spans are the probes the connector matches in the spans itself; nil
	// when it matches none (and for an exporter). connID is the connector's
	// ID.
	spans  *observer.SpanProbes
	connID string
	// analysis is the exporter's or connector's analysis options.
	analysis *observer.Config
	// where names the configuration and the section of analysis, for
	// messages: "a.yaml+b.yaml: connectors::deltaq".
	where string
}

// resolve reads the locations as the collector does and returns the merged
// configuration. Errors name the locations. Plain files, with nothing to
// expand, are read in one pass (resolvePlain); the others by the
// collector's resolver.
func resolve(paths []string) (*confmap.Conf, error) {
	if conf, ok, err := resolvePlain(paths); ok {
		return conf, err
	}
	return resolveExpanding(paths)
}

// resolveExpanding reads the locations with the collector's resolver.
func resolveExpanding(paths []string) (*confmap.Conf, error) {
	r, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs: paths,
		ProviderFactories: []confmap.ProviderFactory{
			fileprovider.NewFactory(), envprovider.NewFactory(), yamlprovider.NewFactory(),
		},
		// otelcol's default: ${NAME} is ${env:NAME}.
		DefaultScheme: "env",
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(paths, "+"), err)
	}
	ctx := context.Background()
	conf, err := r.Resolve(ctx)
	_ = r.Shutdown(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(paths, "+"), err)
	}
	return conf, nil
}

// load reads the processor section, if there is one, and the exporter's or
// connector's section into the components' own configuration structs.
// Without --connector it reads the exporter --exporter, else (--exporter not
// given) the connector "deltaq". A configuration without the processor
// --processor is read when --processor was not given: its connector matches
// its probes itself.
func (c *collectorConfig) load() (*loadedConfig, error) {
	conf, err := resolve(c.paths)
	if err != nil {
		return nil, err
	}
	name := strings.Join(c.paths, "+")
	unmarshal := func(key string, dst any) error {
		sub, err := conf.Sub(key)
		if err == nil {
			err = sub.Unmarshal(dst)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, key, err)
		}
		return nil
	}
	l := &loadedConfig{}
	if conf.IsSet("processors::" + c.procID) {
		l.proc = deltaqprocessor.NewFactory().CreateDefaultConfig()
		if err := unmarshal("processors::"+c.procID, l.proc); err != nil {
			return nil, err
		}
		if err := confmap.Validate(l.proc); err != nil {
			return nil, fmt.Errorf("%s: processors::%s: %w", name, c.procID, err)
		}
	} else if c.procSet {
		return nil, fmt.Errorf("%s: no processors section %q", name, c.procID)
	}
	connID := c.connID
	if connID == "" && !conf.IsSet("exporters::"+c.expID) {
		if c.expID != "deltaq" || !conf.IsSet("connectors::deltaq") {
			return nil, fmt.Errorf("%s: no exporters section %q (nor connectors section \"deltaq\"; see --connector)", name, c.expID)
		}
		connID = "deltaq"
	}
	if connID != "" {
		key := "connectors::" + connID
		if !conf.IsSet(key) {
			return nil, fmt.Errorf("%s: no connectors section %q", name, connID)
		}
		ccfg := deltaqconnector.NewFactory().CreateDefaultConfig().(*deltaqconnector.Config)
		if err := unmarshal(key, ccfg); err != nil {
			return nil, err
		}
		// The probes it matches are compiled as the collector does, once
		// Validate has refused what would not compile.
		if err := ccfg.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, key, err)
		}
		l.analysis, l.where = &ccfg.Config, name+": "+key
		l.spans, l.connID = deltaqconnector.SpanProbes(ccfg), connID
		return l, nil
	}
	key := "exporters::" + c.expID
	ecfg := deltaqexporter.NewFactory().CreateDefaultConfig().(*deltaqexporter.Config)
	if err := unmarshal(key, ecfg); err != nil {
		return nil, err
	}
	l.analysis, l.where = &ecfg.Config, name+": "+key
	return l, nil
}
