// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/textpos"
)

// TestConfigCheckNamesTheField: each problem is reported with the option
// as written in a collector configuration, and Check reports them all.
func TestConfigCheckNamesTheField(t *testing.T) {
	second := time.Second
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"negative interval", Config{Interval: -1}, `interval: must be ≥ 0, got -1ns`},
		{"negative lag", Config{Interval: second, Lag: -second}, `lag: must be ≥ 0, got -1s`},
		// 16 intervals is the bound: 16 s + 1 ns at a 1 s interval is past it.
		{"lag too long", Config{Interval: second, Lag: 16*second + 1}, `lag: 16.000000001s is more than 16 intervals of 1s: it would keep too many windows open`},
		{"negative history", Config{History: -1}, `history: must be ≥ 0, got -1`},
		{"negative max_probes", Config{MaxProbes: -1}, `max_probes: must be ≥ 0, got -1`},
		{"negative max_unconfigured_probes", Config{Gateway: GatewayConfig{MaxUnconfiguredProbes: -1}}, `gateway.max_unconfigured_probes: must be in [0, max_probes 1000], got -1`},
		{"max_unconfigured_probes above max_probes", Config{MaxProbes: 50, Gateway: GatewayConfig{MaxUnconfiguredProbes: 51}}, `gateway.max_unconfigured_probes: must be in [0, max_probes 50], got 51`},
		{"negative probe_idle_timeout", Config{ProbeIdleTimeout: -second}, `probe_idle_timeout: must be ≥ 0, got -1s`},
		{"negative rearm_windows", Config{RearmWindows: -1}, `rearm_windows: must be ≥ 0, got -1`},
		{"negative snapshot before", Config{Snapshot: SnapshotConfig{Before: -1}}, `snapshot.before: must be ≥ 0, got -1`},
		{"negative snapshot after", Config{Snapshot: SnapshotConfig{After: -second}}, `snapshot.after: must be ≥ 0, got -1s`},
		{"quantile", Config{Quantiles: []float64{1.5}}, "quantiles: 1.5 is not in (0, 1)"},
		{"quantile twice", Config{Quantiles: []float64{0.5, 0.9, 0.5}}, "quantiles: 0.5 is given twice"},
		{"two diagrams", Config{Diagram: "e2e = a -> b;", DiagramFile: "x.dq"}, `diagram, diagram_file: set one or the other, not both`},
		{"bad diagram", Config{Diagram: "e2e = a ->;"}, `diagram: diagram:1:`},
		{"empty diagram", Config{Diagram: "# nothing\n"}, `diagram: the outcome diagram defines no outcome`},
		{"missing diagram file", Config{DiagramFile: filepath.Join(t.TempDir(), "none.dq")}, `diagram_file: open `},
		{"dmax without bins", Config{Probes: map[string]ProbeConfig{"x": {DMax: second}}}, `probes["x"].bins: must be set together with dmax (1s): the histogram's bins are dmax/bins wide`},
		{"qta trigger without qta", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{QTA: true}}}}, `probes["x"].triggers: the qta and failure triggers need a qta`},
		{"qta trigger without points", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{MaxFailure: 0.1}, Triggers: Triggers{QTA: true}}}}, `probes["x"].triggers.qta: needs qta points`},
		{"qta not increasing", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: 2, P: 0.5}, {Delay: 1, P: 0.6}}}}}}, `probes["x"].qta.points[1].delay: 1ns does not follow 2ns of points[0] (delays must increase)`},
		// A percentage where a fraction belongs: said how to write it.
		{"qta p as a percentage", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: 1, P: 0.5}, {Delay: 2, P: 95}}}}}}, `probes["x"].qta.points[1].p: 95 is not in (0, 1]: p is a fraction, 95 % is 0.95`},
		// Every problem of the QTA at once (it stopped at the first).
		{"qta p and max_failure as percentages", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{MaxFailure: 5, Points: []QTAPoint{{Delay: 1, P: 95}}}}}},
			"probes[\"x\"].qta.points[0].p: 95 is not in (0, 1]: p is a fraction, 95 % is 0.95\nprobes[\"x\"].qta.max_failure: 5 is not in (0, 1]: max_failure is a fraction, 5 % is 0.05"},
		{"qta p zero", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: 1, P: 0}}}}}}, `probes["x"].qta.points[0].p: 0 is not in (0, 1]`},
		{"max_failure as a percentage", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{MaxFailure: 5}}}}, `probes["x"].qta.max_failure: 5 is not in (0, 1]: max_failure is a fraction, 5 % is 0.05`},
		// Each point's problem under its path, with the delay as written.
		{"qta above failure bound", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{MaxFailure: 0.1, Points: []QTAPoint{{Delay: second, P: 0.95}}}}}},
			`probes["x"].qta.points[0].p: 0.95 within 1s is above 1 − max_failure = 0.9: no more can complete when 0.1 may fail`},
		{"qta delay zero", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: 0, P: 0.5}}}}}}, `probes["x"].qta.points[0].delay: must be > 0, got 0s`},
		{"qta p falling", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: second, P: 0.6}, {Delay: 2 * second, P: 0.5}}}}}},
			`probes["x"].qta.points[1].p: 0.5 is below 0.6 of points[0] (p must not fall as the delay grows)`},
		{"divergence", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{MaxDivergence: 2}}}}, `probes["x"].triggers.max_divergence: must be in [0, 1], got 2`},
		{"divergence alpha", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Alpha: 0.6}}}}}, `probes["x"].triggers.divergence.alpha: must be in [0, 0.5], got 0.6`},
		{"divergence windows", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Alpha: 0.01, Windows: -1}}}}}, `probes["x"].triggers.divergence.windows: must be in [0, 1000], got -1`},
		{"divergence windows without trigger", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Windows: 3}}}}}, `probes["x"].triggers.divergence.windows: needs triggers.divergence.alpha or triggers.max_divergence (the trigger is off)`},
		{"divergence pool", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Pool: 61}}}}}, `probes["x"].triggers.divergence.pool: must be in [0, 60], got 61`},
		{"divergence target", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Pool: 5, Target: 1.5}}}}}, `probes["x"].triggers.divergence.target: must be in [0, 1], got 1.5`},
		{"divergence target without pool", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Divergence: DivergenceTrigger{Target: 0.1}}}}}, `probes["x"].triggers.divergence.target: needs triggers.divergence.pool ≥ 2, the most windows pooled`},
		{"trigger confidence", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{Confidence: 0.3}}}}, `probes["x"].triggers.confidence: must be 0 or in [0.5, 0.9999], got 0.3`},
		{"slack trend confidence", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{SlackTrend: SlackTrendTrigger{Confidence: 1}}}}}, `probes["x"].triggers.slack_trend.confidence: must be 0 or in [0.5, 0.9999], got 1`},
		{"slack trend horizon", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{SlackTrend: SlackTrendTrigger{Horizon: -second}}}}}, `probes["x"].triggers.slack_trend.horizon: must be ≥ 0, got -1s`},
		{"slack trend windows", Config{Probes: map[string]ProbeConfig{"x": {Triggers: Triggers{SlackTrend: SlackTrendTrigger{Windows: 2}}}}}, `probes["x"].triggers.slack_trend.windows: must be 0 or in [3, 1000], got 2`},
		{"slack trend without points", Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{MaxFailure: 0.1}, Triggers: Triggers{SlackTrend: SlackTrendTrigger{Horizon: second}}}}}, `probes["x"].triggers.slack_trend: needs qta points`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Check()
			if err == nil {
				t.Fatalf("no error, want one containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if _, nerr := New(c.cfg, t0); nerr == nil || nerr.Error() != err.Error() {
				t.Errorf("New: %v, want Check's error", nerr)
			}
		})
	}
	// Every problem at once, in the order of the options, each line naming
	// its probe.
	cfg := Config{Interval: -1, History: -1, Quantiles: []float64{0}, Snapshot: SnapshotConfig{After: -1},
		Probes: map[string]ProbeConfig{"b": {Bins: -1, Triggers: Triggers{MaxInstances: -1}}, "a": {DMax: 1}}}
	want := "interval: must be ≥ 0, got -1ns\nhistory: must be ≥ 0, got -1\nquantiles: 0 is not in (0, 1)\n" +
		"probes[\"a\"].bins: must be set together with dmax (1ns): the histogram's bins are dmax/bins wide\n" +
		"probes[\"b\"].bins: must not be negative, got -1\nprobes[\"b\"].triggers.max_instances: must be ≥ 0, got -1\n" +
		"snapshot.after: must be ≥ 0, got -1ns"
	if err := cfg.Check(); err == nil || err.Error() != want {
		t.Errorf("Check = %v, want %q", err, want)
	}
}

// TestConfigErrorsKeepTheirCauses: a problem is a confpath.Error at its
// option, through which errors.As and errors.Is still find the cause: the
// diagram's own errors (one a line, each at its position) and a file that
// is not there.
func TestConfigErrorsKeepTheirCauses(t *testing.T) {
	cfg := Config{Diagram: "e2e = a ->;\nx = ;"}
	err := cfg.Check()
	var pe *confpath.Error
	if !errors.As(err, &pe) || pe.Path.String() != "diagram" {
		t.Fatalf("Check = %v, want a confpath.Error at diagram", err)
	}
	var list textpos.ErrorList
	if !errors.As(err, &list) || len(list) < 2 {
		t.Fatalf("Check = %v, want the diagram's error list", err)
	}
	if want := "diagram: " + list.Error(); err.Error() != want {
		t.Errorf("Check = %q, want %q: the path once, before the whole list", err, want)
	}

	cfg = Config{DiagramFile: filepath.Join(t.TempDir(), "none.dq")}
	err = cfg.Check()
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "diagram_file: open ") {
		t.Errorf("Check = %v, want diagram_file: and fs.ErrNotExist", err)
	}

	cfg = Config{Probes: map[string]ProbeConfig{"x": {QTA: QTA{Points: []QTAPoint{{Delay: time.Second, P: 95}}}}}}
	err = cfg.Check()
	if !errors.As(err, &pe) || !slices.Equal(pe.Path, confpath.Fields("probes").Key("x").Field("qta").Field("points").Index(0).Field("p")) {
		t.Errorf("Check = %v, want one confpath.Error at probes[\"x\"].qta.points[0].p", err)
	}
}

// TestConfigCompile: New fills zero fields with their defaults, makes a
// zero lag one interval (the thesis, section 3.6), rounds the snapshot's
// after up to whole windows, and parses the diagram from its text or its
// file.
func TestConfigCompile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "e2e.dq")
	if err := os.WriteFile(file, []byte("e2e = a -> b;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name            string
		cfg             Config
		lag             time.Duration
		before, after   int
		diagramOutcomes []string
	}{
		{"zero lag is one interval", Config{Interval: 5 * time.Second}, 5 * time.Second, 0, 0, nil},
		{"lag as set", Config{Interval: 5 * time.Second, Lag: time.Second}, time.Second, 0, 0, nil},
		{"lag at its bound", Config{Interval: time.Second, Lag: 16 * time.Second}, 16 * time.Second, 0, 0, nil},
		{"no lag offline", Config{Lag: time.Second}, 0, 0, 0, nil},
		// 10 s at 5 s is 2 windows; 11 s is 2.2, rounded up to 3.
		{"after in whole windows", Config{Interval: 5 * time.Second, Snapshot: SnapshotConfig{Before: 4, After: 10 * time.Second}}, 5 * time.Second, 4, 2, nil},
		{"after rounded up", Config{Interval: 5 * time.Second, Snapshot: SnapshotConfig{After: 11 * time.Second}}, 5 * time.Second, 0, 3, nil},
		{"after offline", Config{Snapshot: SnapshotConfig{After: 11 * time.Second}}, 0, 0, 0, nil},
		{"diagram text", Config{Diagram: "e2e = a -> b;"}, 0, 0, 0, []string{"a", "b"}},
		{"diagram file", Config{DiagramFile: file}, 0, 0, 0, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc, err := c.cfg.compile()
			if err != nil {
				t.Fatal(err)
			}
			if cc.Lag != c.lag {
				t.Errorf("lag %s, want %s", cc.Lag, c.lag)
			}
			if cc.snapshot.Before != c.before || cc.snapshot.After != c.after {
				t.Errorf("snapshot windows %d before, %d after; want %d, %d", cc.snapshot.Before, cc.snapshot.After, c.before, c.after)
			}
			if (cc.diagram != nil) != (c.diagramOutcomes != nil) {
				t.Fatalf("diagram %v, want outcomes %v", cc.diagram, c.diagramOutcomes)
			}
			if cc.diagram != nil {
				if _, ok := cc.diagram.Probe("e2e"); !ok {
					t.Error("the diagram does not define e2e")
				}
			}
			e := newEngine(t, c.cfg, t0)
			if got := e.ReferencedProbes(); !slices.Equal(got, c.diagramOutcomes) {
				t.Errorf("referenced probes %v, want %v", got, c.diagramOutcomes)
			}
		})
	}
	cc, err := (&Config{}).compile()
	if err != nil {
		t.Fatal(err)
	}
	if cc.History != DefaultHistory || cc.MaxProbes != DefaultMaxProbes || cc.RearmWindows != DefaultRearmWindows ||
		!slices.Equal(cc.Quantiles, DefaultQuantiles) {
		t.Errorf("defaults: history %d, max_probes %d, rearm_windows %d, quantiles %v", cc.History, cc.MaxProbes, cc.RearmWindows, cc.Quantiles)
	}
	if cc.Gateway.MaxUnconfiguredProbes != DefaultMaxUnconfiguredProbes {
		t.Errorf("default gateway.max_unconfigured_probes %d, want %d", cc.Gateway.MaxUnconfiguredProbes, DefaultMaxUnconfiguredProbes)
	}
	few, err := (&Config{MaxProbes: 10}).compile()
	if err != nil {
		t.Fatal(err)
	}
	if few.Gateway.MaxUnconfiguredProbes != 10 {
		t.Errorf("max_probes 10: gateway.max_unconfigured_probes %d, want 10 (at most max_probes)", few.Gateway.MaxUnconfiguredProbes)
	}
	// 16·Interval would overflow: the bound is checked without it.
	huge := Config{Interval: math.MaxInt64 / 2, Lag: math.MaxInt64}
	if err := huge.Check(); err != nil {
		t.Errorf("lag %s at interval %s (under 16 intervals): %v", huge.Lag, huge.Interval, err)
	}
}

// TestZeroLagClosesAWindowOneIntervalAfterItsEnd: with Lag zero the
// window [0, 1 s) is still open at 1.9 s and closes at 2 s.
func TestZeroLagClosesAWindowOneIntervalAfterItsEnd(t *testing.T) {
	e := newEngine(t, Config{Interval: time.Second}, at(time.Second))
	addAll(e, ok("p", 500*time.Millisecond, time.Millisecond))
	if rs := e.Advance(at(1900 * time.Millisecond)); len(rs) != 0 {
		t.Fatalf("%d windows closed at 1.9 s", len(rs))
	}
	addAll(e, ok("p", 900*time.Millisecond, time.Millisecond)) // arrives 1 s late, still counts
	rs := e.Advance(at(2 * time.Second))
	if len(rs) != 1 {
		t.Fatalf("at 2 s: %d windows closed, want [0, 1 s)", len(rs))
	}
	if c := probeOf(t, rs[0], "p").Counts; c.Success != 2 {
		t.Errorf("window [0, 1 s): %+v, want 2 successes", c)
	}
}

// TestZeroQTAIsNoQTA: a probe whose QTA has neither points nor a failure
// bound has no QTA (no requirement, no check); a failure bound alone is a
// QTA, checked on the failure ratio.
func TestZeroQTAIsNoQTA(t *testing.T) {
	if !(QTA{}).IsZero() || (QTA{MaxFailure: 0.1}).IsZero() || (QTA{Points: []QTAPoint{{Delay: 1, P: 0.5}}}).IsZero() {
		t.Fatal("IsZero: only the QTA without points and failure bound is zero")
	}
	cfg := Config{Probes: map[string]ProbeConfig{
		"none":    {},
		"failure": {QTA: QTA{MaxFailure: 0.1}, Triggers: Triggers{Failure: true}},
	}}
	ins := []Instance{ok("none", 0, time.Millisecond), ok("failure", 0, time.Millisecond), failed("failure", 0)}
	r := single(t, cfg, ins)
	if p := probeOf(t, r, "none"); p.QTA != nil || p.QTACheck != nil {
		t.Errorf("none: QTA %v, check %v; want neither", p.QTA, p.QTACheck)
	}
	// One failure in two instances: a failure ratio of 0.5 > 0.1.
	p := probeOf(t, r, "failure")
	if p.QTA == nil || p.QTACheck == nil || p.QTACheck.FailureOK || p.QTACheck.Failure != 0.5 {
		t.Fatalf("failure: QTA %v, check %+v; want failure 0.5 not OK", p.QTA, p.QTACheck)
	}
	if len(r.Triggers) != 1 || r.Triggers[0].Kind != TriggerFailure {
		t.Errorf("triggers %+v, want the failure trigger", r.Triggers)
	}
}
