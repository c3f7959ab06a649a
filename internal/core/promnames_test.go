// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// promRow is a row of examples/README.md's table "Prometheus names": the
// metric's Prometheus name and the labels of its own besides deltaq_probe.
type promRow struct {
	prom   string
	labels []string
}

// promTable reads the table "Prometheus names" of examples/README.md,
// which the dashboard and the rules are held to (examples_test.go).
func promTable(t *testing.T) map[string]promRow {
	t.Helper()
	raw, err := os.ReadFile("../../examples/README.md")
	require.NoError(t, err)
	rows := make(map[string]promRow)
	row := regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| `([a-z_]+)` \\| [^|]* \\|([^|]*)\\|$")
	label := regexp.MustCompile("`([a-z_]+)`")
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		r := promRow{prom: m[2]}
		for _, l := range label.FindAllStringSubmatch(m[3], -1) {
			r.labels = append(r.labels, l[1])
		}
		rows[m[1]] = r
	}
	require.NotEmpty(t, rows, "no table rows in examples/README.md")
	return rows
}

// promType is the translator's type of m.
func promType(m pmetric.Metric) otlptranslator.MetricType {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		if m.Sum().IsMonotonic() {
			return otlptranslator.MetricTypeMonotonicCounter
		}
		return otlptranslator.MetricTypeNonMonotonicCounter
	case pmetric.MetricTypeHistogram:
		return otlptranslator.MetricTypeHistogram
	case pmetric.MetricTypeExponentialHistogram:
		return otlptranslator.MetricTypeExponentialHistogram
	case pmetric.MetricTypeSummary:
		return otlptranslator.MetricTypeSummary
	}
	return otlptranslator.MetricTypeGauge
}

// TestPrometheusNamesOfOutput names every metric and attribute of
// everyWindow's output as the collector's Prometheus remote-write
// exporter does by default (otlptranslator, with suffixes, underscore
// label sanitisation: examples/README.md, "Prometheus names") and checks
// that the table of examples/README.md says the same, so that the
// dashboard and the rules, held to that table, read series that exist.
// deltaq.window and deltaq.window.idle are delta sums and histograms for a
// gateway, which remote write refuses, and not in the table;
// deltaq.window.contributors, which only a gateway writes, is checked on a
// gateway's output.
func TestPrometheusNamesOfOutput(t *testing.T) {
	check := promNames(t)
	seen := make(map[string]bool)
	for _, exp := range []bool{false, true} {
		for _, md := range everyWindow(t, exp) {
			check(md)
			forEachMetric(md, func(m pmetric.Metric) { seen[m.Name()] = true })
		}
	}
	for _, md := range gatewayWindows(t) {
		check(md)
		forEachMetric(md, func(m pmetric.Metric) { seen[m.Name()] = true })
	}
	for _, want := range []string{contract.MetricCDF, contract.MetricQuantile, contract.MetricQTAPoint, contract.MetricQoORate,
		contract.MetricContributors} {
		require.True(t, seen[want], "the output had no %s", want)
	}
}

// gatewayWindows returns the output of a gateway (expected_agents 1) that
// merged an agent's windows, one of them with instances: a standalone
// collector's metrics and deltaq.window.contributors, which only a
// gateway writes.
func gatewayWindows(t *testing.T) []pmetric.Metrics {
	start := at(time.Second)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gcfg.Gateway.ExpectedAgents = 1
	gcfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
	gateway, agent := newHarness(t, gcfg, start), agentHarnessWith(t, "agent-0", start, true)
	agent.consume(span{probe: "p", outcome: contract.Success, end: time.Second + ms(1), delay: ms(3),
		dmax: 100 * time.Millisecond, bins: 100})
	sent := 0
	for w := 2; w <= 6; w++ {
		now := at(time.Duration(w) * time.Second)
		agent.obs.tick(now)
		mds := agent.metrics.AllMetrics()
		for _, md := range mds[sent:] {
			require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
		}
		sent = len(mds)
		gateway.obs.tick(now)
	}
	return gateway.metrics.AllMetrics()
}

// promNames returns a check of the Prometheus names of a batch of output
// against the table of examples/README.md (TestPrometheusNamesOfOutput).
func promNames(t *testing.T) func(pmetric.Metrics) {
	rows := promTable(t)
	names := otlptranslator.MetricNamer{WithMetricSuffixes: true}
	labels := otlptranslator.LabelNamer{} // no label of the output starts with an underscore
	labelOf := func(key string) string {
		l, err := labels.Build(key)
		require.NoError(t, err)
		return l
	}
	return func(md pmetric.Metrics) {
		t.Helper()
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricWindow || m.Name() == contract.MetricWindowIdle {
				return
			}
			row, ok := rows[m.Name()]
			if !ok {
				t.Errorf("%s: no row in examples/README.md's table", m.Name())
				return
			}
			prom, err := names.Build(otlptranslator.Metric{Name: m.Name(), Unit: m.Unit(), Type: promType(m)})
			require.NoError(t, err)
			if prom != row.prom {
				t.Errorf("%s (unit %q, %v): Prometheus names it %s, the table %s", m.Name(), m.Unit(), m.Type(), prom, row.prom)
			}
			forEachAttributes(m, func(a pcommon.Map) {
				for k := range a.All() {
					l := labelOf(k)
					if l != labelOf(contract.AttrProbe) && l != labelOf(contract.AttrService) && !slices.Contains(row.labels, l) {
						t.Errorf("%s: label %s (attribute %s) is not in the table's row %v", m.Name(), l, k, row.labels)
					}
				}
			})
		})
	}
}

// forEachAttributes calls f with the attributes of every data point of m.
func forEachAttributes(m pmetric.Metric, f func(pcommon.Map)) {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for i := range m.Gauge().DataPoints().Len() {
			f(m.Gauge().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeSum:
		for i := range m.Sum().DataPoints().Len() {
			f(m.Sum().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeHistogram:
		for i := range m.Histogram().DataPoints().Len() {
			f(m.Histogram().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeExponentialHistogram:
		for i := range m.ExponentialHistogram().DataPoints().Len() {
			f(m.ExponentialHistogram().DataPoints().At(i).Attributes())
		}
	}
}
