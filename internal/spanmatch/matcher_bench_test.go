// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// BenchmarkAppendMatches finds the probes of 1000 spans among ten probes
// matched by span name (the probes of bench/'s one-component collector),
// the spans' names in turn: ns/op is per span.
func BenchmarkAppendMatches(b *testing.B) {
	var rules []Rule
	for i := range 10 {
		r, errs := Compile(&MatchConfig{SpanName: fmt.Sprintf("op-%d", i)}, fmt.Sprintf("p%d", i))
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		rules = append(rules, r)
	}
	m := NewMatcher(rules)
	spans := ptrace.NewSpanSlice()
	for i := range 1000 {
		spans.AppendEmpty().SetName(fmt.Sprintf("op-%d", i%10))
	}
	res := NewResource(ptrace.NewResourceSpans().Resource())
	var buf [8]int32
	b.ReportAllocs()
	for b.Loop() {
		for i := range spans.Len() {
			if hits := m.AppendMatches(buf[:0], spans.At(i), &res); len(hits) != 1 {
				b.Fatalf("span %d matched %v", i, hits)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans.Len()), "ns/span")
}
