// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/autorange"
)

// autoProbes are the probes matched in the spans that choose their own dMax
// (`dmax: auto`, SpanProbes.Auto): a range each (internal/autorange), fed
// every matched span's delay and every real-time timeout, stepped by the
// window timer. The engine reads an auto probe's layout — the range's dMax
// and the probe's bins — through Config.LookupLayout, and looks again
// whenever Config.LayoutGeneration moves: gen moves with every change, so
// the probe moves to its new layout at its next window boundary, as for a
// processor's auto probe (analysis, relayout.go).
type autoProbes struct {
	names  []string
	bins   []int
	ranges []*autorange.Range // by SpanProbes index, nil for a fixed probe
	byName map[string]int
	gen    atomic.Uint64
	// probeAttr are the instruments' probe attributes, by index.
	probeAttr []metric.MeasurementOption
}

// newAutoProbes returns the auto probes of sp; nil when it has none.
func newAutoProbes(sp *SpanProbes) *autoProbes {
	if sp == nil {
		return nil
	}
	var a *autoProbes
	for i, ap := range sp.Auto {
		if ap == nil {
			continue
		}
		if a == nil {
			n := len(sp.Names)
			a = &autoProbes{names: sp.Names, bins: make([]int, n), ranges: make([]*autorange.Range, n),
				byName: map[string]int{}, probeAttr: make([]metric.MeasurementOption, n)}
		}
		a.bins[i] = ap.Bins
		a.ranges[i] = autorange.New(ap.Options, ap.Bins)
		a.byName[sp.Names[i]] = i
		a.probeAttr[i] = attrOption("probe", sp.Names[i])
	}
	return a
}

// configure makes ac look up the auto probes' layouts before the registry's.
func (a *autoProbes) configure(ac *analysis.Config) {
	if a == nil {
		return
	}
	lookup, gen := ac.LookupLayout, ac.LayoutGeneration
	ac.LookupLayout = func(probe string) (deltaq.Layout, bool) {
		if i, ok := a.byName[probe]; ok {
			return deltaq.Layout{DMaxNs: a.ranges[i].DMax(), Bins: a.bins[i]}, true
		}
		if lookup == nil {
			return deltaq.Layout{}, false
		}
		return lookup(probe)
	}
	ac.LayoutGeneration = func() uint64 {
		g := a.gen.Load()
		if gen != nil {
			g += gen()
		}
		return g
	}
}

// rangesOf returns the ranges by SpanProbes index; nil without auto probes.
func (a *autoProbes) rangesOf() []*autorange.Range {
	if a == nil {
		return nil
	}
	return a.ranges
}

// begin starts the first samples at now. Before the window timer runs.
func (a *autoProbes) begin(now time.Time) {
	if a == nil {
		return
	}
	for _, r := range a.ranges {
		if r != nil {
			r.Begin(now.UnixNano())
		}
	}
}

// step closes the samples due at now, announces each change of dMax (a log
// record, the self-telemetry) and has the engine look the layouts up again.
// Window timer only.
func (o *Observer) stepRanges(now time.Time) {
	a := o.auto
	if a == nil {
		return
	}
	ctx, ins := o.runCtx, o.spanIns
	for i, r := range a.ranges {
		if r == nil {
			continue
		}
		if ch, ok := r.Step(now.UnixNano()); ok {
			autorange.Log(o.logger, r, a.names[i], a.bins[i], ch, now.UnixNano())
			if ch.Suppressed {
				ins.DmaxChangesSuppressed.Add(ctx, 1, a.probeAttr[i])
			} else {
				a.gen.Add(1)
				ins.DmaxChanges.Add(ctx, 1, a.probeAttr[i])
			}
		}
		ins.Dmax.Record(ctx, time.Duration(r.DMax()).Seconds(), a.probeAttr[i])
	}
}

// announceAuto logs the auto probes that start learning their delays.
func (o *Observer) announceAuto() {
	a := o.auto
	if a == nil {
		return
	}
	for i, r := range a.ranges {
		if r == nil {
			continue
		}
		if decided, _ := r.Decided(); !decided {
			o.logger.Info("deltaq: probe with dmax: auto, learning its delays", zap.String("probe", a.names[i]),
				zap.Duration("dmax", time.Duration(r.DMax())), zap.Int("bins", a.bins[i]))
		}
	}
}

// parkedRange is what an auto probe hands to its successor across a
// reload.
type parkedRange struct {
	bins      int
	dMax, ref int64
}

// parkRanges returns the decided auto probes' state, by name.
func (a *autoProbes) parkRanges() map[string]parkedRange {
	if a == nil {
		return nil
	}
	out := map[string]parkedRange{}
	for i, r := range a.ranges {
		if r == nil {
			continue
		}
		if decided, ref := r.Decided(); decided {
			out[a.names[i]] = parkedRange{bins: a.bins[i], dMax: r.DMax(), ref: ref}
		}
	}
	return out
}

// adoptRanges makes each auto probe keep the dMax its predecessor had
// chosen, when it had the same bins and the dMax is within the new bounds:
// a reload does not send the probe back to learning.
func (a *autoProbes) adoptRanges(old map[string]parkedRange) {
	if a == nil {
		return
	}
	for name, p := range old {
		i, ok := a.byName[name]
		if ok && a.bins[i] == p.bins && a.ranges[i].Adopt(p.dMax, p.ref) {
			a.gen.Add(1)
		}
	}
}

// censor counts a real-time timeout of probe i, which has no delay, in its
// range, if it is an auto probe.
func (sp *spanProbes) censor(i int) {
	if sp.isAuto(int32(i)) {
		sp.ranges[i].Censor()
	}
}

// isAuto reports whether probe i has dmax: auto.
func (sp *spanProbes) isAuto(i int32) bool { return sp.ranges != nil && sp.ranges[i] != nil }

// autoMask returns, by probe, whether it has dmax: auto.
func (sp *spanProbes) autoMask() []bool {
	m := make([]bool, len(sp.Names))
	for i := range m {
		m[i] = sp.isAuto(int32(i))
	}
	return m
}
