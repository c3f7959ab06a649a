// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"math"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Loss components of demoBatches' slow windows, where a tenth of the jobs
// time out ("Quality of Outcome", draft-ietf-ippm-qoo-10, section 3.3:
// 100 · (1 − (loss − ROP) / (CPUP − ROP))): job, ROP 0.02 and CPUP 0.2,
// 100 · (1 − 0.08/0.18) = 55.56; worker_2, ROP 0.01 and CPUP 0.2,
// 100 · (1 − 0.09/0.19) = 52.63.
const (
	demoSlowJobLoss     = 100 * (1 - 0.08/0.18)
	demoSlowWorker2Loss = 100 * (1 - 0.09/0.19)
)

// TestScopeDecodesTheObserversQoO feeds the real builders' output of the
// demo workload (demoBatches) to the terminal scope's decoder window by
// window and checks each probe's Quality of Outcome against the windows'
// known instances: 100 at normal load (every percentile within ROP, no
// loss); in the slow windows job's score is its loss component, observed
// and calculated alike (the calculated ΔQ loses what worker_2 loses), and
// worker_2's is its latency, below its loss component; in the lull job's
// scores are withheld (5 completed instances, fewer than the 10 the 90th
// percentile needs) and worker_2's is 0 from its rate (5 a second, below
// min_rate 20) with no latency read; worker_1, without a requirement, has
// none.
func TestScopeDecodesTheObserversQoO(t *testing.T) {
	s := newScopeState(DefaultLimits())
	for w, b := range demoBatches(t) {
		s.addMetrics(b.metrics)
		s.addLogs(b.logs)
		job, w2 := s.probes["job"].qoo, s.probes["worker_2"].qoo
		if q := s.probes["worker_1"].qoo; q != nil {
			t.Errorf("window %d: worker_1 has no requirement, got %+v", w, q)
		}
		switch {
		case w >= demoSlowFrom && w < demoSlowTo:
			for _, series := range qooSeries {
				checkScore(t, w, "job "+series, job[series], demoSlowJobLoss, "loss")
			}
			r := w2[seriesObserved]
			checkScore(t, w, "worker_2", r, r.latency.v, "latency")
			if !(r.latency.v < demoSlowWorker2Loss) || math.Abs(r.loss.v-demoSlowWorker2Loss) > 1e-6 || r.rate != (scopeReading{100, true}) {
				t.Errorf("window %d: worker_2 components %+v, want latency below loss %.4g, rate 100", w, r, demoSlowWorker2Loss)
			}
		case w == demoLull:
			for _, series := range qooSeries {
				if r := job[series]; !r.withheld || r.scored() {
					t.Errorf("window %d: job %s %+v, want withheld", w, series, r)
				}
			}
			r := w2[seriesObserved]
			checkScore(t, w, "worker_2", r, 0, "rate")
			if r.latency.ok || r.loss != (scopeReading{100, true}) {
				t.Errorf("window %d: worker_2 %+v, want no latency (too few to read) and loss 100", w, r)
			}
			assertContainsAll(t, "frame", renderScope(s, DefaultFrame),
				"QoO: observed withheld (too few instances) │ calculated withheld (too few instances)\n",
				"QoO: observed 0 set by rate (loss 100, rate 0)\n")
		default:
			for _, series := range qooSeries {
				checkScore(t, w, "job "+series, job[series], 100)
			}
			checkScore(t, w, "worker_2", w2[seriesObserved], 100)
		}
		if _, ok := w2[seriesCalculated]; ok {
			t.Errorf("window %d: worker_2 is not calculated, got a calculated score", w)
		}
	}
	if s.malformed != 0 {
		t.Errorf("%d malformed points in the builders' output", s.malformed)
	}
	assertContainsAll(t, "frame", renderScope(s, DefaultFrame),
		"QoO: observed 100 (latency 100, loss 100) │ calculated 100 (latency 100, loss 100)\n",
		"QoO: observed 100 (latency 100, loss 100, rate 100)\n")
}

// checkScore checks a reading's score and the components that set it.
func checkScore(t *testing.T, w int, what string, r qooReading, score float64, setBy ...string) {
	t.Helper()
	if !r.scored() || math.Abs(r.score.v-score) > 1e-6 || !slices.Equal(r.setBy(), setBy) {
		t.Errorf("window %d: %s %+v (set by %v), want %.4g set by %v", w, what, r, r.setBy(), score, setBy)
	}
}

// TestNextQoO: how a probe's readings follow its batches, also when a
// window comes in several requests (max_request_bytes): its ΔQ first and
// its score later is a score, not a withheld one; a later window with the
// ΔQ and no score is withheld; one without the ΔQ has nothing to score; a
// probe never scored has no readings.
func TestNextQoO(t *testing.T) {
	score := func(v float64) map[string]*qooReading {
		return map[string]*qooReading{seriesObserved: {score: scopeReading{v, true}, loss: scopeReading{v, true}}}
	}
	obs := map[string]bool{seriesObserved: true}
	if q := nextQoO(nil, nil, obs, false); q != nil {
		t.Errorf("never scored: %v, want none", q)
	}
	q := nextQoO(nil, score(70), obs, false)
	if r := q[seriesObserved]; !r.scored() || r.score.v != 70 || !slices.Equal(r.setBy(), []string{"loss"}) {
		t.Fatalf("first score: %+v", r)
	}
	// The next window: its ΔQ in one request, its score in the next.
	q = nextQoO(q, nil, obs, false)
	if r := q[seriesObserved]; !r.withheld {
		t.Errorf("a later window's ΔQ without a score: %+v, want withheld for now", r)
	}
	q = nextQoO(q, score(40), nil, true)
	if r := q[seriesObserved]; r.withheld || r.score.v != 40 {
		t.Errorf("its score in the next request: %+v, want 40", r)
	}
	// More of the same window (its calculated ΔQ, say) keeps the score.
	q = nextQoO(q, nil, obs, true)
	if r := q[seriesObserved]; r.withheld || r.score.v != 40 {
		t.Errorf("more of a scored window: %+v, want 40 kept", r)
	}
	// A later window without the ΔQ: nothing to score, still a scored series.
	q = nextQoO(q, nil, nil, false)
	if r, ok := q[seriesObserved]; !ok || r.withheld || r.scored() {
		t.Errorf("a window without the ΔQ: %+v (%v), want nothing to score", r, ok)
	}
	if line := qooLine(q); line != "QoO: observed -" {
		t.Errorf("its line %q", line)
	}
}

// TestScopeQoOMalformed: a score outside [0, 100] or of a series other
// than observed and calculated is malformed and ignored.
func TestScopeQoOMalformed(t *testing.T) {
	p := newExporterPayload()
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(metricQoOScore)
	dps := m.SetEmptyGauge().DataPoints()
	for _, pt := range []struct {
		series string
		v      float64
	}{{seriesObserved, 101}, {seriesObserved, -1}, {seriesMean, 50}, {"", 50}, {seriesCalculated, 50}} {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
		dp.Attributes().PutStr("deltaq.probe", "api")
		if pt.series != "" {
			dp.Attributes().PutStr(attrSeries, pt.series)
		}
		dp.SetDoubleValue(pt.v)
	}
	s := newScopeState(DefaultLimits())
	s.addMetrics(p.md)
	if s.malformed != 4 {
		t.Errorf("malformed = %d, want 4", s.malformed)
	}
	if q := s.probes["api"].qoo; len(q) != 1 || q[seriesCalculated].score != (scopeReading{50, true}) {
		t.Errorf("readings %+v, want calculated 50 alone", q)
	}
}
