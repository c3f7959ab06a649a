// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
)

// The analysis resolution. Every accumulator counts its instances twice:
// in the probe's layout (dMax and bins, or log-linear buckets), what the
// user sees — the exported histogram, the timeout verdict, the curve, the
// band — and at the analysis resolution (deltaq.Fine, relative error under
// 1 %), each success at its own delay even when it ended after the
// probe's dMax. The window's analysis reads the second:
//
//   - Analysis, the probe's ΔQ up to its dMax on a grid of at most
//     deltaq.AnalysisBins bins (deltaq.AnalysisWidth of the dMax), for the
//     QTA checks and the QoO score of a probe that has them (others have
//     none: Observed stands for it); the quantiles, the QoO score's
//     percentiles and the QTA breach tests straight from the counts;
//   - for a probe of the diagram, its input: its ΔQ up to its analysis
//     range, the largest dMax of the probe and of every whole it enters
//     (analysisRange), so that a stage instance that ended after the
//     stage's dMax — a timeout of the stage — still enters the whole's
//     composition with its completion time; with its bounds;
//   - for a calculated probe, its observed ΔQ on the grid of the diagram.
//
// The diagram's grid is one for all its probes, of width AnalysisWidth of
// the largest delay its probes' instances reached within their ranges:
// every operand on one grid, a grid as fine as the window's delays need,
// widths of different windows whole multiples of each other.

// analysisRange returns the probe's analysis range, ns: the largest dMax of
// the probe and of every whole of the diagram it enters.
func (a *analyzer) analysisRange(name string) int64 {
	r := a.layOf[name].DMaxNs
	for _, w := range a.wholesOf[name] {
		r = max(r, a.layOf[w].DMaxNs)
	}
	return r
}

// fineAnalysis sets, for every probe of the window with analysis counts,
// its Analysis ΔQ, and for the diagram's probes their inputs, the inputs'
// bounds, the observed ΔQs the divergence test reads, and whether they are
// under-resolved on the diagram's grid. A probe whose counts include
// windows merged without analysis counts keeps its observed ΔQ for all of
// these (observe).
func (a *analyzer) fineAnalysis(r *Result) {
	clear(a.divObs)
	clear(a.divObsBounds)
	clear(a.reach)
	var top int64
	for j := range r.Probes {
		pr := &r.Probes[j]
		if pr.fine != nil && a.inDiagram[pr.Name] {
			a.reach[pr.Name] = pr.fine.Reach(a.analysisRange(pr.Name))
			top = max(top, a.reach[pr.Name])
		}
	}
	wd := a.diagramWidth(top)
	for j := range r.Probes {
		pr := &r.Probes[j]
		if pr.fine == nil {
			continue
		}
		// Under-resolved is of the diagram's grid alone (diagramInput),
		// never of the display's bins.
		pr.UnderResolved = false
		delete(a.coarse, pr.Name)
		if !a.needsAnalysis(pr.Name) {
			continue // quantiles from the counts; nothing reads the grid
		}
		w := deltaq.AnalysisWidth(pr.fineCut)
		dq, err := pr.fine.Grid(w, deltaq.GridBins(pr.fineCut, w), pr.fineCut)
		if err != nil {
			pr.fine = nil
			continue
		}
		pr.Analysis, pr.AnalysisWidth = &dq, w
		if a.inDiagram[pr.Name] {
			a.diagramInput(pr, wd)
		}
	}
}

// diagramWidth returns the width of the diagram's grid for a window whose
// probes reached top ns: deltaq.AnalysisWidth(top), doubled while some
// definition's calculated ΔQ would need more than deltaq.MaxBins bins on
// it. A sequence's ΔQ spans the sum of its parts' (a convolution has
// N_A + N_B bins), so a chain of 17 stages each reaching top, 4096 bins
// apiece, would otherwise fail to compose and leave the whole without a
// calculated ΔQ. Doubling keeps the widths of different windows whole
// multiples of each other.
func (a *analyzer) diagramWidth(top int64) float64 {
	wd := deltaq.AnalysisWidth(top)
	if a.cfg.diagram == nil {
		return wd
	}
	// A chain of more than MaxBins components needs more bins than any
	// width gives: the doublings stop, as they do once nothing shrinks.
	for range 64 {
		if a.diagramBins(wd) <= deltaq.MaxBins || deltaq.GridBins(max(top, 1), wd) <= 1 {
			break
		}
		wd *= 2
	}
	return wd
}

// diagramBins returns the most bins any definition's calculated ΔQ has
// when the diagram's inputs are read on the grid of width wd, as
// diagramInput reads them (their reach): a chain's are the sum of its
// components', an operator's the most of its branches' (Align), a
// reference s:x's those of x's input when x has instances (Evaluate
// reads its observed ΔQ), else those of x's definition.
func (a *analyzer) diagramBins(wd float64) int {
	d := a.cfg.diagram
	defs := make(map[string]*diagram.Definition, len(d.Defs))
	for _, def := range d.Defs {
		defs[def.Name] = def
	}
	memo := make(map[string]int, len(d.Defs))
	input := func(name string) (int, bool) {
		r, ok := a.reach[name]
		if !ok {
			return 0, false
		}
		return deltaq.GridBins(max(r, 1), wd), true
	}
	var ofChain func(c *diagram.Chain) int
	ofDef := func(name string) int {
		if n, ok := memo[name]; ok {
			return n
		}
		memo[name] = 1 // validation rules out cycles
		n := 1
		if def := defs[name]; def != nil {
			n = ofChain(def.Chain)
		}
		memo[name] = n
		return n
	}
	ofChain = func(c *diagram.Chain) int {
		n := 0
		for _, el := range c.Elems {
			switch x := el.(type) {
			case *diagram.Outcome:
				b, _ := input(x.Name)
				n += max(b, 1)
			case *diagram.ProbeRef:
				if b, ok := input(x.Name); ok {
					n += b
				} else {
					n += ofDef(x.Name)
				}
			case *diagram.Operator:
				m := 1
				for _, br := range x.Branches {
					m = max(m, ofChain(br))
				}
				n += m
			}
			n = min(n, math.MaxInt32) // no overflow, whatever the chain
		}
		return n
	}
	most := 0
	for _, def := range d.Defs {
		most = max(most, ofDef(def.Name))
	}
	return most
}

// needsAnalysis reports whether anything reads the probe's Analysis grid:
// its QTA check or its QoO score, or the divergence test of a probe of the
// diagram.
func (a *analyzer) needsAnalysis(name string) bool {
	if a.inDiagram[name] {
		return true
	}
	pc, ok := a.cfg.Probes[name]
	return ok && (!pc.QTA.IsZero() || !pc.QoO.IsZero())
}

// diagramInput sets the probe's diagram input and its bounds on the
// diagram's grid of width wd, up to its analysis range, and its observed ΔQ
// there up to its own dMax (or as far as MaxBins reach: beyond the
// diagram's largest delay nothing is observed).
func (a *analyzer) diagramInput(pr *ProbeResult, wd float64) {
	rng := a.analysisRange(pr.Name)
	bins := deltaq.GridBins(max(pr.fine.Reach(rng), 1), wd)
	ext, err := a.grid(pr, wd, bins, rng)
	if err != nil {
		return
	}
	// A calculated probe's observed ΔQ, read on n bins up to its dMax.
	n := 0
	if a.calculated[pr.Name] {
		// Beyond the probe's own reach and the sum of its inputs', where its
		// calculated ΔQ ends, neither CDF changes.
		end := a.reach[pr.Name]
		sum := int64(0)
		for _, in := range a.inputsOf[pr.Name] {
			sum += a.reach[in]
		}
		n = min(deltaq.GridBins(pr.fineCut, wd), deltaq.GridBins(max(end, sum, 1), wd), deltaq.MaxBins)
	}
	b, long, haveLong := a.inputBounds(pr, wd, bins, n, rng)
	if b.Pessimistic.Bins() == 0 {
		return
	}
	a.inputs[pr.Name] = ext
	a.llBounds[pr.Name] = b
	pr.DiagramWidth = wd
	if firstBinHolds(ext) {
		a.coarse[pr.Name] = true
	} else {
		delete(a.coarse, pr.Name)
	}
	pr.UnderResolved = a.coarse[pr.Name]
	if n > 0 {
		obs, err1 := a.grid(pr, wd, n, pr.fineCut)
		var ob deltaq.Bounds
		var err2 error
		switch {
		case rng == pr.fineCut && n <= bins:
			ob = deltaq.Bounds{Pessimistic: b.Pessimistic.Head(n), Optimistic: b.Optimistic.Head(n), Strict: b.Strict}
		case haveLong:
			ob = long
		default:
			ob, err2 = pr.fine.GridBounds(wd, n, pr.fineCut)
		}
		if err1 == nil && err2 == nil {
			a.divObs[pr.Name], a.divObsBounds[pr.Name] = obs, ob
		}
	}
}

// inputBounds returns the bounds of the probe's input, its analysis counts
// read on bins bins of width wd up to rng (GridBounds; none, of no bins, on
// an error), and, for a calculated probe whose observed ΔQ is read on
// n > bins bins up to the same cut, the bounds on n bins (long, haveLong).
// Those are read first, and their head on bins is the input's bounds when
// neither bound has mass beyond bins: the two readings then count the same
// buckets into the same bins, to the bit. Bins covers the probe's reach, so
// that it does but for the rounding of a bucket edge to the grid; the
// bounds' CDFs, the running counts over the total, tell: below 2⁵³
// instances distinct counts make distinct CDFs.
func (a *analyzer) inputBounds(pr *ProbeResult, wd float64, bins, n int, rng int64) (b, long deltaq.Bounds, haveLong bool) {
	if n > bins && rng == pr.fineCut && pr.Counts.Total() < 1<<53 {
		var err error
		if long, err = pr.fine.GridBounds(wd, n, rng); err == nil {
			haveLong = true
			p, o := long.Pessimistic.Head(bins), long.Optimistic.Head(bins)
			if p.Tangible() == long.Pessimistic.Tangible() && o.Tangible() == long.Optimistic.Tangible() {
				return deltaq.Bounds{Pessimistic: p, Optimistic: o, Strict: long.Strict}, long, true
			}
		}
	}
	b, err := pr.fine.GridBounds(wd, bins, rng)
	if err != nil {
		return deltaq.Bounds{}, long, haveLong
	}
	return b, long, haveLong
}

// grid returns the probe's analysis counts read on bins bins of width w up
// to cut (LogLinearHistogram.Grid): the head of its Analysis ΔQ, the
// reading up to its dMax that fineAnalysis has just set, when that is of
// the same width and cut on at least as many bins (deltaq.DeltaQ.Head), as
// for a probe whose dMax is its analysis range.
func (a *analyzer) grid(pr *ProbeResult, w float64, bins int, cut int64) (deltaq.DeltaQ, error) {
	if an := pr.Analysis; an != nil && pr.AnalysisWidth == w && cut == pr.fineCut && bins <= an.Bins() {
		return an.Head(bins), nil
	}
	return pr.fine.Grid(w, bins, cut)
}

// ownRange returns a calculated ΔQ of the probe cut at the probe's own
// dMax, where its observed ΔQ stops: the parts' instances beyond it (up to
// the analysis range) make the whole's timeouts, intangible here as in
// the observed ΔQ. Unchanged when the probe's dMax is unknown or beyond dq.
func (a *analyzer) ownRange(name string, dq deltaq.DeltaQ) deltaq.DeltaQ {
	own := a.layOf[name].DMaxNs
	if own <= 0 {
		return dq
	}
	n := deltaq.GridBins(own, dq.Width())
	if n >= dq.Bins() {
		return dq
	}
	t, err := deltaq.Truncate(dq, n)
	if err != nil {
		return dq
	}
	return t
}

// effectiveN returns the probe's effective instance count
// (ProbeResult.EffectiveInstances, Kish's), rounded, at least 1 for a
// window with instances: the n of the binomial tests of its QTA and
// failure ratio, so that sampled instances, each standing for many, weigh
// as the information they carry and no more.
func effectiveN(pr *ProbeResult) int64 {
	if pr.Counts.Total() == 0 {
		return 0
	}
	return max(int64(math.Round(pr.EffectiveInstances)), 1)
}

// firstBinHolds reports whether half of dq's successes (and some) lie in
// its first bin: the grid is too coarse for them (under-resolved).
func firstBinHolds(dq deltaq.DeltaQ) bool {
	p0 := dq.CDF(dq.Width())
	return p0 > 0 && 2*p0 >= dq.Tangible()
}

// display puts the window's calculated and what-if ΔQs, composed on the
// diagram's analysis grid, on each probe's own grid — its layout's bins,
// or for log-linear buckets the grid its observed ΔQ is read on — where
// they are shown beside its observed ΔQ: exported curves, snapshots,
// plots. The analysis grid changes with the window's delays, so curves on
// it would name new edges (deltaq.le) every window. Everything the
// analysis reads of them (QTA verdicts, quantiles, divergence, QoO) was
// read before, on the analysis grid. A probe without a layout yet is shown
// on deltaq.AnalysisBins bins up to the largest dMax of the window's
// probes, which changes only when their layouts do.
func (a *analyzer) display(r *Result) {
	var top int64
	for _, l := range a.layOf {
		top = max(top, l.DMaxNs)
	}
	for j := range r.Probes {
		pr := &r.Probes[j]
		w, bins := 0.0, 0
		if l := a.layOf[pr.Name]; l.Valid() {
			w, bins = l.Grid()
		} else if top > 0 {
			w = deltaq.AnalysisWidth(top)
			bins = deltaq.GridBins(top, w)
		}
		if bins == 0 {
			continue
		}
		if pr.Calculated != nil {
			d := onGrid(*pr.Calculated, w, bins)
			pr.Calculated = &d
		}
		for k := range pr.WhatIf {
			if d := pr.WhatIf[k].DeltaQ; d != nil {
				g := onGrid(*d, w, bins)
				pr.WhatIf[k].DeltaQ = &g
			}
		}
	}
}

// onGrid returns d read at the edges of bins bins of width w: its CDF at
// each edge (any mass beyond the last intangible), d's Count kept; d
// itself when it is on that grid already or cannot be read on it.
func onGrid(d deltaq.DeltaQ, w float64, bins int) deltaq.DeltaQ {
	if d.Bins() == bins && math.Abs(d.Width()-w) <= 1e-9*w {
		return d
	}
	cdf := make([]float64, bins)
	for k := range cdf {
		cdf[k] = d.CDF(float64(k+1) * w)
	}
	g, err := deltaq.FromCDF(w, cdf)
	if err != nil {
		return d
	}
	return g.WithCount(d.Count())
}
