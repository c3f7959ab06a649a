// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// names returns the metric names and the log event names that r received.
func names(r *otlptest.Receiver) (metrics, events map[string]bool) {
	metrics, events = map[string]bool{}, map[string]bool{}
	for _, md := range r.Metrics() {
		ms := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
		for i := 0; i < ms.Len(); i++ {
			metrics[ms.At(i).Name()] = true
		}
	}
	for _, ld := range r.Logs() {
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := 0; i < lrs.Len(); i++ {
			events[lrs.At(i).EventName()] = true
		}
	}
	return metrics, events
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// allMetrics and allEvents are the output contract (internal/contract/output.go).
var (
	allMetrics = sortedNames(contract.MetricCDF, contract.MetricDivergence, contract.MetricDivergenceP, contract.MetricDivergenceStatistic,
		contract.MetricFailureRatio, contract.MetricObserved, contract.MetricOutcomes, contract.MetricQTAMarginMin, contract.MetricQTAMaxFailure,
		contract.MetricQTAPoint, contract.MetricQTASlack, contract.MetricQTASlackMin, contract.MetricQTAViolation, contract.MetricQuantile,
		contract.MetricQTAHolds, contract.MetricBoundsWidth, contract.MetricDivergenceDetectable)
	allEvents = []string{contract.EventSnapshot, contract.EventTrigger}
)

// sortedNames returns the names sorted.
func sortedNames(names ...string) []string {
	slices.Sort(names)
	return names
}

// at: times after a window boundary.
var at = coretest.At

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// withClock has the exporter's observer run on clk.
func withClock(clk *coretest.Clock) exporterOption {
	return func(_ *deltaqExporter, s *core.Settings) { s.Now, s.Ticks, s.Ticked = clk.Now, clk.C, clk.Ticked }
}

// startExporter makes and starts an exporter of cfg with the clock clk and
// the telemetry tel (nil: none kept), in the collector's shared state, as
// the processors of deltaqprocessor.NewFactory.
func startExporter(t *testing.T, cfg *Config, clk *coretest.Clock, tel *componenttest.Telemetry, opts ...exporterOption) *deltaqExporter {
	t.Helper()
	set := exportertest.NewNopSettings(metadata.Type)
	if tel != nil {
		set.TelemetrySettings = tel.NewTelemetrySettings()
	}
	exp, err := newExporter(context.Background(), cfg, set, collectorstate.Collector(), append(opts, withClock(clk))...)
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	return exp
}

// contractConfig sets in cfg the diagram e2e = a -> b, a QTA with its
// triggers on e2e and snapshots of one window before a trigger: a window
// that breaks the QTA brings out every metric and event of the output
// contract.
func contractConfig(cfg *Config) *Config {
	cfg.Diagram = "e2e = a -> b;"
	cfg.Probes = map[string]analysis.ProbeConfig{"e2e": {
		QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 8 * time.Millisecond, P: 0.5}}, MaxFailure: 0.3},
		Triggers: analysis.Triggers{QTA: true, Failure: true},
	}}
	cfg.Snapshot.Before, cfg.Snapshot.After = 1, 0
	return cfg
}

// contractWindows feeds an exporter of contractConfig two windows of
// instances, the second of which breaks the QTA of e2e, and closes them.
func contractWindows(t *testing.T, exp *deltaqExporter, clk *coretest.Clock) {
	t.Helper()
	ctx := context.Background()
	for w := range 2 {
		base := time.Duration(w) * time.Second
		for _, p := range []string{"a", "b", "e2e"} {
			require.NoError(t, exp.obs.ConsumeTraces(ctx, instances(p, base+ms(100), base+ms(200), base+ms(300))))
		}
		if w == 1 {
			fail := coretest.Span{Probe: "e2e", Outcome: contract.Failure, Start: at(base + ms(390)), End: at(base + ms(400)),
				DMax: 20 * time.Millisecond, Bins: 20}
			require.NoError(t, exp.obs.ConsumeTraces(ctx, coretest.Traces(fail, fail, fail, fail)))
		}
	}
	clk.Tick(at(2 * time.Second))
	clk.Tick(at(3 * time.Second))
}

// grpcConfig is a valid configuration sending to addr over OTLP/gRPC
// without TLS.
func grpcConfig(addr string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = addr
	cfg.ClientConfig.TLS.Insecure = true
	return cfg
}

// instances returns traces of one success of probe p per end time, 3 ms
// long, in a 20 × 1 ms layout.
func instances(p string, ends ...time.Duration) ptrace.Traces {
	specs := make([]coretest.Span, len(ends))
	for i, e := range ends {
		specs[i] = coretest.Span{Probe: p, Outcome: contract.Success, Start: at(e - ms(3)), End: at(e), DMax: 20 * time.Millisecond, Bins: 20}
	}
	return coretest.Traces(specs...)
}

// TestPipelineToOTLPEndpoint runs processor → exporter → OTLP/gRPC endpoint:
// the deltaq processor maps plain spans to outcome instances, the exporter
// closes windows on its timer and a local OTLP server receives every
// metric and event of the output contract.
func TestPipelineToOTLPEndpoint(t *testing.T) {
	srv := otlptest.Start(t, otlptest.Options{})

	cfg := contractConfig(grpcConfig(srv.Addr()))
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, nil)
	host := componenttest.NewNopHost()
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()

	// The processor, configured from YAML like a collector's.
	pf := deltaqprocessor.NewFactory()
	pcfg := pf.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": []any{
		map[string]any{"name": "a", "dmax": "20ms", "bins": 20},
		map[string]any{"name": "b", "dmax": "20ms", "bins": 20},
		map[string]any{"name": "e2e", "dmax": "20ms", "bins": 20},
	}}).Unmarshal(pcfg))
	proc, err := pf.CreateTraces(context.Background(), processortest.NewNopSettings(pf.Type()), pcfg, consumer.Traces(mustTraces(exp.obs.ConsumeTraces)))
	require.NoError(t, err)
	require.NoError(t, proc.Start(context.Background(), host))
	defer func() { require.NoError(t, proc.Shutdown(context.Background())) }()

	// Window 1 in line with the diagram; window 2 slow and failing.
	var id byte
	plain := func(name string, end, delay time.Duration, failed bool) ptrace.Traces {
		id++
		td := ptrace.NewTraces()
		sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName(name)
		sp.SetTraceID(pcommon.TraceID{id, 1})
		sp.SetSpanID(pcommon.SpanID{id, 2})
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(at(end - delay)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(at(end)))
		if failed {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		return td
	}
	send := func(td ptrace.Traces) { require.NoError(t, proc.ConsumeTraces(context.Background(), td)) }
	for w := range 2 {
		base := time.Duration(w) * time.Second
		for i := range 4 {
			end := base + ms(100+100*float64(i))
			send(plain("a", end, ms(2.5), false))
			send(plain("b", end, ms(3.5), false))
		}
		if w == 0 {
			send(plain("e2e", base+ms(500), ms(5.5), false))
			send(plain("e2e", base+ms(600), ms(6.5), false))
		} else {
			send(plain("e2e", base+ms(500), ms(15.5), false))
			send(plain("e2e", base+ms(600), ms(15.5), true))
			send(plain("e2e", base+ms(700), ms(25), false)) // beyond dMax: a timeout
		}
	}
	clk.Tick(at(2 * time.Second))
	clk.Tick(at(3 * time.Second))

	// The timeout only turns a hang into a failure.
	srv.Until(t, "every metric and event", 30*time.Second, func() bool {
		m, e := names(srv)
		return len(m) == len(allMetrics) && len(e) == len(allEvents)
	})
	m, e := names(srv)
	assert.Equal(t, allMetrics, sortedKeys(m))
	assert.Equal(t, allEvents, sortedKeys(e))
}

func mustTraces(f func(context.Context, ptrace.Traces) error) consumer.Traces {
	c, err := consumer.NewTraces(f)
	if err != nil {
		panic(err)
	}
	return c
}

// TestUnreachableEndpointNeitherBlocksNorCrashes: with nothing listening,
// the sender retries in the background, its queue fills, and further
// windows are dropped and counted. Neither ConsumeTraces nor the window
// timer waits for the network, and Shutdown returns.
func TestUnreachableEndpointNeitherBlocksNorCrashes(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // nothing listens there now

	cfg := grpcConfig(addr)
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = time.Minute
	q := cfg.QueueConfig.Get()
	q.QueueSize, q.NumConsumers = 2, 1

	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	clk := coretest.NewClock(at(time.Second))
	exp := startExporter(t, cfg, clk, tel)

	done := make(chan struct{})
	go func() {
		defer close(done)
		for w := range 20 {
			base := time.Duration(w) * time.Second
			_ = exp.obs.ConsumeTraces(context.Background(), instances("p", base+ms(100)))
			clk.Tick(at(base + 2*time.Second))
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ConsumeTraces or the window timer blocked on an unreachable endpoint")
	}

	dropped := telemetrytest.Sum(t, tel, "otelcol_exporter_deltaq_output_dropped")
	require.NotEmpty(t, dropped, "no window was dropped although the queue holds 2 and the endpoint is down")
	// 20 windows, one in the sender, two in the queue: at least 17 dropped.
	assert.GreaterOrEqual(t, dropped["signal=metrics"], int64(17), "metrics batches dropped and counted")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, exp.shutdown(ctx))
}

// fingerprint adds up a hash of every data point of md (metric name,
// attributes, timestamp and value) and counts the points. Two sets of
// requests carry the same points, each once, when their counts and sums
// agree: a lost point and a duplicated one would have to have the same
// 64-bit hash to cancel out.
func fingerprint(md pmetric.Metrics) (n int, sum uint64) {
	h := fnv.New64a()
	var buf [8]byte
	point := func(name string, attrs pcommon.Map, ts pcommon.Timestamp, v uint64) {
		h.Reset()
		h.Write([]byte(name))
		for k, a := range attrs.All() {
			h.Write([]byte(k))
			h.Write([]byte(a.AsString()))
		}
		binary.LittleEndian.PutUint64(buf[:], uint64(ts))
		h.Write(buf[:])
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
		sum += h.Sum64()
		n++
	}
	eachPoint(md, point)
	return n, sum
}

// eachPoint calls point for every number and histogram data point of md
// with its metric's name, its attributes, its timestamp and its value (a
// number's bits, a histogram's count).
func eachPoint(md pmetric.Metrics, point func(name string, attrs pcommon.Map, ts pcommon.Timestamp, v uint64)) {
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				switch m.Type() {
				case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
					var dps pmetric.NumberDataPointSlice
					if m.Type() == pmetric.MetricTypeSum {
						dps = m.Sum().DataPoints()
					} else {
						dps = m.Gauge().DataPoints()
					}
					for _, dp := range dps.All() {
						point(m.Name(), dp.Attributes(), dp.Timestamp(), math.Float64bits(dp.DoubleValue())^uint64(dp.IntValue()))
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						point(m.Name(), dp.Attributes(), dp.Timestamp(), dp.Count())
					}
				}
			}
		}
	}
}

// fingerprints is the fingerprint of the metrics an OTLP/gRPC endpoint
// received, taken by its Metrics hook.
type fingerprints struct {
	mu     sync.Mutex
	points int
	sum    uint64
}

// hook fingerprints a request and accepts it.
func (f *fingerprints) hook(md pmetric.Metrics) otlptest.Reply {
	n, sum := fingerprint(md)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.points += n
	f.sum += sum
	return otlptest.Reply{}
}

func (f *fingerprints) state() (points int, sum uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.points, f.sum
}

// countingMetrics wraps the metrics sender and fingerprints each request
// handed to it, before it is queued.
type countingMetrics struct {
	consumer.Metrics
	requests, points int
	sum              uint64
}

// counting has the exporter hand its metrics to c, which passes them on to
// the sender.
func counting(c *countingMetrics) exporterOption {
	return func(e *deltaqExporter, _ *core.Settings) {
		e.wrap = func(out core.Outputs) core.Outputs {
			c.Metrics = out.Metrics
			out.Metrics = c
			return out
		}
	}
}

func (c *countingMetrics) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	n, sum := fingerprint(md)
	c.requests++
	c.points += n
	c.sum += sum
	return c.Metrics.ConsumeMetrics(ctx, md)
}

// TestLargeWindowReachesGRPCServerInPieces: one window of 1000 probes ×
// 1000 bins, at the default cdf_points and at cdf_points 0 (every bin edge
// of the observed curve and of the band: about 390 MB of metrics, 4 million
// points), reaches a real OTLP/gRPC server with gRPC's default 4 MiB
// receive limit in requests of at most max_request_bytes, and every data
// point the exporter produced arrives exactly once. As one request the
// window would have been refused outright.
func TestLargeWindowReachesGRPCServerInPieces(t *testing.T) {
	for _, cdfPoints := range []int{core.DefaultCDFPoints, 0} {
		t.Run(fmt.Sprintf("cdf_points=%d", cdfPoints), func(t *testing.T) {
			// Every probe's curves at every bin edge: a quarter of the
			// probes still makes a window of about 100 MB in some 30
			// requests, where all of them held the test at 3 GB of memory
			// (7 under the race detector).
			probes := 1000
			if cdfPoints == 0 {
				if testing.Short() {
					t.Skip("about 100 MB of metrics")
				}
				probes = 250
			}
			// gRPC's default receive limit of 4 MiB; only the fingerprint
			// of what arrives is kept.
			got := &fingerprints{}
			srv := otlptest.Start(t, otlptest.Options{CountOnly: true, Metrics: got.hook})
			cfg := grpcConfig(srv.Addr())
			cfg.CDFPoints = cdfPoints
			// The sending queue counts requests: it must hold the
			// window's pieces (about 35 at cdf_points 0).
			cfg.QueueConfig.Get().QueueSize = 256
			// A request must not time out and be sent again: under the race
			// detector a 4 MiB request can take longer than the default 5 s
			// to cross, arrive, and be retried (counted twice).
			cfg.TimeoutConfig.Timeout = 2 * time.Minute
			const bins = 1000
			cfg.MaxProbes = probes
			cfg.Probes = make(map[string]analysis.ProbeConfig, probes)
			for i := range probes {
				cfg.Probes[fmt.Sprintf("probe_%04d", i)] = analysis.ProbeConfig{DMax: time.Second, Bins: bins}
			}
			tel := componenttest.NewTelemetry()
			defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
			sent := &countingMetrics{}
			clk := coretest.NewClock(at(time.Second))
			exp := startExporter(t, cfg, clk, tel, counting(sent))

			var specs []coretest.Span
			for i := range probes {
				for k := range 20 {
					end := at(ms(float64(100 + 10*k)))
					specs = append(specs, coretest.Span{Probe: fmt.Sprintf("probe_%04d", i), Outcome: contract.Success,
						Start: end.Add(-ms(float64(1 + (i+37*k)%990))), End: end, DMax: time.Second, Bins: bins})
				}
			}
			require.NoError(t, exp.obs.ConsumeTraces(context.Background(), coretest.Traces(specs...)))
			clk.Tick(at(2 * time.Second))

			require.Greater(t, sent.requests, 1, "the window went in several requests")
			srv.WaitFor(t, otlptest.Counts{DataPoints: sent.points}, 2*time.Minute)
			// No deadline, as the collector's own stop: the windows the
			// stop closes are as large, and a shutdown whose context ends
			// abandons what is still queued (under the race detector
			// their pieces took longer than a minute).
			require.NoError(t, exp.shutdown(context.Background()))

			requests := srv.Counts().Requests
			points, sum := got.state()
			assert.Equal(t, sent.requests, requests, "every request arrived once")
			assert.Equal(t, sent.points, points, "every data point arrived")
			assert.Equal(t, sent.sum, sum, "each data point exactly once")
			// The observed curve alone has a point per bin edge at
			// cdf_points 0.
			minPoints := probes * (3 + 1 + 32)
			if cdfPoints == 0 {
				minPoints = probes * (3 + 1 + bins)
			}
			assert.GreaterOrEqual(t, points, minPoints)
			_, err := tel.GetMetric("otelcol_exporter_deltaq_output_dropped")
			assert.Error(t, err, "no request was refused by the queue")
			_, err = tel.GetMetric("otelcol_exporter_deltaq_output_oversized")
			assert.Error(t, err, "no point was too large")
		})
	}
}

// TestRefusedWindowDoesNotStopLaterWindows: an endpoint that refuses a
// window's request as too large (ResourceExhausted without RetryInfo, here
// because its receive limit is 16 KiB, below max_request_bytes) costs that
// request only: the otlp_grpc exporter does not retry ResourceExhausted
// without RetryInfo (shouldRetry in its otlp.go, following the OTLP/gRPC
// specification, "Failures"). Retried as transient, the request would hold
// the only sender for the whole retry period and no later window arrive.
func TestRefusedWindowDoesNotStopLaterWindows(t *testing.T) {
	srv := otlptest.Start(t, otlptest.Options{ServerOptions: []grpc.ServerOption{grpc.MaxRecvMsgSize(16 << 10)}})
	cfg := grpcConfig(srv.Addr())
	cfg.RetryConfig.InitialInterval = time.Second
	cfg.RetryConfig.MaxElapsedTime = 5 * time.Minute
	cfg.QueueConfig.Get().NumConsumers = 1
	// Window 3's request must not time out on a loaded machine and be sent
	// again (counted twice).
	cfg.TimeoutConfig.Timeout = time.Minute
	// Probe p has no configuration: it takes its layout from its span and
	// is forgotten after a second without instances. Probe q is small and
	// configured: it is in every window.
	cfg.Probes = map[string]analysis.ProbeConfig{"q": {DMax: time.Second, Bins: 10}}
	cfg.ProbeIdleTimeout = time.Second
	clk := coretest.NewClock(at(time.Second))
	tel := componenttest.NewTelemetry()
	exp := startExporter(t, cfg, clk, tel)
	defer func() { require.NoError(t, exp.shutdown(context.Background())) }()

	// Windows 1 and 2 hold p's histogram of 1000 bins, the most a probe
	// takes from its spans (deltaq.MaxThesisBins): with the stream of its
	// successes (deltaq.observed), 33 and 28 KB. p is forgotten after
	// window 2; window 3 holds q's series only, about 3.5 KB. (With 4000
	// bins, as this test once had, p's instance was refused as invalid,
	// every window was small, and the test passed only when it counted the
	// requests before the second arrived.)
	require.NoError(t, exp.obs.ConsumeTraces(context.Background(), coretest.Traces(
		coretest.Span{Probe: "p", Outcome: contract.Success, Start: at(ms(97)), End: at(ms(100)), DMax: time.Second, Bins: deltaq.MaxThesisBins},
		coretest.Span{Probe: "q", Outcome: contract.Success, Start: at(ms(97)), End: at(ms(100)), DMax: time.Second, Bins: 10})))
	_, err := tel.GetMetric("otelcol_exporter_deltaq_instances_dropped")
	require.Error(t, err, "both instances are counted")
	clk.Tick(at(2 * time.Second))
	clk.Tick(at(3 * time.Second))
	clk.Tick(at(4 * time.Second))

	// The one sender sends the windows in order: once window 3, the first
	// without p, has arrived, windows 1 and 2 were answered. Without it
	// after 20 s, the refused request holds the sender.
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(srv.Metrics(), func(md pmetric.Metrics) bool { return !carriesProbe(md, "p") })
	}, 20*time.Second, 10*time.Millisecond, "window 3 did not arrive")
	got := srv.Metrics()
	assert.Len(t, got, 1, "window 3 arrived, windows 1 and 2 were refused and not retried")
	for _, md := range got {
		assert.False(t, carriesProbe(md, "p"), "a window of p was accepted")
	}
}

// carriesProbe reports whether a data point of md has deltaq.probe = name.
func carriesProbe(md pmetric.Metrics, name string) bool {
	found := false
	eachPoint(md, func(_ string, attrs pcommon.Map, _ pcommon.Timestamp, _ uint64) {
		if v, ok := attrs.Get(contract.AttrProbe); ok && v.Str() == name {
			found = true
		}
	})
	return found
}

// TestPartialSuccessIsLoggedBySender: an endpoint that accepts a request but
// rejects some of its items (an OTLP partial success) costs those items, and
// the sender says so at warn level with the count (the otlp_grpc exporter's
// "Partial success response"), naming itself as its metrics do
// (otlp_grpc/deltaq_metrics, otlp_grpc/deltaq_logs): the two senders share
// the exporter's logger, and the warning of one could not be told from the
// other's.
func TestPartialSuccessIsLoggedBySender(t *testing.T) {
	srv := otlptest.Start(t, otlptest.Options{
		Metrics: func(pmetric.Metrics) otlptest.Reply { return otlptest.Reply{Rejected: 3, Message: "3 points refused"} },
		Logs:    func(plog.Logs) otlptest.Reply { return otlptest.Reply{Rejected: 1, Message: "1 record refused"} },
	})
	zc, logs := observer.New(zapcore.WarnLevel)
	cfg := contractConfig(grpcConfig(srv.Addr()))
	clk := coretest.NewClock(at(time.Second))
	set := exportertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.Logger = zap.New(zc)
	exp, err := newExporter(context.Background(), cfg, set, collectorstate.Collector(), withClock(clk))
	require.NoError(t, err)
	require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
	contractWindows(t, exp, clk)
	srv.Until(t, "a window's logs", 30*time.Second, func() bool { return srv.Counts().LogRecords > 0 })
	require.NoError(t, exp.shutdown(context.Background()))

	partial := logs.FilterMessage("Partial success response").All()
	require.NotEmpty(t, partial, "the partial successes were logged")
	got := map[string]int64{}
	for _, e := range partial {
		f := e.ContextMap()
		switch f["exporter"] {
		case "otlp_grpc/deltaq_metrics":
			assert.Equal(t, int64(3), f["dropped_data_points"], "the metrics sender's warning")
		case "otlp_grpc/deltaq_logs":
			assert.Equal(t, int64(1), f["dropped_log_records"], "the logs sender's warning")
		default:
			t.Errorf("a partial success logged without its sender: %v", f)
			continue
		}
		got[f["exporter"].(string)]++
	}
	assert.Equal(t, int64(srv.Counts().Requests), got["otlp_grpc/deltaq_metrics"]+got["otlp_grpc/deltaq_logs"],
		"one warning per request")
	assert.Positive(t, got["otlp_grpc/deltaq_logs"], "the logs sender's warnings")
	assert.Positive(t, got["otlp_grpc/deltaq_metrics"], "the metrics sender's warnings")
}

// TestShutdownSendsOpenWindow: at shutdown the window still open, partial
// though it is, is closed and sent before Shutdown returns, its instances
// counted; and against an endpoint that fails every request, Shutdown does
// not wait out the retries (retry_on_failure::max_elapsed_time, here an
// hour): the senders stop retrying first and give each queued request one
// more attempt.
func TestShutdownSendsOpenWindow(t *testing.T) {
	t.Run("endpoint up", func(t *testing.T) {
		srv := otlptest.Start(t, otlptest.Options{})
		clk := coretest.NewClock(at(time.Second))
		exp := startExporter(t, grpcConfig(srv.Addr()), clk, nil)
		// Three successes in the current window, [1 s, 2 s): no tick
		// closes it.
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", time.Second+ms(100), time.Second+ms(200), time.Second+ms(300))))
		require.NoError(t, exp.shutdown(context.Background()))
		var successes int64
		for _, md := range srv.Metrics() {
			eachPoint(md, func(name string, attrs pcommon.Map, _ pcommon.Timestamp, v uint64) {
				oc, _ := attrs.Get(contract.AttrOutcome)
				if name == contract.MetricOutcomes && oc.Str() == contract.Success {
					successes = max(successes, int64(v)) // an integer sum (eachPoint: its value); cumulative: its last value
				}
			})
		}
		assert.Equal(t, int64(3), successes, "the open window's successes arrived before Shutdown returned")
	})
	t.Run("endpoint failing", func(t *testing.T) {
		var attempts atomic.Int64
		srv := otlptest.Start(t, otlptest.Options{Metrics: func(pmetric.Metrics) otlptest.Reply {
			attempts.Add(1)
			return otlptest.Reply{Err: status.Error(codes.Unavailable, "down")}
		}})
		cfg := grpcConfig(srv.Addr())
		cfg.RetryConfig.InitialInterval, cfg.RetryConfig.MaxInterval, cfg.RetryConfig.MaxElapsedTime = time.Hour, time.Hour, time.Hour
		clk := coretest.NewClock(at(time.Second))
		exp := startExporter(t, cfg, clk, nil)
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", ms(100))))
		clk.Tick(at(2 * time.Second)) // window [0 s, 1 s): sent, refused, waiting an hour to retry
		require.Eventually(t, func() bool { return attempts.Load() >= 1 }, 10*time.Second, time.Millisecond)
		require.NoError(t, exp.obs.ConsumeTraces(context.Background(), instances("p", time.Second+ms(100))))
		done := make(chan error, 1)
		go func() { done <- exp.shutdown(context.Background()) }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("Shutdown waits for the senders' retries")
		}
		// The open window was attempted once more at least: the first
		// window's retry is abandoned, the last window sent once.
		assert.GreaterOrEqual(t, attempts.Load(), int64(2))
	})
}
