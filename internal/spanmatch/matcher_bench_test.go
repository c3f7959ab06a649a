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

// BenchmarkNameIndex looks span names up among n exact names in a
// nameIndex and, for comparison, in a map: names of one length that
// differ only at their end (the index's worst case), half the names
// looked up among the n and half not, each a fresh string as a decoded
// span's name is. ns/lookup is per look-up.
func BenchmarkNameIndex(b *testing.B) {
	for _, n := range []int{1, 3, 8, 16, 64} {
		var idx nameIndex
		byMap := map[string][]int32{}
		for i := range n {
			name := fmt.Sprintf("worker_%03d", i)
			idx.add(name, int32(i))
			byMap[name] = []int32{int32(i)}
		}
		var lookups []string
		for i := range 2 * n {
			lookups = append(lookups, string([]byte(fmt.Sprintf("worker_%03d", i))))
		}
		for _, c := range []struct {
			name string
			get  func(string) []int32
		}{{"index", idx.get}, {"map", func(s string) []int32 { return byMap[s] }}} {
			b.Run(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) {
				found := 0
				for b.Loop() {
					for _, s := range lookups {
						if c.get(s) != nil {
							found++
						}
					}
				}
				if found != b.N*n {
					b.Fatalf("found %d names, want %d", found, b.N*n)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lookups)), "ns/lookup")
			})
		}
	}
}
