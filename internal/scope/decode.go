// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// What the scope collects from the deltaq exporter's OTLP output: the latest
// window of every probe and the most recent triggers.

import (
	"iter"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// scopeState is what the scope has collected: the latest view of every probe and
// the most recent trigger events. addMetrics and addLogs fill it; renderScope
// reads it.
type scopeState struct {
	limits       Limits
	now          func() time.Time // the clock of probe slots
	slots        *slots
	probes       map[string]*probeView
	triggers     []triggerEvent // oldest first, at most maxTriggers
	triggersSeen int
	// snapshots counts the snapshots seen, by their keys (snapKey), as the
	// browser view does (webStats.SnapshotsSeen): a snapshot is one record
	// per probe and window, so counting records said 33 where the page said
	// 1. snapKeys numbers the newest keys seen, at most maxSnapKeys.
	snapshots     int
	snapKeys      *snapKeys
	metricBatches int
	// lastBatch is the scope's clock when the last metrics batch came;
	// interval the shortest step of a probe's window end in the last batch
	// of a later window, the connector's interval (silentLine): a
	// collector restarted with a longer interval was said silent between
	// its windows for as long as the scope ran.
	lastBatch time.Time
	interval  time.Duration
	// traceURL links the triggers' trace ids (Options.TraceURL).
	traceURL TraceURL
	// malformed counts data points and records that were ignored: without a
	// probe, with an unparsable deltaq.le or deltaq.q, with a non-finite
	// value, a QTA probability, failure ratio or divergence outside
	// [0, 1], a negative outcome count, or a Quality of Outcome
	// outside [0, 100] or of a series other than observed and calculated,
	// stamped more than Limits.Ahead ahead of the scope's clock; snapshot
	// records without a snapshot id; trigger records stamped more than
	// Limits.Ahead ahead of the scope's clock.
	malformed int
	cuts
}

func newScopeState(l Limits) *scopeState {
	return &scopeState{limits: l, now: time.Now, slots: newSlots(l.Probes, l.ProbeTTL), probes: map[string]*probeView{}, snapKeys: newSnapKeys(maxSnapKeys)}
}

// probeView is the latest window of one probe.
type probeView struct {
	updated    time.Time                      // newest data point timestamp
	curves     map[string][]curvePoint        // deltaq.series → CDF points, by delay
	quantiles  map[string]map[float64]float64 // deltaq.series → q → delay in seconds
	outcomes   map[string]outcomeCount        // deltaq.outcome → its counts (outcomes.go)
	failure    scopeReading
	violation  scopeReading
	divergence scopeReading
	// qta is the probe's QTA exactly as the connector holds it
	// (deltaq.qta.point and deltaq.qta.max_failure): its points by delay
	// and its bound on failures. A connector that does not send them has
	// only the QTA curve of deltaq.cdf, sampled at the bin edges.
	qta qtaReading
	// curvesAt, quantilesAt and qtaAt are the ends of the windows the
	// curves, quantiles and QTA were sent in: a request of the same window
	// adds to them (a window larger than the connector's max_request_bytes
	// comes in several requests, cut between any two data points), one of
	// a later window replaces them.
	curvesAt, quantilesAt, qtaAt time.Time
	// qoo is the Quality of Outcome of the window by series (qoo.go); nil
	// while the probe has had no score. qooBatch is what the last batch
	// that had points of the probe sent of it, by series (the browser view
	// keeps its own windows from it).
	qoo      map[string]qooReading
	qooBatch map[string]*qooReading
	// points counts the data points of the probe a batch took: neither
	// malformed nor cut by a bound. The browser view counts them in
	// probes_refused when it has no slot for the probe.
	points int
}

// qtaReading is a probe's QTA as received: points (delay in seconds, the
// probability required by then) by delay, and the failure bound.
type qtaReading struct {
	points     []curvePoint
	maxFailure scopeReading
}

// exact reports whether the QTA was received point by point.
func (q qtaReading) exact() bool { return len(q.points) > 0 || q.maxFailure.ok }

// curvePoint is one point (delay in seconds, cumulative probability) of a CDF.
type curvePoint struct{ delay, p float64 }

type scopeReading struct {
	v  float64
	ok bool
}

// triggerEvent is one deltaq.trigger log record.
type triggerEvent struct {
	at       time.Time
	severity string
	probe    string
	kind     string
	details  []string // the record's other attributes as key=value, sorted
	links    []string // the addresses of its traces (Options.TraceURL), sorted
}

// probe returns the view of probe name, new if need be, or nil when the
// probe has no slot (Limits.Probes).
func (s *scopeState) probe(name string) *probeView {
	ok, expired := s.slots.admit(name, s.now())
	if expired != "" {
		delete(s.probes, expired)
		s.ProbesExpired++
	}
	if !ok {
		s.ProbesRefused++
		return nil
	}
	p := s.probes[name]
	if p == nil {
		p = &probeView{outcomes: map[string]outcomeCount{}}
		s.probes[name] = p
	}
	return p
}

// pointValue returns a number data point's value as a float64.
func pointValue(dp pmetric.NumberDataPoint) (float64, bool) {
	var v float64
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeDouble:
		v = dp.DoubleValue()
	case pmetric.NumberDataPointValueTypeInt:
		v = float64(dp.IntValue())
	default:
		return 0, false
	}
	return v, !math.IsNaN(v) && !math.IsInf(v, 0)
}

func stringAttr(attrs pcommon.Map, key string) string {
	if v, ok := attrs.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// floatAttr parses a numeric attribute sent as a string (deltaq.le, deltaq.q) or
// as a number.
func floatAttr(attrs pcommon.Map, key string) (float64, bool) {
	v, ok := attrs.Get(key)
	if !ok {
		return 0, false
	}
	var f float64
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		f = v.Double()
	case pcommon.ValueTypeInt:
		f = float64(v.Int())
	case pcommon.ValueTypeStr:
		var err error
		if f, err = strconv.ParseFloat(v.Str(), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsNaN(f) && !math.IsInf(f, 0)
}

// numberPoints returns the data points of a gauge or sum, or an empty slice.
func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints()
	}
	return pmetric.NewNumberDataPointSlice()
}

// windowCurves gathers the CDF points and quantiles of one batch, by probe
// and series, before they replace those of the probes.
type windowCurves struct {
	curves    map[string]map[string][]curvePoint
	quantiles map[string]map[string]map[float64]float64
	qta       map[string]*qtaReading
	// qoo are the Quality of Outcome readings of the batch, by probe and
	// series; before is the window end each probe of the batch had
	// before it (probeView.updated), which tells a later window from the
	// rest of the same one.
	qoo    map[string]map[string]*qooReading
	before map[string]time.Time
	// readings are the failure ratio, QTA verdict and divergence of the
	// batch, by probe.
	readings map[string]*windowReadings
	// latest is the latest timestamp a data point may have: the scope's
	// clock plus Limits.Ahead when the batch arrived.
	latest time.Time
	// newest is the newest timestamp of each probe's points in the batch,
	// its window's end (the connector stamps every point of a window so):
	// only the points of that window are read, and none of a window older
	// than the one the probe shows (windowPoint).
	newest map[string]time.Time
}

// windowPoint reports whether a point of probe name stamped t is of the
// window the batch shows: the newest of the batch, and none older than the
// probe's window before it. A request may hold several windows (a batch
// processor joins them; a retry or an exporter's queue sends an older one
// after a later one), and merging their curves and readings showed one
// window's quantiles and verdict under another's end.
func (w *windowCurves) windowPoint(name string, t time.Time) bool {
	return !t.Before(w.newest[name]) && !t.Before(w.before[name])
}

// windowReadings are the scalar readings of one probe's window. The
// connector sends them only for a window that has them (no failure ratio
// or QTA verdict for a window without instances, no divergence for one
// without a test): a later window without them has none.
type windowReadings struct {
	failure, violation, divergence scopeReading
}

// addMetrics ingests one batch. A probe's curves, quantiles and QTA are
// replaced by those of a batch of a later window when it has any, the
// quantiles also when it has curves only, and added to by a batch of the
// same window (replaceCurves: a large window comes in several requests,
// cut anywhere); the failure ratio,
// QTA verdict and divergence are those of the probe's latest window
// (replaceReadings); the outcome counts are updated point by point. Of
// a batch that holds several windows of a probe only the newest is read,
// and nothing but outcome counts of a window older than the probe's
// (windowPoint).
// deltaq.observed, the cumulative histogram of successes, is not read: the
// curves and quantiles of the window are sent as they are.
func (s *scopeState) addMetrics(md pmetric.Metrics) {
	s.metricBatches++
	s.lastBatch = s.now()
	w := windowCurves{
		curves: map[string]map[string][]curvePoint{}, quantiles: map[string]map[string]map[float64]float64{},
		qta: map[string]*qtaReading{}, qoo: map[string]map[string]*qooReading{}, before: map[string]time.Time{},
		readings: map[string]*windowReadings{}, latest: s.now().Add(s.limits.Ahead),
		newest: map[string]time.Time{},
	}
	for _, dp := range scopePoints(md) {
		name, t := stringAttr(dp.Attributes(), attrProbe), dp.Timestamp().AsTime()
		if _, ok := pointValue(dp); ok && !t.After(w.latest) && t.After(w.newest[name]) {
			w.newest[name] = t
		}
	}
	for metric, dp := range scopePoints(md) {
		if !s.addPoint(metric, dp, &w) {
			s.malformed++
		}
	}
	s.replaceCurves(&w)
	s.replaceQoO(&w)
	s.replaceReadings(&w)
	var step time.Duration
	for name, before := range w.before {
		if p := s.probes[name]; p != nil && !before.IsZero() && p.updated.After(before) {
			if d := p.updated.Sub(before); step == 0 || d < step {
				step = d
			}
		}
	}
	if step > 0 {
		s.interval = step
	}
}

// scopePoints yields the data points of the metrics the scope reads, with
// their metric's name.
func scopePoints(md pmetric.Metrics) iter.Seq2[string, pmetric.NumberDataPoint] {
	return func(yield func(string, pmetric.NumberDataPoint) bool) {
		for m := range otlprecv.Metrics(md) {
			switch m.Name() {
			case metricCDF, metricQuantile, metricOutcomes, metricFailureRatio, metricQTAViolation, metricDivergence,
				metricQTAPoint, metricQTAMaxFailure, metricQoOScore, metricQoOLatency, metricQoOLoss, metricQoORate:
			default:
				continue
			}
			for _, dp := range numberPoints(m).All() {
				if !yield(m.Name(), dp) {
					return
				}
			}
		}
	}
}

// replaceReadings sets the failure ratio, QTA verdict and divergence of the
// probes of a batch: a batch of a later window than the probe showed
// replaces them, those it lacks included (a window without instances has
// no verdict, not the last one's); a batch of the same window only adds
// those it has (a window sent in several requests).
func (s *scopeState) replaceReadings(w *windowCurves) {
	for name, before := range w.before {
		p := s.probes[name]
		if p == nil { // gave up its slot within the batch
			continue
		}
		r := w.readings[name]
		if r == nil {
			r = &windowReadings{}
		}
		later := before.IsZero() || p.updated.After(before)
		set := func(dst *scopeReading, src scopeReading) {
			if later || src.ok {
				*dst = src
			}
		}
		set(&p.failure, r.failure)
		set(&p.violation, r.violation)
		set(&p.divergence, r.divergence)
	}
}

// replaceQoO sets the Quality of Outcome of the probes of a batch
// (nextQoO): a probe's batch is of the window it showed when its points
// are no newer.
func (s *scopeState) replaceQoO(w *windowCurves) {
	for name, before := range w.before {
		p := s.probes[name]
		if p == nil { // gave up its slot within the batch
			continue
		}
		p.qooBatch = w.qoo[name]
		p.qoo = nextQoO(p.qoo, w.qoo[name], seriesWithCurves(w.curves[name]), !before.IsZero() && !p.updated.After(before))
	}
}

// replaceCurves sets the curves, quantiles and QTAs of the probes of a
// batch (see addMetrics): those of a later window replace the probe's,
// those of the window the probe has them of add to them, point by point
// (mergePoints).
func (s *scopeState) replaceCurves(w *windowCurves) {
	for name, q := range w.qta {
		p := s.probes[name]
		if p == nil { // gave up its slot within the batch
			continue
		}
		if p.qtaAt.Equal(p.updated) {
			var cut int
			q.points, cut = mergePoints(p.qta.points, q.points, s.limits.Points)
			s.PointsCut += cut
			if !q.maxFailure.ok {
				q.maxFailure = p.qta.maxFailure
			}
		}
		sort.Slice(q.points, func(a, b int) bool { return q.points[a].delay < q.points[b].delay })
		p.qta, p.qtaAt = *q, p.updated
	}
	for name, c := range w.curves {
		p := s.probes[name]
		if p == nil {
			continue
		}
		for _, pts := range c {
			sort.Slice(pts, func(a, b int) bool { return pts[a].delay < pts[b].delay })
		}
		if p.curvesAt.Equal(p.updated) {
			for series, pts := range p.curves {
				if add, ok := c[series]; ok {
					var cut int
					c[series], cut = mergePoints(pts, add, s.limits.Points)
					s.PointsCut += cut
				} else if len(c) < s.limits.Series {
					c[series] = pts
				} else {
					s.SeriesRefused += len(pts)
				}
			}
		} else if !p.quantilesAt.Equal(p.updated) {
			// The quantiles are those of the ΔQs the curves draw: a
			// window whose quantiles are all unreachable (above its
			// tangible mass) sends none, and the previous window's must
			// not stay.
			p.quantiles, p.quantilesAt = nil, p.updated
		}
		p.curves, p.curvesAt = c, p.updated
	}
	for name, q := range w.quantiles {
		p := s.probes[name]
		if p == nil {
			continue
		}
		if p.quantilesAt.Equal(p.updated) {
			for series, row := range p.quantiles {
				add, ok := q[series]
				switch {
				case !ok && len(q) < s.limits.Series:
					q[series] = row
				case !ok:
					s.SeriesRefused += len(row)
				default:
					for x, v := range row {
						if _, dup := add[x]; dup {
							continue
						}
						if len(add) >= s.limits.Points {
							s.PointsCut++
							continue
						}
						add[x] = v
					}
				}
			}
		}
		p.quantiles, p.quantilesAt = q, p.updated
	}
}

// mergePoints joins the points of a curve received in pieces, by delay, old
// sorted: add's point where both have one (a request sent again), at most
// limit points, the rest cut and counted.
func mergePoints(old, add []curvePoint, limit int) ([]curvePoint, int) {
	byDelay := make(map[float64]float64, len(old)+len(add))
	for _, pt := range old {
		byDelay[pt.delay] = pt.p
	}
	for _, pt := range add {
		byDelay[pt.delay] = pt.p
	}
	out := make([]curvePoint, 0, len(byDelay))
	for d, v := range byDelay {
		out = append(out, curvePoint{delay: d, p: v})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].delay < out[b].delay })
	if len(out) > limit {
		return out[:limit], len(out) - limit
	}
	return out, 0
}

// seriesOf names a point's curve: its deltaq.series, and for a what-if
// curve the scenario too ("whatif NAME"), so that scenarios stay apart.
func seriesOf(attrs pcommon.Map) string {
	series := stringAttr(attrs, attrSeries)
	if sc := stringAttr(attrs, attrScenario); sc != "" && series != "" {
		return series + " " + sc
	}
	return series
}

// addPoint ingests one data point of the metric named metric: a CDF point or
// quantile into w, anything else into its probe. It reports false for a
// malformed point, which it ignores; a point cut by a bound (Limits) is
// counted in s.cuts and reported true. A point stamped after w.latest is
// malformed: the newest timestamp of a probe is its window's end, and one
// from the future would stand for every window until then.
func (s *scopeState) addPoint(metric string, dp pmetric.NumberDataPoint, w *windowCurves) bool {
	attrs := dp.Attributes()
	name := stringAttr(attrs, attrProbe)
	v, ok := pointValue(dp)
	t := dp.Timestamp().AsTime()
	if name == "" || !ok || t.After(w.latest) {
		return false
	}
	if len(name) > s.limits.NameBytes {
		s.NamesRefused++
		return true
	}
	p := s.probe(name)
	if p == nil {
		return true
	}
	if _, seen := w.before[name]; !seen {
		w.before[name] = p.updated
	}
	if t.After(p.updated) {
		p.updated = t
	}
	cut := s.cuts
	ok = s.addProbePoint(metric, dp, name, p, v, w)
	if ok && s.cuts == cut {
		p.points++
	}
	return ok
}

// addProbePoint is addPoint's part once the point's probe p, of name name,
// has a slot; v is the point's value.
func (s *scopeState) addProbePoint(metric string, dp pmetric.NumberDataPoint, name string, p *probeView, v float64, w *windowCurves) bool {
	attrs := dp.Attributes()
	if metric != metricOutcomes && !w.windowPoint(name, dp.Timestamp().AsTime()) {
		// Of another window than the one shown; the outcome counts keep
		// each window's (outcomeCount.next).
		return true
	}
	switch metric {
	case metricCDF, metricQuantile:
		return s.addCurvePoint(metric, name, attrs, v, w)
	case metricQoOScore, metricQoOLatency, metricQoOLoss, metricQoORate:
		return w.addQoOPoint(metric, name, stringAttr(attrs, attrSeries), v)
	case metricQTAPoint:
		le, ok := floatAttr(attrs, attrLE)
		if !ok || v < 0 || v > 1 {
			return false
		}
		if q := w.qtaOf(name); len(q.points) < s.limits.Points {
			q.points = append(q.points, curvePoint{delay: le, p: v})
		} else {
			s.PointsCut++
		}
	case metricQTAMaxFailure:
		if v < 0 || v > 1 {
			return false
		}
		w.qtaOf(name).maxFailure = scopeReading{v, true}
	case metricOutcomes:
		if v < 0 {
			return false
		}
		kind := stringAttr(attrs, attrOutcome)
		if _, known := p.outcomes[kind]; !known {
			if len(kind) > s.limits.NameBytes {
				s.NamesRefused++
				return true
			}
			if len(p.outcomes) >= s.limits.Series {
				s.SeriesRefused++
				return true
			}
		}
		p.outcomes[kind] = p.outcomes[kind].next(v, startTime(dp), dp.Timestamp().AsTime())
	case metricFailureRatio:
		if v < 0 || v > 1 {
			return false
		}
		w.readingsOf(name).failure = scopeReading{v, true}
	case metricQTAViolation:
		w.readingsOf(name).violation = scopeReading{v, true}
	case metricDivergence:
		if v < 0 || v > 1 {
			return false
		}
		w.readingsOf(name).divergence = scopeReading{v, true}
	}
	return true
}

// addCurvePoint adds a CDF point or a quantile of probe name to w, within
// the bounds on series names, series per probe and points per series.
func (s *scopeState) addCurvePoint(metric, name string, attrs pcommon.Map, v float64, w *windowCurves) bool {
	key := attrLE
	if metric == metricQuantile {
		key = attrQ
	}
	x, ok := floatAttr(attrs, key)
	series := stringAttr(attrs, attrSeries)
	if !ok || series == "" {
		return false
	}
	if len(series) > s.limits.NameBytes || len(stringAttr(attrs, attrScenario)) > s.limits.NameBytes {
		s.NamesRefused++
		return true
	}
	series = seriesOf(attrs)
	if metric == metricCDF {
		c := w.curves[name]
		if c == nil {
			c = map[string][]curvePoint{}
			w.curves[name] = c
		}
		switch pts, known := c[series]; {
		case !known && len(c) >= s.limits.Series:
			s.SeriesRefused++
		case len(pts) >= s.limits.Points:
			s.PointsCut++
		default:
			c[series] = append(pts, curvePoint{delay: x, p: v})
		}
		return true
	}
	qs := w.quantiles[name]
	if qs == nil {
		qs = map[string]map[float64]float64{}
		w.quantiles[name] = qs
	}
	row, known := qs[series]
	switch {
	case !known && len(qs) >= s.limits.Series:
		s.SeriesRefused++
	case !known:
		qs[series] = map[float64]float64{x: v}
	case len(row) >= s.limits.Points:
		s.PointsCut++
	default:
		row[x] = v
	}
	return true
}

// addQoOPoint adds a Quality of Outcome point of probe name to w. A value
// outside [0, 100] or a series other than observed and calculated is
// malformed.
func (w *windowCurves) addQoOPoint(metric, name, series string, v float64) bool {
	if v < 0 || v > 100 || (series != seriesObserved && series != seriesCalculated) {
		return false
	}
	bySeries := w.qoo[name]
	if bySeries == nil {
		bySeries = map[string]*qooReading{}
		w.qoo[name] = bySeries
	}
	r := bySeries[series]
	if r == nil {
		r = &qooReading{}
		bySeries[series] = r
	}
	reading := scopeReading{v, true}
	switch metric {
	case metricQoOScore:
		r.score = reading
	case metricQoOLatency:
		r.latency = reading
	case metricQoOLoss:
		r.loss = reading
	case metricQoORate:
		r.rate = reading
	}
	return true
}

// readingsOf returns the readings of probe name in the batch, none at first.
func (w *windowCurves) readingsOf(name string) *windowReadings {
	r := w.readings[name]
	if r == nil {
		r = &windowReadings{}
		w.readings[name] = r
	}
	return r
}

// qtaOf returns the QTA of probe name in the batch, empty at first.
func (w *windowCurves) qtaOf(name string) *qtaReading {
	q := w.qta[name]
	if q == nil {
		q = &qtaReading{}
		w.qta[name] = q
	}
	return q
}

// addLogs ingests deltaq.trigger records (kept, newest last) and counts
// the snapshots of deltaq.snapshot records; other records are ignored.
func (s *scopeState) addLogs(ld plog.Logs) {
	for source, lr := range logsBySource(ld, s.limits.NameBytes) {
		switch lr.EventName() {
		case eventSnapshot:
			s.addSnapshotRecord(lr, source)
		case eventTrigger:
			s.addTrigger(lr)
		}
	}
}

// addSnapshotRecord counts the snapshot of a deltaq.snapshot record of a
// resource of the given source once, by its key (snapKey), as the browser
// view files it (scopeWeb.addSnapshotRecord): a record without an id is
// malformed.
func (s *scopeState) addSnapshotRecord(lr plog.LogRecord, source string) {
	k, ok := snapKeyOf(source, lr.Attributes())
	if !ok {
		s.malformed++
		return
	}
	if _, seen := s.snapKeys.byKey[k]; seen {
		return
	}
	s.snapshots++
	s.snapKeys.number(k)
}

// triggerTime is a deltaq.trigger record's time: its timestamp, else (0)
// its observed timestamp.
func triggerTime(lr plog.LogRecord) time.Time {
	if lr.Timestamp() == 0 {
		return lr.ObservedTimestamp().AsTime()
	}
	return lr.Timestamp().AsTime()
}

// addTrigger keeps a deltaq.trigger record among the latest maxTriggers, in
// time order. A record stamped more than Limits.Ahead ahead of the scope's
// clock is malformed, not kept: the newest would stay listed, and take one
// of the places, for ever.
func (s *scopeState) addTrigger(lr plog.LogRecord) {
	ev := triggerEvent{
		at:       triggerTime(lr),
		severity: lr.SeverityText(),
		probe:    stringAttr(lr.Attributes(), attrProbe),
		kind:     stringAttr(lr.Attributes(), attrTrigger),
	}
	if s.limits.tooFarAhead(ev.at, s.now()) {
		s.malformed++
		return
	}
	if ev.severity == "" {
		ev.severity = lr.SeverityNumber().String()
	}
	for _, link := range s.traceURL.traceLinks(lr) {
		ev.links = append(ev.links, s.cut(link, s.limits.AttrBytes))
	}
	sort.Strings(ev.links)
	ev.severity = s.cut(ev.severity, s.limits.NameBytes)
	ev.probe = s.cut(ev.probe, s.limits.NameBytes)
	ev.kind = s.cut(ev.kind, s.limits.NameBytes)
	for k, v := range lr.Attributes().All() {
		if k == attrProbe || k == attrTrigger || k == contract.AttrAgentStart {
			continue
		}
		if len(ev.details) >= maxTriggerAttrs {
			s.AttrsCut++
			continue
		}
		ev.details = append(ev.details, s.cut(k, s.limits.NameBytes)+"="+s.cut(v.AsString(), s.limits.AttrBytes))
	}
	sort.Strings(ev.details)
	s.triggersSeen++
	// Keep them in time order; records of one batch may come in any order.
	i := sort.Search(len(s.triggers), func(i int) bool { return s.triggers[i].at.After(ev.at) })
	s.triggers = slices.Insert(s.triggers, i, ev)
	if len(s.triggers) > maxTriggers {
		s.triggers = s.triggers[len(s.triggers)-maxTriggers:]
	}
}

// cut returns v cut to n bytes, counting the cut.
func (c *cuts) cutTo(v string, n int) string {
	v, cut := cutString(v, n)
	if cut {
		c.AttrsCut++
	}
	return v
}

func (s *scopeState) cut(v string, n int) string { return s.cuts.cutTo(v, n) }
