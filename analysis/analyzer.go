// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
)

// analyzer holds the state that outlives a window: per-probe windows of
// observed ΔQs for the band, running totals, trigger states and the snapshot recorder. It is
// used under Engine.amu.
type analyzer struct {
	cfg *compiled
	// saturated counts the running totals that reached math.MaxInt64
	// (Counts.add) since the engine last collected them.
	saturated int64
	probes    map[string]*probeState
	// calculated marks the diagram probes that have a calculated ΔQ (a
	// definition or an operator; an outcome's "calculated" ΔQ would only be
	// its observed one).
	calculated map[string]bool
	// inputsOf holds, for each probe the diagram calculates, the probes
	// whose observed ΔQ can enter its calculated ΔQ (see diagramInputs);
	// wholesOf the reverse, for each such input the probes it enters.
	inputsOf, wholesOf map[string][]string
	// inDiagram marks the probes of the diagram.
	inDiagram map[string]bool
	// layOf holds the window's layout of every probe tracked (zero: none
	// yet); divObs the observed ΔQs of the diagram's calculated probes on
	// the grid of their calculated ΔQs (fine.go); reused across windows.
	layOf        map[string]deltaq.Layout
	divObs       map[string]deltaq.DeltaQ
	divObsBounds map[string]deltaq.Bounds
	// reach holds the largest delay each diagram probe's instances reached
	// within its analysis range in the window, ns (fine.go).
	reach map[string]int64
	// referenced are the probes the configuration expects instances of:
	// the diagram's outcomes and the entries of Config.Probes, sorted.
	referenced []string
	snap       snapshotRecorder
	inputs     map[string]deltaq.DeltaQ // reused across windows
	// pessIn and optIn are the inputs' pessimistic and optimistic bounds;
	// llBounds those of the window's log-linear probes (logLinearBounds).
	pessIn, optIn map[string]deltaq.DeltaQ
	llBounds      map[string]deltaq.Bounds
	coarse        map[string]bool // reused across windows
	counts        []float64       // reused by calculatedCount
	nextID        int64
	// whatIfSaved holds the observed ΔQs a scenario replaces in inputs
	// (see whatIf), reused across windows.
	whatIfSaved []savedInput

	// effective holds the effective instance counts of the window's
	// observed ΔQs (ProbeResult.EffectiveInstances), for the divergence
	// test; reused across windows.
	effective map[string]float64
}

// probeState is what the analyzer remembers of one probe.
type probeState struct {
	name   string
	cfg    ProbeConfig
	qta    *deltaq.QTA // cfg.QTA in seconds
	totals Counts
	// width, bins and edges (log-linear buckets, else nil) are the layout
	// of the probe's last window with instances.
	width float64
	bins  int
	edges []float64
	// band is the window of the last Config.History observed ΔQs.
	band *deltaq.RunningBand
	trig [numTriggers]trigger
	div  divergenceState
	// slack holds the minimum QTA slack of the last windows with one.
	slack slackHistory
}

// divergenceState is a probe's divergence test and trigger settings, with
// the windows the test pools and the run of significant windows.
type divergenceState struct {
	// alpha is the trigger's level, 0 when the trigger is off; floor is
	// max_divergence; windows the run of significant windows that fires;
	// target divergence::target.
	alpha, floor, target float64
	windows              int
	// paired is divergence::paired.
	paired bool
	// pool holds the last windows with a divergence, oldest first, at most
	// cap(pool) = divergence::pool of them; nil without pooling.
	pool []pooledWindow
	// run counts the consecutive significant windows, up to windows.
	run int
}

// pooledWindow is one window's share of a pooled divergence test: its
// observed ΔQ of n instances and its calculated ΔQ worth m, with the
// calculated ΔQ's bounds and their width.
type pooledWindow struct {
	obs, calc deltaq.DeltaQ
	bounds    deltaq.Bounds
	// obsBounds bound the observed ΔQ: read on a grid finer than the
	// buckets it was counted in, it is exact only at their edges.
	obsBounds deltaq.Bounds
	width     float64
	n, m      float64
}

// slackHistory is the minimum QTA slack of the last windows that had one,
// oldest first: at most w of them, with its binomial variance.
type slackHistory struct {
	w   int
	end []int64 // window end, Unix ns
	min []float64
	v   []float64
	// q is Student's t quantile of confidence qConf and qNu degrees of
	// freedom, kept: it is costly and rarely changes.
	q, qConf float64
	qNu      int
}

func newAnalyzer(cfg *compiled) *analyzer {
	a := &analyzer{
		cfg:          cfg,
		probes:       make(map[string]*probeState),
		calculated:   make(map[string]bool),
		inputs:       make(map[string]deltaq.DeltaQ),
		pessIn:       make(map[string]deltaq.DeltaQ),
		optIn:        make(map[string]deltaq.DeltaQ),
		llBounds:     make(map[string]deltaq.Bounds),
		coarse:       make(map[string]bool),
		effective:    make(map[string]float64),
		inDiagram:    make(map[string]bool),
		layOf:        make(map[string]deltaq.Layout),
		divObs:       make(map[string]deltaq.DeltaQ),
		divObsBounds: make(map[string]deltaq.Bounds),
		reach:        make(map[string]int64),
	}
	ref := make(map[string]bool)
	for n := range cfg.Probes {
		ref[n] = true
	}
	if cfg.diagram != nil {
		for _, p := range cfg.diagram.Probes() {
			if p.Kind != diagram.OutcomeProbe {
				a.calculated[p.Name] = true
			} else {
				ref[p.Name] = true
			}
		}
		a.inputsOf = diagramInputs(cfg.diagram)
		a.wholesOf = make(map[string][]string)
		for whole, ins := range a.inputsOf {
			for _, n := range ins {
				a.wholesOf[n] = append(a.wholesOf[n], whole)
			}
		}
		for _, p := range cfg.diagram.Probes() {
			a.inDiagram[p.Name] = true
		}
	}
	for n := range ref {
		a.referenced = append(a.referenced, n)
	}
	sort.Strings(a.referenced)
	a.snap.cfg = cfg.snapshot
	return a
}

// diagramInputs returns, for each definition and operator of a validated
// diagram, the probes whose observed ΔQ can enter its calculated ΔQ: the
// outcomes in its expression, and for a reference s:x, x itself (its
// observed ΔQ when there is one) and x's own inputs (its calculated ΔQ
// otherwise); an operator nested in the expression contributes its
// branches' inputs (diagram.Evaluate uses an operator's calculated ΔQ).
func diagramInputs(d *diagram.Diagram) map[string][]string {
	defs := make(map[string]*diagram.Definition, len(d.Defs))
	for _, def := range d.Defs {
		defs[def.Name] = def
	}
	sets := make(map[string]map[string]bool)
	var ofDef func(name string) map[string]bool
	var ofChain func(c *diagram.Chain, into map[string]bool)
	ofChain = func(c *diagram.Chain, into map[string]bool) {
		if c == nil {
			return
		}
		for _, el := range c.Elems {
			switch x := el.(type) {
			case *diagram.Outcome:
				into[x.Name] = true
			case *diagram.ProbeRef:
				into[x.Name] = true
				for n := range ofDef(x.Name) {
					into[n] = true
				}
			case *diagram.Operator:
				own := make(map[string]bool)
				for _, b := range x.Branches {
					ofChain(b, own)
				}
				sets[x.Name] = own
				for n := range own {
					into[n] = true
				}
			}
		}
	}
	ofDef = func(name string) map[string]bool {
		if s, ok := sets[name]; ok {
			return s // done, or being walked (validation rules out cycles)
		}
		def := defs[name]
		if def == nil {
			return nil
		}
		s := make(map[string]bool)
		sets[name] = s
		ofChain(def.Chain, s)
		return s
	}
	for _, def := range d.Defs {
		ofDef(def.Name)
	}
	out := make(map[string][]string, len(sets))
	for name, s := range sets {
		names := make([]string, 0, len(s))
		for n := range s {
			names = append(names, n)
		}
		sort.Strings(names)
		out[name] = names
	}
	return out
}

// knownProbes returns the probes that exist from the start: the configured
// ones (Probes, ConfiguredProbes) and every probe of the diagram, sorted.
func (a *analyzer) knownProbes() []string {
	seen := make(map[string]bool)
	var names []string
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for n := range a.cfg.Probes {
		add(n)
	}
	for _, n := range a.cfg.ConfiguredProbes {
		add(n)
	}
	if a.cfg.diagram != nil {
		for _, p := range a.cfg.diagram.Probes() {
			add(p.Name)
		}
	}
	sort.Strings(names)
	return names
}

func (a *analyzer) state(name string) *probeState {
	if s := a.probes[name]; s != nil {
		return s
	}
	s := &probeState{name: name, cfg: a.cfg.Probes[name]}
	if !s.cfg.QTA.IsZero() {
		// Config.Check checked the QTA with deltaq.NewQTA.
		q, _ := s.cfg.QTA.DeltaQ()
		s.qta = &q
	}
	// withDefaults made History ≥ 1, the only error of NewRunningBandAt.
	s.band, _ = deltaq.NewRunningBandAt(a.cfg.History, a.cfg.BandPoints)
	tr := s.cfg.Triggers
	s.div.target = tr.Divergence.Target
	if tr.Divergence.on(tr.MaxDivergence) {
		s.div.alpha, s.div.floor, s.div.windows = tr.Divergence.Alpha, tr.MaxDivergence, max(1, tr.Divergence.Windows)
		if s.div.alpha == 0 {
			s.div.alpha = DefaultDivergenceAlpha
		}
	}
	s.div.paired = tr.Divergence.Paired
	if tr.Divergence.Pool > 1 {
		s.div.pool = make([]pooledWindow, 0, tr.Divergence.Pool)
	}
	s.slack.w = tr.SlackTrend.Windows
	if s.slack.w == 0 {
		s.slack.w = DefaultSlackTrendWindows
	}
	a.probes[name] = s
	return s
}

// close analyses one detached window: the observed ΔQs of all its probes
// first (the diagram needs all of them), then the diagram's calculated ΔQs,
// then each probe against its history, QTA and triggers, then the what-if
// scenarios.
func (a *analyzer) close(c *closing) *Result {
	r := &Result{
		Start:          time.Unix(0, c.start).UTC(),
		End:            time.Unix(0, c.end).UTC(),
		SamplingPeriod: time.Duration(c.to - c.from),
	}
	a.observe(r, c)
	var ev, evP, evO *diagram.Evaluation
	if a.cfg.diagram != nil {
		// Evaluate fails only for a diagram that was not validated, which
		// diagram.Parse rules out.
		ev, _ = a.cfg.diagram.Evaluate(a.inputs)
		clear(a.pessIn)
		clear(a.optIn)
		for n, dq := range a.inputs {
			if b, ok := a.llBounds[n]; ok {
				a.pessIn[n], a.optIn[n] = b.Pessimistic, b.Optimistic
				continue
			}
			a.pessIn[n], a.optIn[n] = dq.Pessimistic(), dq.Optimistic()
		}
		evP, _ = a.cfg.diagram.Evaluate(a.pessIn)
		evO, _ = a.cfg.diagram.Evaluate(a.optIn)
	}
	for j := range r.Probes {
		a.analyseProbe(r, &r.Probes[j], ev, calcBounds{evP, evO})
	}
	a.whatIf(r)
	a.display(r)
	for _, n := range a.referenced {
		if i, ok := sort.Find(len(r.Probes), func(j int) int { return strings.Compare(n, r.Probes[j].Name) }); !ok || r.Probes[i].Counts.Total() == 0 {
			r.NoInstances = append(r.NoInstances, n)
		}
	}
	a.snap.window(r, &a.nextID)
	for _, n := range c.forget {
		delete(a.probes, n)
	}
	return r
}

// observe sets r.Probes to the window's probes sorted by name, with their
// counts and observed ΔQs, and records the observed ΔQs (a.inputs) and the
// under-resolved probes (a.coarse) of the window.
func (a *analyzer) observe(r *Result, c *closing) {
	order := make([]int, len(c.names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return c.names[order[x]] < c.names[order[y]] })
	r.Probes = make([]ProbeResult, len(order))
	clear(a.layOf)
	for i, n := range c.names {
		a.layOf[n] = c.lays[i]
	}
	clear(a.inputs)
	clear(a.coarse)
	clear(a.effective)
	clear(a.llBounds)
	for j, i := range order {
		pr := &r.Probes[j]
		pr.Name = c.names[i]
		ac := c.accs[i]
		if ac == nil || ac.total() == 0 {
			continue
		}
		var dq deltaq.DeltaQ
		var err error
		if h := ac.ll; h != nil {
			pr.Counts = Counts{Success: h.Successes(), Timeout: h.Timeouts(), Failure: h.Failures()}
			pr.Width, pr.Bins = ac.lay.Grid()
			pr.BinCounts = append([]uint64(nil), h.Counts()...)
			pr.Edges = upperEdges(h.Edges())
			pr.LogLinear = h.Layout()
			pr.UnderResolved = underResolvedCounts(h.Counts(), h.Successes())
			dq, err = h.DeltaQ(pr.Width)
			if b, ok := logLinearBounds(pr); ok {
				a.llBounds[pr.Name] = b
			}
		} else {
			h := ac.hist
			pr.Counts = Counts{Success: h.Successes(), Timeout: h.Timeouts(), Failure: h.Failures()}
			pr.Width, pr.Bins = h.Width(), h.Bins()
			pr.BinCounts = append([]uint64(nil), h.Counts()...)
			pr.UnderResolved = underResolvedCounts(h.Counts(), h.Successes())
			dq, err = h.DeltaQ()
		}
		pr.SuccessSum = ac.sum
		pr.OtherLayouts = ac.converted
		pr.WeightSum, pr.WeightSquares = ac.weights(pr.Counts.Total())
		pr.Exemplars = ac.picks.exemplars()
		pr.Worst = ac.picks.worstInstances()
		pr.EffectiveInstances = ac.effective(pr.Counts.Total())
		a.effective[pr.Name] = pr.EffectiveInstances
		if pr.UnderResolved {
			a.coarse[pr.Name] = true
		}
		if err == nil {
			pr.Observed = &dq
			pr.Analysis = &dq
			pr.AnalysisWidth = dq.Width()
			a.inputs[pr.Name] = dq
		}
		if ac.fineComplete() {
			if a.cfg.WindowCounts {
				pr.FineIndex, pr.FineCounts = ac.fine.Sparse()
			}
			pr.fineComplete = a.cfg.WindowCounts
			if a.layOf[pr.Name].DMaxNs > 0 {
				pr.fine, pr.fineCut = ac.fine, a.layOf[pr.Name].DMaxNs
				pr.converted = ac.converted
			}
		}
	}
	a.fineAnalysis(r)
}

// logLinearBounds returns the bounds of a log-linear probe's window on its
// grid: the observed ΔQ spreads a bucket [eⱼ, eⱼ₊₁) over the grid bins it
// overlaps, so moving each grid bin's mass to an edge would not bound its
// instances. Each bucket's count goes instead whole to the first grid edge
// at or above eⱼ₊₁ (pessimistic) and to the last grid edge strictly below
// eⱼ (optimistic; the first bucket to 0), so that the bounds hold, strictly,
// for instances anywhere in their buckets (an instance of exactly 0 delay
// is the one exception the strict reading misses).
func logLinearBounds(pr *ProbeResult) (deltaq.Bounds, bool) {
	n := float64(pr.Counts.Total())
	w, bins := pr.Width, pr.Bins
	if !(n > 0) || bins < 1 || len(pr.Edges) != len(pr.BinCounts) {
		return deltaq.Bounds{}, false
	}
	pess, opt := make([]float64, bins), make([]float64, bins)
	lo := 0.0
	for j, c := range pr.BinCounts {
		hi := pr.Edges[j]
		if c > 0 {
			m := float64(c) / n
			up := int(math.Ceil(hi/w-1e-9)) - 1 // bin whose upper edge is ≥ hi
			pess[min(max(up, 0), bins-1)] += m
			down := max(int(math.Ceil(lo/w-1e-9))-1, 0) // last edge < lo
			opt[min(down, bins-1)] += m
		}
		lo = hi
	}
	p, err1 := deltaq.New(w, pess)
	o, err2 := deltaq.New(w, opt)
	if err1 != nil || err2 != nil {
		return deltaq.Bounds{}, false
	}
	return deltaq.Bounds{Pessimistic: p.Pessimistic(), Optimistic: o.Optimistic(), Strict: true}, true
}

// upperEdges returns the upper edges, in seconds, of the buckets whose
// edges e₀ = 0 < e₁ < … are given in nanoseconds (deltaq.LogLinear.Edges):
// bucket j is [eⱼ, eⱼ₊₁).
func upperEdges(ns []int64) []float64 {
	out := make([]float64, len(ns)-1)
	for j := range out {
		out[j] = float64(ns[j+1]) / 1e9
	}
	return out
}

// analyseProbe completes one probe's result from its observed ΔQ and the
// diagram's evaluation ev (nil without a diagram): totals, calculated ΔQ,
// band, QTA check, quantiles and divergence, and steps its triggers.
func (a *analyzer) analyseProbe(r *Result, pr *ProbeResult, ev *diagram.Evaluation, eb calcBounds) {
	s := a.state(pr.Name)
	if pr.Bins > 0 {
		// A probe whose layout changed (a processor's dmax: auto, or a
		// reload) starts afresh: its totals restart with its histogram,
		// so that the output's counts and buckets stay one stream.
		if s.bins > 0 && (s.bins != pr.Bins || s.width != pr.Width || !slices.Equal(s.edges, pr.Edges)) {
			s.totals = Counts{}
		}
		s.width, s.bins, s.edges = pr.Width, pr.Bins, pr.Edges
	}
	if s.totals.add(pr.Counts) {
		a.saturated++
	}
	pr.Totals = s.totals
	if ev != nil && a.calculated[pr.Name] {
		if res, ok := ev.Result(pr.Name); ok && res.OK && res.Err == nil {
			dq := a.ownRange(pr.Name, res.DeltaQ)
			pr.Calculated = &dq
			if b := eb.of(pr.Name); b != nil {
				pr.Bounds = &deltaq.Bounds{Pessimistic: a.ownRange(pr.Name, b.Pessimistic),
					Optimistic: a.ownRange(pr.Name, b.Optimistic), Strict: b.Strict}
			}
		}
	}
	if pr.Bounds != nil {
		tmax := pr.Calculated.DMax()
		if obs, ok := a.divObs[pr.Name]; ok {
			tmax = math.Min(tmax, obs.DMax())
		} else if pr.Analysis != nil {
			tmax = math.Min(tmax, pr.Analysis.DMax())
		}
		pr.BoundsWidth = pr.Bounds.Width(tmax)
	}
	if pr.Observed != nil {
		// A ΔQ from Histogram.DeltaQ is valid, the only error of Push.
		// The band's binomial floor counts the spans behind the window,
		// not the instances their adjusted counts stand for.
		_ = s.band.PushInstances(*pr.Observed, pr.EffectiveInstances)
	}
	if b, ok := s.band.Band(); ok {
		pr.Band = &b
	}
	a.checkQTA(r, pr, s)
	pr.Quantiles = make([]QuantileValue, len(a.cfg.Quantiles))
	if pr.fine != nil {
		delays, ok := make([]float64, len(a.cfg.Quantiles)), make([]bool, len(a.cfg.Quantiles))
		pr.fine.QuantilesWithin(a.cfg.Quantiles, pr.fineCut, pr.completedWithin(), delays, ok)
		for k := range pr.Quantiles {
			pr.Quantiles[k].Observed, pr.Quantiles[k].ObservedOK = delays[k], ok[k]
		}
	}
	for k, q := range a.cfg.Quantiles {
		qv := pr.Quantiles[k]
		qv.Q = q
		if pr.fine == nil && pr.Analysis != nil {
			qv.Observed, qv.ObservedOK = pr.Analysis.Quantile(q)
		}
		if pr.Calculated != nil {
			qv.Calculated, qv.CalculatedOK = pr.Calculated.Quantile(q)
		}
		pr.Quantiles[k] = qv
	}
	a.divergence(pr, s)
	a.scoreQoO(r, pr, s)
	a.triggers(r, pr, s)
	pr.fine = nil // the engine reuses the histogram for a later window
}

// checkQTA sets the probe's QTA verdicts on its observed and calculated
// ΔQs, the p-values of its breaches, and its slack and the slack's trend.
func (a *analyzer) checkQTA(r *Result, pr *ProbeResult, s *probeState) {
	pr.QTA = s.qta
	pr.QTABreachP, pr.FailureBreachP = 1, 1
	if s.qta != nil && pr.Analysis != nil {
		qc := newQTACounts(pr)
		failure, least := qc.failed()
		if c, err := s.qta.CheckRead(failure, qc.read); err == nil {
			pr.QTACheck = &c
			pr.QTABreachP, pr.FailureBreachP = breaches(&c, qc.mayWithin, least, effectiveN(pr))
		}
	}
	if s.qta != nil && pr.Calculated != nil {
		pess := *pr.Calculated
		if pr.Bounds != nil {
			pess = pr.Bounds.Pessimistic
		}
		if c, err := s.qta.CheckBounded(*pr.Calculated, pess); err == nil {
			pr.CalculatedQTACheck = &c
		}
	}
	if pr.QTACheck != nil && len(pr.QTACheck.Points) > 0 {
		pr.Slack = slackOf(pr.QTACheck)
		s.slack.push(r.End, pr.Slack.Min, slackVariance(pr.QTACheck, pr.Slack.Min, effectiveN(pr)))
		st := s.cfg.Triggers.SlackTrend
		pr.Slack.Trend = s.slack.trend(st.Horizon, st.Confidence)
	}
}

// divergence tests the probe's observed ΔQ against its calculated one,
// beyond the calculated ΔQ's bounds, unless an input is under-resolved.
func (a *analyzer) divergence(pr *ProbeResult, s *probeState) {
	obs, ok := a.divObs[pr.Name]
	ob, fine := a.divObsBounds[pr.Name]
	if !ok && pr.Analysis != nil {
		obs, ok = *pr.Analysis, true
	}
	if !fine {
		ob = deltaq.BoundsOf(obs)
	}
	if ok && pr.Calculated != nil {
		if a.coarseInputs(pr.Name) {
			pr.DivergenceWithheld = true
		} else if d, err := deltaq.Distance(obs, *pr.Calculated); err == nil {
			pr.Divergence, pr.HasDivergence = d, true
			w := pooledWindow{
				obs: obs, obsBounds: ob, calc: *pr.Calculated, width: pr.BoundsWidth,
				n: pr.EffectiveInstances, m: a.calculatedCount(pr.Name, s.div.paired),
			}
			if pr.Bounds != nil {
				w.bounds = *pr.Bounds
			} else {
				w.bounds = deltaq.Bounds{Pessimistic: w.calc, Optimistic: w.calc}
			}
			pr.DivergenceTest, pr.DivergencePooled, pr.DetectableDivergence = s.div.test(w)
		}
	}
}

// underResolvedCounts reports whether at least half of the n successes of a
// window fell into the first bin, or the first log-linear bucket [0, low)
// (and there is at least one): delays shorter than one bin width w are
// then all read as the bin's midpoint w/2 (deltaq's convention), so each stage of a sequence adds up to w/2 of spurious delay
// to a calculated ΔQ — three 0.145 ms stages on 1 ms bins calculate to a
// median of 1.5 ms against an observed 0.5 ms — and the divergence between
// observed and calculated ΔQ says more about the bins than about the
// system.
func underResolvedCounts(counts []uint64, n int64) bool {
	return n > 0 && 2*counts[0] >= uint64(n)
}

// coarseInputs reports whether the probe, or a probe whose observed ΔQ can
// enter its calculated ΔQ, is under-resolved in the window being closed.
func (a *analyzer) coarseInputs(name string) bool {
	if a.coarse[name] {
		return true
	}
	for _, n := range a.inputsOf[name] {
		if a.coarse[n] {
			return true
		}
	}
	return false
}

// calculatedCount returns the instances the calculated ΔQ of a probe is
// worth in the window being closed, from the instance counts of the inputs
// of its expression that have an observed ΔQ: deltaq.EffectiveCount of
// them, or with paired inputs +Inf (an exact CDF) when none has fewer
// instances than the probe, else their EffectiveCount. For a reference
// s:x whose observed ΔQ was used, x's own inputs count too, though they
// did not enter: that lowers the count, which only makes the test more
// conservative.
func (a *analyzer) calculatedCount(name string, paired bool) float64 {
	a.counts = a.counts[:0]
	for _, n := range a.inputsOf[name] {
		if _, ok := a.inputs[n]; ok {
			a.counts = append(a.counts, a.effectiveCount(n))
		}
	}
	if paired && len(a.counts) > 0 {
		own := a.effectiveCount(name)
		if slices.Min(a.counts) >= own {
			return math.Inf(1)
		}
	}
	return deltaq.EffectiveCount(a.counts...)
}

// effectiveCount returns the effective instance count of the window's
// observed ΔQ of name: of sampled instances, fewer than the count they
// stand for (ProbeResult.EffectiveInstances).
func (a *analyzer) effectiveCount(name string) float64 {
	if n, ok := a.effective[name]; ok {
		return n
	}
	dq := a.inputs[name]
	return float64(dq.Count())
}

// calcBounds are the diagram's evaluations on the inputs' pessimistic and
// optimistic bounds; either may be nil.
type calcBounds struct{ pess, opt *diagram.Evaluation }

// of returns the bounds of a calculated probe, nil when either evaluation
// failed for it.
func (c calcBounds) of(name string) *deltaq.Bounds {
	if c.pess == nil || c.opt == nil {
		return nil
	}
	p, ok1 := c.pess.Result(name)
	o, ok2 := c.opt.Result(name)
	if !ok1 || !ok2 || !p.OK || !o.OK || p.Err != nil || o.Err != nil {
		return nil
	}
	// The inputs are observed (Spread) ΔQs: their delays lie strictly
	// above the lower edges of their bins.
	return &deltaq.Bounds{Pessimistic: p.DeltaQ, Optimistic: o.DeltaQ, Strict: true}
}

// test returns the Kolmogorov–Smirnov test of window w's distance beyond
// its calculated ΔQ's bounds, pooled with the previous windows when
// pooling is on, the number of windows tested and the detectable
// divergence. With divergence::target the pool is the fewest recent
// windows whose detectable divergence reaches the target (all of them
// when none does). A test that cannot be made (no effective count, which a
// calculated ΔQ made from observed ΔQs always has) has p-value 1.
func (ds *divergenceState) test(w pooledWindow) (deltaq.KSTest, int, float64) {
	alpha := ds.alpha
	if alpha == 0 {
		alpha = DefaultDivergenceAlpha
	}
	if w.obsBounds.Pessimistic.Bins() == 0 {
		w.obsBounds = deltaq.BoundsOf(w.obs) // exact at its edges
	}
	if ds.pool != nil {
		if len(ds.pool) == cap(ds.pool) {
			copy(ds.pool, ds.pool[1:])
			ds.pool = ds.pool[:len(ds.pool)-1]
		}
		ds.pool = append(ds.pool, w)
	}
	use := []pooledWindow{w}
	if ds.pool != nil {
		use = ds.pool
		if ds.target > 0 {
			for k := 1; k <= len(ds.pool); k++ {
				use = ds.pool[len(ds.pool)-k:]
				n, m := pooledCounts(use)
				if detectable(alpha, effective(n, m))+w.width <= ds.target {
					break
				}
			}
		}
	}
	ks, err := pooledTest(use)
	if err != nil {
		ks = deltaq.KSTest{N: w.n, M: w.m, P: 1}
	}
	width := 0.0
	for _, p := range use {
		width = math.Max(width, p.width)
	}
	return ks, len(use), detectable(alpha, effective(ks.N, ks.M)) + width
}

// pooledCounts returns the instances N of the pooled observed ΔQ and the
// instances M the pooled calculated ΔQ is worth. The pooled CDFs are the
// windows' CDFs weighted by their observed instances, wₖ = nₖ/N: the
// observed one is then the CDF of all N instances, and the calculated one,
// whose windows' errors are independent with variances at most 1/(4mₖ), is
// worth M = (Σ wₖ²/mₖ)⁻¹ instances; an exact calculated ΔQ (m = +Inf,
// paired) adds 0 to the sum.
func pooledCounts(ws []pooledWindow) (n, m float64) {
	for _, p := range ws {
		n += p.n
	}
	inv := 0.0
	for _, p := range ws {
		inv += (p.n / n) * (p.n / n) / p.m
	}
	return n, 1 / inv
}

// effective returns Nₑ = n·m/(n + m), n for m = +Inf.
func effective(n, m float64) float64 {
	if math.IsInf(m, 1) {
		return n
	}
	if !(n > 0 && m > 0) {
		return 0
	}
	return n * m / (n + m)
}

// pooledTest tests the pooled observed ΔQ of windows ws against the pooled
// bounds of their calculated ΔQs (deltaq.Bounds.Beyond): a mixture of
// bounds bounds the mixture.
func pooledTest(ws []pooledWindow) (deltaq.KSTest, error) {
	n, m := pooledCounts(ws)
	if math.IsNaN(m) || !(m > 0) {
		return deltaq.KSTest{}, errNoTest
	}
	calc, obs := ws[0].bounds, ws[0].obsBounds
	if len(ws) > 1 {
		weights := make([]float64, len(ws))
		for k, p := range ws {
			weights[k] = p.n / n
		}
		var err error
		if calc, err = pooledBounds(weights, ws, func(p *pooledWindow) deltaq.Bounds { return p.bounds }); err != nil {
			return deltaq.KSTest{}, err
		}
		if obs, err = pooledBounds(weights, ws, func(p *pooledWindow) deltaq.Bounds { return p.obsBounds }); err != nil {
			return deltaq.KSTest{}, err
		}
	}
	d, err := calc.BeyondBounds(obs)
	if err != nil {
		return deltaq.KSTest{}, err
	}
	return deltaq.NewKSTest(math.Min(d, 1), n, m)
}

// pooledBounds returns the mixture, by weights, of the bounds of windows
// ws that of picks: a mixture of bounds bounds the mixture, Strict when
// every one is.
func pooledBounds(weights []float64, ws []pooledWindow, of func(*pooledWindow) deltaq.Bounds) (deltaq.Bounds, error) {
	ps, qs := make([]deltaq.DeltaQ, len(ws)), make([]deltaq.DeltaQ, len(ws))
	strict := true
	for k := range ws {
		b := of(&ws[k])
		ps[k], qs[k] = b.Pessimistic, b.Optimistic
		strict = strict && b.Strict
	}
	pess, err := deltaq.Choice(weights, ps)
	if err != nil {
		return deltaq.Bounds{}, err
	}
	opt, err := deltaq.Choice(weights, qs)
	if err != nil {
		return deltaq.Bounds{}, err
	}
	return deltaq.Bounds{Pessimistic: pess, Optimistic: opt, Strict: strict}, nil
}

// slackOf returns the slack of a QTA check with points, without its trend.
func slackOf(c *deltaq.QTACheck) *QTASlack {
	s := &QTASlack{Points: make([]PointSlack, len(c.Points)), Min: math.Inf(1), MinMargin: math.Inf(1), MarginOK: true}
	for i, pc := range c.Points {
		ps := PointSlack{Delay: pc.Delay, P: pc.P, Slack: pc.Observed - pc.P, MarginOK: pc.Reachable,
			Holds: pc.Holds, PessimisticMargin: pc.Delay - pc.PessimisticDelay, PessimisticMarginOK: pc.PessimisticReachable}
		if pc.OK {
			// A point that holds within the check's tolerance has no
			// negative slack: the slack is below zero exactly when the
			// point fails.
			ps.Slack = math.Max(ps.Slack, 0)
		}
		if pc.Reachable {
			ps.DelayMargin = pc.Delay - pc.ObservedDelay
			s.MinMargin = math.Min(s.MinMargin, ps.DelayMargin)
		} else {
			s.MarginOK = false
		}
		s.Min = math.Min(s.Min, ps.Slack)
		s.Points[i] = ps
	}
	if !s.MarginOK {
		s.MinMargin = 0
	}
	return s
}

// push records the minimum slack of the window ending at end and its
// variance, forgetting the oldest beyond w.
func (h *slackHistory) push(end time.Time, minSlack, v float64) {
	if len(h.end) == h.w {
		copy(h.end, h.end[1:])
		copy(h.min, h.min[1:])
		copy(h.v, h.v[1:])
		h.end, h.min, h.v = h.end[:h.w-1], h.min[:h.w-1], h.v[:h.w-1]
	}
	h.end = append(h.end, end.UnixNano())
	h.min = append(h.min, minSlack)
	h.v = append(h.v, v)
}

// slackVariance returns the binomial variance F̃(1 − F̃)/n of the minimum
// slack min = F(d) − p of a window of n instances, at its point:
// F̃ = (F·n + 1)/(n + 2), so that a window with F = 0 or 1 still has a
// variance (Laplace's rule of succession).
func slackVariance(c *deltaq.QTACheck, minSlack float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	f := 0.0
	for _, pc := range c.Points {
		if pc.Observed-pc.P == minSlack {
			f = pc.Observed
			break
		}
	}
	nf := float64(n)
	ft := (f*nf + 1) / (nf + 2)
	return ft * (1 - ft) / nf
}

// trend fits the least-squares line y = Fitted + Slope·x through the
// recorded slacks, x in seconds from the last window's end, once w windows
// are recorded, with the slope's standard error and the one-sided upper
// confidence bound of the line at the horizon (SlackTrend).
func (h *slackHistory) trend(horizon time.Duration, conf float64) SlackTrend {
	n := len(h.end)
	if n < h.w || n < 3 {
		return SlackTrend{Windows: n}
	}
	last := h.end[n-1]
	x := func(i int) float64 { return float64(h.end[i]-last) / 1e9 }
	var mx, my float64
	for i := range n {
		mx += x(i)
		my += h.min[i]
	}
	nf := float64(n)
	mx /= nf
	my /= nf
	var sxx, sxy float64
	for i := range n {
		dx := x(i) - mx
		sxx += dx * dx
		sxy += dx * (h.min[i] - my)
	}
	if !(sxx > 0) {
		// Every window ended at the same time: no line.
		return SlackTrend{Windows: n}
	}
	b := sxy / sxx
	t := SlackTrend{OK: true, Windows: n, Slope: b, Fitted: my - b*mx}
	switch {
	case t.Fitted < 0:
		t.Projected = true
	case b < 0:
		// −a/b seconds, unless too far to be a duration.
		if s := -t.Fitted / b; s < float64(math.MaxInt64)/1e9 {
			t.Projected, t.TimeToViolation = true, time.Duration(s*1e9)
		}
	}
	// Residual variance, then per window the larger of it and the
	// window's binomial variance.
	ss := 0.0
	for i := range n {
		r := h.min[i] - (my + b*(x(i)-mx))
		ss += r * r
	}
	s2 := ss / (nf - 2)
	var vb, vm, cov float64
	for i := range n {
		u := math.Max(s2, h.v[i])
		dx := x(i) - mx
		vb += dx * dx * u
		vm += u
		cov += dx * u
	}
	vb /= sxx * sxx
	vm /= nf * nf
	cov /= nf * sxx
	t.StdErr = math.Sqrt(vb)
	if conf == 0 {
		conf = DefaultSlackTrendConfidence
	}
	if h.qConf != conf || h.qNu != n-2 {
		h.q, h.qConf, h.qNu = studentQuantile(conf, n-2), conf, n-2
	}
	q := h.q
	hx := horizon.Seconds() - mx
	at := my + b*hx
	t.Upper = at + q*math.Sqrt(math.Max(0, vm+hx*hx*vb+2*hx*cov))
	t.Falling = b+q*t.StdErr < 0
	t.Significant = t.Falling && t.Upper < 0
	return t
}

// breaches returns the p-values of the binomial tests that a window of n
// effective instances breaks a QTA point and its failure bound (breachP).
// within gives the fraction of instances that may have completed within a
// point's delay (qtaCounts.mayWithin): exactly at an edge of the probe's
// bins, else counted to the upper edge of the bin or bucket that holds it,
// so that a point inside a bucket is not taken as broken by the
// resolution; failed is the least failure ratio the counts allow
// (qtaCounts.failed), likewise.
//
// The points' p-value is the smallest of theirs times the number of points
// (Bonferroni's bound), at most 1: the qta trigger asks whether any point
// is broken, and a QTA of k points met exactly gives k chances to find one
// significant by chance. The smallest alone made the trigger's condition
// hold in 1.8 to 2.1 % of the windows of a three-point QTA met exactly, at
// confidence 0.99 (TestQTABreachFamilyLevel), where its level promises 1 %.
func breaches(c *deltaq.QTACheck, within func(delay float64) float64, failed float64, n int64) (point, failure float64) {
	point = 1
	for _, pc := range c.Points {
		if pc.OK {
			continue
		}
		k := int64(math.Round(within(pc.Delay) * float64(n)))
		point = math.Min(point, breachP(k, n, pc.P, false))
	}
	point = math.Min(1, point*float64(len(c.Points)))
	failure = 1
	if !c.FailureOK {
		k := int64(math.Round(failed * float64(n)))
		failure = breachP(k, n, c.MaxFailure, true)
	}
	return point, failure
}
