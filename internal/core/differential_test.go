// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/reload"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// wireDiffConfig configures the single collector, the agents and the
// gateway alike: a probe of 100 bins over 10 ms with a QTA and a QoO
// requirement, one of 50 bins over 5 s with a QTA; the probe the spans
// name with their own layout (free) no configuration names.
func wireDiffConfig() *Config {
	cfg := testConfig()
	cfg.Quantiles = []float64{0.1, 0.5, 0.9, 0.99}
	qoo := analysis.QoOConfig{
		ROP:  analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 3 * time.Millisecond}, {P: 0.9, Delay: 8 * time.Millisecond}}, MaxFailure: 0.2},
		CPUP: analysis.QoOThreshold{Points: []analysis.QoOPoint{{P: 0.5, Delay: 9 * time.Millisecond}, {P: 0.9, Delay: 10 * time.Millisecond}}, MaxFailure: 0.4},
	}
	cfg.Probes = map[string]analysis.ProbeConfig{
		"fast": {DMax: 10 * time.Millisecond, Bins: 100, QoO: qoo,
			QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 2 * time.Millisecond, P: 0.3}, {Delay: 7300 * time.Microsecond, P: 0.6}}, MaxFailure: 0.3}},
		"slow": {DMax: 5 * time.Second, Bins: 50, QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 333 * time.Millisecond, P: 0.5}}}},
	}
	return cfg
}

// wireSpan is a span of the differential stream and its adjusted count's
// threshold (the tracestate's ot=th, "" unsampled).
type wireSpan struct {
	span
	th string
}

// wireStream returns the seeded spans of window w: delays log-uniform over
// 1 µs – 20 s (beyond dMax a timeout), failures, the processor's timeouts,
// a fifth sampled with adjusted counts 2, 4 or 16.
func wireStream(r *rand.Rand, w int) []wireSpan {
	dmax := map[string]time.Duration{"fast": 10 * time.Millisecond, "slow": 5 * time.Second, "free": 200 * time.Millisecond}
	bins := map[string]int{"fast": 100, "slow": 50, "free": 40}
	probes := []string{"fast", "slow", "free"}
	var out []wireSpan
	for range 150 + r.IntN(150) {
		p := probes[r.IntN(len(probes))]
		end := time.Duration(w)*time.Second + time.Duration(r.Int64N(int64(time.Second)))
		d := time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(2e10)-math.Log(1e3))))
		if p == "fast" && r.IntN(2) == 0 {
			d = time.Duration(r.Float64() * 12e6)
		}
		s := wireSpan{span: span{probe: p, outcome: contract.Success, end: end, delay: d, dmax: dmax[p], bins: bins[p]}}
		switch r.IntN(20) {
		case 0:
			s.outcome = contract.Failure
		case 1:
			s.outcome, s.delay = contract.Timeout, dmax[p]
		}
		if s.end < s.delay && s.outcome != contract.Timeout {
			s.delay = s.end // no span starts before the run
		}
		if r.IntN(5) == 0 {
			s.th = []string{"8", "c", "f"}[r.IntN(3)]
		}
		out = append(out, s)
	}
	return out
}

// wireTraces returns the traces of the spans, each sampled one with its
// threshold in its tracestate.
func wireTraces(specs []wireSpan) (out []span, th []string) {
	for _, s := range specs {
		out = append(out, s.span)
		th = append(th, s.th)
	}
	return out, th
}

// consumeWire gives h the spans, with their tracestates.
func consumeWire(t *testing.T, h *harness, specs []wireSpan) {
	t.Helper()
	spans, th := wireTraces(specs)
	td := instanceTraces(spans...)
	ss := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	j := 0
	for i := range ss.Len() {
		sp := ss.At(i)
		if sp.Name() == "unrelated" {
			continue
		}
		if th[j] != "" {
			sp.TraceState().FromRaw("ot=th:" + th[j])
		}
		j++
	}
	require.Equal(t, len(specs), j)
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
}

// wireDiffMetrics are the metrics compared: what the analysis of a window
// says, not the collector's own telemetry.
var wireDiffMetrics = map[string]bool{
	contract.MetricObserved: true, contract.MetricQuantile: true, contract.MetricOutcomes: true,
	contract.MetricFailureRatio: true, contract.MetricQTAViolation: true, contract.MetricQTAPoint: true,
	contract.MetricQTAHolds: true, contract.MetricQTASlack: true, contract.MetricQTASlackMin: true,
	contract.MetricQTAMarginMin: true, contract.MetricQoOScore: true, contract.MetricQoOLatency: true,
	contract.MetricQoOLoss: true, contract.MetricQoORate: true, contract.MetricCDF: true,
}

// wireDump returns h's points of the compared metrics, by metric, time and
// attributes, of the windows that end from 1 s to until (after t0): the
// windows of the stream.
func wireDump(h *harness, until time.Duration) map[string][]float64 {
	out := map[string][]float64{}
	for _, md := range h.metrics.AllMetrics() {
		forEachMetric(md, func(m pmetric.Metric) {
			if !wireDiffMetrics[m.Name()] {
				return
			}
			put := func(ts pcommon.Timestamp, attrs pcommon.Map, v ...float64) {
				if d := ts.AsTime().Sub(t0); d > until || d < time.Second {
					return
				}
				var kv []string
				attrs.Range(func(k string, a pcommon.Value) bool {
					kv = append(kv, k+"="+a.AsString())
					return true
				})
				sort.Strings(kv)
				out[fmt.Sprintf("%s %v {%s}", m.Name(), ts.AsTime().Sub(t0), strings.Join(kv, ","))] = v
			}
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				dps := m.Gauge().DataPoints()
				for i := range dps.Len() {
					p := dps.At(i)
					put(p.Timestamp(), p.Attributes(), p.DoubleValue(), float64(p.IntValue()))
				}
			case pmetric.MetricTypeSum:
				dps := m.Sum().DataPoints()
				for i := range dps.Len() {
					p := dps.At(i)
					put(p.Timestamp(), p.Attributes(), p.DoubleValue(), float64(p.IntValue()))
				}
			case pmetric.MetricTypeHistogram:
				dps := m.Histogram().DataPoints()
				for i := range dps.Len() {
					p := dps.At(i)
					v := []float64{float64(p.Count()), p.Sum()}
					for _, c := range p.BucketCounts().AsRaw() {
						v = append(v, float64(c))
					}
					put(p.Timestamp(), p.Attributes(), append(v, p.ExplicitBounds().AsRaw()...)...)
				}
			}
		})
	}
	return out
}

// TestGatewayDifferentialOverTheWire: a seeded stream of spans split at
// random across 1, 3 and 17 agents, whose windows reach a gateway as
// deltaq.window points in random order: the gateway's every point of the
// analysis's metrics is the single collector's.
func TestGatewayDifferentialOverTheWire(t *testing.T) {
	for _, n := range []int{1, 3, 17} {
		t.Run(fmt.Sprintf("agents=%d", n), func(t *testing.T) { wireRun(t, n, false, false) })
	}
	// Requests delivered twice (an exporter's retries), and agent 0
	// restarted in the middle of window 2 under its name: its windows
	// before and after count, the repeats once.
	t.Run("repeats and a restart", func(t *testing.T) { wireRun(t, 3, true, false) })
	// Every other agent shows the probes in other bins over the same
	// dMax: their windows are read into the gateway's layout from their
	// analysis counts, and the quantiles, read from those, are the single
	// collector's.
	t.Run("agents of other layouts", func(t *testing.T) { wireRun(t, 5, false, true) })
	// The gateway reloaded (SIGHUP) with its configuration unchanged, in
	// windows 2 and 4, between the arrival of requests and the tick, with
	// requests delivered again across it: its windows, totals and the
	// prints of the windows it merged go to the gateway the reload builds.
	t.Run("reloads", func(t *testing.T) { wireRun(t, 3, true, false, 2, 4) })
	// The gateway reloaded into a configuration that adds a probe
	// (named first: the probes' indices shift up), then back (they shift
	// down), with requests delivered again across each: the repeats are
	// duplicates still, and count once.
	t.Run("reloads that add and remove a probe", func(t *testing.T) {
		wireRunWith(t, 3, true, false, func(cfg *Config, i int) {
			if i%2 == 0 {
				cfg.Probes["added"] = analysis.ProbeConfig{DMax: time.Second, Bins: 10}
			}
		}, 2, 4)
	})
}

// wireRun runs TestGatewayDifferentialOverTheWire with n agents, with
// hard the repeats and the restart, with layouts the agents of other
// layouts (and the quantiles alone compared), reloading the gateway in the
// windows reloads.
func wireRun(t *testing.T, n int, hard, layouts bool, reloads ...int) {
	wireRunWith(t, n, hard, layouts, nil, reloads...)
}

// wireRunWith is wireRun whose reload i (from 0) changes the gateway's
// configuration with change, when not nil; a probe it adds is left out
// of the comparison.
func wireRunWith(t *testing.T, n int, hard, layouts bool, change func(cfg *Config, i int), reloads ...int) {
	const windows, restartW = 6, 2
	r := rand.New(rand.NewPCG(uint64(n), 5))
	newAgent := func(i int, now time.Time) *harness {
		cfg := wireDiffConfig()
		cfg.EmitWindows = true
		if layouts && i%2 == 1 {
			f, s := cfg.Probes["fast"], cfg.Probes["slow"]
			f.Bins, s.Bins = 7, 1000
			cfg.Probes["fast"], cfg.Probes["slow"] = f, s
		}
		name := fmt.Sprintf("agent-%d", i)
		return newHarnessWith(t, cfg, now, func(s *Settings) {
			res := pcommon.NewResource()
			res.Attributes().PutStr("service.instance.id", name)
			s.Telemetry.Resource = res
		})
	}
	var old *harness // agent 0 before its restart
	start := at(time.Second)
	single := newHarness(t, wireDiffConfig(), start)
	gcfg := wireDiffConfig()
	gcfg.Lag = 3 * time.Second
	ho := reload.New()
	withID := func(s *Settings) { s.ID, s.Handover = "deltaq/gateway", ho }
	gateway := newHarnessWith(t, gcfg, start, withID)
	gateways := []*harness{gateway} // the gateway and those its reloads built
	agents := make([]*harness, n)
	for i := range agents {
		agents[i] = newAgent(i, start)
	}
	var pending []pmetric.Metrics
	for w := range windows + 3 {
		if w < windows {
			specs := wireStream(r, w)
			consumeWire(t, single, specs)
			shares := make([][]wireSpan, n)
			for _, s := range specs {
				i := r.IntN(n)
				shares[i] = append(shares[i], s)
			}
			if hard && w == restartW {
				// Agent 0 sees the first half of the window's
				// spans, then restarts.
				half := shares[0][:len(shares[0])/2]
				if len(half) > 0 {
					consumeWire(t, agents[0], half)
				}
				shares[0] = shares[0][len(half):]
				old, agents[0] = agents[0], newAgent(0, at(time.Duration(w+1)*time.Second+500*time.Millisecond))
			}
			for i, a := range agents {
				if len(shares[i]) > 0 {
					consumeWire(t, a, shares[i])
				}
			}
		}
		now := at(time.Duration(w+2) * time.Second)
		single.obs.tick(now)
		for _, a := range agents {
			a.obs.tick(now)
		}
		// The agents' new requests reach the gateway in random
		// order, a quarter of them a tick later (within the
		// gateway's lag).
		var fresh []pmetric.Metrics
		if old != nil {
			old.obs.tick(now)
			fresh = append(fresh, old.metrics.AllMetrics()...)
			old.metrics.Reset()
		}
		for _, a := range agents {
			fresh = append(fresh, a.metrics.AllMetrics()...)
			a.metrics.Reset()
		}
		arrived := pending
		pending = nil
		for _, md := range fresh {
			if r.IntN(4) == 0 {
				pending = append(pending, md)
			} else {
				arrived = append(arrived, md)
			}
			if hard && r.IntN(3) == 0 {
				arrived = append(arrived, md) // delivered again
			}
		}
		r.Shuffle(len(arrived), func(i, j int) { arrived[i], arrived[j] = arrived[j], arrived[i] })
		for i, md := range arrived {
			if i == len(arrived)/2 && slices.Contains(reloads, w) {
				ho.Requested()
				require.NoError(t, gateway.obs.Shutdown(context.Background()))
				rcfg := gcfg
				if change != nil {
					rcfg = wireDiffConfig()
					rcfg.Lag = gcfg.Lag
					change(rcfg, len(gateways)-1)
				}
				nu := newHarnessWith(t, rcfg, now.Add(-300*time.Millisecond), withID)
				for _, md := range gateway.metrics.AllMetrics() {
					require.NoError(t, nu.metrics.ConsumeMetrics(context.Background(), md)) // the output before
				}
				gateways = append(gateways, nu)
				gateway = nu
			}
			require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
		}
		gateway.obs.tick(now)
	}
	for _, md := range pending {
		require.NoError(t, gateway.obs.ConsumeMetrics(context.Background(), md))
	}
	gateway.obs.tick(at(time.Duration(windows+8) * time.Second))
	single.obs.tick(at(time.Duration(windows+8) * time.Second))

	until := time.Duration(windows+1) * time.Second
	want, got := wireDump(single, until), wireDump(gateway, until)
	compared := 0
	for k, v := range want {
		if layouts && !strings.HasPrefix(k, contract.MetricQuantile+" ") {
			continue
		}
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("gateway lacks %s (single: %v)", k, v)
		case !slices.EqualFunc(g, v, func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }):
			t.Errorf("%s: gateway %v, single %v", k, g, v)
		default:
			compared++
		}
	}
	for k, v := range got {
		if change != nil && strings.Contains(k, contract.AttrProbe+"=added") {
			continue
		}
		if _, ok := want[k]; !ok && (!layouts || strings.HasPrefix(k, contract.MetricQuantile+" ")) {
			t.Errorf("gateway has %s = %v, the single collector none", k, v)
		}
	}
	least := 100
	if layouts {
		least = 30 // the quantiles alone
	}
	if compared < least {
		t.Errorf("%d points compared", compared)
	}
	fates := map[string]int64{}
	for _, g := range gateways {
		for f, n := range telemetrytest.Points(t, g.tel, "otelcol_exporter_deltaq_contributions") {
			fates[f] += n
		}
	}
	for f := range fates {
		if f != "fate=accepted" && f != "fate=idle" && (f != "fate=duplicate" || !hard) {
			t.Errorf("contributions %v: want accepted and idle (and with repeats duplicate) only", fates)
		}
	}
	if hard && fates["fate=duplicate"] == 0 {
		t.Errorf("contributions %v: want duplicates", fates)
	}
}
