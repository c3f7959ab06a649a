// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

// The probes as a map keyed by name, the one shape of the probes of the
// processor, the connector, the exporter and a gateway; read as the list
// the processor runs on.

import (
	"cmp"
	"errors"
	"maps"
	"slices"

	"github.com/deltaq-otel/deltaq/internal/confcheck"
	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// listFormDeprecated is what the processor logs when it is made with its
// probes in the list form.
const listFormDeprecated = "probes: the list form (probes: [{name: checkout, …}]) is deprecated; " +
	"write the probes as a map keyed by name, as the connector's are: probes: {checkout: {dmax: 2s, bins: 200, …}}. " +
	"A span that several probes match then belongs to the most specific, not to the first listed"

// keyName is the option of a probe of the list form that the map form
// writes as the probe's key.
const keyName = "name"

// listProbes returns raw with its probes, when they are a map keyed by
// name, as the list the decoder fills Config.Probes from — in name order,
// each entry with its key as its name — and the names in that order; nil
// names when the probes are not a map (the list form, or none), raw then
// returned as it is; an empty map is an empty list. An entry that also gives a name must give its key;
// an empty entry (`checkout:`) is a probe with no option set, which
// Validate refuses for its missing dmax.
func listProbes(raw map[string]any) (map[string]any, []string, error) {
	probes, ok := confcheck.Value(raw["probes"]).(map[string]any)
	if !ok {
		return raw, nil, nil
	}
	// Not nil for an empty map (`probes: {}`), which Validate refuses.
	names := append([]string{}, slices.Sorted(maps.Keys(probes))...)
	list := make([]any, len(names))
	var errs []error
	for i, name := range names {
		v := confcheck.Value(probes[name])
		entry, ok := v.(map[string]any)
		if !ok && v != nil {
			errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name), "want the probe's options (dmax, bins, match, …), got %v", v))
			continue
		}
		entry = maps.Clone(entry)
		if entry == nil {
			entry = map[string]any{}
		}
		if n, has := entry[keyName]; has {
			if s, _ := confcheck.Value(n).(string); s != name {
				errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name).Field(keyName), "%v is not the key %q: the key is the probe's name; leave name out", confcheck.Value(n), name))
				continue
			}
		}
		entry[keyName] = name
		list[i] = entry
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	raw = maps.Clone(raw)
	raw["probes"] = list
	return raw, names, nil
}

// keyedPath returns the rewrite of confcheck's paths for probes listed
// from a map (names by position, as listProbes gives them): a probe is
// named by its key, probes["checkout"].dmax, as it was written. nil names:
// nil, confcheck's own paths (probes[0].dmax).
func keyedPath(names []string) func(confpath.Path) confpath.Path {
	if names == nil {
		return nil
	}
	return func(p confpath.Path) confpath.Path {
		if len(p) >= 2 && p[0].Key == "probes" && p[1].IsIndex && p[1].Index < len(names) {
			return slices.Concat(confpath.Fields("probes").Key(names[p[1].Index]), p[2:])
		}
		return p
	}
}

// probeOrder orders the probes of the map form, in which a span that
// several probes match belongs to the first: the most specific. A probe
// that matches the span name exactly (span_name, or its own name) comes
// before one that matches it with span_name_regexp; then the one with more
// conditions (service_name, span_kind, each attribute); then the first by
// name. So `checkout_shop: {match: {span_name: GET /checkout,
// service_name: shop}}` takes the shop's spans from `checkout: {match:
// {span_name: GET /checkout}}`, which takes the others, whatever the
// names, as an HTTP router prefers an exact path to a pattern.
func probeOrder(a, b ProbeConfig) int {
	regexp := func(pc ProbeConfig) int {
		if pc.Match.SpanNameRegexp != "" {
			return 1
		}
		return 0
	}
	conditions := func(pc ProbeConfig) int {
		n := len(pc.Match.Attributes)
		if pc.Match.ServiceName != "" {
			n++
		}
		if pc.Match.SpanKind != "" {
			n++
		}
		return n
	}
	return cmp.Or(
		cmp.Compare(regexp(a), regexp(b)),
		cmp.Compare(conditions(b), conditions(a)),
		cmp.Compare(a.Name, b.Name))
}
