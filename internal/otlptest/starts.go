// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
	"encoding/binary"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
)

// SpanStart is the start of a span as a start event announced it.
type SpanStart struct {
	TraceID pcommon.TraceID
	SpanID  pcommon.SpanID
	Probe   string
	// Time is the span's start: the record's timestamp, or its entry's.
	Time pcommon.Timestamp
	// Threshold is the entry's sampling threshold (batch form), 0 for none
	// and in a record per span.
	Threshold uint64
	// Batch reports whether the start came in a batch record.
	Batch bool
}

// StartsOf returns the starts announced by the start events among lds, in
// order, in either form: a deltaq.span.start record (its ids, timestamp and
// deltaq.probe) or every entry of a deltaq.span.starts record (its
// deltaq.probe, and each entry's ids, start time and threshold). Other
// records are skipped. It fails the test on a batch record whose entries or
// thresholds are malformed: what the clients send must be read whole.
func StartsOf(t testing.TB, lds []plog.Logs) []SpanStart {
	t.Helper()
	var out []SpanStart
	for _, ld := range lds {
		for lr := range otlprecv.LogRecords(ld) {
			probe, _ := lr.Attributes().Get(contract.AttrProbe)
			switch lr.EventName() {
			case contract.StartEventName:
				out = append(out, SpanStart{TraceID: lr.TraceID(), SpanID: lr.SpanID(), Probe: probe.AsString(),
					Time: lr.Timestamp()})
			case contract.StartsEventName:
				// A Value of another type has no byte slice to read.
				var b, th []byte
				starts, _ := lr.Attributes().Get(contract.AttrStarts)
				if starts.Type() == pcommon.ValueTypeBytes {
					b = starts.Bytes().AsRaw()
				}
				thresholds, hasTh := lr.Attributes().Get(contract.AttrStartsThresholds)
				if hasTh && thresholds.Type() == pcommon.ValueTypeBytes {
					th = thresholds.Bytes().AsRaw()
				}
				n := len(b) / contract.StartEntryBytes
				if n == 0 || len(b) != n*contract.StartEntryBytes || hasTh && len(th) != 8*n {
					t.Fatalf("a %s record of probe %q with %s %v and %s %v", contract.StartsEventName, probe.AsString(),
						contract.AttrStarts, starts.AsRaw(), contract.AttrStartsThresholds, thresholds.AsRaw())
				}
				for i := range n {
					e := b[i*contract.StartEntryBytes:]
					s := SpanStart{Probe: probe.AsString(), Time: pcommon.Timestamp(binary.LittleEndian.Uint64(e[24:32])),
						Batch: true}
					copy(s.TraceID[:], e[:16])
					copy(s.SpanID[:], e[16:24])
					if hasTh {
						s.Threshold = binary.LittleEndian.Uint64(th[8*i:])
					}
					out = append(out, s)
				}
			}
		}
	}
	return out
}
