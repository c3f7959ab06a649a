// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package otsampling

import "testing"

// TestThreshold checks the threshold read from a tracestate's ot entry
// against the values the OpenTelemetry specification ("TraceState:
// Probability Sampling") gives: th:c is 3/4 of 2⁵⁶ (keep 1 in 4), th:8 half.
func TestThreshold(t *testing.T) {
	for _, c := range []struct {
		ot   string
		want uint64
	}{
		{"th:c", 0xc << 52},
		{"th:8", 1 << 55},
		{"th:0", 0},
		{"th:C", 0xc << 52},
		{"th:fffffffffffff", 0xfffffffffffff0},
		{"th:ffffffffffffff", 1<<56 - 1},
		{"th:fffffffffffffff", 0}, // 15 digits
		{"th:", 0},
		{"th:g", 0},
		{"", 0},
		{"rv:ffffffffffffff", 0},
		{"rv:ffffffffffffff;th:c", 0xc << 52},
		{"th:c;rv:c0000000000000", 0xc << 52}, // rv = th keeps the span
		{"th:c;rv:bfffffffffffff", 0},         // rv < th would have rejected it
		{"th:c;rv:1", 0xc << 52},              // an rv of another length is ignored
		{"th:c;rv:bfffffffffffff;rv:zzzzzzzzzzzzzz", 0xc << 52}, // the last rv counts, an invalid one as none
		{"th:+f", 0}, // no sign
		{"th:-1", 0},
		{"th:4;th:c", 0x4 << 52}, // the first th counts
		{"th:z;th:c", 0},
		{"p:8;th:4;x:y", 0x4 << 52},
		{";;th:4;", 0x4 << 52},
	} {
		// Every row's 0 is no threshold but th:0's: kept with probability 1.
		wantOK := c.want != 0 || c.ot == "th:0"
		if got, ok := Threshold(c.ot); got != c.want || ok != wantOK {
			t.Errorf("Threshold(%q) = %#x, %v; want %#x, %v", c.ot, got, ok, c.want, wantOK)
		}
	}
}
