// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otlptest

import (
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
// deltaq.probe, and each entry's ids, start time and threshold), read by the
// collector's own reader (contract.ReadStarts). Other records are skipped.
// It fails the test on a batch record the reader refuses, or an entry of it
// that it refuses alone (no ids, no start): what the clients send must be
// read whole.
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
				starts, name, err := contract.ReadStarts(lr.Attributes())
				if err != contract.StartsOK {
					starts, _ := lr.Attributes().Get(contract.AttrStarts)
					thresholds, _ := lr.Attributes().Get(contract.AttrStartsThresholds)
					t.Fatalf("a %s record of probe %q refused (%v): %s %v and %s %v", contract.StartsEventName,
						probe.AsString(), err, contract.AttrStarts, starts.AsRaw(), contract.AttrStartsThresholds,
						thresholds.AsRaw())
				}
				for i := range starts.Len() {
					e := starts.At(i)
					if !e.Valid() {
						t.Fatalf("a %s record of probe %q: entry %d refused: %+v", contract.StartsEventName, name, i, e)
					}
					out = append(out, SpanStart{TraceID: e.TraceID, SpanID: e.SpanID, Probe: name,
						Time: pcommon.Timestamp(e.Start), Threshold: e.Threshold, Batch: true})
				}
			}
		}
	}
	return out
}
