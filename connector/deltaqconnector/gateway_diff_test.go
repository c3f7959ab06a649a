// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// gwCase is one configuration of the gateway differential: the agents'
// and the single collector's interval and lag, the gateway's lag, the
// probes' bins, and how the agents differ.
type gwCase struct {
	seed          uint64
	agents        int
	interval, lag time.Duration
	gatewayLag    time.Duration
	bins          int
	// agentBins, when not nil, gives agent i the bins agentBins(i) of
	// every probe over the same dMax (the gateway and the single
	// collector keep bins).
	agentBins func(i int) int
	// payAgents, when not zero, is how many agents (the first) match pay:
	// the others have no such probe, and get none of its spans.
	payAgents int
	// restart restarts agent 0 at that time (from coretest.T0), under its
	// name; zero is none.
	restart time.Duration
	// repeat delivers every third request of the agents twice.
	repeat bool
	// windowsOnly is the agents' windows_only.
	windowsOnly bool
	// starts announces half of a's instances with a start event, which
	// goes to the agent of the span; a tenth of those spans never come
	// (timeouts counted in real time).
	starts bool
	// auto gives the probes of the agents and of the single collector
	// dmax: auto (from dmax_max 10 s); the gateway pins none of them.
	auto bool
}

// gwProbes returns the probes of the configuration: the matching options
// for a collector that reads spans (match), the layouts and requirements
// for all, or with auto dmax: auto for those that read spans and no
// layout for the gateway. bins is a's, b's and e2e's bins, twice that (at most 1000) pay's.
func gwProbes(match bool, bins int, pay, auto bool) map[string]any {
	probe := func(m, fail map[string]any, dmax string, bins int, rest map[string]any) map[string]any {
		p := map[string]any{"dmax": dmax, "bins": bins}
		switch {
		case auto && match:
			p = map[string]any{"dmax": "auto", "bins": bins, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}
		case auto:
			p = map[string]any{}
		}
		if match {
			p["match"] = m
			if fail != nil {
				p["failure"] = fail
			}
		}
		for k, v := range rest {
			p[k] = v
		}
		return p
	}
	status := map[string]any{"status_error": true}
	probes := map[string]any{
		"a": probe(map[string]any{}, status, "50ms", bins, map[string]any{
			"qta":      map[string]any{"points": []any{map[string]any{"delay": "12ms", "p": 0.5}}, "max_failure": 0.1},
			"triggers": map[string]any{"qta": true, "failure": true},
		}),
		"b": probe(map[string]any{}, status, "50ms", bins, nil),
		"e2e": probe(map[string]any{"span_name": "e2e", "service_name": "shop"}, nil, "100ms", bins, map[string]any{
			"qta": map[string]any{"points": []any{map[string]any{"delay": "30ms", "p": 0.5}}, "max_failure": 0.2},
			"qoo": map[string]any{
				"rop":  map[string]any{"points": []any{map[string]any{"p": 0.5, "delay": "20ms"}}, "max_failure": 0.1},
				"cpup": map[string]any{"points": []any{map[string]any{"p": 0.5, "delay": "60ms"}}, "max_failure": 0.5},
			},
		}),
	}
	if pay {
		probes["pay"] = probe(map[string]any{"span_name_regexp": "^pay "},
			map[string]any{"conditions": []any{map[string]any{"attribute": "http.response.status_code", "op": ">=", "value": 500}}},
			"1s", min(2*bins, 1000), nil)
	}
	return probes
}

// gwConfig returns the connector's configuration of a collector of the
// case: the single collector (role "single"), agent i ("agent") or the
// gateway ("gateway").
func gwConfig(t *testing.T, f connector.Factory, c gwCase, role string, i int) component.Config {
	t.Helper()
	bins := c.bins
	if role == "agent" && c.agentBins != nil {
		bins = c.agentBins(i)
	}
	m := map[string]any{
		"interval":  c.interval.String(),
		"lag":       c.lag.String(),
		"quantiles": []any{0.1, 0.5, 0.9},
		"diagram":   "e2e = a -> b;",
		"probes":    gwProbes(role != "gateway", bins, role != "agent" || c.payAgents == 0 || i < c.payAgents, c.auto),
	}
	switch role {
	case "agent":
		m["emit_windows"] = true
		m["windows_only"] = c.windowsOnly
	case "gateway":
		m["lag"] = c.gatewayLag.String()
	}
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(m).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	return cfg
}

// gwCollector is one collector of the differential: its deltaq
// connector's two sides (traces, or at the gateway metrics, to metrics and
// to logs), its clock and its output.
type gwCollector struct {
	clk *coretest.Clock
	// logs is the connector's logs side (nil at the gateway), whose start
	// events' timeouts the clock counts (coretest.Clock.Expire).
	logs   consumer.Logs
	traces []consumer.Traces
	comps  []component.Component
	msink  *consumertest.MetricsSink
	lsink  *consumertest.LogsSink
	tel    *componenttest.Telemetry
	down   bool
}

// newGWCollector starts the connector of the role, named name
// (service.instance.id), its clock at now.
func newGWCollector(t *testing.T, c gwCase, role string, i int, name string, now time.Time) *gwCollector {
	t.Helper()
	ctx := context.Background()
	g := &gwCollector{clk: coretest.NewClock(now), msink: new(consumertest.MetricsSink),
		lsink: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { require.NoError(t, g.tel.Shutdown(context.Background())) })
	f := deltaqconnector.StartClockFactoryFor(collectorstate.New(), g.clk)
	cfg := gwConfig(t, f, c, role, i)
	set := connectortest.NewNopSettings(f.Type())
	set.ID = component.NewID(f.Type())
	set.TelemetrySettings = g.tel.NewTelemetrySettings()
	set.Resource.Attributes().PutStr("service.instance.id", name)
	if role == "gateway" {
		mm, err := f.CreateMetricsToMetrics(ctx, set, cfg, g.msink)
		require.NoError(t, err)
		ml, err := f.CreateMetricsToLogs(ctx, set, cfg, g.lsink)
		require.NoError(t, err)
		g.comps = []component.Component{mm, ml}
	} else {
		tm, err := f.CreateTracesToMetrics(ctx, set, cfg, g.msink)
		require.NoError(t, err)
		tl, err := f.CreateTracesToLogs(ctx, set, cfg, g.lsink)
		require.NoError(t, err)
		g.traces, g.comps = []consumer.Traces{tm, tl}, []component.Component{tm, tl}
		if c.starts {
			lm, err := f.CreateLogsToMetrics(ctx, set, cfg, g.msink)
			require.NoError(t, err)
			g.logs, g.comps = lm, append(g.comps, lm)
		}
	}
	for _, cc := range g.comps {
		require.NoError(t, cc.Start(ctx, componenttest.NewNopHost()))
	}
	t.Cleanup(func() { g.shutdown(t) })
	return g
}

func (g *gwCollector) shutdown(t *testing.T) {
	t.Helper()
	if g.down {
		return
	}
	g.down = true
	for _, cc := range g.comps {
		require.NoError(t, cc.Shutdown(context.Background()))
	}
}

// consumeTraces gives the collector the spans, at its clock's time: that
// of its last tick. The clock moves at ticks alone: the timeout timer
// reads it when it runs, and the second tick of tick returns before that
// run ends.
func (g *gwCollector) consumeTraces(t *testing.T, spans []diffSpan) {
	t.Helper()
	td := diffTraces(spans)
	for _, cc := range g.traces {
		require.NoError(t, cc.ConsumeTraces(context.Background(), td))
	}
}

// consumeStarts gives the collector the start events of the spans, at its
// clock's time (consumeTraces).
func (g *gwCollector) consumeStarts(t *testing.T, spans []diffSpan) {
	t.Helper()
	ld := plog.NewLogs()
	for _, s := range spans {
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", s.service)
		lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(s.start))
		lr.SetTraceID(s.traceID)
		lr.SetSpanID(s.spanID)
		lr.Attributes().PutStr(contract.AttrProbe, s.name)
		if s.traceState != "" {
			lr.Attributes().PutStr(contract.AttrTraceState, s.traceState)
		}
	}
	require.NoError(t, g.logs.ConsumeLogs(context.Background(), ld))
}

// tick moves the collector's clock to now: the timeouts due are counted
// (with start events) and the windows due close.
func (g *gwCollector) tick(now time.Time) {
	if g.logs != nil && !g.down {
		g.clk.Expire(now)
	}
	g.clk.Tick(now)
}

// consumeMetrics gives the gateway an agent's request at its clock's time
// now.
func (g *gwCollector) consumeMetrics(t *testing.T, now time.Time, md pmetric.Metrics) {
	t.Helper()
	g.clk.Set(now)
	for _, cc := range g.comps {
		require.NoError(t, cc.(consumer.Metrics).ConsumeMetrics(context.Background(), md))
	}
}

// take returns the metrics the collector output since the last take.
func (g *gwCollector) take() []pmetric.Metrics {
	out := g.msink.AllMetrics()
	g.msink.Reset()
	return out
}

// gwStep is the differential's clock step: spans arrive, windows close and
// requests reach the gateway on its multiples.
const gwStep = 50 * time.Millisecond

// gwEvent is a span, or its start event, the agent it goes to and when it
// arrives.
type gwEvent struct {
	at    time.Time
	span  diffSpan
	start bool
	agent int
}

// gwEvents returns the events of the spans in arrival order: each span to
// an agent at random (pay's to one that matches pay); with starts, half of
// a's spans announced by a start event to the same agent, which arrives up
// to 20 ms after the start, a tenth of those spans never delivered.
func gwEvents(r *rand.Rand, c gwCase, spans []diffSpan) []gwEvent {
	var out []gwEvent
	for _, s := range spans {
		k := c.agents
		if strings.HasPrefix(s.name, "pay ") && c.payAgents != 0 {
			k = c.payAgents
		}
		e := gwEvent{at: s.arrive, span: s, agent: r.IntN(k)}
		if c.starts && s.name == "a" && !s.end.Before(s.start) && r.IntN(2) == 0 {
			out = append(out, gwEvent{at: s.start.Add(time.Duration(r.Int64N(int64(20 * time.Millisecond)))), span: s, start: true, agent: e.agent})
			if r.IntN(10) == 0 {
				continue
			}
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b gwEvent) int { return a.at.Compare(b.at) })
	return out
}

// deliver gives the single collector and the agents the events that
// arrive before now, the start events first, at the time of their last
// tick, and returns the others.
func deliver(t *testing.T, now time.Time, evs []gwEvent, single *gwCollector, agents []*gwCollector) []gwEvent {
	t.Helper()
	n := 0
	for n < len(evs) && evs[n].at.Before(now) {
		n++
	}
	for _, starts := range []bool{true, false} {
		all, shares := []diffSpan(nil), make([][]diffSpan, len(agents))
		for _, e := range evs[:n] {
			if e.start == starts {
				all, shares[e.agent] = append(all, e.span), append(shares[e.agent], e.span)
			}
		}
		for i, g := range append([]*gwCollector{single}, agents...) {
			batch := all
			if i > 0 {
				batch = shares[i-1]
			}
			switch {
			case len(batch) == 0:
			case starts:
				g.consumeStarts(t, batch)
			default:
				g.consumeTraces(t, batch)
			}
		}
	}
	return evs[n:]
}

// gwDelivery is an agent's request and when it reaches the gateway.
type gwDelivery struct {
	at time.Time
	md pmetric.Metrics
}

// gwResult is what the single collector and the gateway output.
type gwResult struct {
	single, gateway *gwCollector
	// agents are the agents, those restarted first.
	agents         []*gwCollector
	singleMetrics  []pmetric.Metrics
	gatewayMetrics []pmetric.Metrics
	// until is the end of the last window compared.
	until time.Time
}

// runGW runs the case on seconds seconds of diffSpans: each span goes to
// the single collector and to one agent at random (pay's to an agent that
// matches pay), as it arrives; the agents' requests reach the gateway in
// random order, each after a random delay that keeps it within the
// gateway's lag.
func runGW(t *testing.T, c gwCase, seconds int) gwResult {
	t.Helper()
	r := rand.New(rand.NewPCG(c.seed, 3))
	evs := gwEvents(r, c, diffSpans(r, seconds))
	start := coretest.At(0)
	single := newGWCollector(t, c, "single", 0, "single", start)
	gateway := newGWCollector(t, c, "gateway", 0, "gateway", start)
	agents := make([]*gwCollector, c.agents)
	for i := range agents {
		agents[i] = newGWCollector(t, c, "agent", i, fmt.Sprintf("agent-%d", i), start)
	}
	var old []*gwCollector // agents restarted, shut down
	// A request leaves an agent at most a step after its window closed;
	// it must reach the gateway a step before the gateway closes it.
	maxDelay := c.gatewayLag - c.lag - 2*gwStep
	require.Positive(t, maxDelay)
	var pending []gwDelivery
	var gatewayOut []pmetric.Metrics
	// The windows up to two intervals after the last span's arrival hold
	// every span.
	until := evs[len(evs)-1].at.Add(2 * c.interval).Truncate(c.interval)
	end := until.Add(c.gatewayLag + maxDelay + 2*gwStep)
	for now := start.Add(gwStep); !now.After(end); now = now.Add(gwStep) {
		if c.restart != 0 && now.Equal(coretest.At(c.restart)) {
			// The agent shuts down (flushing its open windows) and
			// starts again under its name.
			agents[0].shutdown(t)
			old = append(old, agents[0])
			agents[0] = newGWCollector(t, c, "agent", 0, "agent-0", now)
		}
		evs = deliver(t, now, evs, single, agents)
		single.tick(now)
		var fresh []pmetric.Metrics
		for _, a := range old {
			fresh = append(fresh, a.take()...)
		}
		for _, a := range agents {
			a.tick(now)
			fresh = append(fresh, a.take()...)
		}
		for _, md := range fresh {
			d := gwDelivery{at: now.Add(time.Duration(r.Int64N(int64(maxDelay)/int64(gwStep)+1)) * gwStep), md: md}
			pending = append(pending, d)
			if c.repeat && r.IntN(3) == 0 {
				d.at = now.Add(time.Duration(r.Int64N(int64(maxDelay)/int64(gwStep)+1)) * gwStep)
				pending = append(pending, d)
			}
		}
		r.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
		var later []gwDelivery
		for _, d := range pending {
			if d.at.After(now) {
				later = append(later, d)
				continue
			}
			gateway.consumeMetrics(t, now, d.md)
		}
		pending = later
		gateway.clk.Tick(now)
		gatewayOut = append(gatewayOut, gateway.take()...)
	}
	require.Empty(t, evs)
	// What is still pending is of windows after until, which the
	// comparison leaves out.
	return gwResult{single: single, gateway: gateway, agents: append(old, agents...), until: until,
		singleMetrics: single.take(), gatewayMetrics: gatewayOut}
}

// gwPoints returns every point of the metrics of the analysis — not the
// windows in mergeable form, their contributors or the collector's own
// telemetry — by metric, time (from coretest.T0) and attributes, of the
// windows that end after coretest.T0 and by until: a histogram's count,
// sum, bucket counts and bounds; a number point's value.
func gwPoints(mds []pmetric.Metrics, until time.Time) map[string][]float64 {
	out := map[string][]float64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if strings.HasPrefix(m.Name(), contract.MetricWindow) {
						continue
					}
					put := func(ts pcommon.Timestamp, attrs pcommon.Map, v ...float64) {
						if t := ts.AsTime(); t.After(until) || !t.After(coretest.T0) {
							return
						}
						var kv []string
						for k, a := range attrs.All() {
							kv = append(kv, k+"="+a.AsString())
						}
						slices.Sort(kv)
						out[fmt.Sprintf("%s %v {%s}", m.Name(), ts.AsTime().Sub(coretest.T0), strings.Join(kv, ","))] = v
					}
					switch m.Type() {
					case pmetric.MetricTypeGauge:
						for _, p := range m.Gauge().DataPoints().All() {
							put(p.Timestamp(), p.Attributes(), p.DoubleValue(), float64(p.IntValue()))
						}
					case pmetric.MetricTypeSum:
						for _, p := range m.Sum().DataPoints().All() {
							put(p.Timestamp(), p.Attributes(), p.DoubleValue(), float64(p.IntValue()))
						}
					case pmetric.MetricTypeHistogram:
						for _, p := range m.Histogram().DataPoints().All() {
							v := []float64{float64(p.Count()), p.Sum()}
							for _, c := range p.BucketCounts().All() {
								v = append(v, float64(c))
							}
							put(p.Timestamp(), p.Attributes(), append(v, p.ExplicitBounds().AsRaw()...)...)
						}
					default:
						out[m.Name()+" of type "+m.Type().String()] = nil
					}
				}
			}
		}
	}
	return out
}

// check requires the gateway's every window to be the single collector's
// (the windows before the first span's aside: a gateway learns a probe's
// services from the agents' first windows). With layouts (the agents'
// layouts the gateway's) every point of the analysis's metrics and every
// trigger; else the observed quantiles.
func (res gwResult) check(t *testing.T, layouts bool) {
	t.Helper()
	var want, got map[string][]float64
	if layouts {
		want, got = gwPoints(res.singleMetrics, res.until), gwPoints(res.gatewayMetrics, res.until)
		require.Equal(t, liveTriggers(res.single.lsink.AllLogs()), liveTriggers(res.gateway.lsink.AllLogs()))
	} else {
		want, got = map[string][]float64{}, map[string][]float64{}
		for _, p := range []struct {
			mds []pmetric.Metrics
			out map[string][]float64
		}{{res.singleMetrics, want}, {res.gatewayMetrics, got}} {
			for k, v := range liveViews(p.mds) {
				for name, x := range v {
					if strings.HasPrefix(name, "q") && !strings.HasPrefix(name, "qoo") && k.end <= res.until.UnixNano() {
						var f float64
						fmt.Sscan(x, &f)
						p.out[fmt.Sprintf("%v %s %s", time.Unix(0, k.end).Sub(coretest.T0), k.probe, name)] = []float64{f}
					}
				}
			}
		}
	}
	require.GreaterOrEqual(t, len(want), 30)
	// Sums of delays in seconds are added in another order: they agree
	// to rounding.
	near := func(a, b float64) bool {
		return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
	}
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok || !slices.EqualFunc(g, v, near) {
			diffs = append(diffs, fmt.Sprintf("%s: gateway %v (%v), single %v", k, g, ok, v))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: gateway %v, single none", k, g))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d differences:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// checkFates requires the gateway to have merged every window of the
// agents, and with repeat to have refused the repeats as duplicates.
func (res gwResult) checkFates(t *testing.T, repeat bool) {
	t.Helper()
	fates := telemetrytest.Points(t, res.gateway.tel, "otelcol_connector_deltaq_contributions")
	require.Positive(t, fates["fate=accepted"])
	for f := range fates {
		if f != "fate=accepted" && f != "fate=idle" && (f != "fate=duplicate" || !repeat) {
			t.Errorf("contributions %v: want accepted and idle (and with repeats duplicate) only", fates)
		}
	}
	if repeat && fates["fate=duplicate"] == 0 {
		t.Errorf("contributions %v: want duplicates", fates)
	}
}

// gwInstances returns the instances a collector counted: the last value of
// each stream of deltaq.outcomes (a probe's streams start again when its
// layout or its services change), added up.
func gwInstances(mds []pmetric.Metrics) int64 {
	last := map[string]int64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() != contract.MetricOutcomes {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						last[fmt.Sprint(dp.Attributes().AsRaw(), dp.StartTimestamp())] = dp.IntValue()
					}
				}
			}
		}
	}
	var n int64
	for _, v := range last {
		n += v
	}
	return n
}

// layoutMismatches returns the instances the collector refused as
// layout_mismatch.
func (g *gwCollector) layoutMismatches(t *testing.T) int64 {
	return telemetrytest.Points(t, g.tel, "otelcol_connector_deltaq_instances_dropped")["reason=layout_mismatch"]
}

// TestGatewayDifferential: seeded spans split at random across agents,
// some announced by start events that go with their spans (some of whose
// spans never come), whose windows reach a gateway in random order and
// with random delays within its lag: the gateway's windows — outcomes, histograms, quantiles,
// QTA verdicts and slack, failure ratios, calculated ΔQs and divergence,
// bands, QoO scores, each series with its services, and triggers — are the
// single collector's that saw every span.
func TestGatewayDifferential(t *testing.T) {
	cases := map[string]gwCase{
		"one agent": {seed: 1, agents: 1, interval: time.Second, lag: 400 * time.Millisecond, gatewayLag: 2 * time.Second, bins: 50},
		"six agents": {seed: 2, agents: 6, interval: time.Second, lag: 500 * time.Millisecond, gatewayLag: 3 * time.Second, bins: 100,
			starts: true},
		"interval 500ms": {seed: 3, agents: 3, interval: 500 * time.Millisecond, lag: 400 * time.Millisecond, gatewayLag: 1500 * time.Millisecond, bins: 20,
			windowsOnly: true, starts: true},
		"interval 2s": {seed: 4, agents: 4, interval: 2 * time.Second, lag: 600 * time.Millisecond, gatewayLag: 3 * time.Second, bins: 10},
		"pay on two agents": {seed: 5, agents: 5, interval: time.Second, lag: 400 * time.Millisecond, gatewayLag: 2 * time.Second, bins: 50,
			payAgents: 2, starts: true},
		"restart and repeats": {seed: 6, agents: 3, interval: time.Second, lag: 400 * time.Millisecond, gatewayLag: 2 * time.Second, bins: 50,
			restart: 2500 * time.Millisecond, repeat: true, windowsOnly: true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res := runGW(t, c, 5)
			res.check(t, true)
			res.checkFates(t, c.repeat)
			if c.starts {
				require.Positive(t, telemetrytest.Points(t, res.single.tel, "otelcol_connector_deltaq_start_timeouts")["probe=a"],
					"instances whose spans never came, or came after their deadline")
			}
		})
	}
	t.Run("agents of other bins", func(t *testing.T) {
		c := gwCase{seed: 7, agents: 4, interval: time.Second, lag: 400 * time.Millisecond, gatewayLag: 2 * time.Second, bins: 50,
			agentBins: func(i int) int { return []int{50, 7, 100, 13}[i] }}
		res := runGW(t, c, 5)
		res.check(t, false)
		res.checkFates(t, false)
	})
	// Agents and the single collector with dmax: auto, the gateway
	// pinning no layout (README, "Scaling out"): each agent chooses its
	// dMax from its own share of the spans, at its own time, so windows
	// and outcomes may differ from the single collector's; but every
	// window is merged, and every instance counted once somewhere — at the
	// gateway, or among the spans straddling a change of dMax that an
	// agent, or the single collector, refused (layout_mismatch).
	t.Run("dmax auto", func(t *testing.T) {
		c := gwCase{seed: 501, agents: 2, interval: time.Second, lag: 400 * time.Millisecond, gatewayLag: 2 * time.Second, bins: 50,
			auto: true}
		res := runGW(t, c, 8)
		res.checkFates(t, false)
		var agentsRefused int64
		for _, a := range res.agents {
			agentsRefused += a.layoutMismatches(t)
		}
		require.Positive(t, agentsRefused, "a span straddling an agent's change of dMax")
		require.Equal(t, gwInstances(res.singleMetrics)+res.single.layoutMismatches(t),
			gwInstances(res.gatewayMetrics)+agentsRefused)
	})
}
