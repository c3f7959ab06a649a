// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// Delays such as 10.5 ms sit inside a 1 ms bin, so the expected bucket does
// not depend on which side of an edge a bin includes.

// testLayouts is the registry of processor layouts that the tests'
// observers are given (testSettings), as a collector's factories give
// theirs.
var testLayouts = new(contract.Layouts)

// registerProcessor registers probes as a deltaq processor of the test's
// collector would, for the duration of the test.
func registerProcessor(t *testing.T, probes map[string]deltaq.Layout) {
	t.Helper()
	owner := new(int)
	testLayouts.Register(owner, probes)
	t.Cleanup(func() { testLayouts.Unregister(owner) })
}

// counter returns the sum of the data points of a self-telemetry counter
// whose attributes include attr (key=value), or of all points for "".
func counter(t *testing.T, h *harness, name, attr string) int64 {
	t.Helper()
	var n int64
	for attrs, v := range telemetrytest.Sum(t, h.tel, "otelcol_"+name) {
		if attr == "" || slices.Contains(strings.Split(attrs, ","), attr) {
			n += v
		}
	}
	return n
}

// observedHistograms returns, per probe, the deltaq.observed points of all
// metrics batches so far.
func observedHistograms(h *harness) map[string][]pmetric.HistogramDataPoint {
	out := map[string][]pmetric.HistogramDataPoint{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricObserved {
				return
			}
			dps := m.Histogram().DataPoints()
			for i := range dps.Len() {
				p, _ := dps.At(i).Attributes().Get(contract.AttrProbe)
				out[p.Str()] = append(out[p.Str()], dps.At(i))
			}
		})
	}
	return out
}

// outcomeCounts returns the probe's deltaq.outcomes totals by outcome in the
// last batch that holds them (the sum is cumulative).
func outcomeCounts(t *testing.T, h *harness, probe string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() != contract.MetricOutcomes {
				return
			}
			dps := m.Sum().DataPoints()
			for i := range dps.Len() {
				p, _ := dps.At(i).Attributes().Get(contract.AttrProbe)
				oc, _ := dps.At(i).Attributes().Get(contract.AttrOutcome)
				if p.Str() == probe {
					counts[oc.Str()] = dps.At(i).IntValue()
				}
			}
		})
	}
	return counts
}

func forEachMetric(md pmetric.Metrics, f func(pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				f(ms.At(k))
			}
		}
	}
}

// TestForgedSpanCannotChangeTheLayout: one forged span with dmax_ns = 1 per
// window used to turn 100 real 10.5 ms successes into 100 timeouts. With
// the probe's layout from the exporter's configuration or from the
// processor that produces it, every window holds the 100 successes in
// bucket 10 of the 100 × 1 ms layout, and the forged timeouts are refused
// and counted.
func TestForgedSpanCannotChangeTheLayout(t *testing.T) {
	for _, from := range []string{"exporter", "processor"} {
		t.Run(from, func(t *testing.T) {
			cfg := testConfig()
			if from == "exporter" {
				cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
			} else {
				registerProcessor(t, map[string]deltaq.Layout{"p": {DMaxNs: int64(100 * time.Millisecond), Bins: 100}})
			}
			h := newHarness(t, cfg, at(time.Second))
			const windows = 5
			for w := range windows {
				base := time.Duration(w) * time.Second
				specs := []span{{probe: "p", outcome: contract.Timeout, end: base + ms(10), delay: 1, dmax: 1, bins: 1}}
				for i := range 100 {
					specs = append(specs, span{probe: "p", outcome: contract.Success, end: base + ms(20+float64(i)),
						delay: ms(10.5), dmax: 100 * time.Millisecond, bins: 100})
				}
				h.consume(specs...)
				h.obs.tick(at(base + 2*time.Second))
			}
			hs := observedHistograms(h)["p"]
			require.Len(t, hs, windows)
			// deltaq.observed is cumulative: after window w, 100·(w+1)
			// successes, all in bucket 10, in one stream.
			for w, dp := range hs {
				want := uint64(100 * (w + 1))
				assert.Equal(t, want, dp.Count(), "window %d", w)
				assert.Equal(t, 100, dp.ExplicitBounds().Len(), "window %d: the configured 100 bins", w)
				assert.Equal(t, want, dp.BucketCounts().At(10), "window %d: 10.5 ms in bucket 10", w)
				assert.Equal(t, uint64(0), dp.BucketCounts().At(100), "window %d: no timeout", w)
				assert.Equal(t, hs[0].StartTimestamp(), dp.StartTimestamp(), "window %d: one stream", w)
			}
			assert.Equal(t, int64(windows), counter(t, h, "exporter_deltaq_instances_dropped", "reason=layout_mismatch"))
		})
	}
}

// TestTwoCollectorsOneLayout: two collectors observe the same probe with
// different dMax (100 ms here, 50 ms there). The windows keep this
// collector's layout; the other's successes are rebinned into it (and
// counted), its timeouts after 50 ms, which might have ended within 100 ms,
// are refused.
func TestTwoCollectorsOneLayout(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"p": {DMaxNs: int64(100 * time.Millisecond), Bins: 100}})
	h := newHarness(t, testConfig(), at(time.Second))
	other := func(s span) span { s.dmax, s.bins = 50*time.Millisecond, 50; return s }
	h.consume(
		other(span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(20.5)}),
		other(span{probe: "p", outcome: contract.Timeout, end: ms(200), delay: ms(50)}),
		span{probe: "p", outcome: contract.Success, end: ms(300), delay: ms(70.5), dmax: 100 * time.Millisecond, bins: 100},
	)
	h.obs.tick(at(2 * time.Second))
	hs := observedHistograms(h)["p"]
	require.Len(t, hs, 1)
	dp := hs[0]
	assert.Equal(t, 100, dp.ExplicitBounds().Len())
	assert.Equal(t, uint64(2), dp.Count())
	assert.Equal(t, uint64(1), dp.BucketCounts().At(20))
	assert.Equal(t, uint64(1), dp.BucketCounts().At(70))
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_instances_rebinned", ""))
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_instances_dropped", "reason=layout_mismatch"))
}

// seriesKey names one series: the metric and its attributes, sorted.
func seriesKey(name string, attrs pcommon.Map) string {
	var kv []string
	for k, v := range attrs.All() {
		kv = append(kv, k+"="+v.AsString())
	}
	sort.Strings(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

// TestHostileInputCardinality feeds 50 windows of hostile input through the
// exporter's real metric builder — per window one forged span per
// configured probe with a new dmax_ns and bins, and random junk probe names
// (some longer than the name bound) with random layouts — and counts the
// distinct series downstream would store: every probe keeps one histogram
// layout, and the number of series is bounded by the configuration.
//
// Per probe the series are at most: deltaq.observed 1, deltaq.outcomes 3,
// deltaq.failure_ratio, deltaq.qta.violation and deltaq.divergence 1 each,
// the QTA's and the divergence test's series (below),
// deltaq.quantile 2 per quantile, and deltaq.cdf cdf_points + 1 deltaq.le
// values for each of its 6 curves (with one layout per probe, each curve
// has one set of edges).
func TestHostileInputCardinality(t *testing.T) {
	const (
		windows   = 50
		maxProbes = 10
		cdfPoints = 8
	)
	registerProcessor(t, map[string]deltaq.Layout{
		"a": {DMaxNs: int64(50 * time.Millisecond), Bins: 50},
		"b": {DMaxNs: int64(50 * time.Millisecond), Bins: 50},
	})
	cfg := testConfig()
	cfg.MaxProbes = maxProbes
	cfg.CDFPoints = cdfPoints
	cfg.Diagram = "e2e = a -> b;"
	cfg.Probes = map[string]analysis.ProbeConfig{
		"e2e": {DMax: 100 * time.Millisecond, Bins: 100,
			QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 30 * time.Millisecond, P: 0.5}}, MaxFailure: 0.2},
			Triggers: analysis.Triggers{QTA: true, MaxDivergence: 0.5}},
	}
	configured := []string{"a", "b", "e2e"}
	h := newHarness(t, cfg, at(time.Second))
	rng := rand.New(rand.NewPCG(7, 11))
	junkName := func() string {
		n := 1 + rng.IntN(300) // some beyond the 256-byte bound
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('!' + rng.IntN(94))
		}
		return string(b)
	}
	for w := range windows {
		base := time.Duration(w) * time.Second
		var specs []span
		for _, p := range configured {
			// Forged first: it used to fix the window's layout.
			specs = append(specs, span{probe: p, outcome: contract.Success, end: base + ms(5), delay: ms(1.5),
				dmax: time.Duration(1 + rng.IntN(int(time.Second))), bins: 1 + rng.IntN(1000)})
		}
		for i := range 20 {
			end := base + ms(100+float64(i))
			specs = append(specs,
				span{probe: "a", outcome: contract.Success, end: end, delay: ms(10.5), dmax: 50 * time.Millisecond, bins: 50},
				span{probe: "b", outcome: contract.Success, end: end, delay: ms(12.5), dmax: 50 * time.Millisecond, bins: 50},
				span{probe: "e2e", outcome: contract.Success, end: end, delay: ms(25.5), dmax: 100 * time.Millisecond, bins: 100})
		}
		for range 5 {
			specs = append(specs, span{probe: junkName(), outcome: contract.Success, end: base + ms(300), delay: ms(2.5),
				dmax: time.Duration(1 + rng.IntN(int(time.Second))), bins: 1 + rng.IntN(1000)})
		}
		h.consume(specs...)
		h.obs.tick(at(base + 2*time.Second))
	}

	series := map[string]bool{}
	perProbe := map[string]int{}
	bounds := map[string]map[string]bool{} // probe → distinct bound lists
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			visit := func(attrs pcommon.Map) {
				k := seriesKey(m.Name(), attrs)
				if !series[k] {
					series[k] = true
					p, _ := attrs.Get(contract.AttrProbe)
					perProbe[p.Str()]++
				}
			}
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				for i := range m.Gauge().DataPoints().Len() {
					visit(m.Gauge().DataPoints().At(i).Attributes())
				}
			case pmetric.MetricTypeSum:
				for i := range m.Sum().DataPoints().Len() {
					visit(m.Sum().DataPoints().At(i).Attributes())
				}
			case pmetric.MetricTypeHistogram:
				for i := range m.Histogram().DataPoints().Len() {
					dp := m.Histogram().DataPoints().At(i)
					visit(dp.Attributes())
					p, _ := dp.Attributes().Get(contract.AttrProbe)
					if bounds[p.Str()] == nil {
						bounds[p.Str()] = map[string]bool{}
					}
					bounds[p.Str()][fmt.Sprint(dp.ExplicitBounds().AsRaw())] = true
				}
			}
		})
	}
	for _, p := range configured {
		assert.Len(t, bounds[p], 1, "probe %s: histogram layouts", p)
	}
	for p, b := range bounds {
		assert.Len(t, b, 1, "probe %.20q…: histogram layouts", p)
	}
	// A probe with a QTA of k points adds deltaq.qta.point and
	// deltaq.qta.slack k each, deltaq.qta.max_failure, deltaq.qta.slack.min,
	// deltaq.qta.margin.min and deltaq.qta.time_to_violation; a divergence
	// its test's p-value and statistic.
	const qtaPoints = 1
	perProbeBound := 1 + 3 + 3 + 2*len(cfg.Quantiles) + 6*(cdfPoints+1) + 2*qtaPoints + 4 + 2
	assert.LessOrEqual(t, len(perProbe), len(configured)+maxProbes, "probes with series")
	for p, n := range perProbe {
		assert.LessOrEqual(t, n, perProbeBound, "series of probe %.20q…", p)
		assert.LessOrEqual(t, len(p), contract.MaxNameLength)
	}
	assert.LessOrEqual(t, len(series), (len(configured)+maxProbes)*perProbeBound)
	for _, p := range configured {
		assert.Positive(t, perProbe[p], "probe %s has series", p)
	}
	assert.Positive(t, counter(t, h, "exporter_deltaq_instances_dropped", "reason=name_too_long"))
	assert.Positive(t, counter(t, h, "exporter_deltaq_instances_dropped", "reason=probe_limit"))
	t.Logf("%d series over %d probes (bound %d per probe)", len(series), len(perProbe), perProbeBound)
}

// TestREADMESeriesPerProbe: the README's reliability table gives the bound
// of TestHostileInputCardinality at the default quantiles and cdf_points,
// before the QTA's and the divergence test's series.
func TestREADMESeriesPerProbe(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var row string
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "| series per probe |") {
			row = line
		}
	}
	require.NotEmpty(t, row, "README.md has no row \"series per probe\"")
	cfg := NewDefaultConfig()
	n := 1 + 3 + 3 + 2*len(cfg.Quantiles) + 6*(cfg.CDFPoints+1)
	assert.Contains(t, row, fmt.Sprintf("| %d with the defaults", n))
}

// TestJunkNamesExpireAndNeverCrowdOutConfiguredProbes: 1100 junk names
// fill max_probes (1000) before the real probe, which a processor of this
// collector configures, sends its first instance: it is counted. Once the
// junk has been idle for probe_idle_timeout it is forgotten and new names
// are admitted.
func TestJunkNamesExpireAndNeverCrowdOutConfiguredProbes(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"real": {DMaxNs: int64(100 * time.Millisecond), Bins: 100}})
	cfg := testConfig()
	cfg.ProbeIdleTimeout = 3 * time.Second
	h := newHarness(t, cfg, at(time.Second))
	var junk []span
	for i := range 1100 {
		junk = append(junk, span{probe: fmt.Sprintf("junk-%d", i), outcome: contract.Success, end: ms(100), delay: ms(1), dmax: 10 * time.Millisecond, bins: 10})
	}
	h.consume(junk...)
	h.consume(span{probe: "real", outcome: contract.Success, end: ms(200), delay: ms(1.5), dmax: 100 * time.Millisecond, bins: 100})
	h.obs.tick(at(2 * time.Second))
	st := h.obs.Stats()
	assert.Equal(t, int64(1001), st.Counted, "1000 junk names and the real probe")
	assert.Equal(t, int64(100), counter(t, h, "exporter_deltaq_instances_dropped", "reason=probe_limit"))
	hs := observedHistograms(h)["real"]
	require.Len(t, hs, 1)
	assert.Equal(t, uint64(1), hs[0].Count())

	// Window [0, 1s) closed at 2 s; 3 s later the junk is forgotten.
	h.obs.tick(at(4 * time.Second))
	h.consume(span{probe: "new", outcome: contract.Success, end: 3500 * time.Millisecond, delay: ms(1), dmax: 10 * time.Millisecond, bins: 10})
	assert.Equal(t, int64(101), h.obs.Stats().Dropped[analysis.DropProbeLimit], "no place yet")
	h.obs.tick(at(5 * time.Second))
	assert.Equal(t, int64(1000), counter(t, h, "exporter_deltaq_probes_expired", ""))
	h.consume(span{probe: "new", outcome: contract.Success, end: 4500 * time.Millisecond, delay: ms(1), dmax: 10 * time.Millisecond, bins: 10})
	assert.Equal(t, int64(1002), h.obs.Stats().Counted, "a new name takes a freed place")
	assert.Equal(t, 2, h.obs.Stats().Probes, "real and new")
}

func TestLongProbeNameDropped(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	h.consume(
		span{probe: strings.Repeat("n", contract.MaxNameLength+1), outcome: contract.Success, end: ms(100), delay: ms(1), dmax: 10 * time.Millisecond, bins: 10},
		span{probe: strings.Repeat("n", contract.MaxNameLength), outcome: contract.Success, end: ms(100), delay: ms(1), dmax: 10 * time.Millisecond, bins: 10},
	)
	h.obs.tick(at(2 * time.Second))
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_instances_dropped", "reason=name_too_long"))
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_instances", ""))
}

func TestEndBeforeStartDroppedAsMalformed(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	h.consume(span{probe: "p", outcome: contract.Success, end: ms(100), delay: -ms(1), dmax: 10 * time.Millisecond, bins: 10})
	h.obs.tick(at(2 * time.Second))
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_instances_dropped", "reason=malformed"))
	assert.Equal(t, int64(0), counter(t, h, "exporter_deltaq_instances", ""))
}

// TestUnderResolvedProbesWarnOnceAndFireNoDivergence: in e2e = a -> b -> c
// -> d, three stages of 1 µs and one of 20 ms: the diagram's analysis grid
// spans the 20 ms in 4096 bins of 8.192 µs, and a, b and c fall in its first
// bin. No divergence trigger fires, each under-resolved probe is warned
// about once, naming the grid, and the under-resolved windows are counted.
// On 1 ms display bins the same stages of 0.145 ms were under-resolved;
// at the analysis resolution they are not (analysis.TestSubBinStagesDoNotFireDivergence).
func TestUnderResolvedProbesWarnOnceAndFireNoDivergence(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := testConfig()
	cfg.Diagram = "e2e = a -> b -> c -> d;"
	cfg.Probes = map[string]analysis.ProbeConfig{"e2e": {Triggers: analysis.Triggers{MaxDivergence: 0.2}}}
	h := newHarnessWith(t, cfg, at(time.Second), func(s *Settings) { s.Telemetry.Logger = zap.New(core) })
	const windows = 3
	for w := range windows {
		base := time.Duration(w) * time.Second
		var specs []span
		for i := range 10 {
			end := base + ms(100+float64(i))
			for _, p := range []string{"a", "b", "c"} {
				specs = append(specs, span{probe: p, outcome: contract.Success, end: end, delay: ms(0.001), dmax: 100 * time.Millisecond, bins: 100})
			}
			specs = append(specs, span{probe: "d", outcome: contract.Success, end: end, delay: ms(20), dmax: 100 * time.Millisecond, bins: 100},
				span{probe: "e2e", outcome: contract.Success, end: end, delay: ms(20.003), dmax: 100 * time.Millisecond, bins: 100})
		}
		h.consume(specs...)
		h.obs.tick(at(base + 2*time.Second))
	}
	assert.Equal(t, int64(0), counter(t, h, "exporter_deltaq_triggers_fired", "trigger=divergence"))
	assert.Empty(t, h.logs.AllLogs(), "no trigger record")
	warned := map[string]int{}
	for _, e := range logs.FilterMessageSnippet("shorter than one bin").All() {
		assert.Contains(t, e.Message, "(8.192µs) of the diagram's analysis grid")
		warned[e.ContextMap()["probe"].(string)]++
	}
	assert.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1}, warned)
	assert.Equal(t, int64(3*windows), counter(t, h, "exporter_deltaq_under_resolved_windows", ""))
}

// TestUnproducedReferencedProbes: the diagram's outcome b and the probes
// entry x are produced by no processor of this collector: a warning at
// start names them, and each window without their instances counts them.
func TestUnproducedReferencedProbes(t *testing.T) {
	registerProcessor(t, map[string]deltaq.Layout{"a": {DMaxNs: int64(10 * time.Millisecond), Bins: 10}})
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := testConfig()
	cfg.Diagram = "e2e = a -> b;"
	cfg.Probes = map[string]analysis.ProbeConfig{"x": {}}
	h := newHarnessWith(t, cfg, at(time.Second), func(s *Settings) { s.Telemetry.Logger = zap.New(core) })
	warn := logs.FilterMessageSnippet("may come from another collector").All()
	require.Len(t, warn, 1)
	assert.Equal(t, []any{"b", "x"}, warn[0].ContextMap()["probes"])

	h.consume(span{probe: "a", outcome: contract.Success, end: ms(100), delay: ms(1.5), dmax: 10 * time.Millisecond, bins: 10})
	h.obs.tick(at(2 * time.Second)) // closes [0, 1s)
	h.obs.tick(at(3 * time.Second)) // closes [1s, 2s)
	// b and x in both windows; a in the second, without its instance.
	assert.Equal(t, int64(2*2+1), counter(t, h, "exporter_deltaq_referenced_probe_empty_windows", ""))
	assert.Equal(t, []string{"a", "b", "x"}, h.obs.referenced)
}

// TestMisspelledProbeRefusedAtStart: with the processor's probes checkout,
// inventory and payment in this collector, a diagram outcome paymnet and a
// probes entry chekout are misspellings (one edit from a defined probe):
// the component refuses to start and says which probe was meant, where a
// name far from every probe (zzz) would only be warned about.
func TestMisspelledProbeRefusedAtStart(t *testing.T) {
	layout := deltaq.Layout{DMaxNs: int64(time.Second), Bins: 100}
	registerProcessor(t, map[string]deltaq.Layout{"checkout": layout, "inventory": layout, "payment": layout})
	cfg := testConfig()
	cfg.Diagram = "checkout = inventory -> paymnet;"
	cfg.Probes = map[string]analysis.ProbeConfig{"chekout": {}, "zzz": {}}
	set := testSettings(componenttest.NewTelemetry(), func() time.Time { return at(time.Second) })
	set.Instruments = testInstruments(set.Telemetry.MeterProvider.Meter(exporterScope), set.Kind)
	obs, err := New(cfg, set)
	require.NoError(t, err)
	err = obs.Start(Outputs{Metrics: new(consumertest.MetricsSink)})
	require.Error(t, err)
	assert.Equal(t, "diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n"+
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)`, err.Error())
	require.NoError(t, obs.Shutdown(context.Background()))
}

// TestClockBackWarnsOnce: the windows are aligned on the clock's time; when
// it steps back more than an interval behind the latest tick, no window
// closes until it is back there, and an instance that ends meanwhile, in a
// window closed already, is dropped (too_late). That is said once, at warn
// level, with the step; a step of an interval or less, and the ticks while
// the clock is still behind, say nothing. Once back, the windows close as
// due.
func TestClockBackWarnsOnce(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	h := newHarnessWith(t, testConfig(), at(time.Second), func(s *Settings) { s.Telemetry.Logger = zap.New(core) })
	closed := func() int64 { return counter(t, h, "exporter_deltaq_windows_closed", "") }
	back := func() []observer.LoggedEntry {
		return logs.FilterMessageSnippet("the clock went back").All()
	}
	h.consume(span{probe: "p", outcome: contract.Success, end: ms(1100), delay: ms(5), dmax: 50 * time.Millisecond, bins: 50})
	h.obs.tick(at(3 * time.Second)) // windows [0, 1 s) and [1 s, 2 s)
	require.Equal(t, int64(2), closed())
	h.obs.tick(at(2 * time.Second)) // one interval back
	assert.Empty(t, back())
	h.obs.tick(at(-7 * time.Second)) // ten seconds back
	h.consume(span{probe: "p", outcome: contract.Success, end: -6900 * time.Millisecond, delay: ms(5), dmax: 50 * time.Millisecond, bins: 50})
	h.obs.tick(at(-6 * time.Second))
	assert.Equal(t, int64(2), closed(), "no window closes while the clock is behind")
	assert.Equal(t, int64(1), h.obs.Stats().Dropped[analysis.DropTooLate])
	if entries := back(); assert.Len(t, entries, 1) {
		assert.Equal(t, 10*time.Second, entries[0].ContextMap()["step"])
	}
	h.obs.tick(at(4 * time.Second)) // window [2 s, 3 s)
	assert.Equal(t, int64(3), closed())
	assert.Len(t, back(), 1)
}

// TestSyntheticTimeoutAfterTheClockWentBack: a deltaq processor's
// synthetic timeout span, whose window closed before the clock stepped
// back, is too late while the clock is before that window's close, as the
// connector's own timeout of a start event is (the connector's
// TestStartEventsAfterTheClockWentBack) and as a success ending there is:
// counted, every synthetic timeout of the step went into the oldest open
// window, and none of its successes. Once the clock is past the window's
// close, a synthetic timeout known only then counts in the oldest open
// window, as before.
func TestSyntheticTimeoutAfterTheClockWentBack(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	h := newHarnessWith(t, testConfig(), at(time.Second), func(s *Settings) { s.Now = clk.Now })
	timeout := span{probe: "p", outcome: contract.Timeout, end: 4500 * time.Millisecond, delay: 50 * time.Millisecond, dmax: 50 * time.Millisecond, bins: 50}
	clk.Set(at(10 * time.Second))
	h.obs.tick(clk.Now())        // closes the windows up to [8 s, 9 s)
	clk.Set(at(5 * time.Second)) // the clock steps back 5 s; [4 s, 5 s) closes at 6 s
	h.consume(timeout, span{probe: "p", outcome: contract.Success, end: 4600 * time.Millisecond, delay: ms(5), dmax: 50 * time.Millisecond, bins: 50})
	st := h.obs.Stats()
	assert.Equal(t, int64(0), st.Counted, "nothing counted while the clock is back")
	assert.Equal(t, int64(2), st.Dropped[analysis.DropTooLate], "the synthetic timeout and the success")

	clk.Set(at(6 * time.Second)) // past the close of [4 s, 5 s)
	h.consume(timeout)
	st = h.obs.Stats()
	assert.Equal(t, int64(1), st.Counted)
	assert.Equal(t, int64(1), st.LateTimeouts, "counted in the oldest open window")
}
