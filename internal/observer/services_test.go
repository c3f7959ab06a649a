// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// tracesOf returns the instance spans of specs under a resource with the
// given service.name.
func tracesOf(service string, specs ...span) ptrace.Traces {
	td := instanceTraces(specs...)
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", service)
	return td
}

// serviceLabels returns, per probe, the deltaq.service values on the
// points of every metric of the last batch (one value per probe when the
// series agree).
func serviceLabels(t *testing.T, h *harness) map[string][]string {
	t.Helper()
	all := h.metrics.AllMetrics()
	require.NotEmpty(t, all)
	out := map[string][]string{}
	seen := map[string]bool{}
	forEachMetric(all[len(all)-1], func(m pmetric.Metric) {
		for _, a := range pointAttributes(m) {
			p, _ := a.Get(outcome.AttrProbe)
			s, _ := a.Get(outcome.AttrService)
			k := p.Str() + "\x00" + s.Str()
			if !seen[k] {
				seen[k] = true
				out[p.Str()] = append(out[p.Str()], s.Str())
			}
		}
	})
	return out
}

// pointAttributes returns the attributes of every data point of m.
func pointAttributes(m pmetric.Metric) []pcommon.Map {
	var out []pcommon.Map
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for i := range m.Gauge().DataPoints().Len() {
			out = append(out, m.Gauge().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeSum:
		for i := range m.Sum().DataPoints().Len() {
			out = append(out, m.Sum().DataPoints().At(i).Attributes())
		}
	case pmetric.MetricTypeHistogram:
		for i := range m.Histogram().DataPoints().Len() {
			out = append(out, m.Histogram().DataPoints().At(i).Attributes())
		}
	}
	return out
}

// TestServicesOnProbeSeries: every series of a probe carries the services
// of the resources its instances came from, sorted, at most four, and a
// probe without a service.name carries none.
func TestServicesOnProbeSeries(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ok := func(probe string, end time.Duration) span {
		return span{probe: probe, outcome: outcome.Success, end: end, delay: ms(3), dmax: 100 * time.Millisecond, bins: 100}
	}
	ctx := context.Background()
	require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf("shop", ok("p", ms(100)), ok("p", ms(110)))))
	require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf("billing", ok("p", ms(120)))))
	for i := range 6 {
		require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(fmt.Sprintf("svc%d", 5-i), ok("many", ms(130)))))
	}
	h.consume(ok("anonymous", ms(140)))
	h.obs.tick(at(2 * time.Second))

	got := serviceLabels(t, h)
	assert.Equal(t, []string{"billing,shop"}, got["p"])
	assert.Equal(t, []string{"svc2,svc3,svc4,svc5,…"}, got["many"], "the first four in arrival order, sorted, then …")
	assert.Equal(t, []string{""}, got["anonymous"])
}

// TestServicesForgottenWithTheProbe: the services of a probe that the
// analysis forgets (probe_idle_timeout) go with it.
func TestServicesForgottenWithTheProbe(t *testing.T) {
	cfg := testConfig()
	cfg.ProbeIdleTimeout = time.Second
	h := newHarness(t, cfg, at(time.Second))
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), tracesOf("shop",
		span{probe: "p", outcome: outcome.Success, end: ms(100), delay: ms(3), dmax: 100 * time.Millisecond, bins: 100})))
	h.obs.tick(at(2 * time.Second))
	require.Len(t, h.obs.build.services.byProbe, 1)
	h.obs.tick(at(3 * time.Second))
	h.obs.tick(at(4 * time.Second))
	assert.Empty(t, h.obs.build.services.byProbe)
}
