// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// The deltaq.cdf points are most of a window's output (with the default
// cdf_points, 32 points a curve and four or more curves a probe), and pdata
// allocates six objects for each: the point, its value and its attributes'
// array and strings. A window's curves are first taken down as plain
// values while the probes are walked, their encoded size known from their
// attributes' lengths alone (pointSize), then built as points at once.

// curveSet holds a window's deltaq.cdf series, in the order of their
// points, until buildCurves makes them points.
type curveSet struct {
	curves []cdfCurve
	// values holds every curve's values at its reported edges, curve after
	// curve; size is the encoded size of all their points (pointSize).
	values []float64
	size   int
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

// addCurve adds the series of probe id whose CDF at bin edge i is cdf[i],
// reported at the edges e.
func (b *builder) addCurve(id probeID, series, scenario string, e *edges, cdf []float64) {
	c := &b.cdf
	off := len(c.values)
	for _, i := range e.idx {
		c.values = append(c.values, cdf[i])
	}
	b.noteCurve(id, series, scenario, e, off)
}

// addReported adds the series of probe id whose values at the reported
// edges e, and only there, are v.
func (b *builder) addReported(id probeID, series string, e *edges, v []float64) {
	off := len(b.cdf.values)
	b.cdf.values = append(b.cdf.values, v...)
	b.noteCurve(id, series, "", e, off)
}

// noteCurve records the curve whose values were added from off, and its
// points' encoded size.
func (b *builder) noteCurve(id probeID, series, scenario string, e *edges, off int) {
	c := &b.cdf
	if b.measure {
		c.size += e.pointsSize(pointSize(id, series, scenario))
	}
	c.curves = append(c.curves, cdfCurve{id: id, series: series, scenario: scenario, e: e, off: off})
}

// pointsSize returns the encoded size, with their tags and lengths, of a
// curve's points at the edges e, base being a point's size without its
// deltaq.le attribute (pointSize): Σ fieldCost(base + attrSize(le)) over
// the labels. When every point's length takes as many bytes, as with the
// default cdf_points, that is a product and the labels' sizes summed once
// (edgesOf) rather than a sum a curve.
func (e *edges) pointsSize(base int) int {
	if l := varintLen(base + e.leMin); l == varintLen(base+e.leMax) {
		return len(e.labels)*(1+l+base) + e.leSize
	}
	n := 0
	for _, le := range e.labels {
		n += fieldCost(base + attrSize(contract.AttrLE, le))
	}
	return n
}

// buildCurves appends the points of the window's curves to dps, all of
// time ts, and empties the set.
func (b *builder) buildCurves(dps pmetric.NumberDataPointSlice, ts pcommon.Timestamp) {
	c := &b.cdf
	buildPoints(dps, c.curves, c.values, ts)
	clear(c.curves) // the probes' names
	c.curves, c.values, c.size = c.curves[:0], c.values[:0], 0
}

// buildPoints appends the points of the curves, of values values, at time
// ts to dps.
func buildPoints(dps pmetric.NumberDataPointSlice, curves []cdfCurve, values []float64, ts pcommon.Timestamp) {
	// Size the points once: growing the slice per curve would copy it
	// again and again.
	dps.EnsureCapacity(dps.Len() + len(values))
	for i := range curves {
		cv := &curves[i]
		v := values[cv.off : cv.off+len(cv.e.idx)]
		if cv.series == contract.SeriesWhatIf {
			for j, x := range v {
				whatIfGauge(dps, cv.id, ts, x, cv.scenario, contract.AttrLE, cv.e.labels[j])
			}
			continue
		}
		curvePoints(dps, cv.id, cv.series, cv.e.labels, v, ts)
	}
}

// curvePoints appends the points of one curve: gauge's, with the probe's
// attributes, deltaq.series and deltaq.le, in a loop of its own, which
// the window's thousands of points run through.
func curvePoints(dps pmetric.NumberDataPointSlice, id probeID, series string, labels []string, v []float64, ts pcommon.Timestamp) {
	n := 3
	if id.service != "" {
		n = 4
	}
	labels = labels[:len(v)]
	for j, x := range v {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(ts)
		dp.SetDoubleValue(x)
		a := dp.Attributes()
		a.EnsureCapacity(n)
		a.PutStr(contract.AttrProbe, id.name)
		if id.service != "" {
			a.PutStr(contract.AttrService, id.service)
		}
		a.PutStr(contract.AttrSeries, series)
		a.PutStr(contract.AttrLE, labels[j])
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
