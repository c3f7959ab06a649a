// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// operatorDocs are the documents an operator reads for the names of the
// metrics, relative to this package.
var operatorDocs = []string{"../docs/runbook.md", "../docs/install.md", "../README.md"}

// componentTelemetry is what a component's metadata.yaml declares of its own
// telemetry: its instruments by name and the values of its enum attributes.
type componentTelemetry struct {
	Attributes map[string]struct {
		Enum []string `yaml:"enum"`
	} `yaml:"attributes"`
	Telemetry struct {
		Metrics map[string]struct {
			Attributes []string `yaml:"attributes"`
		} `yaml:"metrics"`
	} `yaml:"telemetry"`
}

// selfTelemetryName matches a deltaq component's instrument as the
// collector's Prometheus endpoint names it, with a selector if one follows.
var selfTelemetryName = regexp.MustCompile(`\botelcol_((?:connector|exporter|processor)_deltaq_[a-z_]*[a-z])\b(\{[^}]*\})?`)

// selectorLabel matches one label="value" or label=~"a|b" of a selector.
var selectorLabel = regexp.MustCompile(`([a-z_]+)=~?"([^"]*)"`)

// bareLabel matches a selector that only names a label: {reason}.
var bareLabel = regexp.MustCompile(`^\{([a-z_]+)\}$`)

// TestOperatorDocNames: every deltaq self-telemetry name the runbook, the
// install guide and the README cite is declared in its component's
// metadata.yaml, with the attributes and values it is selected by there;
// every deltaq_* name is a metric or label of the Prometheus contract or of
// the generated SLO rules, and every deltaq:slo_* series one the SLO rules
// record.
func TestOperatorDocNames(t *testing.T) {
	telemetry := map[string]componentTelemetry{}
	for _, c := range []string{"connector", "exporter", "processor"} {
		var m componentTelemetry
		readYAML(t, fmt.Sprintf("../%s/deltaq%s/metadata.yaml", c, c), &m)
		for name := range m.Telemetry.Metrics {
			telemetry[name] = m
		}
	}
	recorded := sloRecorded(t)
	checked := 0
	for _, doc := range operatorDocs {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			where := fmt.Sprintf("%s:%d", doc, i+1)
			for _, m := range selfTelemetryName.FindAllStringSubmatch(line, -1) {
				checked++
				checkSelfTelemetry(t, where, telemetry, m[1], m[2])
			}
			for _, id := range sloRecord.FindAllString(line, -1) {
				if !slices.Contains(recorded, id) {
					t.Errorf("%s: %s is not recorded by prometheus/rules/deltaq-slo.yml", where, id)
				}
			}
			for _, id := range deltaqIdent.FindAllString(line, -1) {
				checked++
				if !knownMetric(id) && !knownLabel(id) && id != "deltaq_qoo_min" {
					t.Errorf("%s: %s is neither a metric nor a label of the Prometheus contract (examples/README.md, \"Prometheus names\")", where, id)
				}
			}
		}
	}
	// The runbook alone cites over fifty; few found means the patterns
	// broke, not that all is well.
	if checked < 50 {
		t.Errorf("only %d names found in %v", checked, operatorDocs)
	}
}

// checkSelfTelemetry checks one cited instrument, and the labels and values
// of its selector, against its component's metadata.yaml.
func checkSelfTelemetry(t *testing.T, where string, telemetry map[string]componentTelemetry, name, selector string) {
	t.Helper()
	m, ok := telemetry[name]
	if !ok {
		t.Errorf("%s: otelcol_%s is declared by no deltaq component's metadata.yaml", where, name)
		return
	}
	attrs := m.Telemetry.Metrics[name].Attributes
	for _, l := range selectorLabel.FindAllStringSubmatch(selector, -1) {
		label, values := l[1], l[2]
		if !slices.Contains(attrs, label) {
			t.Errorf("%s: otelcol_%s has no attribute %s (it has %v)", where, name, label, attrs)
			continue
		}
		enum := m.Attributes[label].Enum
		for _, v := range strings.Split(values, "|") {
			if len(enum) > 0 && !slices.Contains(enum, v) {
				t.Errorf("%s: otelcol_%s{%s}: no value %q (it has %v)", where, name, label, v, enum)
			}
		}
	}
	// A bare {label} names the attribute the counter is split by.
	if l := bareLabel.FindStringSubmatch(selector); l != nil && !slices.Contains(attrs, l[1]) {
		t.Errorf("%s: otelcol_%s has no attribute %s (it has %v)", where, name, l[1], attrs)
	}
}
