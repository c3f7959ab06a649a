package analysis

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
)

// Defaults applied by New to zero fields.
const (
	DefaultHistory      = 30
	DefaultMaxProbes    = 1000
	DefaultRearmWindows = 1
)

// DefaultQuantiles are the quantiles reported when Config.Quantiles is empty.
var DefaultQuantiles = []float64{0.25, 0.5, 0.75, 0.9, 0.99}

// Config configures an Engine.
type Config struct {
	// Interval is the window length (thesis 3.6, "polling rate"). Zero puts
	// every instance in one window that Flush closes (offline analysis).
	Interval time.Duration
	// Lag is how long after its end a window closes (thesis 3.6: one
	// interval in the thesis). Ignored when Interval is zero.
	Lag time.Duration
	// History is K, the number of past observed ΔQs the mean and the 95 %
	// band are computed over (thesis 4.1.5). Default DefaultHistory.
	History int
	// MaxProbes bounds the number of probes tracked at a time that no
	// configuration names; instances of further such probes are dropped
	// (DropProbeLimit). Configured probes — Probes, the diagram's probes,
	// ConfiguredProbes and the probes LookupLayout knows — are always
	// tracked and do not count. Default DefaultMaxProbes.
	MaxProbes int
	// ProbeIdleTimeout is how long a probe that no configuration names is
	// kept without an instance: then it is forgotten — its place, history,
	// totals and trigger states — so that names seen once do not hold a
	// place for ever. It is measured from the close of the window of the
	// probe's last instance, and checked when windows close. Zero keeps
	// such probes for the life of the engine.
	ProbeIdleTimeout time.Duration
	// ConfiguredProbes names probes configured outside this Config (the
	// deltaq processors of the process): they are tracked from the start,
	// like the probes of Probes.
	ConfiguredProbes []string
	// LookupLayout, if not nil, returns the dMax and bin count configured
	// outside this Config for a probe (by the deltaq processor that
	// produces it). A probe's layout is, in this order: Probes[name].DMax
	// and Bins; LookupLayout(name); the layout of the probe's first
	// accepted instance. It is called when a probe is first seen, under
	// the engine's ingestion lock, and must be safe for concurrent use.
	LookupLayout func(probe string) (dmax time.Duration, bins int, ok bool)
	// Quantiles are reported for the observed and calculated ΔQs. Default
	// DefaultQuantiles.
	Quantiles []float64
	// Diagram, if not nil, is a validated outcome diagram: its probes get a
	// calculated ΔQ from the observed ΔQs of their components (thesis 3.4,
	// 4.1.1).
	Diagram *diagram.Diagram
	// Probes holds per-probe settings by probe name.
	Probes map[string]ProbeConfig
	// RearmWindows is the number of consecutive windows in which a fired
	// trigger's condition must be false before the trigger can fire again.
	// Default DefaultRearmWindows.
	RearmWindows int
	// Snapshot configures snapshots (thesis 3.5.1).
	Snapshot SnapshotConfig
}

// ProbeConfig holds one probe's settings.
type ProbeConfig struct {
	// DMax and Bins fix the probe's histogram (bin width DMax/Bins): they
	// take precedence over LookupLayout and over the instances' own dMax
	// and bins. Both or neither.
	DMax time.Duration
	Bins int
	// QTA is the probe's requirement, or nil.
	QTA *QTA
	// Triggers selects the probe's triggers.
	Triggers Triggers
}

// QTA is a quantitative timeliness agreement in the thesis's simplified form
// (4.1.3, 2.1.6): by each Delay at least P of the instances have completed
// successfully, and at most MaxFailure of them fail or time out. The curve a
// ΔQ plot draws for it is deltaq.QTA.RequiredSteps: the points, then a last
// step to 1 − MaxFailure at dMax.
type QTA struct {
	Points     []QTAPoint
	MaxFailure float64
}

// QTAPoint is one step of a QTA.
type QTAPoint struct {
	Delay time.Duration
	P     float64
}

// Triggers selects the triggers of a probe (thesis 3.5; the conditions are
// those of the draft's section 5.6).
type Triggers struct {
	// QTA fires when the observed ΔQ is below a QTA step: F_obs(dₖ) < pₖ for
	// some point k (draft 5.6.2 "Percentiles").
	QTA bool
	// Failure fires when the failure ratio exceeds the QTA's MaxFailure,
	// i.e. success(ΔQ_obs) < success(QTA) (draft 5.6.2 "Failure").
	Failure bool
	// MaxInstances fires the load trigger when a window holds more than
	// MaxInstances instances (draft 5.6.1); 0 is off.
	MaxInstances int64
	// MaxDivergence fires when the distance between the observed and the
	// calculated ΔQ of the probe exceeds it; 0 is off. Divergence is the
	// thesis's sign of dependent behaviour near overload (4.1.5, 2.1.8).
	MaxDivergence float64
}

// SnapshotConfig configures snapshots (thesis 3.5.1, 4.4.1).
type SnapshotConfig struct {
	// Enabled turns snapshots on.
	Enabled bool
	// Before is the number of windows before the trigger's window kept in a
	// snapshot.
	Before int
	// After is the number of windows after the trigger's window recorded
	// before the snapshot is complete.
	After int
}

// Validate checks the configuration and says which field is wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval must be ≥ 0, got %s", c.Interval))
	}
	if c.Lag < 0 {
		errs = append(errs, fmt.Errorf("lag must be ≥ 0, got %s", c.Lag))
	}
	if c.History < 0 {
		errs = append(errs, fmt.Errorf("history must be ≥ 0, got %d", c.History))
	}
	if c.MaxProbes < 0 {
		errs = append(errs, fmt.Errorf("max_probes must be ≥ 0, got %d", c.MaxProbes))
	}
	if c.ProbeIdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("probe_idle_timeout must be ≥ 0, got %s", c.ProbeIdleTimeout))
	}
	for _, q := range c.Quantiles {
		if !(q > 0 && q < 1) {
			errs = append(errs, fmt.Errorf("quantile %v is not in (0, 1)", q))
		}
	}
	if c.RearmWindows < 0 {
		errs = append(errs, fmt.Errorf("rearm_windows must be ≥ 0, got %d", c.RearmWindows))
	}
	if c.Snapshot.Before < 0 || c.Snapshot.After < 0 {
		errs = append(errs, fmt.Errorf("snapshot before/after must be ≥ 0, got %d/%d", c.Snapshot.Before, c.Snapshot.After))
	}
	if c.Diagram != nil && c.Diagram.Probes() == nil {
		errs = append(errs, errors.New("the outcome diagram has not been validated"))
	}
	names := make([]string, 0, len(c.Probes))
	for n := range c.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := c.Probes[n].validate(); err != nil {
			errs = append(errs, fmt.Errorf("probe %q: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (pc ProbeConfig) validate() error {
	var errs []error
	if (pc.DMax > 0) != (pc.Bins > 0) {
		errs = append(errs, errors.New("dmax and bins must be set together"))
	}
	if pc.DMax < 0 || pc.Bins < 0 {
		errs = append(errs, fmt.Errorf("dmax %s and bins %d must not be negative", pc.DMax, pc.Bins))
	}
	if pc.Bins > deltaq.MaxBins {
		errs = append(errs, fmt.Errorf("bins %d is more than %d", pc.Bins, deltaq.MaxBins))
	}
	if pc.QTA != nil {
		if err := pc.QTA.validate(); err != nil {
			errs = append(errs, fmt.Errorf("qta: %w", err))
		}
	}
	if (pc.Triggers.QTA || pc.Triggers.Failure) && pc.QTA == nil {
		errs = append(errs, errors.New("the qta and failure triggers need a qta"))
	}
	if pc.Triggers.QTA && pc.QTA != nil && len(pc.QTA.Points) == 0 {
		errs = append(errs, errors.New("the qta trigger needs qta points"))
	}
	if pc.Triggers.MaxInstances < 0 {
		errs = append(errs, fmt.Errorf("max_instances must be ≥ 0, got %d", pc.Triggers.MaxInstances))
	}
	if !(pc.Triggers.MaxDivergence >= 0 && pc.Triggers.MaxDivergence <= 1) {
		errs = append(errs, fmt.Errorf("max_divergence must be in [0, 1], got %v", pc.Triggers.MaxDivergence))
	}
	return errors.Join(errs...)
}

// Requirement returns the QTA as a deltaq.QTA (delays in seconds), checked by
// deltaq.NewQTA: delays positive and increasing, probabilities in (0, 1]
// and non-decreasing, none above 1 − MaxFailure.
func (q *QTA) DeltaQ() (deltaq.QTA, error) {
	steps := make([]deltaq.Step, len(q.Points))
	for i, p := range q.Points {
		steps[i] = deltaq.Step{Delay: p.Delay.Seconds(), P: p.P}
	}
	for i := 1; i < len(q.Points); i++ {
		if q.Points[i].Delay <= q.Points[i-1].Delay {
			return deltaq.QTA{}, fmt.Errorf("point %d at %s does not follow %s (delays must increase)", i, q.Points[i].Delay, q.Points[i-1].Delay)
		}
	}
	return deltaq.NewQTA(steps, q.MaxFailure)
}

func (q *QTA) validate() error {
	_, err := q.DeltaQ()
	return err
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.MaxProbes == 0 {
		c.MaxProbes = DefaultMaxProbes
	}
	if len(c.Quantiles) == 0 {
		c.Quantiles = DefaultQuantiles
	}
	c.Quantiles = slices.Clone(c.Quantiles)
	slices.Sort(c.Quantiles)
	if c.RearmWindows == 0 {
		c.RearmWindows = DefaultRearmWindows
	}
	if c.Interval == 0 {
		c.Lag = 0
	}
	return c
}
