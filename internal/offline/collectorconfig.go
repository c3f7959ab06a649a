// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

// Reading a collector configuration as the collector reads it, for the
// commands that take one (analyze, slo): the same confmap resolver with the
// file, env and yaml providers the collector is built with
// (builder-config.yaml), so that ${env:NAME}, ${env:NAME:-default} (the
// default also for NAME set but empty, internal/envdefault), ${NAME} (env
// being the default scheme, as in otelcol) and ${file:…} expand, and several
// --config locations merge in order — maps key by key, a list replaced whole.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/envdefault"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// Source is a collector configuration to read: its locations and the IDs
// of the deltaq components in it (the command line's --config,
// --processor, --exporter and --connector).
type Source struct {
	// Paths are the locations, merged in order.
	Paths []string
	// Processor, Exporter and Connector are the component IDs; Connector
	// empty reads the exporter. ProcessorSet and ExporterSet say whether
	// Processor and Exporter were given rather than left at "deltaq".
	Processor, Exporter, Connector string
	ProcessorSet, ExporterSet      bool
}

// Loaded is what a command needs of a collector configuration.
type Loaded struct {
	// Proc is the deltaq processor read (Source.Processor); nil when the
	// configuration has none (a connector that matches its probes itself).
	Proc *Processor
	// Spans are the probes the connector matches in the spans itself; nil
	// when it matches none (and for an exporter). ConnID is the connector's
	// ID.
	Spans  *core.SpanProbes
	ConnID string
	// Analysis is the exporter's or connector's analysis options.
	Analysis *core.Config
	// Where names the configuration and the section of Analysis, for
	// messages: "a.yaml+b.yaml: connectors::deltaq".
	Where string
	// Idle are the deltaq processors of the traces pipelines that send to
	// the connector or exporter other than Proc: among Others, given no
	// spans, where the collector maps the spans with them too.
	Idle []string
	// Others are the other deltaq processors of the pipelines, validated:
	// the collector makes them too, and the connector or exporter takes
	// the layouts of their probes (and checks the names it reads against
	// them) as it takes those of Proc.
	Others []Processor
}

// Processor is a deltaq processor of the configuration: its ID, as the
// configuration writes it, its configuration, validated, and where it is,
// for messages: "a.yaml: processors::deltaq/a".
type Processor struct {
	ID     string
	Config *deltaqprocessor.Config
	Where  string
}

// processors returns the deltaq processors of l: Proc, if any, then Others.
func (l *Loaded) processors() []*Processor {
	var out []*Processor
	if l.Proc != nil {
		out = append(out, l.Proc)
	}
	for i := range l.Others {
		out = append(out, &l.Others[i])
	}
	return out
}

// theOthers names the deltaq exporters and connectors the configuration
// has, for the message that found not the one asked for.
func theOthers(conf *confmap.Conf) string {
	var ids []string
	components, _ := deltaqComponents(conf)
	for _, kind := range []string{"exporters", "connectors"} {
		for _, id := range components[kind] {
			ids = append(ids, confpath.Section(kind, id))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "; it has " + strings.Join(ids, ", ")
}

// Resolve reads the locations as the collector does and returns the merged
// configuration. Errors name the locations. Plain files, with nothing to
// expand, are read in one pass (resolvePlain); the others by the
// collector's resolver.
func Resolve(paths []string) (*confmap.Conf, error) {
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
			fileprovider.NewFactory(), envdefault.NewFactory(), yamlprovider.NewFactory(),
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

// Load reads the processor section, if there is one, and the exporter's or
// connector's section into the components' own configuration structs, and
// checks each as the collector does (an exporter's OTLP settings aside).
// Without Connector it reads the exporter Exporter or, when that section
// is missing and Exporter was not given, the connector "deltaq". A
// configuration without the processor Processor is read when Processor
// was not given: the processor read is then the one of the pipelines that
// send to the connector or exporter (processorToRead), or none, its
// connector matching its probes itself.
func (c *Source) Load() (*Loaded, error) {
	conf, err := Resolve(c.Paths)
	if err != nil {
		return nil, err
	}
	name := strings.Join(c.Paths, "+")
	unmarshal := func(key string, dst any) error {
		sub, err := conf.Sub(key)
		if u, ok := dst.(confmap.Unmarshaler); ok && err == nil {
			// Given the section itself, as Check decodes it
			// (decodeSection): conf.Unmarshal would wrap its errors in the
			// decoder's framing ("decoding failed due to …: ''").
			err = u.Unmarshal(sub)
		} else if err == nil {
			err = sub.Unmarshal(dst)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", name, key, err)
		}
		return nil
	}
	connID, err := c.connectorToRead(conf, name)
	if err != nil {
		return nil, err
	}
	frontEnd := connID
	if connID == "" {
		frontEnd = c.Exporter
	}
	feeds := tracesFeeds(conf, frontEnd)
	read, err := c.processorToRead(conf, name, feeds)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Idle: slices.DeleteFunc(feeds, func(id string) bool { return id == read })}
	if read != "" {
		if l.Proc, err = decodeProcessor(name, read, unmarshal); err != nil {
			return nil, err
		}
	}
	if l.Others, err = otherProcessors(conf, name, read, unmarshal); err != nil {
		return nil, err
	}
	if connID != "" {
		key := confpath.Section("connectors", connID)
		if !conf.IsSet(key) {
			return nil, fmt.Errorf("%s: no connectors section %q%s", name, connID, theOthers(conf))
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
		l.Analysis, l.Where = &ccfg.Config, name+": "+key
		l.Spans, l.ConnID = deltaqconnector.SpanProbes(ccfg), connID
		return l, checkProduced(l)
	}
	key := confpath.Section("exporters", c.Exporter)
	ecfg := deltaqexporter.NewFactory().CreateDefaultConfig().(*deltaqexporter.Config)
	if err := unmarshal(key, ecfg); err != nil {
		return nil, err
	}
	// Its analysis options, as the collector checks them; the OTLP
	// settings, which the commands do not use, are not required.
	if err := ecfg.Check(); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, key, err)
	}
	l.Analysis, l.Where = &ecfg.Config, name+": "+key
	return l, checkProduced(l)
}

// connectorToRead returns the ID of the connector to read, "" for the
// exporter: Connector, or "deltaq" when there is no exporter Exporter and
// Exporter was not given.
func (c *Source) connectorToRead(conf *confmap.Conf, name string) (string, error) {
	if c.Connector != "" || conf.IsSet(confpath.Section("exporters", c.Exporter)) {
		return c.Connector, nil
	}
	// The connector stands in for the exporter only when no exporter was
	// asked for.
	hasConnector := conf.IsSet(confpath.Section("connectors", "deltaq"))
	switch {
	case !hasConnector:
		return "", fmt.Errorf("%s: no exporters section %q (nor connectors section \"deltaq\"; see --connector)%s", name, c.Exporter, theOthers(conf))
	case c.ExporterSet || c.Exporter != "deltaq":
		return "", fmt.Errorf("%s: no exporters section %q (its connectors section \"deltaq\" is read with --connector deltaq)", name, c.Exporter)
	}
	return "deltaq", nil
}

// processorToRead returns the ID of the deltaq processor that maps the
// spans, "" for none: Processor when it was given (an error when the
// configuration does not have it); else, of the deltaq processors of the
// traces pipelines that send to the front end, feeds, as the collector
// maps the spans with them, Processor ("deltaq") when it is one of them,
// or the one there is; Processor when the pipelines say of none, and the
// configuration has it. Of several others, none is chosen: Loaded.Idle
// names them.
func (c *Source) processorToRead(conf *confmap.Conf, name string, feeds []string) (string, error) {
	has := conf.IsSet(confpath.Section("processors", c.Processor))
	switch {
	case c.ProcessorSet && !has:
		return "", fmt.Errorf("%s: no processors section %q", name, c.Processor)
	case c.ProcessorSet, has && (len(feeds) == 0 || slices.Contains(feeds, c.Processor)):
		return c.Processor, nil
	case len(feeds) == 1:
		return feeds[0], nil
	}
	return "", nil
}

// tracesFeeds returns the deltaq processors, with a section, of the traces
// pipelines that send to the component id, sorted.
func tracesFeeds(conf *confmap.Conf, id string) []string {
	var feeds []string
	pipes, _ := conf.Get("service::pipelines").(map[string]any)
	for pipe, p := range pipes {
		pm, _ := p.(map[string]any)
		if signal, _, _ := strings.Cut(pipe, "/"); signal != "traces" || !slices.Contains(stringList(pm["exporters"]), id) {
			continue
		}
		for _, proc := range stringList(pm["processors"]) {
			isDeltaQ := proc == "deltaq" || strings.HasPrefix(proc, "deltaq/")
			if isDeltaQ && conf.IsSet(confpath.Section("processors", proc)) && !slices.Contains(feeds, proc) {
				feeds = append(feeds, proc)
			}
		}
	}
	slices.Sort(feeds)
	return feeds
}

// otherProcessors decodes and validates the deltaq processors of the
// pipelines (all of them in a configuration without pipelines, a part of
// one) but the processor read (decodeProcessor): the collector makes no
// other, and refuses one that does not decode.
func otherProcessors(conf *confmap.Conf, name, read string, unmarshal func(key string, dst any) error) ([]Processor, error) {
	var others []Processor
	components, _ := deltaqComponents(conf)
	for _, id := range components["processors"] {
		if id == read || !inPipeline(conf, "processors", id) {
			continue
		}
		p, err := decodeProcessor(name, id, unmarshal)
		if err != nil {
			return nil, err
		}
		others = append(others, *p)
	}
	return others, nil
}

// decodeProcessor decodes the section of the deltaq processor id with
// unmarshal and validates it, as the collector does; name names the
// configuration in messages.
func decodeProcessor(name, id string, unmarshal func(key string, dst any) error) (*Processor, error) {
	key := confpath.Section("processors", id)
	cfg := deltaqprocessor.NewFactory().CreateDefaultConfig().(*deltaqprocessor.Config)
	if err := unmarshal(key, cfg); err != nil {
		return nil, err
	}
	where := name + ": " + key
	if err := confmap.Validate(cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &Processor{ID: id, Config: cfg, Where: where}, nil
}

// checkProduced refuses, as the collector's deltaq processors do once
// their probes are registered, a probe that the analysis options name and
// that looks misspelled given the probes of the deltaq processors (Proc
// and Others) and those the connector matches (core.Config.CheckProduced).
func checkProduced(l *Loaded) error {
	var produced []string
	for _, p := range l.processors() {
		for i := range p.Config.Probes {
			produced = append(produced, p.Config.Probes[i].Name)
		}
	}
	if l.Spans != nil {
		produced = append(produced, l.Spans.Names...)
	}
	if err := l.Analysis.CheckProduced(produced); err != nil {
		return fmt.Errorf("%s: %w", l.Where, err)
	}
	return nil
}
