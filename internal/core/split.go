// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// splitter cuts a window's output into OTLP requests of at most max_request_bytes
// each, so that one large window (many probes, many bins, cdf_points 0, a
// long probe name on every point) never becomes a request that the endpoint
// refuses as a whole: a gRPC server refuses a message above its receive
// limit (4 MiB by default) with ResourceExhausted, an HTTP server with 413.
//
// The pieces are cut along resource, scope, metric and data-point (or log
// record) boundaries, in order: a metric whose points do not fit in what is
// left of a piece is continued in the next, under a copy of its name, unit,
// description and type, and of the resource and scope. A single data point
// or log record that does not fit in a piece of its own is dropped and
// counted: no request could carry it.
//
// Sizes are the protobuf encoding of the export request (what
// pmetric.ProtoMarshaler.MetricsSize and plog.ProtoMarshaler.LogsSize
// report, the body of OTLP/HTTP and the message of OTLP/gRPC). A piece's
// size is bounded from above while it is filled (limit is max_request_bytes):
// a length-delimited field of n bytes encodes as a one-byte tag (every field
// number on the way is below 16), varint(n) and n, and since n ≤ limit,
// len(varint(n)) ≤ len(varint(limit)). Each open resource, scope and metric
// is charged its encoding without points plus 2·(1 + len(varint(limit))):
// its own tag and length, and for a metric the growth of its data
// container's length; each point is charged exactly. A piece therefore never
// exceeds limit, and is cut only when the next point does not fit in what
// the bound leaves (a few dozen bytes of it are reserved).
//
// Data points and log records are moved, never copied: a metric that fits
// whole is moved as one slice; one that is cut costs one small allocation
// per point moved. The output that fits in one request, every window of a
// usual configuration, is passed on as it is after one size computation.
type splitter struct {
	// costs is scratch: the encoded cost (tag, length and content) of each
	// data point of one metric, or each record of one scope.
	costs []int
	msz   pmetric.ProtoMarshaler
	lsz   plog.ProtoMarshaler
	// hint is an upper bound of the encoded size of the metrics md, when
	// their builder knows one (builder.metrics): within the limit, they
	// are passed on without their size being computed.
	hint sizeHint
}

// sizeHint is an upper bound of the encoded size of md.
type sizeHint struct {
	md    pmetric.Metrics
	bound int
}

// varintLen is the length of the protobuf varint encoding of x ≥ 0.
func varintLen(x int) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// fieldCost is the encoded size of a length-delimited field of n bytes with
// a one-byte tag.
func fieldCost(n int) int { return 1 + varintLen(n) + n }

// piece is what the metrics and logs walkers share: the request being
// filled, with the bound of its size, and the packing of one source
// container's items (a metric's data points, a scope's log records) into it.
type piece struct {
	s            *splitter
	limit, slack int
	open         bool // a request is being filled
	size         int  // upper bound of its encoded size
	items        int  // data points or log records in it
	dropped      int  // items that fit in no piece of their own
}

// container is the source container being packed by piece.pack, as the
// walker of one signal sees it.
type container interface {
	// itemSize is the encoded size of item i, without its tag and length.
	itemSize(i int) int
	// openShells makes sure the piece, opened if none is, ends with the
	// shells of the container (resource, scope and, for metrics, metric).
	openShells()
	// shellCost is what the open shells are charged: what they cost again
	// in a fresh piece.
	shellCost() int
	// moveAll moves every item into the open shell; moveRun items i to j-1.
	moveAll()
	moveRun(i, j int)
	// flush sends the piece if it holds any item.
	flush()
}

// pack moves the n items of c into pieces: all at once when they fit the
// current piece, else as many as fit, piece after piece; an item that fits
// no piece on its own is dropped and counted.
func (p *piece) pack(c container, n int) {
	if n == 0 {
		return
	}
	costs := p.s.costs[:0]
	total := 0
	for i := range n {
		cost := fieldCost(c.itemSize(i))
		costs = append(costs, cost)
		total += cost
	}
	p.s.costs = costs
	c.openShells()
	if p.size+total <= p.limit {
		// The whole container fits: move its slice, no item is allocated.
		c.moveAll()
		p.size += total
		p.items += n
		return
	}
	for i := 0; i < n; {
		// The run of items from i that fits in this piece.
		j, size := i, p.size
		for j < n && size+costs[j] <= p.limit {
			size += costs[j]
			j++
		}
		if j > i {
			c.moveRun(i, j)
			p.size = size
			p.items += j - i
			i = j
			continue
		}
		// Item i does not fit here. In a fresh piece it would cost the
		// shells plus itself; if even that is too much it is dropped.
		if c.shellCost()+costs[i] > p.limit {
			p.dropped++
			i++
			continue
		}
		c.flush()
		c.openShells()
	}
}

// begin opens a piece if none is open, and reports whether it did.
func (p *piece) begin() bool {
	if p.open {
		return false
	}
	p.open, p.size, p.items = true, 0, 0
	return true
}

// end closes the piece, and reports whether it holds any item to send.
func (p *piece) end() bool {
	open := p.open
	p.open = false
	return open && p.items > 0
}

// metrics hands md to send, in pieces of at most limit bytes when it is
// larger; limit ≤ 0 means no bound. md is consumed: its points are moved into
// the pieces. It returns the number of data points dropped because one alone
// exceeds limit.
func (s *splitter) metrics(md pmetric.Metrics, limit int, send func(pmetric.Metrics)) (dropped int) {
	hint := s.hint
	s.hint = sizeHint{}
	if limit <= 0 || (hint.md == md && hint.bound <= limit) || s.msz.MetricsSize(md) <= limit {
		send(md)
		return 0
	}
	p := metricsPiece{piece: piece{s: s, limit: limit, slack: 2 * (1 + varintLen(limit))}, send: send}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		p.inRM = rms.At(i)
		sms := p.inRM.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			p.inSM = sms.At(j)
			ms := p.inSM.Metrics()
			for k := 0; k < ms.Len(); k++ {
				p.inM = ms.At(k)
				p.pack(&p, dataPointCount(p.inM))
			}
		}
	}
	p.flush()
	return p.dropped
}

// metricsPiece is the request being filled, a container for the metric
// being packed. The shells (resource, scope, metric without points)
// currently open in it are the last of their slices.
type metricsPiece struct {
	piece
	send func(pmetric.Metrics)
	md   pmetric.Metrics

	// inRM, inSM and inM are the source metric being packed and its scope
	// and resource.
	inRM pmetric.ResourceMetrics
	inSM pmetric.ScopeMetrics
	inM  pmetric.Metric

	// srcRM and srcSM are the source resource and scope of the open
	// shells rm, sm and m; *Cost are the costs charged for the shells.
	srcRM              pmetric.ResourceMetrics
	srcSM              pmetric.ScopeMetrics
	rm                 pmetric.ResourceMetrics
	sm                 pmetric.ScopeMetrics
	m                  pmetric.Metric
	rmCost, smCost     int
	mCost              int
	hasRM, hasSM, hasM bool
}

func (p *metricsPiece) itemSize(i int) int { return dataPointSize(&p.s.msz, p.inM, i) }
func (p *metricsPiece) shellCost() int     { return p.rmCost + p.smCost + p.mCost }
func (p *metricsPiece) moveAll()           { moveAllDataPoints(p.inM, p.m) }

func (p *metricsPiece) moveRun(i, j int) {
	ensureDataPoints(p.m, j-i)
	for k := i; k < j; k++ {
		moveDataPoint(p.inM, k, p.m)
	}
}

// openShells makes sure the piece ends with shells of inRM, inSM and inM.
func (p *metricsPiece) openShells() {
	if p.begin() {
		p.md = pmetric.NewMetrics()
		p.hasRM, p.hasSM, p.hasM = false, false, false
	}
	if rm := p.inRM; !p.hasRM || p.srcRM != rm {
		p.dropEmptyShells()
		p.rm = p.md.ResourceMetrics().AppendEmpty()
		p.rm.SetSchemaUrl(rm.SchemaUrl())
		rm.Resource().CopyTo(p.rm.Resource())
		p.srcRM, p.hasRM, p.hasSM = rm, true, false
		p.rmCost = p.s.msz.ResourceMetricsSize(p.rm) + p.slack
		p.size += p.rmCost
	}
	if sm := p.inSM; !p.hasSM || p.srcSM != sm {
		p.dropEmptyShells()
		p.sm = p.rm.ScopeMetrics().AppendEmpty()
		p.sm.SetSchemaUrl(sm.SchemaUrl())
		sm.Scope().CopyTo(p.sm.Scope())
		p.srcSM, p.hasSM = sm, true
		p.smCost = p.s.msz.ScopeMetricsSize(p.sm) + p.slack
		p.size += p.smCost
	}
	p.dropEmptyShells()
	p.m = p.sm.Metrics().AppendEmpty()
	metricShell(p.inM, p.m)
	p.hasM = true
	p.mCost = p.s.msz.MetricSize(p.m) + p.slack
	p.size += p.mCost
}

// dropEmptyShells removes the open metric shell when it received no point
// (its first point did not fit, or every point was dropped).
func (p *metricsPiece) dropEmptyShells() {
	if p.hasM && dataPointCount(p.m) == 0 {
		ms := p.sm.Metrics()
		ms.RemoveIf(func(m pmetric.Metric) bool { return dataPointCount(m) == 0 })
		p.size -= p.mCost
		p.hasM = false
	}
}

// flush sends the piece if it holds any point, without the scope and
// resource shells left empty by dropped points.
func (p *metricsPiece) flush() {
	if !p.end() {
		return
	}
	p.dropEmptyShells()
	p.md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool { return sm.Metrics().Len() == 0 })
		return rm.ScopeMetrics().Len() == 0
	})
	p.send(p.md)
}

// metricShell copies everything of src but its data points into dst.
func metricShell(src, dst pmetric.Metric) {
	dst.SetName(src.Name())
	dst.SetDescription(src.Description())
	dst.SetUnit(src.Unit())
	src.Metadata().CopyTo(dst.Metadata())
	switch src.Type() {
	case pmetric.MetricTypeGauge:
		dst.SetEmptyGauge()
	case pmetric.MetricTypeSum:
		d := dst.SetEmptySum()
		d.SetAggregationTemporality(src.Sum().AggregationTemporality())
		d.SetIsMonotonic(src.Sum().IsMonotonic())
	case pmetric.MetricTypeHistogram:
		dst.SetEmptyHistogram().SetAggregationTemporality(src.Histogram().AggregationTemporality())
	case pmetric.MetricTypeExponentialHistogram:
		dst.SetEmptyExponentialHistogram().SetAggregationTemporality(src.ExponentialHistogram().AggregationTemporality())
	case pmetric.MetricTypeSummary:
		dst.SetEmptySummary()
	}
}

// dataPointSize is the encoded size of data point i of m.
func dataPointSize(sz *pmetric.ProtoMarshaler, m pmetric.Metric, i int) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return sz.NumberDataPointSize(m.Gauge().DataPoints().At(i))
	case pmetric.MetricTypeSum:
		return sz.NumberDataPointSize(m.Sum().DataPoints().At(i))
	case pmetric.MetricTypeHistogram:
		return sz.HistogramDataPointSize(m.Histogram().DataPoints().At(i))
	case pmetric.MetricTypeExponentialHistogram:
		return sz.ExponentialHistogramDataPointSize(m.ExponentialHistogram().DataPoints().At(i))
	case pmetric.MetricTypeSummary:
		return sz.SummaryDataPointSize(m.Summary().DataPoints().At(i))
	}
	return 0
}

// ensureDataPoints makes room for n more data points in m.
func ensureDataPoints(m pmetric.Metric, n int) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		dps.EnsureCapacity(dps.Len() + n)
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		dps.EnsureCapacity(dps.Len() + n)
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		dps.EnsureCapacity(dps.Len() + n)
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		dps.EnsureCapacity(dps.Len() + n)
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		dps.EnsureCapacity(dps.Len() + n)
	}
}

// moveDataPoint moves data point i of src to the end of dst (same type).
func moveDataPoint(src pmetric.Metric, i int, dst pmetric.Metric) {
	switch src.Type() {
	case pmetric.MetricTypeGauge:
		src.Gauge().DataPoints().At(i).MoveTo(dst.Gauge().DataPoints().AppendEmpty())
	case pmetric.MetricTypeSum:
		src.Sum().DataPoints().At(i).MoveTo(dst.Sum().DataPoints().AppendEmpty())
	case pmetric.MetricTypeHistogram:
		src.Histogram().DataPoints().At(i).MoveTo(dst.Histogram().DataPoints().AppendEmpty())
	case pmetric.MetricTypeExponentialHistogram:
		src.ExponentialHistogram().DataPoints().At(i).MoveTo(dst.ExponentialHistogram().DataPoints().AppendEmpty())
	case pmetric.MetricTypeSummary:
		src.Summary().DataPoints().At(i).MoveTo(dst.Summary().DataPoints().AppendEmpty())
	}
}

// moveAllDataPoints moves every data point of src to the end of dst (same
// type); into an empty dst this hands over the slice itself.
func moveAllDataPoints(src, dst pmetric.Metric) {
	switch src.Type() {
	case pmetric.MetricTypeGauge:
		src.Gauge().DataPoints().MoveAndAppendTo(dst.Gauge().DataPoints())
	case pmetric.MetricTypeSum:
		src.Sum().DataPoints().MoveAndAppendTo(dst.Sum().DataPoints())
	case pmetric.MetricTypeHistogram:
		src.Histogram().DataPoints().MoveAndAppendTo(dst.Histogram().DataPoints())
	case pmetric.MetricTypeExponentialHistogram:
		src.ExponentialHistogram().DataPoints().MoveAndAppendTo(dst.ExponentialHistogram().DataPoints())
	case pmetric.MetricTypeSummary:
		src.Summary().DataPoints().MoveAndAppendTo(dst.Summary().DataPoints())
	}
}

// logs hands ld to send, in pieces of at most limit bytes when it is larger;
// limit ≤ 0 means no bound. ld is consumed. It returns the number of log
// records dropped because one alone exceeds limit.
func (s *splitter) logs(ld plog.Logs, limit int, send func(plog.Logs)) (dropped int) {
	if limit <= 0 || s.lsz.LogsSize(ld) <= limit {
		send(ld)
		return 0
	}
	lp := logPieces{piece: piece{s: s, limit: limit, slack: 2 * (1 + varintLen(limit))}, send: send}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		lp.inRL = rls.At(i)
		sls := lp.inRL.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lp.inSL = sls.At(j)
			lp.pack(&lp, lp.inSL.LogRecords().Len())
		}
	}
	lp.flush()
	return lp.dropped
}

// logPieces is one run of splitter.logs: the piece being filled (out), a
// container for the scope being packed (inSL, of resource inRL), and the
// resource and scope it is filling.
type logPieces struct {
	piece
	send func(plog.Logs)

	out            plog.Logs
	inRL           plog.ResourceLogs
	inSL           plog.ScopeLogs
	curRL          plog.ResourceLogs
	curSL          plog.ScopeLogs
	srcRL          plog.ResourceLogs
	srcSL          plog.ScopeLogs
	hasRL, hasSL   bool
	rlCost, slCost int
}

func (lp *logPieces) itemSize(i int) int { return lp.s.lsz.LogRecordSize(lp.inSL.LogRecords().At(i)) }
func (lp *logPieces) shellCost() int     { return lp.rlCost + lp.slCost }
func (lp *logPieces) moveAll()           { lp.inSL.LogRecords().MoveAndAppendTo(lp.curSL.LogRecords()) }

func (lp *logPieces) moveRun(i, j int) {
	recs, dst := lp.inSL.LogRecords(), lp.curSL.LogRecords()
	dst.EnsureCapacity(dst.Len() + j - i)
	for r := i; r < j; r++ {
		recs.At(r).MoveTo(dst.AppendEmpty())
	}
}

// flush sends the piece being filled, if it holds a record.
func (lp *logPieces) flush() {
	if !lp.end() {
		return
	}
	// Drop the shells that received nothing: the last scope opened whose
	// first record did not fit, or scopes whose records were all dropped.
	lp.out.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
		rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool { return sl.LogRecords().Len() == 0 })
		return rl.ScopeLogs().Len() == 0
	})
	lp.send(lp.out)
}

// openShells makes the piece's current resource and scope copies of inRL
// and inSL, opening a piece and appending shells as needed, and charges
// their empty sizes plus the length-prefix slack.
func (lp *logPieces) openShells() {
	if lp.begin() {
		lp.out = plog.NewLogs()
		lp.hasRL, lp.hasSL = false, false
	}
	if rl := lp.inRL; !lp.hasRL || lp.srcRL != rl {
		lp.curRL = lp.out.ResourceLogs().AppendEmpty()
		lp.curRL.SetSchemaUrl(rl.SchemaUrl())
		rl.Resource().CopyTo(lp.curRL.Resource())
		lp.srcRL, lp.hasRL, lp.hasSL = rl, true, false
		lp.rlCost = lp.s.lsz.ResourceLogsSize(lp.curRL) + lp.slack
		lp.size += lp.rlCost
	}
	if sl := lp.inSL; !lp.hasSL || lp.srcSL != sl {
		lp.curSL = lp.curRL.ScopeLogs().AppendEmpty()
		lp.curSL.SetSchemaUrl(sl.SchemaUrl())
		sl.Scope().CopyTo(lp.curSL.Scope())
		lp.srcSL, lp.hasSL = sl, true
		lp.slCost = lp.s.lsz.ScopeLogsSize(lp.curSL) + lp.slack
		lp.size += lp.slCost
	}
}
