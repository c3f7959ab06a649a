// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
)

// cumulative is the running histogram of one probe's successful delays
// behind deltaq.observed: the bin counts of every window since the stream's
// start, which stays fixed while the probe keeps its layout. PromQL's
// increase() and histogram_quantile() read such a stream as they read any
// latency histogram: the difference of two samples is exactly the
// instances that ended between them.
type cumulative struct {
	// start is the start time of the stream: the start of the first window
	// the probe had instances in under this layout and service (or a
	// predecessor's last point, builder.after, when later).
	start pcommon.Timestamp
	streamLayout
	// exp is the exponential mapping of the layout's buckets, made at the
	// first exponential point.
	exp *expShape
	// counts are the successes per bin and, last, the bucket above dMax,
	// which holds no success (0): deltaq.observed's bucket counts as they
	// are. n is their total and sum the sum of their delays in seconds.
	counts []uint64
	n      uint64
	sum    float64
	// seen is the builder's window number when the probe was last in a
	// result: a probe the analysis has forgotten loses its stream.
	seen uint64
	// service is the stream's deltaq.service.
	service string
}

// streamLayout is the layout a cumulative stream's counts were counted
// in: the bin width and count and, for a log-linear probe, its buckets'
// upper edges (analysis.ProbeResult.Edges; nil for uniform bins).
type streamLayout struct {
	width float64
	bins  int
	edges []float64
}

// layoutOf returns the layout of the probe's window.
func layoutOf(p *analysis.ProbeResult) streamLayout {
	return streamLayout{width: p.Width, bins: p.Bins, edges: p.Edges}
}

// differs reports whether p's window is of another layout: the analysis
// then restarts the probe's totals, and a stream starts anew.
func (l *streamLayout) differs(p *analysis.ProbeResult) bool {
	return l.width != p.Width || l.bins != p.Bins || !slices.Equal(l.edges, p.Edges)
}

// cumulativeOf adds the probe's window to its stream and returns the
// stream, or nil while the probe has had no instance in a window (an empty
// window has no bin counts): a probe whose first windows hold timeouts or
// failures alone has a stream from the first of them, of no success. A
// stream starts at start — the window's start, or a predecessor's last
// point (builder.after) when that is later — when the probe has none yet
// or had it dropped (forgetStreams: the analysis forgot the probe), when
// its layout changed — the counts of two layouts are never added, and the
// backend sees a reset — and when its deltaq.service changed: its new
// series count from this window.
func (b *builder) cumulativeOf(p *analysis.ProbeResult, service string, start pcommon.Timestamp) *cumulative {
	c := b.cum[p.Name]
	if p.BinCounts != nil && (c == nil || c.differs(p)) {
		c = &cumulative{start: start, streamLayout: layoutOf(p), counts: make([]uint64, len(p.BinCounts)+1), service: service}
		if b.cum == nil {
			b.cum = make(map[string]*cumulative)
		}
		b.cum[p.Name] = c
	}
	if c == nil {
		return nil
	}
	if c.service != service {
		c = &cumulative{start: start, streamLayout: c.streamLayout, counts: make([]uint64, len(c.counts)), service: service}
		b.cum[p.Name] = c
	}
	c.seen = b.windows
	// Locals: a store to c.counts[i] would otherwise load c.counts and c.n
	// again for every bin.
	counts, n := c.counts[:len(p.BinCounts)], c.n
	for i, k := range p.BinCounts {
		counts[i] += k
		n += k
	}
	c.n = n
	c.sum += p.SuccessSum
	return c
}

// forgetStreams drops the streams of the probes that were not in the last
// result.
func (b *builder) forgetStreams() {
	for name, c := range b.cum {
		if c.seen != b.windows {
			delete(b.cum, name)
		}
	}
	for name, o := range b.outs {
		if o.seen != b.windows {
			delete(b.outs, name)
		}
	}
}

// observed appends the probe's cumulative histogram of successful delays:
// explicit buckets at the bin edges, or exponential buckets when
// histogram::exponential is set. A log-linear probe's explicit bounds are
// its buckets' upper edges, llquantize's edges, with the buckets' exact
// counts. Timeouts and failures are not in it (they
// have no delay to put in a bucket); deltaq.outcomes counts them, so that
// the improper CDF at a delay d is the successes below d divided by all the
// instances (examples/README.md, "Reading ΔQ in PromQL").
func (b *builder) observed(s *metricSet, id probeID, c *cumulative, end pcommon.Timestamp, xs []analysis.Exemplar) {
	if b.expMaxSize > 0 {
		putDelayExemplars(b.observedExponential(s, id, c, end).Exemplars(), xs)
		return
	}
	bounds := c.edges
	if bounds == nil {
		bounds = b.edgesOf(c.width, c.bins).bounds
	}
	dp := s.observed.Histogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(c.start)
	dp.SetTimestamp(end)
	id.put(dp.Attributes(), 0)
	dp.ExplicitBounds().FromRaw(bounds)
	// Copied (FromRaw), not appended to room made for them, which pdata
	// would clear first.
	dp.BucketCounts().FromRaw(c.counts)
	dp.SetCount(c.n)
	dp.SetSum(c.sum)
	putDelayExemplars(dp.Exemplars(), xs)
}

// putDelayExemplars appends the successes among xs, the window's
// exemplars, with their delays in seconds as values: a backend files each
// under the bucket that holds its value (Prometheus: the _bucket series of
// the smallest le ≥ value).
func putDelayExemplars(es pmetric.ExemplarSlice, xs []analysis.Exemplar) {
	for i := range xs {
		if x := &xs[i]; x.Outcome == analysis.Success {
			putExemplar(es, x, float64(x.Delay)/1e9)
		}
	}
}

// observedExponential appends the stream as an exponential histogram. The
// bins are its only record of the delays, so each bin's count goes into
// the exponential bucket of the bin's right edge (bins and exponential
// buckets are both upper-inclusive). A quantile q read from it by
// interpolation within a bucket (PromQL's histogram_quantile) lies within
// truth/base ≤ q < (truth + w)·base, base = 2^(2^−scale), w the bin width
// (a log-linear probe's bucket width).
func (b *builder) observedExponential(s *metricSet, id probeID, c *cumulative, end pcommon.Timestamp) pmetric.ExponentialHistogramDataPoint {
	x := c.exp
	switch {
	case c.edges == nil:
		x = b.expOf(c.width, c.bins)
	case x == nil:
		n := len(c.edges)
		x = b.expFit(c.edges[0], c.edges[n-1], n, func(i int) float64 { return c.edges[i] })
		c.exp = x
	}
	dp := s.observed.ExponentialHistogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(c.start)
	dp.SetTimestamp(end)
	id.put(dp.Attributes(), 0)
	dp.SetScale(x.scale)
	if cap(b.expScratch) < x.buckets {
		b.expScratch = make([]uint64, x.buckets)
	}
	counts := b.expScratch[:x.buckets]
	clear(counts)
	for i, k := range c.counts[:len(c.counts)-1] { // the bins, not the bucket above dMax
		counts[x.index[i]] += k
	}
	// Only the buckets from the first to the last that hold a count: a
	// leading empty bucket becomes a span of length zero in Prometheus
	// remote write, which Prometheus 2.42 fails on when it compares two
	// samples (prometheus/prometheus#12357).
	lo, hi := 0, len(counts)
	for lo < hi && counts[lo] == 0 {
		lo++
	}
	for hi > lo && counts[hi-1] == 0 {
		hi--
	}
	pos := dp.Positive()
	if lo < hi {
		pos.SetOffset(x.offset + int32(lo))
		pos.BucketCounts().FromRaw(counts[lo:hi])
	}
	dp.SetCount(c.n)
	dp.SetSum(c.sum)
	return dp
}

// expShape maps the bins of one shape onto exponential buckets.
type expShape struct {
	scale   int32
	offset  int32
	buckets int
	// index[i] is the bucket of bin i, relative to offset.
	index []int32
}

// expOf returns the cached exponential mapping of a shape: the finest scale
// (at most 20, the largest the OpenTelemetry data model defines) at which
// the buckets from the first bin's edge to dMax number at most the
// configured max_size.
func (b *builder) expOf(width float64, bins int) *expShape {
	k := shape{width, bins}
	if x := b.expShapes[k]; x != nil {
		return x
	}
	x := b.expFit(width, float64(bins)*width, bins, func(i int) float64 { return edgeSeconds(i, width) })
	if b.expShapes == nil || len(b.expShapes) >= maxCachedShapes {
		b.expShapes = make(map[shape]*expShape)
	}
	b.expShapes[k] = x
	return x
}

// expFit returns the exponential mapping of n buckets whose upper edges are
// upper(0) = first < … < upper(n−1) = last: the finest scale at which the
// buckets from first to last number at most max_size, or −4 when none
// does (a max_size of a few buckets over a range of many octaves).
func (b *builder) expFit(first, last float64, n int, upper func(i int) float64) *expShape {
	scale := int32(maxExpScale)
	lo, hi := deltaq.ExpIndex(first, scale), deltaq.ExpIndex(last, scale)
	for scale > minExpScale && hi-lo+1 > int32(b.expMaxSize) {
		scale--
		lo, hi = deltaq.ExpIndex(first, scale), deltaq.ExpIndex(last, scale)
	}
	x := &expShape{scale: scale, offset: lo, buckets: int(hi - lo + 1), index: make([]int32, n)}
	for i := range x.index {
		x.index[i] = deltaq.ExpIndex(upper(i), scale) - lo
	}
	return x
}

// The scales of deltaq.observed: the finest of the OpenTelemetry
// exponential histogram, and the coarsest of Prometheus's native
// histograms (schema −4; the data model goes down to −10), which remote
// write refuses below it.
const (
	maxExpScale = 20
	minExpScale = -4
)

// ExponentialScale returns the scale of deltaq.observed as an exponential
// histogram of at most maxSize buckets for a probe whose bucket upper edges
// run from first to last seconds (expFit): its buckets are
// base = 2^(2^−scale) wide in ratio. deltaq slo states the error of a
// histogram_fraction read from it with this.
func ExponentialScale(first, last float64, maxSize int) int {
	b := &builder{expMaxSize: maxSize}
	return int(b.expFit(first, last, 1, func(int) float64 { return first }).scale)
}
