// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/connector/deltaqconnector/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// TestLoadMatchedConfig: the match and failure options of probes go to
// Matched; the other options of the same entries stay in Probes.
func TestLoadMatchedConfig(t *testing.T) {
	cfg := loadConfig(t, "matched")
	require.NoError(t, confmap.Validate(cfg))
	no := false
	assert.Equal(t, map[string]MatchedProbe{
		"job": {Match: &spanmatch.MatchConfig{}},
		"worker": {
			Match: &spanmatch.MatchConfig{SpanNameRegexp: "^worker_[0-9]+$", ServiceName: "shop", SpanKind: "server"},
			Failure: &spanmatch.FailureConfig{StatusError: &no,
				Conditions: []spanmatch.ConditionConfig{{Attribute: "http.status_code", Op: ">=", Value: 500}}},
		},
		"store": {Match: &spanmatch.MatchConfig{SpanName: "SELECT", Attributes: map[string]any{"db.system": "postgresql"}}},
	}, cfg.Matched)
	assert.Equal(t, map[string]analysis.ProbeConfig{
		"job":    {DMax: 200 * time.Millisecond, Bins: 100},
		"worker": {DMax: 100 * time.Millisecond, Bins: 50},
		"store": {DMax: 50 * time.Millisecond, Bins: 50,
			QTA: analysis.QTA{Points: []analysis.QTAPoint{{Delay: 10 * time.Millisecond, P: 0.5}}}},
	}, cfg.Probes)
}

// TestLoadInvalidMatchedConfig: each problem of a matched probe is refused
// at validation (or, for an unknown option, while decoding), naming the
// probe and the field.
func TestLoadInvalidMatchedConfig(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"match_without_layout", `probes["job"].match: a probe the connector matches needs its dmax and bins, its binning, or dmax: auto and bins`},
		{"failure_without_match", `probes["job"].failure: only a probe with match has a failure rule here; add match, or move the failure rule to the deltaq processor's probe`},
		{"match_bad_kind", `probes["job"].failure.conditions[0].value: operator < needs a number, got "abc"`},
		{"match_bad_kind", `probes["job"].match.span_kind: unknown span kind "sideways" (want internal, server, client, producer or consumer)`},
		// A probe matched with dmax: auto is the connector's own, as at
		// start: the outcome is the misspelling, not the probe (validate
		// said "probes["auth"]: no … probe defines probe auth (did you
		// mean auht?)").
		{"auto_typo", "diagram: outcome auht is not a probe any deltaq processor or the connector counts (did you mean auth?)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, tt.name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	// match misspelled is named, and the options of a connector's probe
	// listed are all of them (they were the analysis options alone:
	// "matc: unknown option; the options here are binning, bins, dmax,
	// qoo, qta, triggers").
	err := section(t, "match_misspelled").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["job"].matc: unknown option; did you mean match?`)
	assert.Contains(t, err.Error(), `probes["cart"].span_name: an option of match, not of this level: write it under match (match: {span_name: …})`)
	assert.Contains(t, err.Error(), `probes["store"].bogus: unknown option; the options here are binning, bins, dmax, dmax_changes_per_hour, dmax_max, dmax_min, dmax_period, dmax_sample, failure, match, qoo, qta, triggers`)

	// dmax without bins is one problem, said once: not also the match's
	// "needs its dmax and bins".
	err = confmap.Validate(loadConfig(t, "match_dmax_alone"))
	require.Error(t, err)
	assert.Equal(t, `probes["job"].bins: must be set together with dmax (200ms): the histogram's bins are dmax/bins wide`, err.Error())

	// A misspelled option of match or failure is named with the closest
	// valid one, as every other option is.
	err = section(t, "match_unknown_key").Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `probes["job"].match.span_nmae: unknown option; did you mean span_name?`)
	assert.Contains(t, err.Error(), `probes["job"].failure.conditons: unknown option; did you mean conditions?`)
	assert.Contains(t, err.Error(), `probes["store"].match.span: unknown option; did you mean span_name or span_kind?`)
}

// span is one span of a matched probe's test batch.
type span struct {
	name    string
	kind    ptrace.SpanKind
	dur     time.Duration
	error   bool
	attrs   map[string]any
	service string
	// traceID and tracestate, when set, are the span's.
	traceID    byte
	tracestate string
}

// matchedTraces returns spans ending at end, one resource per service.
func matchedTraces(end time.Duration, spans ...span) ptrace.Traces {
	td := ptrace.NewTraces()
	byService := map[string]ptrace.SpanSlice{}
	for _, s := range spans {
		ss, ok := byService[s.service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			if s.service != "" {
				rs.Resource().Attributes().PutStr("service.name", s.service)
			}
			ss = rs.ScopeSpans().AppendEmpty().Spans()
			byService[s.service] = ss
		}
		sp := ss.AppendEmpty()
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(end - s.dur)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(end)))
		if s.error {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		_ = sp.Attributes().FromRaw(s.attrs)
		if s.traceID != 0 {
			sp.SetTraceID(pcommon.TraceID{s.traceID})
			sp.SetSpanID(pcommon.SpanID{s.traceID})
		}
		sp.TraceState().FromRaw(s.tracestate)
	}
	return td
}

// probeOutcomes returns the deltaq.outcomes totals of the last metrics
// batch that has them, by probe and outcome.
func probeOutcomes(mds []pmetric.Metrics) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, md := range mds {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != contract.MetricOutcomes {
				continue
			}
			dps := ms.At(i).Sum().DataPoints()
			for j := range dps.Len() {
				p, _ := dps.At(j).Attributes().Get(contract.AttrProbe)
				oc, _ := dps.At(j).Attributes().Get(contract.AttrOutcome)
				if out[p.Str()] == nil {
					out[p.Str()] = map[string]int64{}
				}
				out[p.Str()][oc.Str()] = dps.At(j).IntValue() // cumulative
			}
		}
	}
	return out
}

// TestMatchedProbesCountFromSpans: with no processor, the connector's
// probes with a match count their instances from the spans: a span longer
// than dMax is a timeout whatever its status (the thesis, section 3.3),
// else a failure when the probe's failure rule holds (status ERROR by
// default; worker's rule is http.status_code ≥ 500 and not the status),
// else a success. Spans that a condition of the match excludes (service,
// kind, attribute) are not instances; a span two probes match counts in
// both.
func TestMatchedProbesCountFromSpans(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	msink := new(consumertest.MetricsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), loadConfig(t, "matched"), nil, msink, consumertest.NewNop())
	server, pg := ptrace.SpanKindServer, map[string]any{"db.system": "postgresql"}
	p.consume(t, matchedTraces(500*time.Millisecond,
		span{name: "job", dur: 150 * time.Millisecond},                                                                                     // success
		span{name: "job", dur: 150 * time.Millisecond, error: true},                                                                        // failure
		span{name: "job", dur: 250 * time.Millisecond, error: true},                                                                        // timeout: 250ms > 200ms
		span{name: "job", dur: 250 * time.Millisecond},                                                                                     // timeout
		span{name: "jobs", dur: time.Millisecond},                                                                                          // no probe
		span{name: "worker_1", kind: server, service: "shop", dur: 50 * time.Millisecond, error: true},                                     // success: status is not its rule
		span{name: "worker_2", kind: server, service: "shop", dur: 50 * time.Millisecond, attrs: map[string]any{"http.status_code": 503}},  // failure
		span{name: "worker_2", kind: server, service: "shop", dur: 150 * time.Millisecond, attrs: map[string]any{"http.status_code": 503}}, // timeout
		span{name: "worker_3", kind: server, service: "other", dur: 50 * time.Millisecond},                                                 // other service
		span{name: "worker_3", kind: ptrace.SpanKindClient, service: "shop", dur: 50 * time.Millisecond},                                   // client
		span{name: "worker_x", kind: server, service: "shop", dur: 50 * time.Millisecond},                                                  // name
		span{name: "SELECT", dur: 5 * time.Millisecond, attrs: pg},                                                                         // success
		span{name: "SELECT", dur: 5 * time.Millisecond, attrs: map[string]any{"db.system": "mysql"}},                                       // attribute
	))
	clk.Tick(at(2 * time.Second)) // closes [0, 1s)
	assert.Equal(t, map[string]map[string]int64{
		"job":    {contract.Success: 1, contract.Failure: 1, contract.Timeout: 2},
		"worker": {contract.Success: 1, contract.Failure: 1, contract.Timeout: 1},
		"store":  {contract.Success: 1, contract.Failure: 0, contract.Timeout: 0},
	}, probeOutcomes(msink.AllMetrics()))
	assert.Equal(t, map[string]string{"job": "", "worker": "shop", "store": ""}, probeServices(msink.AllMetrics()),
		"a probe's series name the services of its spans' resources")
	p.shutdown(t)
}

// TestMarkedSpansOfMatchedProbesCountOnce: a span that arrives with
// deltaq.probe naming a probe the connector matches itself (an
// application's attribute, which no processor of the collector removed)
// counts once, by the probe's match and failure rule — not again as an
// instance the attribute claims, nor as one when the match does not hold
// (README, "The contract"); deltaq.probe naming a probe the connector does
// not match is read as a processor's instance, as before.
func TestMarkedSpansOfMatchedProbesCountOnce(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	msink := new(consumertest.MetricsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), loadConfig(t, "matched"), nil, msink, consumertest.NewNop())
	job := map[string]any{contract.AttrProbe: "job"}
	failedJob := map[string]any{contract.AttrProbe: "job", contract.AttrOutcome: contract.Failure}
	upstream := map[string]any{contract.AttrProbe: "upstream", contract.AttrDMaxNs: int64(time.Second), contract.AttrBins: int64(10)}
	p.consume(t, matchedTraces(500*time.Millisecond,
		span{name: "job", dur: 150 * time.Millisecond, attrs: job},       // one success
		span{name: "job", dur: 250 * time.Millisecond, attrs: job},       // one timeout, by its match
		span{name: "job", dur: 50 * time.Millisecond, attrs: failedJob},  // one success: the status is not ERROR
		span{name: "other", dur: 50 * time.Millisecond, attrs: job},      // none: job's match does not hold
		span{name: "other", dur: 50 * time.Millisecond, attrs: upstream}, // a success of upstream
		span{name: "SELECT", dur: 5 * time.Millisecond, attrs: upstream}, // another: SELECT without db.system is no store
	))
	clk.Tick(at(2 * time.Second)) // closes [0, 1s)
	assert.Equal(t, map[string]map[string]int64{
		"job":      {contract.Success: 2, contract.Failure: 0, contract.Timeout: 1},
		"worker":   {contract.Success: 0, contract.Failure: 0, contract.Timeout: 0},
		"store":    {contract.Success: 0, contract.Failure: 0, contract.Timeout: 0},
		"upstream": {contract.Success: 2, contract.Failure: 0, contract.Timeout: 0},
	}, probeOutcomes(msink.AllMetrics()))
	p.shutdown(t)
}

// probeServices returns the deltaq.service of each probe's deltaq.outcomes
// points.
func probeServices(mds []pmetric.Metrics) map[string]string {
	out := map[string]string{}
	for _, md := range mds {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != contract.MetricOutcomes {
				continue
			}
			for _, dp := range ms.At(i).Sum().DataPoints().All() {
				p, _ := dp.Attributes().Get(contract.AttrProbe)
				svc, _ := dp.Attributes().Get(contract.AttrService)
				out[p.Str()] = svc.Str()
			}
		}
	}
	return out
}

// TestMatchedSpansWithoutTimesAreMalformed: a matched span without a start
// or an end time is not an instance; it is counted as dropped (malformed).
func TestMatchedSpansWithoutTimesAreMalformed(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	msink := new(consumertest.MetricsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), loadConfig(t, "matched"), nil, msink, consumertest.NewNop())
	td := matchedTraces(500*time.Millisecond, span{name: "job", dur: time.Millisecond}, span{name: "job", dur: time.Millisecond})
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).SetStartTimestamp(0)
	p.consume(t, td)
	st := p.metrics.(*deltaqConnector).shared.obs.Stats()
	assert.Equal(t, int64(1), st.Dropped[analysis.DropMalformed])
	assert.Equal(t, int64(1), st.Counted)
	p.shutdown(t)
}

// TestMatchedSpansAllocateNothing: a batch of 1000 spans of matched probes
// costs the connector as many allocations as a batch of 10, and so does a
// batch of spans no probe matches: nothing per span.
func TestMatchedSpansAllocateNothing(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), loadConfig(t, "matched"), nil, consumertest.NewNop(), consumertest.NewNop())
	defer p.shutdown(t)
	batch := func(name string, n int) ptrace.Traces {
		spans := make([]span, n)
		for i := range spans {
			spans[i] = span{name: name, kind: ptrace.SpanKindServer, service: "shop", dur: time.Duration(i%100) * time.Millisecond}
		}
		return matchedTraces(500*time.Millisecond, spans...)
	}
	ctx := context.Background()
	for _, name := range []string{"job", "worker_1", "none"} {
		allocs := func(n int) float64 {
			td := batch(name, n)
			return testing.AllocsPerRun(20, func() { require.NoError(t, p.metrics.ConsumeTraces(ctx, td)) })
		}
		small, large := allocs(10), allocs(1000)
		assert.Equal(t, small, large, "%s: a batch of 1000 spans allocates %v times, one of 10 %v times", name, large, small)
	}
}

// TestProbeMatchedTwiceRefused: a probe that a deltaq processor and the
// connector both match is refused when the second is built, whichever it
// is, naming the probe and both components; once the first has shut down
// the other builds.
func TestProbeMatchedTwiceRefused(t *testing.T) {
	pf := deltaqprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig().(*deltaqprocessor.Config)
	pcfg.Probes = []deltaqprocessor.ProbeConfig{{Name: "job", DMax: time.Second, Bins: 10}}
	ccfg := loadConfig(t, "matched")
	ctx := context.Background()
	want := `probe "job" is matched in the spans by both the deltaq `
	newProcessor := func() (component.Component, error) {
		set := processortest.NewNopSettings(pf.Type())
		set.ID = component.NewID(pf.Type())
		return pf.CreateTraces(ctx, set, pcfg, consumertest.NewNop())
	}
	newConnector := func() (component.Component, error) {
		set := connectortest.NewNopSettings(metadata.Type)
		set.ID = component.NewID(metadata.Type)
		return NewFactory().CreateTracesToMetrics(ctx, set, ccfg, consumertest.NewNop())
	}
	for _, order := range [][2]func() (component.Component, error){{newConnector, newProcessor}, {newProcessor, newConnector}} {
		first, err := order[0]()
		require.NoError(t, err)
		_, err = order[1]()
		require.ErrorContains(t, err, want)
		assert.ErrorContains(t, err, `processor "deltaq"`)
		assert.ErrorContains(t, err, `connector "deltaq"`)
		require.NoError(t, first.Shutdown(ctx))
		second, err := order[1]()
		require.NoError(t, err, "the first has shut down")
		require.NoError(t, second.Shutdown(ctx))
	}
}

// TestMatchedSpansSampledAndExemplars: a probe matched in the connector
// counts a sampled span with its adjusted count, as a span the processor
// marks: tracestate ot=th:c keeps one span in four (OpenTelemetry
// "TraceState: Probability Sampling"), so 3 spans count 12 successes, and
// one with sampling.priority 1 counts one; the window's exemplars name the
// spans' traces.
func TestMatchedSpansSampledAndExemplars(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	msink := new(consumertest.MetricsSink)
	p := newPair(t, clockFactory(clk), component.NewID(metadata.Type), loadConfig(t, "matched"), nil, msink, consumertest.NewNop())
	p.consume(t, matchedTraces(500*time.Millisecond,
		span{name: "job", dur: 50 * time.Millisecond, traceID: 1, tracestate: "ot=th:c"},
		span{name: "job", dur: 100 * time.Millisecond, traceID: 2, tracestate: "ot=th:c"},
		span{name: "job", dur: 150 * time.Millisecond, traceID: 3, tracestate: "ot=th:c"},
		span{name: "job", dur: 150 * time.Millisecond, traceID: 4, tracestate: "ot=th:c", attrs: map[string]any{"sampling.priority": 1}},
	))
	clk.Tick(at(2 * time.Second)) // closes [0, 1s)
	assert.Equal(t, int64(3*4+1), probeOutcomes(msink.AllMetrics())["job"][contract.Success])
	traces := map[byte]bool{}
	for _, md := range msink.AllMetrics() {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := range ms.Len() {
			if ms.At(i).Name() != contract.MetricObserved || ms.At(i).Type() != pmetric.MetricTypeHistogram {
				continue
			}
			dps := ms.At(i).Histogram().DataPoints()
			for j := range dps.Len() {
				for k := range dps.At(j).Exemplars().Len() {
					traces[dps.At(j).Exemplars().At(k).TraceID()[0]] = true
				}
			}
		}
	}
	assert.NotEmpty(t, traces, "exemplars on deltaq.observed")
	for id := range traces {
		assert.Contains(t, []byte{1, 2, 3, 4}, id, "an exemplar names a span's trace")
	}
	p.shutdown(t)
}
