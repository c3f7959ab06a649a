// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
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
			p, _ := a.Get(contract.AttrProbe)
			s, _ := a.Get(contract.AttrService)
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
// of the resources its instances came from, sorted, at most four (the
// default services::max_per_probe) and then the overflow value, and a
// probe without a service.name carries none.
func TestServicesOnProbeSeries(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ok := func(probe string, end time.Duration) span {
		return span{probe: probe, outcome: contract.Success, end: end, delay: ms(3), dmax: 100 * time.Millisecond, bins: 100}
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
	assert.Equal(t, []string{"svc2,svc3,svc4,svc5," + contract.ServiceOverflow}, got["many"],
		"the first four in arrival order, sorted, then the overflow value")
	assert.Equal(t, []string{""}, got["anonymous"])
}

// TestServicesForgottenWithTheProbe: the services of a probe that the
// analysis forgets (probe_idle_timeout) go with it.
func TestServicesForgottenWithTheProbe(t *testing.T) {
	cfg := testConfig()
	cfg.ProbeIdleTimeout = time.Second
	h := newHarness(t, cfg, at(time.Second))
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), tracesOf("shop",
		span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(3), dmax: 100 * time.Millisecond, bins: 100})))
	h.obs.tick(at(2 * time.Second))
	require.Len(t, h.obs.build.services.byProbe, 1)
	h.obs.tick(at(3 * time.Second))
	h.obs.tick(at(4 * time.Second))
	assert.Empty(t, h.obs.build.services.byProbe)
}

// okSpan is a success of probe ending at end (from t0), 3 ms long.
func okSpan(probe string, end time.Duration) span {
	return span{probe: probe, outcome: contract.Success, end: end, delay: ms(3), dmax: 100 * time.Millisecond, bins: 100}
}

// TestHugeServiceNameCut reproduces a span whose resource service.name is
// 1,000,000 bytes beside 1000 honest spans of the same probe: the label
// carried it whole on every series of the probe, and each window went out
// as about 45 requests of 3 MB. The name is cut to 256 bytes (at a UTF-8
// boundary), counted, and the window's output is as large as with a short
// name, give or take the 256 bytes on each series.
func TestHugeServiceNameCut(t *testing.T) {
	window := func(service string) (label string, bytes int, h *harness) {
		h = newHarness(t, testConfig(), at(time.Second))
		ctx := context.Background()
		honest := make([]span, 1000)
		for i := range honest {
			honest[i] = okSpan("checkout", 100*time.Millisecond+time.Duration(i)*time.Microsecond)
		}
		require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf("shop", honest...)))
		require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(service, okSpan("checkout", 500*time.Millisecond))))
		h.obs.tick(at(2 * time.Second))
		labels := serviceLabels(t, h)["checkout"]
		require.Len(t, labels, 1, "one label on every series of the probe")
		var sizer pmetric.ProtoMarshaler
		for _, md := range h.metrics.AllMetrics() {
			bytes += sizer.MetricsSize(md)
		}
		return labels[0], bytes, h
	}
	// "é" is two bytes: the 256th byte would split one.
	huge := "x" + strings.Repeat("é", 500_000)[:999_999]
	label, bytes, h := window(huge)
	_, control, _ := window("payments")

	assert.Equal(t, "shop,"+huge[:255], label, "cut to the longest prefix of at most 256 bytes that splits no character")
	assert.True(t, utf8.ValidString(label))
	assert.Equal(t, int64(1001), outcomeTotal(t, h, "checkout", contract.Success))
	series := len(serviceLabelsAll(h))
	t.Logf("one window: %d B with the 1 MB name, %d B with a short one, %d series", bytes, control, series)
	assert.LessOrEqual(t, bytes, control+series*contract.MaxNameLength,
		"the window's output (%d B) against a short name's (%d B), %d series", bytes, control, series)
	assert.Less(t, bytes, 1<<20, "one window: was about 135 MB in 45 requests")
	assert.Equal(t, map[string]int64{"bound=too_long": 1}, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_services_bounded"))
}

// serviceLabelsAll returns the deltaq.service value of every data point of
// the last batch.
func serviceLabelsAll(h *harness) []string {
	all := h.metrics.AllMetrics()
	var out []string
	forEachMetric(all[len(all)-1], func(m pmetric.Metric) {
		for _, a := range pointAttributes(m) {
			if s, ok := a.Get(contract.AttrService); ok {
				out = append(out, s.Str())
			}
		}
	})
	return out
}

// TestTwoHugeServiceNamesStillEmitted reproduces two spans with 2 MB
// service names: every point of the probe grew beyond max_request_bytes
// (3 MiB), was dropped as oversized, and nothing of the probe was emitted
// any more. Cut, the probe's outcomes go out and nothing is oversized.
func TestTwoHugeServiceNamesStillEmitted(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ctx := context.Background()
	for _, c := range []string{"a", "b"} {
		require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(strings.Repeat(c, 2<<20), okSpan("checkout", 500*time.Millisecond))))
	}
	h.obs.tick(at(2 * time.Second))
	labels := serviceLabels(t, h)["checkout"]
	require.Len(t, labels, 1)
	assert.Equal(t, strings.Repeat("a", 256)+","+strings.Repeat("b", 256), labels[0])
	assert.Equal(t, int64(2), outcomeTotal(t, h, "checkout", contract.Success))
	assert.Empty(t, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_output_oversized"))
	assert.Equal(t, map[string]int64{"bound=too_long": 2}, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_services_bounded"))
}

// outcomeTotal returns the deltaq.outcomes total of the probe's outcome in
// the last batch (-1 when absent).
func outcomeTotal(t *testing.T, h *harness, probe, oc string) int64 {
	t.Helper()
	all := h.metrics.AllMetrics()
	require.NotEmpty(t, all)
	total := int64(-1)
	forEachMetric(all[len(all)-1], func(m pmetric.Metric) {
		if m.Name() != contract.MetricOutcomes {
			return
		}
		for i := range m.Sum().DataPoints().Len() {
			dp := m.Sum().DataPoints().At(i)
			p, _ := dp.Attributes().Get(contract.AttrProbe)
			o, _ := dp.Attributes().Get(contract.AttrOutcome)
			if p.Str() == probe && o.Str() == oc {
				total = dp.IntValue()
			}
		}
	})
	return total
}

// TestServicesOverflowCounted: with services::max_per_probe 2, the first two
// services keep their places, the label ends with the overflow value, and
// every further (probe, service) pair of a batch is counted.
func TestServicesOverflowCounted(t *testing.T) {
	cfg := testConfig()
	cfg.Services.MaxPerProbe = 2
	h := newHarness(t, cfg, at(time.Second))
	ctx := context.Background()
	for _, s := range []string{"web", "api", "junk1", "junk2", "web", "junk3"} {
		require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(s, okSpan("p", 1500*time.Millisecond))))
	}
	h.obs.tick(at(2 * time.Second))
	assert.Equal(t, []string{"api,web," + contract.ServiceOverflow}, serviceLabels(t, h)["p"])
	assert.Equal(t, map[string]int64{"bound=overflow": 3}, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_services_bounded"))
}

// TestServicesForgottenWhenIdle: a service that sends no instance of a probe
// for services::idle_timeout leaves the probe's label, and so does the
// overflow, so that a flood of names that has stopped gives the places
// back to the services still sending.
func TestServicesForgottenWhenIdle(t *testing.T) {
	cfg := testConfig()
	cfg.Services.MaxPerProbe = 2
	cfg.Services.IdleTimeout = 3 * time.Second // 3 windows of 1 s
	h := newHarness(t, cfg, at(time.Second))
	ctx := context.Background()
	window := func(k int, services ...string) string {
		for _, s := range services {
			require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(s, okSpan("p", time.Duration(k)*time.Second+ms(100)))))
		}
		if len(services) == 0 {
			h.consume(okSpan("p", time.Duration(k)*time.Second+ms(100)))
		}
		h.obs.tick(at(time.Duration(k+1) * time.Second))
		return serviceLabels(t, h)["p"][0]
	}
	over := "," + contract.ServiceOverflow
	assert.Equal(t, "junk1,junk2"+over, window(1, "junk1", "junk2", "junk3"), "window 1: the flood takes the places")
	assert.Equal(t, "junk1,junk2"+over, window(2, "shop"), "window 2: the real service is the overflow")
	assert.Equal(t, "junk1,junk2"+over, window(3, "shop"))
	assert.Equal(t, "shop"+over, window(4, "shop"), "window 4: the flood, unseen for 3 windows, gives shop its place")
	assert.Equal(t, "shop"+over, window(5, "shop"))
	assert.Equal(t, "shop", window(6, "shop"), "window 6: no service beyond the places for 3 windows")
	assert.Equal(t, "shop", window(7))
	assert.Equal(t, "shop", window(8))
	assert.Equal(t, "", window(9), "window 9: shop unseen for 3 windows")
	assert.Equal(t, "billing", window(10, "billing"))
}

// TestServicesConfigChecked: services::max_per_probe and
// services::idle_timeout are refused outside their bounds, naming the
// option, the value and the bound.
func TestServicesConfigChecked(t *testing.T) {
	for _, c := range []struct {
		set  func(*ServicesConfig)
		want string
	}{
		{func(s *ServicesConfig) { s.MaxPerProbe = 0 }, "services.max_per_probe: 0 is below the minimum 1"},
		{func(s *ServicesConfig) { s.MaxPerProbe = 33 }, "services.max_per_probe: 33 is above the maximum 32"},
		{func(s *ServicesConfig) { s.IdleTimeout = 500 * time.Millisecond }, "services.idle_timeout: 500ms is below the minimum 1s"},
		{func(s *ServicesConfig) { s.IdleTimeout = 8 * 24 * time.Hour }, "services.idle_timeout: 192h0m0s is above the maximum 168h0m0s"},
		{func(s *ServicesConfig) { s.IdleTimeout = 2 * time.Second }, "services.idle_timeout: 2s is shorter than interval 5s"},
	} {
		cfg := testConfig()
		cfg.Interval = 5 * time.Second
		c.set(&cfg.Services)
		assert.ErrorContains(t, cfg.Check(), c.want)
	}
	cfg := testConfig()
	assert.NoError(t, cfg.Check(), "the defaults")
}

// TestServiceNameNotUTF8: a service.name that is not UTF-8 goes on the
// label with each invalid run replaced by U+FFFD, within 256 bytes: a
// label value that is not UTF-8 is refused by decoders that check it (a
// proto3 string, a Prometheus label), with the whole request.
func TestServiceNameNotUTF8(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ctx := context.Background()
	require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf("shop\xff\xfe", okSpan("checkout", 500*time.Millisecond))))
	require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(strings.Repeat("\xff.", 300), okSpan("checkout", 500*time.Millisecond))))
	h.obs.tick(at(2 * time.Second))
	labels := serviceLabels(t, h)["checkout"]
	require.Len(t, labels, 1)
	assert.True(t, utf8.ValidString(labels[0]), "%q", labels[0])
	names := strings.Split(labels[0], ",")
	require.Len(t, names, 2)
	assert.Equal(t, "shop\uFFFD", names[0])
	assert.LessOrEqual(t, len(names[1]), contract.MaxNameLength)
	assert.Equal(t, int64(2), outcomeTotal(t, h, "checkout", contract.Success))
}

// TestServiceChangeStartsNewStreams: when a probe's deltaq.service
// changes (a service joins, or leaves after services::idle_timeout), its
// series have new attributes: new streams of deltaq.outcomes and
// deltaq.observed, which start at that window and count its instances
// from there, rather than the old streams' counts under a start time
// before the new attributes existed (which a backend reading start times
// counts twice).
func TestServiceChangeStartsNewStreams(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ctx := context.Background()
	for k, svc := range []string{"shop", "cart", "cart"} {
		for j := range 3 {
			require.NoError(t, h.obs.ConsumeTraces(ctx, tracesOf(svc, okSpan("p", time.Duration(k)*time.Second+ms(100+10*float64(j))))))
		}
		h.obs.tick(at(time.Duration(k+2) * time.Second))
	}
	type point struct {
		service string
		start   time.Time
		n       uint64
	}
	var outcomes, observed []point
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			switch m.Name() {
			case contract.MetricOutcomes:
				dp := m.Sum().DataPoints().At(0) // success
				s, _ := dp.Attributes().Get(contract.AttrService)
				outcomes = append(outcomes, point{s.Str(), dp.StartTimestamp().AsTime(), uint64(dp.IntValue())})
			case contract.MetricObserved:
				dp := m.Histogram().DataPoints().At(0)
				s, _ := dp.Attributes().Get(contract.AttrService)
				observed = append(observed, point{s.Str(), dp.StartTimestamp().AsTime(), dp.Count()})
			}
		})
	}
	want := []point{{"shop", at(0), 3}, {"cart,shop", at(time.Second), 3}, {"cart,shop", at(time.Second), 6}}
	assert.Equal(t, want, outcomes, "deltaq.outcomes")
	assert.Equal(t, want, observed, "deltaq.observed")
}

// TestGatewayNamesTheAgentsServices: a gateway's series of a probe carry
// the services its agents' windows name (their deltaq.service), as one
// collector's carry those of the spans it saw: an agent's overflow value
// stays the overflow value, last; a window the gateway refuses (late)
// names nothing. The gateway's series named no service at all before.
func TestGatewayNamesTheAgentsServices(t *testing.T) {
	ctx := context.Background()
	start := at(time.Second)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gateway := newHarness(t, gcfg, start)
	agent := func(name string, maxPerProbe int, services ...string) *harness {
		cfg := testConfig()
		cfg.EmitWindows, cfg.WindowsOnly = true, true
		cfg.Services.MaxPerProbe = maxPerProbe
		a := newHarnessWith(t, cfg, start, func(s *Settings) {
			r := pcommon.NewResource()
			r.Attributes().PutStr("service.instance.id", name)
			s.Telemetry.Resource = r
		})
		for _, svc := range services {
			require.NoError(t, a.obs.ConsumeTraces(ctx, tracesOf(svc, okSpan("p", ms(100)))))
		}
		a.obs.tick(at(2 * time.Second))
		return a
	}
	// The agents' labels: "cart,web" and "pay,otel.metric.overflow".
	for _, a := range []*harness{agent("agent-1", 4, "web", "cart"), agent("agent-2", 1, "pay", "search")} {
		for _, md := range a.metrics.AllMetrics() {
			require.NoError(t, gateway.obs.ConsumeMetrics(ctx, md))
		}
	}
	late := agent("agent-3", 4, "late")
	gateway.obs.tick(at(3 * time.Second)) // closes [0 s, 1 s)
	for _, md := range late.metrics.AllMetrics() {
		require.NoError(t, gateway.obs.ConsumeMetrics(ctx, md))
	}
	gateway.obs.tick(at(4 * time.Second))
	assert.Equal(t, map[string]int64{"fate=accepted": 2, "fate=late": 1},
		telemetrytest.Points(t, gateway.tel, "otelcol_exporter_deltaq_contributions"))
	assert.Equal(t, []string{"cart,pay,web," + contract.ServiceOverflow}, serviceLabels(t, gateway)["p"])
}

// TestGatewayServicesOfAForgedLabel: a window whose deltaq.service names
// 100,000 services is no agent's (an agent names at most 32 and the
// overflow value): the gateway reads the first 33 names, takes its places
// from those, and counts the rest as the overflow value.
func TestGatewayServicesOfAForgedLabel(t *testing.T) {
	ctx := context.Background()
	start := at(time.Second)
	gcfg := testConfig()
	gcfg.Lag = 2 * time.Second
	gateway := newHarness(t, gcfg, start)
	a := agentHarnessWith(t, "agent-1", start, true)
	require.NoError(t, a.obs.ConsumeTraces(ctx, tracesOf("shop", okSpan("p", ms(100)))))
	a.obs.tick(at(2 * time.Second))
	names := make([]string, 100_000)
	for i := range names {
		names[i] = fmt.Sprintf("s%06d", i)
	}
	windows := 0
	for _, md := range a.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricWindow {
				m.Histogram().DataPoints().At(0).Attributes().PutStr(contract.AttrService, strings.Join(names, ","))
				windows++
			}
		})
		require.NoError(t, gateway.obs.ConsumeMetrics(ctx, md))
	}
	require.Equal(t, 1, windows)
	gateway.obs.tick(at(3 * time.Second))
	assert.Equal(t, []string{"s000000,s000001,s000002,s000003," + contract.ServiceOverflow}, serviceLabels(t, gateway)["p"])
	// The names beyond the places, up to the 33rd, each counted once.
	assert.Equal(t, map[string]int64{"bound=overflow": 29},
		telemetrytest.Sum(t, gateway.tel, "otelcol_exporter_deltaq_services_bounded"))
}
