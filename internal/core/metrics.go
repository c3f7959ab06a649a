// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// builder turns analysis results into OTLP metrics and logs. It caches the
// bucket bounds and deltaq.le labels of each histogram shape, so that a
// window close formats no number twice.
type builder struct {
	cdfPoints int
	// scope and version name the instrumentation scope of the output: the
	// component's import path and the collector's version.
	scope   string
	version string
	// resource is the collector's own resource (service.name,
	// service.instance.id, …), copied onto every batch so that the series of
	// several collectors exporting the same probe stay apart downstream
	// (Prometheus sees them as job and instance).
	resource pcommon.Resource
	// start is the start time of the cumulative deltaq.outcomes sums.
	start pcommon.Timestamp
	// unseen says that the window being built ended before start, with
	// no other collector's window merged: the observer saw none of it.
	unseen bool
	shapes map[shape]*edges
	qLabel map[float64]string
	// cdf holds the window's deltaq.cdf series until they are built.
	cdf curveSet
	// split cuts the output into requests of at most max_request_bytes;
	// measure is set when there is such a bound: the builder then tells
	// split an upper bound of a window's size, taken before the deltaq.cdf
	// points are built (curveSet.size), which spares their measuring.
	split   splitter
	measure bool

	// cum holds each probe's deltaq.observed stream; windows counts the
	// results built, the clock of cumulative.seen.
	cum     map[string]*cumulative
	windows uint64
	// outs holds the start of each probe's deltaq.outcomes stream.
	outs map[string]*outStream
	// after is the end of the last window of a predecessor of another
	// interval (flushPredecessor), where its streams, of the same series,
	// ended; 0 when none. The windows that end by then go out without
	// their points (held), and the new streams start no earlier.
	after pcommon.Timestamp
	// expMaxSize is histogram::exponential::max_size, 0 for explicit
	// buckets; expShapes caches the bucket mapping of each shape and
	// expScratch holds one data point's bucket counts.
	expMaxSize int
	expShapes  map[shape]*expShape
	expScratch []uint64
	// services names the applications of each probe (contract.AttrService);
	// names and svcLabels are scratch for one window's probes.
	services  services
	names     []string
	svcLabels []string
	// emitWindows adds deltaq.window (emit_windows); merging is set once
	// windows of agents have arrived, and adds deltaq.window.contributors.
	emitWindows bool
	// windowsOnly leaves deltaq.window alone in the output (windows_only).
	windowsOnly bool
	merging     atomic.Bool
	// wBounds and wCounts are scratch for one deltaq.window point.
	wBounds []float64
	wCounts []uint64
	// fineBuf holds a window's analysis counts as varints (putFine).
	fineBuf []byte
}

// outStream is a probe's deltaq.outcomes stream: its start, the total of
// its last point, the window number it was last in a result, the layout
// its totals were counted in (width, bins, edges), and its deltaq.service
// with the totals at the stream's start under it (base).
type outStream struct {
	start pcommon.Timestamp
	last  int64
	seen  uint64
	streamLayout
	service string
	base    analysis.Counts
}

// probeID is what every series of a probe carries: its name and, when
// known, its application's services.
type probeID struct{ name, service string }

// put sets the probe's attributes on a, with room for extra more.
func (id probeID) put(a pcommon.Map, extra int) {
	if id.service == "" {
		a.EnsureCapacity(1 + extra)
		a.PutStr(contract.AttrProbe, id.name)
		return
	}
	a.EnsureCapacity(2 + extra)
	a.PutStr(contract.AttrProbe, id.name)
	a.PutStr(contract.AttrService, id.service)
}

// shape is a ΔQ's bin width and bin count.
type shape struct {
	width float64
	bins  int
}

// edges are the bin edges of one shape.
type edges struct {
	// bounds are the N right bin edges (i+1)·w in seconds, the explicit
	// bounds of deltaq.observed.
	bounds []float64
	// idx are the bins whose right edge deltaq.cdf reports, labels their
	// deltaq.le values.
	idx    []int
	labels []string
	// leSize is the encoded size of the labels' deltaq.le attributes
	// (attrSize) summed, leMin and leMax the smallest and the largest
	// (pointsSize).
	leSize, leMin, leMax int
}

func newBuilder(cdfPoints, expMaxSize int, scope, version string, start time.Time) *builder {
	return &builder{
		cdfPoints:  cdfPoints,
		expMaxSize: expMaxSize,
		scope:      scope,
		version:    version,
		start:      pcommon.NewTimestampFromTime(start),
		shapes:     make(map[shape]*edges),
		qLabel:     make(map[float64]string),
		resource:   pcommon.NewResource(),
	}
}

// formatFloat is the one formatting of deltaq.le and deltaq.q values.
func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// edgeSeconds returns (i+1)·w rounded to 12 significant digits, so that
// labels read 0.0003 rather than 0.00030000000000000003, while every width
// of the thesis parameterisation (1 ms·2ⁿ, n ≥ −10, e.g. 9.765625e-07 s)
// keeps its exact value.
func edgeSeconds(i int, w float64) float64 {
	x := float64(i+1) * w
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	if err != nil { // cannot happen for a finite x
		return x
	}
	return r
}

// edgesOf returns the cached edges of a shape. The deltaq.cdf points are
// every stride-th bin edge, stride = ⌈N / cdf_points⌉, always including
// dMax; cdf_points = 0 keeps every edge.
func (b *builder) edgesOf(width float64, bins int) *edges {
	k := shape{width, bins}
	if e := b.shapes[k]; e != nil {
		return e
	}
	// The edges the analysis keeps the band at (analysis.Config.BandPoints).
	e := newEdges(width, bins, deltaq.CurveEdges(bins, b.cdfPoints))
	if len(b.shapes) >= maxCachedShapes {
		// Shapes come from the instances' deltaq.dmax_ns and deltaq.bins:
		// an input that keeps changing them must not grow the cache
		// without bound. Start afresh; the shapes in use come back.
		clear(b.shapes)
	}
	b.shapes[k] = e
	return e
}

// newEdges returns the edges of a shape whose deltaq.cdf points are at the
// right edges of the bins idx.
func newEdges(width float64, bins int, idx []int) *edges {
	e := &edges{bounds: make([]float64, bins), idx: idx}
	for i := range e.bounds {
		e.bounds[i] = edgeSeconds(i, width)
	}
	e.labels = make([]string, len(e.idx))
	for j, i := range e.idx {
		e.labels[j] = formatFloat(e.bounds[i])
		n := attrSize(contract.AttrLE, e.labels[j])
		e.leSize += n
		if j == 0 {
			e.leMin, e.leMax = n, n
		}
		e.leMin, e.leMax = min(e.leMin, n), max(e.leMax, n)
	}
	return e
}

// maxCachedShapes bounds the edge cache: far more shapes than a collector's
// probes use at once.
const maxCachedShapes = 4096

func (b *builder) qLabelOf(q float64) string {
	s, ok := b.qLabel[q]
	if !ok {
		s = formatFloat(q)
		b.qLabel[q] = s
	}
	return s
}

// metricSet holds the metrics of one window, in the order they are emitted.
type metricSet struct {
	// result is the window the metrics are built of.
	result                                                                                          *analysis.Result
	observed, cdf, quantile, outcomes, failureRatio, violation, qtaPoint, qtaMaxFailure, divergence pmetric.Metric
	window, contributors                                                                            pmetric.Metric
	divergenceP, divergenceStat, slack, slackMin, marginMin, timeToViolation                        pmetric.Metric
	slackStdErr, slackUpper, qtaHolds, boundsWidth, detectable                                      pmetric.Metric
	// qoo are the Quality of Outcome gauges (qoo.go).
	qoo qooMetrics
}

// metrics returns the OTLP metrics of one closed window: for every probe,
// the series of the output contract (internal/contract/output.go, README). An empty window emits
// the outcome counts and no ΔQ (no histogram, curve, quantile or ratio).
func (b *builder) metrics(r *analysis.Result) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	b.resource.CopyTo(rm.Resource())
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(b.scope)
	sm.Scope().SetVersion(b.version)
	ms := sm.Metrics()
	s := b.newMetricSet(ms, r)

	winStart := pcommon.NewTimestampFromTime(r.Start)
	winEnd := pcommon.NewTimestampFromTime(r.End)
	if b.merging.Load() {
		dp := s.contributors.Gauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(r.End))
		dp.SetIntValue(int64(r.Contributors))
	}
	b.windows++
	// A window that ended before the observer began, and that no other
	// collector's window vouches for, it did not see.
	b.unseen = winEnd <= b.start && r.Contributors == 0
	b.names = b.names[:0]
	for i := range r.Probes {
		b.names = append(b.names, r.Probes[i].Name)
	}
	b.svcLabels = b.services.labels(b.names, b.windows, b.svcLabels)
	// A stream starts with its first window, but not before the last point
	// of the predecessor's stream of the same series.
	streamStart := max(winStart, b.after)
	for i := range r.Probes {
		b.probe(&s, &r.Probes[i], probeID{r.Probes[i].Name, b.svcLabels[i]}, streamStart, winEnd)
	}
	// Idle in a window it was up in only: the windows open at its start
	// reach back its lag, and a window that ended before it began (it was
	// down, or not yet started) is not one it can vouch for.
	if b.emitWindows && s.window.Histogram().DataPoints().Len() == 0 && winEnd > b.start {
		b.idlePoint(ms, winStart, winEnd)
	}
	if b.measure {
		// The size of everything else and the exact size of the curves'
		// points: adding them to deltaq.cdf lengthens at most four length
		// prefixes (the gauge's, the metric's, its scope's and its
		// resource's) from one byte to at most five.
		b.split.hint = sizeHint{md: md, bound: b.split.msz.MetricsSize(md) + b.cdf.size + 4*4}
	}
	b.buildCurves(s.cdf.Gauge().DataPoints(), winEnd)
	b.forgetStreams()
	held := winEnd <= b.after
	ms.RemoveIf(func(m pmetric.Metric) bool { return dataPointCount(m) == 0 || held && !windowMetric(m) })
	return md
}

// windowMetric reports whether m is one of the windows an agent sends a
// gateway (deltaq.window, deltaq.window.idle), whose points each hold their
// window alone. A window held (builder.after) keeps them: the gateway
// merges every window of its interval, whatever came before; the points
// of the other series would go out after later ones of the predecessor,
// going back in time, and their windows' counts go out with the next
// cumulative point instead.
func windowMetric(m pmetric.Metric) bool {
	return m.Name() == contract.MetricWindow || m.Name() == contract.MetricWindowIdle
}

// newMetricSet appends to ms the metrics of the window r, without points,
// in the order they are emitted.
func (b *builder) newMetricSet(ms pmetric.MetricSlice, r *analysis.Result) metricSet {
	ms.EnsureCapacity(27)
	s := metricSet{result: r}
	s.observed = newMetric(ms, contract.MetricObserved, contract.UnitObserved, "Successful delays since the stream's start (timeouts and failures: deltaq.outcomes).")
	if b.expMaxSize > 0 {
		s.observed.SetEmptyExponentialHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	} else {
		s.observed.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	}
	s.cdf = newMetric(ms, contract.MetricCDF, contract.UnitCDF, "CDF of the observed, calculated, mean, lower and upper band, QTA and what-if curves at delay deltaq.le.")
	s.cdf.SetEmptyGauge()
	s.quantile = newMetric(ms, contract.MetricQuantile, contract.UnitQuantile, "Delay at quantile deltaq.q of the observed, calculated and what-if ΔQs.")
	s.quantile.SetEmptyGauge()
	s.outcomes = newMetric(ms, contract.MetricOutcomes, contract.UnitOutcomes, "Outcome instances since the component started, by outcome.")
	sum := s.outcomes.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	s.failureRatio = newMetric(ms, contract.MetricFailureRatio, contract.UnitFailureRatio, "Intangible mass (timeouts and failures) of the window's observed ΔQ.")
	s.failureRatio.SetEmptyGauge()
	s.violation = newMetric(ms, contract.MetricQTAViolation, contract.UnitQTAViolation, "1 while the observed ΔQ breaks the probe's QTA, else 0.")
	s.violation.SetEmptyGauge()
	s.qtaPoint = newMetric(ms, contract.MetricQTAPoint, contract.UnitQTAPoint, "The probability the probe's QTA requires by the delay deltaq.le.")
	s.qtaPoint.SetEmptyGauge()
	s.qtaMaxFailure = newMetric(ms, contract.MetricQTAMaxFailure, contract.UnitQTAMaxFailure, "The largest intangible mass (timeouts and failures) the probe's QTA allows.")
	s.qtaMaxFailure.SetEmptyGauge()
	s.divergence = newMetric(ms, contract.MetricDivergence, contract.UnitDivergence, "Distance sup |F_obs − F_calc| between the observed and the calculated ΔQ.")
	s.divergence.SetEmptyGauge()
	s.divergenceP = newGauge(ms, contract.MetricDivergenceP, contract.UnitDivergenceP, "p-value of the Kolmogorov–Smirnov test of the observed against the calculated ΔQ.")
	s.divergenceStat = newGauge(ms, contract.MetricDivergenceStatistic, contract.UnitDivergenceStatistic, "Statistic λ = √(n·m/(n+m))·D of the divergence test.")
	s.slack = newGauge(ms, contract.MetricQTASlack, contract.UnitQTASlack, "Slack F_obs(d) − p of the QTA point at delay deltaq.le.")
	s.slackMin = newGauge(ms, contract.MetricQTASlackMin, contract.UnitQTASlackMin, "Smallest slack of the QTA's points: negative when the QTA is broken.")
	s.marginMin = newGauge(ms, contract.MetricQTAMarginMin, contract.UnitQTAMarginMin, "Smallest delay margin d − Q_obs(p) of the QTA's points.")
	s.timeToViolation = newGauge(ms, contract.MetricQTATimeToViolation, contract.UnitQTATimeToViolation, "Time until the slack's falling trend projects a QTA violation.")
	s.slackStdErr = newGauge(ms, contract.MetricQTASlackTrendStdErr, contract.UnitQTASlackTrendStdErr, "Standard error of the slope of the QTA slack's trend.")
	s.slackUpper = newGauge(ms, contract.MetricQTASlackTrendUpper, contract.UnitQTASlackTrendUpper, "Upper confidence bound of the QTA slack's trend at the horizon, while the trend falls significantly.")
	s.qtaHolds = newGauge(ms, contract.MetricQTAHolds, contract.UnitQTAHolds, "How the QTA holds for the curve deltaq.series: 2 for its pessimistic bound, 1 for the curve only, 0 broken.")
	s.boundsWidth = newGauge(ms, contract.MetricBoundsWidth, contract.UnitBoundsWidth, "Largest CDF gap between the calculated ΔQ's pessimistic and optimistic bounds: its discretisation error.")
	s.detectable = newGauge(ms, contract.MetricDivergenceDetectable, contract.UnitDivergenceDetectable, "Smallest divergence the test detects at its α with 80 % power, the bounds' width included.")
	s.qoo = newQoOMetrics(ms)
	s.window = newMetric(ms, contract.MetricWindow, contract.UnitWindow, "The window of a probe in the form a gateway merges: successes by bin, timeouts and failures above dMax and in deltaq.timeout and deltaq.failure.")
	s.window.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	s.contributors = newMetric(ms, contract.MetricContributors, contract.UnitContributors, "The agents whose windows of configured probes were merged into this window, and those idle in it.")
	s.contributors.SetEmptyGauge()
	return s
}

func newMetric(ms pmetric.MetricSlice, name, unit, desc string) pmetric.Metric {
	m := ms.AppendEmpty()
	m.SetName(name)
	m.SetUnit(unit)
	m.SetDescription(desc)
	return m
}

// newGauge appends a gauge metric.
func newGauge(ms pmetric.MetricSlice, name, unit, desc string) pmetric.Metric {
	m := newMetric(ms, name, unit, desc)
	m.SetEmptyGauge()
	return m
}

// dataPointCount returns the number of data points of m, whatever its type.
func dataPointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

func (b *builder) probe(s *metricSet, p *analysis.ProbeResult, id probeID, start, end pcommon.Timestamp) {
	if b.windowsOnly {
		b.windowPoints(s, s.result, p, id)
		return
	}
	b.outcomes(s, p, id, start, end)
	if b.emitWindows {
		b.windowPoints(s, s.result, p, id)
	}
	if c := b.cumulativeOf(p, id.service, start); c != nil {
		b.observed(s, id, c, end, p.Exemplars)
	}
	b.curves(p, id)

	qdp := s.quantile.Gauge().DataPoints()
	for _, q := range p.Quantiles {
		ql := b.qLabelOf(q.Q)
		if q.ObservedOK {
			gauge(qdp, id, end, q.Observed, contract.AttrSeries, contract.SeriesObserved, contract.AttrQ, ql)
		}
		if q.CalculatedOK {
			gauge(qdp, id, end, q.Calculated, contract.AttrSeries, contract.SeriesCalculated, contract.AttrQ, ql)
		}
		for k := range p.WhatIf {
			w := &p.WhatIf[k]
			if w.DeltaQ == nil {
				continue
			}
			if v, ok := w.DeltaQ.Quantile(q.Q); ok {
				whatIfGauge(qdp, id, end, v, w.Scenario, contract.AttrQ, ql)
			}
		}
	}

	if fr, ok := p.FailureRatio(); ok {
		gauge(s.failureRatio.Gauge().DataPoints(), id, end, fr, "", "", "", "")
	}
	if p.QTACheck != nil {
		v := 0.0
		if !p.QTACheck.OK {
			v = 1
		}
		gauge(s.violation.Gauge().DataPoints(), id, end, v, "", "", "", "")
	}
	if p.QTA != nil {
		b.qta(s, id, p.QTA, end)
	}
	if p.QTACheck != nil {
		gauge(s.qtaHolds.Gauge().DataPoints(), id, end, float64(p.QTACheck.Holds), contract.AttrSeries, contract.SeriesObserved, "", "")
	}
	if p.CalculatedQTACheck != nil {
		gauge(s.qtaHolds.Gauge().DataPoints(), id, end, float64(p.CalculatedQTACheck.Holds), contract.AttrSeries, contract.SeriesCalculated, "", "")
	}
	if p.Bounds != nil {
		gauge(s.boundsWidth.Gauge().DataPoints(), id, end, p.BoundsWidth, "", "", "", "")
	}
	if p.HasDivergence {
		gauge(s.divergence.Gauge().DataPoints(), id, end, p.Divergence, "", "", "", "")
		gauge(s.divergenceP.Gauge().DataPoints(), id, end, p.DivergenceTest.P, "", "", "", "")
		gauge(s.divergenceStat.Gauge().DataPoints(), id, end, p.DivergenceTest.Statistic, "", "", "", "")
		gauge(s.detectable.Gauge().DataPoints(), id, end, p.DetectableDivergence, "", "", "", "")
	}
	if p.Slack != nil {
		b.slack(s, id, p.Slack, end)
	}
	b.qoo(s, p, id, end)
}

// qta appends the probe's QTA: its points at their delays, and its bound on
// failures.
func (b *builder) qta(s *metricSet, id probeID, q *deltaq.QTA, end pcommon.Timestamp) {
	dps := s.qtaPoint.Gauge().DataPoints()
	for _, pt := range q.Points {
		gauge(dps, id, end, pt.P, contract.AttrLE, formatFloat(pt.Delay), "", "")
	}
	gauge(s.qtaMaxFailure.Gauge().DataPoints(), id, end, q.MaxFailure, "", "", "", "")
}

// slack appends the probe's QTA slack: per point, the smallest, the
// smallest delay margin and, while the trend falls, the time to violation.
func (b *builder) slack(s *metricSet, id probeID, sl *analysis.QTASlack, end pcommon.Timestamp) {
	dps := s.slack.Gauge().DataPoints()
	for _, pt := range sl.Points {
		gauge(dps, id, end, pt.Slack, contract.AttrLE, formatFloat(pt.Delay), "", "")
	}
	gauge(s.slackMin.Gauge().DataPoints(), id, end, sl.Min, "", "", "", "")
	if sl.MarginOK {
		gauge(s.marginMin.Gauge().DataPoints(), id, end, sl.MinMargin, "", "", "", "")
	}
	if sl.Trend.OK && sl.Trend.Projected {
		gauge(s.timeToViolation.Gauge().DataPoints(), id, end, sl.Trend.TimeToViolation.Seconds(), "", "", "", "")
	}
	if sl.Trend.OK {
		gauge(s.slackStdErr.Gauge().DataPoints(), id, end, sl.Trend.StdErr, "", "", "", "")
	}
	if sl.Trend.OK && sl.Trend.Falling {
		gauge(s.slackUpper.Gauge().DataPoints(), id, end, sl.Trend.Upper, "", "", "", "")
	}
}

// outcomes appends the probe's cumulative outcome counts: always, also for
// an empty window.
func (b *builder) outcomes(s *metricSet, p *analysis.ProbeResult, id probeID, start, end pcommon.Timestamp) {
	// A probe's totals restart when the analysis forgets it and sees it
	// again: its stream then starts anew, at this window's start, after
	// every point of its previous stream (whose start a backend would
	// otherwise read as one stream going down). A new stream starts at its
	// first window, also the first windows of an observer, which begin
	// before the observer was made (they take instances that ended before
	// it): a start after the point's own time is not a cumulative stream a
	// backend can read.
	st := b.outs[p.Name]
	if st == nil {
		if b.outs == nil {
			b.outs = make(map[string]*outStream)
		}
		st = &outStream{start: start, service: id.service}
		b.outs[p.Name] = st
	}
	// The analysis restarts a probe's totals with a new layout, as its
	// histogram does: a new stream, whatever the new totals are.
	if p.Bins > 0 {
		if st.bins > 0 && st.differs(p) {
			st.start, st.base = start, analysis.Counts{}
		}
		st.streamLayout = layoutOf(p)
	}
	if total := p.Totals.Total(); total < st.last {
		st.start, st.base = start, analysis.Counts{}
	}
	// A new deltaq.service makes new series: their stream counts from
	// this window, the totals before it being the old series'.
	if id.service != st.service {
		st.start, st.service = start, id.service
		st.base = analysis.Counts{Success: p.Totals.Success - p.Counts.Success,
			Timeout: p.Totals.Timeout - p.Counts.Timeout, Failure: p.Totals.Failure - p.Counts.Failure}
	}
	st.last, st.seen = p.Totals.Total(), b.windows
	sdp := s.outcomes.Sum().DataPoints()
	for _, o := range [...]struct {
		name string
		n    int64
	}{{analysis.Success.String(), p.Totals.Success - st.base.Success}, {analysis.Timeout.String(), p.Totals.Timeout - st.base.Timeout},
		{analysis.Failure.String(), p.Totals.Failure - st.base.Failure}} {
		dp := sdp.AppendEmpty()
		dp.SetStartTimestamp(st.start)
		dp.SetTimestamp(end)
		dp.SetIntValue(o.n)
		a := dp.Attributes()
		id.put(a, 1)
		a.PutStr(contract.AttrOutcome, o.name)
		for i := range p.Exemplars {
			if x := &p.Exemplars[i]; x.Outcome.String() == o.name && x.Outcome != analysis.Success {
				// The counter's exemplar is the increment the instance made.
				putExemplar(dp.Exemplars(), x, float64(x.Weight))
			}
		}
	}
}

// putExemplar appends x as an exemplar of value v: its trace and span, and
// its time.
func putExemplar(es pmetric.ExemplarSlice, x *analysis.Exemplar, v float64) {
	e := es.AppendEmpty()
	e.SetTraceID(pcommon.TraceID(x.TraceID))
	e.SetSpanID(pcommon.SpanID(x.SpanID))
	e.SetTimestamp(pcommon.Timestamp(x.Time))
	e.SetDoubleValue(v)
}

// curves adds the deltaq.cdf series of the probe to the window's curves
// (buildCurves): observed, calculated, the band's mean and bounds, the QTA
// and the what-if scenarios.
func (b *builder) curves(p *analysis.ProbeResult, id probeID) {
	if p.Observed != nil {
		b.curve(id, contract.SeriesObserved, "", *p.Observed)
	}
	if p.Calculated != nil {
		b.curve(id, contract.SeriesCalculated, "", *p.Calculated)
	}
	if bd := p.Band; bd != nil {
		e := b.edgesOf(bd.Width, bd.Bins())
		if bd.At != nil && !slices.Equal(bd.At, e.idx) {
			// Kept at another cdf_points' edges: those of the windows
			// of a predecessor flushed at a reload, which the successor
			// emits. Its values are labelled with its own edges.
			e = newEdges(bd.Width, bd.Bins(), bd.At)
		}
		for _, c := range [...]struct {
			series string
			cdf    []float64
		}{{contract.SeriesMean, bd.Mean}, {contract.SeriesLower, bd.Lower}, {contract.SeriesUpper, bd.Upper}} {
			if bd.At != nil {
				// Kept at the reported edges alone: at e's, the same rule's.
				b.addReported(id, c.series, e, c.cdf)
			} else {
				b.addCurve(id, c.series, "", e, c.cdf)
			}
		}
	}
	if p.QTA != nil {
		// The QTA curve is drawn on the observed ΔQ's edges, or the band's
		// when the window is empty.
		w, n := p.Width, p.Bins
		if n == 0 && p.Band != nil {
			w, n = p.Band.Width, p.Band.Bins()
		}
		if n > 0 {
			if q, err := p.QTA.RequiredDeltaQ(w, n); err == nil {
				b.curve(id, contract.SeriesQTA, "", q)
			}
		}
	}
	for k := range p.WhatIf {
		if w := &p.WhatIf[k]; w.DeltaQ != nil {
			b.curve(id, contract.SeriesWhatIf, w.Scenario, *w.DeltaQ)
		}
	}
}

// curve adds the CDF of d at its reported edges, read there alone.
func (b *builder) curve(id probeID, series, scenario string, d deltaq.DeltaQ) {
	e := b.edgesOf(d.Width(), d.Bins())
	off := len(b.cdf.values)
	b.cdf.values = d.CDFEdgesAt(b.cdf.values, e.idx)
	b.noteCurve(id, series, scenario, e, off)
}

// gauge appends one double point with the probe's attributes and up to
// two more (an empty key is skipped).
func gauge(dps pmetric.NumberDataPointSlice, id probeID, ts pcommon.Timestamp, v float64, k1, v1, k2, v2 string) {
	dp := dps.AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(v)
	a := dp.Attributes()
	switch {
	case k1 == "":
		id.put(a, 0)
	case k2 == "":
		id.put(a, 1)
		a.PutStr(k1, v1)
	default:
		id.put(a, 2)
		a.PutStr(k1, v1)
		a.PutStr(k2, v2)
	}
}

// whatIfGauge appends one double point of the what-if series of a
// scenario: the probe's attributes, deltaq.series = whatif, deltaq.scenario
// and k = v (deltaq.le or deltaq.q).
func whatIfGauge(dps pmetric.NumberDataPointSlice, id probeID, ts pcommon.Timestamp, v float64, scenario, k, kv string) {
	dp := dps.AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(v)
	a := dp.Attributes()
	id.put(a, 3)
	a.PutStr(contract.AttrSeries, contract.SeriesWhatIf)
	a.PutStr(contract.AttrScenario, scenario)
	a.PutStr(k, kv)
}

// BucketBounds returns the explicit bucket bounds of deltaq.observed for a
// probe of bins uniform bins of width seconds, exactly as the connector and
// the exporter write them: (i+1)·width rounded to 12 significant digits
// (edgeSeconds). Rules that select a bucket by its le label (deltaq slo)
// read them here.
func BucketBounds(width float64, bins int) []float64 {
	b := make([]float64, bins)
	for i := range b {
		b[i] = edgeSeconds(i, width)
	}
	return b
}
