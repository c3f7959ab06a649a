// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// Head sampling of one trace in ten as OpenTelemetry "TraceState:
// Probability Sampling" records it on every span of a kept trace: the
// rejection threshold T = 2⁵⁶·(1 − 1/10) = 0xe6666666666666.66…, whole,
// in 14 hex digits with the trailing zeros removed (there are none). A
// trace is kept when the randomness of its trace id, its last 7 bytes R,
// is at least T ("Decision algorithm"): with probability (2⁵⁶ − T)/2⁵⁶,
// and each of its spans stands for 2⁵⁶/(2⁵⁶ − T) = 10 − 5.6·10⁻¹⁶
// instances, 10 in the readers' float64, a whole adjusted count.
const (
	sampledThreshold  uint64 = 0xe6666666666666
	sampledTraceState        = "ot=th:e6666666666666"
	sampledWeight            = 10
)

// What TestSampledAgentsAtTheGateway sends: sampledPerBatch traces every
// batchEvery (200 a second before sampling), for sampledFor; and the
// level of the divergence test of ../gateway.yaml, whose job sets
// max_divergence alone: that turns the test on at α = 0.01 (the
// connector's README, triggers::max_divergence).
const (
	sampledPerBatch = 20
	sampledFor      = 16 * time.Second
	sampledAlpha    = 0.01
)

// TestSampledAgentsAtTheGateway: two agents (../agent.yaml) and a gateway
// (../gateway.yaml, the diagram job = worker_1 -> worker_2 of
// examples/demo/mm1k.dq), about 200 traces a second for 16 s, each sampled
// one in ten by its trace id, a kept trace's three spans (job, and
// worker_1 then worker_2 within it, each 10 ms + Exp(2 ms), independent)
// carrying the threshold; kept traces go alternately to the two agents.
// The agents count each span ten times and send their windows with the
// weights' Σw and Σw². At the gateway:
//   - every window is accepted (otelcol_connector_deltaq_contributions:
//     one accepted per probe and agent that got its spans in the window,
//     the words of agents idle in a window, nothing else), with both agents
//     as contributors;
//   - each window counts each probe's instances exactly ten times the kept
//     spans that ended in it, all successes;
//   - the divergence test (deltaq.divergence.p_value of job) ran in at
//     least 15 windows and rejected independence (p < α) in at most one:
//     the stages are independent, so its false-alarm rate must be at most
//     α;
//   - in each of those windows it counted at most the kept traces as
//     independent instances: Kish's effective count (Σw)²/Σw² of the
//     merged windows, k for k spans of weight 10, not the 10·k adjusted
//     count. Its statistic is λ = √(n·m/(n+m))·D′, where n is job's
//     effective count, m that of the calculated ΔQ and D′ the distance
//     beyond both ΔQs' bounds, at most the distance D between them
//     (deltaq.divergence); so λ ≤ √k·D. With the adjusted counts taken as
//     instances (each kept trace sent as ten unsampled copies instead), λ/D
//     was 2.5 to 8, above √k in 15 of 17 windows, though no p fell below
//     α: at about 20 kept traces a window the test detects
//     only divergences near 0.9 (deltaq.divergence.detectable), so the
//     false-alarm count alone cannot tell the two apart;
//   - no trigger record at all (the QTAs hold, the stages are independent).
func TestSampledAgentsAtTheGateway(t *testing.T) {
	otelcol := gate(t)
	if th, ok := contract.Threshold(sampledTraceState); !ok || th != sampledThreshold {
		t.Fatalf("%q reads as threshold %#x, %v; want %#x", sampledTraceState, th, ok, sampledThreshold)
	}
	if a, ok := contract.AdjustedCount(sampledTraceState); !ok || a != sampledWeight {
		t.Fatalf("%q reads as adjusted count %v, %v; want exactly %d", sampledTraceState, a, ok, sampledWeight)
	}
	began := time.Now()
	gateway, agents, gwSink := startPair(t, otelcol, false)
	load := newSampledLoad(t, agents)
	load.send(t, sampledFor)
	t.Logf("sent after %v: %d traces, %d kept (%.4f)", time.Since(began).Round(time.Millisecond),
		load.traces, load.kept, float64(load.kept)/float64(load.traces))

	var gw output
	gwSink.Until(t, "the gateway's window ending "+time.Unix(0, load.last).UTC().String(), 20*time.Second, func() bool {
		gw = fold(gwSink.Metrics())
		_, ok := gw.contributors[load.last]
		return ok && complete(gw, load.last)
	})
	load.checkCounts(t, gw)
	load.checkContributions(t, gw, scrapeContributions(t, gateway.telemetry))
	load.checkDivergence(t, gwSink.Metrics())
	checkNoTriggers(t, gwSink)
	for _, c := range append(agents, gateway) {
		c.StopCleanly(t)
	}
	t.Logf("done after %v", time.Since(began).Round(time.Millisecond))
}

// sampledLoad sends the sampled traces and keeps what the gateway must
// count.
type sampledLoad struct {
	rng     *rand.Rand
	clients []ptraceotlp.GRPCClient
	// traces drawn, kept by the sampler.
	traces, kept int
	// want: probe → window end → the adjusted count of its spans that
	// ended in the window; agents: probe → window end → the agents that
	// got some of them; keptIn: window end → the kept traces whose job
	// span ended in it.
	want   map[string]map[int64]int64
	agents map[string]map[int64][]int
	keptIn map[int64]int
	// last is the end of the last window a span was sent in.
	last int64
}

func newSampledLoad(t *testing.T, agents []*collector) *sampledLoad {
	l := &sampledLoad{rng: rand.New(rand.NewPCG(10, 56)), want: map[string]map[int64]int64{},
		agents: map[string]map[int64][]int{}, keptIn: map[int64]int{}}
	for _, a := range agents {
		l.clients = append(l.clients, ptraceotlp.NewGRPCClient(otlptest.Dial(t, a.addr)))
	}
	return l
}

// send sends a batch every batchEvery for d.
func (l *sampledLoad) send(t *testing.T, d time.Duration) {
	t.Helper()
	tick := time.NewTicker(batchEvery)
	defer tick.Stop()
	stop := time.Now().Add(d)
	for now := time.Now(); now.Before(stop); now = <-tick.C {
		l.batch(t, time.Now())
	}
}

// batch draws sampledPerBatch traces whose job spans end 5 ms apart up to
// now, and sends the kept ones, each to the agent whose turn it is.
func (l *sampledLoad) batch(t *testing.T, now time.Time) {
	t.Helper()
	per := make([]ptrace.Traces, len(l.clients))
	for i := range per {
		per[i] = ptrace.NewTraces()
	}
	for i := range sampledPerBatch {
		l.traces++
		var trace pcommon.TraceID
		binary.BigEndian.PutUint64(trace[:8], l.rng.Uint64())
		binary.BigEndian.PutUint64(trace[8:], l.rng.Uint64())
		if binary.BigEndian.Uint64(trace[8:])&(1<<56-1) < sampledThreshold {
			continue // not sampled: its spans never leave the application
		}
		a := l.kept % len(l.clients)
		l.kept++
		l.addTrace(newResourceOnce(per[a]), a, trace, now.Add(-time.Duration(i)*5*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for a, td := range per {
		if td.SpanCount() == 0 {
			continue
		}
		if _, err := l.clients[a].Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
			t.Fatalf("sending spans to agent-%d: %v", a, err)
		}
	}
}

// addTrace appends a kept trace ending at end, for agent a: job from the
// start of worker_1 to the end of worker_2, which follows it.
func (l *sampledLoad) addTrace(spans ptrace.SpanSlice, a int, trace pcommon.TraceID, end time.Time) {
	stage := func() time.Duration { return 10*time.Millisecond + time.Duration(2e6*l.rng.ExpFloat64()) }
	d1, d2 := stage(), stage()
	start := end.Add(-d1 - d2)
	job := l.addSpan(spans, a, trace, pcommon.SpanID{}, "job", start, end)
	l.addSpan(spans, a, trace, job, "worker_1", start, start.Add(d1))
	l.addSpan(spans, a, trace, job, "worker_2", start.Add(d1), end)
	l.keptIn[windowEnd(end)]++
}

// addSpan appends span p of trace from start to end with the sampling
// threshold, counts it for its window and returns its id.
func (l *sampledLoad) addSpan(spans ptrace.SpanSlice, a int, trace pcommon.TraceID, parent pcommon.SpanID, p string, start, end time.Time) pcommon.SpanID {
	sp := spans.AppendEmpty()
	sp.SetName(p)
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetTraceID(trace)
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], l.rng.Uint64()|1)
	sp.SetSpanID(id)
	sp.SetParentSpanID(parent)
	sp.TraceState().FromRaw(sampledTraceState)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	w := windowEnd(end)
	at(l.want, p)[w] += sampledWeight
	if got := at(l.agents, p)[w]; !slices.Contains(got, a) {
		l.agents[p][w] = append(got, a)
	}
	l.last = max(l.last, w)
	return id
}

// windowEnd returns the end (Unix ns) of the window an instance ending at
// end falls in: [k·I, (k+1)·I) on the Unix epoch.
func windowEnd(end time.Time) int64 {
	return (end.UnixNano()/int64(interval) + 1) * int64(interval)
}

// checkCounts checks each probe's outcomes in each window of the gateway
// against the adjusted counts of the spans sent: all successes, ten for
// each kept span.
func (l *sampledLoad) checkCounts(t *testing.T, gw output) {
	t.Helper()
	for _, p := range probes {
		var ends []int64
		for end := range l.want[p] {
			ends = append(ends, end)
		}
		slices.Sort(ends)
		for _, end := range ends {
			got, ok := perWindow(gw.outcomes[p], end, subCounts)
			if !ok {
				t.Errorf("window ending %v, probe %s: no %s from the gateway", time.Unix(0, end).UTC(), p, contract.MetricOutcomes)
				continue
			}
			var total int64
			for _, n := range got {
				total += n
			}
			if want := l.want[p][end]; total != want || got["success"] != want {
				t.Errorf("window ending %v, probe %s: the gateway counts %v, want %d successes (%d kept spans × %d)",
					time.Unix(0, end).UTC(), p, got, want, want/sampledWeight, sampledWeight)
			}
		}
	}
}

// checkContributions checks the gateway's contributors in each window
// and its telemetry's contributions: one accepted per probe and agent
// that got the probe's spans in a window, none refused.
func (l *sampledLoad) checkContributions(t *testing.T, gw output, got map[string]int64) {
	t.Helper()
	var want int64
	for _, p := range probes {
		for _, as := range l.agents[p] {
			want += int64(len(as))
		}
	}
	if got["accepted"] != want {
		t.Errorf("otelcol_connector_deltaq_contributions{fate=accepted} = %d, want %d (one per probe and agent of each window)", got["accepted"], want)
	}
	for fate, n := range got {
		// idle: an agent's word of a window in which it saw no instance.
		if fate != "accepted" && fate != "idle" && n != 0 {
			t.Errorf("otelcol_connector_deltaq_contributions{fate=%s} = %d, want 0", fate, n)
		}
	}
	// An agent contributes to a window when it got any probe's spans in
	// it — a trace whose worker_1 ends before a window's end and whose job
	// ends after it gives its agent worker_1 alone there (it failed the
	// test once, in a first window of one kept job span, when only the
	// agents with job's spans were counted) — and, when it got none, by its
	// word that it was idle: both agents run throughout, and every window
	// of spans has both.
	in := map[int64]bool{}
	for _, p := range probes {
		for end := range l.agents[p] {
			in[end] = true
		}
	}
	for end := range in {
		if c := gw.contributors[end]; c != int64(len(l.clients)) {
			t.Errorf("window ending %v: %d contributors, want %d", time.Unix(0, end).UTC(), c, len(l.clients))
		}
	}
}

// checkDivergence checks job's divergence test at the gateway: run in at
// least 15 of the windows job's spans were sent in, significant at
// sampledAlpha in at most one, and in each with λ ≤ √k·D for the k kept
// traces of the window (TestSampledAgentsAtTheGateway says why).
func (l *sampledLoad) checkDivergence(t *testing.T, mds []pmetric.Metrics) {
	t.Helper()
	ps := jobGauges(mds, contract.MetricDivergenceP)
	lambdas, ds := jobGauges(mds, contract.MetricDivergenceStatistic), jobGauges(mds, contract.MetricDivergence)
	detectable := jobGauges(mds, contract.MetricDivergenceDetectable)
	var ends []int64
	for end := range l.keptIn {
		ends = append(ends, end)
	}
	slices.Sort(ends)
	tested, significant := 0, 0
	var per, overcounted []string
	for _, end := range ends {
		p, ok := ps[end]
		if !ok {
			per = append(per, fmt.Sprintf("%d kept, untested", l.keptIn[end]))
			continue
		}
		tested++
		if p < sampledAlpha {
			significant++
		}
		if k := float64(l.keptIn[end]); lambdas[end] > math.Sqrt(k)*ds[end]*(1+1e-9) {
			overcounted = append(overcounted, fmt.Sprintf("ending %v: λ/D = %.2f > √%g",
				time.Unix(0, end).UTC().Format("15:04:05"), lambdas[end]/ds[end], k))
		}
		per = append(per, fmt.Sprintf("%d kept, D %.3f, λ %.3f, p %.3f, detectable %.2f",
			l.keptIn[end], ds[end], lambdas[end], p, detectable[end]))
	}
	t.Logf("job at the gateway, window by window: %s", strings.Join(per, "; "))
	if tested < 15 {
		t.Errorf("the divergence test ran in %d of %d windows, want at least 15", tested, len(ends))
	}
	if len(overcounted) > 0 {
		t.Errorf("the divergence test counted more independent instances than the kept traces in %d windows: %s",
			len(overcounted), strings.Join(overcounted, "; "))
	}
	if significant > 1 {
		t.Errorf("the divergence test rejected independent stages in %d of %d windows (p < %v), want at most 1", significant, tested, sampledAlpha)
	}
}

// jobGauges returns the points of job's gauge name by window end.
func jobGauges(mds []pmetric.Metrics, name string) map[int64]float64 {
	ps := map[int64]float64{}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			if m.Name() != name {
				continue
			}
			for _, dp := range m.Gauge().DataPoints().All() {
				if str(dp.Attributes(), contract.AttrProbe) == "job" {
					ps[int64(dp.Timestamp())] = dp.DoubleValue()
				}
			}
		}
	}
	return ps
}

// checkNoTriggers checks that the gateway emitted no trigger record.
func checkNoTriggers(t *testing.T, sink *otlptest.Receiver) {
	t.Helper()
	for _, ld := range sink.Logs() {
		for lr := range otlprecv.LogRecords(ld) {
			if lr.EventName() == contract.EventTrigger {
				t.Errorf("trigger record: %s (probe %s, kind %s)", lr.Body().AsString(),
					str(lr.Attributes(), contract.AttrProbe), str(lr.Attributes(), contract.AttrTrigger))
			}
		}
	}
}
