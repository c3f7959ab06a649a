// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/component"

	"github.com/deltaq-otel/deltaq/internal/offline"
)

// collectorConfig is the command line of a collector configuration, read
// as the collector reads it (offline.Source.Load): the --config locations
// and the component IDs to read.
type collectorConfig struct{ offline.Source }

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
	fs.Var((*configPaths)(&c.Paths), "config", "collector configuration `FILE` (YAML) with the deltaq connector or exporter, and the deltaq processor if it has one; "+
		"repeat it to merge several in order, as the collector does; a location may also be env:NAME or yaml:KEY: VALUE")
	fs.StringVar(&c.Processor, "processor", "deltaq", "component `ID` of the deltaq processor in the processors section (if there is none, the connector's own probes)")
	fs.StringVar(&c.Exporter, "exporter", "deltaq", "component `ID` of the deltaq exporter in the exporters section")
	fs.StringVar(&c.Connector, "connector", "", "component `ID` of the deltaq connector in the connectors section, instead of the exporter")
}

// checkFlags checks the component flags once fs has parsed them.
func (c *collectorConfig) checkFlags(fs *flagSet) error {
	fs.Visit(func(f *flag.Flag) {
		c.ExporterSet = c.ExporterSet || f.Name == "exporter"
		c.ProcessorSet = c.ProcessorSet || f.Name == "processor"
	})
	if c.ExporterSet && c.Connector != "" {
		return errors.New("--exporter and --connector are exclusive")
	}
	for _, f := range []struct{ flag, id string }{{"processor", c.Processor}, {"exporter", c.Exporter}, {"connector", c.Connector}} {
		if err := deltaqID(f.id); f.id != "" && err != nil {
			return fmt.Errorf("--%s %s: %w", f.flag, printable(f.id), err)
		}
	}
	return nil
}

// deltaqID refuses a component ID that is not a deltaq component's, as
// "batch" or "deltaq/a b": its section would be read as a deltaq
// component's, and its own options refused as the deltaq component's.
func deltaqID(id string) error {
	var cid component.ID
	if err := cid.UnmarshalText([]byte(id)); err != nil {
		return fmt.Errorf("not a component ID (%w): want deltaq or deltaq/NAME", err)
	}
	if cid.Type().String() != "deltaq" {
		return fmt.Errorf("a component of type %s: want deltaq or deltaq/NAME", cid.Type())
	}
	return nil
}
