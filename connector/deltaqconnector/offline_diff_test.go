// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/offline"
	"github.com/deltaq-otel/deltaq/internal/report"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// diffConfig is a connector-only collector configuration: probes matched in
// the spans by name, by a regular expression and with failure rules, a
// diagram whose outcome is also matched (divergence), QTAs with triggers,
// and a QoO requirement.
const diffConfig = `
connectors:
  deltaq:
    interval: 1s
    lag: 400ms
    quantiles: [0.5, 0.9]
    diagram: |
      e2e = a -> b;
    probes:
      a:
        match: {}
        dmax: 50ms
        bins: 50
        failure: {status_error: true}
        qta: {points: [{delay: 12ms, p: 0.5}], max_failure: 0.1}
        triggers: {qta: true, failure: true}
      b: {match: {}, dmax: 50ms, bins: 50, failure: {status_error: true}}
      e2e:
        match: {span_name: e2e, service_name: shop}
        dmax: 100ms
        bins: 100
        qta: {points: [{delay: 30ms, p: 0.5}], max_failure: 0.2}
        qoo:
          rop: {points: [{p: 0.5, delay: 20ms}], max_failure: 0.1}
          cpup: {points: [{p: 0.5, delay: 60ms}], max_failure: 0.5}
      pay:
        match: {span_name_regexp: "^pay "}
        dmax: 1s
        bins: 100
        failure: {conditions: [{attribute: http.response.status_code, op: ">=", value: 500}]}
`

// diffSpan is a generated span and when it reaches the collector.
type diffSpan struct {
	name, service string
	start, end    time.Time
	arrive        time.Time
	errored       bool
	status        int64
	traceState    string
	marked        string // deltaq.probe, with a layout of 20 ms in 20 bins
	noStart       bool
	traceID       [16]byte
	spanID        [8]byte
	kind          ptrace.SpanKind
	attrs         [][2]string // string attributes, name and value
}

// diffSpans returns the seeded spans of n seconds from coretest.T0: a, b,
// e2e (a then b), pay spans, spans of no probe, marked and malformed spans; delays up to beyond dMax
// (timeouts), failures by status and by attribute, a fifth sampled with
// thresholds of adjusted counts 2 and 4, each arriving up to 350 ms after
// its end (within the lag), in arrival order.
func diffSpans(r *rand.Rand, n int) []diffSpan {
	var out []diffSpan
	id := uint64(0)
	add := func(s diffSpan) {
		id++
		s.traceID[0], s.traceID[8] = byte(id), byte(id>>8)
		s.traceID[15] = 1
		s.spanID[0], s.spanID[1], s.spanID[7] = byte(id), byte(id>>8), byte(r.Uint32())
		s.arrive = s.end.Add(time.Duration(r.Int64N(int64(350 * time.Millisecond))))
		switch r.IntN(10) {
		case 0:
			s.traceState = "ot=th:8" // adjusted count 2
		case 1:
			s.traceState = "ot=th:c" // adjusted count 4
		}
		out = append(out, s)
	}
	delay := func(max time.Duration) time.Duration {
		return time.Duration(r.ExpFloat64() * float64(max) / 4)
	}
	for i := range n * 60 {
		start := coretest.At(time.Duration(i)*time.Second/60 + time.Duration(r.Int64N(int64(time.Millisecond))))
		da, db := delay(50*time.Millisecond), delay(50*time.Millisecond)
		// Window 3 goes bad: a's delays and failures break its QTA.
		bad := i/60 == 3
		if bad {
			da *= 4
		}
		add(diffSpan{name: "a", service: "shop", start: start, end: start.Add(da), errored: r.IntN(20) == 0 || bad && r.IntN(3) == 0})
		add(diffSpan{name: "b", service: "shop", start: start.Add(da), end: start.Add(da + db), errored: r.IntN(30) == 0})
		add(diffSpan{name: "e2e", service: "shop", start: start, end: start.Add(da + db + time.Duration(r.Int64N(int64(time.Millisecond))))})
		add(diffSpan{name: "e2e", service: "other", start: start, end: start.Add(da)}) // not shop: no instance
		if i%3 == 0 {
			code := int64(200)
			if r.IntN(8) == 0 {
				code = 503
			}
			add(diffSpan{name: "pay card", service: "shop", start: start, end: start.Add(delay(1500 * time.Millisecond)), status: code})
		}
		add(diffSpan{name: "unrelated", service: "shop", start: start, end: start.Add(time.Millisecond)})
		switch i % 20 {
		case 1: // marked upstream as an instance of a probe the configuration does not name
			add(diffSpan{name: "upstream", service: "edge", start: start, end: start.Add(delay(20 * time.Millisecond)), marked: "edge"})
		case 2: // marked, and of a probe the connector matches: counted once, by its match
			add(diffSpan{name: "b", service: "shop", start: start, end: start.Add(delay(50 * time.Millisecond)), marked: "b"})
		case 3: // ends before it starts: malformed
			add(diffSpan{name: "a", service: "shop", start: start, end: start.Add(-time.Millisecond)})
		case 4: // no start time: malformed
			add(diffSpan{name: "pay card", service: "shop", start: start, end: start.Add(time.Millisecond), noStart: true})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].arrive.Before(out[j].arrive) })
	return out
}

// diffTraces returns the spans as one request.
func diffTraces(spans []diffSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	for _, s := range spans {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", s.service)
		sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName(s.name)
		sp.SetTraceID(s.traceID)
		sp.SetSpanID(s.spanID)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.end))
		if s.errored {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		if s.status != 0 {
			sp.Attributes().PutInt("http.response.status_code", s.status)
		}
		if s.traceState != "" {
			sp.TraceState().FromRaw(s.traceState)
		}
		if s.marked != "" {
			sp.Attributes().PutStr(contract.AttrProbe, s.marked)
			sp.Attributes().PutInt(contract.AttrDMaxNs, int64(20*time.Millisecond))
			sp.Attributes().PutInt(contract.AttrBins, 20)
		}
		if s.noStart {
			sp.SetStartTimestamp(0)
		}
		sp.SetKind(s.kind)
		for _, a := range s.attrs {
			sp.Attributes().PutStr(a[0], a[1])
		}
	}
	return td
}

// windowKey names a probe's window by its end.
type windowKey struct {
	end   int64
	probe string
}

// windowView is what the test compares of a probe's window: its outcomes,
// its observed quantiles, the QTA verdict, the failure ratio, the
// divergence's p-value and the QoO scores, each as text so that two views
// compare whole.
type windowView map[string]string

// liveViews reads the connector's metrics into views by window: the
// outcomes from the cumulative deltaq.outcomes, differenced.
func liveViews(mds []pmetric.Metrics) map[windowKey]windowView {
	out := map[windowKey]windowView{}
	prev := map[string]int64{}
	for _, md := range mds {
		for _, rm := range md.ResourceMetrics().All() {
			for _, sm := range rm.ScopeMetrics().All() {
				for _, m := range sm.Metrics().All() {
					var dps pmetric.NumberDataPointSlice
					switch m.Type() {
					case pmetric.MetricTypeGauge:
						dps = m.Gauge().DataPoints()
					case pmetric.MetricTypeSum:
						dps = m.Sum().DataPoints()
					default:
						continue
					}
					for _, dp := range dps.All() {
						pv, _ := dp.Attributes().Get(contract.AttrProbe)
						k := windowKey{int64(dp.Timestamp()), pv.Str()}
						attr := func(name string) string {
							v, _ := dp.Attributes().Get(name)
							return v.AsString()
						}
						v := dp.DoubleValue()
						if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
							v = float64(dp.IntValue())
						}
						var name string
						switch m.Name() {
						case contract.MetricOutcomes:
							oc := attr(contract.AttrOutcome)
							n := dp.IntValue()
							d := n - prev[pv.Str()+"/"+oc]
							prev[pv.Str()+"/"+oc] = n
							if d == 0 {
								continue
							}
							name, v = "outcome "+oc, float64(d)
						case contract.MetricQuantile:
							if attr(contract.AttrSeries) != contract.SeriesObserved {
								continue
							}
							name = "q" + attr(contract.AttrQ)
						case contract.MetricQTAViolation:
							name = "violation"
						case contract.MetricFailureRatio:
							name = "failure_ratio"
						case contract.MetricDivergenceP:
							name = "divergence_p"
						case contract.MetricQoOScore:
							name = "qoo " + attr(contract.AttrSeries)
						default:
							continue
						}
						if out[k] == nil {
							out[k] = windowView{}
						}
						out[k][name] = fmt.Sprintf("%.9g", v)
					}
				}
			}
		}
	}
	return out
}

// offlineView is the view of a window of the offline analysis.
func offlineViews(rs []*analysis.Result) map[windowKey]windowView {
	out := map[windowKey]windowView{}
	for _, r := range rs {
		for i := range r.Probes {
			p := &r.Probes[i]
			v := windowView{}
			for oc, n := range map[string]int64{contract.Success: p.Counts.Success, contract.Timeout: p.Counts.Timeout, contract.Failure: p.Counts.Failure} {
				if n != 0 {
					v["outcome "+oc] = fmt.Sprintf("%.9g", float64(n))
				}
			}
			for _, q := range p.Quantiles {
				if q.ObservedOK {
					v["q"+fmt.Sprint(q.Q)] = fmt.Sprintf("%.9g", q.Observed)
				}
			}
			if fr, ok := p.FailureRatio(); ok {
				v["failure_ratio"] = fmt.Sprintf("%.9g", fr)
			}
			if p.QTACheck != nil {
				v["violation"] = "0"
				if !p.QTACheck.OK {
					v["violation"] = "1"
				}
			}
			if p.QoO != nil {
				if p.QoO.Observed.OK {
					v["qoo "+contract.SeriesObserved] = fmt.Sprintf("%.9g", p.QoO.Observed.QoO.Score)
				}
				if p.QoO.Calculated.OK {
					v["qoo "+contract.SeriesCalculated] = fmt.Sprintf("%.9g", p.QoO.Calculated.QoO.Score)
				}
			}
			if p.HasDivergence {
				v["divergence_p"] = fmt.Sprintf("%.9g", p.DivergenceTest.P)
			}
			if len(v) > 0 {
				out[windowKey{r.End.UnixNano(), p.Name}] = v
			}
		}
	}
	return out
}

// liveTriggers and offlineTriggers are the triggers fired, as "window end
// probe kind".
func liveTriggers(lds []plog.Logs) []string {
	var out []string
	for _, ld := range lds {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					if lr.EventName() != contract.EventTrigger {
						continue
					}
					p, _ := lr.Attributes().Get(contract.AttrProbe)
					k, _ := lr.Attributes().Get(contract.AttrTrigger)
					out = append(out, fmt.Sprint(lr.Timestamp().AsTime().UTC().Format(time.RFC3339Nano), " ", p.Str(), " ", k.Str()))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func offlineTriggers(rs []*analysis.Result) []string {
	var out []string
	for _, r := range rs {
		for _, t := range r.Triggers {
			out = append(out, fmt.Sprint(t.Time.UTC().Format(time.RFC3339Nano), " ", t.Probe, " ", t.Kind))
		}
	}
	slices.Sort(out)
	return out
}

// diffRun is what the two paths gave of the same spans: the connector's
// windows and triggers, and the offline analysis's windows and whole input.
type diffRun struct {
	live, off                 map[windowKey]windowView
	liveTriggers, offTriggers []string
	whole                     *analysis.Result
	// metrics and windows are what the views were read from; report is
	// deltaq analyze's --json output of the same analysis.
	metrics []pmetric.Metrics
	windows []*analysis.Result
	report  []byte
	// windowStats are the offline analysis's window counters.
	windowStats analysis.Stats
}

// runDiff sends spans to a collector of the configuration yaml — its deltaq
// processor, if it has one, feeding its deltaq connector — as they arrive,
// the connector's windows closed by its own clock, each lag after its end;
// and writes them in arrival order to an OTLP JSON trace file that deltaq
// analyze's offline analysis reads with the same configuration.
func runDiff(t *testing.T, yaml string, lag time.Duration, spans []diffSpan) diffRun {
	t.Helper()
	return runDiffEvery(t, yaml, time.Second, lag, spans)
}

// runDiffEvery is runDiff for a configuration of the interval given.
func runDiffEvery(t *testing.T, yaml string, interval, lag time.Duration, spans []diffSpan) diffRun {
	t.Helper()
	return runDiffAnalyzedAs(t, yaml, interval, lag, spans, analyzedAs{})
}

// analyzedAs is how deltaq analyze reads the configuration in a run: from
// yaml instead of the connector's ("": the same), with the flags
// --interval and --lag (0: not given).
type analyzedAs struct {
	yaml          string
	interval, lag time.Duration
}

// runDiffAnalyzedAs is runDiffEvery with deltaq analyze reading the
// configuration as as says.
func runDiffAnalyzedAs(t *testing.T, yaml string, interval, lag time.Duration, spans []diffSpan, as analyzedAs) diffRun {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(yaml), 0o600))
	conf, err := offline.Resolve([]string{cfgPath})
	require.NoError(t, err)
	sub, err := conf.Sub("connectors::deltaq")
	require.NoError(t, err)
	st := collectorstate.New()
	clk := coretest.NewClock(coretest.At(0))
	f := deltaqconnector.ClockFactoryFor(st, clk)
	cfg := f.CreateDefaultConfig()
	require.NoError(t, sub.Unmarshal(cfg))
	msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
	set := connectortest.NewNopSettings(f.Type())
	set.ID = component.NewID(f.Type())
	var input consumer.Traces
	var comps []component.Component
	if conf.IsSet("processors::deltaq") {
		// The processor is made first, as the collector makes it: the
		// connector learns its probes' layouts.
		psub, err := conf.Sub("processors::deltaq")
		require.NoError(t, err)
		pf := deltaqprocessor.NewFactoryFor(st)
		pcfg := pf.CreateDefaultConfig()
		require.NoError(t, psub.Unmarshal(pcfg))
		next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
			return input.ConsumeTraces(ctx, td)
		})
		require.NoError(t, err)
		proc, err := pf.CreateTraces(ctx, processortest.NewNopSettings(pf.Type()), pcfg, next)
		require.NoError(t, err)
		require.NoError(t, proc.Start(ctx, componenttest.NewNopHost()))
		comps = append(comps, proc)
	}
	tm, err := f.CreateTracesToMetrics(ctx, set, cfg, msink)
	require.NoError(t, err)
	tl, err := f.CreateTracesToLogs(ctx, set, cfg, lsink)
	require.NoError(t, err)
	for _, c := range []component.Component{tm, tl} {
		require.NoError(t, c.Start(ctx, componenttest.NewNopHost()))
	}
	toConnector, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		if err := tm.ConsumeTraces(ctx, td); err != nil {
			return err
		}
		return tl.ConsumeTraces(ctx, td)
	})
	require.NoError(t, err)
	entry := consumer.Traces(toConnector)
	if len(comps) > 0 {
		entry = comps[0].(consumer.Traces)
	}
	input = toConnector

	var file bytes.Buffer
	var m ptrace.JSONMarshaler
	nextClose := coretest.At(interval + lag)
	send := func(batch []diffSpan) {
		clk.Set(batch[len(batch)-1].arrive)
		td := diffTraces(batch)
		// The file holds the spans as they arrived, before any processor.
		line, err := m.MarshalTraces(td)
		require.NoError(t, err)
		file.Write(line)
		file.WriteByte('\n')
		require.NoError(t, entry.ConsumeTraces(ctx, td))
	}
	for len(spans) > 0 {
		// A batch holds the spans that arrive before the next window
		// closes, at most 40.
		n := 0
		for n < min(40, len(spans)) && spans[n].arrive.Before(nextClose) {
			n++
		}
		if n == 0 {
			clk.Tick(nextClose)
			nextClose = nextClose.Add(interval)
			continue
		}
		send(spans[:n])
		spans = spans[n:]
	}
	for range 3 {
		clk.Tick(nextClose)
		nextClose = nextClose.Add(interval)
	}
	for _, c := range append(comps, tm, tl) {
		require.NoError(t, c.Shutdown(ctx))
	}

	// The offline path, as deltaq analyze runs it.
	tracePath := filepath.Join(dir, "traces.json")
	require.NoError(t, os.WriteFile(tracePath, file.Bytes(), 0o600))
	if as.yaml != "" {
		cfgPath = filepath.Join(dir, "analyzed.yaml")
		require.NoError(t, os.WriteFile(cfgPath, []byte(as.yaml), 0o600))
	}
	loaded, err := (&offline.Source{Paths: []string{cfgPath}, Processor: "deltaq", Exporter: "deltaq"}).Load()
	require.NoError(t, err)
	require.NoError(t, loaded.WithWindows(as.interval, as.lag))
	an, proc, err := offline.NewAnalysis(loaded, loaded.Analysis)
	require.NoError(t, err)
	var windows []*analysis.Result
	rep := report.New(&loaded.Analysis.Config)
	an.OnWindow(func(r *analysis.Result) {
		windows = append(windows, r)
		rep.AddWindow(r)
	}, rep.Quantiles()...)
	_, err = tracefile.ReadFiles([]string{tracePath}, tracefile.Options{}, func(td ptrace.Traces) error {
		rep.AddSpans(td)
		return proc.ConsumeTraces(ctx, td)
	})
	require.NoError(t, err)
	require.NoError(t, proc.Shutdown(ctx))
	whole, stats := an.Result()
	rep.Finish(whole, stats, an.WindowStats())
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	return diffRun{live: liveViews(msink.AllMetrics()), off: offlineViews(windows),
		liveTriggers: liveTriggers(lsink.AllLogs()), offTriggers: offlineTriggers(windows), whole: whole,
		metrics: msink.AllMetrics(), windows: windows, report: js.Bytes(), windowStats: an.WindowStats()}
}

// check requires the two paths to agree on every window, and the whole
// input's outcomes to be the windows' together.
func (r diffRun) check(t *testing.T) {
	t.Helper()
	require.Equal(t, r.live, r.off)
	totals := map[string]analysis.Counts{}
	for k, v := range r.live {
		c := totals[k.probe]
		for oc, n := range map[string]*int64{contract.Success: &c.Success, contract.Timeout: &c.Timeout, contract.Failure: &c.Failure} {
			var x float64
			fmt.Sscan(v["outcome "+oc], &x)
			*n += int64(x)
		}
		totals[k.probe] = c
	}
	for _, p := range r.whole.Probes {
		require.Equal(t, totals[p.Name], p.Counts, "the whole input, probe %s", p.Name)
	}
	require.Equal(t, r.liveTriggers, r.offTriggers)
}

// TestOfflineAgreesWithTheConnector: the same seeded spans, sent to a
// connector-only collector's connector as they arrive (its windows closed
// by its own clock, each lag after its end) and written in arrival order to
// an OTLP JSON trace file that deltaq analyze's offline analysis reads with
// the same configuration, give the same windows: outcomes (successes,
// failures by status and by attribute, timeouts past dMax, sampled spans by
// their adjusted counts), observed quantiles, QTA verdicts, failure ratios,
// divergence from the diagram, QoO scores and triggers; the whole input's
// outcomes are the windows' together. Among the spans: some marked upstream
// with deltaq.probe (of a probe the configuration does not name, counted
// under the layout they carry; of a probe the connector matches, counted
// once, by the match) and malformed ones (no start time, an end before the
// start).
func TestOfflineAgreesWithTheConnector(t *testing.T) {
	const seconds = 6
	r := runDiff(t, diffConfig, 400*time.Millisecond, diffSpans(rand.New(rand.NewPCG(7, 11)), seconds))
	// Every window agrees, the first and the last too: the spans start at
	// a window's start, and the file ends after the last window's last
	// span, which the connector's shutdown flushes.
	r.check(t)
	require.GreaterOrEqual(t, len(r.live), 4*seconds)
	require.Len(t, r.whole.Probes, 5) // and edge, named by its spans
	require.NotEmpty(t, r.liveTriggers)
}

// diffProcessorConfig is diffConfig with a, b and pay mapped by a deltaq
// processor (its default failure rule: status ERROR, and pay's own) and
// e2e still matched by the connector; the diagram spans both.
const diffProcessorConfig = `
processors:
  deltaq:
    probes:
      a: {dmax: 50ms, bins: 50}
      b: {dmax: 50ms, bins: 50}
      pay:
        match: {span_name_regexp: "^pay "}
        dmax: 1s
        bins: 100
        failure: {conditions: [{attribute: http.response.status_code, op: ">=", value: 500}]}
connectors:
  deltaq:
    interval: 1s
    lag: 400ms
    quantiles: [0.5, 0.9]
    diagram: |
      e2e = a -> b;
    probes:
      a:
        qta: {points: [{delay: 12ms, p: 0.5}], max_failure: 0.1}
        triggers: {qta: true, failure: true}
      e2e:
        match: {span_name: e2e, service_name: shop}
        dmax: 100ms
        bins: 100
        qta: {points: [{delay: 30ms, p: 0.5}], max_failure: 0.2}
        qoo:
          rop: {points: [{p: 0.5, delay: 20ms}], max_failure: 0.1}
          cpup: {points: [{p: 0.5, delay: 60ms}], max_failure: 0.5}
`

// TestOfflineAgreesWithTheProcessorAndConnector: as
// TestOfflineAgreesWithTheConnector, with a deltaq processor mapping some
// of the probes before the connector, in the collector and in deltaq
// analyze alike.
func TestOfflineAgreesWithTheProcessorAndConnector(t *testing.T) {
	const seconds = 6
	r := runDiff(t, diffProcessorConfig, 400*time.Millisecond, diffSpans(rand.New(rand.NewPCG(7, 11)), seconds))
	r.check(t)
	require.GreaterOrEqual(t, len(r.live), 4*seconds)
	require.NotEmpty(t, r.liveTriggers)
}

// TestOfflineSkewedSpanDoesNotCloseTheWindows: a span whose end is an hour
// ahead (its host's clock is wrong), among spans of the right time, is
// beyond the connector's open windows: the connector drops it (too_early)
// and counts the others in their windows. The offline analysis, whose clock
// is the spans' ends, must not take it for the time either: it closed every
// window at once, and the spans after it, ending in windows already closed,
// were all dropped (too_late).
func TestOfflineSkewedSpanDoesNotCloseTheWindows(t *testing.T) {
	const seconds = 6
	spans := diffSpans(rand.New(rand.NewPCG(7, 11)), seconds)
	for _, i := range []int{len(spans) / 3, len(spans) / 3 * 2} {
		skewed := spans[i]
		skewed.start, skewed.end = skewed.start.Add(time.Hour), skewed.end.Add(time.Hour)
		skewed.spanID[6] = 0xee
		spans = slices.Insert(spans, i, skewed)
	}
	r := runDiff(t, diffConfig, 400*time.Millisecond, spans)
	require.Equal(t, r.live, r.off)
	require.Equal(t, r.liveTriggers, r.offTriggers)
	require.GreaterOrEqual(t, len(r.live), 4*seconds)
}
