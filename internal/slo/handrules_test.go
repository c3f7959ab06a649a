// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// handRulesTest is a promtool test of the rules of handPlan over series
// written by hand, with every expected value worked out by hand (below),
// not by the model the generated tests (ruletests.go) share with the rules.
//
// Probes, series every minute for 70 minutes, job j:
//
//   - alpha (bins of 2 ms up to 200 ms; QTA 40 ms: 0.5, 100 ms: 0.9,
//     max_failure 0.05) from two collectors. c1: 60 instances a minute, 40
//     within 40 ms, 55 within 100 ms, 57 successes, 3 timeouts; its
//     deltaq_service changes from "shop" to "shop,web" at minute 40 (new
//     series, counting from that window); from the minute ending at 46
//     every instance times out (60 timeouts a minute). c2: 20 successes a
//     minute, all within 40 ms; it restarts at minute 30 (its series
//     start again from that window's counts: a counter reset).
//   - beta (log-linear buckets 1 ms … 10 ms, 20 ms … 100 ms, 200 ms … 1 s;
//     QTA 10 ms: 0.5, 30 ms: 0.9, max_failure 0.01), c1 only: 100 a minute,
//     60 within 10 ms, 95 within 30 ms, 99 successes, 1 failure.
//   - gamma: no instance at all (every series flat at 0).
//
// Tiers critical 14.4× over 10m/2m (for 24s) and warning 2× over 30m/5m
// (for 1m). Expected:
//
//   - 20m, rate5m (5 whole minutes): alpha 80 instances a minute (c1 60 +
//     c2 20): within-40ms error ratio 1 − (40+20)/80 = 0.25, within-100ms
//     1 − (55+20)/80 = 0.0625, success 3/80 = 0.0375; events 80/60 a
//     second, within-40ms errors 20/60 (both over the shortest window, 2m).
//     Beta: 1 − 60/100 = 0.4,
//     1 − 95/100 = 0.05, 1/100 = 0.01.
//   - 32m, the window holding c2's restart: the same (rate() counts a reset
//     series' value as its increase: c2's first window, 20, is counted);
//     events at 31m, whose 2m window holds the reset: 80/60.
//   - 42m, the window holding c1's change of service. Prometheus 2: the
//     old series has samples at 37–39 m, which rate() extrapolates by half
//     an interval to the window's end: 2.5 minutes of c1; the new ones at
//     40–42 m, with one minute's counts at 40 m and two minutes' increase,
//     which rate() extrapolates toward zero by one minute (sampled interval
//     × first value / increase = 2 m × 1/2, below the 3 m to the window's
//     start): 3 minutes of c1. c2: 5 minutes. Within-40ms: instances
//     5.5×60 + 5×20 = 430, within 40 ms 5.5×40 + 5×20 = 320: 110/430;
//     success: 5.5×3/430 = 16.5/430. Prometheus 3 reads (37m, 42m]: the old
//     series' samples at 38–39 m, extrapolated by a minute to the start and
//     half a one to the end, 2.5 minutes; and it extrapolates the new
//     series by half an interval toward the start, the 3 m being more than
//     1.1 intervals, before it limits that to zero, where Prometheus 2.42
//     limited first (the minute) and then found it within 1.1 intervals:
//     2.5 minutes. 5 minutes of c1, 0.25 and 0.0375, as before the change.
//     The check takes either version's value, exactly.
//   - 45m: the window holds the new series alone: 0.25 again.
//   - alpha's burn from 45m on: success's error ratio over a whole burn
//     window is 60/80 = 0.75 > 14.4 × 0.05 = 0.72. Over 10m at 53m30s,
//     (43m30s, 53m30s] (no sample at its start again), the window holds the
//     increase of 44–45 m before the burn: (8×60 + 3)/720 = 0.67083, below.
//     At 54m Prometheus 2's range [44m, 54m] still holds it, (9×60 + 3)/800
//     = 0.67875, and Prometheus 3's (44m, 54m] not: pending from 54m30s
//     (2) or 54m (3), firing from 55m or 54m30s (for 24s). The warning
//     tiers: success 2 × 0.05 = 0.1, within-100ms 2 × 0.1 = 0.2 (its burn
//     ratio 60/80 = 0.75 and 5/80 before); both pass over 30m by 51m30s and
//     fire by 52m30s.
//     within-40ms (0.75 against 1.8 × 0.5 = 0.9) and within-100ms's
//     critical tier (9 × 0.1 = 0.9) never fire, nor does any alert of beta
//     (its burn rates 0.8×, 0.5×, 1×) or of gamma, whose windows have no
//     instances: its two objectives' error ratios are NaN (0/0), which
//     compares false, their events and errors 0 a second, and their
//     budget left NaN (docs/runbook.md, "Error budget burn").
//   - Budget left of beta within-30ms at 70m: every sample of its error
//     ratio over the period is 0.05: 1 − 0.05/0.1 = 0.5.
const handRulesTest = `rule_files: [rules.yml]
evaluation_interval: 30s
group_eval_order: [deltaq-slo-sli, deltaq-slo-budget, deltaq-slo-alerts]
tests:
  - interval: 1m
    input_series:
      # alpha, c1, service shop until 39m
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", le="0.04"}', values: '0+40x39'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", le="0.1"}', values: '0+55x39'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", le="+Inf"}', values: '0+57x39'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", deltaq_outcome="success"}', values: '0+57x39'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", deltaq_outcome="timeout"}', values: '0+3x39'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop", deltaq_outcome="failure"}', values: '0x39'}
      # alpha, c1, service shop,web from 40m; every instance a timeout from the minute ending at 46m
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", le="0.04"}', values: '_x40 40+40x5 240x24'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", le="0.1"}', values: '_x40 55+55x5 330x24'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", le="+Inf"}', values: '_x40 57+57x5 342x24'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", deltaq_outcome="success"}', values: '_x40 57+57x5 342x24'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", deltaq_outcome="timeout"}', values: '_x40 3+3x5 78+60x24'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="alpha", deltaq_service="shop,web", deltaq_outcome="failure"}', values: '_x40 0x30'}
      # alpha, c2, restarted at 30m
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c2", deltaq_probe="alpha", le="0.04"}', values: '0+20x29 20+20x40'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c2", deltaq_probe="alpha", le="0.1"}', values: '0+20x29 20+20x40'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c2", deltaq_probe="alpha", le="+Inf"}', values: '0+20x29 20+20x40'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c2", deltaq_probe="alpha", deltaq_outcome="success"}', values: '0+20x29 20+20x40'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c2", deltaq_probe="alpha", deltaq_outcome="timeout"}', values: '0x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c2", deltaq_probe="alpha", deltaq_outcome="failure"}', values: '0x70'}
      # beta, c1
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="beta", le="0.01"}', values: '0+60x70'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="beta", le="0.03"}', values: '0+95x70'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="beta", le="+Inf"}', values: '0+99x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="beta", deltaq_outcome="success"}', values: '0+99x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="beta", deltaq_outcome="timeout"}', values: '0x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="beta", deltaq_outcome="failure"}', values: '0+1x70'}
      # gamma, c1: no instance
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="gamma", le="0.5"}', values: '0x70'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="gamma", le="+Inf"}', values: '0x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="gamma", deltaq_outcome="success"}', values: '0x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="gamma", deltaq_outcome="timeout"}', values: '0x70'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="gamma", deltaq_outcome="failure"}', values: '0x70'}
    promql_expr_test:
` + handChecks

// handChecks are the checks of handRulesTest: each the distance of a
// recorded value from the hand-computed one, below 1e-9.
const handChecks = `      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 0.25) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-100ms"} - 0.0625) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-100ms", deltaq_le="0.1"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="success"} - 0.0375) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="success"}', value: 1}]
      - expr: 'abs(deltaq:slo_events:rate2m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 80/60) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: 'abs(deltaq:slo_errors:rate2m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 20/60) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="beta", deltaq_slo="within-10ms"} - 0.4) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="beta", deltaq_slo="within-10ms", deltaq_le="0.01"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="beta", deltaq_slo="within-30ms"} - 0.05) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="beta", deltaq_slo="within-30ms", deltaq_le="0.03"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="beta", deltaq_slo="success"} - 0.01) < bool 1e-9'
        eval_time: 20m
        exp_samples: [{labels: '{job="j", deltaq_probe="beta", deltaq_slo="success"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 0.25) < bool 1e-9'
        eval_time: 32m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: 'abs(deltaq:slo_events:rate2m{deltaq_probe="alpha", deltaq_slo="success"} - 80/60) < bool 1e-9'
        eval_time: 31m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="success"}', value: 1}]
      - expr: '(abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 110/430) < bool 1e-9) + (abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 0.25) < bool 1e-9)'
        eval_time: 42m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: '(abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="success"} - 16.5/430) < bool 1e-9) + (abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="success"} - 0.0375) < bool 1e-9)'
        eval_time: 42m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="success"}', value: 1}]
      - expr: 'abs(deltaq:slo_error_ratio:rate5m{deltaq_probe="alpha", deltaq_slo="within-40ms"} - 0.25) < bool 1e-9'
        eval_time: 45m
        exp_samples: [{labels: '{job="j", deltaq_probe="alpha", deltaq_slo="within-40ms", deltaq_le="0.04"}', value: 1}]
      - expr: 'ALERTS{alertname="DeltaQErrorBudgetBurn"}'
        eval_time: 53m30s
        exp_samples:
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="alpha", deltaq_slo="success", severity="warning", deltaq_slo_window="30m/5m", deltaq_slo_burn_rate="2"}'
            value: 1
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="alpha", deltaq_slo="within-100ms", deltaq_le="0.1", severity="warning", deltaq_slo_window="30m/5m", deltaq_slo_burn_rate="2"}'
            value: 1
      - expr: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing"}'
        eval_time: 55m
        exp_samples:
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="alpha", deltaq_slo="success", severity="critical", deltaq_slo_window="10m/2m", deltaq_slo_burn_rate="14.4"}'
            value: 1
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="alpha", deltaq_slo="success", severity="warning", deltaq_slo_window="30m/5m", deltaq_slo_burn_rate="2"}'
            value: 1
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="alpha", deltaq_slo="within-100ms", deltaq_le="0.1", severity="warning", deltaq_slo_window="30m/5m", deltaq_slo_burn_rate="2"}'
            value: 1
      - expr: 'count_over_time(ALERTS{deltaq_probe=~"beta|gamma"}[70m]) or count_over_time(ALERTS{deltaq_slo="within-40ms"}[70m]) or count_over_time(ALERTS{severity="critical", deltaq_slo!="success"}[70m])'
        eval_time: 70m
        exp_samples: []
      - expr: 'count_over_time(ALERTS{deltaq_probe="alpha"}[45m])'
        eval_time: 45m
        exp_samples: []
      - expr: 'count(deltaq:slo_error_ratio:rate5m{deltaq_probe="gamma"} != deltaq:slo_error_ratio:rate5m{deltaq_probe="gamma"})'
        eval_time: 70m
        exp_samples: [{labels: '{}', value: 2}]
      - expr: 'count(deltaq:slo_events:rate2m{deltaq_probe="gamma"} == 0 and deltaq:slo_errors:rate2m{deltaq_probe="gamma"} == 0)'
        eval_time: 70m
        exp_samples: [{labels: '{}', value: 2}]
      - expr: 'count(deltaq:slo_error_budget_remaining:ratio{deltaq_probe="gamma"} != deltaq:slo_error_budget_remaining:ratio{deltaq_probe="gamma"})'
        eval_time: 70m
        exp_samples: [{labels: '{}', value: 2}]
      - expr: 'abs(deltaq:slo_error_budget_remaining:ratio{deltaq_probe="beta", deltaq_slo="within-30ms"} - 0.5) < bool 1e-9'
        eval_time: 70m
        exp_samples: [{labels: '{job="j", deltaq_probe="beta", deltaq_slo="within-30ms", deltaq_le="0.03"}', value: 1}]
`

// handPlan is the plan handRulesTest tests.
func handPlan(t *testing.T) *Plan {
	t.Helper()
	var logLinear []float64
	for _, decade := range []float64{0.001, 0.01, 0.1} {
		for k := 1; k <= 9; k++ {
			logLinear = append(logLinear, float64(k)*decade)
		}
	}
	logLinear = append(logLinear, 1)
	tiers, err := ParseTiers("critical:14.4:10m:2m,warning:2:30m:5m")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{
		{Name: "alpha", Bounds: uniform(0.002, 100), QTA: qta(0.05, pt(40*time.Millisecond, 0.5), pt(100*time.Millisecond, 0.9))},
		{Name: "beta", Bounds: logLinear, QTA: qta(0.01, pt(10*time.Millisecond, 0.5), pt(30*time.Millisecond, 0.9))},
		{Name: "gamma", Bounds: uniform(0.01, 100), QTA: qta(0.02, pt(500*time.Millisecond, 0.9))},
	}, Options{Period: 24 * time.Hour, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRulesHandComputed runs handRulesTest: several probes and collectors,
// QTAs of several points on bin edges of uniform and log-linear layouts,
// a counter reset, a change of deltaq_service and a probe without
// instances.
func TestRulesHandComputed(t *testing.T) {
	promtoolTestRules(t, handPlan(t).Rules("a test"), []byte(handRulesTest))
}

// promtoolTestRules writes rules as rules.yml and tests, which read it, as
// rules.test.yml in a directory of their own, and runs promtool test
// rules on them with every promtool of promtools; the test fails with
// promtool's output when they fail. Skipped without promtool.
func promtoolTestRules(t *testing.T, rules, tests []byte) {
	t.Helper()
	tools := promtools(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.test.yml")
	if err := os.WriteFile(path, tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, promtool := range tools {
		if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
			t.Errorf("%s test rules: %v\n%s", promtool, err, out)
		}
	}
}

// promtools returns the promtool on the path and the one the environment
// variable PROMTOOL names, such as Prometheus 3's (the rules and their
// tests are written for both); the test is skipped without either.
func promtools(t *testing.T) []string {
	t.Helper()
	var tools []string
	if path, err := exec.LookPath("promtool"); err == nil {
		tools = append(tools, path)
	}
	if other := os.Getenv("PROMTOOL"); other != "" {
		tools = append(tools, other)
	}
	if len(tools) == 0 {
		t.Skip("promtool not installed")
	}
	return tools
}
