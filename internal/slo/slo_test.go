// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package slo

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/analysis"
)

// uniform returns the bounds of n bins of width w seconds.
func uniform(w float64, n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = math.Round(float64(i+1)*w*1e12) / 1e12
	}
	return b
}

func qta(maxFailure float64, points ...analysis.QTAPoint) analysis.QTA {
	return analysis.QTA{Points: points, MaxFailure: maxFailure}
}

func pt(d time.Duration, p float64) analysis.QTAPoint { return analysis.QTAPoint{Delay: d, P: p} }

// TestDeriveWorkbook: a 99.9 % objective keeps the Site Reliability
// Workbook's tiers ("Alerting on SLOs", table of recommended parameters):
// thresholds factor × 0.001, and at each factor the 30-day budget lasts
// 30 d / factor — 50 h, 5 d, 10 d, 30 d.
func TestDeriveWorkbook(t *testing.T) {
	o := Options{}
	o.fill()
	alerts := Derive(0.001, o, func(t2 Tier, reason string) { t.Errorf("tier %s refused: %s", t2, reason) })
	want := []struct {
		factor     float64
		exhaustion time.Duration
	}{{14.4, 50 * time.Hour}, {6, 5 * 24 * time.Hour}, {3, 10 * 24 * time.Hour}, {1, 30 * 24 * time.Hour}}
	if len(alerts) != len(want) {
		t.Fatalf("%d alerts, want %d", len(alerts), len(want))
	}
	for i, a := range alerts {
		if a.Derived || a.Factor != want[i].factor || a.Exhaustion != want[i].exhaustion ||
			math.Abs(a.Threshold-want[i].factor*0.001) > 1e-15 {
			t.Errorf("tier %d: %+v, want factor %g, exhaustion %s, threshold %g", i, a, want[i].factor, want[i].exhaustion, want[i].factor*0.001)
		}
	}
}

// TestDefaultTiersPerPeriod: over any period the default tiers alert at the
// Workbook's share of the budget ("Alerting on SLOs": 2 % in 1 h and 5 % in
// 6 h page, 10 % in 1 d and in 3 d open a ticket, over 30 days) with its
// factors, their windows scaled with the period; over 30 days they are the
// Workbook's table itself.
func TestDefaultTiersPerPeriod(t *testing.T) {
	day := 24 * time.Hour
	shares := []float64{0.02, 0.05, 0.10, 0.10}
	factors := []float64{14.4, 6, 3, 1}
	severities := []string{Critical, Critical, Warning, Warning}
	for _, c := range []struct {
		period      time.Duration
		long, short []time.Duration
	}{
		{30 * day, []time.Duration{time.Hour, 6 * time.Hour, day, 3 * day},
			[]time.Duration{5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}},
		// 7/30 of each: 1 h → 14 m, 5 m → 70 s, 3 d → 16 h 48 m.
		{7 * day, []time.Duration{14 * time.Minute, 84 * time.Minute, 336 * time.Minute, 1008 * time.Minute},
			[]time.Duration{70 * time.Second, 7 * time.Minute, 28 * time.Minute, 84 * time.Minute}},
		{28 * day, []time.Duration{56 * time.Minute, 336 * time.Minute, 1344 * time.Minute, 4032 * time.Minute},
			[]time.Duration{280 * time.Second, 28 * time.Minute, 112 * time.Minute, 336 * time.Minute}},
		{90 * day, []time.Duration{3 * time.Hour, 18 * time.Hour, 3 * day, 9 * day},
			[]time.Duration{15 * time.Minute, 90 * time.Minute, 6 * time.Hour, 18 * time.Hour}},
	} {
		o := Options{Period: c.period}
		o.fill()
		if err := o.check(); err != nil {
			t.Errorf("period %s: %v", FormatDuration(c.period), err)
		}
		for i, tier := range o.Tiers {
			if tier.Severity != severities[i] || tier.Factor != factors[i] || tier.Long != c.long[i] || tier.Short != c.short[i] ||
				math.Abs(tier.Share(c.period)-shares[i]) > 1e-9 {
				t.Errorf("period %s, tier %d: %s at %g of the budget; want %s:%g:%s:%s at %g", FormatDuration(c.period), i+1,
					tier, tier.Share(c.period), severities[i], factors[i], FormatDuration(c.long[i]), FormatDuration(c.short[i]), shares[i])
			}
		}
		alerts := Derive(0.001, o, func(t2 Tier, reason string) { t.Errorf("tier %s refused: %s", t2, reason) })
		// At factor F the budget lasts T/F: 50 h of 30 days at 14.4×, 11 h 40 m of 7 days.
		if len(alerts) != 4 || alerts[0].Exhaustion != time.Duration(float64(c.period)/14.4).Round(time.Minute) {
			t.Errorf("period %s: alerts %+v", FormatDuration(c.period), alerts)
		}
	}
}

// TestDeriveLargeBudgets: budgets no Workbook factor fits. b = 0.5 burns at
// most 2×: 14.4× becomes 0.9/0.5 = 1.8× (budget gone in 30 d/1.8 =
// 16 d 16 h), 6× and 3× would repeat 1.8× and are refused, 1× stays
// (threshold 0.5 ≤ 0.9). b = 0.1: 14.4× becomes 9×, 6×, 3×, 1× stay
// (thresholds 0.6, 0.3, 0.1). b = 0.95: even an error ratio of 0.9 burns at
// 0.947× < 1: every tier is refused.
func TestDeriveLargeBudgets(t *testing.T) {
	o := Options{}
	o.fill()
	cases := []struct {
		b        float64
		factors  []float64
		derived  []bool
		refusals int
	}{
		{0.5, []float64{1.8, 1}, []bool{true, false}, 2},
		{0.1, []float64{9, 6, 3, 1}, []bool{true, false, false, false}, 0},
		{0.95, nil, nil, 4},
	}
	for _, c := range cases {
		var refused []string
		alerts := Derive(c.b, o, func(t Tier, reason string) { refused = append(refused, reason) })
		if len(alerts) != len(c.factors) || len(refused) != c.refusals {
			t.Errorf("b = %g: %d alerts, %d refusals %q; want %d, %d", c.b, len(alerts), len(refused), refused, len(c.factors), c.refusals)
			continue
		}
		for i, a := range alerts {
			if a.Factor != c.factors[i] || a.Derived != c.derived[i] || a.Threshold > o.MaxErrorRatio+1e-12 {
				t.Errorf("b = %g, alert %d: %+v; want factor %g, derived %v", c.b, i, a, c.factors[i], c.derived[i])
			}
		}
	}
	// The refusal's factors read as the factors do, to six digits.
	var refused []string
	Derive(0.95, o, func(t Tier, reason string) { refused = append(refused, reason) })
	if want := "allows at most a 1.05263× burn"; len(refused) == 0 || !strings.Contains(refused[0], want) {
		t.Errorf("b = 0.95: refusals %q, want %q", refused, want)
	}
	alerts := Derive(0.5, o, func(Tier, string) {})
	if alerts[0].Exhaustion != 400*time.Hour || alerts[0].Severity != Critical || alerts[0].Long != time.Hour {
		t.Errorf("b = 0.5, first alert %+v: want the 1h/5m page, budget gone in 400h", alerts[0])
	}
}

// TestExactSLI: a point on a bin edge selects its le; between edges it is
// refused naming both edges; at or beyond dMax it counts every success;
// dmax: auto is refused unless the histogram is exponential, which uses
// histogram_fraction; a target of 1 has no budget.
func TestExactSLI(t *testing.T) {
	bounds := uniform(0.002, 100) // 2 ms bins up to 200 ms
	p, err := New([]Probe{
		{Name: "job", Bounds: bounds, Layout: "100 bins of 2ms up to 200ms",
			QTA: qta(0.02, pt(40*time.Millisecond, 0.5), pt(41*time.Millisecond, 0.6), pt(250*time.Millisecond, 0.95), pt(300*time.Millisecond, 1))},
		{Name: "auto", NoBounds: "dmax: auto in the processor", QTA: qta(0, pt(20*time.Millisecond, 0.5))},
		{Name: "exp", Exponential: true, QTA: qta(0.01, pt(20*time.Millisecond, 0.5))},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Objective{}
	for _, o := range p.Objectives {
		got[o.Probe+" "+o.Name] = o
	}
	if o := got["job within-40ms"]; o.Le != "0.04" || o.Budget != 0.5 {
		t.Errorf("40ms: le %q, budget %g; want 0.04, 0.5", o.Le, o.Budget)
	}
	if o := got["job within-250ms"]; o.Le != "+Inf" || !strings.Contains(o.Note, "beyond dMax") {
		t.Errorf("250ms beyond dMax 200ms: le %q, note %q; want +Inf and a note", o.Le, o.Note)
	}
	if o := got["exp within-20ms"]; !o.Exponential || !strings.Contains(string(p.Rules("x")), "histogram_fraction(0, 0.02, ") {
		t.Errorf("exponential: %+v; want histogram_fraction in the rules", o)
	}
	if o := got["job success"]; o.Target != 0.98 || o.Budget != 0.02 {
		t.Errorf("success: target %g, budget %g; want 0.98, 0.02", o.Target, o.Budget)
	}
	var refusals []string
	for _, r := range p.Refusals {
		refusals = append(refusals, r.String())
	}
	all := strings.Join(refusals, "\n")
	for _, want := range []string{
		`probe "job", objective within-41ms: 41ms is not a bucket bound of deltaq.observed (100 bins of 2ms up to 200ms): the nearest bin edges are 40ms and 42ms`,
		`probe "job", objective within-300ms: target 1 leaves no error budget`,
		`probe "auto", objective within-20ms: the bucket bounds of deltaq.observed are not fixed (dmax: auto in the processor)`,
		`probe "auto", objective success: target 1 leaves no error budget`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("refusals lack %q:\n%s", want, all)
		}
	}
	if _, err := New([]Probe{{Name: "x", Bounds: bounds, QTA: qta(0, pt(41*time.Millisecond, 0.5))}}, Options{}); err == nil ||
		!strings.Contains(err.Error(), "no objective to alert on") || !strings.Contains(err.Error(), "40ms and 42ms") {
		t.Errorf("only refused objectives: err %v; want no objective, with the reasons", err)
	}
}

func TestOptionsInvalid(t *testing.T) {
	probes := []Probe{{Name: "x", Bounds: uniform(0.001, 10), QTA: qta(0.1)}}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{MaxErrorRatio: 1}, "max error ratio 1"},
		{Options{Period: time.Second}, "period 1s"},
		{Options{Tiers: []Tier{{Severity: "sms", Factor: 2, Long: time.Hour, Short: time.Minute}}}, `severity "sms"`},
		{Options{Tiers: []Tier{{Severity: Critical, Factor: 2, Long: time.Minute, Short: time.Hour}}}, "short window < long window"},
		{Options{Tiers: []Tier{{Severity: Critical, Factor: 2, Long: 40 * 24 * time.Hour, Short: time.Hour}}}, "beyond the period"},
		// Two equal tiers: said so, not taken for a tier of shorter windows.
		{Options{Tiers: []Tier{{Severity: Critical, Factor: 2, Long: time.Hour, Short: time.Minute},
			{Severity: Critical, Factor: 2, Long: time.Hour, Short: time.Minute}}}, "tier 2 (critical:2:1h:1m): the same as tier 1"},
	} {
		if _, err := New(probes, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := ParseTiers("critical:14.4:1h"); err == nil {
		t.Error("ParseTiers of three fields: no error")
	}
	// One severity vocabulary: the Workbook's page and ticket are critical and warning.
	tiers, err := ParseTiers("page:14.4:1h:5m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(probes, Options{Tiers: tiers}); err == nil ||
		!strings.Contains(err.Error(), `severity "page": want critical (a page) or warning (a ticket)`) {
		t.Errorf("severity page: err %v", err)
	}
}

func TestDuration(t *testing.T) {
	for s, d := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1h30m": 90 * time.Minute, "5m": 5 * time.Minute,
		"2s": 2 * time.Second, "1d12h": 36 * time.Hour, "250ms": 250 * time.Millisecond} {
		got, err := ParseDuration(s)
		if err != nil || got != d || FormatDuration(d) != s {
			t.Errorf("%s: parsed %s (%v), formatted %s", s, got, err, FormatDuration(d))
		}
	}
	if d, err := ParseDuration("1w"); err != nil || d != 7*24*time.Hour {
		t.Errorf("1w: %s %v", d, err)
	}
	for _, bad := range []string{"", "0s", "-1h", "1y", "h", "30 d"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// testPlan is a small plan over short tiers, quick under promtool: a 99 %
// success objective and a 0.5 latency point (a derived tier).
func testPlan(t *testing.T) *Plan {
	t.Helper()
	return testPlanOf(t, "job", "critical:14.4:1h:5m,warning:1:6h:30m")
}

// testPlanOf is testPlan's objectives for probe name, over tiers.
func testPlanOf(t *testing.T, name, tiers string) *Plan {
	t.Helper()
	ts, err := ParseTiers(tiers)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New([]Probe{{Name: name, Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}},
		Options{Period: 7 * 24 * time.Hour, Tiers: ts})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// promtoolRules runs promtool check rules on p's rules and promtool test
// rules on their tests, with every promtool of promtools; without promtool
// it does nothing.
func promtoolRules(t *testing.T, p *Plan) {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil && os.Getenv("PROMTOOL") == "" {
		return
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), p.Rules("a test"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(dir, "rules.test.yml")
	if err := os.WriteFile(tests, p.RuleTests("rules.yml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, promtool := range promtools(t) {
		if out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "rules.yml")).CombinedOutput(); err != nil {
			t.Fatalf("%s check rules: %v\n%s", promtool, err, out)
		}
		if out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput(); err != nil {
			t.Errorf("%s test rules: %v\n%s", promtool, err, out)
		}
	}
}

// TestRulesPromtool: the rules pass promtool check rules and their
// generated tests pass promtool test rules; with one threshold changed,
// the tests fail (they are not vacuous). Skipped without promtool.
func TestRulesPromtool(t *testing.T) {
	tools := promtools(t)
	promtool := tools[0]
	p := testPlan(t)
	dir := t.TempDir()
	rules := p.Rules("a test")
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("rules.yml", rules)
	tests := write("rules.test.yml", p.RuleTests("rules.yml"))
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "rules.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s\n%s", err, out, rules)
	}
	for _, promtool := range tools {
		if out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput(); err != nil {
			t.Fatalf("%s test rules: %v\n%s", promtool, err, out)
		}
	}
	// The exponential form's rules parse too (histogram_fraction; their
	// tests are not generated: promtool's series notation here has no
	// native histograms).
	exp, err := New([]Probe{{Name: "job", Exponential: true, QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	expRules := write("exp.yml", exp.Rules("a test"))
	if out, err := exec.Command(promtool, "check", "rules", expRules).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules, exponential: %v\n%s", err, out)
	}
	mutated := strings.Replace(string(rules), `deltaq_slo="success"} / 0.01 > 14.4`, `deltaq_slo="success"} / 0.01 > 30`, 2)
	if mutated == string(rules) {
		t.Fatal("mutation found nothing to change")
	}
	write("rules.yml", []byte(mutated))
	for _, promtool := range tools {
		if out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput(); err == nil {
			t.Errorf("%s test rules passed with the page threshold at 30× instead of 14.4×:\n%s", promtool, out)
		}
	}
}

// TestRulesOddProbeNames: a probe name with a template's delimiters or a
// line break. Prometheus expands an alert's labels and annotations as Go
// templates: x{{ broke the rule file ("unclosed action"), and a name with
// {{ .Foo }} gave its alerts another deltaq_probe label than its series;
// the line break ended a comment line, and the rest of the name broke the
// YAML. The name is escaped in each, and promtool takes the rules and
// their tests (when installed).
func TestRulesOddProbeNames(t *testing.T) {
	const name = "x{{ .Foo }}\nline2: y}}"
	p := testPlanOf(t, name, "critical:14.4:1h:5m,warning:1:6h:30m")
	rules := p.Rules("a test")
	for line := range strings.Lines(string(rules)) {
		if strings.HasPrefix(line, "line2") {
			t.Errorf("the name's line break reached the file: %q", line)
		}
	}
	if !strings.Contains(string(rules), `deltaq_probe: "x{{ \"{{\" }} .Foo {{ \"}}\" }}\nline2: y{{ \"}}\" }}"`) {
		t.Errorf("no alert label with the name escaped:\n%s", rules)
	}
	promtoolRules(t, p)
}

// TestRuleTestsCriticalOnly: with paging tiers alone (--tiers
// critical:14.4:1h:5m) the generated tests asked that a slow burn never
// page, and failed promtool; they do not ask it of such an objective.
func TestRuleTestsCriticalOnly(t *testing.T) {
	promtools(t) // skipped without one
	promtoolRules(t, testPlanOf(t, "job", "critical:14.4:1h:5m"))
}

// TestDocNamesUnique: the OpenSLO and Sloth documents' names are DNS
// labels of their own: probes a.b and a-b gave one name to two documents,
// and names past 63 characters were cut to one name (their indicators'
// to 67). A name that is no other's and short enough is kept as it was.
func TestDocNamesUnique(t *testing.T) {
	long := strings.Repeat("checkout-", 8)
	var probes []Probe
	for _, n := range []string{"a.b", "a-b", long + "x", long + "y", "job"} {
		probes = append(probes, Probe{Name: n, Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))})
	}
	p, err := New(probes, Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range p.Objectives {
		n := p.Objectives[i].docName()
		if seen[n] || len(n+"-sli") > 63 || notDNS.MatchString(n) {
			t.Errorf("%s %s: document name %q (%d characters) taken twice or no DNS label with -sli", p.Objectives[i].Probe, p.Objectives[i].Name, n, len(n))
		}
		seen[n] = true
	}
	if !seen["job-within-40ms"] || !seen["job-success"] {
		t.Errorf("job's names changed: %v", seen)
	}
}

// TestSlothPeriod: a Sloth spec has no period; one made with another
// --period than the default says that Sloth's own applies and how to set
// it (it read as --period's without a word).
func TestSlothPeriod(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		said   bool
	}{{7 * 24 * time.Hour, true}, {DefaultPeriod, false}} {
		p, err := New([]Probe{{Name: "job", Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}}, Options{Period: c.period})
		if err != nil {
			t.Fatal(err)
		}
		said := strings.Contains(string(p.Sloth("a test", "svc")), "# The period is Sloth's own, not --period "+FormatDuration(c.period)+": `sloth generate --default-slo-period "+FormatDuration(c.period)+"`")
		if said != c.said {
			t.Errorf("period %s: said %v, want %v", FormatDuration(c.period), said, c.said)
		}
	}
}

// TestSpecs: the OpenSLO documents and the Sloth spec are YAML with the
// objectives' targets and queries.
func TestSpecs(t *testing.T) {
	p := testPlan(t)
	docs := strings.Split(string(p.OpenSLO("a test", "shop")), "\n---\n")
	if len(docs) != 3 { // the header, then one per objective
		t.Fatalf("%d OpenSLO documents, want 2 after the header", len(docs)-1)
	}
	for i, want := range []struct{ name, target, ratio string }{{"job-within-40ms", "0.5", "good"}, {"job-success", "0.99", "bad"}} {
		m := parseYAML(t, docs[i+1])
		spec := m["spec"].(map[string]any)
		obj := spec["objectives"].([]any)[0].(map[string]any)
		ratio := spec["indicator"].(map[string]any)["spec"].(map[string]any)["ratioMetric"].(map[string]any)
		if m["kind"] != "SLO" || m["metadata"].(map[string]any)["name"] != want.name || spec["service"] != "shop" ||
			formatAny(obj["target"]) != want.target || ratio[want.ratio] == nil || ratio["total"] == nil {
			t.Errorf("OpenSLO document %d: %v", i, m)
		}
	}
	s := parseYAML(t, string(p.Sloth("a test", "shop")))
	slos := s["slos"].([]any)
	if s["version"] != "prometheus/v1" || len(slos) != 2 {
		t.Fatalf("Sloth spec: %v", s)
	}
	first := slos[0].(map[string]any)
	ev := first["sli"].(map[string]any)["events"].(map[string]any)
	if formatAny(first["objective"]) != "50" || !strings.Contains(ev["error_query"].(string), `le="0.04"}[{{.window}}]`) {
		t.Errorf("Sloth objective: %v", first)
	}
}

// TestSlothOddProbeName: Sloth renders error_query and total_query as Go
// templates (text/template, missingkey=error) with the window, so a probe
// named with a template's delimiters made Sloth refuse the spec. Rendered
// as Sloth renders them, the queries are the objective's own, for the
// name as it is.
func TestSlothOddProbeName(t *testing.T) {
	const name = "x{{y}} }}{{ .window }}"
	p := testPlanOf(t, name, "critical:14.4:1h:5m,warning:1:6h:30m")
	s := parseYAML(t, string(p.Sloth("a test", "shop")))
	slos := s["slos"].([]any)
	if len(slos) != len(p.Objectives) {
		t.Fatalf("%d Sloth objectives, want %d", len(slos), len(p.Objectives))
	}
	for i, v := range slos {
		o := &p.Objectives[i]
		ev := v.(map[string]any)["sli"].(map[string]any)["events"].(map[string]any)
		for key, want := range map[string]string{
			"error_query": strings.Join(strings.Fields(o.errorRate("5m")), " "),
			"total_query": o.totalRate("5m"),
		} {
			tpl, err := template.New(key).Option("missingkey=error").Parse(ev[key].(string))
			if err != nil {
				t.Errorf("%s %s: %v", o.Name, key, err)
				continue
			}
			var b strings.Builder
			if err := tpl.Execute(&b, map[string]string{"window": "5m"}); err != nil {
				t.Errorf("%s %s: %v", o.Name, key, err)
				continue
			}
			if b.String() != want {
				t.Errorf("%s %s renders\n%s\nwant\n%s", o.Name, key, b.String(), want)
			}
		}
	}
}

func parseYAML(t *testing.T, doc string) map[string]any {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	raw, err := r.AsRaw()
	if err != nil {
		t.Fatal(err)
	}
	m, ok := raw.(map[string]any)
	if !ok {
		t.Fatalf("not a YAML map but %T:\n%s", raw, doc)
	}
	return m
}

func formatAny(v any) string {
	switch x := v.(type) {
	case float64:
		return formatNumber(x)
	case int:
		return formatNumber(float64(x))
	}
	return "?"
}

// TestOpenSLOKeepsUnalertedObjectives: an objective whose every alert tier
// is refused (a budget of 0.5 under --max-error-ratio 0.4: no burn above
// 0.8× can be told apart) has no alert, and no rule, but is an objective
// still: the OpenSLO documents, which carry no alerting, describe it.
func TestOpenSLOKeepsUnalertedObjectives(t *testing.T) {
	probes := []Probe{{Name: "job", Bounds: uniform(0.002, 100), QTA: qta(0.01, pt(40*time.Millisecond, 0.5))}}
	p, err := New(probes, Options{MaxErrorRatio: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Objectives) != 1 || p.Objectives[0].Name != "success" || len(p.Unalerted) != 1 || p.Unalerted[0].Name != "within-40ms" {
		t.Fatalf("objectives %+v, unalerted %+v: want success alerted, within-40ms not", p.Objectives, p.Unalerted)
	}
	for _, l := range strings.Split(string(p.Rules("a test")), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") && strings.Contains(l, "within-40ms") {
			t.Errorf("the rules have the objective without a tier beyond their comments: %q", l)
		}
	}
	docs := strings.Split(string(p.OpenSLO("a test", "shop")), "\n---\n")
	var names []string
	for _, d := range docs[1:] {
		names = append(names, parseYAML(t, d)["metadata"].(map[string]any)["name"].(string))
	}
	if !slices.Equal(names, []string{"job-success", "job-within-40ms"}) {
		t.Errorf("OpenSLO documents %q, want both objectives", names)
	}
}

// TestRulesLineSeparatorNames: YAML takes U+2028 and U+2029 (and U+0085)
// for line breaks, which are no control characters: a probe named with
// one ended a comment line of the rules, and the rest of the name broke
// their YAML (promtool: "did not find expected key"). Every file parses,
// with one rule per objective and tier, and each alert's deltaq_probe is
// the name.
func TestRulesLineSeparatorNames(t *testing.T) {
	for _, name := range []string{"a\u2028- record: x", "a\u2029b", "a\u0085b"} {
		p := testPlanOf(t, name, "critical:14.4:1h:5m,warning:1:6h:30m")
		rules := parseYAML(t, string(p.Rules("a test")))
		alerts := 0
		for _, g := range rules["groups"].([]any) {
			for _, r := range g.(map[string]any)["rules"].([]any) {
				if r := r.(map[string]any); r["alert"] != nil {
					alerts++
					if got := r["labels"].(map[string]any)["deltaq_probe"]; got != name {
						t.Errorf("%q: an alert's deltaq_probe is %q", name, got)
					}
				}
			}
		}
		if want := len(p.Objectives[0].Alerts) + len(p.Objectives[1].Alerts); alerts != want {
			t.Errorf("%q: %d alerts in the rules, want %d", name, alerts, want)
		}
		parseYAML(t, string(p.RuleTests("rules.yml")))
		parseYAML(t, string(p.Sloth("a test", "shop")))
		for _, doc := range strings.Split(string(p.OpenSLO("a test", "shop")), "\n---\n")[1:] {
			parseYAML(t, doc)
		}
		promtoolRules(t, p)
	}
}

// TestInexactPointEdgesWithinReach: a refused QTA point names the bin
// edges to move it to, and only those a QTA delay, a whole number of
// nanoseconds, can name. With 3 bins up to 1 s (edges 0.333333333333 s,
// 0.666666666667 s, 1 s, as the connector writes them) a point at
// 333333333 ns was told to move to "0s and 333.333333ms": to no edge
// (0 is no QTA delay) and to where it already was. Below the first edge
// the first alone is named.
func TestInexactPointEdgesWithinReach(t *testing.T) {
	thirds := Probe{Name: "p", Bounds: []float64{0.333333333333, 0.666666666667, 1}, Layout: "3 bins of 333.333333ms up to 1s"}
	fifths := Probe{Name: "q", Bounds: uniform(0.002, 100), Layout: "100 bins of 2ms up to 200ms"}
	for _, c := range []struct {
		pr   Probe
		d    time.Duration
		want string
	}{
		{thirds, 333333333, "333.333333ms is not a bucket bound of deltaq.observed (3 bins of 333.333333ms up to 1s): " +
			"no QTA delay names a bin edge near it (0.333333333333 s is not a whole number of nanoseconds, which QTA delays are: " +
			"dmax a multiple of bins nanoseconds puts every bin edge within reach)"},
		{thirds, 800 * time.Millisecond, "800ms is not a bucket bound of deltaq.observed (3 bins of 333.333333ms up to 1s): " +
			"the nearest bin edge is 1s; move the QTA point to it for an exact SLI (0.666666666667 s is not a whole number of nanoseconds, " +
			"which QTA delays are: dmax a multiple of bins nanoseconds puts every bin edge within reach)"},
		{thirds, 500 * time.Millisecond, "500ms is not a bucket bound of deltaq.observed (3 bins of 333.333333ms up to 1s): " +
			"no QTA delay names a bin edge near it (0.333333333333 s and 0.666666666667 s are not whole numbers of nanoseconds, " +
			"which QTA delays are: dmax a multiple of bins nanoseconds puts every bin edge within reach)"},
		{fifths, time.Millisecond, "1ms is not a bucket bound of deltaq.observed (100 bins of 2ms up to 200ms): " +
			"the nearest bin edge is 2ms; move the QTA point to it for an exact SLI"},
		{fifths, 41 * time.Millisecond, "41ms is not a bucket bound of deltaq.observed (100 bins of 2ms up to 200ms): " +
			"the nearest bin edges are 40ms and 42ms; move the QTA point to one of them for an exact SLI"},
		{thirds, time.Second, ""},
	} {
		if got := InexactPoint(c.pr, c.d); got != c.want {
			t.Errorf("%s at %s:\n got %q\nwant %q", c.pr.Layout, c.d, got, c.want)
		}
	}
}
