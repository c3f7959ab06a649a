// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// The reference below counts what the connector's README documents for the
// probes it matches, written plainly and apart from the analysis code:
//
//   - a span is an instance of every probe whose match selects it (README,
//     "Probes matched in the connector"); one without a start or an end
//     time, or that ends before it starts, is dropped as malformed;
//   - longer than dMax it is a timeout, ending at start + dMax, whatever its
//     status; else a failure by the probe's failure rule, else a success in
//     the bin (i·w, (i+1)·w] of width w = dMax/bins, a delay of 0 in the
//     first (README, "Output": bounds w, 2w, …, dMax, OTLP's
//     upper-inclusive reading);
//   - window k holds the instances whose end lies in [k·interval,
//     (k+1)·interval) and closes lag (0: one interval) after its end; a span
//     ending in a closed window is dropped (too_late); a timeout whose own
//     window closed while the span's end did not counts in the oldest open
//     window (README, "Windows");
//   - a span counts with its adjusted count 2⁵⁶/(2⁵⁶ − th) of tracestate
//     ot=th, at most max_adjusted_count, one with sampling.priority > 0 or an
//     rv below th once, a fractional count ⌊a⌋ or ⌊a⌋ + 1 (top-level README,
//     "Sampled traces"); the reference keeps both bounds;
//   - a start event tracks its instance until its span comes; one whose
//     span has not come by start + dMax is a timeout in the window of its
//     deadline, and the span that comes after it is late, not counted again
//     for the probe (for late_window after the deadline); a start event
//     after its span (within ended_window) is not tracked, one due longer
//     ago than ended_window is stale (README, "Real-time timeouts");
//   - a span a deltaq processor marked counts for its deltaq.probe under the
//     probe's layout, its configured one or its first instance's: a timeout
//     judged by a shorter dMax is refused (layout_mismatch) unless its span
//     outlasted the probe's dMax too, one marked late is not counted
//     (README, "The contract", "Layouts and probes").
//
// It then reads the per-window increments of the cumulative deltaq.outcomes
// and deltaq.observed streams of every probe (summed over the deltaq.service
// series, each new series counting from the window it began in; explicit
// bounds or the exponential form), the failure ratio and the quantiles.

// oracleProbe is one probe, and its reference layout.
type oracleProbe struct {
	name  string
	dmax  time.Duration
	bins  int
	auto  bool // dmax: auto, read at dmax_max until its first choice
	match map[string]any
	// failCode: the failure rule is code ≥ 500 and not the status.
	failCode bool
	// qta are the probe's QTA points, at bin edges (bin index k: delay
	// (k+1)·w), and maxFailure its failure bound; none when qta is empty.
	qta        []qtaPoint
	maxFailure float64
	// marked: no match; its instances are spans a deltaq processor marked
	// (README, "The contract"), its layout that of its first instance.
	marked bool
}

func (p oracleProbe) entry() map[string]any {
	e := map[string]any{"bins": p.bins, "match": p.match}
	if p.auto {
		e["dmax"] = "auto"
		e["dmax_max"] = p.dmax.String()
		e["dmax_min"] = "1ms"
	} else {
		e["dmax"] = p.dmax.String()
	}
	if len(p.qta) > 0 {
		var pts []any
		for _, q := range p.qta {
			d := p.dmax * time.Duration(q.k+1) / time.Duration(p.bins)
			pts = append(pts, map[string]any{"delay": d.String(), "p": q.p})
		}
		e["qta"] = map[string]any{"points": pts, "max_failure": p.maxFailure}
	}
	if p.failCode {
		e["failure"] = map[string]any{"status_error": false,
			"conditions": []any{map[string]any{"attribute": "code", "op": ">=", "value": 500}}}
	}
	return e
}

// selects says whether the probe's match selects s (README: every condition
// set holds; without a span name the span name is the probe's).
func (p oracleProbe) selects(s oracleSpan) bool {
	if p.marked {
		return false
	}
	name, _ := p.match["span_name"].(string)
	if name == "" {
		name = p.name
	}
	if s.name != name {
		return false
	}
	if svc, ok := p.match["service_name"].(string); ok && s.service != svc {
		return false
	}
	if kind, ok := p.match["span_kind"].(string); ok && s.kind != kind {
		return false
	}
	if attrs, ok := p.match["attributes"].(map[string]any); ok {
		for k, v := range attrs {
			if s.attrs[k] != v {
				return false
			}
		}
	}
	return true
}

func (p oracleProbe) fails(s oracleSpan) bool {
	if p.failCode {
		c, ok := s.attrs["code"].(int64)
		return ok && c >= 500
	}
	return s.error
}

// qtaPoint is a QTA point at the edge of bin k: at least p of the
// instances complete within (k+1)·w.
type qtaPoint struct {
	k int
	p float64
}

// oracleSpan is one span sent to the connector.
type oracleSpan struct {
	name, service, kind string
	attrs               map[string]any
	error               bool
	start, end          int64 // Unix ns; 0 = unset
	tracestate          string
	id                  uint64
	// mark is the deltaq processor's attributes on the span, if any.
	mark *processorMark
}

// processorMark is what a deltaq processor writes on an instance's span.
type processorMark struct {
	probe, outcome string // outcome "" is a success
	dmaxNs, bins   int64
	late           bool
}

// weightRange is the adjusted count of a span with tracestate ts: its two
// possible whole values (equal when the count is whole).
func weightRange(ts string, priority bool, maxCount int64) (lo, hi int64) {
	if priority {
		return 1, 1
	}
	th, ok := thresholdOf(ts)
	if !ok {
		return 1, 1
	}
	a := math.Ldexp(1, 56) / (math.Ldexp(1, 56) - float64(th))
	if a >= float64(maxCount) {
		return maxCount, maxCount
	}
	fl := math.Floor(a)
	if fl == a {
		return int64(a), int64(a)
	}
	return int64(fl), int64(fl) + 1
}

// thresholdOf reads th (and rv) of the ot entry of the W3C tracestates the
// generator writes: "ot=th:X" and "ot=th:X;rv:Y" (OpenTelemetry
// "TraceState: Probability Sampling": th 1 to 14 hex digits, trailing
// zeros omitted, rv exactly 14; a threshold its rv contradicts, rv < th,
// is erased).
func thresholdOf(ts string) (uint64, bool) {
	var th, rv string
	if _, err := fmt.Sscanf(ts, "ot=th:%s", &th); err != nil {
		return 0, false
	}
	for i := range len(th) {
		if th[i] == ';' {
			th, rv = th[:i], th[i+len(";rv:"):]
			break
		}
	}
	pad := func(s string) uint64 {
		for len(s) < 14 {
			s += "0"
		}
		v, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	t := pad(th)
	// rv is exactly 14 hex digits; one of another length is no rv.
	if len(rv) == 14 && pad(rv) < t {
		return 0, false
	}
	return t, true
}

// counts are a window's counts of one probe: outcomes, and successes by
// bin, each a range [lo, hi].
type counts struct {
	success, timeout, failure [2]int64
	bins                      [][2]int64
	sum                       [2]float64
	// delays are the successes' delays (ns) with their counts, the low
	// ones.
	delays []weighted
}

type weighted struct{ d, n int64 }

// oracle is the reference state of one run.
type oracle struct {
	interval, lag int64
	probes        []oracleProbe
	// expMaxSize is the exponential form's max_size, 0 for explicit
	// bounds; expChecked counts the windows compared in that form.
	expMaxSize     int
	expChecked     int64
	qtaChecked     int64
	maxCount       int64
	closedBefore   int64 // windows k < closedBefore are closed
	windows        map[int64]map[string]*counts
	malformed      int64
	tooLate        int64
	layoutMismatch int64
	// Start events (README, "Real-time timeouts"): the instances tracked
	// by span id, the spans that ended by the clock of their arrival, and
	// the start events' results.
	tracked map[uint64]*trackedStart
	ended   map[uint64]int64
	results map[string]int64
	late    int64
}

// trackedStart is an instance a start event announced.
type trackedStart struct {
	probe    oracleProbe
	deadline int64
	timedOut bool
	weight   [2]int64
}

// endedWindow and lateWindow are the defaults of start_events: how long a
// span is remembered as ended, and a timed-out instance as such after its
// deadline.
const (
	endedWindow = int64(30 * time.Second)
	lateWindow  = int64(time.Minute)
)

func (o *oracle) window(k int64, p oracleProbe) *counts {
	if o.windows[k] == nil {
		o.windows[k] = map[string]*counts{}
	}
	c := o.windows[k][p.name]
	if c == nil {
		c = &counts{bins: make([][2]int64, p.bins)}
		o.windows[k][p.name] = c
	}
	return c
}

// close closes the windows due at now: window k closes lag after its end.
func (o *oracle) close(now int64) {
	if o.closedBefore == 0 {
		o.closedBefore = floorDiv(now-o.lag, o.interval) - 1
	}
	for (o.closedBefore+1)*o.interval+o.lag <= now {
		o.closedBefore++
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// start takes a start event at now: tracked unless its span came already
// (after_end) or it was due longer than ended_window ago (stale).
func (o *oracle) start(e oracleStart, now int64) {
	var p oracleProbe
	for _, q := range o.probes {
		if q.name == e.probe {
			p = q
		}
	}
	deadline := e.start + p.dmax.Nanoseconds()
	lo, hi := weightRange(e.tracestate, false, o.maxCount)
	switch at, ok := o.ended[e.id]; {
	case ok && now-at <= endedWindow:
		o.results["after_end"]++
	case now-deadline > endedWindow:
		o.results["stale"]++
	case o.tracked[e.id] != nil:
		o.results["duplicate"]++
	default:
		o.results["tracked"]++
		o.tracked[e.id] = &trackedStart{probe: p, deadline: deadline, weight: [2]int64{lo, hi}}
	}
}

// expire counts the timeouts due by now, in the window of their deadline
// or, closed, the oldest open one, and forgets the timed-out instances
// whose late window has passed: their spans count by their own duration.
func (o *oracle) expire(now int64) {
	for id, in := range o.tracked {
		if in.timedOut && in.deadline+lateWindow <= now {
			delete(o.tracked, id)
		}
		if in.timedOut || in.deadline > now {
			continue
		}
		in.timedOut = true
		c := o.window(max(floorDiv(in.deadline, o.interval), o.closedBefore), in.probe)
		c.timeout[0] += in.weight[0]
		c.timeout[1] += in.weight[1]
	}
}

func (o *oracle) add(s oracleSpan, priority bool, now int64) {
	if s.mark != nil {
		o.addMarked(s, priority)
		return
	}
	in := o.tracked[s.id]
	matched := false
	for _, p := range o.probes {
		if !p.selects(s) {
			continue
		}
		matched = true
		if in != nil && in.probe.name == p.name && in.timedOut {
			o.late++ // counted already, as a timeout
			continue
		}
		o.count(p, s, priority)
	}
	if matched {
		delete(o.tracked, s.id)
		o.ended[s.id] = now
	}
}

// addMarked counts a span a deltaq processor marked, under its probe's
// layout (README, "Layouts and probes"): a timeout judged by a shorter
// dMax is refused (layout_mismatch) unless its span outlasted the probe's
// dMax too (a timeout under either), any other timeout ends at start +
// dMax; a success or failure longer than dMax is a timeout; a span marked
// late is not counted again.
func (o *oracle) addMarked(s oracleSpan, priority bool) {
	m := s.mark
	if m.late {
		return
	}
	var p oracleProbe
	for _, q := range o.probes {
		if q.name == m.probe {
			p = q
		}
	}
	if m.outcome != contract.Timeout {
		o.count(p, s, priority)
		return
	}
	if m.dmaxNs < p.dmax.Nanoseconds() && s.end-s.start <= p.dmax.Nanoseconds() {
		o.layoutMismatch++
		return
	}
	if floorDiv(s.end, o.interval) < o.closedBefore {
		o.tooLate++ // its span ended in a closed window
		return
	}
	lo, hi := weightRange(s.tracestate, priority, o.maxCount)
	c := o.window(max(floorDiv(s.start+p.dmax.Nanoseconds(), o.interval), o.closedBefore), p)
	c.timeout[0] += lo
	c.timeout[1] += hi
}

func (o *oracle) count(p oracleProbe, s oracleSpan, priority bool) {
	if s.start == 0 || s.end == 0 || s.end < s.start {
		o.malformed++
		return
	}
	dmax := p.dmax.Nanoseconds()
	d := s.end - s.start
	kEnd := floorDiv(s.end, o.interval)
	if kEnd < o.closedBefore {
		o.tooLate++
		return
	}
	lo, hi := weightRange(s.tracestate, priority, o.maxCount)
	if d > dmax {
		k := max(floorDiv(s.start+dmax, o.interval), o.closedBefore)
		c := o.window(k, p)
		c.timeout[0] += lo
		c.timeout[1] += hi
		return
	}
	c := o.window(kEnd, p)
	// A marked span's outcome is the processor's; a matched span's, the
	// probe's failure rule.
	if s.mark != nil && s.mark.outcome == contract.Failure || s.mark == nil && p.fails(s) {
		c.failure[0] += lo
		c.failure[1] += hi
		return
	}
	c.success[0] += lo
	c.success[1] += hi
	bin := 0
	if d > 0 {
		// ⌈d/w⌉ − 1 in integers: d·bins/dmax, rounded up; a delay within
		// a relative 1e-9 above an edge counts as on it (deltaq.Histogram:
		// 5 ms read as 0.005000000000000001 is in (4, 5] ms).
		bin = int((d*int64(p.bins)+dmax-1)/dmax) - 1
		if edge := float64(dmax) * float64(bin) / float64(p.bins); bin > 0 && float64(d)-edge < 1e-9*edge {
			bin--
		}
	}
	c.bins[bin][0] += lo
	c.bins[bin][1] += hi
	c.sum[0] += float64(d) / 1e9 * float64(lo)
	c.sum[1] += float64(d) / 1e9 * float64(hi)
	c.delays = append(c.delays, weighted{d, lo})
}

// emitted is what the connector's output says of one probe in one window:
// the increments of its cumulative streams.
type emitted struct {
	success, timeout, failure int64
	bins                      []uint64
	sum                       float64
	// scale is the largest cumulative sum the increment sum was read from:
	// a difference of two cumulative sums is exact only to its rounding.
	scale    float64
	observed bool
	// bounds are deltaq.observed's explicit bounds, seconds; ratio is the
	// window's deltaq.failure_ratio (hasRatio: there was one).
	bounds   []float64
	ratio    float64
	hasRatio bool
	// quantiles are the observed deltaq.quantile points, seconds by q.
	quantiles map[float64]float64
	// cdf is the observed deltaq.cdf curve, by deltaq.le in seconds.
	cdf map[float64]float64
	// violation is the window's deltaq.qta.violation (hasViolation:
	// there was one).
	violation    float64
	hasViolation bool
	// exp are the exponential form's increments by bucket index, at
	// expScale, and expZero its zero count.
	exp      map[int32]uint64
	expScale int32
	expZero  uint64
}

// streamKey names one cumulative series: probe, service label, start.
type streamKey struct {
	probe, service string
	start          pcommon.Timestamp
}

// reader turns the cumulative output into per-window increments.
type reader struct {
	outcomes map[streamKey]map[string]int64
	observed map[streamKey]pmetric.HistogramDataPoint
	expPrev  map[streamKey]map[int32]uint64
	expSum   map[streamKey]float64
	// windows by end time (Unix ns), then probe.
	windows map[int64]map[string]*emitted
}

func newReader() *reader {
	return &reader{outcomes: map[streamKey]map[string]int64{}, observed: map[streamKey]pmetric.HistogramDataPoint{},
		expPrev: map[streamKey]map[int32]uint64{}, expSum: map[streamKey]float64{},
		windows: map[int64]map[string]*emitted{}}
}

func (r *reader) at(end pcommon.Timestamp, probe string) *emitted {
	t := int64(end)
	if r.windows[t] == nil {
		r.windows[t] = map[string]*emitted{}
	}
	e := r.windows[t][probe]
	if e == nil {
		e = &emitted{}
		r.windows[t][probe] = e
	}
	return e
}

func keyOf(probe string, a pcommon.Map, start pcommon.Timestamp) streamKey {
	svc, _ := a.Get(contract.AttrService)
	return streamKey{probe, svc.Str(), start}
}

func (r *reader) read(t *testing.T, mds []pmetric.Metrics) {
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					switch m.Name() {
					case contract.MetricOutcomes:
						r.readOutcomes(m)
					case contract.MetricObserved:
						r.readObserved(t, m)
					case contract.MetricCDF:
						r.readCDF(m)
					case contract.MetricQTAViolation:
						for _, dp := range m.Gauge().DataPoints().All() {
							p, _ := dp.Attributes().Get(contract.AttrProbe)
							e := r.at(dp.Timestamp(), p.Str())
							e.violation, e.hasViolation = dp.DoubleValue(), true
						}
					case contract.MetricQuantile:
						r.readQuantiles(m)
					case contract.MetricFailureRatio:
						for _, dp := range m.Gauge().DataPoints().All() {
							p, _ := dp.Attributes().Get(contract.AttrProbe)
							e := r.at(dp.Timestamp(), p.Str())
							e.ratio, e.hasRatio = dp.DoubleValue(), true
						}
					}
				}
			}
		}
	}
}

func (r *reader) readOutcomes(m pmetric.Metric) {
	for _, dp := range m.Sum().DataPoints().All() {
		p, _ := dp.Attributes().Get(contract.AttrProbe)
		oc, _ := dp.Attributes().Get(contract.AttrOutcome)
		k := keyOf(p.Str(), dp.Attributes(), dp.StartTimestamp())
		if r.outcomes[k] == nil {
			r.outcomes[k] = map[string]int64{}
		}
		inc := dp.IntValue() - r.outcomes[k][oc.Str()]
		r.outcomes[k][oc.Str()] = dp.IntValue()
		e := r.at(dp.Timestamp(), p.Str())
		switch oc.Str() {
		case contract.Success:
			e.success += inc
		case contract.Timeout:
			e.timeout += inc
		case contract.Failure:
			e.failure += inc
		}
	}
}

func (r *reader) readCDF(m pmetric.Metric) {
	for _, dp := range m.Gauge().DataPoints().All() {
		if series, _ := dp.Attributes().Get(contract.AttrSeries); series.Str() != contract.SeriesObserved {
			continue
		}
		p, _ := dp.Attributes().Get(contract.AttrProbe)
		lv, _ := dp.Attributes().Get(contract.AttrLE)
		le, _ := strconv.ParseFloat(lv.Str(), 64)
		e := r.at(dp.Timestamp(), p.Str())
		if e.cdf == nil {
			e.cdf = map[float64]float64{}
		}
		e.cdf[le] = dp.DoubleValue()
	}
}

func (r *reader) readQuantiles(m pmetric.Metric) {
	for _, dp := range m.Gauge().DataPoints().All() {
		if series, _ := dp.Attributes().Get(contract.AttrSeries); series.Str() != contract.SeriesObserved {
			continue
		}
		p, _ := dp.Attributes().Get(contract.AttrProbe)
		qv, _ := dp.Attributes().Get(contract.AttrQ)
		q, _ := strconv.ParseFloat(qv.Str(), 64)
		e := r.at(dp.Timestamp(), p.Str())
		if e.quantiles == nil {
			e.quantiles = map[float64]float64{}
		}
		e.quantiles[q] = dp.DoubleValue()
	}
}

// readExponential reads the exponential form of deltaq.observed: each
// window's increments by bucket index, and the scale.
func (r *reader) readExponential(m pmetric.Metric) {
	for _, dp := range m.ExponentialHistogram().DataPoints().All() {
		p, _ := dp.Attributes().Get(contract.AttrProbe)
		k := keyOf(p.Str(), dp.Attributes(), dp.StartTimestamp())
		e := r.at(dp.Timestamp(), p.Str())
		e.observed = true
		e.scale = max(e.scale, dp.Sum())
		cur := map[int32]uint64{}
		for i, c := range dp.Positive().BucketCounts().All() {
			cur[dp.Positive().Offset()+int32(i)] = c
		}
		if e.exp == nil {
			e.exp = map[int32]uint64{}
		}
		for i, c := range cur {
			e.exp[i] += c - r.expPrev[k][i]
		}
		e.sum += dp.Sum() - r.expSum[k]
		e.expScale = dp.Scale()
		e.expZero += dp.ZeroCount()
		r.expPrev[k], r.expSum[k] = cur, dp.Sum()
	}
}

func (r *reader) readObserved(t *testing.T, m pmetric.Metric) {
	if m.Type() == pmetric.MetricTypeExponentialHistogram {
		r.readExponential(m)
		return
	}
	require.Equal(t, pmetric.MetricTypeHistogram, m.Type())
	for _, dp := range m.Histogram().DataPoints().All() {
		p, _ := dp.Attributes().Get(contract.AttrProbe)
		k := keyOf(p.Str(), dp.Attributes(), dp.StartTimestamp())
		e := r.at(dp.Timestamp(), p.Str())
		e.observed = true
		e.bounds = dp.ExplicitBounds().AsRaw()
		counts := dp.BucketCounts().AsRaw()
		prevCounts, prevSum := make([]uint64, len(counts)), 0.0
		if prev, ok := r.observed[k]; ok {
			prevCounts, prevSum = prev.BucketCounts().AsRaw(), prev.Sum()
		}
		if e.bins == nil {
			e.bins = make([]uint64, len(counts))
		}
		for i := range counts {
			e.bins[i] += counts[i] - prevCounts[i]
		}
		e.sum += dp.Sum() - prevSum
		e.scale = max(e.scale, dp.Sum())
		cp := pmetric.NewHistogramDataPoint()
		dp.CopyTo(cp)
		r.observed[k] = cp
	}
}

// oracleRun is one seeded run: a configuration, and the spans sent at
// each step.
type oracleRun struct {
	cfg    map[string]any
	probes []oracleProbe
	steps  []oracleStep
	t0     int64
}

type oracleStep struct {
	now    int64 // the clock's tick before the spans arrive
	starts []oracleStart
	// batch sends the starts in the batch form, a record per probe and
	// service (deltaq.span.starts).
	batch bool
	spans []oracleSpan
	prio  []bool
}

// oracleStart is a start event: the probe, the span's id and start, its
// tracestate and service; startsOf writes them as single records.
type oracleStart struct {
	probe, tracestate, service string
	id                         uint64
	start                      int64
}

// idsOf are the trace and span ids of the span (or start event) id.
func idsOf(id uint64) (tid pcommon.TraceID, sid pcommon.SpanID) {
	for j := range 8 {
		tid[j] = byte(id >> (8 * j))
		sid[j] = byte(id >> (8 * j))
	}
	tid[15] = 1
	return tid, sid
}

func startsOf(st oracleStep) plog.Logs {
	if st.batch {
		return batchStartsOf(st.starts)
	}
	ld := plog.NewLogs()
	for _, e := range st.starts {
		rl := ld.ResourceLogs().AppendEmpty()
		if e.service != "" {
			rl.Resource().Attributes().PutStr("service.name", e.service)
		}
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(pcommon.Timestamp(e.start))
		tid, sid := idsOf(e.id)
		lr.SetTraceID(tid)
		lr.SetSpanID(sid)
		lr.Attributes().PutStr(contract.AttrProbe, e.probe)
		if e.tracestate != "" {
			lr.Attributes().PutStr(contract.AttrTraceState, e.tracestate)
		}
	}
	return ld
}

// batchStartsOf writes starts in the batch form (docs/contract/
// start-event.json): a record per probe and service, 32 bytes an instance
// (trace id, span id, start in ns little-endian) and 8 for its threshold
// (0: none).
func batchStartsOf(starts []oracleStart) plog.Logs {
	ld := plog.NewLogs()
	type key struct{ probe, service string }
	var order []key
	entries, thresholds := map[key][]byte{}, map[key][]byte{}
	for _, e := range starts {
		k := key{e.probe, e.service}
		if _, ok := entries[k]; !ok {
			order = append(order, k)
		}
		tid, sid := idsOf(e.id)
		b := append(append(entries[k], tid[:]...), sid[:]...)
		entries[k] = binary.LittleEndian.AppendUint64(b, uint64(e.start))
		th, _ := thresholdOf(e.tracestate)
		thresholds[k] = binary.LittleEndian.AppendUint64(thresholds[k], th)
	}
	for _, k := range order {
		rl := ld.ResourceLogs().AppendEmpty()
		if k.service != "" {
			rl.Resource().Attributes().PutStr("service.name", k.service)
		}
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.Attributes().PutStr(contract.AttrProbe, k.probe)
		lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[k])
		lr.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(thresholds[k])
	}
	return ld
}

func tracesOf(spans []oracleSpan, prio []bool) ptrace.Traces {
	td := ptrace.NewTraces()
	for i, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		if s.service != "" {
			rs.Resource().Attributes().PutStr("service.name", s.service)
		}
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName(s.name)
		switch s.kind {
		case "server":
			sp.SetKind(ptrace.SpanKindServer)
		case "client":
			sp.SetKind(ptrace.SpanKindClient)
		default:
			sp.SetKind(ptrace.SpanKindInternal)
		}
		sp.SetStartTimestamp(pcommon.Timestamp(s.start))
		sp.SetEndTimestamp(pcommon.Timestamp(s.end))
		if s.error {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		_ = sp.Attributes().FromRaw(s.attrs)
		if prio[i] {
			sp.Attributes().PutInt(contract.AttrSamplingPriority, 1)
		}
		if m := s.mark; m != nil {
			sp.Attributes().PutStr(contract.AttrProbe, m.probe)
			if m.outcome != "" {
				sp.Attributes().PutStr(contract.AttrOutcome, m.outcome)
			}
			sp.Attributes().PutInt(contract.AttrDMaxNs, m.dmaxNs)
			sp.Attributes().PutInt(contract.AttrBins, m.bins)
			if m.late {
				sp.Attributes().PutBool(contract.AttrLate, true)
			}
		}
		tid, sid := idsOf(s.id)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.TraceState().FromRaw(s.tracestate)
	}
	return td
}

// newOracleRig starts the traces → metrics and logs → metrics connectors of
// cfg, of an ID of their own, on a clock set to t0 (Unix ns).
func newOracleRig(t *testing.T, cfg *Config, t0 int64) *startRig {
	r := &startRig{clk: coretest.NewClock(time.Unix(0, t0).UTC()), sink: new(consumertest.MetricsSink), tel: componenttest.NewTelemetry()}
	r.starts = r.clk.Starts
	t.Cleanup(func() { require.NoError(t, r.tel.Shutdown(context.Background())) })
	f := newFactory(collectorstate.New(), func(s *core.Settings) {
		s.Now, s.Ticks, s.StartTicks, s.Ticked = r.clk.Now, r.clk.C, r.starts, r.clk.Ticked
	})
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, t.Name())
	set.TelemetrySettings = r.tel.NewTelemetrySettings()
	var err error
	r.traces, err = f.connectorFactory().CreateTracesToMetrics(context.Background(), set, cfg, r.sink)
	require.NoError(t, err)
	r.logs, err = f.connectorFactory().CreateLogsToMetrics(context.Background(), set, cfg, r.sink)
	require.NoError(t, err)
	require.NoError(t, r.traces.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, r.logs.Start(context.Background(), componenttest.NewNopHost()))
	return r
}

// checkRun drives the connector through run and compares every window it
// emits with the reference.
func checkRun(t *testing.T, run oracleRun, cov *coverage) {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(run.cfg)))
	require.NoError(t, confmap.Validate(cfg))
	interval := cfg.Interval.Nanoseconds()
	lag := cfg.Lag.Nanoseconds()
	if lag == 0 {
		lag = interval
	}
	o := &oracle{interval: interval, lag: lag, probes: run.probes, maxCount: cfg.MaxAdjustedCount,
		windows: map[int64]map[string]*counts{}, tracked: map[uint64]*trackedStart{}, ended: map[uint64]int64{},
		results: map[string]int64{}}
	if o.maxCount == 0 {
		o.maxCount = 1024
	}
	if cfg.Histogram.Exponential != nil {
		o.expMaxSize = cfg.Histogram.Exponential.MaxSize
		if o.expMaxSize == 0 {
			o.expMaxSize = 160
		}
	}
	o.close(run.t0)

	r := newOracleRig(t, cfg, run.t0)
	ctx := context.Background()
	for _, st := range run.steps {
		// The clock moves only with a tick, which closes the windows due
		// and counts the timeouts due, as the timers would by then; the
		// start events and spans arrive after it.
		now := time.Unix(0, st.now).UTC()
		r.clk.Tick(now)
		o.close(st.now)
		r.expire(now)
		o.expire(st.now)
		require.NoError(t, r.logs.ConsumeLogs(ctx, startsOf(st)))
		for _, e := range st.starts {
			o.start(e, st.now)
		}
		// The timer counts at once the instances due when they arrive; a
		// tick handled twice (coretest.Clock) finds nothing more due then.
		r.expire(now)
		o.expire(st.now)
		require.NoError(t, r.traces.ConsumeTraces(ctx, tracesOf(st.spans, st.prio)))
		for i, s := range st.spans {
			o.add(s, st.prio[i], st.now)
		}
	}
	stats := r.traces.(*deltaqConnector).shared.obs.Stats()
	// The windows still open at shutdown are emitted then, with the
	// timeouts of start events due by then.
	r.shutdown(t)
	o.expire(run.steps[len(run.steps)-1].now)
	rd := newReader()
	rd.read(t, r.sink.AllMetrics())

	require.Equal(t, o.malformed, stats.Dropped[analysis.DropMalformed], "malformed")
	require.Equal(t, o.tooLate, stats.Dropped[analysis.DropTooLate], "too_late")
	require.Zero(t, stats.Dropped[analysis.DropTooEarly], "too_early")
	require.Equal(t, o.layoutMismatch, stats.Dropped[analysis.DropLayoutMismatch], "layout_mismatch")
	results := counterByAttr(t, r.tel, "start_events", "result")
	for _, res := range []string{"tracked", "after_end", "stale", "duplicate"} {
		require.Equal(t, o.results[res], results[res], "start events %s", res)
	}
	var late int64
	for _, n := range counterByAttr(t, r.tel, "late_spans", "probe") {
		late += n
	}
	require.Equal(t, o.late, late, "late spans")
	compareWindows(t, o, rd)
	cov.add(o, stats)
}

// coverage counts what the runs exercised, so that a change of the
// generator cannot leave a case untried unseen.
type coverage struct {
	malformed, tooLate, late, lateTimeouts, clamped, timeouts, failures, fractional, tracked, afterEnd, stale, exponential, layoutMismatch, qta int64
}

func (cov *coverage) add(o *oracle, stats analysis.Stats) {
	cov.exponential += o.expChecked
	cov.layoutMismatch += o.layoutMismatch
	cov.qta += o.qtaChecked
	cov.malformed += o.malformed
	cov.tooLate += o.tooLate
	cov.late += o.late
	cov.lateTimeouts += stats.LateTimeouts
	cov.clamped += stats.WeightClamped
	cov.tracked += o.results["tracked"]
	cov.afterEnd += o.results["after_end"]
	cov.stale += o.results["stale"]
	for _, w := range o.windows {
		for _, c := range w {
			cov.timeouts += c.timeout[1]
			cov.failures += c.failure[1]
			if c.success[0] != c.success[1] {
				cov.fractional++
			}
		}
	}

}

func compareWindows(t *testing.T, o *oracle, r *reader) {
	t.Helper()
	ks := make([]int64, 0, len(o.windows))
	for k := range o.windows {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		end := (k + 1) * o.interval
		for _, p := range o.probes {
			want := o.windows[k][p.name]
			if want == nil {
				continue
			}
			got := r.windows[end][p.name]
			where := fmt.Sprintf("probe %q window %d (end %s)", p.name, k, time.Unix(0, end).UTC().Format(time.RFC3339Nano))
			require.NotNil(t, got, "%s: not emitted", where)
			inRange(t, got.success, want.success, where+" success")
			inRange(t, got.timeout, want.timeout, where+" timeout")
			inRange(t, got.failure, want.failure, where+" failure")
			// The failure ratio is the window's intangible mass: an empty
			// window has none (README, "Windows").
			total := got.success + got.timeout + got.failure
			require.Equal(t, total > 0, got.hasRatio, "%s: a failure ratio for %d instances", where, total)
			if total > 0 {
				require.InDelta(t, float64(got.timeout+got.failure)/float64(total), got.ratio, 1e-12, "%s failure ratio", where)
			}
			checkQuantiles(t, want, got, where)
			checkCDF(t, p, want, got, where)
			if checkQTA(t, p, want, got, where) {
				o.qtaChecked++
			}
			if want.success[1] == 0 {
				continue
			}
			require.True(t, got.observed, "%s: no deltaq.observed", where)
			if o.expMaxSize > 0 {
				checkExponential(t, p, o.expMaxSize, want, got, where)
				o.expChecked++
			} else {
				checkExplicit(t, p, want, got, where)
			}
			tol := 1e-9 * (got.scale + want.sum[1])
			require.GreaterOrEqual(t, got.sum, want.sum[0]-tol, "%s sum", where)
			require.LessOrEqual(t, got.sum, want.sum[1]+tol, "%s sum", where)
		}
	}
	// Nothing emitted beyond the reference.
	for end, byProbe := range r.windows {
		k := end/o.interval - 1
		for name, e := range byProbe {
			if e.success == 0 && e.timeout == 0 && e.failure == 0 {
				continue
			}
			require.NotNil(t, o.windows[k][name], "probe %q window %d: emitted %+v, the reference has none", name, k, *e)
		}
	}
}

// checkExplicit compares deltaq.observed's explicit bounds, the bin edges
// w, 2w, …, dMax, and its counts (README, "Output").
func checkExplicit(t *testing.T, p oracleProbe, want *counts, got *emitted, where string) {
	t.Helper()
	require.Len(t, got.bins, p.bins+1, "%s: buckets", where)
	require.Len(t, got.bounds, p.bins, "%s: bounds", where)
	for i, b := range got.bounds {
		edge := p.dmax.Seconds() * float64(i+1) / float64(p.bins)
		require.InDelta(t, edge, b, edge*1e-9, "%s: bound %d", where, i)
	}
	for i, b := range want.bins {
		inRange(t, int64(got.bins[i]), b, fmt.Sprintf("%s bin %d", where, i))
	}
	require.Zero(t, got.bins[p.bins], "%s: the overflow bucket", where)
}

// expIndex is the index i of the exponential bucket (base^i, base^(i+1)]
// that holds v > 0 at scale, base = 2^(2^−scale) (OpenTelemetry metrics
// data model, "Exponential Histogram"); a v within a relative 1e-12 of an
// edge is on it.
func expIndex(v float64, scale int32) int32 {
	x := math.Log2(v) * math.Ldexp(1, int(scale))
	if r := math.Round(x); math.Abs(x-r) < 1e-9 {
		return int32(r) - 1
	}
	return int32(math.Ceil(x)) - 1
}

// checkExponential compares the exponential form of deltaq.observed: the
// finest scale, in [−4, 20], whose buckets from the first bin edge to dMax
// number at most max_size, and each bin's successes in the bucket of the
// bin's right edge (README, "Output").
func checkExponential(t *testing.T, p oracleProbe, maxSize int, want *counts, got *emitted, where string) {
	t.Helper()
	first, last := p.dmax.Seconds()/float64(p.bins), p.dmax.Seconds()
	scale := int32(20)
	for scale > -4 && expIndex(last, scale)-expIndex(first, scale)+1 > int32(maxSize) {
		scale--
	}
	require.Equal(t, scale, got.expScale, "%s: scale", where)
	require.Zero(t, got.expZero, "%s: zero count", where)
	lo, hi := map[int32]int64{}, map[int32]int64{}
	for i, b := range want.bins {
		k := expIndex(p.dmax.Seconds()*float64(i+1)/float64(p.bins), scale)
		lo[k] += b[0]
		hi[k] += b[1]
	}
	for k := range got.exp {
		if _, ok := lo[k]; !ok && got.exp[k] != 0 {
			t.Fatalf("%s: %d in exponential bucket %d, which holds no bin's right edge", where, got.exp[k], k)
		}
	}
	for k := range lo {
		inRange(t, int64(got.exp[k]), [2]int64{lo[k], hi[k]}, fmt.Sprintf("%s exponential bucket %d", where, k))
	}
}

// checkCDF compares a window's observed deltaq.cdf curve, when its counts
// are whole: at bin edges (those a whole number of nanoseconds) F(le) is
// the successes within le over all instances (README, "Output").
func checkCDF(t *testing.T, p oracleProbe, want *counts, got *emitted, where string) {
	t.Helper()
	total := want.success[0] + want.timeout[0] + want.failure[0]
	if total == 0 || want.success[0] != want.success[1] || want.timeout[0] != want.timeout[1] || want.failure[0] != want.failure[1] {
		return
	}
	require.NotEmpty(t, got.cdf, "%s: no observed deltaq.cdf", where)
	w := float64(p.dmax.Nanoseconds()) / float64(p.bins)
	for le, f := range got.cdf {
		k := int(math.Round(le*1e9/w)) - 1
		if k < 0 || k >= p.bins || p.dmax.Nanoseconds()*int64(k+1)%int64(p.bins) != 0 || math.Abs(float64(k+1)*w-le*1e9) > 1e-3*w {
			continue
		}
		var within int64
		for _, b := range want.bins[:k+1] {
			within += b[0]
		}
		require.InDelta(t, float64(within)/float64(total), f, 1e-9, "%s: F(%v)", where, le)
	}
}

// checkQTA compares a window's QTA verdict, when its counts are whole: it
// breaks the QTA when F(d) < p at a point, F(d) the successes within d
// over all instances, or when its failure ratio is above max_failure
// (README, "Output"; thesis 2.1.6). At the points' bin edges F is exact.
func checkQTA(t *testing.T, p oracleProbe, want *counts, got *emitted, where string) (checked bool) {
	t.Helper()
	total := want.success[0] + want.timeout[0] + want.failure[0]
	if len(p.qta) == 0 || total == 0 || want.success[0] != want.success[1] || want.timeout[0] != want.timeout[1] || want.failure[0] != want.failure[1] {
		return false
	}
	fail := float64(want.timeout[0]+want.failure[0]) / float64(total)
	if math.Abs(fail-p.maxFailure) < 1e-12 {
		return false // on the bound itself
	}
	broken := fail > p.maxFailure
	for _, q := range p.qta {
		var within int64
		for _, b := range want.bins[:q.k+1] {
			within += b[0]
		}
		f := float64(within) / float64(total)
		if math.Abs(f-q.p) < 1e-12 {
			return false
		}
		broken = broken || f < q.p
	}
	require.True(t, got.hasViolation, "%s: no QTA verdict", where)
	require.Equal(t, broken, got.violation == 1, "%s: QTA broken (failure ratio %v, points %+v)", where, fail, p.qta)
	return true
}

// defaultQuantiles are the q of deltaq.quantile by default (README,
// "Analysis options").
var defaultQuantiles = []float64{0.25, 0.5, 0.75, 0.9, 0.99}

// checkQuantiles compares a window's observed quantiles with its delays,
// when its counts are whole: the q-quantile of the improper CDF (successes
// at or below t over all instances) has a point exactly when q is at most
// the tangible mass (README, "Output"), and lies in the analysis bucket of
// the sample quantile, 1/64 of a power of two wide from 1.024 µs
// (docs/design.md, "The analysis resolution").
func checkQuantiles(t *testing.T, want *counts, got *emitted, where string) {
	t.Helper()
	if want.success[0] != want.success[1] || want.timeout[0] != want.timeout[1] || want.failure[0] != want.failure[1] {
		return
	}
	total := want.success[0] + want.timeout[0] + want.failure[0]
	ds := slices.Clone(want.delays)
	slices.SortFunc(ds, func(a, b weighted) int { return cmp.Compare(a.d, b.d) })
	for _, q := range defaultQuantiles {
		need := q * float64(total)
		v, ok := got.quantiles[q]
		if math.Abs(need-float64(want.success[0])) < 1e-9*need {
			continue // at the tangible mass itself: the last success, or none
		}
		require.Equal(t, need <= float64(want.success[0]), ok, "%s: a point for q %v (%d successes of %d)", where, q, want.success[0], total)
		if !ok {
			continue
		}
		// The smallest delay at which the count reaches need, and the
		// next one when it reaches it exactly there.
		var cum int64
		lo, hi := int64(-1), int64(-1)
		for i, w := range ds {
			cum += w.n
			if lo < 0 && float64(cum) >= need*(1-1e-12) {
				lo, hi = w.d, w.d
				if math.Abs(float64(cum)-need) <= 1e-9*need && i+1 < len(ds) {
					hi = ds[i+1].d
				}
			}
		}
		loS, hiS := float64(lo)/1e9, float64(hi)/1e9
		require.GreaterOrEqual(t, v, loS*(1-1.0/64)-1.1e-6, "%s: quantile %v", where, q)
		require.LessOrEqual(t, v, hiS*(1+1.0/64)+1.1e-6, "%s: quantile %v", where, q)
	}
}

func inRange(t *testing.T, got int64, want [2]int64, what string) {
	t.Helper()
	require.True(t, got >= want[0] && got <= want[1], "%s: got %d, want in [%d, %d]", what, got, want[0], want[1])
}

// The generator's choices: values a user might pick, edge values among them.
var (
	oracleIntervals = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, time.Second, 3 * time.Second, time.Hour}
	oracleDMaxes    = []time.Duration{time.Millisecond, 7 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second, 10 * time.Minute}
	oracleBins      = []int{1, 3, 10, 100, 1000}
	oracleNames     = []string{"p", "check out", "σ-probe ΔQ", "a/b:c"}
	oracleStates    = []string{"", "", "", "ot=th:0", "ot=th:8", "ot=th:c", "ot=th:fc", "ot=th:ffff", "ot=th:c;rv:01000000000000", "ot=th:c;rv:f0000000000000", "ot=th:8;rv:01", "ot=th:555556", "ot=th:aaaaab"}
)

// genRun draws a configuration and spans from seed.
func genRun(seed uint64) oracleRun {
	rng := rand.New(rand.NewPCG(seed, 0x0dd))
	pick := func(n int) int { return rng.IntN(n) }
	interval := oracleIntervals[pick(len(oracleIntervals))]
	lags := []time.Duration{0, interval / 2, interval, 2 * interval, 3*interval + interval/3}
	lag := lags[pick(len(lags))]
	run := oracleRun{cfg: map[string]any{"interval": interval.String(), "lag": lag.String()}}
	if interval > 10*time.Minute {
		// At least interval, and long enough that an unconfigured probe
		// is not forgotten between the steps (README, "Probes").
		run.cfg["probe_idle_timeout"] = "24h"
	}
	if pick(4) == 0 {
		run.cfg["histogram"] = map[string]any{"exponential": map[string]any{"max_size": []int{2, 7, 160, 10000}[pick(4)]}}
	}
	if lag == 0 {
		lag = interval
	}
	probes := map[string]any{}
	for i, name := range oracleNames[:1+pick(len(oracleNames))] {
		p := oracleProbe{name: name, dmax: oracleDMaxes[pick(len(oracleDMaxes))], bins: oracleBins[pick(len(oracleBins))],
			match: map[string]any{}}
		p.auto = pick(5) == 0
		if i > 0 && pick(3) == 0 {
			// A span name another probe selects too.
			p.match["span_name"] = oracleNames[0]
		}
		if pick(3) == 0 {
			p.match["service_name"] = "shop"
		}
		if pick(4) == 0 {
			p.match["span_kind"] = "server"
		}
		if pick(4) == 0 {
			p.match["attributes"] = map[string]any{"route": "/a"}
		}
		p.failCode = pick(3) == 0
		if !p.auto && pick(2) == 0 {
			p.maxFailure = []float64{0, 0.1, 0.5}[pick(3)]
			// Delays increasing, p non-decreasing and at most 1 −
			// max_failure (README, "Analysis options").
			// Points on bin edges a whole number of nanoseconds, where F is
			// exact; dMax is one.
			edge := func(k int) bool { return p.dmax.Nanoseconds()*int64(k+1)%int64(p.bins) == 0 }
			k1 := pick(p.bins)
			for !edge(k1) {
				k1++
			}
			p.qta = []qtaPoint{{k1, []float64{0.25, 0.5}[pick(2)]}}
			if k2 := k1 + 1 + pick(p.bins); k2 < p.bins && edge(k2) {
				p.qta = append(p.qta, qtaPoint{k2, 1 - p.maxFailure})
			}
		}
		probes[name] = p.entry()
		run.probes = append(run.probes, p)
	}
	if pick(2) == 0 {
		// A probe of spans a deltaq processor marked; configured, or its
		// layout that of its first instance.
		p := oracleProbe{name: "up ∂", dmax: oracleDMaxes[pick(len(oracleDMaxes))], bins: oracleBins[pick(len(oracleBins))], marked: true}
		if pick(2) == 0 {
			probes[p.name] = map[string]any{"dmax": p.dmax.String(), "bins": p.bins}
		}
		run.probes = append(run.probes, p)
	}
	run.cfg["probes"] = probes
	// The clock starts within a window, at a random place.
	run.t0 = coretest.T0.UnixNano() + int64(rng.Float64()*float64(interval))
	now := run.t0
	var id uint64
	nsteps := 6 + pick(10)
	run.steps = make([]oracleStep, nsteps)
	for i := range run.steps {
		now += int64(rng.Float64() * 1.5 * float64(interval))
		st := &run.steps[i]
		st.now, st.batch = now, pick(2) == 0
		for range pick(30) {
			id++
			s, prio := genSpan(rng, run.probes, now, interval, lag, id)
			if m := run.probes[len(run.probes)-1]; m.marked && (pick(3) == 0 || id == 1) {
				s = genMarked(rng, m, now, interval, lag, id)
			}
			send, to := i, st
			if s.mark == nil && s.start != 0 && s.end >= s.start && s.start <= now {
				// Its start event: before the span, with it, or after it;
				// the span held back some steps, or lost.
				e := oracleStart{probe: probeOf(run.probes, s, rng), tracestate: s.tracestate, service: s.service, id: id, start: s.start}
				switch pick(8) {
				case 0:
					st.starts = append(st.starts, e)
				case 1:
					st.starts = append(st.starts, e)
					send = i + 1 + pick(4)
				case 2:
					if i+1 < nsteps {
						run.steps[i+1].starts = append(run.steps[i+1].starts, e)
					}
				}
			}
			if send >= nsteps {
				continue
			}
			to = &run.steps[send]
			to.spans = append(to.spans, s)
			to.prio = append(to.prio, prio)
		}
	}
	return run
}

// genMarked draws a span of the marked probe m, as a deltaq processor
// writes it: a success, a failure, a timeout judged by m's dMax or
// another, or a late span. The first (id 1) is a success ending now, the
// instance whose layout an unconfigured probe takes.
func genMarked(rng *rand.Rand, m oracleProbe, now int64, interval, lag time.Duration, id uint64) oracleSpan {
	pick := func(n int) int { return rng.IntN(n) }
	dmax := m.dmax.Nanoseconds()
	mark := &processorMark{probe: m.name, dmaxNs: dmax, bins: int64(m.bins)}
	s := oracleSpan{name: "op-x", id: id, tracestate: oracleStates[pick(len(oracleStates))], mark: mark}
	d := []int64{0, dmax, dmax + 1, dmax / 3, 2 * dmax}[pick(5)]
	s.end = now - int64(rng.Float64()*float64(lag+2*interval))
	switch {
	case id == 1:
		d, s.end = dmax/2, now
	case pick(5) == 0:
		mark.outcome = contract.Failure
	case pick(4) == 0:
		mark.outcome = contract.Timeout
		mark.dmaxNs = []int64{dmax, dmax / 2, 2 * dmax}[pick(3)]
		d = max(d, mark.dmaxNs)
	case pick(10) == 0:
		mark.late = true
	}
	s.start = s.end - d
	return s
}

// probeOf returns the name of a probe whose match selects s, the one a
// start event names.
func probeOf(probes []oracleProbe, s oracleSpan, rng *rand.Rand) string {
	var names []string
	for _, p := range probes {
		if p.selects(s) {
			names = append(names, p.name)
		}
	}
	if len(names) == 0 {
		return probes[0].name
	}
	return names[rng.IntN(len(names))]
}

// genSpan draws a span ending up to lag and two intervals before now, or a
// little after it, of a delay around a probe's dMax or bin edges.
func genSpan(rng *rand.Rand, probes []oracleProbe, now int64, interval, lag time.Duration, id uint64) (oracleSpan, bool) {
	pick := func(n int) int { return rng.IntN(n) }
	p := probes[pick(len(probes))]
	s := oracleSpan{name: p.name, id: id, attrs: map[string]any{}}
	if n, ok := p.match["span_name"].(string); ok {
		s.name = n
	}
	if pick(10) == 0 {
		s.name = "other"
	}
	s.service = []string{"shop", "shop", "", "bank", "Ωmega svc"}[pick(5)]
	s.kind = []string{"server", "server", "client", "internal"}[pick(4)]
	if pick(4) != 0 {
		s.attrs["route"] = []string{"/a", "/a", "/b"}[pick(3)]
	}
	if pick(4) == 0 {
		s.attrs["code"] = int64([]int{200, 499, 500, 503}[pick(4)])
	}
	s.error = pick(4) == 0
	s.tracestate = oracleStates[pick(len(oracleStates))]
	dmax := p.dmax.Nanoseconds()
	w := dmax / int64(p.bins)
	var d int64
	switch pick(8) {
	case 0:
		d = 0
	case 1:
		d = dmax
	case 2:
		d = dmax + 1
	case 3:
		d = w * int64(1+pick(p.bins)) // on a bin edge
		if d < int64(time.Second)/2 || d >= 2*int64(time.Second) {
			// Or a nanosecond off: beyond a relative 1e-9 below 0.5 s,
			// within it from 2 s (not at the tolerance itself).
			d += int64(pick(3) - 1)
		}
	case 4:
		d = dmax + int64(rng.Float64()*float64(3*dmax))
	default:
		d = int64(rng.Float64() * float64(dmax))
	}
	back := int64(rng.Float64() * float64(lag+2*interval))
	if pick(6) == 0 {
		back = -int64(rng.Float64() * float64(interval) / 2)
	}
	s.end = now - back
	s.start = s.end - d
	switch pick(40) {
	case 0:
		s.start = 0
	case 1:
		s.end = 0
	case 2:
		s.start = s.end + 1 + int64(pick(1000)) // ends before it starts
	}
	return s, pick(20) == 0
}

// TestMatchedProbesAgreeWithReference: over seeded random configurations
// (intervals of 100 ms to 1 h, lags, dMax of 1 ms to 10 min and dmax: auto,
// 1 to 1000 bins, probe names with spaces and non-ASCII letters, matches
// on service, kind and attributes, failure rules), spans (late, out of
// order, sampled, at and around dMax and bin edges, of zero duration,
// ending before they start), start events and spans a processor marked,
// every window the connector emits agrees with the reference counting
// above.
func TestMatchedProbesAgreeWithReference(t *testing.T) {
	var cov coverage
	for seed := range uint64(60) {
		run := genRun(seed)
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { checkRun(t, run, &cov) })
	}
	for what, n := range map[string]int64{"malformed spans": cov.malformed, "too_late spans": cov.tooLate, "late spans": cov.late,
		"late timeouts": cov.lateTimeouts, "clamped counts": cov.clamped, "timeouts": cov.timeouts, "failures": cov.failures,
		"fractional counts": cov.fractional, "tracked starts": cov.tracked, "after_end starts": cov.afterEnd, "stale starts": cov.stale,
		"exponential windows": cov.exponential, "layout mismatches": cov.layoutMismatch,
		"QTA verdicts": cov.qta} {
		assert.Positive(t, n, "the runs have no %s", what)
	}
}

// TestObservedQuantilesAtDMax: a window's observed quantiles are those of
// its successes over all its instances (README, "Output"), also where
// the delays lie in the analysis bucket that straddles dMax (7 ms, in
// [6.95, 7.01) ms): 100 spans of exactly dMax, or just below it, are 100
// successes, and every quantile has a point (the 0.9 and 0.99 points were
// missing); 100 spans of dMax + 1 ns are timeouts, and no quantile has a
// point (the 0.25 point had one).
func TestObservedQuantilesAtDMax(t *testing.T) {
	dmax := 7 * time.Millisecond
	for _, d := range []time.Duration{dmax, dmax - 10*time.Microsecond, dmax + 1} {
		t.Run(d.String(), func(t *testing.T) {
			t0 := coretest.T0.UnixNano()
			end := t0 + int64(500*time.Millisecond)
			st := oracleStep{now: t0 + int64(600*time.Millisecond)}
			for i := range 100 {
				st.spans = append(st.spans, oracleSpan{name: "p", start: end - int64(d), end: end, id: uint64(i + 1)})
				st.prio = append(st.prio, false)
			}
			run := oracleRun{
				cfg:    map[string]any{"probes": map[string]any{"p": map[string]any{"dmax": dmax.String(), "bins": 10, "match": map[string]any{}}}},
				probes: []oracleProbe{{name: "p", dmax: dmax, bins: 10}},
				steps:  []oracleStep{st, {now: t0 + int64(2100*time.Millisecond)}},
				t0:     t0,
			}
			checkRun(t, run, new(coverage))
		})
	}
}

// TestQoOLatencyAtDMax: the Quality of Outcome percentiles are read over
// the completed instances as the quantiles are (README, "Quality of
// Outcome"), so 200 successes of 6.99 ms under a dMax of 7 ms have a 99th
// percentile of 6.99 ms within its analysis bucket, and a latency
// component of 100·(1 − (6.99 − 2)/(8 − 2)) = 16.8 against rop 2 ms and
// cpup 8 ms, though the bucket of 6.99 ms straddles dMax.
func TestQoOLatencyAtDMax(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"p": map[string]any{
		"dmax": "7ms", "bins": 10, "match": map[string]any{},
		"qoo": map[string]any{
			"rop":  map[string]any{"points": []any{map[string]any{"p": 0.99, "delay": "2ms"}}, "max_failure": 0},
			"cpup": map[string]any{"points": []any{map[string]any{"p": 0.99, "delay": "8ms"}}, "max_failure": 1},
		}}}})))
	require.NoError(t, confmap.Validate(cfg))
	t0 := coretest.T0.UnixNano()
	r := newOracleRig(t, cfg, t0)
	spans := make([]span, 200)
	for i := range spans {
		spans[i] = span{name: "p", dur: 6990 * time.Microsecond}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // closes [0, 1s)
	r.shutdown(t)
	latency := map[string]float64{}
	for _, md := range r.sink.AllMetrics() {
		for _, m := range md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
			if m.Name() != contract.MetricQoOLatency {
				continue
			}
			for _, dp := range m.Gauge().DataPoints().All() {
				if series, _ := dp.Attributes().Get(contract.AttrSeries); dp.Timestamp() == pcommon.NewTimestampFromTime(at(time.Second)) {
					latency[series.Str()] = dp.DoubleValue()
				}
			}
		}
	}
	// Within the bucket of 6.99 ms, under 1/64 of it wide.
	bucket := 6.99 / 64
	assert.InDelta(t, 100*(1-(6.99-2)/(8-2)), latency[contract.SeriesObserved], 100*bucket/6)
}

// TestAutoDMaxFollowsTheRule: a probe with dmax: auto chooses, from its
// first complete sample, the smallest 1-2-5 step at or above twice the
// sample's p99.9 as its sketch reads it, taken with at least 10 instances
// at or beyond it (README, "dmax: auto"), within dmax_min and dmax_max; it moves to it at the next
// window boundary, and the spans of the windows after are judged by it: a
// span of exactly the new dMax is a success, one a nanosecond longer a
// timeout, in the window of start + dMax. Seeded samples of lognormal
// delays over several decades.
func TestAutoDMaxFollowsTheRule(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 0xa0))
		median := math.Pow(10, -4+3*rng.Float64()) // 0.1 ms to 100 ms
		delays := make([]time.Duration, 150)
		for i := range delays {
			delays[i] = time.Duration(median * math.Exp(rng.NormFloat64()) * 1e9)
		}
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { checkAutoDMax(t, delays) })
	}
	// A p99.9 of 24 ms, read as 25.2 ms (the upper edge of its bucket
	// [23.1, 25.2) ms), chooses 100 ms (README's example).
	same := slices.Repeat([]time.Duration{24 * time.Millisecond}, 150)
	t.Run("24ms", func(t *testing.T) { checkAutoDMax(t, same) })
}

func checkAutoDMax(t *testing.T, delays []time.Duration) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, cfg.Unmarshal(confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"p": map[string]any{
		"dmax": "auto", "bins": 50, "match": map[string]any{}, "dmax_min": "1ms", "dmax_max": "10s",
		"dmax_sample": 100, "dmax_period": "1s"}}})))
	require.NoError(t, confmap.Validate(cfg))
	r := newOracleRig(t, cfg, at(time.Second).UnixNano())
	spans := make([]span, len(delays))
	for i, d := range delays {
		spans[i] = span{name: "p", dur: d}
	}
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(1500*time.Millisecond, spans...)))
	r.clk.Tick(at(2 * time.Second)) // the sample is complete: the choice
	sorted := slices.Clone(delays)
	slices.Sort(sorted)
	// The p99.9 at rank min(⌈0.999·n⌉, n − 9), read at the upper edge of
	// its bucket of the sketch: each power of two [2ᵉ, 2ᵉ⁺¹) ns in 8
	// buckets of 2ᵉ⁻³ (README of the deltaq processor, "dmax: auto").
	rank := min(int(math.Ceil(0.999*float64(len(sorted)))), len(sorted)-9)
	p999 := sorted[rank-1]
	width := time.Duration(1) << max(bits.Len64(uint64(p999))-1-3, 0)
	tail := (p999/width + 1) * width
	want := time.Millisecond // dmax_min
	for _, step := range oneTwoFive(time.Millisecond, 10*time.Second) {
		want = step
		if step >= 2*tail {
			break
		}
	}
	// The spans of window [2 s, 3 s), judged by the dMax in force.
	const end = 2500 * time.Millisecond
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), matchedTraces(end,
		span{name: "p", dur: want / 2}, span{name: "p", dur: want}, span{name: "p", dur: want + 1}, span{name: "p", dur: 3 * want})))
	r.clk.Tick(at(4 * time.Second)) // closes [2 s, 3 s)
	r.shutdown(t)
	rd := newReader()
	rd.read(t, r.sink.AllMetrics())
	got := rd.windows[at(3*time.Second).UnixNano()]["p"]
	require.NotNil(t, got, "window [2 s, 3 s)")
	require.NotEmpty(t, got.bounds)
	dmax := time.Duration(math.Round(got.bounds[len(got.bounds)-1] * 1e9))
	assert.Equal(t, want, dmax, "the sample's p99.9 is %v, its tail %v", p999, tail)
	if p999 == 24*time.Millisecond {
		assert.Equal(t, 100*time.Millisecond, dmax)
	}
	// Timeouts end at start + dMax: that of the span of dMax + 1 ns at
	// 2.5 s − 1 ns, that of the span of 3·dMax in [2 s, 3 s) only when
	// dMax ≤ 250 ms.
	wantTimeouts := int64(1)
	if want <= 250*time.Millisecond {
		wantTimeouts++
	}
	assert.Equal(t, int64(2), got.success, "dMax/2 and dMax are successes")
	assert.Equal(t, wantTimeouts, got.timeout, "dMax + 1 ns and 3·dMax are timeouts, in the window of start + dMax")
}

// oneTwoFive returns the 1-2-5 steps from lo to hi.
func oneTwoFive(lo, hi time.Duration) []time.Duration {
	var steps []time.Duration
	for d := lo; d <= hi; d *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if d*m <= hi {
				steps = append(steps, d*m)
			}
		}
	}
	return steps
}
