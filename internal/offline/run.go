// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package offline runs the collector's deltaq components outside a
// collector, for the command line, which stands in for one with state of
// its own (collectorstate.New): it reads a collector configuration as the
// collector reads it (Source.Load, Resolve), checks its deltaq components
// across one another as no single component can (Check: deltaq check
// --config), makes the deltaq processors from their factory and the offline
// analysis of the exporter or connector that recorded traces go through
// (NewAnalysis: deltaq analyze), and gives the QTAs of the configuration
// the bucket bounds of their probes (SLOProbes: deltaq slo).
package offline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/metric/noop"
	nooptrace "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// NewAnalysis makes the offline analysis of the configuration, and what the
// traces go through on their way to it: the deltaq processor, if the
// configuration has one, started, as in a collector, before the analysis,
// which learns the layouts of the probes it configures (internal/contract's
// registry), then the other deltaq processors of the pipelines, whose
// layouts it learns too; else the analysis itself, which finds the
// connector's probes in the spans. A probe both match is refused, as the
// collector refuses it. A dmax: auto probe is read at its dmax_max
// (atDMaxMax), the processor's and the connector's alike.
func NewAnalysis(loaded *Loaded, acfg *core.Config) (*core.OfflineAnalysis, processor.Traces, error) {
	var an *core.OfflineAnalysis
	var proc processor.Traces
	st := collectorstate.New() // the components' shared state, as in a collector of its own
	if loaded.Proc != nil {
		next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
			return an.ConsumeTraces(ctx, td)
		})
		if err != nil {
			return nil, nil, err
		}
		if proc, err = newProcessor(st, loaded.Proc, atDMaxMax(loaded.Proc.Config), next); err != nil {
			return nil, nil, err
		}
	}
	shutOthers, err := makeOthers(st, loaded)
	if err != nil {
		if proc != nil {
			_ = proc.Shutdown(context.Background())
		}
		return nil, nil, err
	}
	shut := func() {
		if proc != nil {
			_ = proc.Shutdown(context.Background())
		}
		shutOthers()
	}
	if sp := loaded.Spans; sp != nil {
		claims := st.Claims
		err := claims.Claim(loaded, "connector", loaded.ConnID, sp.Names)
		claims.Release(loaded)
		if err != nil {
			shut()
			return nil, nil, fmt.Errorf("%s: %w", loaded.Where, err)
		}
	}
	an, err = core.NewOfflineAnalysis(acfg, st.Layouts, loaded.Spans)
	if err != nil {
		shut()
		return nil, nil, fmt.Errorf("%s: %w", loaded.Where, err)
	}
	if proc == nil {
		proc = offlineInput{an}
	}
	if len(loaded.Others) > 0 {
		proc = withOthers{proc, shutOthers}
	}
	return an, proc, nil
}

// WithWindows checks the analysis options of l, then sets their interval
// and lag to the command line's (--interval, --lag; 0 leaves the
// configured one) and checks them again, so that a problem is laid at the
// door of what caused it. The lag left to its default is one interval,
// the interval given, as for a connector configured with it. An exporter's
// options get the one check the connector and the exporter run (bounds,
// diagram, probes): its Validate would also ask for an endpoint, which an
// offline analysis does not need.
func (l *Loaded) WithWindows(interval, lag time.Duration) error {
	acfg := l.Analysis
	if err := acfg.Check(); err != nil {
		return fmt.Errorf("%s: %w", l.Where, err)
	}
	if interval <= 0 && lag <= 0 {
		return nil
	}
	var given []string
	if interval > 0 {
		acfg.Interval = interval
		given = append(given, "--interval "+interval.String())
	}
	if lag > 0 {
		acfg.Lag = lag
		given = append(given, "--lag "+lag.String())
	}
	if err := acfg.Check(); err != nil {
		return fmt.Errorf("%s (with %s): %w", strings.Join(given, " "), l.Where, err)
	}
	return nil
}

// withOthers is the processor NewAnalysis returns when it made the other
// processors of the configuration too (makeOthers): they shut down with it.
type withOthers struct {
	processor.Traces
	shutOthers func()
}

func (w withOthers) Shutdown(ctx context.Context) error {
	err := w.Traces.Shutdown(ctx)
	w.shutOthers()
	return err
}

// offlineInput hands the traces straight to the analysis, when no deltaq
// processor maps them.
type offlineInput struct{ *core.OfflineAnalysis }

func (offlineInput) Start(context.Context, component.Host) error { return nil }
func (offlineInput) Shutdown(context.Context) error              { return nil }

// newProcessor creates the deltaq processor p of the components whose
// shared state is st, with the configuration cfg (p's, or one derived from
// it), from its factory and with its ID, starts it, and sends what it
// passes on to next. Its errors name it as the configuration does
// (Processor.Where). Its logs go nowhere and its self-telemetry is not
// recorded: the command reports what it found.
func newProcessor(st *collectorstate.State, p *Processor, cfg *deltaqprocessor.Config, next consumer.Traces) (processor.Traces, error) {
	ctx := context.Background()
	f := deltaqprocessor.NewFactoryFor(st)
	var id component.ID
	if err := id.UnmarshalText([]byte(p.ID)); err != nil {
		return nil, fmt.Errorf("%s: %w", p.Where, err)
	}
	set := processor.Settings{
		ID: id,
		TelemetrySettings: component.TelemetrySettings{Logger: zap.NewNop(), TracerProvider: nooptrace.NewTracerProvider(),
			MeterProvider: noop.NewMeterProvider(), Resource: pcommon.NewResource()},
		BuildInfo: component.NewDefaultBuildInfo(),
	}
	proc, err := f.CreateTraces(ctx, set, cfg, next)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Where, err)
	}
	if err := proc.Start(ctx, noHost{}); err != nil {
		_ = proc.Shutdown(ctx)
		return nil, fmt.Errorf("%s: %w", p.Where, err)
	}
	return proc, nil
}

// atDMaxMax returns the processor configuration c with each dmax: auto
// probe fixed at its dmax_max, the layout it has until it has learnt its
// delays, at which the analysis reads the connector's auto probes too
// (core.NewOfflineAnalysis). The processor chooses a dMax on its own timer,
// by the time that passed: read from a file, by the time the reading took,
// which differs from one reading to the next and from the collector's.
// c is validated; it is not changed.
func atDMaxMax(c *deltaqprocessor.Config) *deltaqprocessor.Config {
	if !slices.ContainsFunc(c.Probes, func(pc deltaqprocessor.ProbeConfig) bool { return pc.DMaxAuto }) {
		return c
	}
	fixed := *c
	fixed.Probes = slices.Clone(c.Probes)
	for i := range fixed.Probes {
		pc := &fixed.Probes[i]
		dmax, errs := pc.DMaxNanos()
		if !pc.DMaxAuto || len(errs) > 0 {
			continue
		}
		pc.DMaxAuto, pc.DMax = false, time.Duration(dmax)
		pc.DMaxMin, pc.DMaxMax, pc.DMaxSample, pc.DMaxPeriod, pc.DMaxChangesPerHour = 0, 0, 0, 0, 0
	}
	return &fixed
}

// makeOthers makes the other deltaq processors of the configuration
// (Loaded.Others) with the shared state st, as the collector makes them:
// their probes' layouts registered, their probes claimed. They are given
// no spans. The function returned shuts them down.
func makeOthers(st *collectorstate.State, l *Loaded) (func(), error) {
	var made []processor.Traces
	shut := func() {
		for _, p := range made {
			_ = p.Shutdown(context.Background())
		}
	}
	for i := range l.Others {
		p := &l.Others[i]
		proc, err := newProcessor(st, p, p.Config, discard)
		if err != nil {
			shut()
			return nil, err
		}
		made = append(made, proc)
	}
	return shut, nil
}

// noHost is the host of a component the command runs alone: no
// extensions.
type noHost struct{}

func (noHost) GetExtensions() map[component.ID]component.Component { return nil }

// discard is a traces consumer that drops what it is given.
var discard, _ = consumer.NewTraces(func(context.Context, ptrace.Traces) error { return nil })
