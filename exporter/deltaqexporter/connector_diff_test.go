// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// diffAnalysis returns seeded analysis options, as a collector's YAML
// decodes them, that the exporter and the connector both take: interval,
// lag, quantiles, a diagram over a and b, their layouts (or none: the
// instances' own), a QTA with its triggers, QoO, max_probes, services,
// snapshots, windows for a gateway, exponential histograms, a what-if
// scenario, exemplars and worst instances.
func diffAnalysis(r *rand.Rand) map[string]any {
	interval := []string{"1s", "2s", "500ms"}[r.IntN(3)]
	probes := map[string]any{}
	for _, p := range []string{"a", "b"} {
		if r.IntN(3) > 0 {
			probes[p] = map[string]any{"dmax": "20ms", "bins": []int{10, 20, 40}[r.IntN(3)]}
		}
	}
	e2e := map[string]any{
		"qta": map[string]any{"points": []any{
			map[string]any{"delay": "8ms", "p": 0.3},
			map[string]any{"delay": "15ms", "p": 0.6},
		}, "max_failure": 0.2},
		"triggers": map[string]any{"qta": true, "failure": r.IntN(2) == 0, "max_divergence": 0.3},
	}
	if r.IntN(2) == 0 {
		e2e["qoo"] = map[string]any{
			"rop":  map[string]any{"points": []any{map[string]any{"p": 0.5, "delay": "5ms"}}, "max_failure": 0.05},
			"cpup": map[string]any{"points": []any{map[string]any{"p": 0.5, "delay": "15ms"}}, "max_failure": 0.5},
		}
	}
	probes["e2e"] = e2e
	cfg := map[string]any{
		"interval":   interval,
		"lag":        []string{"0s", "100ms", "300ms"}[r.IntN(3)],
		"quantiles":  []any{0.5, 0.9},
		"diagram":    "e2e = a -> b;",
		"probes":     probes,
		"max_probes": 1 + r.IntN(3),
		"services":   map[string]any{"max_per_probe": 1 + r.IntN(2)},
		"snapshot":   map[string]any{"before": 1, "after": interval},
	}
	if r.IntN(2) == 0 {
		cfg["history"] = 3
	}
	if r.IntN(3) == 0 {
		cfg["emit_windows"] = true
	}
	if r.IntN(3) == 0 {
		cfg["histogram"] = map[string]any{"exponential": map[string]any{"max_size": 20}}
	}
	if r.IntN(2) == 0 {
		cfg["whatif"] = map[string]any{"faster_a": map[string]any{"a": "0.5*X"}}
	}
	cfg["worst_instances"] = 1 + r.IntN(3)
	cfg["exemplars"] = map[string]any{"max_per_probe": 1 + r.IntN(4)}
	if r.IntN(2) == 0 {
		// Windows cut into several requests (split.go).
		cfg["max_request_bytes"] = 65536
		cfg["cdf_points"] = 0
	}
	return cfg
}

// diffInstances returns seeded instance spans, as the processor writes
// them, ending in the n windows of interval from coretest.T0: a, b and e2e
// in a 20 ms × 20 bins layout (now and then another, rebinned or refused),
// probes no configuration names (some beyond max_probes), successes,
// failures and timeouts, a few sampled, of three services; by end time.
func diffInstances(r *rand.Rand, interval time.Duration, n int) []coretest.Span {
	var out []coretest.Span
	for w := range n {
		bad := w == n/2 // a slow and failing window: the QTA breaks
		for range 10 + r.IntN(30) {
			p := []string{"a", "b", "e2e", "e2e", "x", "y", "z"}[r.IntN(7)]
			d := time.Duration(r.ExpFloat64() * float64(4*time.Millisecond))
			if bad {
				d *= 3
			}
			end := coretest.At(time.Duration(w)*interval + time.Duration(r.Int64N(int64(interval))))
			s := coretest.Span{Probe: p, Outcome: contract.Success, Start: end.Add(-d), End: end, DMax: 20 * time.Millisecond, Bins: 20}
			switch {
			case d >= s.DMax:
				s.Outcome, s.Start = contract.Timeout, end.Add(-s.DMax)
			case r.IntN(12) == 0 || bad && r.IntN(3) == 0:
				s.Outcome = contract.Failure
			}
			if r.IntN(25) == 0 {
				s.Bins = 40
			}
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(x, y coretest.Span) int { return x.End.Compare(y.End) })
	return out
}

// diffTraces returns the spans as traces, each in a resource of one of
// three services, one in eight sampled with an adjusted count of 2.
func diffTraces(r *rand.Rand, specs []coretest.Span) ptrace.Traces {
	td := ptrace.NewTraces()
	for i, s := range specs {
		one := coretest.Traces(s)
		rs := one.ResourceSpans().At(0)
		rs.Resource().Attributes().PutStr("service.name", []string{"shop", "pay", "edge"}[r.IntN(3)])
		sp := rs.ScopeSpans().At(0).Spans().At(1)
		sp.SetTraceID(pcommon.TraceID{byte(i), byte(i >> 8), 1})
		sp.SetSpanID(pcommon.SpanID{byte(i), byte(i >> 8), byte(r.Uint32())})
		if r.IntN(8) == 0 {
			sp.TraceState().FromRaw("ot=th:8")
		}
		rs.MoveTo(td.ResourceSpans().AppendEmpty())
	}
	return td
}

// canonMetrics returns one line per data point of mds: the metric, its
// attributes and its values, sorted, without the resource and the scope
// (the component's own).
func canonMetrics(mds []pmetric.Metrics) []string {
	var out []string
	for _, md := range mds {
		for i := range md.ResourceMetrics().Len() {
			sms := md.ResourceMetrics().At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					out = append(out, canonMetric(ms.At(k))...)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func canonMetric(m pmetric.Metric) []string {
	var out []string
	head := func(attrs pcommon.Map, start, ts pcommon.Timestamp) string {
		return fmt.Sprintf("%s %s %v %d..%d", m.Name(), m.Unit(), attrs.AsRaw(), start, ts)
	}
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for i := range m.Gauge().DataPoints().Len() {
			p := m.Gauge().DataPoints().At(i)
			out = append(out, fmt.Sprintf("%s = %v %v", head(p.Attributes(), p.StartTimestamp(), p.Timestamp()), p.DoubleValue(), p.IntValue()))
		}
	case pmetric.MetricTypeSum:
		for i := range m.Sum().DataPoints().Len() {
			p := m.Sum().DataPoints().At(i)
			out = append(out, fmt.Sprintf("%s = %v %v %s", head(p.Attributes(), p.StartTimestamp(), p.Timestamp()), p.DoubleValue(), p.IntValue(), canonExemplars(p.Exemplars())))
		}
	case pmetric.MetricTypeHistogram:
		for i := range m.Histogram().DataPoints().Len() {
			p := m.Histogram().DataPoints().At(i)
			out = append(out, fmt.Sprintf("%s = %d %v %v %v %s", head(p.Attributes(), p.StartTimestamp(), p.Timestamp()),
				p.Count(), p.Sum(), p.ExplicitBounds().AsRaw(), p.BucketCounts().AsRaw(), canonExemplars(p.Exemplars())))
		}
	case pmetric.MetricTypeExponentialHistogram:
		for i := range m.ExponentialHistogram().DataPoints().Len() {
			p := m.ExponentialHistogram().DataPoints().At(i)
			out = append(out, fmt.Sprintf("%s = %d %v %d %d %v %d %s", head(p.Attributes(), p.StartTimestamp(), p.Timestamp()),
				p.Count(), p.Sum(), p.Scale(), p.Positive().Offset(), p.Positive().BucketCounts().AsRaw(), p.ZeroCount(), canonExemplars(p.Exemplars())))
		}
	default:
		out = append(out, m.Name()+" "+m.Type().String())
	}
	return out
}

// canonExemplars returns the exemplars as text: trace and span ids, time
// and value.
func canonExemplars(es pmetric.ExemplarSlice) string {
	var b strings.Builder
	for i := range es.Len() {
		e := es.At(i)
		fmt.Fprintf(&b, "[%s %s %d %v %d %v]", e.TraceID(), e.SpanID(), e.Timestamp(), e.DoubleValue(), e.IntValue(), e.FilteredAttributes().AsRaw())
	}
	return b.String()
}

// canonLogs returns one line per log record: its event, times, attributes
// and body, sorted.
func canonLogs(lds []plog.Logs) []string {
	var out []string
	for _, ld := range lds {
		for i := range ld.ResourceLogs().Len() {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := range sls.Len() {
				lrs := sls.At(j).LogRecords()
				for k := range lrs.Len() {
					lr := lrs.At(k)
					out = append(out, fmt.Sprintf("%s %d %v %v %v", lr.EventName(), lr.Timestamp(), lr.SeverityText(), lr.Attributes().AsRaw(), lr.Body().AsRaw()))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// httpReceiver is an OTLP/HTTP endpoint keeping what it receives, in
// protobuf or JSON, gzip-compressed or not.
type httpReceiver struct {
	mu      sync.Mutex
	metrics []pmetric.Metrics
	logs    []plog.Logs
}

func (h *httpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rd = zr
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	json := r.Header.Get("Content-Type") == "application/json"
	h.mu.Lock()
	defer h.mu.Unlock()
	switch r.URL.Path {
	case "/v1/metrics":
		req := pmetricotlp.NewExportRequest()
		if json {
			err = req.UnmarshalJSON(body)
		} else {
			err = req.UnmarshalProto(body)
		}
		h.metrics = append(h.metrics, req.Metrics())
	case "/v1/logs":
		req := plogotlp.NewExportRequest()
		if json {
			err = req.UnmarshalJSON(body)
		} else {
			err = req.UnmarshalProto(body)
		}
		h.logs = append(h.logs, req.Logs())
	default:
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if json {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// diffEndpoint returns the sending options of seed's exporter and what
// its endpoint received: OTLP/gRPC, or OTLP/HTTP in protobuf or JSON.
func diffEndpoint(t *testing.T, seed uint64) (map[string]any, func() ([]pmetric.Metrics, []plog.Logs)) {
	if seed%3 == 0 {
		srv := otlptest.Start(t, otlptest.Options{})
		return map[string]any{"endpoint": srv.Addr(), "tls": map[string]any{"insecure": true}},
			func() ([]pmetric.Metrics, []plog.Logs) { return srv.Metrics(), srv.Logs() }
	}
	h := new(httpReceiver)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	encoding := []string{"", "proto", "json"}[seed%3]
	return map[string]any{"http": map[string]any{"endpoint": srv.URL, "encoding": encoding}},
		func() ([]pmetric.Metrics, []plog.Logs) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.metrics, h.logs
		}
}

// diffConnector makes the analysis of a connector of cfg as the
// connector's factory makes it (deltaqconnector's newObserver), on clk.
func diffConnector(t *testing.T, cfg *deltaqconnector.Config, clk *coretest.Clock, out core.Outputs) *core.Observer {
	t.Helper()
	typ := component.MustNewType("deltaq")
	set := connectortest.NewNopSettings(typ)
	obs, err := core.New(&cfg.Config, core.Settings{
		Kind: "connector", Scope: "github.com/deltaq-otel/deltaq/connector/deltaqconnector", Telemetry: set.TelemetrySettings,
		Layouts: collectorstate.New().Layouts, ID: component.NewID(typ).String(),
		SpanProbes: deltaqconnector.SpanProbes(cfg), StartEvents: &cfg.StartEvents,
		Now: clk.Now, Ticks: clk.C, Ticked: clk.Ticked,
	})
	require.NoError(t, err)
	require.NoError(t, obs.Start(out))
	return obs
}

// TestExporterAgreesWithConnector feeds the same seeded instance spans to
// an exporter, whose output an OTLP/gRPC or OTLP/HTTP endpoint receives, and to the
// connector's analysis of the same options, on clocks ticking alike: the
// metrics and log records of every window (outcomes, observed ΔQ,
// quantiles, QTA, triggers, snapshots, QoO) are the same.
func TestExporterAgreesWithConnector(t *testing.T) {
	// What the seeds brought out, so that they keep covering the output.
	seen := map[string]bool{}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			raw := diffAnalysis(r)

			sending, received := diffEndpoint(t, seed)
			ecfg := createDefaultConfig().(*Config)
			require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(ecfg))
			require.NoError(t, confmap.NewFromStringMap(sending).Unmarshal(ecfg))
			require.NoError(t, confmap.Validate(ecfg))
			ccfg := deltaqconnector.NewFactory().CreateDefaultConfig().(*deltaqconnector.Config)
			require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(ccfg))
			require.NoError(t, ccfg.Validate())

			eclk, cclk := coretest.NewClock(coretest.T0), coretest.NewClock(coretest.T0)
			exp := startExporter(t, ecfg, eclk, nil)
			msink, lsink := new(consumertest.MetricsSink), new(consumertest.LogsSink)
			conn := diffConnector(t, ccfg, cclk, core.Outputs{Metrics: msink, Logs: lsink})

			interval, lag := ecfg.Interval, ecfg.Lag
			const windows = 6
			spans := diffInstances(r, interval, windows)
			ctx := context.Background()
			next := 0
			for w := 1; w <= windows; w++ {
				// What ends before the tick arrives before it, in batches.
				tick := coretest.At(time.Duration(w)*interval + lag)
				for next < len(spans) && spans[next].End.Before(tick) {
					n := min(1+r.IntN(8), len(spans)-next)
					for next+n > len(spans) || spans[next+n-1].End.After(tick) {
						n--
					}
					seed := r.Uint64()
					batch := spans[next : next+n]
					require.NoError(t, exp.obs.ConsumeTraces(ctx, diffTraces(rand.New(rand.NewPCG(seed, 1)), batch)))
					require.NoError(t, conn.ConsumeTraces(ctx, diffTraces(rand.New(rand.NewPCG(seed, 1)), batch)))
					next += n
				}
				eclk.Tick(tick)
				cclk.Tick(tick)
			}
			require.NoError(t, conn.Shutdown(ctx))
			require.NoError(t, exp.shutdown(ctx))

			gotMetrics, gotLogs := received()
			want, got := canonMetrics(msink.AllMetrics()), canonMetrics(gotMetrics)
			require.NotEmpty(t, want)
			require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "metrics of config %v", raw)
			wantLogs := canonLogs(lsink.AllLogs())
			require.Equal(t, strings.Join(wantLogs, "\n"), strings.Join(canonLogs(gotLogs), "\n"), "logs of config %v", raw)
			for _, l := range append(want, wantLogs...) {
				seen[strings.Fields(l)[0]] = true
			}
		})
	}
	for _, name := range []string{
		contract.MetricOutcomes, contract.MetricObserved, contract.MetricQuantile, contract.MetricQTAHolds,
		contract.MetricDivergence, contract.MetricQoOScore, contract.EventTrigger, contract.EventSnapshot,
		contract.MetricWindow,
	} {
		require.True(t, seen[name], "no %s in any window", name)
	}
}
