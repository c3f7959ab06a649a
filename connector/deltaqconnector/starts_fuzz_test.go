// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"context"
	"encoding/binary"
	"maps"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// fuzzEntry is one start an input announces: the byte before an entry of
// contract.AttrStarts picks its probe (job, which the configuration
// matches, or nojob), the entry gives its ids and start time.
const fuzzEntry = 1 + contract.StartEntryBytes

// FuzzStartEventForms announces the same starts, their ids, start times
// and probes arbitrary and one tracestate for all, as single start events
// and as batch start events (one a probe, the tracestate's threshold
// beside each entry) to two connectors: the two forms must count every
// start by the same result, and time out the same instances with the same
// adjusted counts.
func FuzzStartEventForms(f *testing.F) {
	entry := func(probe, n byte, start uint64) []byte {
		return append([]byte{probe}, contract.AppendStart(nil, [16]byte{n}, [8]byte{n}, start)...)
	}
	ms := func(n int) uint64 { return uint64(at(time.Duration(n) * time.Millisecond).UnixNano()) }
	var seed []byte
	for _, e := range [][]byte{entry(0, 1, ms(100)), entry(0, 2, ms(100)), entry(1, 3, ms(100)), entry(0, 1, ms(100)),
		entry(0, 0, ms(100)), entry(0, 4, 0), entry(0, 5, 1<<63), entry(0, 6, ms(-100_000)), entry(0, 7, ms(100_000))} {
		seed = append(seed, e...)
	}
	f.Add(seed, "ot=th:c")
	f.Add(seed[:fuzzEntry], "")
	f.Add(seed, "ot=th:c;rv:00000000000000")
	f.Add(seed, "ot=th:fffffffffffffff")
	f.Fuzz(func(t *testing.T, raw []byte, tracestate string) {
		if len(raw) > 64*fuzzEntry {
			raw = raw[:64*fuzzEntry] // bound the cost of one run
		}
		if len(raw) < fuzzEntry {
			return
		}
		th, _ := contract.Threshold(tracestate)
		single := plog.NewLogs()
		lrs := single.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		batches := plog.NewLogs()
		blrs := batches.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		entries := map[string][]byte{}
		var order []string
		for ; len(raw) >= fuzzEntry; raw = raw[fuzzEntry:] {
			probe := [2]string{"job", "nojob"}[raw[0]&1]
			e := raw[1:fuzzEntry]
			lr := lrs.AppendEmpty()
			lr.SetEventName(contract.StartEventName)
			lr.SetTraceID(pcommon.TraceID(e[:16]))
			lr.SetSpanID(pcommon.SpanID(e[16:24]))
			lr.SetTimestamp(pcommon.Timestamp(binary.LittleEndian.Uint64(e[24:])))
			lr.Attributes().PutStr(contract.AttrProbe, probe)
			if tracestate != "" {
				lr.Attributes().PutStr(contract.AttrTraceState, tracestate)
			}
			if _, ok := entries[probe]; !ok {
				order = append(order, probe)
			}
			entries[probe] = append(entries[probe], e...)
		}
		for _, probe := range order {
			lr := blrs.AppendEmpty()
			lr.SetEventName(contract.StartsEventName)
			lr.Attributes().PutStr(contract.AttrProbe, probe)
			lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[probe])
			var ths []byte
			for range len(entries[probe]) / contract.StartEntryBytes {
				ths = binary.LittleEndian.AppendUint64(ths, th)
			}
			lr.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(ths)
		}
		var results, timeouts, outcomes [2]map[string]int64
		for i, ld := range []plog.Logs{single, batches} {
			r := newStartRig(t, loadConfig(t, "matched"), collectorstate.New())
			if err := r.logs.ConsumeLogs(context.Background(), ld); err != nil {
				t.Fatal(err)
			}
			r.expire(at(time.Second))
			r.clk.Tick(at(2 * time.Second))
			outcomes[i] = probeOutcomes(r.sink.AllMetrics())["job"]
			results[i] = counterByAttr(t, r.tel, "start_events", "result")
			timeouts[i] = counterByAttr(t, r.tel, "start_timeouts", "probe")
			r.shutdown(t)
		}
		if !maps.Equal(results[0], results[1]) {
			t.Fatalf("start events by result: single %v, batch %v", results[0], results[1])
		}
		if !maps.Equal(timeouts[0], timeouts[1]) {
			t.Fatalf("timeouts: single %v, batch %v", timeouts[0], timeouts[1])
		}
		if !maps.Equal(outcomes[0], outcomes[1]) {
			t.Fatalf("outcomes: single %v, batch %v", outcomes[0], outcomes[1])
		}
	})
}
