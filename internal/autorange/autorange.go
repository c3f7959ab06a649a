// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package autorange chooses a probe's dMax from the delays it observes
// (`dmax: auto`), for the deltaq connector and processor alike: a Range per
// probe, fed every delay (Observe) and every timeout without a delay
// (Censor), stepped by its owner's timer (Step).
package autorange

// Auto-ranging probes (`dmax: auto`): the probe chooses its dMax from the
// delays it observes, because the delay range of an operation is rarely
// known before it is observed (the problem "Log/linear quantizations in
// DTrace" sets out for DTrace's aggregations).
//
// How a dMax is chosen. Every span of the probe adds its duration d to a
// tail sketch: counters of a log/linear quantization of d with factor 2
// and 16 steps per magnitude (tailLayout, the algebra's deltaq.LogLinear,
// as llquantize(d, 2, 0, 62, 16)): d < 16ns
// exactly, and each power-of-two range [2ᵉ, 2ᵉ⁺¹) in 8 buckets of width
// 2ᵉ⁻³, so a bucket's upper edge is at most 1/8 above any delay in it. A
// timeout announced by a start event whose span never came has no
// duration: it is counted as censored, longer than every bucket, until its
// span comes late, whose duration then takes its place (Uncensor). At the
// first timer tick at which dmax_period has passed since the last choice
// and the sample holds dmax_sample instances, the sample is read and
// emptied, and its tail q is the upper edge of the bucket that holds the
// p99.9 — rank r = min(⌈0.999·n⌉, n − 9): at least 10 instances lie at
// or above the tail's bucket, so that a handful of extreme spans cannot
// make the tail (see "Robustness" below); when r falls among the censored
// instances, q = 2·dMax: the tail is at least dMax. The dMax for q is the
// smallest 1-2-5 step (1, 2, 5, 10, 20, … ns) at or above 2·q, clamped to
// [dmax_min, dmax_max]: at least a factor 2 of headroom above the tail,
// so that fewer instances time out than lie beyond q while the tail holds
// — 0.1 % of a sample of 10,000 or more, but its 10 largest, 1 %, of the
// default 1000: delays of a Pareto tail of index 1.2 from 1 ms choose
// 100 ms there, beyond which 0.4 % lie — with a dMax a person reads at a
// glance.
//
// Learning phase: until the first sample is complete, the probe uses
// dmax_max (a provisional, large dMax: nothing that ends within the bound
// is misjudged as a timeout, at the cost of a coarse ΔQ and of late
// real-time timeouts); the first complete sample chooses the dMax at once.
//
// Re-ranging: afterwards, the tail q₀ the dMax was chosen from is kept. A
// sample whose tail q is at least 4·q₀, or at most q₀/4, is out of range;
// after 2 consecutive out-of-range samples in the same direction the dMax
// is chosen again from the last one, and q₀ becomes its q. A single
// outlying sample changes nothing. A delay jump is therefore followed
// within 2 choices (2·dmax_period when dmax_sample instances arrive in
// each period), and a choice that the clamp leaves unchanged is not
// announced.
//
// Robustness. A sender who wants to move dMax needs a real share of the
// probe's traffic, in every sample: the tail needs max(0.1 %·n, 10)
// instances beyond the range (1 % of the default sample of 1000), in 2
// consecutive samples, at least 4 times the tail the dMax was chosen from
// (or all but that share within a quarter of it, to lower it) — and
// whatever he sends, the dMax changes at most dmax_changes_per_hour
// times in any hour (6 by default): a change beyond that is suppressed,
// counted (`dmax_changes_suppressed`) and logged, and the
// probe keeps its dMax until the hour allows a change again. The attack
// this answers: 1,200 spans a second of 10 ms and 3 of 50 s in
// alternating pairs of 1 s samples moved dMax 12 times in 28 s; now the 3
// spans are below the 10 the tail needs, and 10 or more move it at most 6
// times an hour.
//
// Each change is announced by the component that owns the probe (the
// deltaq connector or processor): a log record (Info, with the old and
// new dMax and the tail), a counter (`dmax_changes`) and a gauge (`dmax`),
// and the analysis moves the probe to the new layout at its next window
// boundary (analysis: windows that hold instances of the old layout close
// with it). Spans are classified, and a start event's deadline set, by the
// dMax in force when they are read; an instance in flight keeps the
// deadline it was given.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Options are the auto-ranging options of a probe with `dmax: auto`.
type Options struct {
	// Min and Max bound the dMax the probe chooses; 1ms and 1m when
	// omitted. Until its first choice the probe uses Max.
	Min time.Duration `mapstructure:"dmax_min"`
	Max time.Duration `mapstructure:"dmax_max"`
	// Sample is the number of instances observed before each choice, and
	// Period the shortest time between two choices: 1000 and 10s when
	// omitted.
	Sample int           `mapstructure:"dmax_sample"`
	Period time.Duration `mapstructure:"dmax_period"`
	// ChangesPerHour bounds the changes of the dMax in any hour; a change
	// beyond it is suppressed and counted. 6 when omitted, in [1, 3600].
	ChangesPerHour int `mapstructure:"dmax_changes_per_hour"`
}

// Defaults and bounds of the options.
const (
	DefaultMin    = time.Millisecond
	DefaultMax    = time.Minute
	DefaultSample = 1000
	DefaultPeriod = 10 * time.Second
	// DefaultChangesPerHour: a probe re-ranges to follow a change of
	// regime, which is rare; six an hour allow one every ten minutes.
	DefaultChangesPerHour = 6
	MaxChangesPerHour     = 3600
	// A p99.9 needs at least 1000 instances to be more than the largest;
	// 100 still gives the largest tenth of a percent a say, and the bound
	// keeps a typing error from making every tick a choice.
	MinSample = 100
	MaxSample = 10_000_000
	MinPeriod = time.Second
	MaxPeriod = 24 * time.Hour
)

// IsZero reports whether no option is set.
func (o Options) IsZero() bool { return o == Options{} }

// WithDefaults returns o with each option not set at its default.
func (o Options) WithDefaults() Options {
	if o.Min == 0 {
		o.Min = DefaultMin
	}
	if o.Max == 0 {
		o.Max = DefaultMax
	}
	if o.Sample == 0 {
		o.Sample = DefaultSample
	}
	if o.Period == 0 {
		o.Period = DefaultPeriod
	}
	if o.ChangesPerHour == 0 {
		o.ChangesPerHour = DefaultChangesPerHour
	}
	return o
}

// Check returns the problems of the options, each naming its option.
func (o Options) Check() []error {
	var errs []error
	d := o.WithDefaults()
	lo, hi := d.Min, d.Max
	if lo < deltaq.MinDMax || lo > deltaq.MaxDMax {
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax_min"), "must be in [%v, %v], got %v", deltaq.MinDMax, deltaq.MaxDMax, lo))
	}
	if hi < deltaq.MinDMax || hi > deltaq.MaxDMax {
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax_max"), "must be in [%v, %v], got %v", deltaq.MinDMax, deltaq.MaxDMax, hi))
	}
	if lo > hi {
		errs = append(errs, fmt.Errorf("dmax_min, dmax_max: dmax_min %v is above dmax_max %v", lo, hi))
	}
	if o.Sample != 0 && (o.Sample < MinSample || o.Sample > MaxSample) {
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax_sample"), "must be in [%d, %d], got %d", MinSample, MaxSample, o.Sample))
	}
	if o.Period != 0 && (o.Period < MinPeriod || o.Period > MaxPeriod) {
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax_period"), "must be in [%v, %v], got %v", MinPeriod, MaxPeriod, o.Period))
	}
	if o.ChangesPerHour != 0 && (o.ChangesPerHour < 1 || o.ChangesPerHour > MaxChangesPerHour) {
		errs = append(errs, confpath.Errorf(confpath.Fields("dmax_changes_per_hour"), "must be in [1, %d], got %d", MaxChangesPerHour, o.ChangesPerHour))
	}
	return errs
}

// CheckBins returns the problem of the bin count of an auto probe, if any:
// the dMax moves, the bins stay, in [1, deltaq.MaxThesisBins].
func CheckBins(bins int) error {
	if bins < 1 || bins > deltaq.MaxThesisBins {
		return confpath.Errorf(confpath.Fields("bins"), "must be in [1, %d] with dmax: auto, got %d", deltaq.MaxThesisBins, bins)
	}
	return nil
}

// ErrNotAuto is the error of auto-ranging options on a probe without
// `dmax: auto`.
var ErrNotAuto = errors.New("dmax_min, dmax_max, dmax_sample, dmax_period, dmax_changes_per_hour: only with dmax: auto")

// The rules of the choice (see the comment at the top of the file).
const (
	autoQuantile = 0.999
	autoMargin   = 2
	autoFactor   = 4
	autoSustain  = 2
	// autoMinBeyond is the number of instances of a sample that must lie
	// at or above the tail's bucket.
	autoMinBeyond = 10
)

// tailLayout is the tail sketch's log-linear buckets (the comment at the
// top of the file): exact below 16 ns, then 8 per power of two up to 2⁶²
// ns, beyond any dmax_max.
var tailLayout = deltaq.LogLinear{Factor: 2, Low: 1, High: 1 << 62, Steps: 16}

// tailIndex finds a delay's bucket of tailLayout, tailEdges are its edges.
var tailIndex, tailEdges = mustTailLayout()

func mustTailLayout() (*deltaq.LogLinearIndex, []int64) {
	x, err := tailLayout.Index()
	if err != nil {
		panic(fmt.Sprintf("autorange: the tail sketch's layout: %v", err))
	}
	edges, _ := tailLayout.Edges()
	return x, edges
}

// tailUpper returns the upper edge of bucket i: every delay in it is below
// the edge, by at most 1/8 of the delay.
func tailUpper(i int) int64 { return tailEdges[i+1] }

// Range is the state of an auto-ranging probe. The span path adds to tail
// and reads dMax, both atomics; the rest belongs to its owner's timer.
type Range struct {
	// dMax is the dMax in force, ns.
	dMax atomic.Int64
	// tail is the sketch of the current sample and censored its timeouts
	// without a duration.
	tail     []atomic.Uint64 // one a bucket of tailLayout
	censored atomic.Uint64
	// changes counts the announced changes of dMax; suppressed those
	// dmax_changes_per_hour held back.
	changes, suppressed atomic.Int64

	min, max, sample, period int64 // the options, ns and instances
	perHour                  int   // dmax_changes_per_hour

	// Timer goroutine only.
	decided bool
	ref     int64 // q₀, ns
	streak  int   // consecutive out-of-range samples
	dir     int   // their direction, +1 or −1
	since   int64 // start of the current sample, Unix ns; 0 before the first tick
	snap    []uint64
	// recent are the times (Unix ns) of the changes of the last hour, at
	// most perHour; warned is when a suppression was last logged.
	recent []int64
	warned int64
}

// Observe adds a delay of d ns to the sample.
func (a *Range) Observe(d int64) { a.tail[tailIndex.Bucket(d)].Add(1) }

// Censor adds to the sample an instance without a delay: a timeout whose
// span never came, longer than its dMax.
func (a *Range) Censor() { a.censored.Add(1) }

// Uncensor adds to the sample the delay of d ns of an instance Censor
// counted, whose span came after all (late): the delay takes the place of
// a censored instance of the sample, so that the instance counts once, by
// its delay. Counted twice, the censored half of such instances made the
// tail 2·dMax whatever their delays: after a jump of the delays a probe
// with start events climbed by factors of 4 (50ms, 200ms, 1s, 5s: three
// changes), where the delays alone choose 5s at once. When the sample that
// held the censored instance has closed, the delay goes into the current
// one.
func (a *Range) Uncensor(d int64) {
	for {
		c := a.censored.Load()
		if c == 0 || a.censored.CompareAndSwap(c, c-1) {
			break
		}
	}
	a.Observe(d)
}

// DMax returns the dMax in force, ns.
func (a *Range) DMax() int64 { return a.dMax.Load() }

// Changes and Suppressed count the changes of dMax made and those
// ChangesPerHour held back.
func (a *Range) Changes() *atomic.Int64    { return &a.changes }
func (a *Range) Suppressed() *atomic.Int64 { return &a.suppressed }

// ChangesPerHour returns the bound on the changes in any hour.
func (a *Range) ChangesPerHour() int { return a.perHour }

// Begin starts the first sample at now (Unix ns), when the owner starts.
// Owner's timer only.
func (a *Range) Begin(now int64) { a.since = now }

// Decided reports whether the learning phase is over, and the tail the
// dMax in force was chosen from, for a successor across a reload.
func (a *Range) Decided() (bool, int64) { return a.decided, a.ref }

// Adopt makes a range in its learning phase keep the dMax d its
// predecessor across a reload had chosen from tail ref, when d is within
// its bounds; it reports whether it did. Before the owner starts.
func (a *Range) Adopt(d, ref int64) bool {
	if a.decided || d < a.min || d > a.max {
		return false
	}
	a.decided, a.ref = true, ref
	a.dMax.Store(d)
	return true
}

// WarnDue reports whether a suppressed change at now (Unix ns) is to be
// logged: at most once an hour; the counter tells the rest. Owner's timer
// only.
func (a *Range) WarnDue(now int64) bool {
	if a.warned != 0 && now-a.warned < hour {
		return false
	}
	a.warned = now
	return true
}

// New returns the range of a probe of bins bins with the options o
// (checked), in its learning phase. With more bins than nanoseconds in Min
// the bound is raised to one nanosecond per bin.
func New(o Options, bins int) *Range {
	o = o.WithDefaults()
	a := &Range{min: max(int64(o.Min), int64(bins)), max: int64(o.Max), sample: int64(o.Sample), period: int64(o.Period),
		perHour: o.ChangesPerHour, tail: make([]atomic.Uint64, tailIndex.Buckets()), snap: make([]uint64, tailIndex.Buckets())}
	a.min = min(a.min, a.max)
	a.dMax.Store(a.max)
	return a
}

// step125 returns the smallest 1-2-5 step (1, 2, 5, 10, 20, 50, … ns) at
// or above x ns, for 0 < x ≤ 10¹⁸.
func step125(x int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range [3]int64{1, 2, 5} {
			if m*p >= x {
				return m * p
			}
		}
	}
}

// choose returns the dMax for a tail of q ns.
func (a *Range) choose(q int64) int64 {
	x := q
	if x > math.MaxInt64/autoMargin {
		x = math.MaxInt64
	} else {
		x *= autoMargin
	}
	if x >= a.max {
		return a.max
	}
	return max(step125(max(x, 1)), a.min)
}

// tailOf returns the tail q (ns) of the sample in snap, of n instances in
// all, its censored ones beyond every bucket.
func (a *Range) tailOf(n uint64) int64 {
	rank := uint64(math.Ceil(autoQuantile * float64(n)))
	if n >= autoMinBeyond {
		rank = min(rank, n-autoMinBeyond+1)
	}
	var c uint64
	for i := range a.snap {
		c += a.snap[i]
		if c >= rank {
			return tailUpper(i)
		}
	}
	// The rank lies among the censored instances: the tail is beyond dMax.
	d := a.dMax.Load()
	if d > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * d
}

// Change is a change of an auto probe's dMax that step decided.
type Change struct {
	// From and To are the dMax before and after, Tail the tail To was
	// chosen from, ns.
	From, To, Tail int64
	// Learned: the first choice, at the end of the learning phase.
	Learned bool
	// Suppressed: ChangesPerHour held the change back; To is the dMax it
	// would have had.
	Suppressed bool
}

// Step closes the sample if it is due at now (Unix ns) and reports the
// change of dMax it decides, if any. Timer goroutine only.
func (a *Range) Step(now int64) (Change, bool) {
	if a.since == 0 || now < a.since {
		// The first tick, or the clock went back: the sample's period
		// counts from now, not from a time the clock reaches again only
		// after the step (an hour's step stopped the learning for an
		// hour).
		a.since = now
		return Change{}, false
	}
	if now-a.since < a.period {
		return Change{}, false
	}
	var n uint64
	for i := range a.tail {
		n += a.tail[i].Load()
	}
	n += a.censored.Load()
	if n < uint64(a.sample) {
		return Change{}, false
	}
	// Empty the sample. A span counted between the loads above and the
	// swaps below goes into this sample rather than the next: no count is
	// lost.
	n = 0
	for i := range a.tail {
		a.snap[i] = a.tail[i].Swap(0)
		n += a.snap[i]
	}
	n += a.censored.Swap(0)
	a.since = now
	q := a.tailOf(n)
	cur := a.dMax.Load()
	if !a.decided {
		a.decided, a.ref, a.streak = true, q, 0
		return a.apply(cur, q, now, true)
	}
	dir := 0
	switch {
	case q >= autoFactor*a.ref:
		dir = 1
	case autoFactor*q <= a.ref:
		dir = -1
	}
	if dir == 0 || dir != a.dir {
		a.streak = 0
	}
	a.dir = dir
	if dir == 0 {
		return Change{}, false
	}
	a.streak++
	if a.streak < autoSustain {
		return Change{}, false
	}
	a.streak, a.dir = 0, 0
	ch, ok := a.apply(cur, q, now, false)
	if !ch.Suppressed {
		// A suppressed change keeps the reference: the samples that
		// follow must be out of range again.
		a.ref = q
	}
	return ch, ok
}

// hour is the span over which dmax_changes_per_hour counts changes.
const hour = int64(time.Hour)

// apply puts the dMax for tail q in force at now and reports it, unless it
// is the current one, or dmax_changes_per_hour changes were made in the
// last hour: then the change is suppressed, counted, and reported with
// suppressed set.
func (a *Range) apply(cur, q, now int64, learned bool) (Change, bool) {
	to := a.choose(q)
	if to == cur {
		return Change{}, false
	}
	a.recent = slices.DeleteFunc(a.recent, func(t int64) bool { return now-t >= hour })
	if len(a.recent) >= a.perHour {
		a.suppressed.Add(1)
		return Change{From: cur, To: to, Tail: q, Suppressed: true}, true
	}
	a.recent = append(a.recent, now)
	a.dMax.Store(to)
	a.changes.Add(1)
	return Change{From: cur, To: to, Tail: q, Learned: learned}, true
}

// Log logs a change of the dMax of probe name, of bins bins, that Step
// decided at now (Unix ns): a suppressed change at most once an hour (the
// counter tells the rest).
func Log(logger *zap.Logger, a *Range, name string, bins int, ch Change, now int64) {
	if ch.Suppressed {
		if a.WarnDue(now) {
			logger.Warn("deltaq: probe re-range suppressed: dmax_changes_per_hour changes in the last hour",
				zap.String("probe", name), zap.Duration("dmax", time.Duration(ch.From)),
				zap.Duration("dmax_suppressed", time.Duration(ch.To)), zap.Duration("p99.9", time.Duration(ch.Tail)),
				zap.Int("dmax_changes_per_hour", a.perHour))
		}
		return
	}
	msg := "deltaq: probe re-ranged: its delays moved, dMax changed"
	if ch.Learned {
		msg = "deltaq: probe ranged: dMax chosen from the observed delays"
	}
	logger.Info(msg, zap.String("probe", name),
		zap.Duration("dmax_before", time.Duration(ch.From)), zap.Duration("dmax", time.Duration(ch.To)),
		zap.Duration("p99.9", time.Duration(ch.Tail)), zap.Int("bins", bins))
}
