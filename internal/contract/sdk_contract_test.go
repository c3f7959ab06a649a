// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// startEventContract is docs/contract/start-event.json: the start event's
// strings, written once for every side that speaks it. This package's
// constants are checked against it here, sdk/deltaqstart's (a module of
// its own, which imports nothing of the collector's) in that module's
// tests.
type startEventContract struct {
	EventName  string `json:"event_name"`
	Attributes struct {
		Probe      string `json:"probe"`
		SpanName   string `json:"span_name"`
		TraceState string `json:"tracestate"`
	} `json:"attributes"`
	ProbeBytes struct {
		Min int `json:"min"`
		Max int `json:"max"`
	} `json:"probe_bytes"`
	Batch struct {
		EventName  string `json:"event_name"`
		Attributes struct {
			Probe      string `json:"probe"`
			Starts     string `json:"starts"`
			Thresholds string `json:"thresholds"`
		} `json:"attributes"`
		Entry []struct {
			Field string `json:"field"`
			Bytes int    `json:"bytes"`
		} `json:"entry"`
		EntryBytes     int               `json:"entry_bytes"`
		ThresholdBytes int               `json:"threshold_bytes"`
		MaxEntries     int               `json:"max_entries"`
		Example        startEventExample `json:"example"`
	} `json:"batch"`
}

// startEventExample is the contract's example of a batch record: its probe,
// its spans, and the bytes of deltaq.starts and deltaq.starts.thresholds
// that announce them, in hex. Every sender's tests encode those spans to
// those bytes; this package's decode them to those spans.
type startEventExample struct {
	Probe   string `json:"probe"`
	Entries []struct {
		TraceID    string `json:"trace_id"`
		SpanID     string `json:"span_id"`
		Start      uint64 `json:"start_time_unix_nano,string"`
		TraceState string `json:"tracestate"`
	} `json:"entries"`
	StartsHex     string `json:"starts_hex"`
	ThresholdsHex string `json:"thresholds_hex"`
}

// readStartEventContract reads docs/contract/start-event.json.
func readStartEventContract(t *testing.T) startEventContract {
	t.Helper()
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c startEventContract
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStartEventContract: the constants of the start event are the shared
// contract's.
func TestStartEventContract(t *testing.T) {
	c := readStartEventContract(t)
	for _, p := range []struct{ name, got, want string }{
		{"StartEventName", StartEventName, c.EventName},
		{"AttrProbe", AttrProbe, c.Attributes.Probe},
		{"AttrSpanName", AttrSpanName, c.Attributes.SpanName},
		{"AttrTraceState", AttrTraceState, c.Attributes.TraceState},
		{"StartsEventName", StartsEventName, c.Batch.EventName},
		{"AttrProbe (batch)", AttrProbe, c.Batch.Attributes.Probe},
		{"AttrStarts", AttrStarts, c.Batch.Attributes.Starts},
		{"AttrStartsThresholds", AttrStartsThresholds, c.Batch.Attributes.Thresholds},
	} {
		if p.want == "" || p.got != p.want {
			t.Errorf("%s = %q, the contract says %q", p.name, p.got, p.want)
		}
	}
	// The entry's layout, which StartEntry and AppendStart follow: trace id,
	// span id, start time.
	fields, sum := "", 0
	for _, f := range c.Batch.Entry {
		fields += f.Field + " "
		sum += f.Bytes
	}
	if fields != "trace_id span_id start_time_unix_nano " || sum != StartEntryBytes {
		t.Errorf("the contract's entry is %q, %d bytes; this package reads trace_id span_id start_time_unix_nano, %d bytes", fields, sum, StartEntryBytes)
	}
	for _, p := range []struct {
		name      string
		got, want int
	}{
		{"StartEntryBytes", StartEntryBytes, c.Batch.EntryBytes},
		{"StartThresholdBytes", StartThresholdBytes, c.Batch.ThresholdBytes},
		{"MaxStartEntries", MaxStartEntries, c.Batch.MaxEntries},
		{"MaxNameLength (a probe's longest)", MaxNameLength, c.ProbeBytes.Max},
	} {
		if p.want == 0 || p.got != p.want {
			t.Errorf("%s = %d, the contract says %d", p.name, p.got, p.want)
		}
	}
	// A probe's shortest: DecodeStarts refuses a batch record whose probe
	// is shorter, and reads one whose probe is that long.
	one := AppendStart(nil, [16]byte{1}, [8]byte{1}, 1)
	if c.ProbeBytes.Min < 1 {
		t.Fatalf("the contract's shortest probe is %d bytes, DecodeStarts refuses an empty one", c.ProbeBytes.Min)
	}
	if _, err := DecodeStarts(strings.Repeat("p", c.ProbeBytes.Min-1), one, nil, false); err != StartsNoProbe {
		t.Errorf("a probe of %d bytes: %v, want it refused", c.ProbeBytes.Min-1, err)
	}
	if _, err := DecodeStarts(strings.Repeat("p", c.ProbeBytes.Min), one, nil, false); err != StartsOK {
		t.Errorf("a probe of %d bytes: %v, want it read", c.ProbeBytes.Min, err)
	}
}

// TestStartEventExample decodes the contract's example batch record, the
// known answer the senders' tests (sdk/deltaqstart's and dqsd_otel's) encode
// its spans to: DecodeStarts reads each span's ids and start time back, and
// its threshold, that of its tracestate (Threshold); AppendStart writes the
// same entries.
func TestStartEventExample(t *testing.T) {
	ex := readStartEventContract(t).Batch.Example
	entries, err := hex.DecodeString(ex.StartsHex)
	if err != nil {
		t.Fatal(err)
	}
	thresholds, err := hex.DecodeString(ex.ThresholdsHex)
	if err != nil {
		t.Fatal(err)
	}
	starts, serr := DecodeStarts(ex.Probe, entries, thresholds, false)
	if serr != StartsOK || starts.Len() != len(ex.Entries) || len(ex.Entries) < 2 {
		t.Fatalf("the example: %v, %d entries; want it read whole, with its %d entries", serr, starts.Len(),
			len(ex.Entries))
	}
	var appended []byte
	for i, w := range ex.Entries {
		var traceID [16]byte
		var spanID [8]byte
		if n, err := hex.Decode(traceID[:], []byte(w.TraceID)); err != nil || n != 16 {
			t.Fatalf("entry %d: trace id %q", i, w.TraceID)
		}
		if n, err := hex.Decode(spanID[:], []byte(w.SpanID)); err != nil || n != 8 {
			t.Fatalf("entry %d: span id %q", i, w.SpanID)
		}
		th, _ := Threshold(w.TraceState)
		want := StartEntry{TraceID: traceID, SpanID: spanID, Start: int64(w.Start), Threshold: th}
		if got := starts.At(i); got != want || !got.Valid() {
			t.Errorf("entry %d: %+v, want %+v", i, got, want)
		}
		appended = AppendStart(appended, traceID, spanID, w.Start)
	}
	if !bytes.Equal(appended, entries) {
		t.Errorf("AppendStart writes %x, the example is %x", appended, entries)
	}
}
