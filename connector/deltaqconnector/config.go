// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"

import (
	"errors"
	"maps"
	"reflect"
	"slices"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/confcheck"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// Config is the configuration of the deltaq connector: the analysis options
// of the deltaq exporter (interval, lag, history, diagram, probes, …),
// without the exporter's sending options, since the output goes to the
// collector's own pipelines, and with the match and failure options of the
// probes the connector matches in the spans itself.
type Config struct {
	// Config holds the analysis options, at the top level of the
	// connector's section.
	core.Config `mapstructure:",squash"`
	// Matched holds, by probe name, the match and failure options of the
	// entries of probes that have a match (`probes: {job: {dmax: 200ms,
	// bins: 100, match: {span_name: job}}}`): Unmarshal takes them out of
	// those entries, whose other options (dmax, bins, qta, triggers) stay
	// in Config.Probes. Such a probe's instances are the spans its match
	// selects, counted straight from the spans (package spanmatch). Its
	// entry of Config.Probes must give dmax and bins.
	Matched map[string]MatchedProbe `mapstructure:"-"`
	// StartEvents bounds the instances the connector tracks from start
	// events (contract.StartEventName log records, on a logs input), whose
	// timeouts it counts in real time: the deltaq processor's options of
	// the same names.
	StartEvents inflight.Options `mapstructure:"start_events"`
	_           struct{}         // prevent unkeyed literal initialization
}

// plainConfig is Config without its methods, for the decoder, which would
// otherwise call Config.Unmarshal again.
type plainConfig Config

// MatchedProbe is what a probe the connector matches adds to its entry of
// probes: the deltaq processor's match and failure options.
type MatchedProbe struct {
	// Match selects the spans of the probe: all the conditions that are
	// set must hold; without span_name or span_name_regexp (`match: {}`)
	// the span name must equal the probe's name. Required: an entry with a
	// failure rule and no match is refused.
	Match *spanmatch.MatchConfig `mapstructure:"match"`
	// Failure says which spans that end within dMax are failures; status
	// ERROR when omitted.
	Failure *spanmatch.FailureConfig `mapstructure:"failure"`
	// DMaxAuto, written `dmax: auto` on the entry, lets the probe choose
	// its dMax from the delays it observes (internal/autorange), within
	// dmax_min and dmax_max, and choose again when they move. Unmarshal
	// takes the entry's bins and auto-ranging options here: its analysis
	// options then give no layout.
	DMaxAuto bool `mapstructure:"-"`
	// Bins is the bin count of an auto probe, in [1, 1000].
	Bins int `mapstructure:"bins"`
	// Auto are the auto-ranging options (dmax_min, dmax_max, dmax_sample,
	// dmax_period, dmax_changes_per_hour).
	Auto autorange.Options `mapstructure:",squash"`
}

// The keys of a probe entry that MatchedProbe holds; those of an auto
// probe (`dmax: auto`) too.
const (
	keyProbes  = "probes"
	keyMatch   = "match"
	keyFailure = "failure"
	keyDMax    = "dmax"
	keyBins    = "bins"
	// valueAuto is the dmax of an auto probe.
	valueAuto = "auto"
)

// autoKeys are the keys of an auto probe's entry that MatchedProbe holds.
var autoKeys = []string{keyBins, "dmax_min", "dmax_max", "dmax_sample", "dmax_period", "dmax_changes_per_hour"}

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

func createDefaultConfig() component.Config {
	return &Config{Config: core.NewDefaultConfig(), StartEvents: inflight.DefaultOptions()}
}

// Unmarshal decodes the connector's section of the collector configuration,
// refusing what decoding would change without a word (as core.Unmarshal
// does): a duration without a unit, an integer its field cannot hold. The
// match and failure options of the probes go to Matched.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if conf == nil {
		return nil
	}
	// The section is read once (confcheck.Raw) for the checks and the
	// matched probes; it is copied again only when probes are matched.
	// The rest is checked also when the matched probes' options fail, so
	// that every problem is reported at once.
	raw, matched, matchErr := takeMatched(confcheck.Raw(conf))
	if err := confcheck.CheckRaw(raw, c, nil); err != nil || matchErr != nil {
		return errors.Join(matchErr, err)
	}
	if matched != nil {
		conf = confmap.NewFromStringMap(raw)
	}
	if err := conf.Unmarshal((*plainConfig)(c)); err != nil {
		return err
	}
	if len(matched) > 0 {
		c.Matched = matched
	}
	return nil
}

// takeMatched returns raw without the match and failure options of its
// probes, and those options decoded by probe name (nil when no probe has
// them, raw then returned as it is). Only what changes is copied. When the
// options fail to decode, it returns raw without them and the error.
func takeMatched(raw map[string]any) (map[string]any, map[string]MatchedProbe, error) {
	probes, ok := confcheck.Value(raw[keyProbes]).(map[string]any)
	if !ok {
		return raw, nil, nil
	}
	probes, autoErrs := takeUnknown(probes)
	if len(autoErrs) > 0 {
		raw = maps.Clone(raw)
		raw[keyProbes] = probes
	}
	var rest map[string]any
	parts := make(map[string]any)
	given := make(map[string][3]bool) // name → has match, has failure, dmax: auto
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		entry, ok := confcheck.Value(probes[name]).(map[string]any)
		if !ok {
			continue // the decoder reports it
		}
		_, hasMatch := entry[keyMatch]
		_, hasFailure := entry[keyFailure]
		if !hasMatch && !hasFailure {
			if confcheck.IsWord(entry[keyDMax], valueAuto) {
				// Refused here, and not also as a duration by the decoder.
				autoErrs = append(autoErrs, confpath.Errorf(confpath.Fields(keyProbes).Key(name).Field(keyDMax),
					"auto ranges a probe the connector matches: add match (or set dmax: auto on the deltaq processor's probe)"))
				if rest == nil {
					rest = maps.Clone(probes)
				}
				entry = maps.Clone(entry)
				delete(entry, keyDMax)
				rest[name] = entry
			}
			continue
		}
		if rest == nil {
			rest = maps.Clone(probes)
		}
		part := map[string]any{}
		entry = maps.Clone(entry)
		for _, k := range []string{keyMatch, keyFailure} {
			if v, ok := entry[k]; ok {
				if v != nil {
					part[k] = v
				}
				delete(entry, k)
			}
		}
		auto := takeAuto(entry, part)
		rest[name] = entry
		parts[name] = part
		given[name] = [3]bool{hasMatch, hasFailure, auto}
	}
	if rest == nil {
		return raw, nil, errors.Join(autoErrs...)
	}
	raw = maps.Clone(raw)
	raw[keyProbes] = rest
	matched, err := decodeMatched(parts)
	if err = errors.Join(append(autoErrs, err)...); err != nil {
		return raw, nil, err
	}
	for name, g := range given {
		mp := matched[name]
		// `match: {}` and `match:` select the spans named as the probe;
		// `failure:` alone is kept for Validate to refuse.
		if g[0] && mp.Match == nil {
			mp.Match = &spanmatch.MatchConfig{}
		}
		if g[1] && mp.Failure == nil {
			mp.Failure = &spanmatch.FailureConfig{}
		}
		mp.DMaxAuto = g[2]
		matched[name] = mp
	}
	return raw, matched, nil
}

// takeUnknown returns probes without the options that a connector's probe
// does not have, and their problems, each with the closest of every option
// it has (the analysis options, match, failure and the auto-ranging ones):
// Check, which sees the entries after match and failure are taken out,
// would name only the analysis options (and `matc` not as match). probes is
// returned as it is when every option is known.
func takeUnknown(probes map[string]any) (map[string]any, []error) {
	known := append(confcheck.Keys(probeOptions()), keyMatch, keyFailure)
	for _, k := range autoKeys {
		if !slices.Contains(known, k) {
			known = append(known, k)
		}
	}
	var errs []error
	out := probes
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		entry, ok := confcheck.Value(probes[name]).(map[string]any)
		if !ok {
			continue
		}
		clean := maps.Clone(entry)
		e := takeMisplaced(clean, known, confpath.Fields(keyProbes).Key(name))
		e = append(e, confcheck.TakeUnknown(clean, known, confpath.Fields(keyProbes).Key(name))...)
		if len(e) == 0 {
			continue
		}
		if len(errs) == 0 {
			out = maps.Clone(probes) // the first entry that changes
		}
		out[name] = clean
		errs = append(errs, e...)
	}
	return out, errs
}

// probeOptions is a zero of the analysis options of a probe (the element
// of Config.Probes), whose keys and sections the checks read.
func probeOptions() any { return reflect.Zero(reflect.TypeOf(Config{}.Probes).Elem()).Interface() }

// takeMisplaced removes from entry (which it changes) the options of match,
// failure and the probe's analysis sections (qta, triggers, …) written at
// the probe's level, where they are unknown, and returns their problems,
// naming where they belong (failure.status_error), as Check names them.
func takeMisplaced(entry map[string]any, known []string, p confpath.Path) []error {
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(entry)) {
		if confcheck.HasKey(known, k) {
			continue
		}
		owner := confcheck.NestedOwner(MatchedProbe{}, k)
		if owner == "" {
			owner = confcheck.NestedOwner(probeOptions(), k)
		}
		if owner != "" {
			errs = append(errs, confpath.Errorf(p.Field(k), "%s", confcheck.MisplacedMessage(owner, k)))
			delete(entry, k)
		}
	}
	return errs
}

// takeAuto moves the dmax, bins and auto-ranging options of an entry with
// `dmax: auto` from entry to part, and reports whether it did. The
// auto-ranging options of an entry without it move too, so that they are
// refused as only for dmax: auto (autorange.ErrNotAuto), not as unknown.
func takeAuto(entry, part map[string]any) bool {
	auto := confcheck.IsWord(entry[keyDMax], valueAuto)
	if auto {
		delete(entry, keyDMax)
	}
	for _, k := range autoKeys {
		if k == keyBins && !auto {
			continue // the probe's own layout, with its dmax
		}
		if v, ok := entry[k]; ok {
			part[k] = v
			delete(entry, k)
		}
	}
	return auto
}

// decodeMatched checks the match and failure options of the matched
// probes, parts by probe name, probe by probe (confcheck: each error names
// its probe, and a misspelled option the closest valid one, as for every
// other option), then decodes them in one pass; when that fails it decodes
// them probe by probe, so that each error names its probe.
func decodeMatched(parts map[string]any) (map[string]MatchedProbe, error) {
	matched := make(map[string]MatchedProbe, len(parts))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		// What decodes but is refused all the same (confcheck's
		// nonempty strings) is found before the decoding.
		if err := confcheck.CheckRaw(parts[name].(map[string]any), &MatchedProbe{}, nil); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields(keyProbes).Key(name), err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if confmap.NewFromStringMap(parts).Unmarshal(&matched) == nil && len(matched) == len(parts) {
		return matched, nil
	}
	clear(matched)
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		var mp MatchedProbe
		if err := confmap.NewFromStringMap(parts[name].(map[string]any)).Unmarshal(&mp); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields(keyProbes).Key(name), err))
			continue
		}
		matched[name] = mp
	}
	return matched, errors.Join(errs...)
}

// Validate checks the analysis options (core.Config.CheckOwn, with the
// probes the connector matches as its own), the outcome diagram included,
// so that its own error messages (file:line:col) reach the user at
// start-up, and the probes the connector matches.
func (c *Config) Validate() error {
	errs := []error{c.CheckOwn(slices.Sorted(maps.Keys(c.Matched)))}
	for _, err := range c.StartEvents.Check() {
		errs = append(errs, confpath.Under(confpath.Fields("start_events"), err))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Matched)) {
		for _, err := range c.checkMatched(name) {
			errs = append(errs, confpath.Under(confpath.Fields(keyProbes).Key(name), err))
		}
	}
	return errors.Join(errs...)
}

// checkMatched returns the problems of the probe name that the connector
// matches: a match, dmax and bins are required, and the match and failure
// options are the deltaq processor's (spanmatch.Compile).
func (c *Config) checkMatched(name string) []error {
	mp := c.Matched[name]
	if mp.Match == nil {
		return []error{confpath.Errorf(confpath.Fields("failure"), "only a probe with match has a failure rule here; add match, or move the failure rule to the deltaq processor's probe")}
	}
	var errs []error
	switch pc := c.Probes[name]; {
	case mp.DMaxAuto:
		errs = append(errs, checkAuto(&mp, pc.Binning != nil)...)
		if d, hi := pc.QTA.LastDelay(), mp.Auto.WithDefaults().Max; d > hi {
			errs = append(errs, confpath.Errorf(confpath.Fields("qta"),
				"its last point, %v, is beyond dmax_max %v: dmax: auto chooses a dMax of at least the QTA's last point, within dmax_max", d, hi))
		}
	case !mp.Auto.IsZero():
		errs = append(errs, autorange.ErrNotAuto)
	case pc.DMax == 0 && pc.Bins == 0 && pc.Binning == nil:
		// One of dmax and bins alone is the analysis options' problem
		// ("must be set together"), said once.
		errs = append(errs, confpath.Errorf(confpath.Fields("match"), "a probe the connector matches needs its dmax and bins, its binning, or dmax: auto and bins"))
	}
	_, _, errs2 := compileMatched(name, &mp)
	return append(errs, errs2...)
}

// checkAuto returns the problems of an auto probe, whose analysis options
// set a binning or not.
func checkAuto(mp *MatchedProbe, binning bool) []error {
	var errs []error
	if err := autorange.CheckBins(mp.Bins); err != nil {
		errs = append(errs, err)
	}
	if binning {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning"), "dmax: auto moves the dMax of uniform bins; log-linear buckets already cover orders of magnitude"))
	}
	return append(errs, mp.Auto.Check()...)
}

// compileMatched compiles the match and the failure rule of a probe.
func compileMatched(name string, mp *MatchedProbe) (spanmatch.Rule, spanmatch.Failure, []error) {
	rule, errs := spanmatch.Compile(mp.Match, name)
	fc := mp.Failure
	if fc == nil {
		fc = &spanmatch.FailureConfig{}
	}
	f, ferrs := spanmatch.CompileFailure(fc)
	return rule, f, append(errs, ferrs...)
}
