// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deltaq-otel/deltaq/analysis"
)

// Each component's metadata.yaml declares, for every attribute of its
// self-telemetry, the values the observer records: a fate, reason,
// trigger, bound or signal the code records but the metadata does not
// list is undocumented to users of mdatagen's output (the connector's
// listed 6 fates of 10).
func TestMetadataAttributeValues(t *testing.T) {
	var fates, reasons []string
	for c := range len(analysis.Contributions{}) {
		fates = append(fates, analysis.Contribution(c).String())
	}
	for r := range len(analysis.Drops{}) {
		reasons = append(reasons, analysis.DropReason(r).String())
	}
	var triggers []string
	for _, k := range []analysis.TriggerKind{analysis.TriggerQTA, analysis.TriggerFailure, analysis.TriggerLoad,
		analysis.TriggerDivergence, analysis.TriggerSlackTrend} {
		triggers = append(triggers, k.String())
	}
	want := map[string][]string{"fate": fates, "reason": reasons, "trigger": triggers,
		"bound": {"too_long", "overflow"}, "signal": {"metrics", "logs"}}
	for _, dir := range []string{"../../exporter/deltaqexporter", "../../connector/deltaqconnector"} {
		meta, err := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for attr, values := range want {
			m := regexp.MustCompile(`(?m)^  ` + attr + `:\n(?:    .*\n)*?    enum: \[([^\]]*)\]`).FindStringSubmatch(string(meta))
			if m == nil {
				t.Errorf("%s/metadata.yaml: attribute %s has no enum", dir, attr)
				continue
			}
			got := strings.Split(m[1], ", ")
			if strings.Join(got, ",") != strings.Join(values, ",") {
				t.Errorf("%s/metadata.yaml: %s enum %v, want the values the code records, %v", dir, attr, got, values)
			}
		}
	}
}

// TestREADMEInstrumentAttributes: each component's README lists every
// instrument of its metadata.yaml in a row that names the instrument's
// attributes — `name{a,b}` in the connector's and the exporter's, a cell
// of its own in the processor's — and every value their enums allow, so
// that a user writing a query finds the labels and values there.
func TestREADMEInstrumentAttributes(t *testing.T) {
	for _, dir := range []string{"../../exporter/deltaqexporter", "../../connector/deltaqconnector", "../../processor/deltaqprocessor"} {
		meta, err := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
		require.NoError(t, err)
		readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
		require.NoError(t, err)
		enums := make(map[string][]string)
		for _, m := range regexp.MustCompile(`(?m)^  (\w+):\n(?:    .*\n)*?    enum: \[([^\]]*)\]`).FindAllStringSubmatch(string(meta), -1) {
			enums[m[1]] = strings.Split(m[2], ", ")
		}
		_, tel, _ := strings.Cut(string(meta), "\ntelemetry:\n")
		instruments := regexp.MustCompile(`(?m)^    (\w+):\n((?:      .*\n)*)`).FindAllStringSubmatch(tel, -1)
		require.NotEmpty(t, instruments, "%s/metadata.yaml", dir)
		for _, m := range instruments {
			name := "otelcol_" + m[1]
			var attrs []string
			if a := regexp.MustCompile(`(?m)^      attributes: \[([^\]]*)\]`).FindStringSubmatch(m[2]); a != nil {
				attrs = strings.Split(a[1], ", ")
			}
			row := regexp.MustCompile("(?m)^\\| `" + name + "(\\{([^}]*)\\})?` \\|.*$").FindStringSubmatch(string(readme))
			if row == nil {
				t.Errorf("%s/README.md: no row of %s", dir, name)
				continue
			}
			if !strings.Contains(dir, "processor") {
				assert.Equal(t, strings.Join(attrs, ","), row[2], "%s/README.md: the attributes of %s", dir, name)
			}
			for _, a := range attrs {
				if strings.Contains(dir, "processor") {
					assert.Contains(t, row[0], "`"+a+"`", "%s/README.md: %s, attribute %s", dir, name, a)
				}
				for _, v := range enums[a] {
					assert.Contains(t, row[0], "`"+v+"`", "%s/README.md: %s, a value of %s", dir, name, a)
				}
			}
		}
	}
}
