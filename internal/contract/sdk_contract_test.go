// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"encoding/json"
	"os"
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
		EntryBytes     int `json:"entry_bytes"`
		ThresholdBytes int `json:"threshold_bytes"`
		MaxEntries     int `json:"max_entries"`
	} `json:"batch"`
}

// TestStartEventContract: the constants of the start event are the shared
// contract's.
func TestStartEventContract(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c startEventContract
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
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
	} {
		if p.want == 0 || p.got != p.want {
			t.Errorf("%s = %d, the contract says %d", p.name, p.got, p.want)
		}
	}
}
