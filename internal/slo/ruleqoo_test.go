// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
		`(deltaq_qoo_score_percent{deltaq_probe="job", deltaq_series="observed"} < bool 80) and (time() - timestamp(deltaq_qoo_score_percent{deltaq_probe="job", deltaq_series="observed"}) < 1))[4m59s999ms:1s]`,
		"sum_over_time(deltaq:slo_errors:rate5m{deltaq_probe=\"job\", deltaq_slo=\"qoo-80\"}[2d23h59m59s999ms])",
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
	tools := promtools(t)
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
	for _, promtool := range tools {
		if out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput(); err != nil {
			t.Fatalf("%s check rules: %v\n%s\n%s", promtool, err, out, rules)
		}
		if out, err := exec.Command(promtool, "test", "rules", testsPath).CombinedOutput(); err != nil {
			t.Fatalf("%s test rules: %v\n%s", promtool, err, out)
		}
	}
	for _, m := range []struct{ from, to, what string }{
		{"< bool 80)", "< bool 40)", "bad windows not counted"},
		{"< 10))[4m59s999ms:10s]", "< 600))[4m59s999ms:10s]", "withheld windows repeating the score before them"},
	} {
		mutated := strings.ReplaceAll(rules, m.from, m.to)
		if mutated == rules {
			t.Fatalf("mutation %q found nothing to change", m.from)
		}
		write(rulesPath, mutated)
		for _, promtool := range tools {
			if out, err := exec.Command(promtool, "test", "rules", testsPath).CombinedOutput(); err == nil {
				t.Errorf("%s test rules passed with %s:\n%s", promtool, m.what, out)
			}
		}
	}
}

// TestQoORulesPromtoolHoveringBurn: with windows of 1 s scored on test
// steps of 6 s (tiers scaled to a 20-minute period, the shortest window
// 6 s), the slow burn counted in whole windows hovers at the last tier's
// factor: for a target of 0.99, tier warning:1:8m:1m fired at 4m48s and was
// under 1× at 5m (the windows counted as Prometheus 2 did with ranges as
// long as their windows), where the generated test checked it firing, and
// the test failed; for 0.98, as the rules count the windows now, it fires
// at 2m48s and is under 1× at 3m. The generated tests check the alert
// where the model has it firing; they pass promtool test rules. Skipped
// without promtool.
func TestQoORulesPromtoolHoveringBurn(t *testing.T) {
	tiers, err := ParseTiers("critical:14.4:30s:6s:2s,critical:6:2m:15s:3s,warning:3:4m:30s:5s,warning:1:8m:1m:10s")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: "job", QoO: &QoOObjective{MinScore: 80, Target: 0.98}, Interval: time.Second}},
		Options{Period: 20 * time.Minute, Tiers: tiers, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tests := p.RuleTests("rules.yml")
	if !strings.Contains(string(tests), "tier warning:1:8m:1m fires at 2m48s.\n      - expr: \"ALERTS{alertname=\\\"DeltaQQoOBudgetBurn\\\", deltaq_probe=\\\"job\\\", deltaq_slo=\\\"qoo-80\\\", alertstate=\\\"firing\\\"}\"\n        eval_time: 2m48s") {
		t.Fatalf("the tests check no slow burn firing the last tier where it fires:\n%s", tests)
	}
	promtoolTestRules(t, p.Rules("a test"), tests)
}

// TestQoORangesCountAlike: the ranges of a QoO objective's rules count the
// same steps and records in Prometheus 2, whose ranges [t − r, t] hold
// their start, and 3, whose (t − r, t] do not: those of (t − w, t] for a
// window w, at evaluations on whole multiples of the step as promtool's
// are. With ranges as long as their windows, Prometheus 2 counted one
// window of the probe more at each evaluation (13 windows of 10 s in a
// minute, where Prometheus 3 counts 12), and one record more over each
// longer window.
func TestQoORangesCountAlike(t *testing.T) {
	subquery := regexp.MustCompile(`\)\[([0-9a-z]+):([0-9a-z]+)\]`)
	sumOver := regexp.MustCompile(`sum_over_time\(deltaq:slo_errors:rate[0-9a-z]+\{[^}]*\}\[([0-9a-z]+)\]\)`)
	// count is the number of multiples of step in [t − r, t] (closed) or
	// (t − r, t] at an evaluation t on a multiple of step.
	count := func(r, step time.Duration, closed bool) int {
		n := 0
		for k := time.Duration(0); k*step <= r; k++ {
			if closed || k*step < r {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		tiers            string
		period, interval time.Duration
		probeInterval    time.Duration
	}{
		{"critical:14.4:1h:5m,warning:1:6h:30m", 7 * 24 * time.Hour, 10 * time.Second, 30 * time.Second},
		{"critical:5:5m:1m", 24 * time.Hour, 10 * time.Second, 10 * time.Second},
		{"critical:14.4:14m:1m10s,warning:1:16h48m:1h24m", 7 * 24 * time.Hour, time.Minute, 5 * time.Second},
		{"critical:14.4:30s:6s:2s,warning:1:8m:1m:10s", 20 * time.Minute, time.Second, time.Second},
	} {
		tiers, err := ParseTiers(c.tiers)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New([]Probe{{Name: "job", QoO: &QoOObjective{MinScore: 80, Target: 0.99}, Interval: c.probeInterval}},
			Options{Period: c.period, Tiers: tiers, Interval: c.interval})
		if err != nil || len(p.Objectives) != 1 {
			t.Fatalf("%s: %v, objectives %+v", c.tiers, err, p.Objectives)
		}
		rules := string(p.Rules("a test"))
		subs := subquery.FindAllStringSubmatch(rules, -1)
		if len(subs) != 2 {
			t.Fatalf("%s: %d subqueries, want 2 (events and errors):\n%s", c.tiers, len(subs), rules)
		}
		for _, m := range subs {
			r, err1 := ParseDuration(m[1])
			step, err2 := ParseDuration(m[2])
			if err1 != nil || err2 != nil || step != c.probeInterval {
				t.Fatalf("%s: subquery [%s:%s]: %v %v, want the step %s", c.tiers, m[1], m[2], err1, err2, c.probeInterval)
			}
			want := int(p.Windows[0] / step)
			if two, three := count(r, step, true), count(r, step, false); two != want || three != want {
				t.Errorf("%s: subquery [%s:%s] counts %d windows in Prometheus 2, %d in 3, want the %d of %s",
					c.tiers, m[1], m[2], two, three, want, FormatDuration(p.Windows[0]))
			}
		}
		sums := sumOver.FindAllStringSubmatch(rules, -1)
		if len(sums) != len(p.Windows)-1 {
			t.Fatalf("%s: %d sums over the longer windows, want %d:\n%s", c.tiers, len(sums), len(p.Windows)-1, rules)
		}
		for i, m := range sums {
			r, err := ParseDuration(m[1])
			if err != nil {
				t.Fatal(err)
			}
			w := p.Windows[i+1]
			want := int((w + c.interval - 1) / c.interval) // the evaluations of (t − w, t]
			if two, three := count(r, c.interval, true), count(r, c.interval, false); two != want || three != want {
				t.Errorf("%s: sum_over_time over [%s] counts %d records in Prometheus 2, %d in 3, want the %d of %s",
					c.tiers, m[1], two, three, want, FormatDuration(w))
			}
		}
	}
}
