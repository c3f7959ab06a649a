// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// The differential test of the gateway's merge: a seeded random stream of
// instances split across agents at random, each agent's windows merged by
// a gateway, against one engine fed the whole stream. Window for window
// and probe for probe the gateway must report what the single engine
// reports: the outcome counts, the display and analysis counts, the
// sums, the weights, the quantiles, the QTA readings and the QoO score.

// diffQTA is a QTA with one point on a display bin edge and one off it.
var diffQTA = QTA{Points: []QTAPoint{{Delay: 2 * time.Millisecond, P: 0.3}, {Delay: 7300 * time.Microsecond, P: 0.6}}, MaxFailure: 0.3}

// diffConfig is the configuration of the single engine and the gateway:
// probes of uniform bins over a short and a long dMax, one of log-linear
// buckets, and one no configuration names (its layout is its instances').
func diffConfig() Config {
	qoo := QoOConfig{
		ROP:  QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 3 * time.Millisecond}, {P: 0.9, Delay: 8 * time.Millisecond}}, MaxFailure: 0.2},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0.5, Delay: 9 * time.Millisecond}, {P: 0.9, Delay: 10 * time.Millisecond}}, MaxFailure: 0.4},
	}
	return Config{
		Interval: time.Second, Lag: time.Second, History: 4, WindowCounts: true,
		Quantiles: []float64{0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999},
		Probes: map[string]ProbeConfig{
			"fast": {DMax: 10 * time.Millisecond, Bins: 100, QTA: diffQTA, QoO: qoo},
			"slow": {DMax: 5 * time.Second, Bins: 50, QTA: QTA{Points: []QTAPoint{{Delay: 333 * time.Millisecond, P: 0.5}}}},
			"ll": {Binning: &deltaq.BinningConfig{Kind: "log-linear", Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10},
				QTA: QTA{Points: []QTAPoint{{Delay: 45 * time.Millisecond, P: 0.4}}}},
		},
	}
}

// diffInstance is an instance of the stream and when it reaches its
// collector.
type diffInstance struct {
	Instance
	arrive time.Duration
}

// diffStream returns seeded instances of the probes over the given windows
// of one second: delays spread log-uniformly over 1 µs – 20 s, successes,
// failures, timeouts that ended after dMax and timeouts whose end is
// unknown (start events whose span never came), a fifth sampled with an
// adjusted count of 2 to 16. Each arrives within 300 ms of its end.
func diffStream(seed uint64, windows int) []diffInstance {
	r := rand.New(rand.NewPCG(seed, 2))
	probes := []string{"fast", "slow", "ll", "free"}
	dmax := map[string]int64{"fast": int64(10 * time.Millisecond), "slow": int64(5 * time.Second), "ll": int64(10 * time.Second), "free": int64(200 * time.Millisecond)}
	var out []diffInstance
	for w := range windows {
		for range 200 + r.IntN(200) {
			p := probes[r.IntN(len(probes))]
			end := at(time.Duration(w)*time.Second + time.Duration(r.Int64N(int64(time.Second)))).UnixNano()
			d := int64(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(2e10)-math.Log(1e3))))
			if p == "fast" && r.IntN(2) == 0 {
				d = int64(r.Float64() * 12e6) // dense below its short dMax
			}
			in := Instance{Probe: p, Outcome: Success, Start: end - d, End: end}
			if p == "free" {
				in.DMaxNs, in.Bins = dmax[p], 40
			}
			switch x := r.IntN(20); {
			case x == 0:
				in.Outcome = Failure
			case x == 1:
				// A start event's real-time timeout: its end unknown.
				in.Outcome, in.End, in.Start = Timeout, 0, end-dmax[p]
			case d > dmax[p]:
				in.Outcome, in.Ended = Timeout, true
			}
			if r.IntN(5) == 0 {
				in.Weight = 1 << (1 + r.IntN(4))
			}
			arrive := time.Duration(end-t0.UnixNano()) + time.Duration(r.Int64N(int64(300*time.Millisecond)))
			if in.Outcome == Timeout && !in.Ended {
				arrive = time.Duration(in.Start+dmax[p]-t0.UnixNano()) + time.Duration(r.Int64N(int64(300*time.Millisecond)))
			}
			out = append(out, diffInstance{in, arrive})
		}
	}
	slices.SortStableFunc(out, func(a, b diffInstance) int { return int(a.arrive - b.arrive) })
	return out
}

// diffAgent is one agent of the differential test.
type diffAgent struct {
	name  string
	cfg   Config
	e     *Engine
	start int64         // its deltaq.agent.start
	skew  time.Duration // its clock's offset
	// restartAt, when not zero, restarts it then: its windows are
	// flushed and a new engine of a later start takes over.
	restartAt time.Duration
	idle      bool // it sees no instance
}

// diffDelivery is a window (or an idle word) on its way to the gateway.
type diffDelivery struct {
	w      Window
	idle   bool
	arrive time.Duration
}

// diffRun is one run of the differential test.
type diffRun struct {
	seed    uint64
	agents  int
	windows int
	// agentCfg, when not nil, configures agent i (display layouts of its
	// own).
	agentCfg func(i int) Config
	skew     func(i int) time.Duration
	idle     func(i int) bool
	restart  func(i int) time.Duration
	// transit returns how long a window takes to reach the gateway;
	// repeat whether it is delivered twice.
	transit func(r *rand.Rand) time.Duration
	// late, when not nil, holds the windows it names until after the
	// gateway closed theirs.
	late   func(w *Window) bool
	repeat func(r *rand.Rand) bool
	// keep, when not nil, keeps only the instances of the stream it
	// accepts.
	keep func(in *diffInstance) bool
	// reloadAt, when not zero, reloads the gateway's configuration then;
	// with reloadCfg, the single engine's and the gateway's to it.
	reloadAt  time.Duration
	reloadCfg func() Config
	// gatewayLag is the gateway's lag.
	gatewayLag time.Duration
}

// diffOutcome is what a run produced.
type diffOutcome struct {
	single, gateway []*Result
	gw              *Engine
	fates           map[Contribution]int
	late            []Window // the windows held until too late
	ins             []diffInstance
}

func (run diffRun) do(t *testing.T) diffOutcome {
	t.Helper()
	const tick = 100 * time.Millisecond
	r := rand.New(rand.NewPCG(run.seed, 99))
	ins := diffStream(run.seed, run.windows)
	if run.keep != nil {
		ins = slices.DeleteFunc(ins, func(in diffInstance) bool { return !run.keep(&in) })
	}
	single := newEngine(t, diffConfig(), t0)
	gcfg := diffConfig()
	gcfg.Lag = run.gatewayLag
	gw := newEngine(t, gcfg, t0)
	agents := make([]*diffAgent, run.agents)
	for i := range agents {
		cfg := diffConfig()
		if run.agentCfg != nil {
			cfg = run.agentCfg(i)
		}
		cfg.WindowCounts = true
		a := &diffAgent{name: fmt.Sprintf("agent-%d", i), cfg: cfg, start: int64(1000 + i)}
		if run.skew != nil {
			a.skew = run.skew(i)
		}
		if run.idle != nil {
			a.idle = run.idle(i)
		}
		if run.restart != nil {
			a.restartAt = run.restart(i)
		}
		a.e = newEngine(t, cfg, t0.Add(a.skew))
		agents[i] = a
	}
	// Each instance goes to a random busy agent.
	var busy []int
	for i, a := range agents {
		if !a.idle {
			busy = append(busy, i)
		}
	}
	owner := make([]int, len(ins))
	for i := range ins {
		owner[i] = busy[r.IntN(len(busy))]
	}
	out := diffOutcome{fates: map[Contribution]int{}, gw: gw, ins: ins}
	var inflight []diffDelivery
	send := func(a *diffAgent, res []*Result, now time.Duration) {
		for _, w := range res {
			sent := false
			for j := range w.Probes {
				win, ok := WindowOf(w, &w.Probes[j], a.name)
				if !ok {
					continue
				}
				win.SourceStart = a.start
				// The window is the agent's to reuse: copy what it holds.
				win.BinCounts = slices.Clone(win.BinCounts)
				win.FineIndex, win.FineCounts = slices.Clone(win.FineIndex), slices.Clone(win.FineCounts)
				sent = true
				d := diffDelivery{w: win, arrive: now + run.transit(r)}
				if run.late != nil && run.late(&win) {
					d.arrive = win.End.Sub(t0) + run.gatewayLag + 500*time.Millisecond
					out.late = append(out.late, win)
				}
				inflight = append(inflight, d)
				if run.repeat != nil && run.repeat(r) {
					d.arrive = now + run.transit(r)
					inflight = append(inflight, d)
				}
			}
			if !sent {
				inflight = append(inflight, diffDelivery{w: Window{Start: w.Start, End: w.End, Source: a.name, SourceStart: a.start},
					idle: true, arrive: now + run.transit(r)})
			}
		}
	}
	next := 0
	end := time.Duration(run.windows+8) * time.Second
	reloaded := false
	for now := tick; now <= end; now += tick {
		for ; next < len(ins) && ins[next].arrive < now; next++ {
			in := ins[next].Instance
			addAll(single, in)
			addAll(agents[owner[next]].e, in)
		}
		out.single = append(out.single, single.Advance(at(now))...)
		for _, a := range agents {
			if a.restartAt != 0 && now >= a.restartAt {
				// A graceful restart: the open windows flushed, a new
				// analysis of a later start.
				send(a, a.e.Flush(at(now+a.skew)), now)
				a.e, a.start, a.restartAt = newEngine(t, a.cfg, at(now+a.skew)), a.start+1_000_000, 0
			}
			send(a, a.e.Advance(at(now+a.skew)), now)
		}
		// Deliver what has arrived, in the order it arrived.
		slices.SortStableFunc(inflight, func(a, b diffDelivery) int { return int(a.arrive - b.arrive) })
		n := 0
		for n < len(inflight) && inflight[n].arrive <= now {
			d := &inflight[n]
			var c Contribution
			if d.idle {
				c = gw.AddIdle(d.w.Source, d.w.Start, d.w.End, d.w.SourceStart)
			} else {
				c = gw.AddWindow(&d.w)
			}
			out.fates[c]++
			n++
		}
		inflight = inflight[n:]
		if run.reloadAt != 0 && !reloaded && now >= run.reloadAt {
			if run.reloadCfg != nil {
				gcfg = run.reloadCfg()
				gcfg.Lag = run.gatewayLag
				ns := newEngine(t, run.reloadCfg(), at(now))
				ns.Adopt(single)
				single = ns
			}
			ng := newEngine(t, gcfg, at(now))
			ng.Adopt(gw)
			gw, out.gw, reloaded = ng, ng, true
		}
		out.gateway = append(out.gateway, gw.Advance(at(now))...)
	}
	return out
}

// diffCompare compares, window for window, the gateway's results with the
// single engine's, over the windows that hold instances.
func diffCompare(t *testing.T, single, gateway []*Result, wantContributors int) {
	t.Helper()
	diffCompareWith(t, single, gateway, wantContributors, diffProbe)
}

// diffCompareWith is diffCompare, each probe's windows compared by cmp.
func diffCompareWith(t *testing.T, single, gateway []*Result, wantContributors int, cmp func(t *testing.T, what string, gp, sp *ProbeResult)) {
	t.Helper()
	byStart := map[int64]*Result{}
	for _, g := range gateway {
		byStart[g.Start.UnixNano()] = g
	}
	compared := 0
	for _, s := range single {
		if sumCounts(s) == 0 {
			continue
		}
		g := byStart[s.Start.UnixNano()]
		if g == nil {
			t.Errorf("window %v: the gateway closed none", s.Start)
			continue
		}
		if wantContributors > 0 && !s.Start.Before(t0) && g.Contributors != wantContributors {
			t.Errorf("window %v: %d contributors, want %d", s.Start, g.Contributors, wantContributors)
		}
		for i := range s.Probes {
			sp := &s.Probes[i]
			if sp.Counts.Total() == 0 {
				continue
			}
			gp := probeIn(g, sp.Name)
			if gp == nil {
				t.Errorf("window %v: the gateway has no probe %s", s.Start, sp.Name)
				continue
			}
			compared++
			cmp(t, fmt.Sprintf("window %v probe %s", s.Start.Sub(t0), sp.Name), gp, sp)
		}
	}
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}

func probeIn(r *Result, name string) *ProbeResult {
	for i := range r.Probes {
		if r.Probes[i].Name == name {
			return &r.Probes[i]
		}
	}
	return nil
}

// diffProbe compares a probe's window at the gateway, gp, with the single
// engine's, sp.
func diffProbe(t *testing.T, what string, gp, sp *ProbeResult) {
	t.Helper()
	diffAnalysis(t, what, gp, sp)
	if gp.Counts != sp.Counts {
		t.Errorf("%s: counts %+v, want %+v", what, gp.Counts, sp.Counts)
	}
	if !reflect.DeepEqual(gp.BinCounts, sp.BinCounts) || gp.Width != sp.Width || gp.Bins != sp.Bins {
		t.Errorf("%s: display counts %v (%v × %d), want %v (%v × %d)", what, gp.BinCounts, gp.Width, gp.Bins, sp.BinCounts, sp.Width, sp.Bins)
	}
	if !closeTo(gp.SuccessSum, sp.SuccessSum) {
		t.Errorf("%s: success sum %v, want %v", what, gp.SuccessSum, sp.SuccessSum)
	}
}

// diffAnalysis compares what the analysis resolution decides: the
// analysis counts and weights, the analysis ΔQ, the quantiles, the QTA
// readings and the QoO score.
func diffAnalysis(t *testing.T, what string, gp, sp *ProbeResult) {
	t.Helper()
	if !reflect.DeepEqual(gp.FineIndex, sp.FineIndex) || !reflect.DeepEqual(gp.FineCounts, sp.FineCounts) {
		t.Errorf("%s: analysis counts differ:\n gateway %v %v\n single  %v %v", what, gp.FineIndex, gp.FineCounts, sp.FineIndex, sp.FineCounts)
	}
	if !closeTo(gp.WeightSum, sp.WeightSum) || !closeTo(gp.WeightSquares, sp.WeightSquares) || !closeTo(gp.EffectiveInstances, sp.EffectiveInstances) {
		t.Errorf("%s: weights Σw %v Σw² %v (effective %v), want %v %v (%v)", what,
			gp.WeightSum, gp.WeightSquares, gp.EffectiveInstances, sp.WeightSum, sp.WeightSquares, sp.EffectiveInstances)
	}
	if (gp.Analysis == nil) != (sp.Analysis == nil) || gp.Analysis != nil && !reflect.DeepEqual(gp.Analysis, sp.Analysis) {
		t.Errorf("%s: analysis ΔQs differ: %+v vs %+v", what, gp.Analysis, sp.Analysis)
	}
	if !reflect.DeepEqual(gp.Quantiles, sp.Quantiles) {
		t.Errorf("%s: quantiles %+v, want %+v", what, gp.Quantiles, sp.Quantiles)
	}
	if !reflect.DeepEqual(gp.QTACheck, sp.QTACheck) {
		t.Errorf("%s: QTA %+v, want %+v", what, gp.QTACheck, sp.QTACheck)
		if gp.QTACheck != nil && sp.QTACheck != nil {
			for i := range gp.QTACheck.Points {
				g, s := gp.QTACheck.Points[i], sp.QTACheck.Points[i]
				if g.OK != s.OK || g.Holds != s.Holds || g.Observed != s.Observed || g.Pessimistic != s.Pessimistic {
					t.Errorf("%s: QTA verdict at point %d %+v, want %+v", what, i, g, s)
				}
			}
		}
	}
	if gp.QTABreachP != sp.QTABreachP || gp.FailureBreachP != sp.FailureBreachP {
		t.Errorf("%s: breach p %v %v, want %v %v", what, gp.QTABreachP, gp.FailureBreachP, sp.QTABreachP, sp.FailureBreachP)
	}
	if !reflect.DeepEqual(gp.Slack, sp.Slack) && (gp.Slack == nil || sp.Slack == nil || !reflect.DeepEqual(gp.Slack.Points, sp.Slack.Points)) {
		t.Errorf("%s: slack %+v, want %+v", what, gp.Slack, sp.Slack)
	}
	if !reflect.DeepEqual(gp.QoO, sp.QoO) {
		t.Errorf("%s: QoO %+v, want %+v", what, gp.QoO, sp.QoO)
	}
}

func closeTo(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func transitUpTo(d time.Duration) func(r *rand.Rand) time.Duration {
	return func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(d))) }
}

// TestGatewayDifferential: the stream split at random across 1, 3 and 17
// agents, their windows delivered in random order within the gateway's
// lag, gives the gateway the single engine's every window.
func TestGatewayDifferential(t *testing.T) {
	for _, n := range []int{1, 3, 17} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("agents=%d/seed=%d", n, seed), func(t *testing.T) {
				o := diffRun{seed: seed, agents: n, windows: 8, gatewayLag: 3 * time.Second, transit: transitUpTo(900 * time.Millisecond)}.do(t)
				diffCompare(t, o.single, o.gateway, n)
				if o.fates[ContributionAccepted] == 0 || len(o.fates) > 2 {
					t.Errorf("fates %v, want accepted and idle only", o.fates)
				}
			})
		}
	}
}

// agentLayouts configures agent i's probes in display layouts of its own
// over the same dMax: other bins, log-linear buckets for uniform bins and
// the reverse.
func agentLayouts(i int) Config {
	cfg := diffConfig()
	f, s, l, x := cfg.Probes["fast"], cfg.Probes["slow"], cfg.Probes["ll"], ProbeConfig{}
	switch i % 3 {
	case 0:
		f.Bins, s.Bins = 7, 1000
		x.DMax, x.Bins = 200*time.Millisecond, 13
	case 1:
		f.Bins = 1000
		s.Binning = &deltaq.BinningConfig{Kind: "log-linear", Factor: 10, Low: 500 * time.Microsecond, High: 5 * time.Second, Steps: 10}
		s.DMax, s.Bins = 0, 0
		l.Binning = nil
		l.DMax, l.Bins = 10*time.Second, 3
	}
	cfg.Probes["fast"], cfg.Probes["slow"], cfg.Probes["ll"] = f, s, l
	if x.Bins != 0 {
		cfg.Probes["free"] = x
	}
	return cfg
}

// diffLayoutsProbe compares a probe's window at a gateway whose agents
// show it in other layouts with the single engine's: the analysis counts,
// weights and quantiles are the same; the display counts read from
// analysis counts may put the instances of the bucket that straddles dMax
// among the timeouts; a QTA point is read at the analysis resolution,
// within the instances of its delay's bucket of the single engine's
// reading, never blaming the bucket more than the single engine does; so
// is the failure ratio of the QTA check and the QoO score, which the
// single engine reads exactly from its display counts, within the
// instances of the bucket that straddles dMax.
func diffLayoutsProbe(t *testing.T, what string, gp, sp *ProbeResult) {
	t.Helper()
	if !reflect.DeepEqual(gp.FineIndex, sp.FineIndex) || !reflect.DeepEqual(gp.FineCounts, sp.FineCounts) {
		t.Errorf("%s: analysis counts differ", what)
	}
	if !closeTo(gp.WeightSum, sp.WeightSum) || !closeTo(gp.WeightSquares, sp.WeightSquares) || !closeTo(gp.EffectiveInstances, sp.EffectiveInstances) {
		t.Errorf("%s: weights differ", what)
	}
	g, s := gp.Counts, sp.Counts
	cut := int64(math.Round(gp.Width * float64(gp.Bins) * 1e9))
	if gp.Edges != nil {
		cut = gp.LogLinear.High
	}
	straddle := fineMass(sp, cut-1)
	diffQuantiles(t, what, gp, sp, cut, straddle)
	if g.Total() != s.Total() || g.Failure != s.Failure || g.Success > s.Success || uint64(s.Success-g.Success) > straddle {
		t.Errorf("%s: counts %+v, want %+v but for at most the %d of the bucket that straddles dMax", what, g, s, straddle)
	}
	if (gp.QTACheck == nil) != (sp.QTACheck == nil) {
		t.Fatalf("%s: QTA %+v, want %+v", what, gp.QTACheck, sp.QTACheck)
	}
	if gp.QTACheck != nil {
		n := float64(s.Total())
		for i, sq := range sp.QTACheck.Points {
			gq := gp.QTACheck.Points[i]
			tol := float64(fineMass(sp, int64(math.Floor(sq.Step.Delay*1e9+1e-6))))/n + 1e-12
			if math.Abs(gq.Observed-sq.Observed) > tol || gq.Pessimistic > sq.Observed+tol {
				t.Errorf("%s: QTA point %v read %v (pessimistic %v), want %v within %v", what, sq.Step, gq.Observed, gq.Pessimistic, sq.Observed, tol)
			}
		}
		if gp.QTABreachP < sp.QTABreachP*(1-1e-9) {
			t.Errorf("%s: breach p %v, below the single engine's %v", what, gp.QTABreachP, sp.QTABreachP)
		}
		tol := float64(straddle)/float64(s.Total()) + 1e-12
		if f := gp.QTACheck.Failure; math.Abs(f-sp.QTACheck.Failure) > tol {
			t.Errorf("%s: failure ratio %v, want %v within %v", what, f, sp.QTACheck.Failure, tol)
		}
		if gp.FailureBreachP < sp.FailureBreachP*(1-1e-9) {
			t.Errorf("%s: failure breach p %v, below the single engine's %v", what, gp.FailureBreachP, sp.FailureBreachP)
		}
	}
	switch {
	case straddle == 0 && g == s && !reflect.DeepEqual(gp.QoO, sp.QoO):
		t.Errorf("%s: QoO %+v, want %+v", what, gp.QoO, sp.QoO)
	case gp.QoO != nil && sp.QoO != nil && gp.QoO.Observed.OK && sp.QoO.Observed.OK &&
		math.Abs(gp.QoO.Observed.Measured.Loss-sp.QoO.Observed.Measured.Loss) > float64(straddle)/float64(s.Total())+1e-12:
		t.Errorf("%s: QoO loss %v, want %v within the bucket that straddles dMax", what, gp.QoO.Observed.Measured.Loss, sp.QoO.Observed.Measured.Loss)
	}
}

// diffQuantiles compares the gateway's quantiles with the single engine's:
// equal, but those the single engine reads in the analysis bucket that
// straddles dMax (cut ns), or cannot reach, when that bucket holds
// instances. The single engine's display counts know how many of them
// completed within dMax; the gateway's, read from other layouts' analysis
// counts, do not, and it reads the bucket's share by width: its quantile
// there lies in that bucket, or is out of reach.
func diffQuantiles(t *testing.T, what string, gp, sp *ProbeResult, cut int64, straddle uint64) {
	t.Helper()
	if straddle == 0 {
		if !reflect.DeepEqual(gp.Quantiles, sp.Quantiles) {
			t.Errorf("%s: quantiles %+v, want %+v", what, gp.Quantiles, sp.Quantiles)
		}
		return
	}
	edges := deltaq.NewFine().Edges()
	low := float64(edges[deltaq.LogLinearBucket(edges, cut-1)]) / 1e9
	for k, sq := range sp.Quantiles {
		gq := gp.Quantiles[k]
		if gq.Calculated != sq.Calculated || gq.CalculatedOK != sq.CalculatedOK {
			t.Errorf("%s: calculated quantile %+v, want %+v", what, gq, sq)
		}
		switch {
		case sq.ObservedOK && sq.Observed < low:
			if gq.Observed != sq.Observed || !gq.ObservedOK {
				t.Errorf("%s: quantile %+v, want %+v", what, gq, sq)
			}
		case gq.ObservedOK && (gq.Observed < low || gq.Observed > float64(cut)/1e9):
			t.Errorf("%s: quantile %+v, want it in the bucket [%v, %v] s that straddles dMax, or none (%+v)", what, gq, low, float64(cut)/1e9, sq)
		}
	}
}

// fineMass returns the instances of pr's analysis bucket that holds d ns.
func fineMass(pr *ProbeResult, d int64) uint64 {
	edges := deltaq.NewFine().Edges()
	for j, i := range pr.FineIndex {
		if edges[i] <= d && d < edges[i+1] {
			return pr.FineCounts[j]
		}
	}
	return 0
}

// TestGatewayDifferentialHardCases: the stream across agents whose
// windows are delivered twice, out of order, late; an idle agent; an agent
// restarted mid-run; agents whose clocks are skewed by less than the lag;
// a gateway reloaded mid-run.
func TestGatewayDifferentialHardCases(t *testing.T) {
	base := diffRun{seed: 11, agents: 5, windows: 10, gatewayLag: 3 * time.Second, transit: transitUpTo(900 * time.Millisecond)}
	t.Run("delivered twice, out of order", func(t *testing.T) {
		run := base
		run.transit = transitUpTo(1900 * time.Millisecond)
		run.repeat = func(r *rand.Rand) bool { return r.IntN(3) == 0 }
		o := run.do(t)
		diffCompare(t, o.single, o.gateway, run.agents)
		if o.fates[ContributionDuplicate] == 0 || o.gw.Stats().Dropped != (Drops{}) {
			t.Errorf("fates %v, drops %v: want duplicates, nothing dropped", o.fates, o.gw.Stats().Dropped)
		}
	})
	t.Run("an idle agent", func(t *testing.T) {
		run := base
		run.idle = func(i int) bool { return i == 2 }
		o := run.do(t)
		diffCompare(t, o.single, o.gateway, run.agents)
		if o.fates[ContributionIdle] == 0 {
			t.Errorf("fates %v: want idle words", o.fates)
		}
	})
	t.Run("an agent restarted", func(t *testing.T) {
		run := base
		run.restart = func(i int) time.Duration {
			if i == 1 {
				return 4550 * time.Millisecond
			}
			return 0
		}
		o := run.do(t)
		diffCompare(t, o.single, o.gateway, run.agents)
		if o.fates[ContributionDuplicate] != 0 || len(o.fates) > 2 {
			t.Errorf("fates %v: want the restarted agent's windows accepted", o.fates)
		}
	})
	t.Run("clocks skewed within the lag", func(t *testing.T) {
		run := base
		run.skew = func(i int) time.Duration { return time.Duration(i-2) * 300 * time.Millisecond }
		// A timeout known only after its window closed counts in the
		// oldest open window of the collector that sees it, by its
		// clock: with skewed clocks, in another window than the single
		// engine's. The windows compare without such timeouts, and with
		// them their totals.
		all := run.do(t)
		dmax := map[string]time.Duration{"fast": 10 * time.Millisecond, "slow": 5 * time.Second, "ll": 10 * time.Second, "free": 200 * time.Millisecond}
		run.keep = func(in *diffInstance) bool {
			due := time.Duration(in.Start-t0.UnixNano()) + dmax[in.Probe]
			return in.End == 0 || time.Duration(in.End-in.Start) <= dmax[in.Probe] || in.arrive < due+350*time.Millisecond
		}
		o := run.do(t)
		diffCompare(t, o.single, o.gateway, run.agents)
		sum := func(rs []*Result) map[string]Counts {
			m := map[string]Counts{}
			for _, r := range rs {
				for _, p := range r.Probes {
					c := m[p.Name]
					c.add(p.Counts)
					m[p.Name] = c
				}
			}
			return m
		}
		if g, s := sum(all.gateway), sum(all.single); !reflect.DeepEqual(g, s) {
			t.Errorf("with the late timeouts, the gateway counted %v, the single engine %v", g, s)
		}
	})
	t.Run("the gateway reloaded", func(t *testing.T) {
		run := base
		run.repeat = func(r *rand.Rand) bool { return r.IntN(4) == 0 }
		run.reloadAt = 5250 * time.Millisecond
		o := run.do(t)
		diffCompare(t, o.single, o.gateway, run.agents)
	})
	// The reload changes the bins, not the dMax: agents and the gateway
	// of other dMaxes window their timeouts apart (start + dMax).
	t.Run("the gateway reloaded into other layouts", func(t *testing.T) {
		run := base
		run.reloadAt = 5250 * time.Millisecond
		run.reloadCfg = func() Config {
			cfg := diffConfig()
			f, s := cfg.Probes["fast"], cfg.Probes["slow"]
			f.Bins, s.Bins = 40, 80
			cfg.Probes["fast"], cfg.Probes["slow"] = f, s
			return cfg
		}
		o := run.do(t)
		diffCompareWith(t, o.single, o.gateway, run.agents, diffLayoutsProbe)
	})
	t.Run("a window late", func(t *testing.T) {
		run := base
		run.late = func(w *Window) bool {
			return w.Source == "agent-3" && w.Start.Equal(at(4*time.Second)) && w.Probe == "fast"
		}
		o := run.do(t)
		if len(o.late) != 1 || o.fates[ContributionLate] != 1 {
			t.Fatalf("%d windows held, fates %v: want one late", len(o.late), o.fates)
		}
		lw := o.late[0]
		var n int64
		for _, c := range lw.BinCounts {
			n += int64(c)
		}
		n += lw.Timeouts + lw.Failures
		if d := o.gw.Stats().Dropped; d[DropTooLate] != n || d.Total() != n {
			t.Errorf("drops %v, want the late window's %d instances too late", d, n)
		}
		// Every other window and probe is the single engine's; the late
		// window's probe lacks exactly its instances.
		var other, lateS, lateG []*Result
		for _, r := range o.single {
			if r.Start.Equal(lw.Start) {
				lateS = append(lateS, r)
			} else {
				other = append(other, r)
			}
		}
		diffCompare(t, other, o.gateway, run.agents)
		for _, r := range o.gateway {
			if r.Start.Equal(lw.Start) {
				lateG = append(lateG, r)
			}
		}
		if len(lateS) != 1 || len(lateG) != 1 {
			t.Fatalf("the late window closed %d and %d times", len(lateS), len(lateG))
		}
		for _, sp := range lateS[0].Probes {
			gp := probeIn(lateG[0], sp.Name)
			if gp == nil {
				continue
			}
			if sp.Name != lw.Probe {
				diffProbe(t, "late window, probe "+sp.Name, gp, &sp)
				continue
			}
			if got := sp.Counts.Total() - gp.Counts.Total(); got != n || sp.Counts.Failure-gp.Counts.Failure != lw.Failures {
				t.Errorf("late window: the gateway has %+v, the single engine %+v: want %d instances fewer", gp.Counts, sp.Counts, n)
			}
		}
	})
}

// TestGatewayDifferentialLayouts: agents whose probes show other display
// layouts, their windows delivered out of order and some twice, still
// give the gateway the single engine's analysis (diffLayoutsProbe).
func TestGatewayDifferentialLayouts(t *testing.T) {
	for _, n := range []int{1, 3, 17} {
		t.Run(fmt.Sprintf("agents=%d", n), func(t *testing.T) {
			for seed := uint64(5); seed < 25; seed++ {
				o := diffRun{seed: seed, agents: n, windows: 8, gatewayLag: 3 * time.Second,
					transit: transitUpTo(1900 * time.Millisecond), agentCfg: agentLayouts,
					repeat: func(r *rand.Rand) bool { return r.IntN(5) == 0 }}.do(t)
				diffCompareWith(t, o.single, o.gateway, n, diffLayoutsProbe)
			}
		})
	}
}
