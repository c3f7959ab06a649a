// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
