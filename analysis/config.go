// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Defaults applied by New to zero fields.
const (
	DefaultHistory      = 30
	DefaultMaxProbes    = 1000
	DefaultRearmWindows = 1

	// DefaultSlackTrendWindows is W of the slack trend when
	// slack_trend::windows is zero or the trigger is off.
	DefaultSlackTrendWindows = 10
	// MaxSlackTrendWindows bounds slack_trend::windows.
	MaxSlackTrendWindows = 1000
	// MaxDivergencePool bounds divergence::pool: a probe keeps the
	// observed and calculated ΔQs of the pooled windows and the calculated
	// ΔQ's two bounds, four ΔQs a window (at 400 and 800 bins, about 40 kB;
	// 60 windows, 2.4 MB a probe). A window of tens of instances needs tens
	// of windows to see a moderate dependence (README, "Early warning").
	MaxDivergencePool = 60
	// MaxDivergenceWindows bounds divergence::windows.
	MaxDivergenceWindows = 1000
)

// DefaultDivergenceAlpha is the divergence test's level when
// max_divergence turns the trigger on without divergence::alpha.
const DefaultDivergenceAlpha = 0.01

// DefaultSlackTrendConfidence is slack_trend::confidence when zero.
const DefaultSlackTrendConfidence = 0.99

// MaxConfidence bounds the confidence options: beyond it a trigger would
// need more instances than a window holds to ever fire.
const MaxConfidence = 0.9999

// DefaultQuantiles are the quantiles reported when Config.Quantiles is empty.
var DefaultQuantiles = []float64{0.25, 0.5, 0.75, 0.9, 0.99}

// MaxLagIntervals bounds Config.Lag to that many intervals: the engine keeps
// ⌈lag/interval⌉ + 3 windows open (and ⌈LateAdvance/interval⌉ more).
const MaxLagIntervals = 16

// Config configures an Engine. It is also the analysis part of the
// configuration of the deltaq exporter and connector, which squash it into
// their own: the mapstructure tags are the options' names there, and the
// fields have the shapes a user writes (durations, the diagram's text, a
// QTA that is absent when zero). Check checks it; New checks it again and
// compiles it (parses the diagram, turns durations into windows).
type Config struct {
	// Interval is the window length (the thesis, section 3.6, "polling
	// rate"). Zero puts every instance in one window that Flush closes
	// (offline analysis).
	Interval time.Duration `mapstructure:"interval"`
	// Lag is how long after its end a window closes, so that instances that
	// end just before the boundary but arrive after it still count (the
	// thesis, section 3.6). Zero means one interval, the thesis's choice; at
	// most 16 intervals. Ignored when Interval is zero.
	Lag time.Duration `mapstructure:"lag"`
	// History is K, the number of past observed ΔQs the mean and the 95 %
	// band are computed over (the thesis, section 4.1.5). Zero means
	// DefaultHistory.
	History int `mapstructure:"history"`
	// MaxProbes bounds the number of probes tracked at a time that no
	// configuration names; instances of further such probes are dropped
	// (DropProbeLimit). Configured probes — Probes, the diagram's probes,
	// ConfiguredProbes and the probes LookupLayout knows — are always
	// tracked and do not count. Zero means DefaultMaxProbes.
	MaxProbes int `mapstructure:"max_probes"`
	// ProbeIdleTimeout is how long a probe that no configuration names is
	// kept without an instance: then it is forgotten — its place, history,
	// totals and trigger states — so that names seen once do not hold a
	// place for ever. It is measured from the close of the window of the
	// probe's last instance, and checked when windows close. Zero keeps
	// such probes for the life of the engine.
	ProbeIdleTimeout time.Duration `mapstructure:"probe_idle_timeout"`
	// Quantiles are reported for the observed and calculated ΔQs, each in
	// (0, 1). Empty means DefaultQuantiles.
	Quantiles []float64 `mapstructure:"quantiles"`

	// Diagram is an outcome diagram (.dq text, the thesis, section 4.3)
	// inline: its probes get a calculated ΔQ from the observed ΔQs of their
	// components (the thesis, sections 3.4 and 4.1.1).
	Diagram string `mapstructure:"diagram"`
	// DiagramFile is the path of a .dq file; exclusive with Diagram.
	DiagramFile string `mapstructure:"diagram_file"`

	// Probes holds per-probe settings, keyed by probe name.
	Probes map[string]ProbeConfig `mapstructure:"probes"`

	// Gateway bounds and checks the windows of other engines (agents)
	// given to Engine.AddWindow (merge.go).
	Gateway GatewayConfig `mapstructure:"gateway"`

	// WhatIf holds what-if scenarios of the diagram, scenario name →
	// outcome probe → intervention on that outcome's observed ΔQ X (the
	// expressions of whatif.Help: "0.5*X+1ms", a distribution,
	// "+ never 5%", "remove"). Every window, each calculated probe the
	// scenario touches also gets the ΔQ calculated with the scenario's
	// interventions applied (ProbeResult.WhatIf). At most
	// MaxWhatIfScenarios; it needs a diagram.
	WhatIf map[string]map[string]string `mapstructure:"whatif"`

	// RearmWindows is the number of consecutive windows in which a fired
	// trigger's condition must be false before the trigger can fire again.
	// Zero means DefaultRearmWindows.
	RearmWindows int `mapstructure:"rearm_windows"`
	// Snapshot configures the snapshot that follows a trigger.
	Snapshot SnapshotConfig `mapstructure:"snapshot"`
	// Exemplars names instances of each window on the observed histogram
	// and the outcome counters (ExemplarConfig); off by default.
	Exemplars ExemplarConfig `mapstructure:"exemplars"`
	// WorstInstances is how many of a window's slowest successes, timeouts
	// and failures of a probe (each) its trigger and snapshot records name
	// by trace id (WorstInstances). Zero means DefaultWorstInstances; at
	// most MaxWorstInstances.
	WorstInstances int `mapstructure:"worst_instances"`
	// MaxAdjustedCount bounds the adjusted count of one instance
	// (Instance.Weight): a span that claims to stand for more instances
	// counts as this many, and Stats.WeightClamped counts it. Zero means
	// DefaultMaxAdjustedCount; at most MaxMaxAdjustedCount.
	MaxAdjustedCount int64 `mapstructure:"max_adjusted_count"`

	// ConfiguredProbes names probes configured outside this Config (the
	// deltaq processors of the process): they are tracked from the start,
	// like the probes of Probes. Set by the program, never read from a
	// configuration.
	ConfiguredProbes []string `mapstructure:"-"`

	// WindowCounts keeps each window's analysis counts in its Result
	// (ProbeResult.FineIndex and FineCounts), which WindowOf sends with
	// the window: set by an agent that emits its windows. Set by the
	// program, never read from a configuration.
	WindowCounts bool `mapstructure:"-"`
	// BandPoints, when > 0, keeps each probe's band (ProbeResult.Band)
	// only at the edges a curve of that many points reads
	// (deltaq.CurveEdges, ConfidenceBand.At): set by a program that reads
	// the band there alone, as the deltaq.cdf curves of cdf_points do, so
	// that a window's band costs that many points a probe, not its bins.
	// Set by the program, never read from a configuration.
	BandPoints int `mapstructure:"-"`
	// LateAdvance is how much later than an interval after the last one
	// the Advance that closes the windows may come: a window timer held up
	// that long (its sends to a blocked next consumer, bounded) does not
	// leave the instances that end meanwhile beyond the open windows, too
	// early. The engine keeps ⌈LateAdvance/Interval⌉ more windows open.
	// Zero: an Advance at most an interval late (the tick of a timer, at
	// any phase of the window). Set by the program, never read from a
	// configuration.
	LateAdvance time.Duration `mapstructure:"-"`
	// LookupLayout, if not nil, returns the layout configured outside this
	// Config for a probe (by the deltaq processor that produces it): dMax
	// and uniform bins, or log-linear buckets (a processor's `binning:
	// log-linear`), whose windows count instances per bucket
	// (deltaq.LogLinearHistogram) and whose observed ΔQ the operators read
	// on the uniform grid deltaq.Layout.Grid. A probe's layout is, in this
	// order: Probes[name].DMax and Bins, or its Binning; LookupLayout(name);
	// the layout of the probe's first accepted instance. An invalid layout
	// is ignored. It is called when a probe is first seen, under the
	// engine's ingestion lock, and must be safe for concurrent use. Set by
	// the program, never read from a configuration.
	LookupLayout func(probe string) (deltaq.Layout, bool) `mapstructure:"-"`
	// LayoutGeneration, if not nil, counts the changes of the layouts
	// LookupLayout answers from (the processors' registry,
	// contract.Layouts.Generation): when it moves, the engine looks them up
	// again (relayout.go). Set by the program, never read from a
	// configuration.
	LayoutGeneration func() uint64 `mapstructure:"-"`
}

// ProbeConfig holds one probe's settings.
type ProbeConfig struct {
	// DMax and Bins fix the probe's histogram (bin width DMax/Bins): they
	// take precedence over LookupLayout and over the dMax and bins the
	// instances carry (deltaq.dmax_ns, deltaq.bins). Both or neither.
	DMax time.Duration `mapstructure:"dmax"`
	Bins int           `mapstructure:"bins"`
	// Binning, instead of DMax and Bins, fixes log-linear buckets for the
	// probe, as the deltaq processor's `binning:` option does (its dMax is
	// High): a gateway whose agents' processors use log-linear binning
	// pins their layout with it.
	Binning *deltaq.BinningConfig `mapstructure:"binning"`
	// QTA is the probe's requirement; the zero QTA is none. Written, it
	// must say something (`qta: {}` is refused).
	QTA QTA `mapstructure:"qta" confcheck:"nonempty"`
	// Triggers selects the probe's triggers; all are off by default (the
	// thesis, section 4.4.1).
	Triggers Triggers `mapstructure:"triggers"`
	// QoO is the probe's Quality of Outcome requirement (qoo.go); the zero
	// QoOConfig is none. Written, it must say something (`qoo: {}` is
	// refused).
	QoO QoOConfig `mapstructure:"qoo" confcheck:"nonempty"`
}

// GatewayConfig bounds the windows an engine merges from other engines
// (agents, Engine.AddWindow) and says how a probe whose layout no
// configuration fixes takes one from them.
type GatewayConfig struct {
	// LayoutQuorum is the number of distinct agents that must send windows
	// of the same layout, each passing every other check and lying in an
	// open window, before a probe whose layout neither Probes nor a
	// processor of this process fixes takes that layout, or moves to it
	// at a window boundary. Zero means DefaultLayoutQuorum; in [1,
	// MaxAgents]. With 1 a single agent, or a forger, sets the layout:
	// pin the layouts in Probes instead.
	LayoutQuorum int `mapstructure:"layout_quorum"`
	// MaxAgents bounds the distinct agents whose windows of the probes a
	// configuration names merge into one window; a window of a further
	// agent is refused (agent_limit). Windows of probes no configuration
	// names take no place: invented probes cannot crowd out the agents of
	// the configured ones. Zero means DefaultMaxAgents; at most MaxAgents.
	MaxAgents int `mapstructure:"max_agents"`
	// ExpectedAgents is the number of agents that should contribute to
	// the configured probes of every window: the deltaq components count
	// the closed windows of fewer contributors, so that a missing agent
	// raises an alert rather than hiding in the merged counts, whatever
	// windows of other probes arrive. Zero is off; at most MaxAgents.
	ExpectedAgents int `mapstructure:"expected_agents"`
	// MaxUnconfiguredProbes bounds the probes no configuration names that
	// windows of other engines add: a window that would add one while
	// this many such probes are tracked (or as many names wait for a
	// layout quorum) is refused (unconfigured_limit). Each is held to a
	// layout an agent's processor can give it — dMax from the processor's
	// shortest (977 ns) to deltaq.MaxDMax, a ΔQ of at most
	// deltaq.MaxThesisBins bins (log-linear buckets read on a finer grid
	// need the probe named) — so that this bounds their memory: about
	// (History + 8) × 8 B a bin and 20 KiB each, 310 KiB at 1000 bins and
	// the default history (TestUnconfiguredProbesBounded measures it);
	// with BandPoints the band's History rows hold that many values rather
	// than one a bin, and about 8 × 8 B a bin remain.
	// Zero means min(DefaultMaxUnconfiguredProbes, MaxProbes); at most
	// MaxProbes.
	MaxUnconfiguredProbes int `mapstructure:"max_unconfigured_probes"`
}

// Bounds of GatewayConfig.
const (
	// DefaultLayoutQuorum: two agents must agree, so that no single
	// window — a forged one, or an agent configured apart — sets a
	// probe's layout.
	DefaultLayoutQuorum = 2
	// DefaultMaxAgents is far more agents than one gateway serves.
	DefaultMaxAgents = 256
	// MaxAgents bounds gateway::max_agents.
	MaxAgents = 4096
	// DefaultMaxUnconfiguredProbes: probes a gateway's configuration does
	// not name are few; at 1000 bins they hold about 31 MiB.
	DefaultMaxUnconfiguredProbes = 100
)

// check returns the problems of the gateway options, each at its option
// under gateway, of a configuration whose max_probes is maxProbes.
func (g GatewayConfig) check(maxProbes int) []error {
	var errs []error
	if g.MaxAgents < 0 || g.MaxAgents > MaxAgents {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_agents"), `must be in [0, %d], got %d`, MaxAgents, g.MaxAgents))
	}
	agents := g.MaxAgents
	if agents <= 0 || agents > MaxAgents {
		agents = DefaultMaxAgents
	}
	if g.LayoutQuorum < 0 || g.LayoutQuorum > agents {
		errs = append(errs, confpath.Errorf(confpath.Fields("layout_quorum"), `must be in [0, max_agents %d], got %d`, agents, g.LayoutQuorum))
	}
	if g.ExpectedAgents < 0 || g.ExpectedAgents > agents {
		errs = append(errs, confpath.Errorf(confpath.Fields("expected_agents"), `must be in [0, max_agents %d], got %d`, agents, g.ExpectedAgents))
	}
	if maxProbes <= 0 {
		maxProbes = DefaultMaxProbes
	}
	if g.MaxUnconfiguredProbes < 0 || g.MaxUnconfiguredProbes > maxProbes {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_unconfigured_probes"), `must be in [0, max_probes %d], got %d`, maxProbes, g.MaxUnconfiguredProbes))
	}
	return errs
}

// QTA is a quantitative timeliness agreement in the thesis's simplified form
// (the thesis, sections 4.1.3 and 2.1.6): by each Delay at least P of the
// instances have completed successfully, and at most MaxFailure of them
// fail or time out. The curve a ΔQ plot draws for it is
// deltaq.QTA.RequiredSteps: the points, then a last step to 1 − MaxFailure
// at dMax. The zero QTA, without points or failure bound, is no QTA.
type QTA struct {
	// Points are the steps of the QTA, delays increasing.
	Points []QTAPoint `mapstructure:"points"`
	// MaxFailure is the largest failure ratio (timeouts + failures over all
	// instances) the QTA accepts, in [0, 1].
	MaxFailure float64 `mapstructure:"max_failure"`
}

// QTAPoint is one step of a QTA: at Delay, at least P of the instances have
// completed successfully.
type QTAPoint struct {
	Delay time.Duration `mapstructure:"delay"`
	P     float64       `mapstructure:"p"`
}

// Triggers selects the triggers of a probe (the thesis, section 3.5; the
// conditions are those of the draft's section 5.6).
type Triggers struct {
	// QTA fires when the observed ΔQ is below a QTA step: F_obs(dₖ) < pₖ for
	// some point k (the draft, section 5.6.2, "Percentiles").
	QTA bool `mapstructure:"qta"`
	// Failure fires when the failure ratio exceeds the QTA's MaxFailure,
	// i.e. success(ΔQ_obs) < success(QTA) (the draft, section 5.6.2,
	// "Failure").
	Failure bool `mapstructure:"failure"`
	// MaxInstances fires the load trigger when a window holds more than
	// MaxInstances instances (the draft, section 5.6.1); 0 is off.
	MaxInstances int64 `mapstructure:"max_instances"`
	// MaxDivergence is a floor on the divergence trigger's distance: with
	// it, the trigger fires only when the divergence is significant
	// (Divergence) and the distance sup_t |F_obs − F_calc| exceeds it; in
	// [0, 1], 0 is no floor. Setting it turns the divergence trigger on, at
	// the level DefaultDivergenceAlpha unless Divergence.Alpha says
	// otherwise. It used to be the trigger's only condition, which on
	// windows of tens to hundreds of instances fires on sampling noise
	// (the distance between two ΔQs of the same system is of order
	// 1/√n); as a floor it keeps a trigger from firing on a difference
	// that is significant but too small to matter.
	MaxDivergence float64 `mapstructure:"max_divergence"`
	// Divergence configures the significance test of the divergence and
	// its trigger. Divergence is the thesis's sign of dependent behaviour
	// near overload (sections 4.1.5 and 2.1.8).
	Divergence DivergenceTrigger `mapstructure:"divergence"`
	// SlackTrend configures the slack-trend trigger.
	SlackTrend SlackTrendTrigger `mapstructure:"slack_trend"`
	// Confidence, when set, makes the qta and failure triggers fire only
	// on a breach that is significant for the window's instance count: an
	// exact one-sided binomial test of H₀ "the bound holds" rejects it at
	// level 1 − Confidence (a failure ratio k/n breaks max_failure when
	// P(X ≥ k) < 1 − Confidence, X ~ Binomial(n, max_failure); a point
	// (d, p) of a QTA of m points breaks when P(X ≤ k) < (1 − Confidence)/m,
	// k the instances within d, counted optimistically: exactly where d is
	// an edge of the probe's bins, else to the upper edge of d's bin or
	// analysis bucket, whichever is tighter — Bonferroni's bound, so that a
	// QTA met exactly fires in at most 1 − Confidence of the windows
	// however many points it has). One dropped
	// job in 90 against max_failure 0.01 has P(X ≥ 1) = 0.60 and does not
	// fire. 0 is the raw verdict (any breach fires); else in [0.5, 0.9999].
	// The raw verdict is exported either way.
	Confidence float64 `mapstructure:"confidence"`
}

// DivergenceTrigger configures the divergence test and trigger. Each window
// with a divergence is tested with a two-sample Kolmogorov–Smirnov test
// (deltaq.KSTwoSample) of the observed ΔQ, of n instances, against the
// calculated ΔQ, worth m = (Σ 1/nᵢ)⁻¹ instances for components observed
// from nᵢ instances (deltaq.EffectiveCount); see the package
// documentation. The trigger is on when Alpha or Triggers.MaxDivergence is
// set.
type DivergenceTrigger struct {
	// Alpha is the significance level: a window's divergence is
	// significant when its p-value is below Alpha. In [0, 0.5]; 0 is off,
	// or DefaultDivergenceAlpha when max_divergence is set.
	Alpha float64 `mapstructure:"alpha"`
	// Windows is the number of consecutive windows in which the divergence
	// must be significant (and above max_divergence) for the trigger to
	// fire; a window without a test neither breaks nor extends the run.
	// Zero means 1; at most MaxDivergenceWindows.
	Windows int `mapstructure:"windows"`
	// Pool is the number of windows the test pools: the observed ΔQs of
	// the last Pool windows with a divergence are merged, weighted by
	// their instance counts, and so are their calculated ΔQs, which
	// multiplies the instances the test sees, and its power, by about
	// Pool. Zero means 1 (each window alone); at most MaxDivergencePool,
	// since the pooled windows' ΔQs are kept. It applies to the test the
	// results report whether or not the trigger is on.
	Pool int `mapstructure:"pool"`
	// Paired says that the components of the probe's expression are
	// measured on the probe's own instances — the stages of the same
	// requests, as the spans of one trace are — rather than on independent
	// samples. The errors of the observed and calculated CDFs are then
	// positively correlated, and the calculated ΔQ is compared as if it
	// were exact, at the smallest of the instance counts of the probe and
	// of its components (see the package documentation). Off, the test
	// treats them as independent samples, which is valid either way but,
	// for paired data, far less powerful.
	Paired bool `mapstructure:"paired"`
	// Target makes the pooling adaptive: each window pools the fewest of
	// the last Pool windows whose detectable divergence
	// (ProbeResult.DetectableDivergence) is at most Target, all Pool when
	// none is. In [0, 1]; 0 pools Pool windows always. Needs Pool ≥ 2.
	Target float64 `mapstructure:"target"`
}

// on reports whether the divergence trigger is on: Alpha set, or a
// max_divergence floor (mdiv).
func (d DivergenceTrigger) on(mdiv float64) bool { return d.Alpha > 0 || mdiv > 0 }

// SlackTrendTrigger configures the slack-trend trigger: a least-squares
// line through the minimum QTA slack (QTASlack.Min) of the last Windows
// windows, against the windows' end times, that reaches zero within
// Horizon fires it. It needs QTA points.
type SlackTrendTrigger struct {
	// Horizon is how far ahead the line is read: the trigger fires when
	// the fitted slack is below zero now or Horizon later. Zero is off.
	Horizon time.Duration `mapstructure:"horizon"`
	// Windows is W, the number of windows with a slack the line is fitted
	// over; the trend is reported once W windows have a slack. Zero means
	// DefaultSlackTrendWindows; at least 3, at most MaxSlackTrendWindows.
	Windows int `mapstructure:"windows"`
	// Confidence is the one-sided confidence at which the trigger needs
	// both the slope below zero and the line below zero at the horizon
	// (SlackTrend.Significant), so that at a steady load it fires in at
	// most 1 − Confidence of the windows. Zero means
	// DefaultSlackTrendConfidence; else in [0.5, 0.9999].
	Confidence float64 `mapstructure:"confidence"`
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
	// Directory, MaxFiles and MaxBytes are for the component that writes
	// snapshots to files, which also checks them; the engine keeps its
	// snapshots in memory and does not read them. Directory, when set,
	// receives one JSON file per snapshot; past MaxFiles files or MaxBytes
	// bytes in it, the oldest snapshot files are removed.
	Directory string `mapstructure:"directory"`
	MaxFiles  int    `mapstructure:"max_files"`
	MaxBytes  int64  `mapstructure:"max_bytes"`
}

// Check checks the configuration, parsing the outcome diagram, and reports
// every problem, each naming the option as written in a collector
// configuration. It is New's check. It is not named Validate: the collector
// validates every field of a component's configuration that has a Validate
// method, and would check a squashed Config a second time.
func (c *Config) Check() error {
	_, err := c.compile()
	return err
}

// compiled is a checked Config in the engine's terms: the defaults of zero
// fields applied, the diagram parsed and the snapshot's After in windows.
type compiled struct {
	Config
	diagram  *diagram.Diagram // nil without a diagram
	snapshot snapshotWindows
	whatIf   []scenario // sorted by name
}

// snapshotWindows is SnapshotConfig in windows.
type snapshotWindows struct {
	Enabled bool
	// Before and After count windows before and after the trigger's.
	Before, After int
}

// compile checks c and compiles it; the error joins every problem, in the
// order of the options.
func (c *Config) compile() (*compiled, error) {
	errs := c.checkWindows()
	if c.History < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("history"), `must be ≥ 0, got %d`, c.History))
	}
	if c.MaxProbes < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_probes"), `must be ≥ 0, got %d`, c.MaxProbes))
	}
	if c.ProbeIdleTimeout < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("probe_idle_timeout"), `must be ≥ 0, got %s`, c.ProbeIdleTimeout))
	}
	for i, q := range c.Quantiles {
		switch {
		case !(q > 0 && q < 1):
			errs = append(errs, confpath.Errorf(confpath.Fields("quantiles"), "%v is not in (0, 1)", q))
		case slices.Contains(c.Quantiles[:i], q):
			// Its two series would be one: the same deltaq.q twice.
			errs = append(errs, confpath.Errorf(confpath.Fields("quantiles"), "%v is given twice", q))
		}
	}
	d, err := c.parseDiagram()
	if err != nil {
		errs = append(errs, err)
	}
	whatIf, werrs := c.compileWhatIf(d, err != nil)
	errs = append(errs, werrs...)
	names := make([]string, 0, len(c.Probes))
	for n := range c.Probes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, err := range c.Probes[n].check() {
			errs = append(errs, confpath.Under(confpath.Fields("probes").Key(n), err))
		}
	}
	errs = append(errs, c.checkSelection()...)
	for _, err := range c.Gateway.check(c.MaxProbes) {
		errs = append(errs, confpath.Under(confpath.Fields("gateway"), err))
	}
	if c.RearmWindows < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("rearm_windows"), `must be ≥ 0, got %d`, c.RearmWindows))
	}
	if c.Snapshot.Before < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("snapshot", "before"), `must be ≥ 0, got %d`, c.Snapshot.Before))
	}
	if c.Snapshot.After < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("snapshot", "after"), `must be ≥ 0, got %s`, c.Snapshot.After))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	cc := c.withDefaults(d)
	cc.whatIf = whatIf
	return cc, nil
}

// checkWindows checks the options that shape the windows: the interval and
// the lag.
func (c *Config) checkWindows() []error {
	var errs []error
	if c.Interval < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("interval"), `must be ≥ 0, got %s`, c.Interval))
	}
	switch {
	case c.Lag < 0:
		errs = append(errs, confpath.Errorf(confpath.Fields("lag"), `must be ≥ 0, got %s`, c.Lag))
	case c.Interval > 0 && (c.Lag-1)/MaxLagIntervals >= c.Interval:
		// Lag > 16·Interval, without computing 16·Interval, which can
		// overflow.
		errs = append(errs, confpath.Errorf(confpath.Fields("lag"), `%s is more than %d intervals of %s: it would keep too many windows open`, c.Lag, MaxLagIntervals, c.Interval))
	}
	return errs
}

// parseDiagram parses Diagram or DiagramFile; nil when neither is set.
func (c *Config) parseDiagram() (*diagram.Diagram, error) {
	var (
		d   *diagram.Diagram
		err error
	)
	switch {
	case c.Diagram != "" && c.DiagramFile != "":
		return nil, errors.New(`diagram, diagram_file: set one or the other, not both`)
	case c.Diagram != "":
		if d, err = diagram.Parse("diagram", []byte(c.Diagram)); err != nil {
			return nil, confpath.Under(confpath.Fields("diagram"), err)
		}
	case c.DiagramFile != "":
		src, err := os.ReadFile(c.DiagramFile)
		if err != nil {
			return nil, confpath.Under(confpath.Fields("diagram_file"), err)
		}
		if d, err = diagram.Parse(c.DiagramFile, src); err != nil {
			return nil, confpath.Under(confpath.Fields("diagram_file"), err)
		}
	default:
		return nil, nil
	}
	if len(d.Probes()) == 0 {
		// A file that parses but defines nothing (empty, or only comments)
		// is almost certainly the wrong file: say so rather than run
		// without calculated ΔQs.
		where := `diagram`
		if c.DiagramFile != "" {
			where = fmt.Sprintf(`diagram_file %s`, c.DiagramFile)
		}
		return nil, fmt.Errorf("%s: the outcome diagram defines no outcome", where)
	}
	return d, nil
}

// check returns the problems of one probe's settings.
func (pc ProbeConfig) check() []error {
	var errs []error
	// Each problem at the option that has it: the one missing, or the
	// negative one.
	switch {
	case pc.DMax < 0 || pc.Bins < 0:
		if pc.DMax < 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields("dmax"), "must not be negative, got %s", pc.DMax))
		}
		if pc.Bins < 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields("bins"), "must not be negative, got %d", pc.Bins))
		}
	case pc.Binning != nil:
		// binning's own check below says dmax and bins do not go with it.
	case pc.DMax > 0 && pc.Bins == 0:
		errs = append(errs, confpath.Errorf(confpath.Fields("bins"), "must be set together with dmax (%s): the histogram's bins are dmax/bins wide", pc.DMax))
	case pc.Bins > 0 && pc.DMax == 0:
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax"), "must be set together with bins (%d): the histogram's bins are dmax/bins wide", pc.Bins))
	}
	if pc.Bins > deltaq.MaxBins {
		errs = append(errs, confpath.Errorf(confpath.Fields("bins"), "%d is more than %d", pc.Bins, deltaq.MaxBins))
	}
	if pc.Binning != nil {
		if pc.DMax != 0 || pc.Bins != 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields("binning"), "set either dmax and bins or binning, not both"))
		}
		_, berrs := pc.Binning.LogLinear()
		errs = append(errs, berrs...)
	}
	if !pc.QTA.IsZero() {
		if _, err := pc.QTA.DeltaQ(); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("qta"), err))
		}
	}
	if (pc.Triggers.QTA || pc.Triggers.Failure) && pc.QTA.IsZero() {
		errs = append(errs, confpath.Errorf(confpath.Fields("triggers"), "the qta and failure triggers need a qta"))
	}
	if pc.Triggers.QTA && !pc.QTA.IsZero() && len(pc.QTA.Points) == 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("triggers", "qta"), "needs qta points"))
	}
	if c := pc.Triggers.Confidence; c != 0 && !(c >= 0.5 && c <= MaxConfidence) {
		errs = append(errs, confpath.Errorf(confpath.Fields("triggers", "confidence"), "must be 0 or in [0.5, %v], got %v", MaxConfidence, c))
	}
	if pc.Triggers.MaxInstances < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("triggers", "max_instances"), "must be ≥ 0, got %d", pc.Triggers.MaxInstances))
	}
	if !(pc.Triggers.MaxDivergence >= 0 && pc.Triggers.MaxDivergence <= 1) {
		errs = append(errs, confpath.Errorf(confpath.Fields("triggers", "max_divergence"), "must be in [0, 1], got %v", pc.Triggers.MaxDivergence))
	}
	for _, err := range pc.Triggers.Divergence.check(pc.Triggers.MaxDivergence) {
		errs = append(errs, confpath.Under(confpath.Fields("triggers", "divergence"), err))
	}
	for _, err := range pc.Triggers.SlackTrend.check(pc.QTA) {
		errs = append(errs, confpath.Under(confpath.Fields("triggers", "slack_trend"), err))
	}
	errs = append(errs, pc.QoO.problems()...)
	return errs
}

// check returns the problems of the divergence test's settings, each at
// its option under triggers.divergence; mdiv is the max_divergence floor.
func (d DivergenceTrigger) check(mdiv float64) []error {
	var errs []error
	if !(d.Alpha >= 0 && d.Alpha <= 0.5) {
		errs = append(errs, confpath.Errorf(confpath.Fields("alpha"), "must be in [0, 0.5], got %v", d.Alpha))
	}
	if d.Windows < 0 || d.Windows > MaxDivergenceWindows {
		errs = append(errs, confpath.Errorf(confpath.Fields("windows"), "must be in [0, %d], got %d", MaxDivergenceWindows, d.Windows))
	} else if d.Windows > 0 && !d.on(mdiv) {
		errs = append(errs, confpath.Errorf(confpath.Fields("windows"), "needs triggers.divergence.alpha or triggers.max_divergence (the trigger is off)"))
	}
	if d.Pool < 0 || d.Pool > MaxDivergencePool {
		errs = append(errs, confpath.Errorf(confpath.Fields("pool"), "must be in [0, %d], got %d", MaxDivergencePool, d.Pool))
	}
	if !(d.Target >= 0 && d.Target <= 1) {
		errs = append(errs, confpath.Errorf(confpath.Fields("target"), "must be in [0, 1], got %v", d.Target))
	} else if d.Target > 0 && d.Pool < 2 {
		errs = append(errs, confpath.Errorf(confpath.Fields("target"), "needs triggers.divergence.pool ≥ 2, the most windows pooled"))
	}
	return errs
}

// check returns the problems of the slack-trend trigger's settings for a
// probe of QTA q, each at its option under triggers.slack_trend.
func (st SlackTrendTrigger) check(q QTA) []error {
	var errs []error
	if st.Horizon < 0 {
		errs = append(errs, confpath.Errorf(confpath.Fields("horizon"), "must be ≥ 0, got %s", st.Horizon))
	}
	if st.Windows != 0 && (st.Windows < 3 || st.Windows > MaxSlackTrendWindows) {
		// Two points always lie on their line: the fit would have no
		// residual to average the windows' noise with.
		errs = append(errs, confpath.Errorf(confpath.Fields("windows"), "must be 0 or in [3, %d], got %d", MaxSlackTrendWindows, st.Windows))
	}
	if c := st.Confidence; c != 0 && !(c >= 0.5 && c <= MaxConfidence) {
		errs = append(errs, confpath.Errorf(confpath.Fields("confidence"), "must be 0 or in [0.5, %v], got %v", MaxConfidence, c))
	}
	if st.Horizon > 0 && len(q.Points) == 0 {
		errs = append(errs, errors.New("needs qta points"))
	}
	return errs
}

// IsZero reports whether q is the zero QTA, which is no QTA: no point and
// no failure bound.
func (q QTA) IsZero() bool { return len(q.Points) == 0 && q.MaxFailure == 0 }

// LastDelay returns the largest delay of the QTA's points, 0 without
// points: a dMax below it counts the instances between the two as timeouts,
// which the point reads as late.
func (q QTA) LastDelay() time.Duration {
	var d time.Duration
	for _, p := range q.Points {
		d = max(d, p.Delay)
	}
	return d
}

// DeltaQ returns the QTA as a deltaq.QTA (delays in seconds), checked by
// deltaq.NewQTA: delays positive and increasing, probabilities in (0, 1]
// and non-decreasing, none above 1 − MaxFailure.
func (q QTA) DeltaQ() (deltaq.QTA, error) {
	steps := make([]deltaq.Step, len(q.Points))
	for i, p := range q.Points {
		steps[i] = deltaq.Step{Delay: p.Delay.Seconds(), P: p.P}
	}
	// Every point's and max_failure's problem at once, not the first.
	var errs []error
	for i, p := range q.Points {
		if err := checkProbability("p", p.P); err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("points").Index(i).Field("p"), err))
		}
		if p.Delay <= 0 {
			errs = append(errs, confpath.Errorf(confpath.Fields("points").Index(i).Field("delay"), "must be > 0, got %s", p.Delay))
		}
		if i > 0 && p.Delay <= q.Points[i-1].Delay {
			errs = append(errs, confpath.Errorf(confpath.Fields("points").Index(i).Field("delay"), "%s does not follow %s of points[%d] (delays must increase)", p.Delay, q.Points[i-1].Delay, i-1))
		}
		if i > 0 && p.P < q.Points[i-1].P {
			errs = append(errs, confpath.Errorf(confpath.Fields("points").Index(i).Field("p"), "%v is below %v of points[%d] (p must not fall as the delay grows)", p.P, q.Points[i-1].P, i-1))
		}
	}
	if err := checkProbability("max_failure", q.MaxFailure); err != nil && q.MaxFailure != 0 {
		errs = append(errs, confpath.Under(confpath.Fields("max_failure"), err))
	}
	if len(errs) > 0 {
		return deltaq.QTA{}, errors.Join(errs...)
	}
	qta, err := deltaq.NewQTA(steps, q.MaxFailure)
	if err != nil {
		// What is left is a point above the failure bound, by the
		// algebra's rule: said under the point's path.
		for i, s := range steps {
			if _, perr := deltaq.NewQTA([]deltaq.Step{s}, q.MaxFailure); perr != nil {
				return deltaq.QTA{}, confpath.Errorf(confpath.Fields("points").Index(i).Field("p"), "%v within %s is above 1 − max_failure = %.6g: no more can complete when %v may fail",
					s.P, q.Points[i].Delay, 1-q.MaxFailure, q.MaxFailure)
			}
		}
		// The algebra's message, under the option's path (qta: …).
		return deltaq.QTA{}, errors.New(strings.TrimPrefix(err.Error(), "deltaq: QTA: "))
	}
	return qta, nil
}

// checkProbability refuses p outside (0, 1], and says how to write a
// percentage (p: 95) as the fraction it meant.
func checkProbability(name string, p float64) error {
	switch {
	case p > 1 && p <= 100:
		return fmt.Errorf("%v is not in (0, 1]: %s is a fraction, %v %% is %v", p, name, p, p/100)
	case math.IsNaN(p) || p <= 0 || p > 1:
		return fmt.Errorf("%v is not in (0, 1]", p)
	}
	return nil
}

// withDefaults returns c compiled with the diagram d: zero fields set to
// their defaults, a zero lag set to one interval, the snapshot's After
// rounded up to whole windows.
func (c Config) withDefaults(d *diagram.Diagram) *compiled {
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.MaxProbes == 0 {
		c.MaxProbes = DefaultMaxProbes
	}
	if c.Gateway.MaxAgents == 0 {
		c.Gateway.MaxAgents = DefaultMaxAgents
	}
	if c.Gateway.LayoutQuorum == 0 {
		c.Gateway.LayoutQuorum = min(DefaultLayoutQuorum, c.Gateway.MaxAgents)
	}
	if c.Gateway.MaxUnconfiguredProbes == 0 {
		c.Gateway.MaxUnconfiguredProbes = min(DefaultMaxUnconfiguredProbes, c.MaxProbes)
	}
	if len(c.Quantiles) == 0 {
		c.Quantiles = DefaultQuantiles
	}
	c.Quantiles = slices.Clone(c.Quantiles)
	slices.Sort(c.Quantiles)
	if c.RearmWindows == 0 {
		c.RearmWindows = DefaultRearmWindows
	}
	if c.Exemplars.MaxPerProbe == 0 {
		c.Exemplars.MaxPerProbe = DefaultExemplarsPerProbe
	}
	if c.WorstInstances == 0 {
		c.WorstInstances = DefaultWorstInstances
	}
	if c.MaxAdjustedCount == 0 {
		c.MaxAdjustedCount = DefaultMaxAdjustedCount
	}
	after := 0
	switch {
	case c.Interval == 0:
		c.Lag = 0
	case c.Lag == 0:
		c.Lag = c.Interval
	}
	if c.Interval > 0 {
		n := c.Snapshot.After / c.Interval
		if c.Snapshot.After%c.Interval != 0 {
			n++
		}
		after = int(n)
	}
	return &compiled{
		Config:   c,
		diagram:  d,
		snapshot: snapshotWindows{Enabled: c.Snapshot.Enabled, Before: c.Snapshot.Before, After: after},
	}
}
