// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"testing"
	"time"
)

// handQoOTest is a promtool test of the rules of a QoO objective (score at
// least 80 in 0.9 of the windows; tier critical 5× over 5m/1m, for 12s;
// windows of 10 s) over score series written by hand, as remote write
// brings them: one sample per window at its end, none for a window whose
// score was withheld, each collector's series apart (instance), a new
// deltaq_service list a new series. Expected values worked out by hand:
//
//   - c1: 100 from 0 s to 390 s, 80 at 400 s (good: at least 80), 79.9
//     from 410 s to 600 s (bad).
//   - c2: 100 from 0 s to 290 s under deltaq_service "shop", withheld at
//     120 s; then 50 (bad) from 300 s to 600 s under "shop,web", the old
//     series' last sample still within the lookback.
//   - distractors the rules must not read: c2's calculated score and
//     another probe's, both 0.
//
// The subquery over 1m, a millisecond short (qooRange), reads the six steps
// of 10 s of (t − 1m, t] under Prometheus 2 and 3 alike (with the range 1m
// itself, Prometheus 2 read seven, t − 1m among them, and counted 13 at
// 3m, 14 at 5m):
//
//   - 170s: c1 6 windows, c2 5 (120 s withheld): 11 scored, none bad;
//   - 5m: c1 6, c2 5 (250–290 s, old series) + 1 (300 s, new): 12, 1 bad
//     (c2's old sample at 290 s is not read again at 300 s);
//   - 7m: c1 6 (410, 420 s bad), c2 6 bad: 8/12.
//
// Over 5m, the sums of the 1m counts at the 30 evaluations u of
// (t − 5m, t]: 12 windows at every u from 180 s, the bad ones
// min(6, (u − 300 s)/10 s + 1) of c2 from 300 s and min(6, (u − 410 s)/10 s
// + 1) of c1 from 410 s. At 510 s: c2 1 + … + 5 + 17 × 6 = 117, c1 15 +
// 6 × 6 = 51, 168/360 = 0.467, below half; at 530 s: 129 + 63 = 192/360 =
// 0.533, above, with the 1m ratio above half from 410 s: active from 530 s
// (at 520 s exactly half, 180/360), firing at the first evaluation 12 s
// later, 550 s. Checked at 510 s (nothing) and 570 s (firing).
const handQoOTest = `rule_files: [rules.yml]
evaluation_interval: 10s
group_eval_order: [deltaq-slo-sli, deltaq-slo-budget, deltaq-slo-alerts]
tests:
  - interval: 10s
    input_series:
      - series: 'deltaq_qoo_score_percent{job="j", instance="c1", deltaq_probe="api.v1-get", deltaq_series="observed", deltaq_service="shop"}'
        values: '100x39 80 79.9x19'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c2", deltaq_probe="api.v1-get", deltaq_series="observed", deltaq_service="shop"}'
        values: '100x11 _ 100x16'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c2", deltaq_probe="api.v1-get", deltaq_series="observed", deltaq_service="shop,web"}'
        values: '_x30 50x30'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c2", deltaq_probe="api.v1-get", deltaq_series="calculated", deltaq_service="shop,web"}'
        values: '0x60'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c2", deltaq_probe="other", deltaq_series="observed"}'
        values: '0x60'
    promql_expr_test:
      - expr: 'deltaq:slo_events:rate1m * 60'
        eval_time: 170s
        exp_samples: [{labels: '{job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80"}', value: 11}]
      - expr: 'deltaq:slo_errors:rate1m * 60'
        eval_time: 170s
        exp_samples: [{labels: '{job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80"}', value: 0}]
      - expr: 'deltaq:slo_events:rate1m * 60'
        eval_time: 5m
        exp_samples: [{labels: '{job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80"}', value: 12}]
      - expr: 'deltaq:slo_errors:rate1m * 60'
        eval_time: 5m
        exp_samples: [{labels: '{job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate1m - 8/12) < bool 1e-12'
        eval_time: 7m
        exp_samples: [{labels: '{job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80"}', value: 1}]
      - expr: 'ALERTS'
        eval_time: 510s
        exp_samples: []
      - expr: 'ALERTS'
        eval_time: 570s
        exp_samples:
          - labels: 'ALERTS{alertname="DeltaQQoOBudgetBurn", alertstate="firing", severity="critical", job="j", deltaq_probe="api.v1-get", deltaq_slo="qoo-80", deltaq_qoo_min="80", deltaq_slo_window="5m/1m", deltaq_slo_burn_rate="5"}'
            value: 1
`

// TestQoORulesHandComputed runs handQoOTest on the rules of its plan.
func TestQoORulesHandComputed(t *testing.T) {
	tiers, err := ParseTiers("critical:5:5m:1m")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "api.v1-get", QoO: &QoOObjective{MinScore: 80, Target: 0.9}, Interval: 10 * time.Second}},
		Options{Period: 24 * time.Hour, Tiers: tiers, Interval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	promtoolTestRules(t, p.Rules("a test"), []byte(handQoOTest))
}
