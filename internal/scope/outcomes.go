// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

// The outcome counts of a window. The connector sends deltaq.outcomes as a
// cumulative sum, instances since its stream's start; both views show beside
// a window its own counts, the rise since the window before it, and the
// totals as such, with their start.

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// outcomeCount is one outcome kind of a probe: the total last sent, since
// the stream's start, at the end of the window that sent it, and the total
// at the end of the window before that one when the scope received it in
// the same stream.
type outcomeCount struct {
	seen  bool
	total float64   // instances since start
	start time.Time // the stream's start; zero when the point had none
	at    time.Time // the timestamp of total: its window's end
	// base is the total at the end of the window before at's, known when
	// hasBase: the scope received that window of the same stream, or the
	// stream started after it.
	base    float64
	hasBase bool
	// step is the shortest time between the ends of two windows of the
	// stream the scope received one after the other, the connector's
	// interval once two adjacent windows came; 0 before.
	step time.Duration
}

// startTime is a point's start timestamp, zero when it has none.
func startTime(dp pmetric.NumberDataPoint) time.Time {
	if dp.StartTimestamp() == 0 {
		return time.Time{}
	}
	return dp.StartTimestamp().AsTime()
}

// next returns the counts after a point of total v, of the stream started
// at start, at window end at. A point of an earlier window than the last
// one changes nothing; one of the same window replaces its total; one of a
// later window makes the last total its base, when it is of the same
// stream and no window was lost between them: a window ending half an
// interval (step) or more after the one expected is preceded by windows the
// scope did not receive, whose instances the rise counts too. A stream that started again (a new start, or a total below the
// last) is counted from zero when it started at or after the last window's
// end, as the connector starts it at a window's start; else the window's
// own counts are not known.
func (c outcomeCount) next(v float64, start, at time.Time) outcomeCount {
	switch {
	case !c.seen:
		return outcomeCount{seen: true, total: v, start: start, at: at}
	case at.Before(c.at):
		return c
	case at.Equal(c.at):
		c.total, c.start = v, start
		c.hasBase = c.hasBase && v >= c.base
		return c
	}
	n := outcomeCount{seen: true, total: v, start: start, at: at}
	switch d := at.Sub(c.at); {
	case start.Equal(c.start) && v >= c.total && c.step > 0 && 2*d >= 3*c.step:
		n.step = c.step
	case start.Equal(c.start) && v >= c.total:
		n.base, n.hasBase = c.total, true
		n.step = d
		if c.step > 0 {
			n.step = min(c.step, d)
		}
	case !start.IsZero() && !start.Before(c.at):
		n.hasBase = true
	}
	return n
}

// inWindow returns the instances of the window ending at end: the rise of
// the total since the window before it. ok is false when the counts are of
// another window (the window sent none of this kind) or the window before
// it is unknown.
func (c outcomeCount) inWindow(end time.Time) (n float64, ok bool) {
	if !c.seen || !c.hasBase || !c.at.Equal(end) {
		return 0, false
	}
	return c.total - c.base, true
}

// windowOutcomes are a probe's outcome counts as the views show them: the
// window's own, by kind (those known), and the totals, by kind, since the
// stream's start (zero when not sent).
type windowOutcomes struct {
	window map[string]float64
	totals map[string]float64
	since  time.Time
}

// outcomesAt returns the outcome counts shown for the window ending at end.
func outcomesAt(counts map[string]outcomeCount, end time.Time) windowOutcomes {
	o := windowOutcomes{window: map[string]float64{}, totals: map[string]float64{}}
	for kind, c := range counts {
		if !c.seen {
			continue
		}
		o.totals[kind] = c.total
		if n, ok := c.inWindow(end); ok {
			o.window[kind] = n
		}
		if c.start.After(o.since) {
			o.since = c.start
		}
	}
	return o
}
