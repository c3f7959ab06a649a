// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// qooMetrics are the Quality of Outcome gauges of one window: the score and
// its components, each with a point per scored ΔQ (deltaq.series observed
// or calculated).
type qooMetrics struct {
	score, latency, loss, rate pmetric.Metric
}

// newQoOMetrics appends the Quality of Outcome gauges to ms.
func newQoOMetrics(ms pmetric.MetricSlice) qooMetrics {
	return qooMetrics{
		score:   newGauge(ms, contract.MetricQoOScore, contract.UnitQoO, "Quality of Outcome of the observed or calculated ΔQ against the probe's qoo requirement: the least of its components, 0 unacceptable to 100 optimal."),
		latency: newGauge(ms, contract.MetricQoOLatency, contract.UnitQoO, "Latency component of the Quality of Outcome, 0 to 100: the least over the requirement's percentiles of the completed instances, each placed linearly from 100 at its rop delay to 0 at its cpup delay."),
		loss:    newGauge(ms, contract.MetricQoOLoss, contract.UnitQoO, "Loss component of the Quality of Outcome, 0 to 100: the ratio of failures and timeouts placed linearly from 100 at rop's max_failure to 0 at cpup's (a score, not the ratio)."),
		rate:    newGauge(ms, contract.MetricQoORate, contract.UnitQoO, "Rate component of the Quality of Outcome: 100 at or above the requirement's min_rate of completed instances per second, else 0."),
	}
}

// qoo appends the probe's Quality of Outcome points: for each of its
// observed and calculated ΔQs that has a score (not withheld for too few
// instances), the score and the components it has. A window without
// instances that the observer did not see (builder.unseen: the windows
// open at its start reach back its lag, before it began) has none: its
// rate of 0 says nothing of the system, and scored 0 against a min_rate it
// showed an outage at every start, a bad slice of a QoO objective.
func (b *builder) qoo(s *metricSet, p *analysis.ProbeResult, id probeID, end pcommon.Timestamp) {
	if p.QoO == nil || b.unseen && p.Counts.Total() == 0 {
		return
	}
	for _, sc := range []struct {
		series string
		score  *analysis.QoOScore
	}{{contract.SeriesObserved, &p.QoO.Observed}, {contract.SeriesCalculated, &p.QoO.Calculated}} {
		if !sc.score.OK {
			continue
		}
		q := &sc.score.QoO
		gauge(s.qoo.score.Gauge().DataPoints(), id, end, q.Score, contract.AttrSeries, sc.series, "", "")
		if q.HasLoss {
			gauge(s.qoo.loss.Gauge().DataPoints(), id, end, q.Loss, contract.AttrSeries, sc.series, "", "")
		}
		if q.HasLatency {
			gauge(s.qoo.latency.Gauge().DataPoints(), id, end, q.Latency, contract.AttrSeries, sc.series, "", "")
		}
		if q.HasRate {
			gauge(s.qoo.rate.Gauge().DataPoints(), id, end, q.Rate, contract.AttrSeries, sc.series, "", "")
		}
	}
}

// qooWithheld returns the number of scores of the window withheld for too
// few instances, observed and calculated together.
func qooWithheld(r *analysis.Result) int64 {
	n := int64(0)
	for i := range r.Probes {
		if q := r.Probes[i].QoO; q != nil {
			if q.Observed.Withheld {
				n++
			}
			if q.Calculated.Withheld {
				n++
			}
		}
	}
	return n
}
