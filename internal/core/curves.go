// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"runtime"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// The deltaq.cdf points are most of a window's output (with the default
// cdf_points, 33 points a curve and four or more curves a probe), and pdata
// allocates six objects for each: the point, its value and its attributes'
// array and strings. A window's curves are therefore first taken down as
// plain values, then built as points by up to GOMAXPROCS goroutines, each
// into a slice of its own, and the slices moved into the metric in order:
// the points and their order are those of one builder, only the
// allocation runs on several processors.
//
// A helper that is still to start when every chunk is claimed finds none
// and ends: it reads nothing of the set, which the next window reuses.

// curveSet holds a window's deltaq.cdf series, in the order of their
// points, until buildCurves makes them points.
type curveSet struct {
	curves []cdfCurve
	// values holds every curve's values at its reported edges, curve after
	// curve; size is the encoded size of all their points (pointSize).
	values []float64
	size   int
	// minPart is the fewest points a goroutine of buildCurves builds:
	// fewer are not worth a goroutine (minCurvePart), and parts the most
	// goroutines (GOMAXPROCS); 0 for those defaults, tests set them.
	minPart, parts int
}

// cdfCurve is one deltaq.cdf series of a probe: its attributes, and its
// values at the reported edges e, values[off:off+len(e.idx)] of its set.
type cdfCurve struct {
	id       probeID
	series   string // contract.Series…
	scenario string // of a what-if curve (contract.SeriesWhatIf)
	e        *edges
	off      int
}

// minCurvePart is curveSet.minPart unless set: about a third of a
// millisecond of work (some 300 ns a point), far more than starting a
// goroutine costs.
const minCurvePart = 1024

// addCurve adds the series of probe id whose CDF at bin edge i is cdf[i],
// reported at the edges e.
func (b *builder) addCurve(id probeID, series, scenario string, e *edges, cdf []float64) {
	c := &b.cdf
	off := len(c.values)
	for _, i := range e.idx {
		c.values = append(c.values, cdf[i])
	}
	if b.measure {
		base := pointSize(id, series, scenario)
		for _, le := range e.labels {
			c.size += fieldCost(base + attrSize(contract.AttrLE, le))
		}
	}
	c.curves = append(c.curves, cdfCurve{id: id, series: series, scenario: scenario, e: e, off: off})
}

// buildCurves appends the points of the window's curves to dps, all of
// time ts, and empties the set. With more points than minPart, the curves
// are cut into chunks of about minPart/4 points that this goroutine and up
// to parts−1 helpers claim one at a time, each chunk built into a slice of
// its own and the slices moved into dps in order. This goroutine never
// waits for a helper to start: on a busy host it builds every chunk
// itself, and waits at most for the chunks a helper has claimed.
func (b *builder) buildCurves(dps pmetric.NumberDataPointSlice, ts pcommon.Timestamp) {
	c := &b.cdf
	defer func() {
		clear(c.curves) // the probes' names
		c.curves, c.values, c.size = c.curves[:0], c.values[:0], 0
	}()
	// Size the points once: growing the slice per curve would copy it
	// again and again.
	dps.EnsureCapacity(dps.Len() + len(c.values))
	minPart, parts := c.minPart, c.parts
	if minPart <= 0 {
		minPart = minCurvePart
	}
	if parts <= 0 {
		parts = runtime.GOMAXPROCS(0)
	}
	if parts = min(parts, len(c.values)/minPart); parts <= 1 {
		buildPoints(dps, c.curves, c.values, ts)
		return
	}
	chunks := chunkCurves(c.curves, len(c.values), max(minPart/4, 1))
	out := make([]pmetric.NumberDataPointSlice, len(chunks))
	done := make([]chan struct{}, len(chunks))
	for k := range chunks {
		out[k], done[k] = pmetric.NewNumberDataPointSlice(), make(chan struct{})
	}
	var next atomic.Int64
	values := c.values
	claim := func() {
		for k := int(next.Add(1) - 1); k < len(chunks); k = int(next.Add(1) - 1) {
			buildPoints(out[k], chunks[k], values, ts)
			close(done[k])
		}
	}
	for range parts - 1 {
		go claim()
	}
	claim()
	for k := range chunks {
		<-done[k]
		out[k].MoveAndAppendTo(dps)
	}
}

// chunkCurves cuts the curves, of total points in all, into runs of about
// size points each (a curve is not cut).
func chunkCurves(curves []cdfCurve, total, size int) [][]cdfCurve {
	chunks := make([][]cdfCurve, 0, total/size+1)
	from := 0
	for i := 1; i < len(curves); i++ {
		if curves[i].off-curves[from].off >= size {
			chunks = append(chunks, curves[from:i])
			from = i
		}
	}
	return append(chunks, curves[from:])
}

// buildPoints appends the points of the curves, of values values, at time
// ts to dps.
func buildPoints(dps pmetric.NumberDataPointSlice, curves []cdfCurve, values []float64, ts pcommon.Timestamp) {
	n := 0
	for i := range curves {
		n += len(curves[i].e.idx)
	}
	dps.EnsureCapacity(dps.Len() + n)
	for i := range curves {
		cv := &curves[i]
		v := values[cv.off : cv.off+len(cv.e.idx)]
		if cv.series == contract.SeriesWhatIf {
			for j, x := range v {
				whatIfGauge(dps, cv.id, ts, x, cv.scenario, contract.AttrLE, cv.e.labels[j])
			}
			continue
		}
		for j, x := range v {
			gauge(dps, cv.id, ts, x, contract.AttrSeries, cv.series, contract.AttrLE, cv.e.labels[j])
		}
	}
}

// pointSize is the encoded size (protobuf, OTLP's NumberDataPoint) of a
// deltaq.cdf point of buildPoints without its tag and length and without
// its deltaq.le attribute (attrSize): its time and its double (a fixed64
// field each, with a one-byte tag) and its other attributes. Its start
// time and flags are zero, not encoded.
func pointSize(id probeID, series, scenario string) int {
	n := 2*(1+8) + attrSize(contract.AttrProbe, id.name) + attrSize(contract.AttrSeries, series)
	if id.service != "" {
		n += attrSize(contract.AttrService, id.service)
	}
	if series == contract.SeriesWhatIf {
		n += attrSize(contract.AttrScenario, scenario)
	}
	return n
}

// attrSize is the encoded size of a string attribute k = v with its tag
// and length: a KeyValue of its key and an AnyValue of its string.
func attrSize(k, v string) int { return fieldCost(fieldCost(len(k)) + fieldCost(fieldCost(len(v)))) }
