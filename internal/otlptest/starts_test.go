// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"encoding/binary"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// TestStartsOf reads a record per span, a batch record of two entries with
// thresholds and one without, and skips a record of another kind.
func TestStartsOf(t *testing.T) {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	one := lrs.AppendEmpty()
	one.SetEventName(contract.StartEventName)
	one.SetTraceID(pcommon.TraceID{1})
	one.SetSpanID(pcommon.SpanID{1})
	one.SetTimestamp(100)
	one.Attributes().PutStr(contract.AttrProbe, "a")
	lrs.AppendEmpty().SetEventName("other")
	var entries, thresholds []byte
	want := []SpanStart{{pcommon.TraceID{1}, pcommon.SpanID{1}, "a", 100, 0, false}}
	for i, th := range []uint64{0, 0xc0 << 48} {
		s := SpanStart{pcommon.TraceID{2, byte(i)}, pcommon.SpanID{2, byte(i)}, "b", pcommon.Timestamp(200 + i), th, true}
		entries = append(append(append(entries, s.TraceID[:]...), s.SpanID[:]...), make([]byte, 8)...)
		binary.LittleEndian.PutUint64(entries[len(entries)-8:], uint64(s.Time))
		thresholds = binary.LittleEndian.AppendUint64(thresholds, th)
		want = append(want, s)
	}
	batch := lrs.AppendEmpty()
	batch.SetEventName(contract.StartsEventName)
	batch.Attributes().PutStr(contract.AttrProbe, "b")
	batch.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries)
	batch.Attributes().PutEmptyBytes(contract.AttrStartsThresholds).FromRaw(thresholds)
	plain := lrs.AppendEmpty()
	plain.SetEventName(contract.StartsEventName)
	plain.Attributes().PutStr(contract.AttrProbe, "c")
	plain.Attributes().PutEmptyBytes(contract.AttrStarts).FromRaw(entries[:32])
	want = append(want, SpanStart{pcommon.TraceID{2}, pcommon.SpanID{2}, "c", 200, 0, true})

	got := StartsOf(t, []plog.Logs{ld})
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("start %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
