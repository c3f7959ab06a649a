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
	} {
		if p.want == "" || p.got != p.want {
			t.Errorf("%s = %q, the contract says %q", p.name, p.got, p.want)
		}
	}
}
