// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/metric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// windowEnds returns the time of the deltaq.outcomes points (the end of
// their window) of each metrics batch, in the order the batches arrived.
func windowEnds(mds []pmetric.Metrics) []time.Time {
	var out []time.Time
	for _, md := range mds {
		forEachMetric(md, func(m pmetric.Metric) {
			if m.Name() == contract.MetricOutcomes {
				out = append(out, m.Sum().DataPoints().At(0).Timestamp().AsTime().UTC())
			}
		})
	}
	return out
}

// TestTimerClosesWindowsInOrder drives the window timer through its tick
// channel: one tick at 4 s closes the windows [0, 1s) and [1s, 2s) (lag one
// interval), oldest first, and each goes out as its own batch.
func TestTimerClosesWindowsInOrder(t *testing.T) {
	var now atomic.Int64
	now.Store(at(time.Second).UnixNano())
	ticks := make(chan time.Time)
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	set := testSettings(tel, func() time.Time { return time.Unix(0, now.Load()).UTC() })
	set.Ticks = ticks
	o, err := New(testConfig(), set)
	require.NoError(t, err)
	sink := new(consumertest.MetricsSink)
	o.Start(Outputs{Metrics: sink})
	dm := 20 * time.Millisecond
	require.NoError(t, o.ConsumeTraces(context.Background(), instanceTraces(
		span{probe: "p", outcome: contract.Success, end: ms(500), delay: ms(3), dmax: dm, bins: 20},
		span{probe: "p", outcome: contract.Success, end: ms(1500), delay: ms(3), dmax: dm, bins: 20},
	)))
	now.Store(at(3 * time.Second).UnixNano())
	ticks <- at(3 * time.Second)
	require.NoError(t, o.Shutdown(context.Background()))
	// The tick closed [0, 1s) and [1s, 2s); Shutdown flushed [2s, 3s) and
	// [3s, 4s), the current one.
	assert.Equal(t, []time.Time{at(time.Second), at(2 * time.Second), at(3 * time.Second), at(4 * time.Second)}, windowEnds(sink.AllMetrics()))
}

// TestClockTickIsOneTick: coretest.Clock.Tick has the window timer do
// one tick's work, and returns once it is done: the timer reads the clock
// once in it, and not again until the next tick, so that a test that
// moves the clock after a tick is not read by a tick of its own. Tick
// sent its time twice, the second send returning once the timer was back
// in its loop, and the timer ran a second tick then, on whatever clock the
// test had set by the time it read it, beside what the test did next.
func TestClockTickIsOneTick(t *testing.T) {
	clk := coretest.NewClock(at(time.Second))
	var reads atomic.Int64
	set := testSettings(nil, func() time.Time { reads.Add(1); return clk.Now() })
	set.Ticks, set.Ticked = clk.C, clk.Ticked
	o, err := New(testConfig(), set)
	require.NoError(t, err)
	sink := new(consumertest.MetricsSink)
	require.NoError(t, o.Start(Outputs{Metrics: sink}))
	for i := range 3 {
		before := reads.Load()
		clk.Tick(at(time.Duration(3+i) * time.Second))
		assert.Equal(t, int64(1), reads.Load()-before, "the clock reads of tick %d", i)
		assert.Len(t, sink.AllMetrics(), i+2, "the windows closed by tick %d are out when Tick returns (the first closes [0, 1 s) and [1 s, 2 s))", i)
	}
	before := reads.Load()
	require.NoError(t, o.Shutdown(context.Background()))
	assert.Equal(t, int64(1), reads.Load()-before, "the flush's, and no tick's after the last Tick")
}

// refusing is a consumer that refuses everything, counting the calls.
type refusing struct{ calls atomic.Int64 }

func (r *refusing) ConsumeMetrics(context.Context, pmetric.Metrics) error {
	r.calls.Add(1)
	return errors.New("refused")
}
func (*refusing) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// A refused batch is counted as dropped, and neither the traces path nor
// the next windows suffer: every window is offered to the output.
func TestRefusedOutputIsCounted(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	ref := &refusing{}
	h.obs.out.Metrics = ref
	dm := 20 * time.Millisecond
	for w := range 3 {
		h.consume(span{probe: "p", outcome: contract.Success, end: time.Duration(w)*time.Second + ms(500), delay: ms(3), dmax: dm, bins: 20})
		h.obs.tick(at(time.Duration(w+2) * time.Second))
	}
	assert.Equal(t, int64(3), ref.calls.Load(), "one batch per window, each offered")
	assert.Equal(t, int64(3), counter(t, h, "exporter_deltaq_output_dropped", "signal=metrics"))
	assert.Equal(t, int64(3), counter(t, h, "exporter_deltaq_instances", ""))
}

// Each component's self-telemetry carries its kind in its names: the
// connector's are otelcol_connector_deltaq_*, and none is the exporter's.
func TestTelemetryNamesFollowTheKind(t *testing.T) {
	h := newHarnessWith(t, testConfig(), at(time.Second), func(s *Settings) { s.Kind = "connector" })
	h.consume(span{probe: "p", outcome: contract.Success, end: ms(500), delay: ms(3), dmax: 20 * time.Millisecond, bins: 20})
	h.obs.tick(at(2 * time.Second))
	assert.Equal(t, int64(1), counter(t, h, "connector_deltaq_instances", ""))
	assert.Equal(t, int64(1), counter(t, h, "connector_deltaq_windows_closed", ""))
	_, err := h.tel.GetMetric("otelcol_exporter_deltaq_instances")
	assert.Error(t, err, "no exporter instrument in a connector")
}

// Each component's metadata.yaml declares one instrument per field of
// Instruments (and of SpanInstruments in the connector's, of
// SenderInstruments in the exporter's), named as testInstruments names them, and its README and
// generated documentation.md list every one.
func TestMetadataDeclaresEveryInstrument(t *testing.T) {
	declared := regexp.MustCompile(`(?m)^    ([a-z_]+):$`)
	for kind, dir := range map[string]string{"exporter": "../../exporter/deltaqexporter", "connector": "../../connector/deltaqconnector"} {
		meta, err := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
		require.NoError(t, err)
		_, tel, ok := strings.Cut(string(meta), "\ntelemetry:\n")
		require.True(t, ok, "%s/metadata.yaml: no telemetry section", dir)
		var names []string
		for _, m := range declared.FindAllStringSubmatch(tel, -1) {
			names = append(names, "otelcol_"+m[1])
		}
		want := instrumentNames(kind)
		if kind == "connector" {
			want = append(want, spanInstrumentNames()...)
		} else {
			want = append(want, senderInstrumentNames()...)
		}
		slices.Sort(want)
		assert.Equal(t, want, names, "%s/metadata.yaml", dir)
		for _, doc := range []string{"README.md", "documentation.md"} {
			text, err := os.ReadFile(filepath.Join(dir, doc))
			require.NoError(t, err)
			for _, n := range names {
				assert.Contains(t, string(text), n, "%s/%s", dir, doc)
			}
		}
	}
}

// TestInstrumentsOfRefusesAMissingInstrument: a telemetry builder without
// one of the instruments is an error naming it, not a nil instrument.
func TestInstrumentsOfRefusesAMissingInstrument(t *testing.T) {
	var tb struct{ XContributions metric.Int64Counter }
	_, err := InstrumentsOf(&tb, "X")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no XInstances of type metric.Int64Counter")
}

// blockingMetrics is a next consumer that sends synchronously to an
// endpoint that is down: it returns only when its context ends.
type blockingMetrics struct{ calls atomic.Int64 }

func (*blockingMetrics) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *blockingMetrics) ConsumeMetrics(ctx context.Context, _ pmetric.Metrics) error {
	b.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// TestBlockedNextConsumerHoldsNoWindow: a next consumer that blocks (an
// exporter without a sending queue, its endpoint down) gets a tick's output
// for one interval (at least a second); then the send is abandoned and
// counted in output_dropped, and the next tick closes its windows as due.
// It held the timer for the exporter's retries (minutes): no window closed
// and the instances beyond the open ones were dropped as too_early.
func TestBlockedNextConsumerHoldsNoWindow(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	now := at(time.Second)
	set := testSettings(tel, func() time.Time { return now })
	obs, err := New(testConfig(), set)
	require.NoError(t, err)
	blocked := new(blockingMetrics)
	require.NoError(t, obs.Start(Outputs{Metrics: blocked}))
	t.Cleanup(func() { require.NoError(t, obs.Shutdown(context.Background())) })
	h := &harness{t: t, obs: obs, tel: tel}
	for w := range 2 {
		h.consume(span{probe: "p", outcome: contract.Success, end: time.Duration(w+1)*time.Second + ms(100), delay: ms(5), dmax: 50 * time.Millisecond, bins: 50})
		began := time.Now()
		now = at(time.Duration(w+3) * time.Second)
		obs.tick(now)
		if d := time.Since(began); d > 3*time.Second {
			t.Fatalf("tick %d took %v with a blocked next consumer: want about the 1 s deadline", w, d)
		}
	}
	closed := counter(t, h, "exporter_deltaq_windows_closed", "")
	assert.GreaterOrEqual(t, closed, int64(3), "windows 0 to 2 closed")
	assert.Equal(t, closed, blocked.calls.Load(), "each window's metrics sent once")
	assert.Equal(t, closed, counter(t, h, "exporter_deltaq_output_dropped", ""), "every send abandoned")
}

// heldMetrics is a next consumer that holds each send until released (or
// its context ends), then hands it to sink; entered says that a send is
// held.
type heldMetrics struct {
	entered chan struct{}
	release chan struct{}
	sink    *consumertest.MetricsSink
}

func (*heldMetrics) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (h *heldMetrics) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-h.release:
	}
	return h.sink.ConsumeMetrics(ctx, md)
}

// TestShortIntervalBlockedSendDropsNoInstance: a tick's sends get at least
// a second, ten intervals of 100 ms, and the instances that end while a
// blocked next consumer holds the window timer that long still find their
// windows open. The engine kept windows for a timer at most an interval
// late: 0.3 s past the tick, what ended later was dropped as too_early,
// although the README says that no instance is.
func TestShortIntervalBlockedSendDropsNoInstance(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	clk := coretest.NewClock(at(50 * time.Millisecond))
	cfg := testConfig()
	cfg.Interval = 100 * time.Millisecond
	obs, err := New(cfg, testSettings(tel, clk.Now))
	require.NoError(t, err)
	held := &heldMetrics{entered: make(chan struct{}, 1), release: make(chan struct{}), sink: new(consumertest.MetricsSink)}
	require.NoError(t, obs.Start(Outputs{Metrics: held}))
	t.Cleanup(func() { require.NoError(t, obs.Shutdown(context.Background())) })
	h := &harness{t: t, obs: obs, tel: tel, metrics: held.sink}
	s := func(end time.Duration) span {
		return span{probe: "p", outcome: contract.Success, end: end, delay: ms(5), dmax: 50 * time.Millisecond, bins: 50}
	}
	h.consume(s(60 * time.Millisecond))
	ticked := make(chan struct{})
	clk.Set(at(200 * time.Millisecond))
	go func() {
		defer close(ticked)
		obs.tick(at(200 * time.Millisecond))
	}()
	<-held.entered
	// 0.7 s into the held send, an instance that has just ended.
	clk.Set(at(900 * time.Millisecond))
	h.consume(s(850 * time.Millisecond))
	st := obs.Stats()
	assert.Zero(t, st.Dropped.Total(), "dropped %v", st.Dropped)
	assert.Equal(t, int64(2), st.Counted)
	close(held.release)
	<-ticked
	clk.Set(at(time.Second))
	obs.tick(at(time.Second))
	assert.Equal(t, map[string]int64{"success": 2, "timeout": 0, "failure": 0}, outcomeCounts(t, h, "p"))
}

// TestRestartReportsTheFlushedWindowsAgain: an observer stopped mid-window
// flushes the windows open, the current one too; one started again within
// its lag and an interval opens the windows that reach back its lag, and
// reports them again, at the same or earlier times than its predecessor's
// last points: under the same resource (a stable service.instance.id) a
// backend that refuses out-of-order samples refuses them, as the README
// says. The points carry no instance twice: the predecessor counted those
// before its stop, the successor those after its start.
func TestRestartReportsTheFlushedWindowsAgain(t *testing.T) {
	s := span{probe: "p", outcome: contract.Success, delay: ms(5), dmax: 50 * time.Millisecond, bins: 50}
	times := func(h *harness) []time.Time {
		var out []time.Time
		for _, md := range h.metrics.AllMetrics() {
			forEachMetric(md, func(m pmetric.Metric) {
				if m.Name() == contract.MetricOutcomes {
					out = append(out, m.Sum().DataPoints().At(0).Timestamp().AsTime())
				}
			})
		}
		return out
	}
	first := newHarness(t, testConfig(), at(1200*time.Millisecond))
	s.end = ms(1300)
	first.consume(s)
	require.NoError(t, first.obs.Shutdown(context.Background()))
	assert.Equal(t, []time.Time{at(time.Second), at(2 * time.Second)}, times(first), "windows [0 s, 1 s) and [1 s, 2 s) flushed")

	second := newHarness(t, testConfig(), at(1700*time.Millisecond))
	s.end = ms(1800)
	second.consume(s)
	second.obs.tick(at(3 * time.Second))
	assert.Equal(t, []time.Time{at(time.Second), at(2 * time.Second)}, times(second), "the same windows, again")
	assert.Equal(t, map[string]int64{"success": 1, "timeout": 0, "failure": 0}, outcomeCounts(t, second, "p"))
}
