// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"errors"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/confcheck"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// baseBinWidth is Δbase of the thesis parameterisation dMax = Δbase·2ⁿ·N
// (thesis, section 5.1.1, equation 5.3), whose limits — n in
// [deltaq.MinExponent, deltaq.MaxExponent], N in [1, deltaq.MaxThesisBins]
// — are the algebra's.
const baseBinWidth = time.Duration(deltaq.DeltaBase * 1e9)

// Config is the configuration of the deltaq processor.
type Config struct {
	// Probes are the outcomes to observe, written as a map keyed by the
	// probe's name (`probes: {checkout: {dmax: 2s, bins: 200}}`), the shape
	// of the connector's and the exporter's probes; a span that several
	// match belongs to the most specific (probeOrder). Unmarshal lists them
	// in that order. The list form (`probes: [{name: checkout, …}]`), where
	// a span belongs to the first probe in list order whose match holds, is
	// still read, and deprecated.
	Probes []ProbeConfig `mapstructure:"probes"`

	// Failure is the failure rule of the probes that do not set their own.
	Failure FailureConfig `mapstructure:"failure"`

	// Options are the start-event options (max_in_flight,
	// timer_resolution, timeout_grace, late_window, max_ended,
	// ended_window), the deltaq connector's start_events section.
	inflight.Options `mapstructure:",squash"`

	// probesByName is set when the probes were written as a map: messages
	// then name a probe by its key (probes["checkout"]) rather than its
	// position, and the list form is not warned about.
	probesByName bool

	// declare is the collector's layout registry, where Validate declares
	// the probes (contract.Layouts.Declare); nil in a Config not made by
	// the factory.
	declare *contract.Layouts

	// prevent unkeyed literal initialization
	_ struct{}
}

// ProbeConfig is one probe: which spans are instances of the outcome, and the
// outcome's dMax.
type ProbeConfig struct {
	// Name is the probe (outcome) name written to deltaq.probe and used by
	// start events.
	Name string `mapstructure:"name"`

	// Match selects the spans of the probe. When neither span_name nor
	// span_name_regexp is set, the span name must equal Name.
	Match MatchConfig `mapstructure:"match"`

	// DMax is the maximum delay, given directly, in [1µs, 24h]; it takes
	// Bins with it. Exactly one of DMax, Exponent, DMaxAuto and Binning is
	// set.
	DMax time.Duration `mapstructure:"dmax"`

	// DMaxAuto, written `dmax: auto`, lets the probe choose its dMax from
	// the delays it observes, within [DMaxMin, DMaxMax], and choose again
	// when they move (autorange.go). Bins is still required.
	DMaxAuto bool `mapstructure:"-"`

	// DMaxMin and DMaxMax bound the dMax an auto probe chooses; 1ms and 1m
	// when omitted. Until its first choice the probe uses DMaxMax.
	DMaxMin time.Duration `mapstructure:"dmax_min"`
	DMaxMax time.Duration `mapstructure:"dmax_max"`

	// DMaxSample is the number of instances an auto probe observes before
	// each choice, and DMaxPeriod the shortest time between two choices:
	// 1000 and 10s when omitted.
	DMaxSample int           `mapstructure:"dmax_sample"`
	DMaxPeriod time.Duration `mapstructure:"dmax_period"`

	// DMaxChangesPerHour bounds the changes of an auto probe's dMax in
	// any hour; a change beyond it is suppressed and counted. 6 when
	// omitted, in [1, 3600].
	DMaxChangesPerHour int `mapstructure:"dmax_changes_per_hour"`

	// Exponent is n in the thesis form dMax = 1 ms·2ⁿ·Bins, n ∈ [−10, 10].
	Exponent *int `mapstructure:"exponent"`

	// Bins is the number of bins N of the probe's ΔQ, in [1, 1000]; the bin
	// width is dMax / N.
	Bins int `mapstructure:"bins"`

	// Binning, instead of Bins and a dMax, gives the probe log-linear
	// buckets, for delays that span orders of magnitude: `binning: {kind:
	// log-linear, factor: 10, low: 1ms, high: 10s, steps: 10}`. Its dMax
	// is High. Neither dmax, exponent, bins nor dmax: auto is set with it:
	// auto-ranging moves the dMax of uniform bins, while log-linear
	// buckets already cover the orders of magnitude between Low and High.
	Binning *deltaq.BinningConfig `mapstructure:"binning"`

	// Failure replaces the processor-level failure rule for this probe.
	Failure *FailureConfig `mapstructure:"failure"`
}

// MatchConfig selects spans (package spanmatch): all the conditions that
// are set must hold. The deltaq connector's probes take the same options.
type MatchConfig = spanmatch.MatchConfig

// FailureConfig says which spans that end within dMax are failures: those
// with status ERROR (unless status_error is false) and those for which any
// of the conditions holds.
type FailureConfig = spanmatch.FailureConfig

// ConditionConfig compares a span attribute with a value. A condition on an
// attribute the span does not have does not hold.
type ConditionConfig = spanmatch.ConditionConfig

var (
	_ component.Config    = (*Config)(nil)
	_ confmap.Unmarshaler = (*Config)(nil)
)

// Unmarshal decodes the processor's section of the collector configuration.
// It first refuses what decoding would change without a word (see package
// confcheck): a duration written without a unit (`dmax: 500` would be
// 500ns, and every instance would time out) and an integer its field cannot
// hold (`bins: 100000000000000000000` would become -9223372036854775808),
// each quoted as written, for example
//
//	probes["checkout"].dmax: 500 has no unit; write a duration such as 500ms or 2s
func (cfg *Config) Unmarshal(conf *confmap.Conf) error {
	if conf == nil {
		return nil
	}
	// The section is read once (confcheck.Raw) for the checks, the map
	// form and the dmax: auto entries; it is copied again only to change
	// those.
	raw, keys, err := listProbes(confcheck.Raw(conf))
	if err != nil {
		return err
	}
	raw, auto := takeAutoDMax(raw)
	if err := confcheck.CheckRaw(raw, cfg, keyedPath(keys)); err != nil {
		return err
	}
	if len(auto) > 0 || keys != nil {
		conf = confmap.NewFromStringMap(raw)
	}
	// Into plainConfig, which has no Unmarshal method: the decoder would
	// call this one again on a Conf it did not make itself.
	if err := conf.Unmarshal((*plainConfig)(cfg)); err != nil {
		return err
	}
	for _, i := range auto {
		if i < len(cfg.Probes) {
			cfg.Probes[i].DMaxAuto = true
		}
	}
	if keys != nil {
		cfg.probesByName = true
		slices.SortStableFunc(cfg.Probes, probeOrder)
	}
	return nil
}

// plainConfig is Config without its methods, to decode into.
type plainConfig Config

// autoKeyword is the value of dmax that makes a probe choose its own dMax.
const autoKeyword = "auto"

// takeAutoDMax returns raw without the `dmax: auto` entries of its probes,
// which no duration decodes, and the indices of those probes. Only what
// changes is copied: raw itself is left as it is.
func takeAutoDMax(raw map[string]any) (map[string]any, []int) {
	probes, ok := confcheck.Value(raw["probes"]).([]any)
	if !ok {
		return raw, nil
	}
	var auto []int
	for i, v := range probes {
		if m, ok := confcheck.Value(v).(map[string]any); ok {
			if confcheck.IsWord(m["dmax"], autoKeyword) {
				auto = append(auto, i)
			}
		}
	}
	if len(auto) == 0 {
		return raw, nil
	}
	raw = maps.Clone(raw)
	list := slices.Clone(probes)
	raw["probes"] = list
	for _, i := range auto {
		m := maps.Clone(confcheck.Value(list[i]).(map[string]any))
		delete(m, "dmax")
		list[i] = m
	}
	return raw, auto
}

// Validate checks the configuration and reports every problem, each naming
// the probe and the field.
func (cfg *Config) Validate() error {
	var errs []error
	if len(cfg.Probes) == 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("probes"), "at least one probe is required"))
	}
	errs = append(errs, cfg.Options.Check()...)
	defaultFailure, ferrs := spanmatch.CompileFailure(&cfg.Failure)
	errs = append(errs, ferrs...)
	seen := make(map[string]int, len(cfg.Probes))
	for i := range cfg.Probes {
		pc := &cfg.Probes[i]
		if len(pc.Name) > contract.MaxNameLength {
			// The name is not repeated: it is what is too long.
			errs = append(errs, cfg.probeError(i, confpath.Errorf(confpath.Fields("name"), "must be at most %d bytes, got %d", contract.MaxNameLength, len(pc.Name))))
		}
		if j, dup := seen[pc.Name]; dup && pc.Name != "" {
			errs = append(errs, cfg.probeError(i, confpath.Errorf(confpath.Fields("name"), "duplicate probe name (also %s)", confpath.Fields("probes").Index(j))))
		} else {
			seen[pc.Name] = i
		}
		_, _, perrs := compileProbe(pc, defaultFailure)
		for _, err := range perrs {
			errs = append(errs, cfg.probeError(i, err))
		}
	}
	if len(errs) == 0 && cfg.declare != nil {
		for i := range cfg.Probes {
			cfg.declare.Declare(cfg.Probes[i].Name)
		}
	}
	return errors.Join(errs...)
}

// probeError puts err under the probe: its key, probes["checkout"].bins,
// when the probes are a map; else its position, probes[0].bins.
func (cfg *Config) probeError(i int, err error) error {
	if name := cfg.Probes[i].Name; cfg.probesByName && len(name) <= contract.MaxNameLength {
		return confpath.Under(confpath.Fields("probes").Key(name), err)
	}
	return confpath.Under(confpath.Fields("probes").Index(i), err)
}

// DMaxNanos returns the probe's dMax in nanoseconds, or the problems with
// the dmax, exponent and bins fields. For the thesis form it is
// 1 ms·2ⁿ·N (equation 5.3) = 10⁶·N·2ⁿ ns, exact for n ≥ −6 and rounded to the
// nearest nanosecond, halves away from zero, below: 10⁶ = 2⁶·15625, so
// 10⁶·N·2ⁿ has a fractional part only for n < −6, and the error is at most
// 0.5 ns.
func (pc *ProbeConfig) DMaxNanos() (int64, []error) {
	if pc.Binning != nil {
		ll, errs := pc.logLinear()
		return ll.High, errs
	}
	var errs []error
	if err := checkBins(pc.Bins); err != nil {
		errs = append(errs, err)
	}
	if pc.DMaxAuto || pc.DMaxMin != 0 || pc.DMaxMax != 0 || pc.DMaxSample != 0 || pc.DMaxPeriod != 0 || pc.DMaxChangesPerHour != 0 {
		return pc.autoDMaxNanos(errs)
	}
	switch {
	case pc.DMax != 0 && pc.Exponent != nil:
		errs = append(errs, errors.New("dmax, exponent: set either dmax or exponent, not both"))
	case pc.Exponent != nil:
		if n := *pc.Exponent; n < deltaq.MinExponent || n > deltaq.MaxExponent {
			errs = append(errs, confpath.Errorf(confpath.Fields("exponent"), "must be in [%d, %d], got %d", deltaq.MinExponent, deltaq.MaxExponent, n))
		}
	case pc.DMax == 0:
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax"), "a positive dmax (or an exponent) is required"))
	case pc.DMax < deltaq.MinDMax || pc.DMax > deltaq.MaxDMax:
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax"), "must be in [%v, %v], got %v", deltaq.MinDMax, deltaq.MaxDMax, pc.DMax))
	}
	if len(errs) > 0 {
		return 0, errs
	}
	if pc.Exponent != nil {
		n := *pc.Exponent
		units := int64(baseBinWidth) * int64(pc.Bins) // 10⁶·N ns, at most 10⁹
		if n >= 0 {
			return units << n, nil
		}
		d := int64(1) << -n
		return (units + d/2) / d, nil // round half away from zero (units > 0)
	}
	// Unreachable within the bounds above (1µs / 1000 bins = 1ns), kept so
	// that a change of either bound cannot give bins narrower than 1ns.
	if int64(pc.DMax) < int64(pc.Bins) {
		return 0, []error{confpath.Errorf(confpath.Fields("dmax"), "%v is less than 1ns per bin with %d bins", pc.DMax, pc.Bins)}
	}
	return int64(pc.DMax), nil
}

// logLinear returns the probe's log-linear buckets, or the problems with
// the fields the binning excludes and those of the binning itself
// (deltaq.BinningConfig.LogLinear: at most deltaq.MaxThesisBins buckets, as
// the bins of a uniform probe, each a bucket of deltaq.observed).
func (pc *ProbeConfig) logLinear() (deltaq.LogLinear, []error) {
	var errs []error
	if pc.DMaxAuto {
		errs = append(errs, errors.New("binning, dmax: auto: set one or the other; dmax: auto moves the dMax of uniform bins, log-linear buckets cover binning.low to binning.high"))
	}
	if pc.DMax != 0 || pc.Exponent != nil {
		errs = append(errs, errors.New("dmax, exponent: the dMax of a probe with binning is binning.high; set neither"))
	}
	if pc.DMaxMin != 0 || pc.DMaxMax != 0 || pc.DMaxSample != 0 || pc.DMaxPeriod != 0 || pc.DMaxChangesPerHour != 0 {
		errs = append(errs, autorange.ErrNotAuto)
	}
	if pc.Bins != 0 {
		errs = append(errs, errors.New("bins, binning: set either bins or binning, not both"))
	}
	ll, berrs := pc.Binning.LogLinear()
	if errs = append(errs, berrs...); len(errs) > 0 {
		return deltaq.LogLinear{}, errs
	}
	return ll, nil
}

func checkBins(n int) error {
	if n == 0 {
		// Unset: the one mistake a newcomer makes here, with dmax: auto too.
		return confpath.Errorf(confpath.Fields("bins"), "is required (also with dmax: auto), e.g. bins: 100")
	}
	if n < 1 || n > deltaq.MaxThesisBins {
		return confpath.Errorf(confpath.Fields("bins"), "must be in [1, %d], got %d", deltaq.MaxThesisBins, n)
	}
	return nil
}
