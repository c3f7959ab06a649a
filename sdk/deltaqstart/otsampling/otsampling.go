// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package otsampling reads the sampling threshold that OpenTelemetry
// probability sampling records in the OpenTelemetry entry of a span's W3C
// tracestate (OpenTelemetry, "TraceState: Probability Sampling"). The
// start-event client (deltaqstart) and the collector's components read it
// the same way through this one package: the client writes the threshold
// beside each start it sends, the collector weighs each span by it. It
// depends on nothing but the standard library, so that both modules can
// import it.
package otsampling // import "github.com/deltaq-otel/deltaq/sdk/deltaqstart/otsampling"

import (
	"strconv"
	"strings"
)

// Threshold returns the 56-bit rejection threshold T of ot, the value of
// the OpenTelemetry entry of a tracestate (what follows "ot="): its th
// sub-key, 1 to 14 hex digits with the trailing zeros omitted, the span
// having been kept with probability (2⁵⁶ − T)/2⁵⁶. It returns false when ot
// has no valid th (only the first counts), and when ot's explicit
// randomness value rv (exactly 14 hex digits; one of another length is
// ignored) is below T: that threshold would have rejected the span ("keep
// when rv ≥ th"), so the span was not kept with it, and the specification
// asks every sampling stage to make this check and to erase such a
// threshold ("Tracestate handling requirements"). It does not allocate.
func Threshold(ot string) (uint64, bool) {
	var th, rv uint64
	var hasTh, hasRv, seenTh bool
	// ot is key:value pairs separated by ';'.
	for ot != "" {
		var kv string
		kv, ot, _ = strings.Cut(ot, ";")
		switch {
		case len(kv) < 3:
		case kv[:3] == "th:" && !seenTh:
			seenTh = true
			th, hasTh = hexValue(kv[3:])
		case kv[:3] == "rv:" && len(kv) == 3+14:
			rv, hasRv = hexValue(kv[3:])
		}
	}
	if !hasTh || hasRv && rv < th {
		return 0, false
	}
	return th, true
}

// hexValue parses a th (or rv) value: 1 to 14 hex digits, the 56-bit value
// with its trailing zeros omitted.
func hexValue(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 14 {
		return 0, false
	}
	// Upper case too, as contrib's sampling package accepts it; no sign.
	t, err := strconv.ParseUint(s, 16, 64)
	return t << (4 * (14 - len(s))), err == nil
}
