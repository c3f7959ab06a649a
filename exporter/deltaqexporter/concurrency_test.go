// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// sinkRig is an exporter as the collector makes it (exporterhelper around
// it), whose windows close on clk and whose metrics go to sink rather
// than to its senders.
type sinkRig struct {
	clk    *coretest.Clock
	sink   *consumertest.MetricsSink
	exp    *deltaqExporter
	traces exporter.Traces
}

func newSinkRig(t *testing.T) *sinkRig {
	t.Helper()
	r := &sinkRig{clk: coretest.NewClock(at(time.Second)), sink: new(consumertest.MetricsSink)}
	toSink := func(e *deltaqExporter, _ *core.Settings) {
		e.wrap = func(core.Outputs) core.Outputs { return core.Outputs{Metrics: r.sink} }
	}
	cfg := grpcConfig("127.0.0.1:1") // never sent to
	set := exportertest.NewNopSettings(metadata.Type)
	var err error
	r.exp, err = newExporter(context.Background(), cfg, set, collectorstate.New(), toSink, withClock(r.clk))
	require.NoError(t, err)
	r.traces, err = wrapTraces(context.Background(), set, cfg, r.exp)
	require.NoError(t, err)
	require.NoError(t, r.traces.Start(context.Background(), componenttest.NewNopHost()))
	return r
}

// send sends batches of instances ending at the clock's time from senders
// goroutines, rounds each (until stop is closed when rounds is 0), and
// counts them in sent.
func (r *sinkRig) send(t *testing.T, senders, rounds int, stop <-chan struct{}, sent *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; rounds == 0 || i < rounds; i++ {
				select {
				case <-stop:
					return
				default:
				}
				end := r.clk.Now().Sub(coretest.T0)
				assert.NoError(t, r.traces.ConsumeTraces(context.Background(), instances("p", end, end-ms(1), end-ms(2), end-ms(3))))
				sent.Add(4)
			}
		}()
	}
	return &wg
}

// drive ticks the clock by 100 ms steps until done is closed.
func (r *sinkRig) drive(done <-chan struct{}) {
	now := r.clk.Now()
	for {
		select {
		case <-done:
			return
		default:
		}
		now = now.Add(100 * time.Millisecond)
		r.clk.Tick(now)
	}
}

// lastTotal returns the last cumulative outcome total of probe p among
// the metrics, and the ends of its windows in the order emitted.
func lastTotal(mds []pmetric.Metrics, p string) (total int64, ends []int64) {
	for _, md := range mds {
		rms := md.ResourceMetrics()
		for i := range rms.Len() {
			sms := rms.At(i).ScopeMetrics()
			for j := range sms.Len() {
				ms := sms.At(j).Metrics()
				for k := range ms.Len() {
					if ms.At(k).Name() != contract.MetricOutcomes {
						continue
					}
					dps := ms.At(k).Sum().DataPoints()
					var sum int64
					for l := range dps.Len() {
						if v, _ := dps.At(l).Attributes().Get(contract.AttrProbe); v.Str() == p {
							sum += dps.At(l).IntValue()
						}
					}
					total = sum
					ends = append(ends, int64(dps.At(0).Timestamp()))
				}
			}
		}
	}
	return total, ends
}

// TestConcurrentSpansAndWindows: instances arrive from several goroutines
// while the window timer closes windows; the exporter then shuts down.
// Every instance is counted or dropped once, each window is emitted once,
// and the last cumulative outcomes are every instance counted.
func TestConcurrentSpansAndWindows(t *testing.T) {
	r := newSinkRig(t)
	var sent atomic.Int64
	wg := r.send(t, 4, 400, nil, &sent)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	r.drive(done)
	require.NoError(t, r.traces.Shutdown(context.Background()))

	st := r.exp.obs.Stats()
	var dropped int64
	for _, n := range st.Dropped {
		dropped += n
	}
	assert.Equal(t, sent.Load(), st.Counted+dropped, "every instance counted or dropped, once")
	total, ends := lastTotal(r.sink.AllMetrics(), "p")
	assert.Equal(t, st.Counted, total, "the last cumulative outcomes are every instance counted")
	for i := 1; i < len(ends); i++ {
		assert.Less(t, ends[i-1], ends[i], "each window emitted once, in order")
	}
}

// TestShutdownWhileSpansFlow: the exporter shuts down while instances
// still arrive and its timer runs: the shutdown returns with its
// goroutines stopped, nothing is emitted after it, and the calls that come
// after it neither fail nor panic.
func TestShutdownWhileSpansFlow(t *testing.T) {
	r := newSinkRig(t)
	var sent atomic.Int64
	stop := make(chan struct{})
	wg := r.send(t, 3, 0, stop, &sent)
	steps := make(chan struct{})
	go func() { time.Sleep(200 * time.Millisecond); close(steps) }()
	r.drive(steps)
	require.NoError(t, r.traces.Shutdown(context.Background()))
	emitted := len(r.sink.AllMetrics())
	time.Sleep(50 * time.Millisecond) // instances keep coming
	close(stop)
	wg.Wait()
	assert.Equal(t, emitted, len(r.sink.AllMetrics()), "nothing is emitted after the shutdown")
	_, ends := lastTotal(r.sink.AllMetrics(), "p")
	for i := 1; i < len(ends); i++ {
		assert.Less(t, ends[i-1], ends[i], "each window emitted once, in order")
	}
}
