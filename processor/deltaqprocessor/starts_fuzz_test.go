// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"encoding/binary"
	"maps"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// fuzzEntry is one start an input announces: the byte before an entry of
// contract.AttrStarts picks its probe (checkout, which the configuration
// names, or nocheckout), the entry gives its ids and start time.
const fuzzEntry = 1 + contract.StartEntryBytes

// FuzzStartEventForms announces the same starts, their ids, start times
// and probes arbitrary and one tracestate for all, as single start events
// and as batch start events (one a probe, the tracestate's threshold
// beside each entry) to two processors: the two forms must refuse the
// same starts for the same reasons, and report the same instances as
// timeouts, with the same tracestate threshold.
func FuzzStartEventForms(f *testing.F) {
	entry := func(probe, n byte, at time.Time) []byte {
		var ts uint64
		if !at.IsZero() {
			ts = uint64(at.UnixNano())
		}
		return append([]byte{probe}, contract.AppendStart(nil, traceID(n), spanID(n), ts)...)
	}
	var seed []byte
	for _, e := range [][]byte{entry(0, 1, base), entry(0, 2, base), entry(1, 3, base), entry(0, 1, base),
		entry(0, 0, base), entry(0, 4, time.Time{}), entry(0, 6, base.Add(-time.Hour)), entry(0, 7, base.Add(time.Hour))} {
		seed = append(seed, e...)
	}
	seed = append(seed, 0)
	seed = append(seed, contract.AppendStart(nil, traceID(5), spanID(5), 1<<63)...)
	seed = append(seed, 0)
	seed = append(seed, contract.AppendStart(nil, [16]byte{}, [8]byte{}, uint64(base.UnixNano()))...)
	f.Add(seed, "ot=th:c")
	f.Add(seed[:fuzzEntry], "")
	f.Add(seed, "ot=th:c;rv:00000000000000")
	f.Fuzz(func(t *testing.T, raw []byte, tracestate string) {
		if len(raw) > 64*fuzzEntry {
			raw = raw[:64*fuzzEntry] // bound the cost of one run
		}
		if len(raw) < fuzzEntry {
			return
		}
		th, _ := contract.Threshold(tracestate)
		single, batches := plog.NewLogs(), plog.NewLogs()
		entries := map[string][]byte{}
		var order []string
		for ; len(raw) >= fuzzEntry; raw = raw[fuzzEntry:] {
			probe := [2]string{"checkout", "nocheckout"}[raw[0]&1]
			e := raw[1:fuzzEntry]
			rl := single.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "shop")
			lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
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
			rl := batches.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", "shop")
			lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
			lr.SetEventName(contract.StartsEventName)
			lr.Attributes().PutStr(contract.AttrProbe, probe)
			lr.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[probe])
			var ths []byte
			for range len(entries[probe]) / contract.StartEntryBytes {
				ths = binary.LittleEndian.AppendUint64(ths, th)
			}
			lr.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(ths)
		}
		var malformed, timeouts [2]map[string]int64
		var synthetic [2]map[pcommon.SpanID]string
		for i, ld := range []plog.Logs{single, batches} {
			h := newHarness(t, testConfig(probeConfig("checkout", 50*time.Millisecond, 25)))
			h.consumeLogs(ld)
			h.clock.tick(base.Add(2 * time.Hour))
			malformed[i] = telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_malformed")
			timeouts[i] = telemetrytest.Points(t, h.tel, "otelcol_processor_deltaq_start_timeouts")
			synthetic[i] = map[pcommon.SpanID]string{}
			spans, _ := allSpans(h.tsink.AllTraces())
			for _, sp := range spans {
				synthetic[i][sp.SpanID()] = sp.Name() + " " + sp.TraceState().AsRaw()
			}
		}
		if !maps.Equal(malformed[0], malformed[1]) {
			t.Fatalf("refused: single %v, batch %v", malformed[0], malformed[1])
		}
		if !maps.Equal(timeouts[0], timeouts[1]) {
			t.Fatalf("timeouts: single %v, batch %v", timeouts[0], timeouts[1])
		}
		if !maps.Equal(synthetic[0], synthetic[1]) {
			t.Fatalf("timeout spans: single %v, batch %v", synthetic[0], synthetic[1])
		}
	})
}
