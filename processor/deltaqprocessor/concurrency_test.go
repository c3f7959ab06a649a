// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// loadIDs returns the trace and span ids of instance n of a load.
func loadIDs(n uint64) (pcommon.TraceID, pcommon.SpanID) {
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n)
	return tid, sid
}

// load sends spans of probe checkout and start events from several
// goroutines at once, each instance of its own ids: a span for every
// instance, a start event for one in two (before or after its span, as the
// two inputs race), and start events whose span never comes.
type load struct {
	next  atomic.Uint64
	spans atomic.Int64
}

// send starts senders goroutines that send rounds batches each (until stop
// is closed when rounds is 0) to h, at the time of h's clock.
func (l *load) send(t *testing.T, h *harness, senders, rounds int, stop <-chan struct{}) *sync.WaitGroup {
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
				first := l.next.Add(2*n) - 2*n + 1
				now := h.clock.Now()
				dur := 5 * time.Millisecond
				if i%5 == g%5 {
					dur = 80 * time.Millisecond // longer than dMax
				}
				td := ptrace.NewTraces()
				spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
				starts, orphans := plog.NewLogs(), plog.NewLogs()
				slrs := starts.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
				olrs := orphans.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
				for k := range uint64(2 * n) {
					tid, sid := loadIDs(first + k)
					if k < n {
						sp := spans.AppendEmpty()
						sp.SetName("checkout")
						sp.SetTraceID(tid)
						sp.SetSpanID(sid)
						sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-dur)))
						sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
					}
					lrs, at := olrs, now.Add(-time.Millisecond)
					if k < n {
						if k%2 == 1 {
							continue
						}
						lrs, at = slrs, now.Add(-dur)
					}
					lr := lrs.AppendEmpty()
					lr.SetEventName(contract.StartEventName)
					lr.SetTraceID(tid)
					lr.SetSpanID(sid)
					lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
					lr.Attributes().PutStr(contract.AttrProbe, "checkout")
				}
				if g%2 == 0 {
					assert.NoError(t, h.logs.ConsumeLogs(context.Background(), starts))
				}
				assert.NoError(t, h.traces.ConsumeTraces(context.Background(), td))
				l.spans.Add(n)
				if g%2 == 1 {
					assert.NoError(t, h.logs.ConsumeLogs(context.Background(), starts))
				}
				assert.NoError(t, h.logs.ConsumeLogs(context.Background(), orphans))
			}
		}()
	}
	return &wg
}

// counted returns what the processor counted: instances by outcome, late
// spans and timeouts in real time.
func counted(p *deltaqProcessor) (instances, late, timeouts int64) {
	for i := range p.stats.instances {
		for o := range p.stats.instances[i] {
			instances += p.stats.instances[i][o].Load()
		}
		late += p.stats.late[i].Load()
		timeouts += p.stats.startTimeouts[i].Load()
	}
	return instances, late, timeouts
}

// tickUntil ticks h's clock by a millisecond a tick from at until done is
// closed, and returns the time of the last tick.
func (h *harness) tickUntil(at time.Time, done <-chan struct{}) time.Time {
	for {
		select {
		case <-done:
			return at
		default:
		}
		at = at.Add(time.Millisecond)
		h.clock.tick(at)
	}
}

// TestConcurrentSpansStartsAndTimer: spans and start events arrive from
// several goroutines while the timer fires the timeouts due. Every span is
// counted once, by its outcome or as late, every timeout once, and every
// timeout's synthetic span reaches the next consumer with the spans.
func TestConcurrentSpansStartsAndTimer(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	var l load
	wg := l.send(t, h, 4, 40, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	at := h.tickUntil(base, done)
	h.clock.tick(at.Add(time.Second))

	instances, late, timeouts := counted(h.p)
	require.Positive(t, timeouts)
	assert.Equal(t, l.spans.Load()+timeouts, instances+late, "every span and every timeout counted once")
	assert.Zero(t, h.p.stats.syntheticDropped.Load())
	assert.Equal(t, int(l.spans.Load()+timeouts), h.tsink.SpanCount(), "the spans and a synthetic span a timeout passed on")
}

// TestShutdownWhileSpansFlow: the processor shuts down while spans and
// start events still arrive and its timer fires: the shutdown returns with
// the timer stopped, no synthetic span follows it, and the calls that come
// after it neither fail nor panic.
func TestShutdownWhileSpansFlow(t *testing.T) {
	h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
	var l load
	stop := make(chan struct{})
	wg := l.send(t, h, 3, 0, stop)
	steps := make(chan struct{})
	go func() { time.Sleep(150 * time.Millisecond); close(steps) }()
	h.tickUntil(base, steps)
	require.NoError(t, h.traces.Shutdown(context.Background()))
	_, _, timeouts := counted(h.p)
	time.Sleep(50 * time.Millisecond) // spans keep coming
	close(stop)
	wg.Wait()
	require.NoError(t, h.logs.Shutdown(context.Background()))
	_, _, after := counted(h.p)
	assert.Equal(t, timeouts, after, "no timeout fires after the shutdown")
}

// TestReloadWhileSpansFlow: a configuration reload hands the instances in
// flight to the successor between two streams of spans and start events,
// each from several goroutines while the timer runs: every span and every
// timeout of both is counted once.
func TestReloadWhileSpansFlow(t *testing.T) {
	st := collectorstate.New()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	old := newHarnessIn(t, st, cfg, nil)
	var l load
	wg := l.send(t, old, 3, 20, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	at := old.tickUntil(base, done)
	st.Reload.Requested()
	require.NoError(t, old.traces.Shutdown(context.Background()))
	require.NoError(t, old.logs.Shutdown(context.Background()))

	nu := newHarnessIn(t, st, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)), nil)
	nu.clock.set(at)
	wg = l.send(t, nu, 3, 20, nil)
	done = make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	at = nu.tickUntil(at, done)
	nu.clock.tick(at.Add(time.Second))

	oi, ol, ot := counted(old.p)
	ni, nl, nt := counted(nu.p)
	require.Positive(t, nt)
	assert.Equal(t, l.spans.Load()+ot+nt, oi+ol+ni+nl, "every span and every timeout counted once across the reload")
}

// TestConcurrentAutoProbe: the spans of a dmax: auto probe arrive from
// several goroutines, with start events, while the timer decides its dMax
// and censors its sample with the timeouts it fires: every span and every
// timeout is counted once, whatever dMax judged it.
func TestConcurrentAutoProbe(t *testing.T) {
	h := newHarness(t, testConfig(ProbeConfig{Name: "checkout", DMaxAuto: true, Bins: 25, DMaxSample: 100, DMaxPeriod: time.Second}))
	var l load
	wg := l.send(t, h, 4, 40, nil)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	at := h.tickUntil(base, done)
	h.clock.tick(at.Add(2 * time.Second))
	h.clock.tick(at.Add(time.Minute))

	instances, late, timeouts := counted(h.p)
	require.Positive(t, timeouts)
	assert.Equal(t, l.spans.Load()+timeouts, instances+late, "every span and every timeout counted once")
}
