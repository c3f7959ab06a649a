// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLeForms: the le values of a bound, by the way its series arrive.
// Known answers: remote write, strconv.FormatFloat(bound, 'f', -1, 64)
// (Prometheus's otlptranslator/prometheusremotewrite, helper.go); the text
// exposition, 'g', -1 (prometheus/common expfmt, writeFloat); Prometheus 3's
// scrape, the OpenMetrics float ('g', -1, ".0" appended without '.' or 'e':
// model/labels.FormatOpenMetricsFloat, applied to le by
// model/textparse's normalizeFloatsInLabelValues).
func TestLeForms(t *testing.T) {
	for _, c := range []struct {
		bound float64
		want  []string // remote write, then the others not already listed
		miss  []string // values of other bounds the matcher must not take
	}{
		{1, []string{"1", "1.0"}, []string{"10", "1.00", "1x0", "11.0", "0.1"}},
		{2, []string{"2", "2.0"}, []string{"2.5", "20"}},
		{0.04, []string{"0.04"}, []string{"0x04", "0.040", "4e-02"}},
		{0.5, []string{"0.5"}, []string{"0.55", "0x5"}},
		{0.00005, []string{"0.00005", "5e-05"}, []string{"5e-050", "5e+05", "0.00005.0"}},
		{0.0001, []string{"0.0001"}, []string{"1e-04", "0.00010"}},
		{100000, []string{"100000", "100000.0"}, []string{"1e+05", "1000000"}},
		{1e-7, []string{"0.0000001", "1e-07"}, []string{"1e-070", "1xe-07"}},
		{1e21, []string{"1000000000000000000000", "1e+21"}, []string{"1e21", "1e 21"}},
	} {
		got := LeForms(c.bound)
		if !slices.Equal(got, c.want) {
			t.Errorf("LeForms(%g) = %q, want %q", c.bound, got, c.want)
			continue
		}
		// Every form reads back as the bound.
		for _, f := range got {
			if x, err := strconv.ParseFloat(f, 64); err != nil || x != c.bound {
				t.Errorf("LeForms(%g): %q reads as %g, %v", c.bound, f, x, err)
			}
		}
		m := leMatcher(got[0])
		if len(got) == 1 {
			if m != "le="+strconv.Quote(got[0]) {
				t.Errorf("leMatcher(%q) = %s, want le=%q", got[0], m, got[0])
			}
			continue
		}
		// The matcher as Prometheus reads it: a Go-quoted PromQL string,
		// anchored at both ends (promql/parser, labels.NewFastRegexMatcher).
		pattern, ok := strings.CutPrefix(m, "le=~")
		if !ok {
			t.Errorf("leMatcher(%q) = %s, want le=~", got[0], m)
			continue
		}
		unquoted, err := strconv.Unquote(pattern)
		if err != nil {
			t.Errorf("leMatcher(%q) = %s: %v", got[0], m, err)
			continue
		}
		re := regexp.MustCompile("^(?:" + unquoted + ")$")
		for _, f := range got {
			if !re.MatchString(f) {
				t.Errorf("leMatcher(%q) = %s does not match %q", got[0], m, f)
			}
		}
		for _, f := range c.miss {
			if re.MatchString(f) {
				t.Errorf("leMatcher(%q) = %s matches %q", got[0], m, f)
			}
		}
	}
	if got := LeForms(math.Inf(1)); !slices.Equal(got, []string{"+Inf"}) {
		t.Errorf("LeForms(+Inf) = %q, want [+Inf]", got)
	}
	if m := leMatcher("+Inf"); m != `le="+Inf"` {
		t.Errorf(`leMatcher("+Inf") = %s, want le="+Inf"`, m)
	}
}

// leFormsTest is a promtool test of the rules of a QTA point at 1 s, once
// over series whose le is "1", as remote write and a scrape by Prometheus 2
// bring them, and once over "1.0", as Prometheus 3 scrapes them: the same
// error ratios, the same alert. Before the rules matched every form, the
// second group had no error ratio and no alert.
//
// 60 instances a minute, all successes; within 1 s until 20m, none within
// 1 s after. Error ratio over 2m and 10m at 15m: 0. At 25m both windows
// hold the burn's minutes (21m–25m), over 2m alone (ratio 1), over 10m
// with the five before (5/10): both above 14.4 × budget 0.01 = 0.144 since
// 21m30s at most, so pending for the 24 s of `for` and firing by 25m. At
// 19m nothing fires.
var leFormsTest = `rule_files: [rules.yml]
evaluation_interval: 30s
group_eval_order: [deltaq-slo-sli, deltaq-slo-budget, deltaq-slo-alerts]
tests:
` + leFormsGroup(`1`) + leFormsGroup(`1.0`)

func leFormsGroup(le string) string {
	return strings.ReplaceAll(`  - interval: 1m
    input_series:
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="p", le="{LE}"}', values: '0+60x20 1200x10'}
      - {series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="p", le="+Inf"}', values: '0+60x30'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="success"}', values: '0+60x30'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="timeout"}', values: '0x30'}
      - {series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="failure"}', values: '0x30'}
    promql_expr_test:
      - expr: 'deltaq:slo_error_ratio:rate2m{deltaq_slo="within-1s"} == 0 and deltaq:slo_error_ratio:rate10m == 0'
        eval_time: 15m
        exp_samples: [{labels: 'deltaq:slo_error_ratio:rate2m{job="j", deltaq_probe="p", deltaq_slo="within-1s", deltaq_le="1"}', value: 0}]
      - expr: 'ALERTS'
        eval_time: 19m
        exp_samples: []
      - expr: 'ALERTS{alertstate="firing"}'
        eval_time: 25m
        exp_samples:
          - labels: 'ALERTS{alertname="DeltaQErrorBudgetBurn", alertstate="firing", job="j", deltaq_probe="p", deltaq_slo="within-1s", deltaq_le="1", severity="critical", deltaq_slo_window="10m/2m", deltaq_slo_burn_rate="14.4"}'
            value: 1
`, "{LE}", le)
}

// TestRulesLeForms runs leFormsTest on the rules of a QTA point at 1 s.
func TestRulesLeForms(t *testing.T) {
	tiers, err := ParseTiers("critical:14.4:10m:2m")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "p", Bounds: uniform(0.25, 8), QTA: qta(0.5, pt(time.Second, 0.99))}},
		Options{Period: 24 * time.Hour, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	rules := p.Rules("a test")
	if !strings.Contains(string(rules), `le=~"1|1\\.0"`) {
		t.Errorf("the rules do not select le=~\"1|1\\\\.0\":\n%s", rules)
	}
	promtoolTestRules(t, rules, []byte(leFormsTest))
}

// TestSpecsLeForms: the OpenSLO and Sloth queries of a QTA point at 1 s
// select its bucket in every form, as the rules do.
func TestSpecsLeForms(t *testing.T) {
	p, err := New([]Probe{{Name: "p", Bounds: uniform(0.25, 8), QTA: qta(0.5, pt(time.Second, 0.99))}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const want = `deltaq_observed_seconds_bucket{deltaq_probe="p", le=~"1|1\\.0"}`
	docs := strings.Split(string(p.OpenSLO("a test", "shop")), "\n---\n")
	m := parseYAML(t, docs[1])
	q := m["spec"].(map[string]any)["indicator"].(map[string]any)["spec"].(map[string]any)["ratioMetric"].(map[string]any)["good"].(map[string]any)["metricSource"].(map[string]any)["spec"].(map[string]any)["query"]
	if s, _ := q.(string); !strings.Contains(s, want) {
		t.Errorf("OpenSLO good query %q, want it to hold %s", q, want)
	}
	s := parseYAML(t, string(p.Sloth("a test", "shop")))
	ev := s["slos"].([]any)[0].(map[string]any)["sli"].(map[string]any)["events"].(map[string]any)
	if e, _ := ev["error_query"].(string); !strings.Contains(e, want) {
		t.Errorf("Sloth error_query %q, want it to hold %s", e, want)
	}
}
