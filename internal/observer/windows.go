// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"context"
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// Agents and a gateway. An agent collector's observer with emit_windows
// adds each probe's window to its output in the form that merges exactly
// (outcome.MetricWindow): a delta histogram whose start and end are the
// window's bounds, whose buckets are the probe's bins with the window's
// successes and, above dMax, its timeouts and failures, and whose
// attributes count the timeouts and the failures apart. A gateway's
// observer consumes those metrics (ConsumeMetrics) and adds the windows of
// the same probe and bounds from every agent (analysis.Engine.AddWindow),
// then analyses them as if it had seen every instance.

// windowPoints appends the probe's window in mergeable form: nothing for a
// window without instances, nor for a probe with log-linear buckets, which
// a window of uniform bins cannot carry (analysis.WindowOf): it is analysed
// by the agent whose processor produces it, not at the gateway.
func (b *builder) windowPoints(s *metricSet, r *analysis.Result, p *analysis.ProbeResult, id probeID) {
	w, ok := analysis.WindowOf(r, p, "")
	if !ok {
		return
	}
	e := b.edgesOf(p.Width, w.Bins)
	dp := s.window.Histogram().DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.NewTimestampFromTime(w.Start))
	dp.SetTimestamp(pcommon.NewTimestampFromTime(w.End))
	a := dp.Attributes()
	id.put(a, 2)
	a.PutInt(outcome.AttrTimeout, w.Timeouts)
	a.PutInt(outcome.AttrFailure, w.Failures)
	dp.ExplicitBounds().FromRaw(e.bounds)
	bc := dp.BucketCounts()
	bc.EnsureCapacity(len(w.BinCounts) + 1)
	bc.Append(w.BinCounts...)
	bc.Append(uint64(w.Timeouts + w.Failures))
	dp.SetCount(uint64(p.Counts.Total()))
	dp.SetSum(w.SuccessSum)
}

// ConsumeMetrics merges the windows of other observers (agents) found among
// the metrics: the points of outcome.MetricWindow, each from the source its
// resource names (service.instance.id, else service.name). Other metrics
// are ignored. What became of each window is counted in the contributions
// self-telemetry; a point that does not describe a window (no probe,
// uneven bounds, counts that do not add up) counts as invalid.
func (o *Observer) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	var w analysis.Window
	o.boundsMu.Lock()
	defer o.boundsMu.Unlock()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		source := sourceOf(rms.At(i).Resource())
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() != outcome.MetricWindow || m.Type() != pmetric.MetricTypeHistogram {
					continue
				}
				dps := m.Histogram().DataPoints()
				o.build.merging.Store(true)
				for l := 0; l < dps.Len(); l++ {
					if !readWindow(dps.At(l), source, &w, o.knownBounds) {
						// Counted as an invalid contribution, of no instance.
						w = analysis.Window{}
					}
					c := o.engine.AddWindow(&w)
					o.tel.Contributions.Add(ctx, 1, o.fateAttr[c])
				}
			}
		}
	}
	return nil
}

// sourceOf names the observer that sent a resource's windows.
func sourceOf(r pcommon.Resource) string {
	for _, k := range [...]string{"service.instance.id", attrServiceName} {
		if v, ok := r.Attributes().Get(k); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return v.Str()
		}
	}
	return ""
}

// evenBounds identifies a layout by its bounds: bin count, first edge and
// last edge (dMax).
type evenBounds struct {
	n           int
	first, last float64
}

// readWindow reads one point of outcome.MetricWindow into w; false when it
// does not describe a window: the layout is read from the explicit bounds,
// which must be the N even bin edges w, 2w, …, dMax (to the 12 significant
// digits they are written with), and the overflow bucket must hold the
// timeouts and failures of the attributes.
//
// known holds the layouts whose bounds were found even: the bounds of a
// point of a known layout — its bin count, first edge and dMax — are not
// read again (nil: read every point's). A producer can misstate counts as
// easily as bounds; what the check guards against is a point that is not
// of this contract, and the first point of each layout tells.
func readWindow(dp pmetric.HistogramDataPoint, source string, w *analysis.Window, known map[evenBounds]struct{}) bool {
	*w = analysis.Window{BinCounts: w.BinCounts[:0], Source: source}
	var hasTimeout, hasFailure bool
	for k, v := range dp.Attributes().All() {
		switch k {
		case outcome.AttrProbe:
			if v.Type() == pcommon.ValueTypeStr {
				w.Probe = v.Str()
			}
		case outcome.AttrTimeout:
			w.Timeouts, hasTimeout = v.Int(), v.Type() == pcommon.ValueTypeInt
		case outcome.AttrFailure:
			w.Failures, hasFailure = v.Int(), v.Type() == pcommon.ValueTypeInt
		}
	}
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	n := bounds.Len()
	if w.Probe == "" || !hasTimeout || !hasFailure || n == 0 || counts.Len() != n+1 ||
		w.Timeouts < 0 || w.Failures < 0 || counts.At(n) != uint64(w.Timeouts+w.Failures) {
		return false
	}
	dmax := bounds.At(n - 1)
	width := dmax / float64(n)
	// The bounds were written rounded to 12 significant digits
	// (edgeSeconds): a relative error of at most 5e-13, far inside the
	// tolerance.
	key := evenBounds{n: n, first: bounds.At(0), last: dmax}
	if _, ok := known[key]; !ok {
		tol := 1e-9 * dmax
		for i, b := range bounds.All() {
			if math.Abs(b-float64(i+1)*width) > tol {
				return false
			}
		}
		if known != nil {
			if len(known) >= maxCachedShapes {
				clear(known)
			}
			known[key] = struct{}{}
		}
	}
	w.DMaxNs = int64(math.Round(dmax * 1e9))
	w.Bins = n
	w.BinCounts = slices.Grow(w.BinCounts, n)[:n]
	for i := range w.BinCounts {
		w.BinCounts[i] = counts.At(i)
	}
	w.SuccessSum = dp.Sum()
	w.Start = dp.StartTimestamp().AsTime()
	w.End = dp.Timestamp().AsTime()
	return true
}
