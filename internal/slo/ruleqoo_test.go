// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQoOObjective: "a Quality of Outcome of at least 80 in 99 % of the
// windows" is an objective of budget 0.01 that keeps the Site Reliability
// Workbook's tiers ("Alerting on SLOs": 14.4×, 6×, 3×, 1×); its rules count
// the windows one by one at the connector's interval over the shortest
// window, alert as DeltaQQoOBudgetBurn and point at the runbook's own
// section.
func TestQoOObjective(t *testing.T) {
	p, err := New([]Probe{{Name: "job", QoO: &QoOObjective{MinScore: 80, Target: 0.99}, Interval: time.Second}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objectives) != 1 || len(p.Refusals) != 0 {
		t.Fatalf("objectives %+v, refusals %v", p.Objectives, p.Refusals)
	}
	o := p.Objectives[0]
	if o.Name != "qoo-80" || o.Kind != QoO || o.Target != 0.99 || o.Budget != 0.01 || len(o.Alerts) != 4 {
		t.Fatalf("objective %+v", o)
	}
	for i, f := range []float64{14.4, 6, 3, 1} {
		if a := o.Alerts[i]; a.Factor != f || a.Derived {
			t.Errorf("tier %d: %+v, want the Workbook's %g×", i, a, f)
		}
	}
	rules := string(p.Rules("a test"))
	for _, want := range []string{
		`(deltaq_qoo_score_percent{deltaq_probe="job", deltaq_series="observed"} < bool 80) and (time() - timestamp(deltaq_qoo_score_percent{deltaq_probe="job", deltaq_series="observed"}) < 1))[5m:1s]`,
		"sum_over_time(deltaq:slo_errors:rate5m{deltaq_probe=\"job\", deltaq_slo=\"qoo-80\"}[3d])",
		"- alert: DeltaQQoOBudgetBurn",
		`labels: {deltaq_probe: "job", deltaq_slo: "qoo-80", deltaq_qoo_min: "80"}`,
		`runbook_url: "` + DefaultQoORunbookURL + `"`,
		"the share of the windows of probe {{ $labels.deltaq_probe }} scoring below 80 exceeded 0.144",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("the rules lack %q:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, "alert: "+AlertName+"\n") || strings.Contains(rules, DefaultRunbookURL) {
		t.Errorf("a QoO objective alerts under the QTA objectives' name or runbook:\n%s", rules)
	}
	if docs := string(p.OpenSLO("a test", "shop")); strings.Contains(docs, "kind: SLO") || !strings.Contains(docs, "#   "+o.Describe()) {
		t.Errorf("OpenSLO writes a QoO objective, or does not say it leaves it out:\n%s", docs)
	}
}

// TestQoOObjectiveRefused: options out of range, and windows the rules
// cannot count, are refused with the reason.
func TestQoOObjectiveRefused(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"80", "want SCORE:TARGET"},
		{"0:0.99", "score 0: want a score in (0, 100]"},
		{"101:0.99", "score 101"},
		{"80:99", "99 % is 0.99"},
		{"80:1", "target 1: want a share of the windows in (0, 1)"},
		{"x:0.9", `score "x" is not a number`},
		// A percentage where the share goes: the fraction to write; the
		// score is on a scale of 100 already.
		{"80:99%", `target "99%" is a percentage; write the fraction 0.99`},
		{"80%:0.99", `score "80%": write it without %, as 80 (scores run from 0 to 100)`},
	} {
		if _, err := ParseQoOObjective(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseQoOObjective(%q) = %v, want an error with %q", c.in, err, c.want)
		}
	}
	if q, err := ParseQoOObjective("92.5:0.995"); err != nil || q != (QoOObjective{92.5, 0.995}) {
		t.Errorf("ParseQoOObjective(92.5:0.995) = %+v, %v", q, err)
	}
	q := &QoOObjective{MinScore: 80, Target: 0.99}
	for _, c := range []struct {
		interval time.Duration
		want     string
	}{
		{0, "no windows (interval 0)"},
		{10 * time.Minute, "the shortest window 5m holds no whole window of the probe (interval 10m0s)"},
		{1500 * time.Microsecond, "not a whole number of milliseconds"},
	} {
		_, err := New([]Probe{{Name: "job", QoO: q, Interval: c.interval}}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("interval %s: %v, want a refusal with %q", c.interval, err, c.want)
		}
	}
}

// TestQoORulesPromtool: the rules of a QoO objective beside a QTA
// objective pass promtool check rules, and their generated tests (the
// windows' scores sent one by one, withheld ones left out) pass promtool
// test rules; the tests fail when a bad window is not counted as one
// (threshold 40 instead of 80: the test's bad windows score 40), and when
// a withheld window repeats the score before it (no freshness test).
// Skipped without promtool.
func TestQoORulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	tiers, err := ParseTiers("critical:14.4:1h:5m,warning:1:6h:30m")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "job", Bounds: uniform(0.002, 100), QTA: qta(0.01),
		QoO: &QoOObjective{MinScore: 80, Target: 0.99}, Interval: 10 * time.Second}}, Options{Period: 7 * 24 * time.Hour, Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rulesPath, testsPath := filepath.Join(dir, "rules.yml"), filepath.Join(dir, "rules.test.yml")
	rules := string(p.Rules("a test"))
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(rulesPath, rules)
	tests := string(p.RuleTests("rules.yml"))
	write(testsPath, tests)
	if !strings.Contains(tests, "group_eval_order: [deltaq-slo-sli, deltaq-slo-budget, deltaq-slo-alerts]") {
		t.Fatalf("the tests leave the order of the groups to promtool, which keeps none:\n%s", tests)
	}
	if !strings.Contains(tests, "_ 100x") || !strings.Contains(tests, `alertname=\"DeltaQQoOBudgetBurn\"`) {
		t.Fatalf("the tests send no withheld window or check no QoO alert:\n%s", tests)
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules)
	}
	if out, err := exec.Command(promtool, "test", "rules", testsPath).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
	for _, m := range []struct{ from, to, what string }{
		{"< bool 80)", "< bool 40)", "bad windows not counted"},
		{"< 10))[5m:10s]", "< 600))[5m:10s]", "withheld windows repeating the score before them"},
	} {
		mutated := strings.ReplaceAll(rules, m.from, m.to)
		if mutated == rules {
			t.Fatalf("mutation %q found nothing to change", m.from)
		}
		write(rulesPath, mutated)
		if out, err := exec.Command(promtool, "test", "rules", testsPath).CombinedOutput(); err == nil {
			t.Errorf("promtool test rules passed with %s:\n%s", m.what, out)
		}
	}
}

// TestQoORulesPromtoolHoveringBurn: with windows of 1 s scored on test
// steps of 6 s (tiers scaled to a 20-minute period, the shortest window
// 6 s), the slow burn counted in whole windows hovers at the last tier's
// factor: tier warning:1:8m:1m fired at 4m48s and was under 1× at 5m,
// where the generated test checked it firing, and the test failed. The
// generated tests check the alert where the model has it firing; they
// pass promtool test rules. Skipped without promtool.
func TestQoORulesPromtoolHoveringBurn(t *testing.T) {
	tiers, err := ParseTiers("critical:14.4:30s:6s:2s,critical:6:2m:15s:3s,warning:3:4m:30s:5s,warning:1:8m:1m:10s")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "job", QoO: &QoOObjective{MinScore: 80, Target: 0.99}, Interval: time.Second}},
		Options{Period: 20 * time.Minute, Tiers: tiers, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tests := p.RuleTests("rules.yml")
	if !strings.Contains(string(tests), "tier warning:1:8m:1m fires at 4m48s") {
		t.Fatalf("the tests check no slow burn firing the last tier:\n%s", tests)
	}
	promtoolTestRules(t, p.Rules("a test"), tests)
}
