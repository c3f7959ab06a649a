// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// TestGatewayIgnoresForgedWindows: before the agents send anything, a
// forger sends the gateway (../gateway.yaml, whose probes' layouts are
// pinned) the window of job with dMax 1 ms and 1 bin, a window of
// the right layout whose sum is NaN, and windows 100,000 intervals in the
// past and in the future. Then two agents and a control collector get the
// spans, as in TestGatewayMergesAgents: every window of the gateway equals
// the control's exactly (counts, buckets, sums, calculated ΔQ, verdicts),
// with two contributors, and the gateway counts the four forged windows
// as layout_mismatch, invalid, late and early — nothing else refused.
func TestGatewayIgnoresForgedWindows(t *testing.T) {
	otelcol := gate(t)
	diagram := demoDiagram(t)
	began := time.Now()
	gateway, control, agents, gwSink, ctlSink := startWithControl(t, otelcol, diagram, 2)

	// The forger, into the window now open and far away from it.
	k := time.Now().UnixNano() / int64(interval)
	forger := pmetricotlp.NewGRPCClient(otlptest.Dial(t, gateway.addr))
	forge := func(source string, k int64, bounds []float64, counts []uint64, sum float64) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		md := windowMetrics(source, "job", k, bounds, counts, sum)
		if _, err := forger.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md)); err != nil {
			t.Fatalf("sending a forged window: %v", err)
		}
	}
	forge("forger", k, []float64{0.001}, []uint64{5, 0}, 0.0025)
	even := make([]float64, 100)
	for i := range even {
		even[i] = float64(i+1) * 0.002
	}
	forge("forger-2", k, even, append(make([]uint64, 100), 0), math.NaN())
	forge("forger", k-100_000, []float64{0.001}, []uint64{5, 0}, 0.0025)
	forge("forger", k+100_000, []float64{0.001}, []uint64{5, 0}, 0.0025)

	s := newSender(t, control.addr, agents)
	s.send(t, 4*time.Second)
	ws := s.windows()
	gw, ctl := settle(t, gwSink, ctlSink, ws[len(ws)-1].end)
	compare(t, "after the forged windows", gw, ctl, ws)
	got := scrapeContributions(t, gateway.telemetry)
	want := int64(0)
	for _, w := range ws {
		want += int64(len(probes)) * gw.contributors[w.end]
	}
	if got["accepted"] != want {
		t.Errorf("contributions{fate=accepted} = %d, want %d", got["accepted"], want)
	}
	delete(got, "accepted")
	delete(got, "idle") // the agents' words of the windows without spans
	if wantRefused := map[string]int64{"layout_mismatch": 1, "invalid": 1, "late": 1, "early": 1}; fmt.Sprint(got) != fmt.Sprint(wantRefused) {
		t.Errorf("refused contributions %v, want %v", got, wantRefused)
	}
	for _, c := range append(agents, control, gateway) {
		c.StopCleanly(t)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// TestGatewayPlacesBelongToRealAgents: the forged-agents attack of
// "Hostile inputs, third round" through the built collector. Two forged
// agents agree a layout for junk, a probe the gateway's configuration does
// not name (1 ms, 1 bin); then, while two agents and the control get spans,
// 64 forged agents send empty windows of junk into the open window every
// 200 ms, ahead of the agents' windows of it. The gateway (max_agents 64,
// expected_agents 3) merges every agent's window all the same: each of its
// windows equals the control's, with the two agents as its contributors —
// one fewer than expected, which windows_missing_agents counts once the
// gateway stops waiting for its third agent, a minute after its start
// (internal/core TestUnreachedGatewayCountsMissing) — and none is refused
// (no agent_limit, no invalid). Before, every agent's window was refused
// as agent_limit, its instances dropped as invalid, and the windows read
// 64 contributors.
func TestGatewayPlacesBelongToRealAgents(t *testing.T) {
	otelcol := gate(t)
	diagram := demoDiagram(t)
	began := time.Now()
	gateway, control, agents, gwSink, ctlSink := startWithControl(t, otelcol, diagram, 3)

	forger := pmetricotlp.NewGRPCClient(otlptest.Dial(t, gateway.addr))
	forge := func(sources ...string) {
		md := pmetric.NewMetrics()
		k := time.Now().UnixNano() / int64(interval)
		for _, src := range sources {
			windowMetrics(src, "junk", k, []float64{0.001}, []uint64{0, 0}, 0).ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := forger.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md)); err != nil {
			t.Errorf("sending forged windows: %v", err)
		}
	}
	forge("forger-a", "forger-b") // a quorum of two: junk is tracked
	var forged []string
	for i := range 64 {
		forged = append(forged, fmt.Sprintf("forger-%d", i))
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			forge(forged...)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	s := newSender(t, control.addr, agents)
	s.send(t, 4*time.Second)
	ws := s.windows()
	gw, ctl := settle(t, gwSink, ctlSink, ws[len(ws)-1].end)
	close(stop)
	<-done
	compare(t, "beside 64 forged agents", gw, ctl, ws)
	got := scrapeContributions(t, gateway.telemetry)
	if got["agent_limit"] != 0 || got["invalid"] != 0 || got["accepted"] < 64*int64(len(ws)) {
		t.Errorf("contributions %v: want no agent_limit or invalid, and every forged window accepted (at least %d)", got, 64*len(ws))
	}
	if dropped := scrapeSum(t, gateway.telemetry, "otelcol_connector_deltaq_instances_dropped"); dropped != 0 {
		t.Errorf("the gateway dropped %d instances", dropped)
	}
	for _, w := range ws {
		if c := gw.contributors[w.end]; c != 2 {
			t.Errorf("window ending %v: %d contributors, want the two agents, one fewer than expected", w.endTime(), c)
		}
	}
	for _, c := range append(agents, control, gateway) {
		c.StopCleanly(t)
	}
	t.Logf("contributions %v; done after %v", got, time.Since(began).Round(time.Millisecond))
}

// TestGatewayMergesAutoRangedAgents: two agents whose job probe, matched in
// the connector alone as the others are, has dmax: auto
// (testdata/agent_auto.yaml: samples of 100 spans a second, 10 s until the
// first choice), and a gateway that does not pin job's layout
// (testdata/gateway_auto.yaml). job's delays are 5–25 ms for 5 s, then
// 300–900 ms: each agent learns a dMax, then re-ranges, each at its own
// timer tick, so that their windows have several layouts, at times two in
// one window. Their windows carry the instances at the analysis resolution
// as well: the gateway accepts every one of them from the first (no
// layout_mismatch, no unagreed, no layout agreed), shows job in the first
// window's layout throughout (one deltaq.observed stream), and each of its
// windows counts exactly the instances of the agents' windows of the same
// bounds; the last windows have two contributors.
func TestGatewayMergesAutoRangedAgents(t *testing.T) {
	otelcol := gate(t)
	diagram := demoDiagram(t)
	began := time.Now()
	gwSink := otlptest.Start(t, otlptest.Options{})
	agSink := otlptest.Start(t, otlptest.Options{})
	ports := e2etest.NewPorts(t)
	gateway := newCollector(t, ports, otelcol, "gateway", []string{"../gateway.yaml", "testdata/sink.yaml", "testdata/gateway_auto.yaml"},
		"DELTAQ_DIAGRAM="+diagram, "DELTAQ_SINK="+gwSink.Addr())
	var agents []*collector
	for i := range 2 {
		id := fmt.Sprintf("agent-%d", i)
		agents = append(agents, newCollector(t, ports, otelcol, id, []string{"../agent.yaml", "testdata/agent.yaml", "testdata/agent_auto.yaml"},
			"DELTAQ_AGENT_ID="+id, "DELTAQ_GATEWAY="+gateway.addr, "DELTAQ_SINK="+agSink.Addr()))
	}
	startAll(t, append([]*collector{gateway}, agents...)...)
	clients := make([]ptraceotlp.GRPCClient, len(agents))
	for i, a := range agents {
		clients[i] = ptraceotlp.NewGRPCClient(otlptest.Dial(t, a.addr))
	}
	// 20 job spans every 100 ms, alternately to the two agents: 100 a
	// second each, one sample per dmax_period.
	n := 0
	var last int64
	send := func(d time.Duration, lo, hi time.Duration) {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		stop := time.Now().Add(d)
		for now := time.Now(); now.Before(stop); now = <-tick.C {
			now = time.Now()
			per := []ptrace.Traces{ptrace.NewTraces(), ptrace.NewTraces()}
			for j := range 20 {
				delay := lo + time.Duration(n*7919%1000)*(hi-lo)/1000
				addSpan(newResourceOnce(per[j%2]), n, "job", now, delay, false)
				n++
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for i, td := range per {
				if _, err := clients[i].Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
					cancel()
					t.Fatalf("sending spans to agent-%d: %v", i, err)
				}
			}
			cancel()
			last = (now.UnixNano()/int64(interval) + 1) * int64(interval)
		}
	}
	send(5*time.Second, 5*time.Millisecond, 25*time.Millisecond)
	send(7*time.Second, 300*time.Millisecond, 900*time.Millisecond)

	var gw map[int64]jobWindow
	gwSink.Until(t, "the gateway's window ending "+time.Unix(0, last).UTC().String(), 20*time.Second, func() bool {
		gw = gatewayJobWindows(gwSink.Metrics())
		_, ok := gw[last]
		return ok
	})
	var ag map[int64][]jobWindow
	agSink.Until(t, "both agents' window ending "+time.Unix(0, last).UTC().String(), 20*time.Second, func() bool {
		ag = agentJobWindows(agSink.Metrics())
		return len(ag[last]) == 2
	})
	checkMerged(t, gw, ag, last)

	tel := scrapeContributions(t, gateway.telemetry)
	if tel["accepted"] == 0 || tel["layout_mismatch"]+tel["unagreed"]+tel["invalid"]+tel["late"]+tel["early"]+tel["misaligned"] != 0 {
		t.Errorf("contributions %v: want every window accepted", tel)
	}
	if agreed := scrapeSum(t, gateway.telemetry, "otelcol_connector_deltaq_layouts_agreed"); agreed != 0 {
		t.Errorf("layouts agreed %d, want none: nothing to agree", agreed)
	}
	t.Logf("contributions %v", tel)
	for _, c := range append(agents, gateway) {
		c.StopCleanly(t)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// jobWindow is one window of job: its layout (bin width in seconds, bins),
// its successes by bin, timeouts and failures.
type jobWindow struct {
	width     float64
	bins      int
	counts    []uint64
	timeouts  int64
	failures  int64
	agreement bool // the gateway: the first window of its stream
}

func (w jobWindow) total() int64 {
	n := w.timeouts + w.failures
	for _, c := range w.counts {
		n += int64(c)
	}
	return n
}

// checkMerged checks the gateway's job windows against the agents', up to
// the window ending at last: one layout throughout (the first window's),
// and in every window exactly the instances of the agents' windows, the
// last ones from both agents.
func checkMerged(t *testing.T, gw map[int64]jobWindow, ag map[int64][]jobWindow, last int64) {
	t.Helper()
	var ends []int64
	for end := range ag {
		if end <= last {
			ends = append(ends, end)
		}
	}
	slices.Sort(ends)
	var layouts []string
	agentLayouts := map[string]bool{}
	for _, end := range ends {
		for _, a := range ag[end] {
			agentLayouts[fmt.Sprintf("%g s × %d", a.width, a.bins)] = true
		}
		w, ok := gw[end]
		if !ok || w.total() == 0 {
			t.Errorf("window ending %v: the agents sent job's windows, the gateway has none", time.Unix(0, end).UTC())
			continue
		}
		l := fmt.Sprintf("%g s × %d", w.width, w.bins)
		if len(layouts) == 0 || layouts[len(layouts)-1] != l {
			layouts = append(layouts, l)
		}
		var sum int64
		for _, a := range ag[end] {
			sum += a.total()
		}
		if w.total() != sum {
			t.Errorf("window ending %v (%s): the gateway counts %d instances, the agents' windows %d (%v)",
				time.Unix(0, end).UTC(), l, w.total(), sum, ag[end])
		}
	}
	if len(layouts) != 1 {
		t.Errorf("the gateway's job layouts %v: want the first window's alone", layouts)
	}
	// The last windows: both agents.
	for _, end := range ends[len(ends)-2:] {
		if n := len(ag[end]); n != 2 {
			t.Errorf("window ending %v: %d agents' windows, want 2", time.Unix(0, end).UTC(), n)
		}
	}
	// The agents re-ranged: the gateway merged windows of other layouts
	// than its own.
	if len(agentLayouts) < 2 {
		t.Errorf("the agents' job layouts %v: want at least two (a choice of dMax after the learning phase's)", agentLayouts)
	}
	t.Logf("the gateway's job layouts: %v; the agents': %v", layouts, agentLayouts)
}

// gatewayJobWindows returns job's windows from the gateway's output: the
// per-window successes of deltaq.observed (cumulative; a new start time
// restarts the stream, with a new layout) and outcomes of deltaq.outcomes.
func gatewayJobWindows(mds []pmetric.Metrics) map[int64]jobWindow {
	type point struct {
		start  pcommon.Timestamp
		width  float64
		counts []uint64
	}
	obs := map[int64]point{}
	outs := map[int64]map[string]int64{}
	outStart := map[int64]pcommon.Timestamp{}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			switch m.Name() {
			case contract.MetricObserved:
				for _, dp := range m.Histogram().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == "job" {
						b := dp.ExplicitBounds()
						obs[int64(dp.Timestamp())] = point{dp.StartTimestamp(), b.At(0), dp.BucketCounts().AsRaw()[:b.Len()]}
					}
				}
			case contract.MetricOutcomes:
				for _, dp := range m.Sum().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == "job" {
						at(outs, int64(dp.Timestamp()))[str(dp.Attributes(), contract.AttrOutcome)] = dp.IntValue()
						outStart[int64(dp.Timestamp())] = dp.StartTimestamp()
					}
				}
			}
		}
	}
	var ends []int64
	for end := range obs {
		ends = append(ends, end)
	}
	slices.Sort(ends)
	res := map[int64]jobWindow{}
	for i, end := range ends {
		p := obs[end]
		w := jobWindow{width: p.width, bins: len(p.counts), counts: slices.Clone(p.counts),
			timeouts: outs[end]["timeout"], failures: outs[end]["failure"]}
		w.agreement = i == 0 || obs[ends[i-1]].start != p.start
		if !w.agreement {
			for j, c := range obs[ends[i-1]].counts {
				w.counts[j] -= c
			}
		}
		// The outcome totals restart with the layout too (their start).
		if i > 0 && outStart[ends[i-1]] == outStart[end] {
			w.timeouts -= outs[ends[i-1]]["timeout"]
			w.failures -= outs[ends[i-1]]["failure"]
		}
		res[end] = w
	}
	return res
}

// agentJobWindows returns job's deltaq.window points of the agents, by
// window end, the sparse buckets spread over the bins.
func agentJobWindows(mds []pmetric.Metrics) map[int64][]jobWindow {
	res := map[int64][]jobWindow{}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			if m.Name() != contract.MetricWindow {
				continue
			}
			for _, dp := range m.Histogram().DataPoints().All() {
				if str(dp.Attributes(), contract.AttrProbe) != "job" {
					continue
				}
				b := dp.ExplicitBounds()
				width := b.At(0)
				w := jobWindow{width: width, bins: int(math.Round(b.At(b.Len()-1) / width))}
				w.counts = make([]uint64, w.bins)
				for j, bound := range b.All() {
					w.counts[int(math.Round(bound/width))-1] += dp.BucketCounts().At(j)
				}
				if v, ok := dp.Attributes().Get(contract.AttrTimeout); ok {
					w.timeouts = v.Int()
				}
				if v, ok := dp.Attributes().Get(contract.AttrFailure); ok {
					w.failures = v.Int()
				}
				res[int64(dp.Timestamp())] = append(res[int64(dp.Timestamp())], w)
			}
		}
	}
	return res
}

// windowMetrics returns a deltaq.window point of probe for window k of one
// interval, from source, with no timeout or failure.
func windowMetrics(source, probe string, k int64, bounds []float64, counts []uint64, sum float64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.instance.id", source)
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(contract.MetricWindow)
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := h.DataPoints().AppendEmpty()
	dp.SetStartTimestamp(pcommon.Timestamp(k * int64(interval)))
	dp.SetTimestamp(pcommon.Timestamp((k + 1) * int64(interval)))
	dp.Attributes().PutStr(contract.AttrProbe, probe)
	dp.Attributes().PutInt(contract.AttrTimeout, 0)
	dp.Attributes().PutInt(contract.AttrFailure, 0)
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	var n uint64
	for _, c := range counts {
		n += c
	}
	dp.SetCount(n)
	dp.SetSum(sum)
	return md
}

// newResourceOnce returns the spans of td's one resource, made on first
// use.
func newResourceOnce(td ptrace.Traces) ptrace.SpanSlice {
	if td.ResourceSpans().Len() == 0 {
		return newResource(td)
	}
	return td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
}

// gate skips the test unless the end-to-end tests are asked for.
func gate(t *testing.T) string {
	t.Helper()
	return e2etest.Gate(t, gateEnv, "the scaling end-to-end test")
}

// demoDiagram returns the absolute path of the demo's outcome diagram.
func demoDiagram(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "demo", "mm1k.dq"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// scrapeSum returns the sum of the series of a counter from the
// collector's Prometheus telemetry endpoint.
func scrapeSum(t *testing.T, addr, name string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	var sum int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok || !(strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "_total")) {
			continue
		}
		f := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err == nil {
			sum += int64(v)
		}
	}
	return sum
}

// startWithControl starts, ready, a gateway whose expected_agents is
// expected, a control collector that gets every span, and two agents that
// send their windows to the gateway, with the sinks of the gateway's and
// the control's output.
func startWithControl(t *testing.T, otelcol, diagram string, expected int) (gateway, control *collector, agents []*collector, gwSink, ctlSink *otlptest.Receiver) {
	t.Helper()
	gwSink = otlptest.Start(t, otlptest.Options{})
	ctlSink = otlptest.Start(t, otlptest.Options{})
	ports := e2etest.NewPorts(t)
	gateway = newCollector(t, ports, otelcol, "gateway", []string{"../gateway.yaml", "testdata/sink.yaml"},
		"DELTAQ_DIAGRAM="+diagram, "DELTAQ_SINK="+gwSink.Addr(), fmt.Sprintf("DELTAQ_EXPECTED_AGENTS=%d", expected))
	control = newCollector(t, ports, otelcol, "control",
		[]string{"../gateway.yaml", "../agent.yaml", "testdata/sink.yaml", "testdata/control.yaml"},
		"DELTAQ_DIAGRAM="+diagram, "DELTAQ_SINK="+ctlSink.Addr())
	for i := range 2 {
		id := fmt.Sprintf("agent-%d", i)
		agents = append(agents, newCollector(t, ports, otelcol, id, []string{"../agent.yaml", "testdata/agent.yaml"},
			"DELTAQ_AGENT_ID="+id, "DELTAQ_GATEWAY="+gateway.addr))
	}
	startAll(t, append([]*collector{gateway, control}, agents...)...)
	return gateway, control, agents, gwSink, ctlSink
}
