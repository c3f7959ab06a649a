// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/confcheck"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Defaults of the options. Those the analysis engine also applies to a zero
// value are its own constants.
const (
	DefaultInterval     = time.Second
	DefaultHistory      = analysis.DefaultHistory
	DefaultMaxProbes    = analysis.DefaultMaxProbes
	DefaultCDFPoints    = 32
	DefaultRearmWindows = analysis.DefaultRearmWindows
	DefaultBefore       = 5
	DefaultAfter        = 5 * time.Second
	// DefaultMaxRequestBytes keeps one OTLP request of ΔQ output below the
	// 4 MiB message limit that gRPC servers apply by default.
	DefaultMaxRequestBytes = 3 << 20
	// DefaultProbeIdleTimeout is how long a probe that no configuration
	// names is kept without instances.
	DefaultProbeIdleTimeout = 10 * time.Minute
	// Snapshot retention defaults: at 10 probes × 1000 bins a snapshot file
	// is about 0.3 MiB.
	DefaultSnapshotMaxFiles = 100
	DefaultSnapshotMaxBytes = 64 << 20
	// DefaultServicesMaxPerProbe is how many services the deltaq.service
	// label of a probe names: a probe matches one operation, usually of
	// one application, and a few more cover a service being renamed or
	// deployed beside its successor.
	DefaultServicesMaxPerProbe = 4
)

// Config is the analysis configuration of the deltaq exporter and the
// deltaq connector, squashed into each component's configuration: the
// options sit at the top level of the component's section. The analysis
// options and their checks are analysis.Config's; Config adds the options
// of the output, the bounds a long-running collector puts on the options
// (checkBounds) and the snapshot directory's check.
type Config struct {
	analysis.Config `mapstructure:",squash"`
	// MaxRequestBytes bounds the size of one batch of ΔQ output: a window
	// whose metrics or logs are larger goes out in several batches.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`
	// CDFPoints is the number of deltaq.le points per curve of the
	// deltaq.cdf gauge; 0 reports every bin edge.
	CDFPoints int `mapstructure:"cdf_points"`
	// Histogram chooses the form of the deltaq.observed histogram.
	Histogram HistogramConfig `mapstructure:"histogram"`
	// EmitWindows adds each probe's window to the output in the form a
	// gateway merges exactly (deltaq.window, a delta histogram): set it on
	// agent collectors whose metrics go to a gateway.
	EmitWindows bool `mapstructure:"emit_windows"`
	// WindowsOnly, with EmitWindows, leaves the windows alone in the
	// metrics output: an agent whose metrics go to a gateway, which reads
	// deltaq.window and nothing else, then sends it about a hundredth of
	// the bytes (the agent's own ΔQ series are the rest). Logs (triggers,
	// snapshots) are unchanged.
	WindowsOnly bool `mapstructure:"windows_only"`
	// Services bounds the deltaq.service label of each probe, whose values
	// come from the spans' resources (service.name).
	Services ServicesConfig `mapstructure:"services"`
}

// ServicesConfig is services::*, the bounds of the deltaq.service label.
// Every service name is cut to contract.MaxNameLength bytes.
type ServicesConfig struct {
	// MaxPerProbe is how many services a probe's label names, the first
	// ones seen; a further one makes the label end with
	// contract.ServiceOverflow.
	MaxPerProbe int `mapstructure:"max_per_probe"`
	// IdleTimeout is how long a service that sends no instance of the
	// probe keeps its place (the overflow too). 0 means
	// probe_idle_timeout.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
}

// HistogramConfig chooses the form of deltaq.observed, as contrib's
// spanmetrics connector does: explicit buckets at the bin edges (the
// default; Prometheus classic histograms, exact at every bin edge), or an
// exponential histogram (Prometheus native histograms).
type HistogramConfig struct {
	// Exponential, when present, makes deltaq.observed an exponential
	// histogram of at most max_size buckets.
	Exponential *ExponentialHistogramConfig `mapstructure:"exponential"`
}

// ExponentialHistogramConfig is histogram::exponential.
type ExponentialHistogramConfig struct {
	// MaxSize is the largest number of buckets: the scale is the finest at
	// which a probe's range, from its first bin edge to dMax, fits in them.
	// 0 means DefaultExponentialMaxSize.
	MaxSize int `mapstructure:"max_size"`
}

// DefaultExponentialMaxSize is the default histogram::exponential::max_size,
// the spanmetrics connector's default: 160 buckets span the 1000 bins of a
// probe at scale 4, buckets 4.4 % wide.
const DefaultExponentialMaxSize = 160

// exponentialMaxSize returns the configured max_size, 0 for explicit
// buckets.
func (c *Config) exponentialMaxSize() int {
	switch {
	case c.Histogram.Exponential == nil:
		return 0
	case c.Histogram.Exponential.MaxSize == 0:
		return DefaultExponentialMaxSize
	}
	return c.Histogram.Exponential.MaxSize
}

// NewDefaultConfig returns the analysis options with their defaults.
func NewDefaultConfig() Config {
	return Config{
		Config: analysis.Config{
			Interval:         DefaultInterval,
			History:          DefaultHistory,
			MaxProbes:        DefaultMaxProbes,
			ProbeIdleTimeout: DefaultProbeIdleTimeout,
			Quantiles:        slices.Clone(analysis.DefaultQuantiles),
			RearmWindows:     DefaultRearmWindows,
			// On: selecting them costs no measurable time on the span
			// path (the README's performance section).
			Exemplars: analysis.ExemplarConfig{Enabled: true},
			Snapshot: analysis.SnapshotConfig{
				Enabled:  true,
				Before:   DefaultBefore,
				After:    DefaultAfter,
				MaxFiles: DefaultSnapshotMaxFiles,
				MaxBytes: DefaultSnapshotMaxBytes,
			},
		},
		MaxRequestBytes: DefaultMaxRequestBytes,
		CDFPoints:       DefaultCDFPoints,
		// A service keeps its place as long as a probe that no
		// configuration names is kept (services::idle_timeout 0).
		Services: ServicesConfig{MaxPerProbe: DefaultServicesMaxPerProbe},
	}
}

// Unmarshal decodes the deltaq exporter's section of the collector
// configuration into cfg, a pointer to its configuration struct (in which
// a Config is squashed); the connector, whose probes also match spans,
// decodes its own. It first refuses what decoding would change without
// a word (see package confcheck): a duration written without a unit
// (`interval: 1` would be 1ns) and an integer its field cannot hold
// (`history: 100000000000000000000` would become -9223372036854775808),
// each quoted as written, for example
//
//	probes["checkout"].dmax: 500 has no unit; write a duration such as 500ms or 2s
//
// The connector's options of a probe it matches in the spans (match,
// failure, dmax: auto) are refused as such: the component reads the
// instances a deltaq processor marks (the exporter), where the checks alone
// took a probe's failure rule for the failure trigger ("write it under
// triggers") and dmax: auto for a malformed duration.
//
// Config itself has no Unmarshal method: the collector would call it, on a
// squashed field, with the whole section.
func Unmarshal(conf *confmap.Conf, cfg any) error {
	if conf == nil {
		return nil
	}
	raw := confcheck.Raw(conf)
	raw, matchErrs := takeMatchOptions(raw)
	if err := confcheck.CheckRaw(raw, cfg, nil); err != nil || matchErrs != nil {
		return errors.Join(matchErrs, err)
	}
	return conf.Unmarshal(cfg)
}

// takeMatchOptions returns raw without the connector's options of probes
// matched in the spans, and their problems; raw as it is when it has none.
func takeMatchOptions(raw map[string]any) (map[string]any, error) {
	probes, ok := confcheck.Value(raw["probes"]).(map[string]any)
	if !ok {
		return raw, nil
	}
	var errs []error
	var rest map[string]any
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		entry, ok := confcheck.Value(probes[name]).(map[string]any)
		if !ok {
			continue // the decoder reports it
		}
		var clean map[string]any
		for _, k := range connectorOnly(entry) {
			if err := connectorOnlyError(name, k, entry); err != nil {
				errs = append(errs, err) // nil: said in dmax's message
			}
			if clean == nil {
				clean = maps.Clone(entry)
			}
			delete(clean, k)
		}
		if clean == nil {
			continue
		}
		if rest == nil {
			rest = maps.Clone(probes)
		}
		rest[name] = clean
	}
	if rest == nil {
		return raw, nil
	}
	raw = maps.Clone(raw)
	raw["probes"] = rest
	return raw, errors.Join(errs...)
}

// autoRangingKeys are the options of dmax: auto (autorange.Config).
var autoRangingKeys = []string{"dmax_min", "dmax_max", "dmax_sample", "dmax_period", "dmax_changes_per_hour"}

// connectorOnly returns the keys of a probe's entry that only a probe the
// deltaq connector matches (or the processor's) reads: match, failure,
// dmax when it is auto, and the options of dmax: auto.
func connectorOnly(entry map[string]any) []string {
	var keys []string
	for _, k := range append([]string{"dmax", "failure", "match"}, autoRangingKeys...) {
		if v, has := entry[k]; has && (k != "dmax" || confcheck.IsWord(v, "auto")) {
			keys = append(keys, k)
		}
	}
	return keys
}

// connectorOnlyError says of key k of probe name that this component does
// not read it, and where it belongs. The options of dmax: auto are named in
// dmax's message when dmax is auto (nil for them), each on its own otherwise.
func connectorOnlyError(name, k string, entry map[string]any) error {
	p := confpath.Fields("probes").Key(name).Field(k)
	auto := confcheck.IsWord(entry["dmax"], "auto")
	switch {
	case k == "dmax":
		leave := []string{"dmax"}
		for _, ak := range autoRangingKeys {
			if _, set := entry[ak]; set {
				leave = append(leave, ak)
			}
		}
		return confpath.Errorf(p, "auto ranges a probe the deltaq connector matches in the spans, or the deltaq processor's "+
			"(dmax: auto on its probe), whose layout this component takes: leave %s and bins out here", strings.Join(leave, ", "))
	case slices.Contains(autoRangingKeys, k) && auto:
		return nil
	case slices.Contains(autoRangingKeys, k):
		return confpath.Errorf(p, "an option of dmax: auto, which ranges a probe the deltaq connector matches in the spans, "+
			"or the deltaq processor's: this component takes the probe's layout from dmax and bins, or from the processor; leave it out")
	}
	return confpath.Errorf(p, "an option of a probe the deltaq connector matches in the spans, not of this component, "+
		"which reads the instances the deltaq processor marks: set %s on the processor's probe (or use the connector)", k)
}

// Check checks the options once, for a component's Validate: the bounds
// (checkBounds), the snapshot directory, and the analysis options
// (analysis.Config.Check), the outcome diagram included, so that its own
// error messages (file:line:col) reach the user at start-up. Config has no
// Validate method: the collector validates every field of a component's
// configuration, and a squashed Config would be checked twice, its
// messages prefixed with "config".
func (c *Config) Check() error { return c.CheckOwn(nil) }

// binsWithinBounds returns the probes with the bins beyond the maximum of
// checkBounds cut to it, for the analysis's check, which has a maximum of
// its own: one problem, said once, with the component's maximum.
func (c *Config) binsWithinBounds() map[string]analysis.ProbeConfig {
	var out map[string]analysis.ProbeConfig
	for name, pc := range c.Probes {
		if pc.Bins <= deltaq.MaxThesisBins {
			continue
		}
		if out == nil {
			out = maps.Clone(c.Probes)
		}
		pc.Bins = deltaq.MaxThesisBins
		out[name] = pc
	}
	if out == nil {
		return c.Probes
	}
	return out
}

// CheckOwn is Check for a component that counts, besides the probes its
// probes declare with a layout, the probes own: the probes the connector
// matches in the spans, those with dmax: auto among them, whose layout
// its probes do not hold. An outcome of the diagram one slip away from
// one of them is refused as misspelled, as the start refuses it.
func (c *Config) CheckOwn(own []string) error {
	var errs []error
	if err := c.checkBounds(); err != nil {
		errs = append(errs, err)
	}
	if c.WindowsOnly && !c.EmitWindows {
		errs = append(errs, confpath.Errorf(confpath.Fields("windows_only"), "needs emit_windows: true (it leaves the windows alone in the output)"))
	}
	if c.Snapshot.Directory != "" {
		if st, err := os.Stat(c.Snapshot.Directory); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("snapshot", "directory"), err))
		} else if !st.IsDir() {
			errs = append(errs, confpath.Errorf(confpath.Fields("snapshot", "directory"), `%q is not a directory`, c.Snapshot.Directory))
		}
	}
	ac := c.Config
	ac.Interval = max(ac.Interval, 0) // a negative one is checkLive's
	ac.Probes = c.binsWithinBounds()
	if err := ac.Check(); err != nil {
		errs = append(errs, err)
	} else if typos, _ := c.misspelled(own); len(typos) > 0 {
		errs = append(errs, typos)
	}
	return errors.Join(errs...)
}

// misspelled returns the probes that the diagram and the entries of probes
// name and that neither produced (the probes of the deltaq processors) nor
// the component's own probes define: those that look misspelled
// (analysis.UnknownProbe.IsTypo, with defined probes to compare them
// with), and the names of the others, whose instances may come from
// another collector. The component's own probes are those it declares
// with a layout (dmax and bins, or binning): the probes a connector
// matches in the spans, and a gateway's.
//
// Check runs it with no processor's probes, so that `otelcol validate`
// refuses, like the start, an outcome of the diagram one slip away from one
// of the component's own probes, in a collector with no deltaq processor
// (validate makes the components without starting them: only a deltaq
// processor, once made, runs the readers' checks). A name so close to an
// own probe is refused even if a processor counts it: rename one of them.
func (c *Config) misspelled(produced []string) (typos analysis.ReferenceError, missing []string) {
	defined := append(slices.Clone(produced), c.OwnProbes()...)
	unknown, ok := c.Config.CheckReferences(defined).(analysis.ReferenceError)
	if !ok {
		return nil, nil // no unknown probe, or a configuration error, which Check reported
	}
	for _, u := range unknown {
		if len(defined) > 0 && u.IsTypo() {
			typos = append(typos, u)
		} else {
			missing = append(missing, u.Name)
		}
	}
	return typos, missing
}

// CheckProduced refuses, as the collector does, a probe that the diagram
// or the entries of probes name and that looks misspelled given produced,
// the probes of every deltaq processor of the collector and those the
// component matches in the spans (misspelled): the check each processor
// runs once its probes are registered, for the commands that read a
// configuration without making the collector's components.
func (c *Config) CheckProduced(produced []string) error {
	if typos, _ := c.misspelled(produced); len(typos) > 0 {
		return typos
	}
	return nil
}

// OwnProbes returns, sorted, the probes the component counts itself: those
// its probes declare with a layout (dmax and bins, or binning) — the
// probes a connector matches in the spans, a gateway's — and matched, the
// probes a connector matches whose layout its probes do not hold (dmax:
// auto).
func (c *Config) OwnProbes(matched ...string) []string {
	names := slices.Clone(matched)
	for name, pc := range c.Probes {
		if pc.DMax > 0 && pc.Bins > 0 || pc.Binning != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// engineConfig returns the analysis options of c for the analysis engine of
// a collector whose deltaq processors registered their probes in layouts:
// those probes are configured probes too, with the processor's layout, and
// never take one of the max_probes places.
func (c *Config) engineConfig(layouts *contract.Layouts) analysis.Config {
	ac := c.Config
	ac.ConfiguredProbes = layouts.RegisteredProbes()
	ac.LookupLayout = func(probe string) (deltaq.Layout, bool) {
		l, ok := layouts.LookupLayout(probe)
		if !ok || !l.Valid() {
			return deltaq.Layout{}, false
		}
		return l, true
	}
	ac.LayoutGeneration = layouts.Generation
	ac.WindowCounts = c.EmitWindows
	return ac
}
