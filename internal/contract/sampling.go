// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"math"
	"strings"

	"github.com/deltaq-otel/deltaq/sdk/deltaqstart/otsampling"
)

// Sampling information a span may carry, read by the deltaq components to
// count each instance with its adjusted count: the number of instances of
// the population a sampled span stands for.
const (
	// AttrSamplingPriority is the OpenTracing "sampling.priority" span tag
	// that contrib's probabilistic sampler obeys: a value > 0 keeps the span
	// whatever the probability (the sampler then records the threshold 0,
	// always sample), so the span stands for itself alone.
	AttrSamplingPriority = "sampling.priority"
	// AttrTraceState is the start event attribute that carries the span's
	// W3C tracestate, so that a timeout reported from a start event counts
	// with the adjusted count of the span that never arrived.
	AttrTraceState = "deltaq.tracestate"
)

// maxThreshold is 2⁵⁶: a threshold is 56 bits, written as at most 14 hex
// digits with trailing zeros omitted.
const maxThreshold = 1 << 56

// AdjustedCount returns the adjusted count of a span whose W3C tracestate
// is ts, from the rejection threshold T of its OpenTelemetry entry
// (`ot=th:…`, OpenTelemetry "TraceState: Probability Sampling"): the span
// was kept with probability (2⁵⁶ − T)/2⁵⁶ and stands for
//
//	a = 2⁵⁶ / (2⁵⁶ − T)
//
// instances; th:0 is a = 1. It returns false when ts has no `ot` entry with
// a valid th (1 to 14 hex digits), or when the threshold is inconsistent
// with the entry's explicit randomness value (Threshold): a span without
// sampling information counts as one. It does not allocate: it runs once
// per counted span.
func AdjustedCount(ts string) (float64, bool) {
	t, ok := Threshold(ts)
	if !ok {
		return 0, false
	}
	return float64(maxThreshold) / float64(maxThreshold-t), true
}

// Threshold returns the 56-bit rejection threshold T of a W3C tracestate's
// `ot=th:…` entry (AdjustedCount), or false when it has none: the entry's
// value read as the start-event client reads it (otsampling.Threshold,
// which also refuses a threshold the span's own explicit randomness value
// contradicts). It does not allocate.
func Threshold(ts string) (uint64, bool) {
	ot, ok := memberValue(ts)
	if !ok {
		return 0, false
	}
	return otsampling.Threshold(ot)
}

// ThresholdTraceState returns the W3C tracestate `ot=th:…` that carries the
// threshold t < 2⁵⁶: 14 lowercase hex digits without their trailing zeros,
// "ot=th:0" for 0 (OpenTelemetry "TraceState: Probability Sampling").
func ThresholdTraceState(t uint64) string {
	const digits = "0123456789abcdef"
	var b [14]byte
	for i := 13; i >= 0; i-- {
		b[i] = digits[t&0xf]
		t >>= 4
	}
	n := 14
	for n > 1 && b[n-1] == '0' {
		n--
	}
	return "ot=th:" + string(b[:n])
}

// memberValue returns the value of the `ot` list member of a W3C
// tracestate: members are key=value, separated by commas with optional
// spaces or tabs around them (W3C Trace Context, "tracestate Header").
func memberValue(ts string) (string, bool) {
	for len(ts) > 0 {
		var m string
		m, ts, _ = strings.Cut(ts, ",")
		m = trimOWS(m)
		if len(m) >= 3 && m[:3] == "ot=" {
			return m[3:], true
		}
	}
	return "", false
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// Weight rounds an adjusted count a ≥ 1 to a whole count by stochastic
// rounding: ⌊a⌋ + 1 with probability a − ⌊a⌋, else ⌊a⌋, so that its
// expectation is a and windows of whole counts still merge exactly by
// adding. The uniform draw comes from key (the span id) through the
// SplitMix64 finalizer, so the same span rounds the same way in every
// collector and every run; the span id, unlike the trace id, is drawn
// independently of the sampling decision. a < 1 or NaN is 1; a above 2⁶²
// is 2⁶² (the engine bounds it further, max_adjusted_count).
func Weight(a float64, key uint64) int64 {
	if !(a > 1) {
		return 1
	}
	if a >= 1<<62 {
		return 1 << 62
	}
	fl := math.Floor(a)
	n := int64(fl)
	if frac := a - fl; frac > 0 {
		// The top 53 bits of the mixed key, uniform in [0, 1).
		if u := float64(splitMix64(key)>>11) / (1 << 53); u < frac {
			n++
		}
	}
	return n
}

// splitMix64 is the finalizer of SplitMix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014).
func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
