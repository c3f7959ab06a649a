package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/confcheck"
	"github.com/deltaq-otel/deltaq/internal/outcome"
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
	// maxLagIntervals bounds the lag, and with it the number of open windows
	// (⌈lag/interval⌉ + 2).
	maxLagIntervals = 16
)

// Config is the analysis configuration of the deltaq exporter and the
// deltaq connector, squashed into each component's configuration: the
// options sit at the top level of the component's section.
type Config struct {
	// Interval is the polling interval: the length of a window (the thesis,
	// sections 3.6 and 4.4.1, "polling rate").
	Interval time.Duration `mapstructure:"interval"`
	// Lag is how long after its end a window closes, so that instances that
	// end just before the boundary but arrive after it still count (the
	// thesis, section 3.6). Zero means one interval, the thesis's choice.
	Lag time.Duration `mapstructure:"lag"`
	// History is K, the number of past windows the mean and 95 % band are
	// computed over (the thesis, section 4.1.5).
	History int `mapstructure:"history"`
	// MaxProbes bounds the number of probes tracked that no configuration
	// names (neither these probes, nor the diagram, nor a deltaq processor
	// of this collector); instances of further such probes are dropped and
	// counted. Configured probes never count against it.
	MaxProbes int `mapstructure:"max_probes"`
	// ProbeIdleTimeout is how long a probe that no configuration names is
	// kept after its last instance; then it is forgotten and frees its slot.
	ProbeIdleTimeout time.Duration `mapstructure:"probe_idle_timeout"`
	// MaxRequestBytes bounds the size of one batch of ΔQ output: a window
	// whose metrics or logs are larger goes out in several batches.
	MaxRequestBytes int `mapstructure:"max_request_bytes"`
	// Quantiles are the q reported by the deltaq.quantile gauge.
	Quantiles []float64 `mapstructure:"quantiles"`
	// CDFPoints is the number of deltaq.le points per curve of the
	// deltaq.cdf gauge; 0 reports every bin edge.
	CDFPoints int `mapstructure:"cdf_points"`

	// Diagram is the outcome diagram (.dq text, the thesis, section 4.3)
	// inline.
	Diagram string `mapstructure:"diagram"`
	// DiagramFile is the path of a .dq file; exclusive with Diagram.
	DiagramFile string `mapstructure:"diagram_file"`

	// Probes holds per-probe settings, keyed by probe name.
	Probes map[string]ProbeConfig `mapstructure:"probes"`

	// RearmWindows is the number of consecutive windows in which a fired
	// trigger's condition must be false before it can fire again.
	RearmWindows int `mapstructure:"rearm_windows"`
	// Snapshot configures the snapshot that follows a trigger.
	Snapshot SnapshotConfig `mapstructure:"snapshot"`
}

// ProbeConfig holds one probe's settings.
type ProbeConfig struct {
	// DMax and Bins override the dMax and bin count carried by the instances
	// (deltaq.dmax_ns, deltaq.bins). Both or neither.
	DMax time.Duration `mapstructure:"dmax"`
	Bins int           `mapstructure:"bins"`
	// QTA is the probe's quantitative timeliness agreement.
	QTA QTAConfig `mapstructure:"qta"`
	// Triggers selects the probe's triggers; all are off by default (the
	// thesis, section 4.4.1).
	Triggers TriggersConfig `mapstructure:"triggers"`
}

// QTAConfig is a QTA as in the thesis, section 4.1.3: the delays by which
// given fractions of instances must have completed, and the largest
// fraction of instances that may fail or time out.
type QTAConfig struct {
	// Points are the steps of the QTA: at Delay, at least P of the instances
	// have completed successfully.
	Points []QTAPoint `mapstructure:"points"`
	// MaxFailure is the largest failure ratio (timeouts + failures over all
	// instances) the QTA accepts, in [0, 1].
	MaxFailure float64 `mapstructure:"max_failure"`
}

// QTAPoint is one step of a QTA.
type QTAPoint struct {
	Delay time.Duration `mapstructure:"delay"`
	P     float64       `mapstructure:"p"`
}

// TriggersConfig selects a probe's triggers (the thesis, section 3.5).
type TriggersConfig struct {
	// QTA fires when the observed ΔQ falls below a QTA step:
	// F_obs(delay) < p for some point.
	QTA bool `mapstructure:"qta"`
	// Failure fires when the failure ratio exceeds qta.max_failure.
	Failure bool `mapstructure:"failure"`
	// MaxInstances fires the load trigger when a window holds more
	// instances than this; 0 turns it off.
	MaxInstances int64 `mapstructure:"max_instances"`
	// MaxDivergence fires when the distance between the observed and the
	// calculated ΔQ exceeds this; 0 turns it off.
	MaxDivergence float64 `mapstructure:"max_divergence"`
}

// SnapshotConfig configures snapshots (the thesis, sections 3.5.1 and
// 4.4.1).
type SnapshotConfig struct {
	// Enabled turns snapshots on.
	Enabled bool `mapstructure:"enabled"`
	// Before is the number of windows before the trigger's window that a
	// snapshot holds.
	Before int `mapstructure:"before"`
	// After is how long recording continues after the trigger's window,
	// rounded up to whole windows.
	After time.Duration `mapstructure:"after"`
	// Directory, when set, receives one JSON file per snapshot.
	Directory string `mapstructure:"directory"`
	// MaxFiles and MaxBytes bound the snapshot files kept in Directory:
	// past either, the oldest snapshot files are removed.
	MaxFiles int   `mapstructure:"max_files"`
	MaxBytes int64 `mapstructure:"max_bytes"`
}

// NewDefaultConfig returns the analysis options with their defaults.
func NewDefaultConfig() Config {
	return Config{
		Interval:         DefaultInterval,
		History:          DefaultHistory,
		MaxProbes:        DefaultMaxProbes,
		ProbeIdleTimeout: DefaultProbeIdleTimeout,
		MaxRequestBytes:  DefaultMaxRequestBytes,
		Quantiles:        append([]float64(nil), analysis.DefaultQuantiles...),
		CDFPoints:        DefaultCDFPoints,
		RearmWindows:     DefaultRearmWindows,
		Snapshot: SnapshotConfig{
			Enabled:  true,
			Before:   DefaultBefore,
			After:    DefaultAfter,
			MaxFiles: DefaultSnapshotMaxFiles,
			MaxBytes: DefaultSnapshotMaxBytes,
		},
	}
}

// Unmarshal decodes a component's section of the collector configuration
// into cfg, a pointer to the component's configuration struct (in which a
// Config is squashed). It first refuses what decoding would change without
// a word (see package confcheck): a duration written without a unit
// (`interval: 1` would be 1ns) and an integer its field cannot hold
// (`history: 100000000000000000000` would become -9223372036854775808),
// each quoted as written, for example
//
//	"probes::checkout::dmax": 500 has no unit; write a duration such as 500ms or 2s
//
// Config itself has no Unmarshal method: the collector would call it, on a
// squashed field, with the whole section.
func Unmarshal(conf *confmap.Conf, cfg any) error {
	if conf == nil {
		return nil
	}
	if err := confcheck.Check(conf, cfg, quotedKeys); err != nil {
		return err
	}
	return conf.Unmarshal(cfg)
}

// quotedKeys writes a path as the components' messages do: "snapshot::after".
func quotedKeys(p confcheck.Path) string { return strconv.Quote(p.Keys()) }

// Check checks the analysis options once, for a component's Validate: the
// bounds (CheckBounds), the snapshot directory, and everything
// AnalysisConfig checks, the outcome diagram included, so that its own
// error messages (file:line:col) reach the user at start-up. Config has no
// Validate method: the collector validates every field of a component's
// configuration, and a squashed Config would be checked twice, its
// messages prefixed with "config".
func (c *Config) Check() error {
	var errs []error
	if err := c.CheckBounds(); err != nil {
		errs = append(errs, err)
	}
	if c.Snapshot.Directory != "" {
		if st, err := os.Stat(c.Snapshot.Directory); err != nil {
			errs = append(errs, fmt.Errorf(`"snapshot::directory": %w`, err))
		} else if !st.IsDir() {
			errs = append(errs, fmt.Errorf(`"snapshot::directory": %q is not a directory`, c.Snapshot.Directory))
		}
	}
	if _, err := c.AnalysisConfig(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AnalysisConfig checks the analysis part of the configuration and converts
// it into the analysis engine's configuration, parsing the outcome diagram.
// The deltaq analyze command uses it on the exporters.deltaq section of a
// collector configuration.
func (c *Config) AnalysisConfig() (analysis.Config, error) {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf(`"interval" must be positive, got %s`, c.Interval))
	}
	lag := c.Lag
	if lag == 0 {
		lag = c.Interval
	}
	if c.Lag < 0 {
		errs = append(errs, fmt.Errorf(`"lag" must be ≥ 0, got %s`, c.Lag))
	} else if c.Interval > 0 && lag > maxLagIntervals*c.Interval {
		errs = append(errs, fmt.Errorf(`"lag" %s is more than %d intervals: it would keep too many windows open`, c.Lag, maxLagIntervals))
	}
	if c.Snapshot.After < 0 {
		errs = append(errs, fmt.Errorf(`"snapshot::after" must be ≥ 0, got %s`, c.Snapshot.After))
	}
	d, err := c.parseDiagram()
	if err != nil {
		errs = append(errs, err)
	}
	after := 0
	if c.Interval > 0 && c.Snapshot.After > 0 {
		after = int((c.Snapshot.After + c.Interval - 1) / c.Interval)
	}
	ac := analysis.Config{
		Interval:         c.Interval,
		Lag:              lag,
		History:          c.History,
		MaxProbes:        c.MaxProbes,
		ProbeIdleTimeout: c.ProbeIdleTimeout,
		// The probes of the deltaq processors of this collector are
		// configured probes too: their layout is the processor's, and they
		// never take one of the max_probes places.
		ConfiguredProbes: outcome.RegisteredProbes(),
		LookupLayout:     processorLayout,
		Quantiles:        c.Quantiles,
		Diagram:          d,
		RearmWindows:     c.RearmWindows,
		Snapshot: analysis.SnapshotConfig{
			Enabled: c.Snapshot.Enabled,
			Before:  c.Snapshot.Before,
			After:   after,
		},
	}
	if len(c.Probes) > 0 {
		ac.Probes = make(map[string]analysis.ProbeConfig, len(c.Probes))
	}
	for name, pc := range c.Probes {
		ac.Probes[name] = pc.analysis()
	}
	if len(errs) == 0 {
		if err := ac.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return analysis.Config{}, errors.Join(errs...)
	}
	return ac, nil
}

// parseDiagram parses Diagram or DiagramFile; nil when neither is set.
func (c *Config) parseDiagram() (*diagram.Diagram, error) {
	var (
		d   *diagram.Diagram
		err error
	)
	switch {
	case c.Diagram != "" && c.DiagramFile != "":
		return nil, errors.New(`set "diagram" or "diagram_file", not both`)
	case c.Diagram != "":
		if d, err = diagram.Parse("diagram", []byte(c.Diagram)); err != nil {
			return nil, fmt.Errorf(`"diagram": %w`, err)
		}
	case c.DiagramFile != "":
		src, err := os.ReadFile(c.DiagramFile)
		if err != nil {
			return nil, fmt.Errorf(`"diagram_file": %w`, err)
		}
		if d, err = diagram.Parse(c.DiagramFile, src); err != nil {
			return nil, fmt.Errorf(`"diagram_file": %w`, err)
		}
	default:
		return nil, nil
	}
	if len(d.Probes()) == 0 {
		// A file that parses but defines nothing (empty, or only comments)
		// is almost certainly the wrong file: say so rather than run
		// without calculated ΔQs.
		where := `"diagram"`
		if c.DiagramFile != "" {
			where = fmt.Sprintf(`"diagram_file" %s`, c.DiagramFile)
		}
		return nil, fmt.Errorf("%s: the outcome diagram defines no outcome", where)
	}
	return d, nil
}

// processorLayout is analysis.Config.LookupLayout over the probes the
// deltaq processors of this process registered (outcome.LookupLayout).
func processorLayout(probe string) (time.Duration, int, bool) {
	l, ok := outcome.LookupLayout(probe)
	if !ok || !l.Valid() {
		return 0, 0, false
	}
	return time.Duration(l.DMaxNs), l.Bins, true
}

// analysis converts a probe's settings; a QTA is set when it has a point
// or a failure bound.
func (pc ProbeConfig) analysis() analysis.ProbeConfig {
	out := analysis.ProbeConfig{
		DMax: pc.DMax,
		Bins: pc.Bins,
		Triggers: analysis.Triggers{
			QTA:           pc.Triggers.QTA,
			Failure:       pc.Triggers.Failure,
			MaxInstances:  pc.Triggers.MaxInstances,
			MaxDivergence: pc.Triggers.MaxDivergence,
		},
	}
	if len(pc.QTA.Points) > 0 || pc.QTA.MaxFailure != 0 {
		q := &analysis.QTA{MaxFailure: pc.QTA.MaxFailure}
		for _, p := range pc.QTA.Points {
			q.Points = append(q.Points, analysis.QTAPoint{Delay: p.Delay, P: p.P})
		}
		out.QTA = q
	}
	return out
}
