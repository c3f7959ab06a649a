// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Bounds of the exemplar and worst-instance options.
const (
	// DefaultExemplarsPerProbe is exemplars::max_per_probe when zero: eight
	// groups of bins, each with its slowest success.
	DefaultExemplarsPerProbe = 8
	// MaxExemplarsPerProbe is the largest exemplars::max_per_probe.
	MaxExemplarsPerProbe = 64
	// DefaultWorstInstances is worst_instances when zero.
	DefaultWorstInstances = 3
	// MaxWorstInstances is the largest worst_instances.
	MaxWorstInstances = 32
	// DefaultMaxAdjustedCount is max_adjusted_count when zero: 2¹⁰, how
	// far a span's own claim to stand for others is trusted. A span
	// sampled one in N weighs N, and nothing but the sender vouches for
	// N, so the bound is what one span can weigh. 1024 counts every
	// sampling probability down to about one in a thousand exactly, the
	// thinnest that still leaves a live ΔQ something to estimate: at one
	// in 1024 a probe of 10,000 instances a second keeps about ten spans
	// a one-second window, where the band, the quantiles and the tests
	// need dozens. Sampling thinner than that is a choice to state by
	// raising the bound. A forged threshold (th:ffffffffffffff, 2⁵⁶)
	// then counts 1024, not 2²⁰.
	DefaultMaxAdjustedCount = 1 << 10
	// MaxMaxAdjustedCount is the largest max_adjusted_count: 2⁴⁰, so that
	// a window's counts cannot overflow before 2²³ instances at the bound.
	MaxMaxAdjustedCount = 1 << 40
)

// ExemplarConfig is the exemplars option: which instances of a window are
// named by their trace on the observed histogram and the outcome counters.
type ExemplarConfig struct {
	// Enabled turns exemplars on; the collector components turn them on by
	// default: selecting them costs a comparison per success and a copy
	// per replacement, no time measurable on the span path (the README's
	// performance section has the figures).
	Enabled bool `mapstructure:"enabled"`
	// MaxPerProbe bounds the successes named per probe and window: the
	// probe's bins are cut into MaxPerProbe groups of consecutive bins and
	// the slowest success of each group is kept, so that the exemplars
	// cover the distribution from its fastest to its slowest bins. One
	// timeout and one failure are named besides. Zero means
	// DefaultExemplarsPerProbe; at most MaxExemplarsPerProbe.
	MaxPerProbe int `mapstructure:"max_per_probe"`
}

// Exemplar is one outcome instance named by its span, so that a number
// computed from a window links to a trace behind it.
type Exemplar struct {
	// TraceID and SpanID name the instance's span (for a timeout reported
	// by a start event, the start event's).
	TraceID [16]byte
	SpanID  [8]byte
	Outcome Outcome
	// Delay is the instance's delay in nanoseconds; for a timeout, the
	// dMax of its probe.
	Delay int64
	// Time is the instance's end in Unix nanoseconds; for a timeout, start
	// + dMax.
	Time int64
	// Weight is the instance's adjusted count (Instance.Weight, at least 1).
	Weight int64
}

// WorstInstances are the worst instances of a probe in one window: its
// slowest successes, slowest first, and its first timeouts and failures,
// in order of arrival; each at most worst_instances long. Instances
// without a trace id are not named.
type WorstInstances struct {
	Slowest, Timeouts, Failures []Exemplar
}

// Empty reports whether w names no instance.
func (w WorstInstances) Empty() bool {
	return len(w.Slowest) == 0 && len(w.Timeouts) == 0 && len(w.Failures) == 0
}

// Worst returns the one instance that stands for the window at its worst,
// for a record that carries one trace context of its own (an OTLP log
// record's trace and span ids, which a log backend's link to its traces
// follows): the first timeout, which did not complete within dMax, else the
// first failure, else the slowest success. It reports false when w names no
// instance.
func (w WorstInstances) Worst() (Exemplar, bool) {
	return firstOf(w.Timeouts, w.Failures, w.Slowest)
}

// firstOf returns the first instance of the first non-empty list.
func firstOf(lists ...[]Exemplar) (Exemplar, bool) {
	for _, xs := range lists {
		if len(xs) > 0 {
			return xs[0], true
		}
	}
	return Exemplar{}, false
}

// picks selects a window's exemplars and worst instances as its instances
// arrive, in fixed memory: groups[g] is the slowest success of the g-th
// group of bins (TraceID zero: none yet), timeout and failure the last
// ones, slow the worst-instances' slowest successes (unsorted; slowMin
// indexes the fastest of them once full).
type picks struct {
	groups           []Exemplar
	timeout, failure Exemplar
	slow             []Exemplar
	slowMin          int
	timeouts         []Exemplar
	failures         []Exemplar
	worst            int
	// divN is the bin count whose divisor divM holds (group).
	divN int
	divM uint64
}

// newPicks returns the picks of a window with nGroups exemplar groups
// (0: exemplars off) and worst instances of each kind.
func newPicks(nGroups, worst int) *picks {
	return &picks{
		groups:   make([]Exemplar, nGroups),
		slow:     make([]Exemplar, 0, worst),
		timeouts: make([]Exemplar, 0, worst),
		failures: make([]Exemplar, 0, worst),
		worst:    worst,
	}
}

// reset empties p for the next window, keeping its memory.
func (p *picks) reset() {
	clear(p.groups)
	p.timeout, p.failure = Exemplar{}, Exemplar{}
	p.slow, p.timeouts, p.failures = p.slow[:0], p.timeouts[:0], p.failures[:0]
	p.slowMin = 0
}

// keeps reports whether success would keep a success of d ns counted in
// bin of nBins: as the group's exemplar or among the slowest.
func (p *picks) keeps(d int64, bin, nBins int) bool {
	if len(p.groups) > 0 && bin >= 0 {
		if cur := &p.groups[p.group(bin, nBins)]; cur.TraceID == ([16]byte{}) || d > cur.Delay {
			return true
		}
	}
	return p.worst > 0 && (len(p.slow) < p.worst || d > p.slow[p.slowMin].Delay)
}

// group returns the exemplar group of bin among nBins, ⌊bin·G/nBins⌋ for
// G groups, by a multiplication rather than a 64-bit division, the
// dearest instruction of the span path: for 32-bit n and d ≥ 2, ⌊n/d⌋ is
// the high 64 bits of n·M with M = ⌊(2⁶⁴ − 1)/d⌋ + 1 (D. Lemire, O. Kaser
// and N. Kurz, "Faster remainder by direct computation", Software:
// Practice and Experience 49(6), 2019). M is kept for the last nBins,
// which is the accumulator's own. TestPicksGroup checks it against the
// division.
func (p *picks) group(bin, nBins int) int {
	n := uint64(bin) * uint64(len(p.groups))
	if nBins < 2 || n >= 1<<32 || uint64(nBins) >= 1<<32 {
		return int(n / uint64(nBins))
	}
	if nBins != p.divN {
		p.divN, p.divM = nBins, math.MaxUint64/uint64(nBins)+1
	}
	hi, _ := bits.Mul64(n, p.divM)
	return int(hi)
}

// success considers a success counted in bin of nBins.
func (p *picks) success(e *Exemplar, bin, nBins int) {
	if len(p.groups) > 0 && bin >= 0 {
		if cur := &p.groups[p.group(bin, nBins)]; cur.TraceID == ([16]byte{}) || e.Delay > cur.Delay {
			*cur = *e
		}
	}
	if p.worst == 0 {
		return
	}
	if len(p.slow) < p.worst {
		p.slow = append(p.slow, *e)
		if len(p.slow) == p.worst {
			p.slowMin = minDelay(p.slow)
		}
		return
	}
	if e.Delay > p.slow[p.slowMin].Delay {
		p.slow[p.slowMin] = *e
		p.slowMin = minDelay(p.slow)
	}
}

// minDelay returns the index of the fastest of s (not empty).
func minDelay(s []Exemplar) int {
	m := 0
	for i := range s {
		if s[i].Delay < s[m].Delay {
			m = i
		}
	}
	return m
}

// other considers a timeout or a failure.
func (p *picks) other(e *Exemplar) {
	if e.Outcome == Timeout {
		if len(p.groups) > 0 {
			p.timeout = *e
		}
		if len(p.timeouts) < p.worst {
			p.timeouts = append(p.timeouts, *e)
		}
		return
	}
	if len(p.groups) > 0 {
		p.failure = *e
	}
	if len(p.failures) < p.worst {
		p.failures = append(p.failures, *e)
	}
}

// exemplars returns the window's exemplars, copies: the successes by
// increasing delay, then the timeout, then the failure; nil when none.
func (p *picks) exemplars() []Exemplar {
	var out []Exemplar
	for _, e := range p.groups {
		if e.TraceID != ([16]byte{}) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Exemplar) int { return cmp.Compare(a.Delay, b.Delay) })
	for _, e := range []Exemplar{p.timeout, p.failure} {
		if e.TraceID != ([16]byte{}) {
			out = append(out, e)
		}
	}
	return out
}

// worstInstances returns the window's worst instances, copies.
func (p *picks) worstInstances() WorstInstances {
	w := WorstInstances{
		Slowest:  slices.Clone(p.slow),
		Timeouts: slices.Clone(p.timeouts),
		Failures: slices.Clone(p.failures),
	}
	slices.SortFunc(w.Slowest, func(a, b Exemplar) int { return cmp.Compare(b.Delay, a.Delay) })
	if len(w.Slowest) == 0 {
		w.Slowest = nil
	}
	if len(w.Timeouts) == 0 {
		w.Timeouts = nil
	}
	if len(w.Failures) == 0 {
		w.Failures = nil
	}
	return w
}

// checkSelection checks the exemplar, worst-instance and adjusted-count
// bounds.
func (c *Config) checkSelection() []error {
	var errs []error
	if n := c.Exemplars.MaxPerProbe; n < 0 || n > MaxExemplarsPerProbe {
		errs = append(errs, confpath.Errorf(confpath.Fields("exemplars", "max_per_probe"), `must be in [0, %d], got %d`, MaxExemplarsPerProbe, n))
	}
	if n := c.WorstInstances; n < 0 || n > MaxWorstInstances {
		errs = append(errs, confpath.Errorf(confpath.Fields("worst_instances"), `must be in [0, %d], got %d`, MaxWorstInstances, n))
	}
	if n := c.MaxAdjustedCount; n < 0 || n > MaxMaxAdjustedCount {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_adjusted_count"), `must be in [0, %d], got %d`, int64(MaxMaxAdjustedCount), n))
	}
	return errs
}
