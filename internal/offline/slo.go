// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/slo"
)

// SLOProbes returns the probes with a QTA in the analysis options, each
// with the bucket bounds of its deltaq.observed: from the connector's (or
// exporter's) own dmax and bins, else from the deltaq processor's layout
// of the probe (as the components resolve it: the processor registers its
// layouts when it is created), else none. A probe both the processor and
// the connector match is refused, and so is a front end whose metrics are
// its windows alone (windows_only), without the series the rules read.
func SLOProbes(l *Loaded) ([]slo.Probe, error) {
	if l.Analysis.EmitWindows && l.Analysis.WindowsOnly {
		return nil, fmt.Errorf("%s: windows_only: its metrics are its windows (deltaq.window) alone, "+
			"none of the series the rules read (deltaq.observed, deltaq.outcomes, deltaq.qoo.score): "+
			"generate the rules from the configuration of the gateway that merges the windows", l.Where)
	}
	auto := map[string]string{}
	if sp := l.Spans; sp != nil {
		for i, a := range sp.Auto {
			if a != nil {
				auto[sp.Names[i]] = "dmax: auto in the connector"
			}
		}
	}
	st := collectorstate.New()
	shut, err := sloProcessors(st, l, auto)
	if err != nil {
		return nil, err
	}
	defer shut()
	var names []string
	for name, pc := range l.Analysis.Probes {
		if len(pc.QTA.Points) > 0 || pc.QTA.MaxFailure > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var probes []slo.Probe
	for _, name := range names {
		pc := l.Analysis.Probes[name]
		// The checks the components run on a probe's QTA and layout (the
		// rest of the configuration, such as the diagram, plays no part).
		if _, err := pc.QTA.DeltaQ(); err != nil {
			return nil, fmt.Errorf("%s: probe %q: %w", l.Where, name, confpath.Under(confpath.Fields("qta"), err))
		}
		if (pc.DMax > 0) != (pc.Bins > 0) {
			return nil, fmt.Errorf("%s: probe %q: dmax and bins must be set together", l.Where, name)
		}
		p := slo.Probe{Name: name, QTA: pc.QTA, Exponential: l.Analysis.Histogram.Exponential != nil, Interval: l.Analysis.Interval}
		lay, ok := st.Layouts.LookupLayout(name)
		own, fixed := configuredLayout(pc.DMax, pc.Bins, pc.Binning)
		switch {
		case fixed:
			lay, ok = own, true
		case auto[name] != "":
			p.NoBounds = auto[name]
			ok = false
		case !ok:
			p.NoBounds = "no configuration gives its layout; it comes from its first instance"
		}
		if ok {
			var err error
			if p.Bounds, p.Layout, err = bucketBounds(lay); err != nil {
				return nil, fmt.Errorf("%s: probe %q: %w", l.Where, name, err)
			}
			if e := l.Analysis.Histogram.Exponential; e != nil {
				size := e.MaxSize
				if size == 0 {
					size = core.DefaultExponentialMaxSize
				}
				p.Scale, p.ScaleKnown = core.ExponentialScale(p.Bounds[0], p.Bounds[len(p.Bounds)-1], size), true
			}
		}
		probes = append(probes, p)
	}
	return probes, nil
}

// sloProcessors makes the deltaq processors of l (Proc and Others) with
// the shared state st, so that their layouts are registered, refuses a
// probe the connector matches too, as the collector refuses it
// (NewAnalysis), and notes their dmax: auto probes in auto. The function
// returned shuts them down.
func sloProcessors(st *collectorstate.State, l *Loaded, auto map[string]string) (func(), error) {
	// The processor read first, then the others, as NewAnalysis makes
	// them: a probe that two define is read at the layout registered first
	// (contract.Layouts), the same in both commands.
	shut := func() {}
	if l.Proc != nil {
		proc, err := newProcessor(st, l.Proc, l.Proc.Config, discard)
		if err != nil {
			return nil, err
		}
		shut = func() { _ = proc.Shutdown(context.Background()) }
	}
	shutOthers, err := makeOthers(st, l)
	if err != nil {
		shut()
		return nil, err
	}
	shutProc := shut
	shut = func() { shutProc(); shutOthers() }
	if sp := l.Spans; sp != nil {
		if err := st.Claims.Claim(l, "connector", l.ConnID, sp.Names); err != nil {
			shut()
			return nil, fmt.Errorf("%s: %w", l.Where, err)
		}
	}
	for _, p := range l.processors() {
		for _, pc := range p.Config.Probes {
			if pc.DMaxAuto {
				auto[pc.Name] = "dmax: auto in the processor"
			}
		}
	}
	return shut, nil
}

// configuredLayout returns the layout a front end's probe options fix:
// dmax and bins, or log-linear buckets (binning), which the probe's
// deltaq.observed then has from its first window on; false for neither
// (dmax: auto, or a layout that comes from a processor or the instances).
// An invalid binning is false too: its own check reports it.
func configuredLayout(dmax time.Duration, bins int, binning *deltaq.BinningConfig) (deltaq.Layout, bool) {
	if binning != nil {
		ll, errs := binning.LogLinear()
		if len(errs) > 0 {
			return deltaq.Layout{}, false
		}
		return deltaq.LogLinearLayout(ll)
	}
	if dmax > 0 && bins > 0 {
		return deltaq.Layout{DMaxNs: int64(dmax), Bins: bins}, true
	}
	return deltaq.Layout{}, false
}

// SLOQoO gives the probes their --qoo objectives, qoo by probe name (""
// for a bare --qoo): a named probe must have a qoo requirement, a bare
// --qoo applies to every probe that has one. A probe with a QoO objective
// and no QTA joins the list.
func SLOQoO(l *Loaded, probes []slo.Probe, qoo map[string]slo.QoOObjective) ([]slo.Probe, error) {
	if len(qoo) == 0 {
		return probes, nil
	}
	for name := range qoo {
		if pc, ok := l.Analysis.Probes[name]; name != "" && (!ok || pc.QoO.IsZero()) {
			return nil, fmt.Errorf("%s: --qoo %s=…: probe %q has no qoo requirement (its rop and cpup) to score its windows against", l.Where, name, name)
		}
	}
	var names []string
	for name, pc := range l.Analysis.Probes {
		if !pc.QoO.IsZero() {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if _, bare := qoo[""]; bare && len(names) == 0 {
		// It would apply to nothing, without a word.
		return nil, fmt.Errorf("%s: --qoo: no probe has a qoo requirement (its rop and cpup) to score its windows against", l.Where)
	}
	for _, name := range names {
		q, ok := qoo[name]
		if !ok {
			if q, ok = qoo[""]; !ok {
				continue
			}
		}
		i := slices.IndexFunc(probes, func(p slo.Probe) bool { return p.Name == name })
		if i < 0 {
			probes = append(probes, slo.Probe{Name: name})
			i = len(probes) - 1
		}
		probes[i].QoO, probes[i].Interval = &q, l.Analysis.Interval
	}
	return probes, nil
}

// bucketBounds returns the explicit bounds of deltaq.observed for a layout
// in seconds, as the connector writes them, and a description.
func bucketBounds(l deltaq.Layout) ([]float64, string, error) {
	if l.IsLogLinear() {
		ns, err := l.LogLinear.Edges()
		if err != nil {
			return nil, "", err
		}
		b := make([]float64, len(ns)-1)
		for i := range b {
			b[i] = float64(ns[i+1]) / 1e9
		}
		return b, fmt.Sprintf("%d log-linear buckets up to %s", len(b), l.DMax()), nil
	}
	w, bins := l.Grid()
	desc := fmt.Sprintf("%d bins of %s up to %s", bins, time.Duration(math.Round(w*1e9)), l.DMax())
	return core.BucketBounds(w, bins), desc, nil
}
