// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// wideIDs returns trace and span ids for instance n of a large test.
func wideIDs(n uint32) (pcommon.TraceID, pcommon.SpanID) {
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	binary.BigEndian.PutUint32(tid[:], n)
	tid[15] = 1
	binary.BigEndian.PutUint32(sid[:], n)
	sid[7] = 1
	return tid, sid
}

func startEvents(probe string, at time.Time, ids ...uint32) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, n := range ids {
		lr := lrs.AppendEmpty()
		tid, sid := wideIDs(n)
		lr.SetEventName(contract.StartEventName)
		lr.SetTraceID(tid)
		lr.SetSpanID(sid)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		lr.Attributes().PutStr(contract.AttrProbe, probe)
	}
	return ld
}

func spansOf(name string, start time.Time, d time.Duration, ids ...uint32) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for _, n := range ids {
		s := spans.AppendEmpty()
		tid, sid := wideIDs(n)
		s.SetName(name)
		s.SetTraceID(tid)
		s.SetSpanID(sid)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(d)))
	}
	return td
}

// TestConcurrentTracesAndLogs feeds start events and spans from several
// goroutines while the timer fires; run it with -race. Each worker sends an
// instance's start event before its span (the order the processor relies
// on), half the instances never get a span, and the clock advances past the
// deadline while spans are still arriving, so some spans come late. Whatever
// the interleaving, every instance is counted exactly once.
func TestConcurrentTracesAndLogs(t *testing.T) {
	const (
		workers   = 4
		perWorker = 1000
		batch     = 50
		dMax      = 50 * time.Millisecond
	)
	cfg := testConfig(probeConfig("job", dMax, 50),
		ProbeConfig{Name: "rx", DMax: dMax, Bins: 50, Match: MatchConfig{SpanNameRegexp: `^rx-\d+$`}})
	cfg.LateWindow = time.Hour
	h := newHarness(t, cfg)

	var wg sync.WaitGroup
	stopTicking := h.tickEveryMillisecond()
	spansSent := 0
	for w := range workers {
		spansSent += perWorker / 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < perWorker; b += batch {
				var ids, ending []uint32
				for i := b; i < b+batch; i++ {
					n := uint32(w*perWorker + i)
					ids = append(ids, n)
					if i%2 == 0 {
						ending = append(ending, n)
					}
				}
				h.consumeLogs(startEvents("job", base, ids...))
				h.consumeTraces(spansOf("job", base, 10*time.Millisecond, ending...))
				// Spans matched by a regular expression, with names that
				// fill the name cache concurrently.
				h.consumeTraces(spansOf(fmt.Sprintf("rx-%d", b%300), base, time.Millisecond, uint32(1_000_000+w*perWorker+b)))
			}
		}()
	}
	wg.Wait()
	stopTicking()
	h.clock.tick(base.Add(time.Minute)) // every deadline has passed

	total := int64(workers * perWorker)
	inst := telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_instances")
	late := telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_late_spans")["probe=job"]
	success := inst["outcome=success,probe=job"]
	timeout := inst["outcome=timeout,probe=job"]
	assert.Equal(t, total, success+timeout, "each instance counted once")
	assert.Equal(t, int64(spansSent), success+late, "each span is a success or late")
	assert.Equal(t, timeout, telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts")["probe=job"])

	var synthetic, mapped int64
	spans, _ := allSpans(h.tsink.AllTraces())
	for _, s := range spans {
		if v, ok := s.Attributes().Get(contract.AttrSynthetic); ok && v.Bool() {
			synthetic++
		} else {
			mapped++
		}
	}
	rxSent := int64(workers * perWorker / batch)
	assert.Equal(t, rxSent, inst["outcome=success,probe=rx"])
	assert.Equal(t, timeout, synthetic)
	assert.Equal(t, int64(spansSent)+rxSent, mapped, "every span passed through")
	assert.Equal(t, map[string]int64{"state=started": 0, "state=timed_out": total - success - late},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	t.Logf("success %d, timeout %d (late spans %d)", success, timeout, late)
}

// TestFloodOfStartEventsStaysBounded sends start events that never end, far
// past max_in_flight: the table holds exactly the bound, every instance past
// it evicts the oldest and is counted, and the heap does not grow with a
// second flood.
func TestFloodOfStartEventsStaysBounded(t *testing.T) {
	const bound, flood, batch = 1000, 100_000, 500
	cfg := testConfig(probeConfig("job", time.Second, 100))
	cfg.MaxInFlight = bound
	h := newHarness(t, cfg)

	send := func(from uint32) {
		for b := uint32(0); b < flood; b += batch {
			ids := make([]uint32, batch)
			for i := range ids {
				ids[i] = from + b + uint32(i)
			}
			h.consumeLogs(startEvents("job", base, ids...))
			require.LessOrEqual(t, h.p.tracker.Len(), bound)
		}
	}
	send(0)
	require.Equal(t, bound, h.p.tracker.Len())
	assert.Equal(t, map[string]int64{"state=started": flood - bound},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_evictions"))

	// The survivors are the newest instances; let them time out, so that the
	// next flood evicts timed-out instances first.
	h.clock.tick(base.Add(2 * time.Second))
	require.Equal(t, bound, h.tsink.SpanCount())
	wantSpan := map[pcommon.SpanID]bool{}
	for n := uint32(flood - bound); n < flood; n++ {
		_, sid := wideIDs(n)
		wantSpan[sid] = true
	}
	spans, _ := allSpans(h.tsink.AllTraces())
	for _, s := range spans {
		assert.True(t, wantSpan[s.SpanID()], "timed out an evicted instance")
	}
	h.tsink.Reset()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	send(flood)
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Equal(t, bound, h.p.tracker.Len())
	assert.Equal(t, map[string]int64{"state=started": 2*flood - 2*bound, "state=timed_out": bound},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_evictions"))
	assert.Equal(t, map[string]int64{"state=started": bound, "state=timed_out": 0},
		telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_in_flight"))
	// 100,000 tracked instances would take well over 10 MB; allow 1 MB of
	// noise for a table that must not grow at all.
	growth := int64(after.HeapInuse) - int64(before.HeapInuse)
	assert.Less(t, growth, int64(1<<20), "heap grew by %d bytes during the second flood", growth)
}
