// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"cmp"
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Agents and a gateway. An agent collector's observer with emit_windows
// adds each probe's window to its output in the form that merges exactly
// (contract.MetricWindow): a delta histogram whose start and end are the
// window's bounds, whose buckets are the probe's bins with the window's
// successes and, above dMax, its timeouts and failures, and whose
// attributes count the timeouts and the failures apart; for a window of no
// instance at all, its word that it was idle (contract.MetricWindowIdle). A
// gateway's observer consumes those metrics (ConsumeMetrics) and adds the
// windows of the same probe and bounds from every agent
// (analysis.Engine.AddWindow), then analyses them as if it had seen every
// instance; an idle agent's word counts it among the window's contributors
// (analysis.Engine.AddIdle) and adds nothing.

// windowPoints appends the probe's window in mergeable form (nothing for a
// window without instances): explicit bounds at the upper edges of its
// bins — the uniform edges w … dMax, or a log-linear probe's bucket edges
// with its factor and steps — written sparsely: the first edge, dMax, and
// the edges around each occupied bin, so that a run of empty bins is one
// empty bucket and a window's size follows its occupied bins.
func (b *builder) windowPoints(s *metricSet, r *analysis.Result, p *analysis.ProbeResult, id probeID) {
	w, ok := analysis.WindowOf(r, p, "")
	if !ok {
		return
	}
	upper := p.Edges
	if w.LogLinear == (deltaq.LogLinear{}) {
		upper = b.edgesOf(p.Width, w.Bins).bounds
	}
	dp := s.window.Histogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(w.Start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(w.End))
	a := dp.Attributes()
	extra := 3
	if w.Fine {
		extra += 4
	}
	if w.LogLinear != (deltaq.LogLinear{}) {
		id.put(a, extra+2)
		a.PutInt(contract.AttrBinningFactor, w.LogLinear.Factor)
		a.PutInt(contract.AttrBinningSteps, w.LogLinear.Steps)
	} else {
		id.put(a, extra)
	}
	a.PutInt(contract.AttrTimeout, w.Timeouts)
	a.PutInt(contract.AttrFailure, w.Failures)
	// When this observer began, the same in every delivery of the window
	// (the gateway refuses a repeat), later after a restart.
	a.PutInt(contract.AttrAgentStart, int64(b.start))
	if w.Fine {
		b.fineBuf = putFine(a, &w, b.fineBuf)
	}
	b.wBounds, b.wCounts = sparseBuckets(upper, w.BinCounts, b.wBounds[:0], b.wCounts[:0])
	dp.ExplicitBounds().FromRaw(b.wBounds)
	b.wCounts = append(b.wCounts, uint64(w.Timeouts+w.Failures))
	dp.BucketCounts().FromRaw(b.wCounts)
	dp.SetCount(uint64(p.Counts.Total()))
	dp.SetSum(w.SuccessSum)
}

// idlePoint appends the agent's word that it saw no instance in the window
// [start, end) (contract.MetricWindowIdle): sent for a window of no
// deltaq.window point, so that a gateway counts the agent, up and idle,
// among the window's contributors rather than as missing. A window of
// instances needs none: its deltaq.window points count the agent.
func (b *builder) idlePoint(ms pmetric.MetricSlice, start, end pcommon.Timestamp) {
	m := newMetric(ms, contract.MetricWindowIdle, contract.UnitWindowIdle, "A window in which this agent saw no instance: a gateway counts the agent present in it.")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := sum.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(start)
	dp.SetTimestamp(end)
	dp.SetIntValue(1)
	dp.Attributes().PutInt(contract.AttrAgentStart, int64(b.start))
}

// putFine puts a window's analysis counts and weights in its attributes
// (contract.MetricWindow): the counts in one bytes value, which a gateway
// reads in one pass, rather than as lists of pdata values. The first byte
// says the form: fineSparse, varint pairs of the step to the next occupied
// bucket and its count; or, for a window whose buckets are mostly
// occupied, fineRun: a byte giving the width of each count (1, 2, 4 or 8
// bytes, the widest count's), the varint of the first occupied bucket, then
// every bucket's count of the run to the last, zeros included, little
// endian — a form read without a branch a count.
func putFine(a pcommon.Map, w *analysis.Window, buf []byte) []byte {
	buf = buf[:0]
	idx, counts := w.FineIndex, w.FineCounts
	if n := len(idx); n > 0 && idx[n-1]-idx[0]+1 <= 2*n {
		width := countWidth(slices.Max(counts))
		buf = append(buf, fineRun, byte(width))
		buf = binary.AppendUvarint(buf, uint64(idx[0]))
		var word [8]byte
		k := 0
		for i := idx[0]; i <= idx[n-1]; i++ {
			var c uint64
			if idx[k] == i {
				c = counts[k]
				k++
			}
			binary.LittleEndian.PutUint64(word[:], c)
			buf = append(buf, word[:width]...)
		}
	} else {
		buf = append(buf, fineSparse)
		prev := -1
		for j, i := range idx {
			buf = binary.AppendUvarint(buf, uint64(i-prev-1))
			buf = binary.AppendUvarint(buf, counts[j])
			prev = i
		}
	}
	a.PutEmptyBytes(contract.AttrFine).FromRaw(buf)
	a.PutDouble(contract.AttrWeightSum, w.WeightSum)
	a.PutDouble(contract.AttrWeightSquares, w.WeightSquares)
	return buf
}

// countWidth returns the bytes, 1, 2, 4 or 8, that hold c.
func countWidth(c uint64) int {
	switch {
	case c < 1<<8:
		return 1
	case c < 1<<16:
		return 2
	case c < 1<<32:
		return 4
	}
	return 8
}

// The forms of a window's analysis counts on the wire (putFine).
const (
	fineSparse = 0
	fineRun    = 1
)

// readFine reads a window's analysis counts from their attribute into w;
// false when it is not bytes of one of putFine's forms, of whole varints,
// whole counts and indices that fit an int. pdata gives the bytes only
// one at a time (At) or as a fresh copy, so they are decoded where they
// lie, one At a byte, rather than copied first.
func readFine(v pcommon.Value, w *analysis.Window) bool {
	if v.Type() != pcommon.ValueTypeBytes {
		return false
	}
	b := v.Bytes()
	n := b.Len()
	if n == 0 || b.At(0) > fineRun {
		return false
	}
	if b.At(0) == fineRun {
		return readFineRun(b, w)
	}
	// At most (n−1)/2 pairs, stored by index rather than appended.
	m := (n - 1) / 2
	idx, counts := slices.Grow(w.FineIndex[:0], m)[:m], slices.Grow(w.FineCounts[:0], m)[:m]
	k, prev := 0, -1
	for i := 1; i < n; {
		if i+8 <= n && b.At(i)|b.At(i+1) < 0x80 {
			// Four pairs of one byte each, the common run of them in a
			// window of many instances, loaded before the stores, which
			// then share one load of pdata's slice (readBytes). The first
			// pair is looked at alone first: the pairs of a window of few
			// instances have steps of several bytes. prev only grows: it
			// is checked once.
			c0, c1, c2, c3 := b.At(i), b.At(i+1), b.At(i+2), b.At(i+3)
			c4, c5, c6, c7 := b.At(i+4), b.At(i+5), b.At(i+6), b.At(i+7)
			if c2|c3|c4|c5|c6|c7 < 0x80 {
				x, y := idx[k:k+4:k+4], counts[k:k+4:k+4]
				prev += int(c0) + 1
				x[0], y[0] = prev, uint64(c1)
				prev += int(c2) + 1
				x[1], y[1] = prev, uint64(c3)
				prev += int(c4) + 1
				x[2], y[2] = prev, uint64(c5)
				prev += int(c6) + 1
				x[3], y[3] = prev, uint64(c7)
				if prev > math.MaxInt32 {
					return false
				}
				k, i = k+4, i+8
				continue
			}
		}
		var d, c uint64
		if i+1 < n && b.At(i)|b.At(i+1) < 0x80 {
			// A step and a count of one byte each, the common pair.
			d, c = uint64(b.At(i)), uint64(b.At(i+1))
			i += 2
		} else if i+2 < n && b.At(i) >= 0x80 && b.At(i+1)|b.At(i+2) < 0x80 {
			// A step of two bytes and a count of one: the pair of a
			// bucket far from the one before, in a window of few
			// instances, read in line (varintAt's calls took 80
			// instructions a pair).
			d, c = uint64(b.At(i)&0x7f)|uint64(b.At(i+1))<<7, uint64(b.At(i+2))
			i += 3
		} else {
			var dn, cn int
			if d, dn = varintAt(b, i, n); dn <= 0 || d > math.MaxInt32 {
				return false
			}
			if c, cn = varintAt(b, i+dn, n); cn <= 0 {
				return false
			}
			i += dn + cn
		}
		// prev ≤ MaxInt32 and d ≤ MaxInt32: the sum does not overflow.
		if prev += int(d) + 1; prev > math.MaxInt32 {
			return false
		}
		idx[k], counts[k] = prev, c
		k++
	}
	w.FineIndex, w.FineCounts = idx[:k], counts[:k]
	return true
}

// varintAt is uvarintAt of b, n bytes long, with the varints of one and
// two bytes, the steps and counts of scattered buckets, read in line.
func varintAt(b pcommon.ByteSlice, i, n int) (uint64, int) {
	if i+1 < n {
		x, y := b.At(i), b.At(i+1)
		if x < 0x80 {
			return uint64(x), 1
		}
		if y < 0x80 {
			return uint64(x&0x7f) | uint64(y)<<7, 2
		}
	}
	return uvarintAt(b, i)
}

// uvarintAt decodes the varint at b[i:] as binary.Uvarint does: the value
// and the bytes read; 0 when b ends first, −(bytes read) when it
// overflows 64 bits.
func uvarintAt(b pcommon.ByteSlice, i int) (uint64, int) {
	var x uint64
	var s uint
	for k := 0; i+k < b.Len(); k++ {
		if k == binary.MaxVarintLen64 {
			return 0, -(k + 1)
		}
		c := b.At(i + k)
		if c < 0x80 {
			if k == binary.MaxVarintLen64-1 && c > 1 {
				return 0, -(k + 1)
			}
			return x | uint64(c)<<s, k + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// readFineRun reads the fineRun form b into w.
func readFineRun(b pcommon.ByteSlice, w *analysis.Window) bool {
	if b.Len() < 2 {
		return false
	}
	width := int(b.At(1))
	first, n := uvarintAt(b, 2)
	if (width != 1 && width != 2 && width != 4 && width != 8) || n <= 0 || first > math.MaxInt32 {
		return false
	}
	off := 2 + n
	if (b.Len()-off)%width != 0 {
		return false
	}
	w.FineIndex, w.FineFirst = nil, int(first)
	counts := slices.Grow(w.FineCounts[:0], (b.Len()-off)/width)[:(b.Len()-off)/width]
	if width == 1 {
		readBytes(counts, b, off)
	} else {
		for j := range counts {
			// Little endian, width bytes.
			var c uint64
			for k := width - 1; k >= 0; k-- {
				c = c<<8 | uint64(b.At(off+j*width+k))
			}
			counts[j] = c
		}
	}
	w.FineCounts = counts
	return true
}

// readBytes sets dst[j] to the byte b[off+j] for every j. As copyCounts
// does, it loads eight bytes between the stores, which then share one load
// of pdata's slice.
func readBytes(dst []uint64, b pcommon.ByteSlice, off int) {
	j := 0
	for ; j+8 <= len(dst); j += 8 {
		i := off + j
		c0, c1, c2, c3 := b.At(i), b.At(i+1), b.At(i+2), b.At(i+3)
		c4, c5, c6, c7 := b.At(i+4), b.At(i+5), b.At(i+6), b.At(i+7)
		d := dst[j : j+8 : j+8]
		d[0], d[1], d[2], d[3] = uint64(c0), uint64(c1), uint64(c2), uint64(c3)
		d[4], d[5], d[6], d[7] = uint64(c4), uint64(c5), uint64(c6), uint64(c7)
	}
	for ; j < len(dst); j++ {
		dst[j] = uint64(b.At(off + j))
	}
}

// sparseBuckets appends to bounds and counts the sparse buckets of the bin
// counts c whose upper edges are upper: bucket (−∞, upper[0]] holds bin 0,
// each occupied bin i > 0 has the bucket (upper[i−1], upper[i]], a run of
// empty bins between them one empty bucket, and the last bound is dMax.
// Without an empty run the result is every edge, the dense form.
//
// A window whose sparse form would have more than a quarter of the bins' buckets
// goes dense: a gateway reads a dense point of a layout it knows without
// looking at its bounds again.
func sparseBuckets(upper []float64, c []uint64, bounds []float64, counts []uint64) ([]float64, []uint64) {
	n := 1
	for i := 1; i < len(c); i++ {
		if c[i] != 0 {
			n++
			if c[i-1] == 0 {
				n++
			}
		}
	}
	if 4*n > len(c) {
		return append(bounds, upper...), append(counts, c...)
	}
	bounds, counts = append(bounds, upper[0]), append(counts, c[0])
	last := 0 // the bin whose upper edge is the last bound
	for i := 1; i < len(c); i++ {
		if c[i] == 0 {
			continue
		}
		if last < i-1 {
			bounds, counts = append(bounds, upper[i-1]), append(counts, 0)
		}
		bounds, counts = append(bounds, upper[i]), append(counts, c[i])
		last = i
	}
	if last < len(c)-1 {
		bounds, counts = append(bounds, upper[len(c)-1]), append(counts, 0)
	}
	return bounds, counts
}

// ConsumeMetrics merges the windows of other observers (agents) found among
// the metrics: the points of contract.MetricWindow, each from the source its
// resource names (service.instance.id, else service.name); the points of
// contract.MetricWindowIdle count their idle agent among their windows'
// contributors (consumeIdle). Other metrics are ignored. What became of
// each window is counted in the contributions self-telemetry; a point that
// does not describe a window (no probe, bounds that are not edges of a
// layout, counts that do not add up, a metric of either name but of
// another type) counts as invalid. The engine checks the rest
// (analysis.Engine.AddWindow).
//
// Concurrent calls (the receiver's handlers of several agents' requests)
// read and check their windows in parallel; the engine is locked only to
// add them, once for a few windows (analysis.Engine.AddWindows).
func (o *Observer) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	// The windows read and their buffers are reused from call to call.
	sc, _ := o.scratch.Get().(*windowScratch)
	if sc == nil {
		sc = &windowScratch{wire: o.wire.reader()}
	}
	// The fates are counted here and added to the self-telemetry once per
	// request: an instrument's Add per window would cost as much as the
	// merge of a sparse window.
	var fates analysis.Contributions
	defer func() {
		o.scratch.Put(sc)
		for c, n := range fates {
			if n > 0 {
				o.tel.Contributions.Add(ctx, n, o.fateAttr[c])
			}
		}
	}()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		source := contract.Source(rms.At(i).Resource()) // longer than analysis.MaxSourceLength: refused by the engine
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != contract.MetricWindow || m.Type() != pmetric.MetricTypeHistogram {
					switch {
					case m.Name() == contract.MetricWindowIdle && m.Type() == pmetric.MetricTypeSum:
						o.consumeIdle(m.Sum().DataPoints(), source, &fates)
					case m.Name() == contract.MetricWindow || m.Name() == contract.MetricWindowIdle:
						// The contract's name, another type: not a window.
						fates[analysis.ContributionInvalid] += int64(dataPointCount(m))
					}
					continue
				}
				dps := m.Histogram().DataPoints()
				if !o.build.merging.Load() {
					o.build.merging.Store(true)
				}
				for l := 0; l < dps.Len(); l++ {
					if sc.read(dps.At(l), source) {
						o.flushWindows(ctx, sc, &fates)
					}
				}
			}
		}
	}
	o.flushWindows(ctx, sc, &fates)
	return nil
}

// flushWindows gives the engine the windows sc has read, counts their
// fates, and notes the services the merged ones came from for the probes'
// series (contract.AttrService), as one collector notes those of the
// spans behind them.
func (o *Observer) flushWindows(ctx context.Context, sc *windowScratch, fates *analysis.Contributions) {
	sc.flush(o.engine, fates)
	if len(sc.services) > 0 {
		// Each pair once, as a batch of spans notes it: the bounds count
		// what they cut once a batch. An overflow pair alone names no
		// service.
		slices.SortFunc(sc.services, func(a, b probeService) int {
			return cmp.Or(strings.Compare(a.probe, b.probe), strings.Compare(a.service, b.service))
		})
		o.noteServices(ctx, slices.Compact(sc.services))
		sc.services = sc.services[:0]
	}
}

// consumeIdle counts source, an agent that says it saw no instance in the
// windows of the points dps (contract.MetricWindowIdle), among those
// windows' contributors (analysis.Engine.AddIdle), and their fates. They
// merge nothing: the windows of busy agents never come this way. A point
// whose value is not the integer 1 is not an agent's word: invalid.
func (o *Observer) consumeIdle(dps pmetric.NumberDataPointSlice, source string, fates *analysis.Contributions) {
	if !o.build.merging.Load() {
		o.build.merging.Store(true)
	}
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		if dp.ValueType() != pmetric.NumberDataPointValueTypeInt || dp.IntValue() != 1 {
			fates[analysis.ContributionInvalid]++
			continue
		}
		var began int64
		if v, ok := dp.Attributes().Get(contract.AttrAgentStart); ok && v.Type() == pcommon.ValueTypeInt {
			began = v.Int()
		}
		fates[o.engine.AddIdle(source, dp.StartTimestamp().AsTime(), dp.Timestamp().AsTime(), began)]++
	}
}

// windowScratch holds the windows ConsumeMetrics has read and not yet
// given to the engine, with the buffers of their counts and sparse
// indices, of their bins and of their analysis counts (kept across dense
// windows and runs, which have none), and the reader of their layouts.
// One request uses it at a time.
type windowScratch struct {
	batch   []analysis.Window
	idx     [][]int
	fineIdx [][]int
	fates   []analysis.Contribution
	// labels are the windows' service labels (contract.AttrService), and
	// services the (probe, service) pairs of the windows merged, each
	// noted once a batch (flushWindows sorts and compacts them).
	labels   []string
	services []probeService
	n        int // windows in batch
	counts   int // their display and analysis counts
	wire     wireReader
}

// Bounds of the batch of windows ConsumeMetrics gives the engine at once:
// a few dense windows, whose counts, the display and the analysis ones
// (about 16 KiB a window of 1000 bins and its thousand analysis buckets),
// stay in the processor's first-level cache between their reading, their
// check and their addition, or the sparse windows of a request of a few
// hundred probes (analysis.Engine.AddWindows takes as many under one lock).
const (
	maxBatchWindows = 256
	maxBatchCounts  = 2048
)

// read reads the point dp from source into the next window of the batch
// (one that does not describe a window as an empty window, which the
// engine counts as invalid, of no instance) and reports whether the batch
// is full.
func (sc *windowScratch) read(dp pmetric.HistogramDataPoint, source string) bool {
	if sc.n == len(sc.batch) {
		sc.batch, sc.idx = append(sc.batch, analysis.Window{}), append(sc.idx, nil)
		sc.fineIdx, sc.fates = append(sc.fineIdx, nil), append(sc.fates, 0)
		sc.labels = append(sc.labels, "")
	}
	// The sparse indices' buffers are the slot's own: a dense window sets
	// BinIndex nil, a run FineIndex, and the buffers are not made again
	// for the next.
	if sc.idx[sc.n] == nil {
		sc.idx[sc.n] = make([]int, 0, 64)
	}
	w := &sc.batch[sc.n]
	w.BinIndex, w.FineIndex = sc.idx[sc.n][:0], sc.fineIdx[sc.n][:0]
	ok := readWindow(dp, source, w, &sc.wire)
	if w.BinIndex != nil {
		sc.idx[sc.n] = w.BinIndex
	}
	if w.FineIndex != nil {
		sc.fineIdx[sc.n] = w.FineIndex
	}
	if !ok {
		*w = analysis.Window{BinIndex: w.BinIndex[:0], BinCounts: w.BinCounts[:0]}
	}
	sc.labels[sc.n] = ""
	if v, found := dp.Attributes().Get(contract.AttrService); found && v.Type() == pcommon.ValueTypeStr {
		sc.labels[sc.n] = v.Str()
	}
	sc.n++
	sc.counts += len(w.BinCounts) + len(w.FineCounts)
	return sc.n == maxBatchWindows || sc.counts >= maxBatchCounts
}

// flush gives the batch to the engine and counts the windows' fates.
func (sc *windowScratch) flush(e *analysis.Engine, fates *analysis.Contributions) {
	if sc.n == 0 {
		return
	}
	e.AddWindows(sc.batch[:sc.n], sc.fates)
	for i, c := range sc.fates[:sc.n] {
		fates[c]++
		if c == analysis.ContributionAccepted && sc.labels[i] != "" {
			sc.services = appendLabel(sc.services, sc.batch[i].Probe, sc.labels[i])
		}
	}
	sc.n, sc.counts = 0, 0
}

// wireKey identifies the layout of a deltaq.window point: its first and
// last bounds, and for log-linear buckets their factor and steps.
type wireKey struct {
	first, last   float64
	factor, steps int64
}

// wireLayout is a layout read from the bounds of a deltaq.window point. It
// is not a deltaq.Layout but a decoded cache of a point's bounds: the
// layout as an analysis.Window states it (bins counts log-linear buckets
// too), with what reading the bounds of every later point of its key takes
// (edges, tolerance, the dense flag). The engine makes the probe's
// deltaq.Layout from the Window (analysis, checkWindow).
type wireLayout struct {
	ll     deltaq.LogLinear // zero: uniform bins
	dmaxNs int64
	bins   int
	width  float64   // uniform: the bin width, seconds,
	inv    float64   // its inverse
	tol    float64   // and the tolerance on a bound, boundTolerance·dMax
	upper  []float64 // uniform: the upper edges as agents write them
	edges  []int64   // log-linear: the bucket edges, ns
	// dense: a point of bins bounds was found to be every edge, in order;
	// later ones of the same key are taken as such without reading their
	// bounds again (a producer can misstate counts as easily as bounds:
	// the check guards against a point that is not of this contract).
	// The other fields do not change once the layout is cached.
	dense atomic.Bool
}

// wireCache holds the layouts read from deltaq.window points, at most
// maxCachedShapes. It is safe for concurrent use.
type wireCache struct {
	mu      sync.Mutex
	layouts map[wireKey]*wireLayout
}

func newWireCache() *wireCache { return &wireCache{layouts: make(map[wireKey]*wireLayout)} }

// reader returns a reader of the cache's layouts.
func (c *wireCache) reader() wireReader { return wireReader{cache: c} }

// wireReader reads layouts through a wireCache and remembers the last one:
// the windows of a request usually share one layout, whose look-up then
// takes neither the cache's lock nor a hash. One goroutine uses a reader
// at a time.
type wireReader struct {
	cache *wireCache
	key   wireKey
	last  *wireLayout // nil: none yet
	// start and end are the bounds of the last window read: the windows of
	// a request share them.
	start, end timeOf
}

// timeOf remembers the time of a timestamp, when ok.
type timeOf struct {
	ts pcommon.Timestamp
	t  time.Time
	ok bool
}

// at returns ts as a time (pcommon.Timestamp.AsTime), the last one's
// again for the same ts.
func (c *timeOf) at(ts pcommon.Timestamp) time.Time {
	if !c.ok || ts != c.ts {
		c.ts, c.t, c.ok = ts, ts.AsTime(), true
	}
	return c.t
}

// layout returns the layout of a point of the given key (wireCache.layout).
func (r *wireReader) layout(k wireKey) (*wireLayout, bool) {
	if r.last != nil && k == r.key {
		return r.last, true
	}
	l, ok := r.cache.layout(k)
	if ok {
		r.key, r.last = k, l
	}
	return l, ok
}

// layout returns the layout of a point of the given key, or false when the
// bounds name none: uniform bins w = first, dMax = last = N·w with N ≤
// deltaq.MaxBins; log-linear buckets of factor and steps from low = first
// to high = last (deltaq.LogLinear.Edges), at most deltaq.MaxThesisBins.
func (c *wireCache) layout(k wireKey) (*wireLayout, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.layouts[k]; ok {
		return l, true
	}
	if !(k.first > 0) || !(k.last >= k.first) || math.IsInf(k.last, 0) || k.last > maxWindowDMax {
		return nil, false
	}
	l := &wireLayout{dmaxNs: int64(math.Round(k.last * 1e9))}
	if k.factor != 0 || k.steps != 0 {
		l.ll = deltaq.LogLinear{Factor: k.factor, Low: int64(math.Round(k.first * 1e9)), High: l.dmaxNs, Steps: k.steps}
		edges, err := l.ll.Edges()
		if err != nil || len(edges)-1 > deltaq.MaxThesisBins {
			return nil, false
		}
		l.edges, l.bins = edges, len(edges)-1
	} else {
		n := math.Round(k.last / k.first)
		if n < 1 || n > deltaq.MaxBins || math.Abs(n*k.first-k.last) > boundTolerance*k.last {
			return nil, false
		}
		// The width from dMax: the first bound was written rounded.
		l.bins, l.width = int(n), k.last/n
		l.inv, l.tol = 1/l.width, boundTolerance*k.last
		l.upper = make([]float64, l.bins)
		for i := range l.upper {
			l.upper[i] = edgeSeconds(i, l.width)
		}
	}
	if len(c.layouts) >= maxCachedShapes {
		clear(c.layouts)
	}
	c.layouts[k] = l
	return l, true
}

// maxWindowDMax bounds the dMax of a window's layout, in seconds: a day,
// the longest dMax a probe can be configured with.
const maxWindowDMax = 24 * 3600

// boundTolerance is the relative tolerance on a bound: the bounds were
// written rounded to 12 significant digits (edgeSeconds), a relative error
// of at most 5e-13, far inside it.
const boundTolerance = 1e-9

// index returns the bin whose upper edge is the bound b, or false when b
// is no edge of the layout.
func (l *wireLayout) index(b float64) (int, bool) {
	if l.edges != nil {
		ns := int64(math.Round(b * 1e9))
		j, found := slices.BinarySearch(l.edges, ns)
		if !found || j == 0 {
			return 0, false
		}
		return j - 1, true
	}
	x := b * l.inv
	if !(x >= 0.5) || x >= float64(l.bins)+0.5 {
		return 0, false
	}
	k := int(x + 0.5)
	// The edges as an agent writes them (edgeSeconds) match exactly;
	// others within the tolerance.
	if l.upper[k-1] != b && math.Abs(b-float64(k)*l.width) > l.tol {
		return 0, false
	}
	return k - 1, true
}

// emptyWindow empties w, keeping its buffers, for readWindow to read a
// point of source into: every field the attributes and buckets may leave
// unset, one by one (readWindow sets the others at its end), where a
// composite literal builds the whole window (300 bytes) and copies it, 90
// more instructions of a sparse window's 4,000.
func emptyWindow(w *analysis.Window, source string) {
	// BinIndex is never nil: nil would mean dense counts, and a window of
	// timeouts alone has no occupied bin.
	if w.BinIndex == nil {
		w.BinIndex = make([]int, 0, 64)
	}
	w.Probe, w.Source, w.SourceStart = "", source, 0
	w.BinIndex, w.BinCounts = w.BinIndex[:0], w.BinCounts[:0]
	w.Timeouts, w.Failures = 0, 0
	w.Fine, w.FineIndex, w.FineFirst, w.FineCounts = false, w.FineIndex[:0], 0, w.FineCounts[:0]
	w.WeightSum, w.WeightSquares = 0, 0
}

// readWindow reads one point of contract.MetricWindow into w, its occupied
// bins in sparse form (analysis.Window.BinIndex); false when it does not
// describe a window: attributes missing or of the wrong type, bounds that
// are not edges of one layout (wireCache.layout) in increasing order from
// its first edge to dMax, a bucket spanning several bins that is not
// empty, an overflow bucket that is not the timeouts and failures of the
// attributes. The engine checks the values (analysis.Engine.AddWindow).
func readWindow(dp pmetric.HistogramDataPoint, source string, w *analysis.Window, cache *wireReader) bool {
	emptyWindow(w, source)
	// What the attributes leave to check is one word of flags, and the
	// binning in memory: the loop's state then fits its registers, where
	// five values were stored and loaded again at each attribute (60
	// instructions of a sparse window's 4,000).
	const hasTimeout, hasFailure, fineBad = 1, 2, 4
	var flags uint8
	key := new(wireKey)
	for k, v := range dp.Attributes().All() {
		switch k {
		case contract.AttrFine:
			w.Fine = true
			if flags&fineBad == 0 && !readFine(v, w) {
				flags |= fineBad
			}
		case contract.AttrWeightSum:
			w.WeightSum = v.Double()
			if v.Type() != pcommon.ValueTypeDouble {
				flags |= fineBad
			}
		case contract.AttrWeightSquares:
			w.WeightSquares = v.Double()
			if v.Type() != pcommon.ValueTypeDouble {
				flags |= fineBad
			}
		case contract.AttrProbe:
			if v.Type() == pcommon.ValueTypeStr {
				w.Probe = v.Str()
			}
		case contract.AttrTimeout:
			w.Timeouts, flags = v.Int(), flags&^hasTimeout
			if v.Type() == pcommon.ValueTypeInt {
				flags |= hasTimeout
			}
		case contract.AttrFailure:
			w.Failures, flags = v.Int(), flags&^hasFailure
			if v.Type() == pcommon.ValueTypeInt {
				flags |= hasFailure
			}
		case contract.AttrAgentStart:
			w.SourceStart = v.Int() // not an integer: 0, a window without one
		case contract.AttrBinningFactor:
			key.factor = max(v.Int(), -1) // not an integer: 0, refused below with steps
		case contract.AttrBinningSteps:
			key.steps = max(v.Int(), -1)
		}
	}
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	n := bounds.Len()
	if !w.Fine && (w.WeightSum != 0 || w.WeightSquares != 0) {
		flags |= fineBad // weights without analysis counts
	}
	if w.Probe == "" || flags != hasTimeout|hasFailure || n == 0 || counts.Len() != n+1 ||
		w.Timeouts < 0 || w.Failures < 0 {
		return false
	}
	key.first, key.last = bounds.At(0), bounds.At(n-1)
	l, ok := cache.layout(*key)
	if !ok || n > l.bins {
		return false
	}
	// The overflow bucket is checked after the others are read: they are
	// read from the first, and the last is then in the processor's cache
	// rather than a miss of its own ahead of theirs.
	if !readBuckets(l, bounds, counts, w) || counts.At(n) != uint64(w.Timeouts)+uint64(w.Failures) {
		return false
	}
	w.DMaxNs, w.Bins, w.LogLinear = l.dmaxNs, l.bins, l.ll
	w.SuccessSum = dp.Sum()
	w.Start = cache.start.at(dp.StartTimestamp())
	w.End = cache.end.at(dp.Timestamp())
	return true
}

// copyCounts copies the first len(dst) counts of src into dst and returns
// dst. pdata gives no view of its slice: each At loads the slice again (a
// store to dst might have changed it), so the counts are loaded four at a
// time, between the stores, and the four share one load of the slice.
func copyCounts(dst []uint64, src pcommon.UInt64Slice) []uint64 {
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		c0, c1, c2, c3 := src.At(i), src.At(i+1), src.At(i+2), src.At(i+3)
		d := dst[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = c0, c1, c2, c3
	}
	for ; i < len(dst); i++ {
		dst[i] = src.At(i)
	}
	return dst
}

// readBuckets reads the buckets of a point of layout l into w's sparse
// counts; false when a bound is not the next edge of the layout, or a
// bucket spanning several bins is not empty.
func readBuckets(l *wireLayout, bounds pcommon.Float64Slice, counts pcommon.UInt64Slice, w *analysis.Window) bool {
	n := bounds.Len()
	if n == l.bins && l.dense.Load() {
		// Dense: the counts as they are (BinIndex nil), in one pass.
		w.BinIndex = nil
		w.BinCounts = copyCounts(slices.Grow(w.BinCounts, n)[:n], counts)
		return true
	}
	prev := -1
	upper, inv := l.upper, l.inv // loaded once, not a bound
	// At most n occupied bins, stored by index rather than appended: an
	// append to w's slices stores them in w again, with their write
	// barriers' checks (25 instructions a sparse window); appended to
	// locals, they took the loop's registers (140 more).
	idx, cs := slices.Grow(w.BinIndex[:0], n)[:n], slices.Grow(w.BinCounts[:0], n)[:n]
	k := 0
	for j := range n {
		b := bounds.At(j)
		i := prev + 1
		// The next edge, as an agent writes it, is the common case; then
		// the edge after a run of empty bins, found in line (index's
		// uniform case, as an agent writes it) rather than by a call.
		if i >= len(upper) || upper[i] != b {
			if e := int(b*inv + 0.5); e >= 1 && e <= len(upper) && upper[e-1] == b {
				i = e - 1 // b is the upper edge of bin e − 1
			} else {
				var ok bool
				if i, ok = l.index(b); !ok {
					return false
				}
			}
			if i <= prev {
				return false
			}
		}
		c := counts.At(j)
		if c != 0 {
			if i > prev+1 {
				return false
			}
			idx[k], cs[k] = i, c
			k++
		}
		prev = i
	}
	w.BinIndex, w.BinCounts = idx[:k], cs[:k]
	if prev != l.bins-1 {
		return false
	}
	if n == l.bins && !l.dense.Load() {
		l.dense.Store(true)
	}
	return true
}
