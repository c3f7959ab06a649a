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
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// gateEnv must be set, and OTELCOL name the built collector by its absolute
// path, for the test to run.
const gateEnv = "DELTAQ_SCALING_E2E"

// The probes of ../agent.yaml and the outcome diagram of
// examples/demo/mm1k.dq (job = worker_1 -> worker_2).
var probes = []string{"job", "worker_1", "worker_2"}

// What the test sends: a batch every batchEvery, of perBatch instances,
// each three spans (worker_1, worker_2, job) ending at the batch's time.
const (
	numAgents  = 3
	perBatch   = 6
	batchEvery = 100 * time.Millisecond
	interval   = time.Second
	// killed is the agent the test kills and restarts.
	killed = numAgents - 1
)

// TestGatewayMergesAgents runs three agents (../agent.yaml), a gateway
// (../gateway.yaml) and a control collector that gets every span and runs
// the gateway's analysis itself; the connector output of the gateway and of
// the control goes to receivers in the test. Spans go round-robin to the
// agents (all three spans of an instance to the same agent) and every span
// to the control. In three phases, each followed by a pause until the
// gateway has closed its windows:
//  1. all agents up: every window's outcome counts and successes by bin
//     (per window: the difference of consecutive cumulative points), the
//     calculated ΔQ of job and the QTA verdicts equal the control's exactly,
//     and three agents contributed to each window;
//  2. the last agent is killed (SIGKILL) a second into the phase while
//     spans go on to the other two: the gateway keeps closing windows, with
//     two contributors; the windows the killed agent had not yet sent lack
//     its share, every other window equals the control's;
//  3. the agent is restarted with the same configuration and
//     service.instance.id, and the gateway, not restarted, counts three
//     contributors again, equal to the control.
//
// After each phase the gateway's own telemetry (a Prometheus pull reader)
// counts exactly one accepted contribution per probe and contributing
// agent of the phase's windows, and no late, early, misaligned, invalid or
// mismatched one: the gateway's lag covers the agents' lag and export (the
// agents' words of the idle windows between the phases count as idle).
func TestGatewayMergesAgents(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the scaling end-to-end test")
	diagram, err := filepath.Abs(filepath.Join("..", "..", "demo", "mm1k.dq"))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	gwSink := otlptest.Start(t, otlptest.Options{})
	ctlSink := otlptest.Start(t, otlptest.Options{})

	ports := e2etest.NewPorts(t)
	gateway := newCollector(t, ports, otelcol, "gateway", []string{"../gateway.yaml", "testdata/sink.yaml"},
		"DELTAQ_DIAGRAM="+diagram, "DELTAQ_SINK="+gwSink.Addr())
	control := newCollector(t, ports, otelcol, "control",
		[]string{"../gateway.yaml", "../agent.yaml", "testdata/sink.yaml", "testdata/control.yaml"},
		"DELTAQ_DIAGRAM="+diagram, "DELTAQ_SINK="+ctlSink.Addr())
	agents := make([]*collector, numAgents)
	for i := range agents {
		id := fmt.Sprintf("agent-%d", i)
		agents[i] = newCollector(t, ports, otelcol, id, []string{"../agent.yaml", "testdata/agent.yaml"},
			"DELTAQ_AGENT_ID="+id, "DELTAQ_GATEWAY="+gateway.addr)
	}
	startAll(t, append([]*collector{gateway, control}, agents...)...)
	t.Logf("five collectors up after %v", time.Since(began).Round(time.Millisecond))

	s := newSender(t, control.addr, agents)
	var accepted int64
	check := func(phase string, ws []window) output {
		t.Helper()
		gw, ctl := settle(t, gwSink, ctlSink, ws[len(ws)-1].end)
		compare(t, phase, gw, ctl, ws)
		got := scrapeContributions(t, gateway.telemetry)
		want := accepted
		for _, w := range ws {
			want += int64(len(probes)) * gw.contributors[w.end]
		}
		if got["accepted"] != want {
			t.Errorf("%s: otelcol_connector_deltaq_contributions{fate=accepted} = %d, want %d (one per probe and contributing agent of each window)",
				phase, got["accepted"], want)
		}
		for fate, n := range got {
			// idle: the agents' words of the windows between the phases,
			// in which they saw no instance.
			if fate != "accepted" && fate != "idle" && n != 0 {
				t.Errorf("%s: otelcol_connector_deltaq_contributions{fate=%s} = %d, want 0", phase, fate, n)
			}
		}
		accepted = got["accepted"]
		var per []string
		for _, w := range ws {
			lost := ""
			if w.maybeLost && gw.contributors[w.end] < int64(len(w.agents)) {
				lost = " (partly lost)"
			}
			per = append(per, fmt.Sprintf("%s: agents %v, contributors %d%s", w.endTime().Format("15:04:05"), w.agents, gw.contributors[w.end], lost))
		}
		t.Logf("%s checked after %v: %d failures and %d timeouts sent so far, contributions %v; windows %s",
			phase, time.Since(began).Round(time.Millisecond), s.failures, s.timeouts, got, strings.Join(per, "; "))
		return gw
	}

	// 1. All agents up.
	s.send(t, 3*time.Second)
	check("phase 1 (three agents)", s.windows())

	// 2. An agent dies mid-run; the spans go on to the other two.
	s.send(t, 1200*time.Millisecond)
	s.kill(killed)
	agents[killed].Kill(t)
	s.send(t, 2800*time.Millisecond)
	ws := s.windows()
	gw := check("phase 2 (an agent killed)", ws)
	two := 0
	for _, w := range ws {
		if w.afterKill {
			two++
			if c := gw.contributors[w.end]; c != numAgents-1 {
				t.Errorf("phase 2: window ending %v, after the kill: %d contributors, want %d", w.endTime(), c, numAgents-1)
			}
		}
	}
	if two < 2 {
		t.Errorf("phase 2: %d windows after the kill, want at least 2", two)
	}

	// 3. The agent is back, the gateway was never restarted.
	agents[killed].start(t)
	agents[killed].waitReady(t)
	s.revive(t, killed, agents[killed].addr)
	s.send(t, 3*time.Second)
	ws = s.windows()
	gw = check("phase 3 (the agent restarted)", ws)
	for _, w := range ws {
		if c := gw.contributors[w.end]; c != numAgents {
			t.Errorf("phase 3: window ending %v: %d contributors, want %d", w.endTime(), c, numAgents)
		}
	}

	for _, c := range append(agents, control, gateway) {
		c.StopCleanly(t)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// --- the spans -----------------------------------------------------------------

// window is a window the test sent spans in: its end (Unix ns), the agents
// that got some of them, and whether it began after the kill (then the
// killed agent had no part in it) or might have been open in the killed
// agent when it died (then its share may be lost).
type window struct {
	end       int64
	agents    []int
	afterKill bool
	maybeLost bool
}

func (w window) endTime() time.Time { return time.Unix(0, w.end).UTC() }

// sender sends the spans of each batch to the agents and the control.
type sender struct {
	control ptraceotlp.GRPCClient
	agents  []ptraceotlp.GRPCClient
	live    []bool
	next    int // the next instance's number
	// sent are the windows of the current phase, by end.
	sent     map[int64]*window
	killedAt time.Time
	// timeouts and failures sent, for the log.
	failures, timeouts int
}

func newSender(t *testing.T, control string, agents []*collector) *sender {
	s := &sender{control: ptraceotlp.NewGRPCClient(otlptest.Dial(t, control)), sent: map[int64]*window{}}
	for _, a := range agents {
		s.agents = append(s.agents, ptraceotlp.NewGRPCClient(otlptest.Dial(t, a.addr)))
		s.live = append(s.live, true)
	}
	return s
}

// kill stops sending to agent i, which is killed now.
func (s *sender) kill(i int) {
	s.live[i] = false
	s.killedAt = time.Now()
}

// revive sends to agent i, restarted at addr, again, over a new
// connection.
func (s *sender) revive(t *testing.T, i int, addr string) {
	s.agents[i] = ptraceotlp.NewGRPCClient(otlptest.Dial(t, addr))
	s.live[i] = true
}

// send sends a batch every batchEvery for d.
func (s *sender) send(t *testing.T, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(batchEvery)
	defer tick.Stop()
	stop := time.Now().Add(d)
	for now := time.Now(); now.Before(stop); now = <-tick.C {
		s.batch(t, time.Now())
	}
}

// windows returns the windows of the phase, oldest first, and starts the
// next phase. A window the killed agent got spans of may be lost with it
// unless it had sent it: an agent sends a window one interval (its lag)
// after its end, on a timer that fires once per interval, so at most two
// intervals after; the test allows half an interval more for the export.
func (s *sender) windows() []window {
	var ws []window
	for _, w := range s.sent {
		w.maybeLost = !s.killedAt.IsZero() && slices.Contains(w.agents, killed) &&
			w.end+int64(5*interval/2) > s.killedAt.UnixNano()
		ws = append(ws, *w)
	}
	slices.SortFunc(ws, func(a, b window) int { return int(a.end - b.end) })
	s.sent = map[int64]*window{}
	return ws
}

// batch sends perBatch instances ending at now: instance j of the batch to
// the j-th live agent, round-robin, and all of them to the control. In odd
// windows (k odd, k = ⌊now/1 s⌋) the batch's first instance fails (its
// three spans have status ERROR) and its second times out at worker_2 and
// job (spans longer than their dMax, 100 ms and 200 ms), so that those
// windows break every QTA and even ones meet them; a timeout ends at its
// start + dMax, 50 ms before now, so none is sent in a window's first
// 100 ms, where it would fall into the window before. The other delays
// are fixed by the instance's number.
func (s *sender) batch(t *testing.T, now time.Time) {
	t.Helper()
	k := now.UnixNano() / int64(interval)
	end := (k + 1) * int64(interval)
	w := s.sent[end]
	if w == nil {
		w = &window{end: end}
		if !s.killedAt.IsZero() {
			w.afterKill = k*int64(interval) >= s.killedAt.UnixNano()
		}
		s.sent[end] = w
	}
	var live []int
	for i, ok := range s.live {
		if ok {
			live = append(live, i)
		}
	}
	bad := k%2 == 1
	lateEnough := now.Sub(time.Unix(0, k*int64(interval))) >= 100*time.Millisecond
	perAgent := make([]ptrace.Traces, len(s.agents))
	for a := range perAgent {
		perAgent[a] = ptrace.NewTraces()
		newResource(perAgent[a])
	}
	all := ptrace.NewTraces()
	allSpans := newResource(all)
	for j := range perBatch {
		a := live[j%len(live)]
		if !slices.Contains(w.agents, a) {
			w.agents = append(w.agents, a)
		}
		spans := perAgent[a].ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		n := s.next
		s.next++
		d1 := time.Duration(1+n*7%25) * time.Millisecond
		d2 := time.Duration(1+n*11%30) * time.Millisecond
		job := d1 + d2 + 2*time.Millisecond
		fail := bad && j == 0
		if bad && j == 1 && lateEnough {
			d2, job = 150*time.Millisecond, 250*time.Millisecond
			s.timeouts++
		}
		if fail {
			s.failures++
		}
		for _, sp := range [...]struct {
			probe string
			delay time.Duration
		}{{"worker_1", d1}, {"worker_2", d2}, {"job", job}} {
			addSpan(spans, n, sp.probe, now, sp.delay, fail)
			addSpan(allSpans, n, sp.probe, now, sp.delay, fail)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for a, td := range perAgent {
		if td.SpanCount() == 0 {
			continue
		}
		if _, err := s.agents[a].Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
			t.Fatalf("sending spans to agent-%d: %v", a, err)
		}
	}
	if _, err := s.control.Export(ctx, ptraceotlp.NewExportRequestFromTraces(all)); err != nil {
		t.Fatalf("sending spans to the control: %v", err)
	}
}

// newResource adds the application's resource and scope to td and returns
// the scope's spans.
func newResource(td ptrace.Traces) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "e2e-shop")
	return rs.ScopeSpans().AppendEmpty().Spans()
}

// addSpan appends instance n's span of probe p, ending at end after delay.
func addSpan(spans ptrace.SpanSlice, n int, p string, end time.Time, delay time.Duration, fail bool) {
	sp := spans.AppendEmpty()
	sp.SetName(p)
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetTraceID(pcommon.TraceID{0x5c, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n), 1})
	sp.SetSpanID(pcommon.SpanID{0x5c, byte(n >> 16), byte(n >> 8), byte(n), byte(len(p)), p[len(p)-1]})
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-delay)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	if fail {
		sp.Status().SetCode(ptrace.StatusCodeError)
	}
}

// --- the connector output --------------------------------------------------------

// output is a collector's ΔQ output by window end (Unix ns).
type output struct {
	// outcomes: probe → end → outcome → cumulative count.
	outcomes map[string]map[int64]map[string]int64
	// observed: probe → end → the cumulative successes by bucket, then
	// the sum of their delays.
	observed map[string]map[int64][]uint64
	sums     map[string]map[int64]float64
	// calculated: probe → end → deltaq.le → the calculated CDF.
	calculated map[string]map[int64]map[string]float64
	// violation: probe → end → the QTA verdict.
	violation map[string]map[int64]float64
	// contributors: end → agents.
	contributors map[int64]int64
}

func fold(mds []pmetric.Metrics) output {
	o := output{
		outcomes: map[string]map[int64]map[string]int64{}, observed: map[string]map[int64][]uint64{},
		sums: map[string]map[int64]float64{}, calculated: map[string]map[int64]map[string]float64{},
		violation: map[string]map[int64]float64{}, contributors: map[int64]int64{},
	}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			switch m.Name() {
			case contract.MetricOutcomes:
				for _, dp := range m.Sum().DataPoints().All() {
					p, end := str(dp.Attributes(), contract.AttrProbe), int64(dp.Timestamp())
					at(at(o.outcomes, p), end)[str(dp.Attributes(), contract.AttrOutcome)] = dp.IntValue()
				}
			case contract.MetricObserved:
				for _, dp := range m.Histogram().DataPoints().All() {
					p, end := str(dp.Attributes(), contract.AttrProbe), int64(dp.Timestamp())
					at(o.observed, p)[end] = dp.BucketCounts().AsRaw()
					at(o.sums, p)[end] = dp.Sum()
				}
			case contract.MetricCDF:
				for _, dp := range m.Gauge().DataPoints().All() {
					a := dp.Attributes()
					if str(a, contract.AttrSeries) == contract.SeriesCalculated {
						at(at(o.calculated, str(a, contract.AttrProbe)), int64(dp.Timestamp()))[str(a, contract.AttrLE)] = dp.DoubleValue()
					}
				}
			case contract.MetricQTAViolation:
				for _, dp := range m.Gauge().DataPoints().All() {
					at(o.violation, str(dp.Attributes(), contract.AttrProbe))[int64(dp.Timestamp())] = dp.DoubleValue()
				}
			case contract.MetricContributors:
				for _, dp := range m.Gauge().DataPoints().All() {
					o.contributors[int64(dp.Timestamp())] = dp.IntValue()
				}
			}
		}
	}
	return o
}

// at returns m[k], made on first use.
func at[K, L comparable, V any](m map[K]map[L]V, k K) map[L]V {
	v := m[k]
	if v == nil {
		v = map[L]V{}
		m[k] = v
	}
	return v
}

func str(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok {
		return v.AsString()
	}
	return ""
}

// settle waits until the gateway and the control have emitted the window
// ending at last and returns their output.
func settle(t *testing.T, gwSink, ctlSink *otlptest.Receiver, last int64) (gw, ctl output) {
	t.Helper()
	// The gateway closes a window its lag (3 s) after its end, on a timer
	// that fires once per interval: 5 s at most, besides the output's way.
	gwSink.Until(t, "the gateway's window ending "+time.Unix(0, last).UTC().String(), 20*time.Second, func() bool {
		gw = fold(gwSink.Metrics())
		_, ok := gw.contributors[last]
		return ok && complete(gw, last)
	})
	ctlSink.Until(t, "the control's window ending "+time.Unix(0, last).UTC().String(), 20*time.Second, func() bool {
		ctl = fold(ctlSink.Metrics())
		return complete(ctl, last)
	})
	return gw, ctl
}

// complete says whether o holds the outcomes and successes of every probe
// at end.
func complete(o output, end int64) bool {
	for _, p := range probes {
		if _, ok := o.outcomes[p][end]; !ok {
			return false
		}
		if _, ok := o.observed[p][end]; !ok {
			return false
		}
	}
	return true
}

// perWindow returns the window's share of a cumulative series: its value
// at end less its value at the latest earlier end (nothing before the
// first).
func perWindow[V any](series map[int64]V, end int64, sub func(a, b V) V) (V, bool) {
	v, ok := series[end]
	if !ok {
		return v, false
	}
	prev := int64(math.MinInt64)
	for e := range series {
		if e < end && e > prev {
			prev = e
		}
	}
	if prev == math.MinInt64 {
		return v, true
	}
	return sub(v, series[prev]), true
}

func subCounts(a, b map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range a {
		d[k] = v - b[k]
	}
	return d
}

func subBuckets(a, b []uint64) []uint64 {
	if len(a) != len(b) {
		return a
	}
	d := make([]uint64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

func subFloat(a, b float64) float64 { return a - b }

// compare checks the gateway's windows ws against the control's: equal,
// but for the windows the killed agent may have lost (maybeLost, fewer
// contributors than agents that got spans), which must then hold no more
// than the control's.
func compare(t *testing.T, phase string, gw, ctl output, ws []window) {
	t.Helper()
	verdicts := map[float64]int{}
	for _, w := range ws {
		c := gw.contributors[w.end]
		lost := w.maybeLost && c < int64(len(w.agents))
		if !lost && c != int64(len(w.agents)) {
			t.Errorf("%s: window ending %v: %d contributors, want %d (agents %v)", phase, w.endTime(), c, len(w.agents), w.agents)
		}
		for _, p := range probes {
			where := fmt.Sprintf("%s: window ending %v, probe %s", phase, w.endTime(), p)
			gO, ok1 := perWindow(gw.outcomes[p], w.end, subCounts)
			cO, ok2 := perWindow(ctl.outcomes[p], w.end, subCounts)
			gH, ok3 := perWindow(gw.observed[p], w.end, subBuckets)
			cH, ok4 := perWindow(ctl.observed[p], w.end, subBuckets)
			if !ok1 || !ok2 || !ok3 || !ok4 {
				t.Errorf("%s: missing output (gateway outcomes %v histogram %v, control outcomes %v histogram %v)", where, ok1, ok3, ok2, ok4)
				continue
			}
			if lost {
				for k, n := range gO {
					if n > cO[k] {
						t.Errorf("%s (partly lost): gateway %s %d > control %d", where, k, n, cO[k])
					}
				}
				continue
			}
			if fmt.Sprint(gO) != fmt.Sprint(cO) {
				t.Errorf("%s: %s gateway %v, control %v", where, contract.MetricOutcomes, gO, cO)
			}
			if !slices.Equal(gH, cH) {
				t.Errorf("%s: %s by bucket gateway %v, control %v", where, contract.MetricObserved, gH, cH)
			}
			gS, _ := perWindow(gw.sums[p], w.end, subFloat)
			cS, _ := perWindow(ctl.sums[p], w.end, subFloat)
			if math.Abs(gS-cS) > 1e-9 {
				t.Errorf("%s: sum of delays gateway %.9f s, control %.9f s", where, gS, cS)
			}
			if gc, cc := gw.calculated[p][w.end], ctl.calculated[p][w.end]; fmt.Sprint(gc) != fmt.Sprint(cc) {
				t.Errorf("%s: calculated CDF gateway %v, control %v", where, gc, cc)
			}
			gv, ok1 := gw.violation[p][w.end]
			cv, ok2 := ctl.violation[p][w.end]
			if !ok1 || !ok2 || gv != cv {
				t.Errorf("%s: %s gateway %v (%v), control %v (%v)", where, contract.MetricQTAViolation, gv, ok1, cv, ok2)
			}
			verdicts[gv]++
			if p == "job" && len(ctl.calculated[p][w.end]) == 0 {
				t.Errorf("%s: no calculated ΔQ", where)
			}
		}
	}
	// The verdicts compared must include both: the QTAs are met in even
	// windows and broken in odd ones.
	if verdicts[0] == 0 || verdicts[1] == 0 {
		t.Errorf("%s: QTA verdicts compared %v, want both met (0) and broken (1)", phase, verdicts)
	}
}

// --- the collectors -------------------------------------------------------------

// collector is one of the test's collectors, which the test may start
// again after a kill: the same configuration, environment and ports.
type collector struct {
	*e2etest.Proc
	name      string
	bin       string
	configs   []string
	env       []string
	addr      string // OTLP/gRPC in
	telemetry string // the Prometheus pull reader of its own telemetry
	runs      int
}

// newCollector prepares a collector with the configuration files configs
// (later ones over earlier ones, relative to the test's directory) and the
// environment env, on two loopback ports of its own from the test's ports.
func newCollector(t *testing.T, ports *e2etest.Ports, bin, name string, configs []string, env ...string) *collector {
	a := ports.Addrs(2)
	c := &collector{name: name, bin: bin, configs: configs, addr: a[0], telemetry: a[1]}
	c.env = append([]string{"DELTAQ_OTLP_GRPC=" + c.addr, "DELTAQ_TELEMETRY_PORT=" + e2etest.Port(c.telemetry)}, env...)
	return c
}

// start starts the collector, named after its run from the second on.
func (c *collector) start(t *testing.T) {
	t.Helper()
	c.runs++
	name := c.name
	if c.runs > 1 {
		name = fmt.Sprintf("%s, run %d", c.name, c.runs)
	}
	c.Proc = e2etest.Start(t, name, e2etest.CollectorCmd(c.bin, c.configs, c.env...))
}

// waitReady waits for the collector's OTLP port.
func (c *collector) waitReady(t *testing.T) {
	t.Helper()
	e2etest.WaitListening(t, c.addr, 30*time.Second, c.Proc)
}

// startAll starts the collectors, all before it waits for any, so that
// they come up side by side.
func startAll(t *testing.T, cs ...*collector) {
	t.Helper()
	for _, c := range cs {
		c.start(t)
	}
	for _, c := range cs {
		c.waitReady(t)
	}
}

// scrapeContributions reads otelcol_connector_deltaq_contributions by fate
// from the collector's Prometheus telemetry endpoint.
func scrapeContributions(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping %s: %v", addr, err)
	}
	defer resp.Body.Close()
	const name = "otelcol_connector_deltaq_contributions"
	got := map[string]int64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		rest, ok := strings.CutPrefix(l, name)
		if !ok || !(strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "_total{")) {
			continue
		}
		_, labels, _ := strings.Cut(rest, "{")
		labels, value, _ := strings.Cut(labels, "} ")
		_, fate, ok := strings.Cut(labels, `fate="`)
		if !ok {
			continue
		}
		fate, _, _ = strings.Cut(fate, `"`)
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", addr, l, err)
		}
		got[fate] += int64(v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
