// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package examples

import (
	"slices"
	"strings"
	"testing"
)

// TestDashboardQoOPanel: the dashboard draws each probe's Quality of
// Outcome in a panel of its own (repeated over the probe variable), its
// observed and calculated scores by series and the observed score's
// components, none of them summed across collectors: a score is not a
// count, the panel shows the worst.
func TestDashboardQoOPanel(t *testing.T) {
	d := loadDashboard(t)
	var found []panel
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if slices.Contains(deltaqIdent.FindAllString(tg.Expr, -1), "deltaq_qoo_score_percent") {
				found = append(found, p)
				break
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d panels query deltaq_qoo_score_percent, want one", len(found))
	}
	p := found[0]
	if p.Repeat != "probe" || p.Type != "timeseries" {
		t.Errorf("QoO panel: repeat %q, type %q; want a time series repeated per probe", p.Repeat, p.Type)
	}
	var metrics []string
	for _, tg := range p.Targets {
		metrics = append(metrics, deltaqIdent.FindAllString(tg.Expr, -1)...)
		if strings.Contains(tg.Expr, "sum") || !strings.HasPrefix(tg.Expr, "min") {
			t.Errorf("QoO panel %s: %q; want the worst (min) over collectors, never a sum", tg.RefID, tg.Expr)
		}
	}
	for _, m := range []string{"deltaq_qoo_score_percent", "deltaq_qoo_latency_percent", "deltaq_qoo_loss_percent", "deltaq_qoo_rate_percent"} {
		if !slices.Contains(metrics, m) {
			t.Errorf("QoO panel does not draw %s", m)
		}
	}
}
