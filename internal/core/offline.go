// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// OfflineAnalysis is the observer's analysis run offline over recorded
// traces: the instances of the spans the deltaq processor has mapped, and
// those of the probes a connector matches itself (SpanProbes), judged from
// their spans as the connector judges them. Every outcome instance
// goes into one window holding the whole input, which Result closes and
// analyses as the deltaq exporter and connector would, with the
// configuration's probes, QTAs, triggers, quantiles and outcome diagram.
// With OnWindow, the instances are also analysed by windows of the
// configured interval, exactly as the exporter and the connector window
// them (analysis.Engine: by end time, aligned on the Unix epoch, each
// window closed lag after its end), the recorded times standing for the
// clock (see OnWindow). Snapshots are off. It is a traces consumer that
// keeps nothing of the traces but the analysis state (a histogram per
// probe and open window), so its memory does not grow with its input.
type OfflineAnalysis struct {
	cfg   analysis.Config // the engines' configuration, snapshots off
	whole *analysis.Engine
	spans *SpanProbes // nil: none
	// matched are the names of spans' probes: a deltaq.probe that names
	// one is not read, as the connector does not read it (addTraces).
	matched map[string]bool
	// unproduced are the referenced probes nothing of the configuration
	// counts (Unproduced).
	unproduced []string

	mu       sync.Mutex // guards what follows: the window clock is sequential
	onWindow func(*analysis.Result)
	windowed *analysis.Engine // made at the first instance; nil without onWindow
	clock    int64            // latest instance end read, Unix ns
	// early is the number of malformed instances read before the windowed
	// engine was made, which it counts when it is.
	early int
	in    analysis.Instance
	// ahead are the instances read, in order, that ended beyond the
	// windows open at the clock, held until the input says whether the
	// time moved on (a gap in the traffic: they are added, the clock
	// following them) or they were ahead of the recording collector's
	// clock too (a host's clock is wrong: it dropped them, too_early, and
	// so are they). behind counts the instances read since the first of
	// them that ended within the open windows.
	ahead  []analysis.Instance
	behind int
}

// maxAhead is the most instances held as ahead of the open windows: past it
// the time has moved on. minBehind is the fewest instances ending within the
// open windows, read after them, that say the held ones were ahead of the
// time: a straggler or two of the windows before a gap in the traffic do
// not.
const (
	maxAhead  = 1024
	minBehind = 16
)

// NewOfflineAnalysis makes the offline analysis of cfg. Probes that the
// deltaq processors registered in layouts configure (created before it)
// lend it their layouts, as in a collector; nil: none. spans are the probes
// it finds in the spans themselves, as a connector with those probes does;
// nil: none.
func NewOfflineAnalysis(cfg *Config, layouts *contract.Layouts, spans *SpanProbes) (*OfflineAnalysis, error) {
	if layouts == nil {
		layouts = new(contract.Layouts)
	}
	ac := cfg.engineConfig(layouts)
	// An auto probe (dmax: auto) is read at its dmax_max, the layout it
	// has until it has learnt its delays.
	newAutoProbes(spans).configure(&ac)
	ac.Snapshot = analysis.SnapshotConfig{}
	whole := ac
	whole.Interval, whole.Lag = 0, 0
	e, err := analysis.New(whole, time.Time{})
	if err != nil {
		return nil, err
	}
	produced := layouts.RegisteredProbes()
	if spans != nil {
		produced = append(produced, spans.Names...)
	}
	_, unproduced := cfg.misspelled(produced)
	a := &OfflineAnalysis{cfg: ac, whole: e, spans: spans, unproduced: unproduced}
	if spans != nil {
		a.matched = make(map[string]bool, len(spans.Names))
		for _, name := range spans.Names {
			a.matched[name] = true
		}
	}
	return a, nil
}

// Unproduced returns the probes the diagram and probes name that neither
// a deltaq processor of the configuration nor the connector counts. A
// collector warns of them at start, as their instances may come from
// another collector; in recorded traces analysed with this configuration
// alone they have none.
func (a *OfflineAnalysis) Unproduced() []string { return a.unproduced }

// OnWindow turns on the analysis by windows of the configured interval: fn
// receives each window's analysis, in order, as the window closes. Call it
// before the first traces; it does nothing when the interval is zero. The
// windows' results also hold the quantiles qs (ProbeResult.Quantiles, read
// from the analysis counts) beside the configured ones: read from a
// window's Analysis ΔQ instead, on its grid of dMax/4096 or wider, a
// quantile of a probe of a long dMax was off by up to a grid bin.
//
// The clock of the windows is the latest instance end read so far. A file
// written by the collector's file exporter is in the order in which the
// collector received the spans, and a span arrives after it ends, so this
// clock never runs ahead of the recording collector's: a window closes here
// no earlier than it closed there, and an instance the collector counted is
// counted here (one it refused as too late may be counted here too). The
// windowed engine is made at the first instance, with the clock at its end:
// windows that closed before it are never opened. An instance ending beyond
// the open windows is not taken for the time until the input confirms it
// (add): ahead of the others, it was ahead of the collector's clock too.
func (a *OfflineAnalysis) OnWindow(fn func(*analysis.Result), qs ...float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.Interval > 0 {
		a.onWindow = fn
		if len(a.cfg.Quantiles) == 0 {
			a.cfg.Quantiles = analysis.DefaultQuantiles
		}
		a.cfg.Quantiles = slices.Clone(a.cfg.Quantiles)
		for _, q := range qs {
			if !slices.Contains(a.cfg.Quantiles, q) {
				a.cfg.Quantiles = append(a.cfg.Quantiles, q)
			}
		}
	}
}

// ConsumeTraces adds the outcome instances among the spans of td, and
// closes the windows the latest end among them makes due.
func (a *OfflineAnalysis) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, rs := range td.ResourceSpans().All() {
		res := spanmatch.NewResource(rs.Resource())
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				switch isInstance, timed := readInstance(span, &a.in); {
				case !isInstance || a.matched[a.in.Probe]:
					// Not an instance, or of a probe the spans' probes
					// match: the span counts once, by its match, as in the
					// connector (spanProbes.matches).
				case !timed:
					a.malformed(1)
				default:
					if err := a.add(&a.in); err != nil {
						return err
					}
				}
				if a.spans != nil {
					if err := a.addMatched(span, &res); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// addMatched adds an instance of every probe of a.spans that the span
// belongs to, as the connector does (spanProbes.addMatched); res is the
// span's resource. Called with mu held.
func (a *OfflineAnalysis) addMatched(span ptrace.Span, res *spanmatch.Resource) error {
	var buf [maxHitsOnStack]int32
	hits := a.spans.Matcher.AppendMatches(buf[:0], span, res)
	if len(hits) == 0 {
		return nil
	}
	a.in = analysis.Instance{}
	if !spanInstance(span, &a.in) {
		a.malformed(len(hits))
		return nil
	}
	for _, i := range hits {
		a.in.Probe, a.in.Outcome = a.spans.Names[i], analysis.Success
		if a.spans.Failures[i].Holds(span) {
			a.in.Outcome = analysis.Failure
		}
		if err := a.add(&a.in); err != nil {
			return err
		}
	}
	return nil
}

// malformed counts n instances without a start or an end time, in the
// whole input and, once made, the analysis by windows. Called with mu held.
func (a *OfflineAnalysis) malformed(n int) {
	if a.windowed == nil && a.onWindow != nil {
		a.early += n
	}
	for _, e := range []*analysis.Engine{a.whole, a.windowed} {
		if e != nil {
			countMalformed(e, n)
		}
	}
}

// countMalformed counts n malformed instances in e.
func countMalformed(e *analysis.Engine, n int) {
	b := e.Begin()
	for range n {
		b.Malformed()
	}
	b.End()
}

// add counts one instance into the whole input and, with OnWindow, into
// its window, first closing the windows due at its end. Called with mu
// held.
//
// An instance that ends beyond the open windows is held (ahead) rather than
// taken for the time: the recording collector's clock was its arrival, so
// that an instance ending an hour ahead of the others around it in the file
// was ahead of that clock, and dropped as too early, not the end of every
// open window. As many instances read after it ending within the open
// windows as are held, and at least minBehind, say that it was; maxAhead
// held, or the end of the input, that the time moved on (the traffic
// resumed after a gap; the few instances of the windows before it read
// meanwhile are counted in them, where the collector, whose clock had moved
// on, may have refused them as too late). One that the open windows reach
// once those instances have moved the clock on was not ahead: it counts
// then, in its window (reached).
func (a *OfflineAnalysis) add(in *analysis.Instance) error {
	a.whole.Add(in)
	if a.onWindow == nil {
		return nil
	}
	end := max(in.End, in.Start)
	if a.windowed == nil {
		e, err := analysis.New(a.cfg, time.Unix(0, end))
		if err != nil {
			return err
		}
		a.windowed, a.clock = e, end
		countMalformed(e, a.early)
	}
	if a.windowed.Beyond(end) {
		a.ahead = append(a.ahead, *in)
		if len(a.ahead) == maxAhead {
			a.catchUp()
		}
		return nil
	}
	if len(a.ahead) > 0 {
		if a.behind++; a.behind >= max(len(a.ahead), minBehind) {
			// Ahead of the clock: the windows drop them as too early
			// (but one the clock has reached meanwhile, which counts).
			for i := range a.ahead {
				a.windowed.Add(&a.ahead[i])
			}
			a.ahead, a.behind = a.ahead[:0], 0
		}
	}
	a.addWindowed(in, end)
	if len(a.ahead) > 0 {
		a.reached()
	}
	return nil
}

// reached adds the instances held as ahead that the open windows reach
// now that the clock has moved on: they were not ahead of the time, only
// read before instances that ended earlier (as the first instances of the
// traffic resuming after a gap are), and the collector counted them. Held
// until minBehind instances had come after them, they were dropped as too
// late, when as few as that took the clock past their windows' close.
// Called with mu held.
func (a *OfflineAnalysis) reached() {
	for moved := true; moved; {
		moved = false
		kept := a.ahead[:0]
		for _, in := range a.ahead {
			end := max(in.End, in.Start)
			if a.windowed.Beyond(end) {
				kept = append(kept, in)
				continue
			}
			// Its window is open: it lay beyond those open before the
			// instance that moved the clock, which was within them.
			a.addWindowed(&in, end)
			moved = true
		}
		a.ahead = kept
	}
	if len(a.ahead) == 0 {
		a.behind = 0
	}
}

// catchUp adds the instances held as ahead, the clock following them.
// Called with mu held.
func (a *OfflineAnalysis) catchUp() {
	for i := range a.ahead {
		in := &a.ahead[i]
		a.addWindowed(in, max(in.End, in.Start))
	}
	a.ahead, a.behind = a.ahead[:0], 0
}

// addWindowed adds an instance ending at end to its window, first closing
// the windows due at end. Called with mu held.
func (a *OfflineAnalysis) addWindowed(in *analysis.Instance, end int64) {
	if end > a.clock {
		a.clock = end
		for _, r := range a.windowed.Advance(time.Unix(0, end)) {
			a.onWindow(r)
		}
	}
	a.windowed.Add(in)
}

// Capabilities says that the analysis only reads the traces.
func (a *OfflineAnalysis) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Result closes the windows still open (passing them to the OnWindow
// function: the last ones are partial, as at a collector's shutdown) and
// the whole input's window, and returns the latter's analysis and the
// instance counters of the whole input (counted and dropped). Call it
// once, after the last traces.
func (a *OfflineAnalysis) Result() (*analysis.Result, analysis.Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.windowed != nil {
		// Instances still held as ahead end the input: the time moved on
		// to them.
		a.catchUp()
		for _, r := range a.windowed.Flush(time.Unix(0, a.clock)) {
			a.onWindow(r)
		}
	}
	res := a.whole.Flush(time.Time{})
	return res[0], a.whole.Stats()
}

// WindowStats returns the instance counters of the analysis by windows:
// its drops differ from the whole input's by the instances that ended in a
// window already closed (too_late). Zero without OnWindow or instances.
func (a *OfflineAnalysis) WindowStats() analysis.Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.windowed == nil {
		return analysis.Stats{}
	}
	return a.windowed.Stats()
}
