// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const (
	// rulesFile holds the alert rules on the ΔQ metrics for the gateway.
	rulesFile = "prometheus/deltaq-alerts.yml"
	// rulesTestFile holds its promtool tests.
	rulesTestFile = "prometheus/deltaq-alerts.test.yml"
	// shippedRulesFile holds the rules for a collector whose windows reach
	// Prometheus as they close.
	shippedRulesFile = "../../examples/prometheus/rules/deltaq-alerts.yml"
	// exportAllowance is what the rules allow the gateway's remote write
	// beyond its batch processor's timeout.
	exportAllowance = time.Second
)

// lagRules are the rules whose ranges read only the newest windows, and
// which the gateway's delivery delay therefore changes.
var lagRules = []string{"DeltaQQTABreach", "DeltaQQTASlackFalling"}

// rangeSel is a range in PromQL: the duration in brackets.
var rangeSel = regexp.MustCompile(`\[([0-9a-z]+)\]`)

type ruleFile struct {
	Groups []struct {
		Name     string           `json:"name"`
		Interval string           `json:"interval"`
		Rules    []map[string]any `json:"rules"`
	} `json:"groups"`
}

func readRules(t *testing.T, path string) ruleFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(f.Groups) != 1 {
		t.Fatalf("%s: %d groups, want one", path, len(f.Groups))
	}
	return f
}

// ranges returns the distinct ranges of a rule's expression, in order.
func ranges(t *testing.T, rule map[string]any) []string {
	t.Helper()
	expr, _ := rule["expr"].(string)
	var out []string
	for _, m := range rangeSel.FindAllStringSubmatch(expr, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// The gateway's rules are the shipped ones, rule for rule, but for the one
// range of each rule that reads the newest windows (and its description,
// which names it): a rule changed or added in one file and not the other
// fails here.
func TestAlertRulesAreTheShipped(t *testing.T) {
	ours, shipped := readRules(t, rulesFile), readRules(t, shippedRulesFile)
	g, s := ours.Groups[0], shipped.Groups[0]
	if g.Name != s.Name || g.Interval != s.Interval {
		t.Errorf("group %s every %s, want %s every %s as %s", g.Name, g.Interval, s.Name, s.Interval, shippedRulesFile)
	}
	if len(g.Rules) != len(s.Rules) {
		t.Fatalf("%d rules, want the %d of %s", len(g.Rules), len(s.Rules), shippedRulesFile)
	}
	for i, want := range s.Rules {
		got, name := g.Rules[i], want["alert"]
		if slices.Contains(lagRules, name.(string)) {
			from, to := ranges(t, want), ranges(t, got)
			if len(from) != 1 || len(to) != 1 {
				t.Errorf("%s: ranges %v and %v, want one each", name, from, to)
				continue
			}
			want = substitute(want, from[0], to[0])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("rule %d (%v) differs from %s:\n got %v\nwant %v", i, got["alert"], shippedRulesFile, got, want)
		}
	}
}

// substitute returns a copy of rule with range from read as to in its
// expression and its description.
func substitute(rule map[string]any, from, to string) map[string]any {
	out := map[string]any{}
	for k, v := range rule {
		out[k] = v
	}
	out["expr"] = strings.ReplaceAll(rule["expr"].(string), "["+from+"]", "["+to+"]")
	if ann, ok := rule["annotations"].(map[string]any); ok {
		a := map[string]any{}
		for k, v := range ann {
			a[k] = v
		}
		if d, ok := a["description"].(string); ok {
			a["description"] = strings.ReplaceAll(d, "last "+from, "last "+to)
		}
		out["annotations"] = a
	}
	return out
}

// A window's samples carry its end as their time. The gateway closes a
// window lag after its end on a timer of one interval, batches its samples
// and writes them; the group's evaluation after that must still hold it in
// the range of a rule that reads the newest windows. Those ranges are lag,
// the interval, the group's interval, the batch timeout and the write's
// allowance, rounded up to the group's interval; every other range is at
// least as long, or it would see no window either.
func TestAlertRulesCoverTheGatewayDelay(t *testing.T) {
	o := load(t)
	gw := collectorConfig(t, o.configMaps["deltaq-gateway"])
	interval := duration(t, "the gateway's interval", dig(gw, "connectors", "deltaq", "interval"), 0)
	lag := duration(t, "the gateway's lag", dig(gw, "connectors", "deltaq", "lag"), interval)
	procs, _ := dig(gw, "service", "pipelines", "metrics/deltaq", "processors").([]any)
	var batch time.Duration
	for _, p := range procs {
		if name, _ := p.(string); name == "batch" || strings.HasPrefix(name, "batch/") {
			cfg := dig(gw, "processors", name)
			batch += duration(t, name+"'s timeout", dig(cfg, "timeout"), 200*time.Millisecond)
		}
	}
	f := readRules(t, rulesFile)
	group := duration(t, "the group's interval", f.Groups[0].Interval, 0)
	need := lag + interval + group + batch + exportAllowance
	want := (need + group - 1) / group * group
	for _, rule := range f.Groups[0].Rules {
		name := rule["alert"].(string)
		for _, r := range ranges(t, rule) {
			d := duration(t, name+"'s range", r, 0)
			if slices.Contains(lagRules, name) && d != want {
				t.Errorf("%s: range %s, want %s: lag %s, interval %s, the group's %s, batching %s and %s for the write, rounded up to %s",
					name, r, want, lag, interval, group, batch, exportAllowance, group)
			}
			if d < need {
				t.Errorf("%s: range %s, shorter than the %s after which the gateway's windows arrive and are evaluated", name, r, need)
			}
		}
	}
}

// promtool accepts the rules, and their tests pass.
func TestAlertRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed: the rules are not checked by Prometheus's own parser")
	}
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
	cmd := exec.Command(promtool, "test", "rules", filepath.Base(rulesTestFile))
	cmd.Dir = filepath.Dir(rulesTestFile)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", rulesTestFile, err, out)
	}
}
