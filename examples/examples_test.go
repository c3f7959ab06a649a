// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/slo"
)

// promMetric is one metric of the deltaq output contract (docs/design.md, "Output"
// and internal/contract) as Prometheus names it after the collector's prometheusremotewrite
// exporter with its default translation (unit and type suffixes, '.' → '_').
type promMetric struct {
	otel, prom string
	// labels are the metric's own data point attributes, in Prometheus form.
	labels []string
}

// contract is the table of examples/README.md, "Prometheus names". Every query of
// the dashboard and every rule must use these names only.
var contract = []promMetric{
	{"deltaq.observed", "deltaq_observed_seconds", []string{"deltaq_probe"}},
	{"deltaq.cdf", "deltaq_cdf_ratio", []string{"deltaq_probe", "deltaq_series", "deltaq_scenario", "deltaq_le"}},
	{"deltaq.quantile", "deltaq_quantile_seconds", []string{"deltaq_probe", "deltaq_series", "deltaq_scenario", "deltaq_q"}},
	{"deltaq.outcomes", "deltaq_outcomes_total", []string{"deltaq_probe", "deltaq_outcome"}},
	{"deltaq.failure_ratio", "deltaq_failure_ratio", []string{"deltaq_probe"}},
	{"deltaq.qta.violation", "deltaq_qta_violation", []string{"deltaq_probe"}},
	{"deltaq.qta.point", "deltaq_qta_point_ratio", []string{"deltaq_probe", "deltaq_le"}},
	{"deltaq.qta.max_failure", "deltaq_qta_max_failure_ratio", []string{"deltaq_probe"}},
	{"deltaq.divergence", "deltaq_divergence_ratio", []string{"deltaq_probe"}},
	{"deltaq.divergence.p_value", "deltaq_divergence_p_value", []string{"deltaq_probe"}},
	{"deltaq.divergence.statistic", "deltaq_divergence_statistic", []string{"deltaq_probe"}},
	{"deltaq.qta.slack", "deltaq_qta_slack", []string{"deltaq_probe", "deltaq_le"}},
	{"deltaq.qta.slack.min", "deltaq_qta_slack_min", []string{"deltaq_probe"}},
	{"deltaq.qta.margin.min", "deltaq_qta_margin_min_seconds", []string{"deltaq_probe"}},
	{"deltaq.qta.time_to_violation", "deltaq_qta_time_to_violation_seconds", []string{"deltaq_probe"}},
	{"deltaq.qta.slack.trend.stderr", "deltaq_qta_slack_trend_stderr_per_second", []string{"deltaq_probe"}},
	{"deltaq.qta.slack.trend.upper", "deltaq_qta_slack_trend_upper", []string{"deltaq_probe"}},
	{"deltaq.qta.holds", "deltaq_qta_holds_ratio", []string{"deltaq_probe", "deltaq_series"}},
	{"deltaq.calculated.bounds.width", "deltaq_calculated_bounds_width_ratio", []string{"deltaq_probe"}},
	{"deltaq.divergence.detectable", "deltaq_divergence_detectable_ratio", []string{"deltaq_probe"}},
	{"deltaq.qoo.score", "deltaq_qoo_score_percent", []string{"deltaq_probe", "deltaq_series"}},
	{"deltaq.qoo.latency", "deltaq_qoo_latency_percent", []string{"deltaq_probe", "deltaq_series"}},
	{"deltaq.qoo.loss", "deltaq_qoo_loss_percent", []string{"deltaq_probe", "deltaq_series"}},
	{"deltaq.qoo.rate", "deltaq_qoo_rate_percent", []string{"deltaq_probe", "deltaq_series"}},
	{"deltaq.window.contributors", "deltaq_window_contributors", nil},
}

// histogramSeries are the series Prometheus stores for a histogram metric.
var histogramSeries = []string{"_bucket", "_sum", "_count"}

// knownMetric reports whether name is a Prometheus series name of the contract.
func knownMetric(name string) bool {
	for _, m := range contract {
		if name == m.prom {
			return true
		}
		if m.otel == "deltaq.observed" {
			for _, s := range histogramSeries {
				if name == m.prom+s {
					return true
				}
			}
		}
	}
	return false
}

// serviceLabel is on every series of a probe whose spans named their
// service (deltaq.service).
const serviceLabel = "deltaq_service"

// sloLabels are the labels the generated SLO rules (deltaq slo,
// prometheus/rules/deltaq-slo.yml) put on their recorded series and alerts.
var sloLabels = []string{"deltaq_slo", "deltaq_slo_window", "deltaq_slo_burn_rate"}

// knownLabel reports whether name is a label of some contract metric or of
// the SLO rules' series.
func knownLabel(name string) bool {
	if name == serviceLabel || slices.Contains(sloLabels, name) {
		return true
	}
	for _, m := range contract {
		if slices.Contains(m.labels, name) {
			return true
		}
	}
	return false
}

// deltaqIdent matches every identifier of the project's namespace in a query.
var deltaqIdent = regexp.MustCompile(`\bdeltaq_[a-z_]+\b`)

// sloRecord matches the series the SLO rules record: deltaq:slo_….
var sloRecord = regexp.MustCompile(`\bdeltaq:slo_[a-z_]+:[a-z0-9_]+\b`)

// sloRecorded returns the series names prometheus/rules/deltaq-slo.yml
// records.
func sloRecorded(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("prometheus/rules/deltaq-slo.yml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: *(\S+)`).FindAllStringSubmatch(string(raw), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// checkNames reports every deltaq_* identifier in expr that is neither a contract
// metric nor a contract label, and fails if expr names no contract metric. A
// series the SLO rules record counts as a metric when the rule file records it.
func checkNames(t *testing.T, where, expr string) {
	t.Helper()
	metrics := 0
	// A string naming SLO series is a regular expression of their names
	// (a selector {__name__=~"…"}, label_replace's regex): it must match
	// some series the rule file records.
	for _, m := range regexp.MustCompile(`"(deltaq:slo_[^"]*)"`).FindAllStringSubmatch(expr, -1) {
		re, err := regexp.Compile("^(?:" + m[1] + ")$")
		if err != nil {
			t.Errorf("%s: %q: %v", where, m[1], err)
			continue
		}
		if !slices.ContainsFunc(sloRecorded(t), re.MatchString) {
			t.Errorf("%s: %q matches no series prometheus/rules/deltaq-slo.yml records in %q", where, m[1], expr)
		}
		metrics++
		expr = strings.Replace(expr, m[0], `""`, 1)
	}
	if ids := sloRecord.FindAllString(expr, -1); len(ids) > 0 {
		recorded := sloRecorded(t)
		for _, id := range ids {
			if !slices.Contains(recorded, id) {
				t.Errorf("%s: %q is not recorded by prometheus/rules/deltaq-slo.yml in %q", where, id, expr)
			}
			metrics++
		}
	}
	for _, id := range deltaqIdent.FindAllString(expr, -1) {
		switch {
		case knownMetric(id):
			metrics++
		case knownLabel(id):
		default:
			t.Errorf("%s: %q is neither a metric nor a label of the exporter contract in %q", where, id, expr)
		}
	}
	if metrics == 0 {
		t.Errorf("%s: query names no metric of the exporter contract: %q", where, expr)
	}
}

// checkBalanced fails if expr's brackets or double quotes do not pair up, the
// mistakes a hand-edited query most often has; PromQL's full grammar is left to
// Prometheus itself in the end-to-end test.
func checkBalanced(t *testing.T, where, expr string) {
	t.Helper()
	var stack []rune
	inString := false
	for i, r := range expr {
		if inString {
			if r == '"' && (i == 0 || expr[i-1] != '\\') {
				inString = false
			}
			continue
		}
		switch r {
		case '"':
			inString = true
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			open := map[rune]rune{')': '(', ']': '[', '}': '{'}[r]
			if len(stack) == 0 || stack[len(stack)-1] != open {
				t.Errorf("%s: unbalanced %q at byte %d of %q", where, r, i, expr)
				return
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inString {
		t.Errorf("%s: unterminated string in %q", where, expr)
	}
	if len(stack) > 0 {
		t.Errorf("%s: unclosed %q in %q", where, stack[len(stack)-1], expr)
	}
}

// grafanaVar matches Grafana variable references: $name, ${name} and ${name:fmt}.
var grafanaVar = regexp.MustCompile(`\$(\{[A-Za-z0-9_]+(:[a-z]+)?\}|[A-Za-z0-9_]+)`)

// dashboard is the part of Grafana's dashboard model the tests read.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
}

type panel struct {
	ID              int                      `json:"id"`
	Type            string                   `json:"type"`
	Title           string                   `json:"title"`
	Datasource      *datasourceRef           `json:"datasource"`
	Repeat          string                   `json:"repeat"`
	GridPos         struct{ H, W, X, Y int } `json:"gridPos"`
	Targets         []target                 `json:"targets"`
	Transformations []struct {
		ID      string         `json:"id"`
		Options map[string]any `json:"options"`
	} `json:"transformations"`
	Options map[string]any `json:"options"`
}

type target struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Datasource *datasourceRef `json:"datasource"`
	Instant    bool           `json:"instant"`
	Range      bool           `json:"range"`
	Format     string         `json:"format"`
}

// The dashboard's schema version: the one Grafana 13 writes (@grafana/schema
// 13.2, defaultDashboard.schemaVersion).
const schemaVersion = 42

// promDatasource is how every panel and query refers to the Prometheus data
// source: through the dashboard's datasource variable.
var promDatasource = datasourceRef{Type: "prometheus", UID: "${datasource}"}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile("grafana/deltaq-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	var d dashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana/deltaq-dashboard.json: %v", err)
	}
	return d
}

func TestDashboardModel(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: both must be set", d.UID, d.Title)
	}
	if d.SchemaVersion != schemaVersion {
		t.Errorf("schemaVersion = %d, want %d", d.SchemaVersion, schemaVersion)
	}

	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds, ok := vars["datasource"]; !ok || ds.Type != "datasource" || string(ds.Query) != `"prometheus"` {
		t.Errorf("templating: want a datasource variable \"datasource\" of plugin prometheus, got %+v", ds)
	}
	probe, ok := vars["probe"]
	if !ok {
		t.Fatal("templating: no \"probe\" variable")
	}
	var probeQuery string
	if err := json.Unmarshal(probe.Query, &probeQuery); err != nil {
		t.Fatalf("probe variable query: %v", err)
	}
	if probe.Type != "query" || probe.Datasource == nil || *probe.Datasource != promDatasource {
		t.Errorf("probe variable: want a query variable on %+v, got type %q on %+v", promDatasource, probe.Type, probe.Datasource)
	}
	m := regexp.MustCompile(`^label_values\(([a-z_]+)(?:\{[^}]*\})?, *deltaq_probe\)$`).FindStringSubmatch(probeQuery)
	if m == nil || !knownMetric(m[1]) {
		t.Errorf("probe variable query %q: want label_values(<contract metric>, deltaq_probe)", probeQuery)
	}
	if !probe.Multi || !probe.IncludeAll {
		t.Errorf("probe variable: multi %v, includeAll %v; want both so that every probe can be shown", probe.Multi, probe.IncludeAll)
	}
	// The collectors (job, instance) and the applications (deltaq_service)
	// select series too, each a multi-value query variable with "All".
	for name, label := range map[string]string{"job": "job", "instance": "instance", "service": serviceLabel} {
		v, ok := vars[name]
		if !ok {
			t.Errorf("templating: no %q variable", name)
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil || !strings.HasPrefix(q, "label_values(") || !strings.HasSuffix(q, ", "+label+")") {
			t.Errorf("%s variable query %s: want label_values(..., %s)", name, v.Query, label)
		}
		if !v.Multi || !v.IncludeAll {
			t.Errorf("%s variable: multi %v, includeAll %v; want both", name, v.Multi, v.IncludeAll)
		}
	}
}

func TestDashboardPanels(t *testing.T) {
	d := loadDashboard(t)
	if len(d.Panels) == 0 {
		t.Fatal("no panels")
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		where := p.Title
		if ids[p.ID] {
			t.Errorf("%s: panel id %d used twice", where, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			t.Errorf("%s: rows are not used; collapsed rows would hide panels from the query checks", where)
		}
		if p.Datasource == nil || *p.Datasource != promDatasource {
			t.Errorf("%s: datasource %+v, want %+v", where, p.Datasource, promDatasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", where)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			w := where + " " + tg.RefID
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("%s: refId empty or repeated", w)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || *tg.Datasource != promDatasource {
				t.Errorf("%s: datasource %+v, want %+v", w, tg.Datasource, promDatasource)
			}
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: empty expr", w)
				continue
			}
			checkNames(t, w, tg.Expr)
			checkBalanced(t, w, tg.Expr)
			for _, v := range grafanaVar.FindAllString(tg.Expr, -1) {
				if regexp.MustCompile(`^\$[0-9]+$`).MatchString(v) {
					continue // label_replace's reference to a group of its regex
				}
				if !slices.Contains([]string{"$probe", "$job", "$instance", "$service", "$__rate_interval", "$__range"}, v) {
					t.Errorf("%s: variable %s is not one the dashboard defines or the end-to-end test substitutes", w, v)
				}
			}
			if strings.Contains(tg.Expr, "deltaq_probe=") && !strings.Contains(tg.Expr, `deltaq_probe=~"$probe"`) {
				t.Errorf("%s: probe selector must be deltaq_probe=~\"$probe\" (multi-value variable): %q", w, tg.Expr)
			}
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v outside the 24-column grid", where, g)
		}
	}
	// Panels must not overlap (Grafana would push them around on load).
	for i, a := range d.Panels {
		for _, b := range d.Panels[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
				t.Errorf("panels %q and %q overlap: %+v, %+v", a.Title, b.Title, ga, gb)
			}
		}
	}
}

// TestDashboardCoversContract checks that the dashboard draws what the issue
// asks for: the CDF curves per probe, quantiles, failure ratio, outcome rates,
// QTA state and divergence.
func TestDashboardCoversContract(t *testing.T) {
	d := loadDashboard(t)
	uses := func(metric string) []panel {
		var ps []panel
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				if slices.Contains(deltaqIdent.FindAllString(tg.Expr, -1), metric) {
					ps = append(ps, p)
					break
				}
			}
		}
		return ps
	}
	for _, name := range []string{
		"deltaq_cdf_ratio", "deltaq_quantile_seconds", "deltaq_qta_max_failure_ratio",
		"deltaq_outcomes_total", "deltaq_qta_violation", "deltaq_divergence_ratio",
		"deltaq_observed_seconds_bucket",
	} {
		if len(uses(name)) == 0 {
			t.Errorf("no panel queries %s", name)
		}
	}

	// Counters and cumulative histograms are read through rate() or
	// increase(), never as raw values; their samples' times (timestamp(),
	// count_over_time()) say which windows a collector wrote.
	for _, c := range []string{"deltaq_outcomes_total", "deltaq_observed_seconds_bucket"} {
		for _, p := range uses(c) {
			for _, tg := range p.Targets {
				read := 0
				for _, f := range []string{"rate(", "increase(", "timestamp(", "count_over_time("} {
					read += strings.Count(tg.Expr, f+c)
				}
				if n := strings.Count(tg.Expr, c); n != read {
					t.Errorf("%s: %s is cumulative; read it with rate(...) or increase(...), got %q", p.Title, c, tg.Expr)
				}
			}
		}
	}

	// The CDF panel: one per probe, an instant table query turned into one column
	// per deltaq_series against a numeric delay column, drawn by a panel with a
	// numeric x axis.
	cdf := uses("deltaq_cdf_ratio")
	if len(cdf) != 1 {
		t.Fatalf("want exactly one CDF panel, got %d", len(cdf))
	}
	p := cdf[0]
	if p.Repeat != "probe" {
		t.Errorf("CDF panel repeats over %q, want probe", p.Repeat)
	}
	if p.Type != "trend" || p.Options["xField"] != "delay" {
		t.Errorf("CDF panel: type %q xField %v, want trend over delay", p.Type, p.Options["xField"])
	}
	for _, tg := range p.Targets {
		if !tg.Instant || tg.Range || tg.Format != "table" {
			t.Errorf("CDF panel %s: instant %v range %v format %q; want an instant table query", tg.RefID, tg.Instant, tg.Range, tg.Format)
		}
	}
	var steps []string
	for _, tr := range p.Transformations {
		steps = append(steps, tr.ID)
		if tr.ID == "groupingToMatrix" {
			o := tr.Options
			if o["columnField"] != "deltaq_series" || o["rowField"] != "deltaq_le" || o["valueField"] != "Value" {
				t.Errorf("groupingToMatrix options %v: want columns per deltaq_series, rows per deltaq_le, cells from Value", o)
			}
		}
	}
	want := []string{"groupingToMatrix", "organize", "convertFieldType", "sortBy"}
	if !slices.Equal(steps, want) {
		t.Errorf("CDF transformations %v, want %v", steps, want)
	}
}

// TestReadmeNames checks that examples/README.md documents the names this test
// holds the dashboard and rules to.
func TestReadmeNames(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, m := range contract {
		row := "| `" + m.otel + "` | `" + m.prom + "` |"
		if !strings.Contains(readme, row) {
			t.Errorf("README.md lacks the table row %q", row)
		}
	}
}

// TestAlertRuleNames checks that every deltaq_* identifier in the rule files is a
// contract metric or label, and that each alert expression names a metric.
func TestAlertRuleNames(t *testing.T) {
	raw, err := os.ReadFile("prometheus/rules/deltaq-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	exprs := ruleExprs(text)
	if len(exprs) == 0 {
		t.Fatal("no expr: found in the rule file")
	}
	var alerts []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: *(\S+)`).FindAllStringSubmatch(text, -1) {
		alerts = append(alerts, m[1])
	}
	if len(alerts) != len(exprs) {
		t.Fatalf("%d alerts but %d expressions", len(alerts), len(exprs))
	}
	for i, expr := range exprs {
		checkNames(t, alerts[i], expr)
		checkBalanced(t, alerts[i], expr)
	}
	sort.Strings(alerts)
	want := []string{"DeltaQDivergenceSignificant", "DeltaQFailureRatioHigh", "DeltaQNoData", "DeltaQProbeSilent", "DeltaQQTABreach",
		"DeltaQQTASlackFalling", "DeltaQQTAViolation"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}

// TestSLORuleNames checks the generated SLO rules as TestAlertRuleNames checks
// the hand-written ones: every deltaq_* identifier is a contract metric or
// label, every alert is DeltaQErrorBudgetBurn with a severity of critical or warning
// and a runbook_url whose anchor docs/runbook.md has.
func TestSLORuleNames(t *testing.T) {
	raw, err := os.ReadFile("prometheus/rules/deltaq-slo.yml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for i, expr := range ruleExprs(text) {
		if strings.HasPrefix(expr, "vector(") {
			continue // an objective or a budget, a constant
		}
		checkNames(t, fmt.Sprintf("expr %d", i), expr)
		checkBalanced(t, fmt.Sprintf("expr %d", i), expr)
	}
	alerts := regexp.MustCompile(`(?m)^\s*- alert: *(\S+)`).FindAllStringSubmatch(text, -1)
	severities := regexp.MustCompile(`(?m)^\s*severity: *(\S+)`).FindAllStringSubmatch(text, -1)
	if len(alerts) == 0 || len(alerts) != len(severities) {
		t.Fatalf("%d alerts, %d severities", len(alerts), len(severities))
	}
	for i, a := range alerts {
		if a[1] != "DeltaQErrorBudgetBurn" || (severities[i][1] != "critical" && severities[i][1] != "warning") {
			t.Errorf("alert %d: %s with severity %s; want DeltaQErrorBudgetBurn, critical or warning", i, a[1], severities[i][1])
		}
	}
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`runbook_url: "[^"#]*#([a-z0-9-]+)"`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(strings.ToLower(string(runbook)), "\n## "+strings.ReplaceAll(m[1], "-", " ")) {
			t.Errorf("runbook_url anchor #%s: docs/runbook.md has no such section", m[1])
		}
	}
}

// TestHandWrittenAlertsListed: every alert of the hand-written rule files
// has its row in examples/README.md (its severity the row's last cell), a
// section of docs/runbook.md that its runbook_url names and that names it,
// and a case in the promtool tests, so that a new rule is not shipped
// unlisted, without a runbook or untested.
func TestHandWrittenAlertsListed(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("prometheus/tests/deltaq-alerts.test.yml")
	if err != nil {
		t.Fatal(err)
	}
	sections := runbookSections(string(runbook))
	for _, f := range []string{"prometheus/rules/deltaq-alerts.yml", "prometheus/rules/collector-alerts.yml"} {
		var file struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Labels      map[string]string `yaml:"labels"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		readYAML(t, f, &file)
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				if r.Alert == "" {
					continue
				}
				row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(r.Alert) + "` \\|.*\\| ([a-z]+) \\|$").FindStringSubmatch(string(readme))
				if row == nil || row[1] != r.Labels["severity"] {
					t.Errorf("%s: %s (severity %s) has no row in examples/README.md ending in its severity: %q", f, r.Alert, r.Labels["severity"], row)
				}
				_, anchor, _ := strings.Cut(r.Annotations["runbook_url"], "#")
				if sec, ok := sections[anchor]; !ok || !strings.Contains(sec, "`"+r.Alert+"`") {
					t.Errorf("%s: %s: runbook_url anchor #%s: docs/runbook.md has no such section naming the alert", f, r.Alert, anchor)
				}
				if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
					t.Errorf("%s: %s has no case in prometheus/tests/deltaq-alerts.test.yml", f, r.Alert)
				}
			}
		}
	}
}

// runbookSections returns the text of each section of a Markdown document
// (## or ###, up to the next heading) by its anchor as GitHub makes it: the
// heading in lower case, without punctuation, spaces as hyphens.
func runbookSections(doc string) map[string]string {
	out := map[string]string{}
	heading := regexp.MustCompile(`(?m)^#{2,3} (.+)$`)
	idx := heading.FindAllStringSubmatchIndex(doc, -1)
	for i, m := range idx {
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(doc[m[2]:m[3]]) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		out[slug.String()] = doc[m[1]:end]
	}
	return out
}

// TestSeverityVocabulary: every alert the project ships or generates has a
// severity of the one vocabulary (critical, warning, info), so that one
// Alertmanager route treats them alike; with amtool installed, the example
// Alertmanager configuration routes each severity to its receiver.
func TestSeverityVocabulary(t *testing.T) {
	// Where the example Alertmanager configuration sends each severity,
	// and an alert without one.
	severityRoutes := map[string]string{"critical": "deltaq-page", "warning": "deltaq-ticket", "info": "deltaq-none", "": "deltaq-ticket"}
	files, err := filepath.Glob("prometheus/rules/*.yml")
	if err != nil || len(files) < 3 {
		t.Fatalf("rule files %v (%v): want the hand-written, collector and SLO rules", files, err)
	}
	used := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		alerts := regexp.MustCompile(`(?m)^\s*- alert: *(\S+)`).FindAllStringSubmatch(string(raw), -1)
		severities := regexp.MustCompile(`(?m)^\s*severity: *(\S+)`).FindAllStringSubmatch(string(raw), -1)
		if len(alerts) == 0 || len(alerts) != len(severities) {
			t.Errorf("%s: %d alerts, %d severities: want one each", f, len(alerts), len(severities))
		}
		for _, s := range severities {
			if _, ok := severityRoutes[s[1]]; !ok || s[1] == "" {
				t.Errorf("%s: severity %s: want critical, warning or info", f, s[1])
			}
			used[s[1]] = true
		}
	}
	if len(used) != 3 {
		t.Errorf("severities used %v: want all of critical, warning and info", used)
	}
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Skip("amtool not installed: the routes are not checked")
	}
	for severity, receiver := range severityRoutes {
		args := []string{"config", "routes", "test", "--config.file=alertmanager/alertmanager.yml", "alertname=DeltaQErrorBudgetBurn"}
		if severity != "" {
			args = append(args, "severity="+severity)
		}
		// Its standard output is the receivers; a warning goes to standard error.
		out, err := exec.Command(amtool, args...).Output()
		if err != nil || strings.TrimSpace(string(out)) != receiver {
			t.Errorf("amtool %s: %v %q, want %s", strings.Join(args, " "), err, out, receiver)
		}
	}
}

// TestInhibitionOutlastsTarget: an inhibition of alertmanager.yml between two
// hand-written alerts holds until the target's alert has resolved too. A
// target that reads a range (DeltaQFailureRatioHigh's minute of outcomes)
// still counts the samples of the episode that fired the source for that
// range after the source's condition ends; the source keeps firing at least
// as long (keep_firing_for), or its end lifts the inhibition and Alertmanager
// sends the target for the rest of its range. The promtool test "The end of
// a page opens no ticket" shows the sequence.
func TestInhibitionOutlastsTarget(t *testing.T) {
	type rule struct {
		Alert         string `yaml:"alert"`
		Expr          string `yaml:"expr"`
		KeepFiringFor string `yaml:"keep_firing_for"`
	}
	alerts := map[string]rule{}
	for _, f := range []string{"prometheus/rules/deltaq-alerts.yml", "prometheus/rules/collector-alerts.yml"} {
		var file struct {
			Groups []struct{ Rules []rule } `yaml:"groups"`
		}
		readYAML(t, f, &file)
		for _, g := range file.Groups {
			for _, r := range g.Rules {
				if r.Alert != "" {
					alerts[r.Alert] = r
				}
			}
		}
	}
	var am struct {
		InhibitRules []struct {
			Source []string `yaml:"source_matchers"`
			Target []string `yaml:"target_matchers"`
		} `yaml:"inhibit_rules"`
	}
	readYAML(t, "alertmanager/alertmanager.yml", &am)
	alertname := regexp.MustCompile(`^alertname="([^"]+)"$`)
	checked := 0
	for _, ir := range am.InhibitRules {
		var source, target string
		for _, m := range ir.Source {
			if sm := alertname.FindStringSubmatch(m); sm != nil {
				source = sm[1]
			}
		}
		for _, m := range ir.Target {
			if tm := alertname.FindStringSubmatch(m); tm != nil {
				target = tm[1]
			}
		}
		src, ok1 := alerts[source]
		tgt, ok2 := alerts[target]
		if !ok1 || !ok2 {
			continue // the generated rules' tiers (deltaq-slo.yml), or another file's
		}
		checked++
		var longest time.Duration
		for _, m := range regexp.MustCompile(`\[([0-9]+[smh])\]`).FindAllStringSubmatch(tgt.Expr, -1) {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatal(err)
			}
			longest = max(longest, d)
		}
		keep, err := time.ParseDuration(src.KeepFiringFor)
		if src.KeepFiringFor == "" {
			keep, err = 0, nil
		}
		if err != nil {
			t.Fatalf("%s: keep_firing_for %q: %v", source, src.KeepFiringFor, err)
		}
		if keep < longest {
			t.Errorf("%s inhibits %s, whose expression reads a range of %s, but keeps firing for %s after its condition ends: "+
				"the end of %s would send %s for the rest of that range; set its keep_firing_for to at least %s",
				source, target, longest, keep, source, target, longest)
		}
	}
	if checked == 0 {
		t.Fatal("no inhibition between two hand-written alerts found in alertmanager.yml")
	}
}

// TestBudgetTicketsInhibited: for each alert deltaq slo generates, a page
// (critical) inhibits the ticket (warning) of the same objective, as the
// README says Alertmanager does.
func TestBudgetTicketsInhibited(t *testing.T) {
	var am struct {
		InhibitRules []struct {
			Source []string `yaml:"source_matchers"`
			Target []string `yaml:"target_matchers"`
			Equal  []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
	}
	readYAML(t, "alertmanager/alertmanager.yml", &am)
	for _, alert := range []string{slo.AlertName, slo.AlertQoOName} {
		name := `alertname="` + alert + `"`
		found := false
		for _, ir := range am.InhibitRules {
			found = found || slices.Contains(ir.Source, name) && slices.Contains(ir.Source, `severity="critical"`) &&
				slices.Contains(ir.Target, name) && slices.Contains(ir.Target, `severity="warning"`) &&
				slices.Contains(ir.Equal, "deltaq_probe") && slices.Contains(ir.Equal, "deltaq_slo")
		}
		if !found {
			t.Errorf("alertmanager.yml: no inhibition of a %s ticket under a page of the same probe and objective (deltaq_probe, deltaq_slo)", alert)
		}
	}
}

// readYAML decodes a YAML file into v.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ruleExprs returns the `expr:` values of a rule file, single-line or as block
// scalars (`>-`, `|`) whose lines are indented deeper than the key, with runs of
// white space folded to one space.
func ruleExprs(text string) []string {
	var exprs []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		key := strings.Index(line, "expr:")
		if key < 0 || strings.TrimSpace(line[:key]) != "" {
			continue
		}
		value := strings.TrimSpace(line[key+len("expr:"):])
		if value == ">-" || value == ">" || value == "|" || value == "|-" {
			var block []string
			for i+1 < len(lines) {
				next := lines[i+1]
				if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= key {
					break
				}
				block = append(block, next)
				i++
			}
			value = strings.Join(block, " ")
		}
		exprs = append(exprs, strings.Join(strings.Fields(value), " "))
	}
	return exprs
}

// dashboardQueries returns every query of the dashboard with the Grafana
// variables replaced as the end-to-end test replaces them: $probe, $job,
// $instance and $service by regexes matching every value, $__rate_interval
// by one minute, $__range by five.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var qs []string
	r := strings.NewReplacer("$probe", ".+", "$job", ".+", "$instance", ".+", "$service", ".*",
		"$__rate_interval", "1m", "$__range", "5m")
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			qs = append(qs, r.Replace(tg.Expr))
		}
	}
	return qs
}

// TestDashboardQueriesParse has Prometheus's own parser read every dashboard
// query: they are written as recording rules and checked with promtool check
// rules. Skipped where promtool is not installed.
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range dashboardQueries(t) {
		quoted, err := json.Marshal(q) // a JSON string is a YAML double-quoted scalar
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "      - record: dashboard_query_%d\n        expr: %s\n", i, quoted)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the dashboard queries: %v\n%s\n%s", err, out, b.String())
	}
}

// TestPromtool runs Prometheus's and Alertmanager's own checkers over the
// examples: the rule unit tests (promtool test rules), the Prometheus
// configuration and the Alertmanager configuration. It is skipped where the tools
// are not installed; CI installs them for the end-to-end test.
func TestPromtool(t *testing.T) {
	run := func(t *testing.T, tool string, args ...string) {
		t.Helper()
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not installed", tool)
		}
		out, err := exec.Command(path, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
		}
	}
	t.Run("test rules", func(t *testing.T) {
		run(t, "promtool", "test", "rules", "prometheus/tests/deltaq-alerts.test.yml")
	})
	// The SLO rules' tests, generated with them (deltaq slo --tests).
	t.Run("test SLO rules", func(t *testing.T) {
		run(t, "promtool", "test", "rules", "prometheus/tests/deltaq-slo.test.yml")
	})
	// PROMTOOL names another promtool to run the unit tests with too, such
	// as Prometheus 3's: they are written to pass under Prometheus 2 and 3.
	if other := os.Getenv("PROMTOOL"); other != "" {
		t.Run("test rules with PROMTOOL", func(t *testing.T) {
			run(t, other, "test", "rules", "prometheus/tests/deltaq-alerts.test.yml", "prometheus/tests/deltaq-slo.test.yml")
		})
	}
	t.Run("check config", func(t *testing.T) {
		run(t, "promtool", "check", "config", "prometheus/prometheus.yml")
	})
	t.Run("check alertmanager", func(t *testing.T) {
		run(t, "amtool", "check-config", "alertmanager/alertmanager.yml")
	})
}

// TestDashboardQuantileReadsNativeHistograms: with histogram: {exponential:
// {}} deltaq.observed reaches Prometheus as the native histogram
// deltaq_observed_seconds, without _bucket series, so that every quantile
// the dashboard reads from the classic histogram it also reads from the
// native one.
func TestDashboardQuantileReadsNativeHistograms(t *testing.T) {
	n := 0
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, "histogram_quantile(") || !strings.Contains(tg.Expr, "deltaq_observed_seconds_bucket") {
				continue
			}
			n++
			if !strings.Contains(tg.Expr, "rate(deltaq_observed_seconds{") {
				t.Errorf("%s %s: reads the classic histogram only: %q", p.Title, tg.RefID, tg.Expr)
			}
		}
	}
	if n == 0 {
		t.Error("no panel reads a quantile of deltaq_observed_seconds")
	}
}

// TestDashboardCDFAcrossServiceChange evaluates the CDF panel's query with
// promtool over a probe whose deltaq_service changes (a second service
// sends its instances): the old series stop, the new ones count from that
// window. Remote-written series do not go stale, so for five minutes an
// instant query still returns the old curve's last sample beside the new
// one. Each curve must be weighted by its own series' instances: the old
// one has none in the last minute and drops out. Weighted by the probe's
// instances of the collector as a whole, both curves counted them, and
// two minutes after the change the panel drew 0.5 + 0.8 = 1.3 where the
// ΔQ is 0.8.
func TestDashboardCDFAcrossServiceChange(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	var query string
	for _, q := range dashboardQueries(t) {
		if strings.Contains(q, "deltaq_cdf_ratio") {
			query = q
		}
	}
	quoted, err := json.Marshal(query)
	if err != nil {
		t.Fatal(err)
	}
	test := `rule_files: []
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'deltaq_cdf_ratio{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_series="observed", deltaq_le="0.04"}'
        values: '0.5x9'
      - series: 'deltaq_cdf_ratio{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b", deltaq_series="observed", deltaq_le="0.04"}'
        values: '_x10 0.8x10'
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+60x9'
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b", deltaq_outcome="success"}'
        values: '_x10 60+60x10'
    promql_expr_test:
      - expr: ` + string(quoted) + `
        eval_time: 12m
        exp_samples:
          - labels: '{deltaq_series="observed", deltaq_le="0.04"}'
            value: 0.8
`
	path := filepath.Join(t.TempDir(), "cdf.test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}

// TestDashboardCurrentState evaluates the queries of the panels that show
// the latest state of a probe (QTA, quantiles, divergence, Quality of Outcome) with
// promtool where a probe's series stops and another takes its place: a new
// deltaq_service list at the same collector, a collector restarted under a
// new service.instance.id. Remote-written series do not go stale, so an
// instant query still finds the stopped series' last sample for five
// minutes: the QTA panels showed the QTA broken, from a window ten seconds
// old, while the series that replaced it said met. Only the collectors
// still writing the probe count (deltaq_outcomes_total, written every
// window, times their windows), each with its newest series. A collector
// whose export runs a window behind another's still counts; a window
// without a verdict keeps the verdict before it, and a window without a
// Quality of Outcome score is a gap, as the panel says.
func TestDashboardCurrentState(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	queries := map[string]string{}
	r := strings.NewReplacer("$probe", ".+", "$job", ".+", "$instance", ".+", "$service", ".*")
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			queries[p.Title+" "+tg.RefID] = r.Replace(tg.Expr)
		}
	}
	const (
		count      = "Probes breaking their QTA A"
		state      = "QTA state A"
		divergence = "Divergence of observed from calculated ΔQ A"
		qoo        = "Quality of Outcome of $probe A"
		quantiles  = "Quantiles A"
	)
	// Windows of 1 s, evaluated at 370s; a series that stopped did so at
	// 360s, after six minutes.
	for _, c := range []struct {
		name   string
		series string
		want   map[string]string // query: its samples at 370s
	}{
		{"service change", `
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+1x360'
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b", deltaq_outcome="success"}'
        values: '_x360 1+1x30'
      - series: 'deltaq_qta_violation{job="j", instance="c1", deltaq_probe="p", deltaq_service="a"}'
        values: '1x360'
      - series: 'deltaq_qta_violation{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b"}'
        values: '_x360 0x30'
      - series: 'deltaq_divergence_ratio{job="j", instance="c1", deltaq_probe="p", deltaq_service="a"}'
        values: '0.9x360'
      - series: 'deltaq_divergence_ratio{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b"}'
        values: '_x360 0.1x30'
      - series: 'deltaq_quantile_seconds{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_series="observed", deltaq_q="0.5"}'
        values: '0.5x360'
      - series: 'deltaq_quantile_seconds{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b", deltaq_series="observed", deltaq_q="0.5"}'
        values: '_x360 0.2x30'`,
			map[string]string{count: "{}: 0", state: `{deltaq_probe="p"}: 0`, divergence: `{deltaq_probe="p"}: 0.1`,
				quantiles: `deltaq_quantile_seconds{job="j", instance="c1", deltaq_probe="p", deltaq_service="a,b", deltaq_series="observed", deltaq_q="0.5"}: 0.2`}},
		{"collector restart", `
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+1x360'
      - series: 'deltaq_outcomes_total{job="j", instance="c2", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '_x360 1+1x30'
      - series: 'deltaq_qta_violation{job="j", instance="c1", deltaq_probe="p", deltaq_service="a"}'
        values: '1x360'
      - series: 'deltaq_qta_violation{job="j", instance="c2", deltaq_probe="p", deltaq_service="a"}'
        values: '_x360 0x30'`,
			map[string]string{count: "{}: 0", state: `{deltaq_probe="p"}: 0`}},
		// c2 broke the QTA in its newest window, 369s, and has not yet
		// written the window of 370s that c1 has.
		{"export a window behind", `
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+1x370'
      - series: 'deltaq_outcomes_total{job="j", instance="c2", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+1x369'
      - series: 'deltaq_qta_violation{job="j", instance="c1", deltaq_probe="p", deltaq_service="a"}'
        values: '0x370'
      - series: 'deltaq_qta_violation{job="j", instance="c2", deltaq_probe="p", deltaq_service="a"}'
        values: '0x368 1'`,
			map[string]string{count: "{}: 1", state: `{deltaq_probe="p"}: 1`}},
		// The window of 370s had no instances: no verdict and no score.
		{"empty window", `
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_outcome="success"}'
        values: '0+1x369 369'
      - series: 'deltaq_qta_violation{job="j", instance="c1", deltaq_probe="p", deltaq_service="a"}'
        values: '1x369'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_series="observed"}'
        values: '50x369'
      - series: 'deltaq_qoo_score_percent{job="j", instance="c1", deltaq_probe="p", deltaq_service="a", deltaq_series="calculated"}'
        values: '80x370'`,
			map[string]string{count: "{}: 1", state: `{deltaq_probe="p"}: 1`, qoo: `{deltaq_series="calculated"}: 80`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString("rule_files: []\nevaluation_interval: 1s\ntests:\n  - interval: 1s\n    input_series:" + c.series + "\n    promql_expr_test:\n")
			for _, name := range slices.Sorted(maps.Keys(c.want)) {
				q, ok := queries[name]
				if !ok {
					t.Fatalf("no panel query %q", name)
				}
				quoted, err := json.Marshal(q)
				if err != nil {
					t.Fatal(err)
				}
				labels, value, _ := strings.Cut(c.want[name], ": ")
				fmt.Fprintf(&b, "      - expr: %s\n        eval_time: 370s\n        exp_samples:\n          - labels: '%s'\n            value: %s\n",
					quoted, labels, value)
			}
			path := filepath.Join(t.TempDir(), "current.test.yml")
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
				t.Errorf("promtool test rules: %v\n%s", err, out)
			}
		})
	}
}

// TestDashboardSLOPanelsAnyPeriod evaluates the SLI and burn-rate panels'
// queries with promtool on the rules deltaq slo writes for --period 7d,
// whose windows scale with the period (1m10s, 7m, 14m, …): the panels read
// deltaq:slo_error_ratio:rate5m, rate1h, rate6h and rate3d by name, the
// windows of the default period, and stayed empty. A probe whose instances
// are half within 40ms and none failed: an SLI of 0.5 (budget 0.5, every
// window burning at 1×) and of 1 (budget 0.01, at 0×).
func TestDashboardSLOPanelsAnyPeriod(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	bounds := make([]float64, 100)
	for i := range bounds {
		bounds[i] = float64(i+1) * 0.002
	}
	plan, err := slo.New([]slo.Probe{{Name: "p", Bounds: bounds, QTA: analysis.QTA{
		Points: []analysis.QTAPoint{{Delay: 40 * time.Millisecond, P: 0.5}}, MaxFailure: 0.01}}},
		slo.Options{Period: 7 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rules := plan.Rules("a test")
	var windows []string
	for _, m := range regexp.MustCompile(`record: deltaq:slo_error_ratio:rate(\S+)`).FindAllStringSubmatch(string(rules), -1) {
		if !slices.Contains(windows, m[1]) {
			windows = append(windows, m[1])
		}
	}
	if slices.Contains(windows, "5m") || len(windows) == 0 {
		t.Fatalf("windows %v: want those of --period 7d", windows)
	}
	queries := map[string]string{}
	r := strings.NewReplacer("$probe", ".+", "$job", ".+")
	for _, p := range loadDashboard(t).Panels {
		if len(p.Targets) > 0 {
			queries[p.Title] = r.Replace(p.Targets[0].Expr)
		}
	}
	quote := func(s string) string {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `rule_files: [rules.yml]
evaluation_interval: 30s
tests:
  - interval: 10s
    input_series:
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="success"}'
        values: '0+100x200'
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="failure"}'
        values: '0x200'
      - series: 'deltaq_outcomes_total{job="j", instance="c1", deltaq_probe="p", deltaq_outcome="timeout"}'
        values: '0x200'
      - series: 'deltaq_observed_seconds_bucket{job="j", instance="c1", deltaq_probe="p", le="0.04"}'
        values: '0+50x200'
    promql_expr_test:
      - expr: %s
        eval_time: 20m
        exp_samples:
          - labels: '{deltaq_probe="p", deltaq_slo="within-40ms"}'
            value: 0.5
          - labels: '{deltaq_probe="p", deltaq_slo="success"}'
            value: 1
      - expr: %s
        eval_time: 20m
        exp_samples:
`, quote(queries["SLI against its objective"]), quote(queries["Burn rate over the alert windows"]))
	for _, w := range windows {
		fmt.Fprintf(&b, "          - labels: '{deltaq_probe=\"p\", deltaq_slo=\"within-40ms\", window=%q}'\n            value: 1\n", w)
		fmt.Fprintf(&b, "          - labels: '{deltaq_probe=\"p\", deltaq_slo=\"success\", window=%q}'\n            value: 0\n", w)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "panels.test.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "panels.test.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
}
