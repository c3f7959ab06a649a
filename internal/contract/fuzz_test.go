// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/sdk/deltaqstart/otsampling"
)

// FuzzReadStarts feeds arbitrary attributes of a batch start event to
// ReadStarts. A refused record must say why, naming the attribute at
// fault; an accepted one must hold no more entries than its bytes allow
// (and MaxStartEntries), each entry must encode back (AppendStart) to the
// bytes it was read from, and its threshold must be the one sent when
// below 2⁵⁶ and none otherwise. thMode chooses how the thresholds are
// sent: absent, as bytes, or as a value of another type.
func FuzzReadStarts(f *testing.F) {
	two := append(testEntry(1, 100), testEntry(2, 200)...)
	th := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 1<<55), 1<<56)
	f.Add("checkout", two, []byte(nil), uint8(0))
	f.Add("checkout", two, th, uint8(1))
	f.Add("checkout", two, th[:8], uint8(1))           // one threshold short
	f.Add("checkout", two[:31], []byte(nil), uint8(0)) // a byte short
	f.Add("", two, th, uint8(1))
	f.Add("checkout", []byte{}, []byte{}, uint8(1))
	f.Add("checkout", two, []byte{}, uint8(2))
	f.Add("checkout", testEntry(0, math.MaxUint64), []byte(nil), uint8(0))
	f.Add("checkout", make([]byte, (MaxStartEntries+1)*StartEntryBytes), []byte(nil), uint8(0))
	f.Fuzz(func(t *testing.T, probe string, entries, thresholds []byte, thMode uint8) {
		attrs := pcommon.NewMap()
		if probe != "" || len(entries)%2 == 0 {
			attrs.PutStr(AttrProbe, probe)
		}
		attrs.PutEmptyBytes(AttrStarts).FromRaw(entries)
		switch thMode % 3 {
		case 1:
			attrs.PutEmptyBytes(AttrStartsThresholds).FromRaw(thresholds)
		case 2:
			attrs.PutStr(AttrStartsThresholds, string(thresholds))
		}
		s, gotProbe, err := ReadStarts(attrs)
		if err != StartsOK {
			if err >= numStartsErrors || err.Error() == "" {
				t.Fatalf("refusal %d has no reason", err)
			}
			named := map[StartsError]string{
				StartsNoProbe: AttrProbe, StartsNoEntries: AttrStarts, StartsBadLength: AttrStarts,
				StartsTooMany: AttrStarts, StartsBadThresholds: AttrStartsThresholds,
			}[err]
			if !strings.Contains(err.Error(), named) {
				t.Fatalf("refusal %q does not name %s", err.Error(), named)
			}
			return
		}
		if gotProbe != probe || probe == "" {
			t.Fatalf("probe %q read as %q", probe, gotProbe)
		}
		n := s.Len()
		if n == 0 || n*StartEntryBytes != len(entries) || n > MaxStartEntries {
			t.Fatalf("%d entries read from %d bytes", n, len(entries))
		}
		hasTh := thMode%3 == 1
		if hasTh && len(thresholds) != n*StartThresholdBytes {
			t.Fatalf("%d thresholds accepted for %d entries", len(thresholds)/StartThresholdBytes, n)
		}
		var e StartEntry
		for i := range n {
			s.Read(i, &e)
			raw := entries[i*StartEntryBytes : (i+1)*StartEntryBytes]
			start := binary.LittleEndian.Uint64(raw[24:])
			if start > math.MaxInt64 {
				if e.Start != 0 || e.Valid() {
					t.Fatalf("entry %d: start %d past int64 read as %d", i, start, e.Start)
				}
				start = 0
				raw = append(append([]byte{}, raw[:24]...), make([]byte, 8)...)
			}
			if back := AppendStart(nil, e.TraceID, e.SpanID, uint64(e.Start)); !bytes.Equal(back, raw) {
				t.Fatalf("entry %d: %x reads back as %x", i, raw, back)
			}
			if at := s.At(i); at != e {
				t.Fatalf("entry %d: At %+v, Read %+v", i, at, e)
			}
			var tid [16]byte
			var sid [8]byte
			s.IDs(i, &tid, &sid)
			if tid != e.TraceID || sid != e.SpanID {
				t.Fatalf("entry %d: IDs differ from Read", i)
			}
			want := uint64(0)
			if hasTh {
				if v := binary.LittleEndian.Uint64(thresholds[i*StartThresholdBytes:]); v < maxThreshold {
					want = v
				}
			}
			if e.Threshold != want {
				t.Fatalf("entry %d: threshold %d, want %d", i, e.Threshold, want)
			}
		}
	})
}

// FuzzThreshold reads the sampling threshold of arbitrary tracestates. A
// threshold read is below 2⁵⁶, its adjusted count is finite and at least
// 1, and the tracestate written for it (ThresholdTraceState) reads back to
// it; a tracestate whose `ot` entry carries a valid th reads to it unless
// its rv contradicts it.
func FuzzThreshold(f *testing.F) {
	for _, ts := range []string{
		"ot=th:0", "ot=th:8", "ot=th:fd70a4;rv:fe123456789abc", "ot=rv:00000000000000;th:1",
		"vendor=x, ot=th:c ,other=y", "ot=th:ffffffffffffff", "ot=th:fffffffffffffff",
		"ot=th:;rv:ff", "ot=th:-1", "ot=th:+1", "ot=th:0x1", "ot=th:1_0", "ot=th:8;th:0",
		"ot=rv:123;th:8", "\tot=th:A\t", "ot=th:c;rv:bfffffffffffff",
	} {
		f.Add(ts)
	}
	f.Fuzz(func(t *testing.T, ts string) {
		th, ok := Threshold(ts)
		a, aok := AdjustedCount(ts)
		if ok != aok {
			t.Fatalf("Threshold ok %v, AdjustedCount ok %v", ok, aok)
		}
		if !ok {
			return
		}
		if th >= maxThreshold {
			t.Fatalf("threshold %#x of %q not below 2⁵⁶", th, ts)
		}
		if !(a >= 1) || math.IsInf(a, 0) {
			t.Fatalf("adjusted count %v of %q", a, ts)
		}
		w := ThresholdTraceState(th)
		if back, ok := Threshold(w); !ok || back != th {
			t.Fatalf("%q: threshold %#x written %q reads back %#x, %v", ts, th, w, back, ok)
		}
		// The value read is that of the th digits written, right-padded.
		ot, _ := memberValue(ts)
		for kv := range strings.SplitSeq(ot, ";") {
			if d, ok := strings.CutPrefix(kv, "th:"); ok {
				if len(d) == 0 || len(d) > 14 {
					t.Fatalf("%q: th %q accepted", ts, d)
				}
				for _, c := range d {
					if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
						t.Fatalf("%q: th %q accepted", ts, d)
					}
				}
				break
			}
		}
	})
}

// FuzzThresholdAgreesWithSDK: for any tracestate the OpenTelemetry Go API
// reads, the threshold the collector reads from the raw header (Threshold)
// is the one the start-event client reads from the API's `ot` value
// (otsampling.Threshold), so that a span and its start event count alike.
func FuzzThresholdAgreesWithSDK(f *testing.F) {
	for _, ts := range []string{
		"ot=th:c", "a=1,ot=th:8;rv:fe123456789abc", " ot=th:0 ", "ot=th:c,ot=th:8", "b=2 , ot=rv:ffffffffffffff;th:1",
		"ot=th:C", "vendor@sys=x,ot=th:fd70a4", "ot=", "ot=th:c\t",
	} {
		f.Add(ts)
	}
	f.Fuzz(func(t *testing.T, ts string) {
		state, err := trace.ParseTraceState(ts)
		if err != nil {
			return
		}
		sdkTh, sdkOK := otsampling.Threshold(state.Get("ot"))
		th, ok := Threshold(ts)
		if th != sdkTh || ok != sdkOK {
			t.Fatalf("%q: the collector reads %#x, %v; the client %#x, %v", ts, th, ok, sdkTh, sdkOK)
		}
	})
}
