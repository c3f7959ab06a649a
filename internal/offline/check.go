// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
	"github.com/deltaq-otel/deltaq/internal/suggest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// deltaqComponents returns the IDs of each section ("processors") whose
// type is deltaq: "deltaq" and "deltaq/NAME", sorted; and the problems of
// the IDs of the processors, connectors and exporters (badID). It reads
// the keys alone: conf.Get would copy each section whole.
func deltaqComponents(conf *confmap.Conf) (map[string][]string, []error) {
	ids := make(map[string][]string)
	seen := make(map[string]bool)
	var errs []error
	for _, key := range conf.AllKeys() {
		parts := strings.SplitN(key, confmap.KeyDelimiter, 3)
		if len(parts) < 2 || seen[parts[0]+confmap.KeyDelimiter+parts[1]] {
			continue
		}
		seen[parts[0]+confmap.KeyDelimiter+parts[1]] = true
		kind, id := parts[0], parts[1]
		if kind != "processors" && kind != "connectors" && kind != "exporters" {
			continue
		}
		if err := badID(kind, id); err != nil {
			errs = append(errs, err)
		} else if id == "deltaq" || strings.HasPrefix(id, "deltaq/") {
			ids[kind] = append(ids[kind], id)
		}
	}
	for _, l := range ids {
		sort.Strings(l)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return ids, errs
}

// badID refuses, as the collector does, a deltaq component whose ID is
// none (deltaq/, deltaq/a b: the words of component.ID), and a component
// whose type is one slip away from deltaq (Deltaq, deltq), which the
// collector refuses as of an unknown type and which would otherwise leave
// its section unchecked without a word.
func badID(kind, id string) error {
	typ, _, _ := strings.Cut(id, "/")
	if typ == "deltaq" {
		var cid component.ID
		if err := cid.UnmarshalText([]byte(id)); err != nil {
			return fmt.Errorf("%s: %w", confpath.Section(kind, id), err)
		}
		return nil
	}
	if suggest.Distance(strings.ToLower(strings.TrimSpace(typ)), "deltaq") <= 1 {
		return fmt.Errorf("%s: unknown component type %q; did you mean deltaq?", confpath.Section(kind, id), typ)
	}
	return nil
}

// pipelineFeeds returns the deltaq processors of every pipeline that has the
// component id among its exporters, and whether one of those pipelines
// carries metrics (a gateway's input of agents' windows).
func pipelineFeeds(conf *confmap.Conf, id string) (processors []string, metrics bool) {
	pipes, _ := conf.Get("service::pipelines").(map[string]any)
	for name, p := range pipes {
		pm, _ := p.(map[string]any)
		if !slices.Contains(stringList(pm["exporters"]), id) {
			continue
		}
		if strings.HasPrefix(name, "metrics") {
			metrics = true
		}
		for _, proc := range stringList(pm["processors"]) {
			isDeltaQ := proc == "deltaq" || strings.HasPrefix(proc, "deltaq/")
			if isDeltaQ && !slices.Contains(processors, proc) {
				processors = append(processors, proc)
			}
		}
	}
	sort.Strings(processors)
	return processors, metrics
}

// inTracesPipeline reports whether a traces pipeline lists id in its
// list (processors, exporters), or the configuration has no pipelines at
// all (a part of one, which says nothing of them).
func inTracesPipeline(conf *confmap.Conf, list, id string) bool {
	return listedIn(conf, "traces", list, id)
}

// inPipeline is inTracesPipeline for a pipeline of any signal.
func inPipeline(conf *confmap.Conf, list, id string) bool {
	return listedIn(conf, "", list, id)
}

// listedIn reports whether a pipeline of signal ("" for any) lists id in
// its list, or the configuration has no pipelines at all.
func listedIn(conf *confmap.Conf, signal, list, id string) bool {
	pipes, _ := conf.Get("service::pipelines").(map[string]any)
	if len(pipes) == 0 {
		return true
	}
	for name, p := range pipes {
		if signal != "" && name != signal && !strings.HasPrefix(name, signal+"/") {
			continue
		}
		pm, _ := p.(map[string]any)
		if slices.Contains(stringList(pm[list]), id) {
			return true
		}
	}
	return false
}

// ambiguousID refuses, as the collector does, a connector whose ID a
// receiver or an exporter has too: a pipeline's list could not tell them
// apart.
func ambiguousID(conf *confmap.Conf, id string) error {
	for _, kind := range []string{"receivers", "exporters"} {
		if conf.IsSet(confpath.Section(kind, id)) {
			return fmt.Errorf("ambiguous ID: %s has it too, and the collector refuses it; rename one of them (the connector deltaq/connector, say)", confpath.Section(kind, id))
		}
	}
	return nil
}

// connectorPipelines refuses, as the collector's start does, a connector
// that a pipeline sends to while no metrics or logs pipeline receives from
// it (a traces pipeline cannot: it emits metrics and logs), and one that a
// pipeline receives from while none sends it anything. A connector in no
// pipeline, and a configuration without pipelines (a part of one), pass.
func connectorPipelines(conf *confmap.Conf, id string) error {
	pipes, _ := conf.Get("service::pipelines").(map[string]any)
	var sent, received, output bool
	for name, p := range pipes {
		pm, _ := p.(map[string]any)
		signal, _, _ := strings.Cut(name, "/")
		sent = sent || slices.Contains(stringList(pm["exporters"]), id)
		if slices.Contains(stringList(pm["receivers"]), id) {
			received = true
			output = output || signal == "metrics" || signal == "logs"
		}
	}
	switch {
	case sent && !output:
		return errors.New("no metrics or logs pipeline receives from it: its ΔQ metrics and records would go nowhere, and the collector refuses it; add it to a metrics pipeline's receivers")
	case received && !sent:
		return errors.New("no pipeline sends it anything, and the collector refuses it: add it to the exporters of the pipelines whose spans, start events or agents' windows it reads")
	}
	return nil
}

// connectorWiring refuses, as the collector does, a connector whose ID
// another component has (ambiguousID), that is cut off from the pipelines
// (connectorPipelines), or that matches in the spans a probe a processor
// claimed; and a connector that matches probes in the spans of several
// traces pipelines of one receiver, which would count each span twice.
func connectorWiring(conf *confmap.Conf, id string, matched []string, claims *spanmatch.Claims) error {
	err := errors.Join(ambiguousID(conf, id), connectorPipelines(conf, id), claims.Claim("connectors"+id, "connector", id, matched))
	if receiver, pipes := sharedTracesReceiver(conf, id); len(matched) > 0 && receiver != "" {
		err = errors.Join(err, fmt.Errorf("%s feeds traces pipelines that each send to it (%s): each span of its probes (%s) would count twice; keep it in one of them",
			confpath.Section("receivers", receiver), strings.Join(pipes, ", "), strings.Join(matched, ", ")))
	}
	return err
}

// sharedTracesReceiver returns the first receiver, by name, that feeds
// several traces pipelines with id among their exporters, and those
// pipelines, sorted; "" when there is none.
func sharedTracesReceiver(conf *confmap.Conf, id string) (string, []string) {
	pipes, _ := conf.Get("service::pipelines").(map[string]any)
	fed := make(map[string][]string) // receiver → pipelines
	for name, p := range pipes {
		pm, _ := p.(map[string]any)
		if signal, _, _ := strings.Cut(name, "/"); signal != "traces" || !slices.Contains(stringList(pm["exporters"]), id) {
			continue
		}
		for _, r := range stringList(pm["receivers"]) {
			if !slices.Contains(fed[r], name) {
				fed[r] = append(fed[r], name)
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(fed)) {
		if len(fed[r]) > 1 {
			slices.Sort(fed[r])
			return r, fed[r]
		}
	}
	return "", nil
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Check checks the deltaq components of a collector configuration (deltaq
// check --config) as the collector would (decoding and Validate), then
// what no single component can check: that every probe a connector's or an
// exporter's diagram, QTAs and triggers name is counted by a deltaq
// processor of the pipelines that feed it, or by its own probes (a
// gateway's must be declared in its probes), that the layouts agree, and
// that every QTA point is a bucket bound of deltaq.observed (qtaOffEdges),
// and that each connector is wired as the collector requires and counts
// each span once (connectorWiring).
// It writes one line per component and returns the errors, each prefixed
// by the component.
func Check(w io.Writer, conf *confmap.Conf) error {
	var claims spanmatch.Claims // the probes each matches in the spans, as the collector's components claim them
	probesOf := make(map[string][]string)
	layouts := make(map[string]map[string]deltaq.Layout) // processor → probe → uniform layout
	components, errs := deltaqComponents(conf)
	if len(components) == 0 && len(errs) == 0 {
		fmt.Fprintln(w, "no deltaq processor, connector or exporter: nothing to check")
	}
	for _, id := range components["processors"] {
		cfg := deltaqprocessor.NewFactory().CreateDefaultConfig().(*deltaqprocessor.Config)
		if err := decodeSection(conf, confpath.Section("processors", id), cfg); err != nil {
			errs = append(errs, err)
			continue
		}
		layouts[id] = make(map[string]deltaq.Layout)
		for i := range cfg.Probes {
			p := &cfg.Probes[i]
			probesOf[id] = append(probesOf[id], p.Name)
			if dmax, perr := p.DMaxNanos(); len(perr) == 0 && !p.DMaxAuto && p.Binning == nil {
				layouts[id][p.Name] = deltaq.Layout{DMaxNs: dmax, Bins: p.Bins}
			}
		}
		if len(cfg.Probes) > 0 && !inTracesPipeline(conf, "processors", id) {
			errs = append(errs, fmt.Errorf("%s: in no traces pipeline: its probes see no spans (in a logs pipeline it reads start events only; put it in the traces pipeline too)",
				confpath.Section("processors", id)))
			continue
		}
		_ = claims.Claim(id, "processor", id, probesOf[id]) // processors do not refuse one another
		noun := "probes"
		if len(cfg.Probes) == 1 {
			noun = "probe"
		}
		fmt.Fprintf(w, "%s: ok, %d %s\n", confpath.Section("processors", id), len(cfg.Probes), noun)
	}
	for _, kind := range []string{"connectors", "exporters"} {
		for _, id := range components[kind] {
			acfg, matched, err := decodeFrontEnd(conf, kind, id)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if kind == "connectors" && len(matched) > 0 && !inTracesPipeline(conf, "exporters", id) {
				errs = append(errs, fmt.Errorf("%s: it matches spans to probes (%s), but no traces pipeline sends it any: add it to a traces pipeline's exporters",
					confpath.Section(kind, id), strings.Join(matched, ", ")))
				continue
			}
			if kind == "connectors" {
				if err := connectorWiring(conf, id, matched, &claims); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", confpath.Section(kind, id), err))
					continue
				}
			}
			procs, gateway := pipelineFeeds(conf, id)
			defined := acfg.OwnProbes(matched...)
			for _, p := range procs {
				defined = append(defined, probesOf[p]...)
			}
			err = acfg.CheckReferences(defined)
			switch {
			case err != nil && gateway:
				err = fmt.Errorf("%w\n(a gateway counts the probes it declares in probes, with dmax and bins)", err)
			case err != nil && kind == "connectors" && len(procs) == 0:
				err = fmt.Errorf("%w\n(no deltaq processor feeds the connector: a probe it counts itself needs match, with dmax and bins)", err)
			}
			if err = errors.Join(err, layoutsAgree(acfg, procs, layouts), processorsAgree(conf, procs, probesOf, layouts),
				qtaOffEdges(acfg, procs, layouts)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", confpath.Section(kind, id), err))
				continue
			}
			fmt.Fprintf(w, "%s: ok, fed by %s\n", confpath.Section(kind, id), feedsText(procs, gateway))
		}
	}
	return errors.Join(errs...)
}

// layoutsAgree refuses a probe whose layout the front end sets (dmax and
// bins in its probes) while a processor feeding it sets another: the front
// end's would win and re-classify the processor's instances, which is
// rarely what was meant.
func layoutsAgree(acfg *core.Config, procs []string, layouts map[string]map[string]deltaq.Layout) error {
	var errs []error
	for _, name := range acfg.OwnProbes() {
		if acfg.Probes[name].Binning != nil {
			continue // log-linear: a gateway's, which no processor feeds
		}
		own := deltaq.Layout{DMaxNs: int64(acfg.Probes[name].DMax), Bins: acfg.Probes[name].Bins}
		for _, p := range procs {
			if l, ok := layouts[p][name]; ok && !l.Equal(own) {
				errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name), "dmax %v, bins %d differ from %s's dmax %v, bins %d; set the layout in one place (the processor's), or the same in both",
					own.DMax(), own.Bins, confpath.Section("processors", p), l.DMax(), l.Bins))
			}
		}
	}
	return errors.Join(errs...)
}

// processorsAgree refuses a probe that two processors feeding one front end
// both define: with two layouts its windows would mix them (the instances of
// the one the front end does not take are dropped), and with a receiver
// that feeds both processors' pipelines each of its spans counts twice.
func processorsAgree(conf *confmap.Conf, procs []string, probesOf map[string][]string, layouts map[string]map[string]deltaq.Layout) error {
	var errs []error
	for i, p := range procs {
		for _, q := range procs[i+1:] {
			shared := sharedReceivers(conf, p, q)
			for _, name := range probesOf[p] {
				if !slices.Contains(probesOf[q], name) {
					continue
				}
				lp, okP := layouts[p][name]
				lq, okQ := layouts[q][name]
				switch {
				case okP && okQ && !lp.Equal(lq):
					errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name), "%s (dmax %v, bins %d) and %s (dmax %v, bins %d) both count it here, in two layouts; give it one, or each processor its own name",
						confpath.Section("processors", p), lp.DMax(), lp.Bins, confpath.Section("processors", q), lq.DMax(), lq.Bins))
				case len(shared) > 0:
					errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name), "%s and %s both count it here, and %s feeds both their pipelines: each of its spans would count twice; define the probe in one of them",
						confpath.Section("processors", p), confpath.Section("processors", q), confpath.Section("receivers", shared[0])))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// sharedReceivers returns the receivers of a traces pipeline with
// processor p that a traces pipeline with processor q has too, sorted.
func sharedReceivers(conf *confmap.Conf, p, q string) []string {
	of := func(proc string) []string {
		var out []string
		pipes, _ := conf.Get("service::pipelines").(map[string]any)
		for name, v := range pipes {
			pm, _ := v.(map[string]any)
			if strings.HasPrefix(name, "traces") && slices.Contains(stringList(pm["processors"]), proc) {
				out = append(out, stringList(pm["receivers"])...)
			}
		}
		return out
	}
	rq := of(q)
	var shared []string
	for _, r := range of(p) {
		if slices.Contains(rq, r) && !slices.Contains(shared, r) {
			shared = append(shared, r)
		}
	}
	sort.Strings(shared)
	return shared
}

func feedsText(procs []string, gateway bool) string {
	switch {
	case gateway:
		return "agents' windows"
	case len(procs) == 0:
		return "no deltaq processor (its own probes only)"
	}
	return "processors " + strings.Join(procs, ", ")
}

// decodeFrontEnd decodes and checks a deltaq connector's or exporter's
// section, returning its analysis options and, for a connector, the
// probes it matches in the spans (those with dmax: auto among them, whose
// layout its analysis options do not hold).
func decodeFrontEnd(conf *confmap.Conf, kind, id string) (*core.Config, []string, error) {
	key := confpath.Section(kind, id)
	if kind == "connectors" {
		cfg := deltaqconnector.NewFactory().CreateDefaultConfig().(*deltaqconnector.Config)
		if err := decodeSection(conf, key, cfg); err != nil {
			return nil, nil, err
		}
		return &cfg.Config, slices.Sorted(maps.Keys(cfg.Matched)), nil
	}
	cfg := deltaqexporter.NewFactory().CreateDefaultConfig().(*deltaqexporter.Config)
	if err := decodeSection(conf, key, cfg); err != nil {
		return nil, nil, err
	}
	return &cfg.Config, nil, nil
}

// decodeSection decodes the section key of conf into cfg and validates it
// as the collector does. cfg decodes itself (a confmap.Unmarshaler, as
// each deltaq component's configuration is): it is given the section
// straight away, where conf.Unmarshal would copy the section once more
// first and then give it the copy.
func decodeSection(conf *confmap.Conf, key string, cfg confmap.Unmarshaler) error {
	sub, err := conf.Sub(key)
	if err == nil {
		err = cfg.Unmarshal(sub)
	}
	if err == nil {
		err = confmap.Validate(cfg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}
