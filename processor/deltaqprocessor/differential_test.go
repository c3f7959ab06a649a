// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// The differential test feeds one seeded stream of spans and start events
// to the two paths that count the same outcome instances: (A) the connector
// alone, which matches the spans itself and takes the start events — its
// observer made as the connector makes it (SpanProbes, its start_events),
// on a clock of the test — and (B) this processor (the harness' clock) in
// front of an observer that reads what it writes. Both run one step at a
// time, and the test compares the outcome counts by series (probe and
// deltaq.service) and window, adjusted for sampling, the observed ΔQ's
// successes by bucket and window, the instances refused by reason (but
// malformed spans, which the processor counts itself), and the late spans,
// real-time timeouts, mismatched instances, evictions, changes of the auto
// probe's dMax and start-event results (the processor's malformed reasons
// and start_after_end mapped onto the connector's results; the stream's
// spans all have their ids, so those reasons count start events alone). The
// documentation gives two differences on purpose. A span of an auto probe
// whose dMax went down, judged a timeout by the processor under the new
// dMax and ended within the old one, is refused by a reader whose window
// still has the old one (undoLoweredTimeout gives it back the outcome the
// connector judges). And a span two probes match is an instance of both in
// the connector and of one in the processor (the start event's probe, else
// the most specific): what the connector counts for the other probe, by the
// span's own duration, is counted by a connector of that probe alone, fed
// those spans, and added to path B before the comparison (without
// deltaq.service, which that connector names by what it saw alone).

// diffProbes are the probes of both paths: checkout's spans are checkout_any's
// too; items has a failure rule of its own; worker matches its name;
// search has log-linear buckets; pay matches attributes; upload chooses its dMax (dmax: auto) from
// its first 100 instances.
var diffProbes = map[string]any{
	"checkout": map[string]any{
		"match": map[string]any{"span_name": "checkout", "service_name": "shop", "span_kind": "server"},
		"dmax":  "100ms", "bins": 100,
	},
	"checkout_any": map[string]any{
		"match": map[string]any{"span_name": "checkout"},
		"dmax":  "200ms", "bins": 100,
	},
	"items": map[string]any{
		"match": map[string]any{"span_name_regexp": "^items/[0-9]+$"},
		"dmax":  "50ms", "bins": 50,
		"failure": map[string]any{"status_error": false, "conditions": []any{map[string]any{"attribute": "http.status_code", "op": ">=", "value": 500}}},
	},
	"worker": map[string]any{"match": map[string]any{}, "dmax": "20ms", "bins": 20},
	"search": map[string]any{"match": map[string]any{},
		"binning": map[string]any{"kind": "log-linear", "factor": 10, "low": "1ms", "high": "100ms", "steps": 10}},
	"pay": map[string]any{"match": map[string]any{"attributes": map[string]any{"rpc.method": "Pay", "rpc.system": "grpc"}},
		"dmax": "40ms", "bins": 40},
	"upload": map[string]any{"match": map[string]any{}, "dmax": "auto", "bins": 50,
		"dmax_min": "1ms", "dmax_max": "500ms", "dmax_sample": 100, "dmax_period": "1s"},
}

const (
	diffStep     = 5 * time.Millisecond
	diffInterval = time.Second
)

// diffSetup is one configuration of both paths: the start-event options,
// and the lag of the windows. Each is run over two seeds: the defaults, a
// grace, a table that evicts, a late window shorter than ended_window, an
// ended_window short enough for stale start events, windows that close
// soon enough for spans and timeouts to come after theirs, and a max_ended
// that forgets spans remembered as ended.
type diffSetup struct {
	starts map[string]any
	lag    time.Duration
	// evicts says that instances, or the spans remembered as ended, are
	// evicted: the probe of a span of two probes cannot be told in advance.
	evicts bool
}

func diffStarts(grace, lateWindow, endedWindow string, maxInFlight int) map[string]any {
	return map[string]any{"timer_resolution": "5ms", "timeout_grace": grace, "late_window": lateWindow,
		"max_ended": 100000, "ended_window": endedWindow, "max_in_flight": maxInFlight}
}

var diffSetups = []diffSetup{
	{starts: diffStarts("0s", "1m", "30s", 100000), lag: 2 * time.Second},
	{starts: withResolution(diffStarts("15ms", "1m", "30s", 100000), "1ms"), lag: 2 * time.Second},
	{starts: withResolution(diffStarts("0s", "1m", "30s", 30), "20ms"), lag: 2 * time.Second, evicts: true},
	{starts: diffStarts("5ms", "100ms", "2s", 100000), lag: 2 * time.Second},
	{starts: withResolution(diffStarts("0s", "300ms", "600ms", 100000), "1s"), lag: 2 * time.Second},
	{starts: diffStarts("10ms", "1m", "30s", 100000), lag: 0},
	{starts: diffStarts("0s", "1m", "30s", 50), lag: 100 * time.Millisecond, evicts: true},
	{starts: withMaxEnded(diffStarts("0s", "200ms", "30s", 100000), 20), lag: 2 * time.Second, evicts: true},
}

// withResolution returns the options starts with timer_resolution r: the
// timer ticks at the test's steps all the same, but the table's wheel has
// buckets of r.
func withResolution(starts map[string]any, r string) map[string]any {
	starts["timer_resolution"] = r
	return starts
}

// withMaxEnded returns the options starts with max_ended n: spans
// remembered as ended are forgotten before ended_window.
func withMaxEnded(starts map[string]any, n int) map[string]any {
	starts["max_ended"] = n
	return starts
}

// diffInstance is one instance of the stream.
type diffInstance struct {
	n        int
	name     string
	service  string
	kind     ptrace.SpanKind
	attrs    map[string]any
	error    bool
	start    time.Time
	dur      time.Duration
	th       uint64 // sampling threshold, 0 for none
	matches  []string
	spanAt   time.Time // zero: the span never comes
	startEv  string    // probe named by the start event, "" for none
	batch    bool      // the start event in the batch form
	startAt  []time.Time
	startBad bool // the start event has a zero start time
	// shift moves the start event's start time (a sender's clock ahead);
	// badTimes gives the span an end before its start.
	shift    time.Duration
	badTimes bool
	// again is when the span is delivered a second time (a retried
	// request); zero: once.
	again time.Time
	// noIDs sends the span without its ids: it ends no instance.
	noIDs bool
	// badBatch sends with each batch start event a batch record of its
	// probe malformed as a whole (31 bytes of starts): counted once.
	badBatch bool
}

func (in *diffInstance) traceID() pcommon.TraceID {
	var t pcommon.TraceID
	binary.BigEndian.PutUint64(t[:8], uint64(in.n)+1)
	t[15] = 0x5a
	return t
}

func (in *diffInstance) spanID() pcommon.SpanID {
	var s pcommon.SpanID
	binary.BigEndian.PutUint64(s[:], uint64(in.n)*0x9e3779b97f4a7c15+1)
	return s
}

func (in *diffInstance) tracestate() string {
	if in.th == 0 {
		return ""
	}
	return contract.ThresholdTraceState(in.th)
}

// diffStream returns the seeded stream's instances.
func diffStream(seed uint64, n int, over time.Duration) []*diffInstance {
	r := rand.New(rand.NewPCG(seed, seed^0xdead))
	ms := func(lo, hi int) time.Duration {
		return time.Duration(lo)*time.Millisecond + time.Duration(r.Int64N(int64(hi-lo)*int64(time.Millisecond)+1))
	}
	thresholds := []uint64{1 << 55, 3 << 54, 0xfd70a3d70a3d70} // adjusted counts 2, 4, about 100
	var out []*diffInstance
	for i := range n {
		in := &diffInstance{n: i, start: base.Add(200*time.Millisecond + time.Duration(r.Int64N(int64(over))))}
		var named []string // the probes a start event may name
		switch k := r.IntN(16); {
		case k == 15:
			// pay matches the attributes: the same name with another
			// method, or without the system, matches nothing.
			in.name, in.service = "rpc", "bank"
			in.attrs = map[string]any{"rpc.method": "Pay", "rpc.system": "grpc"}
			in.matches = []string{"pay"}
			if c := r.IntN(4); c == 0 {
				in.attrs["rpc.method"], in.matches = "Refund", nil
			} else if c == 1 {
				delete(in.attrs, "rpc.system")
				in.matches = nil
			}
			named = []string{"pay"}
			in.dur = ms(1, 60)
		case k >= 10:
			in.name, in.service, in.matches = "upload", "store", []string{"upload"}
			named = in.matches
			in.dur = ms(1, 40)
			if r.IntN(40) == 0 {
				in.dur = ms(60, 600)
			}
		case k < 3:
			in.name, in.service, in.kind = "checkout", "shop", ptrace.SpanKindServer
			in.matches = []string{"checkout", "checkout_any"}
			named = in.matches
			in.dur = ms(1, 260)
		case k < 4:
			in.name, in.service, in.kind = "checkout", "other", ptrace.SpanKindServer
			in.matches = []string{"checkout_any"}
			named = in.matches
			in.dur = ms(1, 260)
		case k < 6:
			in.name, in.service = fmt.Sprintf("items/%d", r.IntN(100)), "store"
			in.matches = []string{"items"}
			named = in.matches
			in.dur = ms(1, 70)
			if r.IntN(5) == 0 {
				in.attrs = map[string]any{"http.status_code": int64(500 + r.IntN(5))}
			}
		case k < 8:
			in.name, in.service, in.matches = "worker", "jobs", []string{"worker"}
			named = in.matches
			if r.IntN(6) == 0 {
				named = []string{"items"} // the application names another probe
			}
			in.dur = ms(1, 30)
		case k < 9 && r.IntN(2) == 0:
			in.name, in.service, in.matches = "search", "store", []string{"search"}
			named = in.matches
			in.dur = ms(1, 130)
		case k < 9:
			in.name, in.service = "noise", "jobs" // no probe matches it
			named = []string{"worker"}
			in.dur = ms(1, 30)
		default:
			in.name, in.service, in.matches = "worker", "jobs", []string{"worker"}
			in.dur = ms(1, 30)
		}
		if in.name == "worker" && r.IntN(8) == 0 {
			in.service = "" // a resource without service.name
		}
		in.error = r.IntN(6) == 0
		if r.IntN(5) == 0 {
			in.th = thresholds[r.IntN(len(thresholds))]
		}
		end := in.start.Add(in.dur)
		// The span: in time, held up past its deadline, or never.
		switch k := r.IntN(20); {
		case k < 15:
			in.spanAt = end.Add(ms(0, 4))
		case k < 19:
			in.spanAt = end.Add(ms(20, 400))
			if dl := in.start.Add(200*time.Millisecond + ms(5, 300)); dl.After(in.spanAt) {
				in.spanAt = dl
			}
		}
		// The start event: none, single or batch; before its span (or
		// after it), sometimes twice.
		if k := r.IntN(10); k >= 3 && len(named) > 0 {
			in.startEv = named[r.IntN(len(named))]
			in.batch = k >= 6
			at := in.start.Add(ms(0, 3))
			if r.IntN(8) == 0 && !in.spanAt.IsZero() {
				at = in.spanAt.Add(ms(0, 50)) // after its span
			}
			in.startAt = append(in.startAt, at)
			if r.IntN(10) == 0 {
				in.startAt = append(in.startAt, at.Add(ms(0, 300))) // delivered again
			}
			in.startBad = r.IntN(40) == 0
			switch r.IntN(40) {
			case 0:
				in.startEv = "nope" // no such probe
			case 1:
				in.startAt[0] = in.startAt[0].Add(ms(700, 1500)) // held up: stale with a short ended_window
			case 2:
				in.shift = time.Hour // future
			}
		}
		in.badTimes = r.IntN(40) == 0
		in.badBatch = in.batch && r.IntN(20) == 0
		in.noIDs = r.IntN(40) == 0
		if !in.spanAt.IsZero() && r.IntN(25) == 0 {
			in.again = in.spanAt.Add(ms(0, 200))
		}
		if in.th != 0 && r.IntN(4) == 0 {
			in.attrs = maps.Clone(in.attrs)
			if in.attrs == nil {
				in.attrs = map[string]any{}
			}
			in.attrs[contract.AttrSamplingPriority] = int64(1) // counts one
		}
		out = append(out, in)
	}
	return out
}

// diffEvent is one delivery of the stream: a span, or a start event.
type diffEvent struct {
	at    time.Time
	in    *diffInstance
	span  bool
	order int
}

// diffPath is one of the two paths: what the test feeds and reads.
type diffPath struct {
	traces func(ptrace.Traces)
	logs   func(plog.Logs)
	// set moves the path's clocks; expire has its timer fire at the time;
	// window has its window timer close the windows due.
	set    func(time.Time)
	expire func(time.Time)
	window func(time.Time)
	sink   *consumertest.MetricsSink
	// counters returns the self-telemetry compared.
	counters func() diffCounters
	stop     func()
}

// diffCounters are the self-telemetry both paths report.
type diffCounters struct {
	late, timeouts, mismatched map[string]int64
	results                    map[string]int64
	// evicted are the instances max_in_flight evicted, by state; ended
	// the spans remembered as ended that max_ended forgot; dmaxChanges
	// the changes of an auto probe's dMax, by probe.
	evicted, ended, dmaxChanges map[string]int64
	dropped                     map[string]int64
	// lateTimeouts are the timeouts counted after the window of their
	// deadline closed, in the oldest open one.
	lateTimeouts map[string]int64
}

func diffConf(t *testing.T, m map[string]any) *confmap.Conf {
	t.Helper()
	return confmap.NewFromStringMap(m)
}

// newConnectorPath is path A: the connector's observer, matching the spans
// itself and taking the start events, as the deltaq connector makes it.
func newConnectorPath(t *testing.T, setup diffSetup, probes map[string]any) *diffPath {
	t.Helper()
	cfg := deltaqconnector.NewFactory().CreateDefaultConfig().(*deltaqconnector.Config)
	conf := map[string]any{"interval": diffInterval.String(), "lag": setup.lag.String(),
		"snapshot": map[string]any{"enabled": false}, "probes": probes}
	if setup.starts != nil {
		conf["start_events"] = setup.starts
	}
	require.NoError(t, cfg.Unmarshal(diffConf(t, conf)))
	require.NoError(t, cfg.Validate())
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	ts := tel.NewTelemetrySettings()
	ins := &core.SpanInstruments{}
	fillInstruments(t, ins, ts.MeterProvider.Meter("diff"))
	cins := &core.Instruments{}
	fillInstruments(t, cins, ts.MeterProvider.Meter("diff"))
	// The timer reads the clock, not the tick: a second tick sent to wait
	// for the first would run the timer again on the clock the test moves
	// next, and count timeouts before the spans due before them. The test
	// waits instead for the in_flight gauge the timer records last.
	expired := make(chan struct{}, 1)
	ins.InFlight = lastRecord{Int64Gauge: ins.InFlight, done: expired}
	clk := coretest.NewClock(base)
	starts := make(chan time.Time)
	sink := new(consumertest.MetricsSink)
	set := core.Settings{
		Kind: "connector", Telemetry: ts, Layouts: new(contract.Layouts), Instruments: cins,
		Now: clk.Now, Ticks: clk.C, Ticked: clk.Ticked, SpanProbes: deltaqconnector.SpanProbes(cfg), SpanInstruments: ins,
	}
	expire := func(at time.Time) { clk.Set(at) }
	if setup.starts != nil {
		set.StartEvents, set.StartTicks = &cfg.StartEvents, starts
		expire = func(at time.Time) { clk.Set(at); starts <- at; <-expired }
	}
	obs, err := core.New(&cfg.Config, set)
	require.NoError(t, err)
	obs.ExpectStartEvents()
	require.NoError(t, obs.Start(core.Outputs{Metrics: sink}))
	byAttr := func(name, key string) map[string]int64 { return telemetrySums(t, tel, name, key) }
	return &diffPath{
		traces: func(td ptrace.Traces) { require.NoError(t, obs.ConsumeTraces(context.Background(), td)) },
		logs:   func(ld plog.Logs) { require.NoError(t, obs.ConsumeLogs(context.Background(), ld)) },
		set:    clk.Set,
		expire: expire,
		window: clk.Tick,
		sink:   sink,
		counters: func() diffCounters {
			return diffCounters{late: byAttr("LateSpans", "probe"), timeouts: byAttr("StartTimeouts", "probe"),
				mismatched: byAttr("StartEventsMismatched", "probe"), results: byAttr("StartEvents", "result"),
				evicted: byAttr("InFlightEvictions", "state"), ended: byAttr("EndedEvictions", ""),
				dmaxChanges: byAttr("DmaxChanges", "probe"), dropped: byAttr("InstancesDropped", "reason"),
				lateTimeouts: byAttr("LateTimeouts", "")}
		},
		stop: func() { require.NoError(t, obs.Shutdown(context.Background())) },
	}
}

// newProcessorPath is path B: this processor in front of an observer that
// reads the instances it marks, in the same collector (its layouts).
// The probe the processor mapped each span of the last request of spans
// to ("" for none) is set in *mapped.
func newProcessorPath(t *testing.T, setup diffSetup, sent func() int64, mapped *[]string) *diffPath {
	t.Helper()
	pcfg := createDefaultConfig().(*Config)
	popts := maps.Clone(setup.starts)
	popts["probes"] = diffProbes
	require.NoError(t, pcfg.Unmarshal(diffConf(t, popts)))
	st := collectorstate.New()
	var obs *core.Observer
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		var probes []string
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, s := range ss.Spans().All() {
					if _, synthetic := s.Attributes().Get(contract.AttrSynthetic); synthetic {
						return obs.ConsumeTraces(ctx, td) // the timer's
					}
					p, _ := s.Attributes().Get(contract.AttrProbe)
					probes = append(probes, p.Str())
					undoLoweredTimeout(s)
				}
			}
		}
		*mapped = probes
		return obs.ConsumeTraces(ctx, td)
	})
	require.NoError(t, err)
	h := newHarnessIn(t, st, pcfg, next)
	ccfg := core.NewDefaultConfig()
	ccfg.Interval, ccfg.Lag, ccfg.Snapshot.Enabled = diffInterval, setup.lag, false
	clk := coretest.NewClock(base)
	sink := new(consumertest.MetricsSink)
	rtel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, rtel.Shutdown(context.Background())) })
	rts := rtel.NewTelemetrySettings()
	cins := &core.Instruments{}
	fillInstruments(t, cins, rts.MeterProvider.Meter("diff"))
	obs, err = core.New(&ccfg, core.Settings{Kind: "connector", Telemetry: rts, Instruments: cins, Layouts: st.Layouts, Now: clk.Now, Ticks: clk.C, Ticked: clk.Ticked})
	require.NoError(t, err)
	require.NoError(t, obs.Start(core.Outputs{Metrics: sink}))
	byAttr := func(name, key string) map[string]int64 {
		return telemetrySums(t, h.tel, "otelcol_processor_deltaq_"+name, key)
	}
	return &diffPath{
		traces: h.consumeTraces,
		logs:   h.consumeLogs,
		set:    func(at time.Time) { clk.Set(at); h.clock.set(at) },
		expire: h.clock.tick,
		window: clk.Tick,
		sink:   sink,
		counters: func() diffCounters {
			malformed := byAttr("malformed", "reason")
			results := map[string]int64{
				"after_end":     sum(byAttr("start_after_end", "probe")),
				"duplicate":     malformed[reasonValues[reasonDuplicateStart]],
				"unknown_probe": malformed[reasonValues[reasonUnknownProbe]],
				"invalid": malformed[reasonValues[reasonMissingIDs]] + malformed[reasonValues[reasonInvalidTimestamp]] +
					malformed[reasonValues[reasonMalformedBatch]],
				"stale":  malformed[reasonValues[reasonStaleStart]],
				"future": malformed[reasonValues[reasonFutureStart]],
			}
			results["tracked"] = sent() - sum(results)
			for k, v := range results {
				if v == 0 {
					delete(results, k)
				}
			}
			return diffCounters{late: byAttr("late_spans", "probe"), timeouts: byAttr("start_timeouts", "probe"),
				mismatched: byAttr("start_events_mismatched", "probe"), results: results,
				evicted: byAttr("evictions", "state"), ended: byAttr("ended_evictions", ""),
				dmaxChanges: byAttr("dmax_changes", "probe"), dropped: telemetrySums(t, rtel, "InstancesDropped", "reason"),
				lateTimeouts: telemetrySums(t, rtel, "LateTimeouts", "")}
		},
		stop: func() { require.NoError(t, obs.Shutdown(context.Background())) },
	}
}

// undoLoweredTimeout writes, on a span of the auto probe that the
// processor judged a timeout by a dMax shorter than its learning dMax
// (500 ms) and that ended within that one, the outcome the connector
// gives it by its own status: under 500 ms it is a success or a failure,
// which a timeout does not tell, so that a reader whose window still has
// the 500 ms layout refuses it (layout_mismatch) where the connector alone
// counts it: the documented difference of a dMax that went down (the
// processor's README, "Auto-ranging"). Under the shorter dMax the reader
// judges it a timeout again, by its own duration.
func undoLoweredTimeout(s ptrace.Span) {
	const learning = int64(500 * time.Millisecond)
	attrs := s.Attributes()
	probe, _ := attrs.Get(contract.AttrProbe)
	oc, _ := attrs.Get(contract.AttrOutcome)
	dmax, _ := attrs.Get(contract.AttrDMaxNs)
	if _, late := attrs.Get(contract.AttrLate); late || probe.Str() != "upload" || oc.Str() != "timeout" ||
		dmax.Int() >= learning || int64(s.EndTimestamp()-s.StartTimestamp()) > learning {
		return
	}
	attrs.Remove(contract.AttrOutcome)
	if s.Status().Code() == ptrace.StatusCodeError {
		attrs.PutStr(contract.AttrOutcome, "failure")
	}
}

// lastRecord is a gauge that says when the timeout timer has recorded its
// last measurement of a tick: the instances timed out.
type lastRecord struct {
	metric.Int64Gauge
	done chan struct{}
}

func (g lastRecord) Record(ctx context.Context, v int64, opts ...metric.RecordOption) {
	g.Int64Gauge.Record(ctx, v, opts...)
	attrs := metric.NewRecordConfig(opts).Attributes()
	if state, ok := attrs.Value("state"); ok && state.AsString() == "timed_out" {
		// done holds one: a measurement nobody waits for (Shutdown's, of
		// the timeouts due at the stop) must not hold up its caller.
		select {
		case g.done <- struct{}{}:
		default:
		}
	}
}

// fillInstruments sets every instrument field of the struct ins points to
// from meter, named as the field.
func fillInstruments(t *testing.T, ins any, meter metric.Meter) {
	t.Helper()
	v := reflect.ValueOf(ins).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		var inst any
		var err error
		switch v.Field(i).Type() {
		case reflect.TypeFor[metric.Int64Counter]():
			inst, err = meter.Int64Counter(name)
		case reflect.TypeFor[metric.Int64Gauge]():
			inst, err = meter.Int64Gauge(name)
		case reflect.TypeFor[metric.Float64Gauge]():
			inst, err = meter.Float64Gauge(name)
		case reflect.TypeFor[metric.Float64Histogram]():
			inst, err = meter.Float64Histogram(name)
		default:
			t.Fatalf("instrument %s of type %v", name, v.Field(i).Type())
		}
		require.NoError(t, err)
		v.Field(i).Set(reflect.ValueOf(inst))
	}
}

// telemetrySums returns the sums of an int64 counter by attribute key;
// empty when the counter recorded nothing. Zero sums are left out.
func telemetrySums(t *testing.T, tel *componenttest.Telemetry, name, key string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tel.GetMetric(name)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(attribute.Key(key))
		if dp.Value != 0 {
			out[v.AsString()] += dp.Value
		}
	}
	return out
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// windowCounts returns, by series (the probe and its deltaq.service),
// window end and outcome, the instances counted in each window: the
// differences of the cumulative deltaq.outcomes series, each from its
// start (a probe whose dMax changes starts its series anew). Zero counts
// are left out.
func windowCounts(mds []pmetric.Metrics) map[string]map[time.Time]map[string]int64 {
	type key struct {
		probe, outcome string
		start          time.Time
	}
	cum := map[key]map[time.Time]int64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() != contract.MetricOutcomes {
						continue
					}
					for _, dp := range m.Sum().DataPoints().All() {
						p, _ := dp.Attributes().Get(contract.AttrProbe)
						oc, _ := dp.Attributes().Get(contract.AttrOutcome)
						svc, _ := dp.Attributes().Get(contract.AttrService)
						k := key{p.Str() + " {" + svc.Str() + "}", oc.Str(), dp.StartTimestamp().AsTime().UTC()}
						if cum[k] == nil {
							cum[k] = map[time.Time]int64{}
						}
						cum[k][dp.Timestamp().AsTime().UTC()] += dp.IntValue()
					}
				}
			}
		}
	}
	out := map[string]map[time.Time]map[string]int64{}
	for k, series := range cum {
		var last int64
		for _, at := range slices.SortedFunc(maps.Keys(series), func(a, b time.Time) int { return a.Compare(b) }) {
			if d := series[at] - last; d != 0 {
				addCount(out, k.probe, at, k.outcome, d)
			}
			last = series[at]
		}
	}
	return out
}

func addCount(m map[string]map[time.Time]map[string]int64, probe string, at time.Time, outcome string, n int64) {
	if m[probe] == nil {
		m[probe] = map[time.Time]map[string]int64{}
	}
	if m[probe][at] == nil {
		m[probe][at] = map[string]int64{}
	}
	m[probe][at][outcome] += n
	if m[probe][at][outcome] == 0 {
		delete(m[probe][at], outcome)
		if len(m[probe][at]) == 0 {
			delete(m[probe], at)
		}
	}
}

// windowObserved returns, by "series window bucket", the successes each
// window added to each bucket of deltaq.observed (the bucket named by its
// upper bound): the differences of the cumulative histograms, each from its
// start. Zero counts are left out.
func windowObserved(mds []pmetric.Metrics, series func(string) string) map[string]int64 {
	type key struct {
		series, bucket string
		start          time.Time
	}
	cum := map[key]map[time.Time]uint64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					if m.Name() != contract.MetricObserved {
						continue
					}
					for _, dp := range m.Histogram().DataPoints().All() {
						p, _ := dp.Attributes().Get(contract.AttrProbe)
						svc, _ := dp.Attributes().Get(contract.AttrService)
						name := series(p.Str() + " {" + svc.Str() + "}")
						for i, n := range dp.BucketCounts().All() {
							bound := "+Inf"
							if i < dp.ExplicitBounds().Len() {
								bound = fmt.Sprint(dp.ExplicitBounds().At(i))
							}
							k := key{name, bound, dp.StartTimestamp().AsTime().UTC()}
							if cum[k] == nil {
								cum[k] = map[time.Time]uint64{}
							}
							cum[k][dp.Timestamp().AsTime().UTC()] += n
						}
					}
				}
			}
		}
	}
	out := map[string]int64{}
	for k, series := range cum {
		var last uint64
		for _, at := range slices.SortedFunc(maps.Keys(series), func(a, b time.Time) int { return a.Compare(b) }) {
			if d := int64(series[at] - last); d != 0 {
				out[fmt.Sprintf("%s %v le=%s", k.series, at.Sub(base), k.bucket)] += d
			}
			last = series[at]
		}
	}
	return out
}

// flatCounts returns the counts of m by "series window outcome", the
// window as seconds after base: a difference reads as one line.
func flatCounts(m map[string]map[time.Time]map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for series, windows := range m {
		for at, ocs := range windows {
			for oc, n := range ocs {
				out[fmt.Sprintf("%s %v %s", series, at.Sub(base), oc)] = n
			}
		}
	}
	return out
}

// diffSpans builds a request of the spans of ins.
func diffSpans(ins ...*diffInstance) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, in := range ins {
		appendSpan(td, in)
	}
	return td
}

// appendSpan appends the span of in to td, in a resource of its own.
func appendSpan(td ptrace.Traces, in *diffInstance) {
	rs := td.ResourceSpans().AppendEmpty()
	if in.service != "" {
		rs.Resource().Attributes().PutStr("service.name", in.service)
	}
	s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetName(in.name)
	s.SetKind(in.kind)
	if !in.noIDs {
		s.SetTraceID(in.traceID())
		s.SetSpanID(in.spanID())
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(in.start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(in.start.Add(in.dur)))
	if in.badTimes {
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(in.start.Add(-time.Millisecond)))
	}
	if in.error {
		s.Status().SetCode(ptrace.StatusCodeError)
	}
	if in.attrs != nil {
		_ = s.Attributes().FromRaw(in.attrs)
	}
	s.TraceState().FromRaw(in.tracestate())
}

// diffStartLogs builds the start events delivered at one time, a resource
// by service: each single one a record, the batch ones a record by probe.
func diffStartLogs(ins []*diffInstance) plog.Logs {
	ld := plog.NewLogs()
	byService := map[string][]*diffInstance{}
	var services []string
	for _, in := range ins {
		if byService[in.service] == nil {
			services = append(services, in.service)
		}
		byService[in.service] = append(byService[in.service], in)
	}
	for _, service := range services {
		rl := ld.ResourceLogs().AppendEmpty()
		if service != "" {
			rl.Resource().Attributes().PutStr("service.name", service)
		}
		appendStartRecords(rl.ScopeLogs().AppendEmpty().LogRecords(), byService[service])
	}
	return ld
}

// appendStartRecords appends the start events of ins to lrs.
func appendStartRecords(lrs plog.LogRecordSlice, ins []*diffInstance) {
	batches := map[string][]*diffInstance{}
	var order []string
	for _, in := range ins {
		if in.batch {
			if batches[in.startEv] == nil {
				order = append(order, in.startEv)
			}
			batches[in.startEv] = append(batches[in.startEv], in)
			continue
		}
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTraceID(in.traceID())
		lr.SetSpanID(in.spanID())
		if !in.startBad {
			lr.SetTimestamp(pcommon.NewTimestampFromTime(in.start.Add(in.shift)))
		}
		lr.Attributes().PutStr(contract.AttrProbe, in.startEv)
		if ts := in.tracestate(); ts != "" {
			lr.Attributes().PutStr(contract.AttrTraceState, ts)
		}
	}
	for _, in := range ins {
		if in.badBatch {
			lr := lrs.AppendEmpty()
			lr.SetEventName(contract.StartsEventName)
			lr.Attributes().PutStr(contract.AttrProbe, in.startEv)
			lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(make([]byte, 31))
		}
	}
	for _, probe := range order {
		var entries, th []byte
		for _, in := range batches[probe] {
			start := uint64(in.start.Add(in.shift).UnixNano())
			if in.startBad {
				start = 0
			}
			entries = contract.AppendStart(entries, in.traceID(), in.spanID(), start)
			th = binary.LittleEndian.AppendUint64(th, in.th)
		}
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartsEventName)
		lr.Attributes().PutStr(contract.AttrProbe, probe)
		lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries)
		lr.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(th)
	}
}

// diffRun feeds the stream to the paths fed, step by step, and each span
// that two probes match to the path of extra of each probe the processor
// did not map it to (mapped, which path B sets as the spans go through).
// It returns the probe the processor mapped each span to when it came
// first. lag is the windows' lag.
func diffRun(stream []*diffInstance, fed []*diffPath, extra map[string]*diffPath, mapped *[]string, lag time.Duration) map[pcommon.SpanID]string {
	chosen := map[pcommon.SpanID]string{}
	var evs []diffEvent
	for _, in := range stream {
		if !in.spanAt.IsZero() {
			evs = append(evs, diffEvent{at: in.spanAt, in: in, span: true, order: len(evs)})
		}
		if !in.again.IsZero() {
			evs = append(evs, diffEvent{at: in.again, in: in, span: true, order: len(evs)})
		}
		for _, at := range in.startAt {
			evs = append(evs, diffEvent{at: at, in: in, order: len(evs)})
		}
	}
	slices.SortFunc(evs, func(a, b diffEvent) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.order - b.order
	})
	all := slices.Clone(fed)
	for _, name := range slices.Sorted(maps.Keys(extra)) {
		all = append(all, extra[name])
	}
	copyOf := func(td ptrace.Traces) ptrace.Traces {
		c := ptrace.NewTraces()
		td.CopyTo(c)
		return c
	}
	last := evs[len(evs)-1].at.Add(time.Second)
	next := 0
	for now := base.Add(diffStep); !now.After(last); now = now.Add(diffStep) {
		for next < len(evs) && !evs[next].at.After(now) {
			// The spans of a step that follow one another go as one
			// request, and so do the start events due together.
			e := evs[next]
			if e.span {
				var group []*diffInstance
				for next < len(evs) && evs[next].span && !evs[next].at.After(now) {
					group = append(group, evs[next].in)
					e = evs[next]
					next++
				}
				for _, p := range all {
					p.set(e.at)
				}
				td := diffSpans(group...)
				for _, p := range fed {
					p.traces(copyOf(td))
				}
				others := map[string][]*diffInstance{}
				for i, in := range group {
					c := (*mapped)[i]
					if _, ok := chosen[in.spanID()]; !ok {
						chosen[in.spanID()] = c
					}
					if c == "" || len(in.matches) < 2 {
						continue
					}
					for _, m := range in.matches {
						if m != c {
							others[m] = append(others[m], in)
						}
					}
				}
				for m, ins := range others {
					extra[m].traces(diffSpans(ins...))
				}
				continue
			}
			for _, p := range all {
				p.set(e.at)
			}
			var group []*diffInstance
			for next < len(evs) && !evs[next].span && evs[next].at.Equal(e.at) {
				group = append(group, evs[next].in)
				next++
			}
			for _, p := range fed {
				p.logs(diffStartLogs(group))
			}
		}
		for _, p := range all {
			p.expire(now)
		}
		// The window timers tick at every step: the connector's auto
		// probe chooses its dMax at its window timer's tick, the
		// processor's at its timeout timer's, and both must choose from
		// the same instances at the same time.
		for _, p := range all {
			p.window(now)
		}
	}
	for _, p := range all {
		p.window(last.Add(lag + 2*diffInterval))
		p.stop()
	}
	return chosen
}

// processorChoice is the probe the processor maps a span that two probes
// match to: the probe its start event named, when that start event was
// tracked when the span came, else the most specific (checkout).
func processorChoice(in *diffInstance) string {
	if in.startEv != "" && !in.startBad && !in.noIDs && in.shift == 0 && len(in.startAt) > 0 && slices.MinFunc(in.startAt, time.Time.Compare).Before(in.spanAt) &&
		slices.Contains(in.matches, in.startEv) {
		return in.startEv
	}
	return in.matches[0]
}

// TestProcessorAndConnectorCountAlike is the differential test: for each
// setup and two seeds, path B (processor → reader) counts what path A (the
// connector alone) counts, but for the documented difference of the spans
// two probes match, whose counts for the probe the processor did not map
// them to are added to B's from a connector of that probe alone.
func TestProcessorAndConnectorCountAlike(t *testing.T) {
	changed := 0
	for i, setup := range diffSetups {
		for _, seed := range []uint64{uint64(2*i + 1), uint64(2*i + 2)} {
			t.Run(fmt.Sprint("setup=", i, "/seed=", seed), func(t *testing.T) {
				changed += diffCompare(t, setup, diffStream(seed, 700, 3*time.Second))
			})
		}
	}
	// The auto probe chooses a dMax of its own in most runs; in the others
	// the real-time timeouts of its sample (censored, beyond every delay)
	// keep it at its learning dMax.
	assert.GreaterOrEqual(t, changed, len(diffSetups), "runs in which the auto probe changed its dMax")
}

// diffCompare runs stream through both paths with setup and compares what
// they count. It returns the number of changes of the auto probe's dMax.
func diffCompare(t *testing.T, setup diffSetup, stream []*diffInstance) int {
	t.Helper()
	var sent int64
	for _, in := range stream {
		if in.startEv != "" {
			sent += int64(len(in.startAt))
		}
		if in.badBatch {
			sent += int64(len(in.startAt))
		}
	}
	var mapped []string
	a := newConnectorPath(t, setup, diffProbes)
	b := newProcessorPath(t, setup, func() int64 { return sent }, &mapped)
	// What the connector counts of a span of two probes for the probe the
	// processor did not map it to: the span by its own duration, in a
	// connector of that probe alone.
	extra := map[string]*diffPath{}
	for _, name := range []string{"checkout", "checkout_any"} {
		extra[name] = newConnectorPath(t, diffSetup{lag: setup.lag}, map[string]any{name: diffProbes[name]})
	}
	chosen := diffRun(stream, []*diffPath{a, b}, extra, &mapped, setup.lag)

	for _, in := range stream {
		if len(in.matches) < 2 || in.spanAt.IsZero() || in.badTimes {
			continue
		}
		got, ok := chosen[in.spanID()]
		require.True(t, ok, "span %d mapped", in.n)
		require.Contains(t, in.matches, got, "span %d", in.n)
		if !setup.evicts {
			assert.Equal(t, processorChoice(in), got, "span %d: the start event's probe, else the most specific", in.n)
		}
	}
	// The probes of the spans of two probes are compared without their
	// deltaq.service, which the connectors of one probe name by what they
	// saw alone.
	byProbe := func(series string) string {
		if name, _, _ := strings.Cut(series, " "); extra[name] != nil {
			return name
		}
		return series
	}
	ca, cb := map[string]map[time.Time]map[string]int64{}, map[string]map[time.Time]map[string]int64{}
	for _, w := range []struct {
		into map[string]map[time.Time]map[string]int64
		from []pmetric.Metrics
	}{{ca, a.sink.AllMetrics()}, {cb, b.sink.AllMetrics()}, {cb, extra["checkout"].sink.AllMetrics()}, {cb, extra["checkout_any"].sink.AllMetrics()}} {
		for series, windows := range windowCounts(w.from) {
			for at, ocs := range windows {
				for oc, n := range ocs {
					addCount(w.into, byProbe(series), at, oc, n)
				}
			}
		}
	}
	assert.Equal(t, flatCounts(ca), flatCounts(cb), "outcomes by series and window (A: connector, B: processor + the spans of two probes)")
	oa, ob := windowObserved(a.sink.AllMetrics(), byProbe), windowObserved(b.sink.AllMetrics(), byProbe)
	for _, name := range []string{"checkout", "checkout_any"} {
		for k, n := range windowObserved(extra[name].sink.AllMetrics(), byProbe) {
			ob[k] += n
		}
	}
	assert.Equal(t, oa, ob, "observed ΔQ: successes by series, window and bucket")
	assert.NotEmpty(t, oa)
	ka, kb := a.counters(), b.counters()
	assert.Equal(t, ka.late, kb.late, "late spans")
	assert.Equal(t, ka.timeouts, kb.timeouts, "real-time timeouts")
	assert.Equal(t, ka.mismatched, kb.mismatched, "mismatched start events")
	assert.Equal(t, ka.results, kb.results, "start events by result")
	assert.Equal(t, ka.evicted, kb.evicted, "instances evicted by max_in_flight, by state")
	assert.Equal(t, ka.ended, kb.ended, "spans remembered as ended forgotten by max_ended")
	assert.Equal(t, ka.dmaxChanges, kb.dmaxChanges, "changes of an auto probe's dMax")
	// The instances refused, but for the malformed spans, which the
	// processor counts itself (malformed) and does not send on; and with
	// the refusals of the connectors of the spans of two probes.
	droppedB := maps.Clone(kb.dropped)
	for _, x := range extra {
		for reason, n := range x.counters().dropped {
			droppedB[reason] += n
		}
	}
	delete(droppedB, "malformed")
	droppedA := maps.Clone(ka.dropped)
	delete(droppedA, "malformed")
	assert.Equal(t, droppedA, droppedB, "instances refused, by reason")
	lateB := maps.Clone(kb.lateTimeouts)
	for _, x := range extra {
		for k, n := range x.counters().lateTimeouts {
			lateB[k] += n
		}
	}
	assert.Equal(t, ka.lateTimeouts, lateB, "timeouts counted after their window closed")
	assert.NotEmpty(t, ka.late)
	assert.NotEmpty(t, ka.timeouts)
	if setup.evicts {
		assert.NotZero(t, sum(ka.evicted)+sum(ka.ended), "instances or remembered spans evicted")
	}
	return int(sum(ka.dmaxChanges))
}
