// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// idOf returns the trace and span ids of instance n (> 0).
func idOf(n uint64) (pcommon.TraceID, pcommon.SpanID) {
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n)
	return tid, sid
}

// jobSpans returns spans of the matched configuration's probe job, of
// instances first, first+1, …, each lasting dur and ending at end.
func jobSpans(first uint64, n int, end time.Time, dur time.Duration) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("shop-%d", first%3))
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	for i := range n {
		sp := spans.AppendEmpty()
		sp.SetName("job")
		tid, sid := idOf(first + uint64(i))
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(end.Add(-dur)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	}
	return td
}

// jobStarts returns the start events of job's instances first, first+1, …,
// started at start.
func jobStarts(first uint64, n int, start time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", fmt.Sprintf("shop-%d", first%3))
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		lr := lrs.AppendEmpty()
		lr.SetEventName(contract.StartEventName)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(start))
		tid, sid := idOf(first + uint64(i))
		lr.SetTraceID(tid)
		lr.SetSpanID(sid)
		lr.Attributes().PutStr(contract.AttrProbe, "job")
	}
	return ld
}

// windowEnds returns the end times of the windows of probe job among the
// metrics, in the order they were emitted.
func windowEnds(mds []pmetric.Metrics) []pcommon.Timestamp {
	var ends []pcommon.Timestamp
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
				if p.Str() == "job" && oc.Str() == contract.Success {
					ends = append(ends, dps.At(j).Timestamp())
				}
			}
		}
	}
	return ends
}

// sum returns the sum of the values of m.
func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// stream is a load on a connector's traces and logs inputs from several
// goroutines at once, each instance of its own ids: a span for every
// instance, a start event for one in two (before or after its span, as
// the two inputs race), and start events whose span never comes.
type stream struct {
	next  atomic.Uint64
	spans atomic.Int64
}

// send sends batches of spans and start events until stop is closed, or
// rounds batches each when rounds > 0, from senders goroutines, with the
// clock of r.
func (s *stream) send(t *testing.T, r *startRig, senders, rounds int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; rounds == 0 || i < rounds; i++ {
				select {
				case <-stop:
					return
				default:
				}
				const n = 8
				first := s.next.Add(2*n) - 2*n + 1
				now := r.clk.Now()
				dur := 20 * time.Millisecond
				if i%5 == g%5 {
					dur = 300 * time.Millisecond // longer than job's dMax: a timeout
				}
				starts := jobStarts(first, n/2, now.Add(-dur))
				// Instances first+n … first+2n−1 have a start event and no
				// span: they time out.
				orphans := jobStarts(first+n, n, now.Add(-time.Millisecond))
				if g%2 == 0 {
					assert.NoError(t, r.logs.ConsumeLogs(context.Background(), starts))
				}
				assert.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(first, n, now, dur)))
				s.spans.Add(n)
				if g%2 == 1 {
					assert.NoError(t, r.logs.ConsumeLogs(context.Background(), starts))
				}
				assert.NoError(t, r.logs.ConsumeLogs(context.Background(), orphans))
			}
		}()
	}
	return &wg
}

// TestConcurrentSpansStartsAndTimers: spans and start events arrive from
// several goroutines while the window timer closes windows and the
// timeout timer counts timeouts. Every span and every timed-out start event
// is accounted for exactly once: counted in a window, dropped (by reason),
// or late (its instance's timeout was counted); every window is emitted
// once, the open ones at shutdown, and the last cumulative outcomes are
// the instances counted.
func TestConcurrentSpansStartsAndTimers(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	var s stream
	wg := s.send(t, r, 4, 40, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	step := 0
loop:
	for {
		select {
		case <-done:
			break loop
		default:
		}
		step++
		now := at(time.Second + time.Duration(step)*50*time.Millisecond)
		r.expire(now)
		if step%4 == 0 {
			r.clk.Tick(now)
		}
	}
	r.expire(r.clk.Now().Add(time.Second))
	r.shutdown(t)

	obs := r.traces.(*deltaqConnector).shared.obs
	st := obs.Stats()
	var dropped int64
	for _, n := range st.Dropped {
		dropped += n
	}
	timeouts := sum(counterByAttr(t, r.tel, "start_timeouts", "probe"))
	late := sum(counterByAttr(t, r.tel, "late_spans", "probe"))
	require.Positive(t, timeouts)
	assert.Equal(t, s.spans.Load()+timeouts, st.Counted+dropped+late,
		"every span counted, dropped or late, and every timeout counted, once")
	assert.Equal(t, st.Counted, sum(probeOutcomes(r.sink.AllMetrics())["job"]),
		"the last cumulative outcomes are every instance counted")
	ends := windowEnds(r.sink.AllMetrics())
	for i := 1; i < len(ends); i++ {
		assert.Less(t, ends[i-1], ends[i], "each window emitted once, in order")
	}
}

// drive moves r's clock on by 50 ms steps, counting timeouts at each and
// closing windows at every fourth, until done is closed.
func drive(r *startRig, from time.Time, done <-chan struct{}) time.Time {
	now := from
	for step := 1; ; step++ {
		select {
		case <-done:
			return now
		default:
		}
		now = now.Add(50 * time.Millisecond)
		r.expire(now)
		if step%4 == 0 {
			r.clk.Tick(now)
		}
	}
}

// TestShutdownWhileSpansFlow: the connector shuts down while spans and
// start events still arrive and its timers run: the shutdown returns with
// every goroutine of the connector stopped, emits each open window once,
// and the calls that come after it neither fail nor panic.
func TestShutdownWhileSpansFlow(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	var s stream
	stop := make(chan struct{})
	wg := s.send(t, r, 3, 0, stop)
	steps := make(chan struct{})
	go func() { time.Sleep(200 * time.Millisecond); close(steps) }()
	drive(r, at(time.Second), steps)
	n := len(r.sink.AllMetrics())
	r.shutdown(t)
	emitted := len(r.sink.AllMetrics())
	time.Sleep(50 * time.Millisecond) // spans keep coming
	close(stop)
	wg.Wait()
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(1<<40, 4, r.clk.Now(), time.Millisecond)))
	require.NoError(t, r.logs.ConsumeLogs(context.Background(), jobStarts(1<<41, 4, r.clk.Now())))
	assert.Greater(t, emitted, n, "the open windows are emitted at shutdown")
	assert.Equal(t, emitted, len(r.sink.AllMetrics()), "nothing is emitted after the shutdown")
	ends := windowEnds(r.sink.AllMetrics())
	for i := 1; i < len(ends); i++ {
		assert.Less(t, ends[i-1], ends[i], "each window emitted once, in order")
	}
}

// TestReloadWhileSpansFlow: a configuration reload hands the connector's
// windows and instances in flight to its successor between two streams of
// spans and start events, each from several goroutines while the timers
// run: the successor's cumulative outcomes go on from its predecessor's,
// and every span and timed-out start event of both is accounted for once.
func TestReloadWhileSpansFlow(t *testing.T) {
	st := collectorstate.New()
	st.Reload = reload.New()
	old := newStartRig(t, loadConfig(t, "matched"), st)
	var s stream
	wg := s.send(t, old, 3, 20, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	now := drive(old, at(time.Second), done)
	st.Reload.Requested()
	old.shutdown(t)

	nu := newStartRig(t, loadConfig(t, "matched"), st)
	nu.clk.Set(now)
	wg = s.send(t, nu, 3, 20, nil)
	done = make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	now = drive(nu, now, done)
	nu.expire(now.Add(time.Second))
	nu.shutdown(t)

	stats := func(r *startRig) (counted, dropped int64) {
		st := r.traces.(*deltaqConnector).shared.obs.Stats()
		for _, n := range st.Dropped {
			dropped += n
		}
		return st.Counted, dropped
	}
	oc, od := stats(old)
	nc, nd := stats(nu)
	timeouts := sum(counterByAttr(t, old.tel, "start_timeouts", "probe")) + sum(counterByAttr(t, nu.tel, "start_timeouts", "probe"))
	late := sum(counterByAttr(t, old.tel, "late_spans", "probe")) + sum(counterByAttr(t, nu.tel, "late_spans", "probe"))
	assert.Equal(t, s.spans.Load()+timeouts, oc+od+nc+nd+late,
		"every span counted, dropped or late, and every timeout counted, once, across the reload")
	assert.Equal(t, oc+nc, sum(counterByAttr(t, old.tel, "instances", ""))+sum(counterByAttr(t, nu.tel, "instances", "")),
		"the self-telemetry counts every instance counted, the predecessor's last ones too")
	assert.Equal(t, oc+nc, sum(probeOutcomes(nu.sink.AllMetrics())["job"]),
		"the successor's cumulative outcomes go on from its predecessor's")
	ends := append(windowEnds(old.sink.AllMetrics()), windowEnds(nu.sink.AllMetrics())...)
	for i := 1; i < len(ends); i++ {
		assert.Less(t, ends[i-1], ends[i], "each window emitted once, in order, across the reload")
	}
}

// TestShutdownEmitsWindowsAfterTheClock: spans from a client whose clock
// runs ahead of the collector's end after the collector's clock, in a
// window after the one it is in; they are counted (instances) and must be
// in the output the shutdown emits, not lost with the window.
func TestShutdownEmitsWindowsAfterTheClock(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	now := at(1900 * time.Millisecond)
	r.clk.Set(now)
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(1, 3, now.Add(-100*time.Millisecond), 10*time.Millisecond)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(4, 2, now.Add(300*time.Millisecond), 10*time.Millisecond)))
	r.shutdown(t)
	st := r.traces.(*deltaqConnector).shared.obs.Stats()
	require.Equal(t, int64(5), st.Counted)
	assert.Equal(t, map[string]int64{contract.Success: 5, contract.Failure: 0, contract.Timeout: 0},
		probeOutcomes(r.sink.AllMetrics())["job"], "the 2 spans 300 ms ahead of the clock counted in the output too")
	assert.Equal(t, []pcommon.Timestamp{pcommon.NewTimestampFromTime(at(2 * time.Second)), pcommon.NewTimestampFromTime(at(3 * time.Second))},
		windowEnds(r.sink.AllMetrics())[len(windowEnds(r.sink.AllMetrics()))-2:], "the clock's window, then the one after it")
}

// TestConcurrentAutoProbe: the spans of a dmax: auto probe arrive from
// several goroutines, with start events, while its sample decides its dMax
// at the window timer's ticks and the timeout timer censors it: every span
// and timeout is accounted for once, whatever dMax judged it.
func TestConcurrentAutoProbe(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"job": map[string]any{
		"match": map[string]any{}, "dmax": "auto", "bins": 50, "dmax_max": "10s", "dmax_sample": 100, "dmax_period": "1s"}}}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	r := newStartRig(t, cfg, collectorstate.New())
	var s stream
	wg := s.send(t, r, 4, 30, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	now := drive(r, at(time.Second), done)
	r.clk.Tick(now.Add(2 * time.Second))
	r.expire(now.Add(20 * time.Second))
	r.shutdown(t)

	st := r.traces.(*deltaqConnector).shared.obs.Stats()
	var dropped int64
	for _, n := range st.Dropped {
		dropped += n
	}
	timeouts := sum(counterByAttr(t, r.tel, "start_timeouts", "probe"))
	late := sum(counterByAttr(t, r.tel, "late_spans", "probe"))
	require.Positive(t, sum(counterByAttr(t, r.tel, "dmax_changes", "probe")), "the sample decided a dMax")
	assert.Equal(t, s.spans.Load()+timeouts, st.Counted+dropped+late,
		"every span counted, dropped or late, and every timeout counted, once")
}

// TestShutdownCountsItsInstancesInTelemetry: the instances counted and
// dropped since the window timer's last tick, and the windows the shutdown
// closes, are in the self-telemetry too, as a tick would have recorded
// them: a collector that stops reports every instance it took.
func TestShutdownCountsItsInstancesInTelemetry(t *testing.T) {
	r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
	now := at(1500 * time.Millisecond)
	r.clk.Set(now)
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(1, 3, now.Add(-100*time.Millisecond), 10*time.Millisecond)))
	require.NoError(t, r.traces.ConsumeTraces(context.Background(), jobSpans(4, 2, now.Add(-2*time.Second), 10*time.Millisecond)))
	r.shutdown(t)
	assert.Equal(t, map[string]int64{"": 3}, counterByAttr(t, r.tel, "instances", ""), "the instances counted")
	assert.Equal(t, map[string]int64{"too_late": 2}, counterByAttr(t, r.tel, "instances_dropped", "reason"))
	closed := counterByAttr(t, r.tel, "windows_closed", "")
	assert.Equal(t, int64(len(windowEnds(r.sink.AllMetrics()))), closed[""], "the windows the shutdown closed")
}
