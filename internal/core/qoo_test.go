// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// qooPoints returns the points of a Quality of Outcome gauge by probe and
// series.
func qooPoints(h *harness, name string) map[string]float64 {
	out := map[string]float64{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != name {
				return
			}
			if m.Unit() != contract.UnitQoO || m.Type() != pmetric.MetricTypeGauge {
				h.t.Errorf("%s: unit %q, type %v; want %%, a gauge", name, m.Unit(), m.Type())
			}
			dps := m.Gauge().DataPoints()
			for i := range dps.Len() {
				p, _ := dps.At(i).Attributes().Get(contract.AttrProbe)
				s, _ := dps.At(i).Attributes().Get(contract.AttrSeries)
				out[p.Str()+"/"+s.Str()] = dps.At(i).DoubleValue()
			}
		})
	}
	return out
}

// TestQoOOutput: a window's Quality of Outcome goes out as deltaq.qoo.score
// and its components, per probe and series. job's instances take 21, 22,
// …, 40 ms (one a bin), so the median of its completed instances is 30 ms
// and against ROP {50 %, 20 ms}, CPUP {50 %, 40 ms} it scores 50
// ("Quality of Outcome", draft-ietf-ippm-qoo-10, section 3.3), within the
// analysis resolution; one failure in 21 scores the loss
// 1 − (1/21 − 0.01)/(0.1 − 0.01) = 58.2. The diagram's job = a -> b has
// a calculated score too, without a rate. Probe a asks for a 99th
// percentile, which 20 instances cannot give: no point, and the withheld
// score is counted in the self-telemetry.
func TestQoOOutput(t *testing.T) {
	const dmax = 100 * time.Millisecond
	job := analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(20)}}, MaxFailure: 0.01},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(40)}}, MaxFailure: 0.1},
		MinRate: 10,
	}
	cfg := testConfig()
	cfg.Diagram = "job = a -> b;"
	cfg.Probes = map[string]analysis.ProbeConfig{
		"job": {DMax: dmax, Bins: 100, QoO: job},
		"a": {DMax: dmax, Bins: 100, QoO: analysis.QoOConfig{
			ROP:  analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.99, Delay: ms(20)}}},
			CPUP: analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.99, Delay: ms(40)}}, MaxFailure: 1},
		}},
		"b": {DMax: dmax, Bins: 100},
	}
	h := newHarness(t, cfg, at(time.Second))
	var specs []span
	for i := range 20 {
		end := ms(100 + 10*float64(i))
		specs = append(specs,
			span{probe: "job", outcome: contract.Success, end: end, delay: ms(21 + float64(i)), dmax: dmax, bins: 100},
			span{probe: "a", outcome: contract.Success, end: end, delay: ms(5.25 + 0.5*float64(i)), dmax: dmax, bins: 100},
			span{probe: "b", outcome: contract.Success, end: end, delay: ms(15.25 + 0.5*float64(i)), dmax: dmax, bins: 100})
	}
	specs = append(specs, span{probe: "job", outcome: contract.Failure, end: ms(500), delay: ms(5), dmax: dmax, bins: 100})
	h.consume(specs...)
	h.obs.tick(at(2 * time.Second))

	score, latency := qooPoints(h, contract.MetricQoOScore), qooPoints(h, contract.MetricQoOLatency)
	loss, rate := qooPoints(h, contract.MetricQoOLoss), qooPoints(h, contract.MetricQoORate)
	wantLoss := 100 * (1 - (1.0/21-0.01)/(0.1-0.01))
	assert.InDelta(t, 50, latency["job/observed"], 2, "observed latency component")
	assert.InDelta(t, wantLoss, loss["job/observed"], 1e-6, "observed loss component")
	assert.Equal(t, 100.0, rate["job/observed"], "20 completed a second against min_rate 10")
	assert.Equal(t, math.Min(latency["job/observed"], wantLoss), score["job/observed"], "the least component")
	// The calculated ΔQ, of stages spread evenly over 5–15 ms and 15–25 ms,
	// is symmetric about 30 ms, its median; it has no loss and no rate.
	assert.InDelta(t, 50, score["job/calculated"], 2.5, "calculated score")
	assert.Equal(t, 100.0, loss["job/calculated"])
	assert.NotContains(t, rate, "job/calculated", "a rate is counted, not composed")
	for _, m := range []map[string]float64{score, latency, loss, rate} {
		assert.NotContains(t, m, "a/observed", "20 instances cannot give a 99th percentile")
		assert.NotContains(t, m, "b/observed", "b has no requirement")
	}
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_qoo_scores_withheld", ""), "a's score, withheld and counted")
}

// TestQoOOutputEmptyWindow: a window without an instance of a probe whose
// requirement has a min_rate scores 0 on its rate alone ("Quality of
// Outcome", draft-ietf-ippm-qoo-10, section 3.3.4: below the minimum
// throughput the score is 0), with no latency or loss point (nothing to
// read them from): an outage shows. Without a min_rate there is no score.
func TestQoOOutputEmptyWindow(t *testing.T) {
	const dmax = 100 * time.Millisecond
	req := analysis.QoOConfig{
		ROP:  analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(20)}}, MaxFailure: 0.01},
		CPUP: analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(40)}}, MaxFailure: 0.1},
	}
	withRate := req
	withRate.MinRate = 10
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{
		"job":   {DMax: dmax, Bins: 100, QoO: withRate},
		"other": {DMax: dmax, Bins: 100, QoO: req},
	}
	h := newHarness(t, cfg, at(time.Second))
	h.consume(span{probe: "job", outcome: contract.Success, end: ms(100), delay: ms(10), dmax: dmax, bins: 100},
		span{probe: "other", outcome: contract.Success, end: ms(100), delay: ms(10), dmax: dmax, bins: 100})
	h.obs.tick(at(2 * time.Second))
	h.metrics.Reset()
	h.obs.tick(at(3 * time.Second))

	score, latency := qooPoints(h, contract.MetricQoOScore), qooPoints(h, contract.MetricQoOLatency)
	loss, rate := qooPoints(h, contract.MetricQoOLoss), qooPoints(h, contract.MetricQoORate)
	assert.Equal(t, map[string]float64{"job/observed": 0}, score, "the empty window's scores")
	assert.Equal(t, map[string]float64{"job/observed": 0}, rate, "no instance: a rate of 0, below min_rate")
	assert.Empty(t, latency, "nothing completed: no latency")
	assert.Empty(t, loss, "nothing counted: no loss")
}

// TestQoONoScoreForAWindowBeforeTheStart: the windows open at an
// observer's start reach back its lag, so the first to close may have
// ended before the observer began: it saw none of it, and a window without
// instances there has no QoO score, where it scored 0 against a min_rate
// (an outage at every start, a bad slice of a QoO objective). Such a window
// with instances (spans that ended before the start and came after), and
// an empty window after the start, keep their scores.
func TestQoONoScoreForAWindowBeforeTheStart(t *testing.T) {
	const dmax = 100 * time.Millisecond
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"job": {DMax: dmax, Bins: 100, QoO: analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(20)}}, MaxFailure: 0.01},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(40)}}, MaxFailure: 0.1},
		MinRate: 1,
	}}}
	// 20 successes of 5 ms ending in [from, from + 100 ms).
	burst := func(h *harness, from time.Duration) {
		for i := range 20 {
			h.consume(span{probe: "job", outcome: contract.Success, end: from + time.Duration(i)*5*time.Millisecond, delay: ms(5), dmax: dmax, bins: 100})
		}
	}
	var h *harness
	scores := func(tick time.Duration) map[string]float64 {
		h.metrics.Reset()
		h.obs.tick(at(tick))
		return qooPoints(h, contract.MetricQoOScore)
	}
	// Started at 10.9 s: windows [9 s, 10 s) and [10 s, 11 s) are open.
	h = newHarness(t, cfg, at(10900*time.Millisecond))
	assert.Empty(t, scores(11*time.Second), "[9 s, 10 s): ended before the start, empty")
	burst(h, 10900*time.Millisecond)
	burst(h, 11500*time.Millisecond)
	assert.Equal(t, map[string]float64{"job/observed": 100}, scores(12*time.Second), "[10 s, 11 s): the start is in it")
	assert.Equal(t, map[string]float64{"job/observed": 100}, scores(13*time.Second), "[11 s, 12 s)")
	assert.Equal(t, map[string]float64{"job/observed": 0}, scores(14*time.Second), "[12 s, 13 s): empty, after the start")

	// A window before the start that holds instances keeps its score.
	h = newHarness(t, cfg, at(10900*time.Millisecond))
	burst(h, 9500*time.Millisecond)
	assert.Equal(t, map[string]float64{"job/observed": 100}, scores(11*time.Second))
}

// TestQoOComponentDescriptions: each component's point is a score from 0
// to 100, and its description (Prometheus's HELP beside
// deltaq_qoo_loss_percent) says so. The loss component's said "the ratio
// of failures and timeouts": beside a unit of % its 75 for 1 failure in 50
// read as a loss of 75 %, where it is 2 % scored against rop's
// max_failure 1 % and cpup's 5 %: 1 − (0.02 − 0.01)/(0.05 − 0.01) = 0.75
// ("Quality of Outcome", draft-ietf-ippm-qoo-10, section 3.3.3).
func TestQoOComponentDescriptions(t *testing.T) {
	const dmax = 100 * time.Millisecond
	cfg := testConfig()
	cfg.Probes = map[string]analysis.ProbeConfig{"job": {DMax: dmax, Bins: 100, QoO: analysis.QoOConfig{
		ROP:     analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(20)}}, MaxFailure: 0.01},
		CPUP:    analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: ms(40)}}, MaxFailure: 0.05},
		MinRate: 1,
	}}}
	h := newHarness(t, cfg, at(time.Second))
	for i := range 49 {
		h.consume(span{probe: "job", outcome: contract.Success, end: ms(100 + 10*float64(i)), delay: ms(10), dmax: dmax, bins: 100})
	}
	h.consume(span{probe: "job", outcome: contract.Failure, end: ms(700), delay: ms(5), dmax: dmax, bins: 100})
	h.obs.tick(at(2 * time.Second))
	assert.InDelta(t, 75, qooPoints(h, contract.MetricQoOLoss)["job/observed"], 1e-9, "2 % lost against 1 % and 5 %")

	descriptions := map[string]string{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) { descriptions[m.Name()] = m.Description() })
	}
	for name, says := range map[string][]string{
		contract.MetricQoOScore:   {"0 unacceptable to 100 optimal"},
		contract.MetricQoOLatency: {"0 to 100", "rop delay", "cpup delay"},
		contract.MetricQoOLoss:    {"0 to 100", "rop's max_failure", "cpup's"},
		contract.MetricQoORate:    {"100", "min_rate", "else 0"},
	} {
		d, ok := descriptions[name]
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		for _, s := range says {
			assert.Contains(t, d, s, "%s's description", name)
		}
	}
}
