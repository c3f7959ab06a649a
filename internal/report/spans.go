// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// maxSpanNames bounds the distinct span names spanNames tracks, and
// topSpanNames the names it reports.
const (
	maxSpanNames = 1000
	topSpanNames = 10
)

// spanNames counts the spans read by name, to report the most frequent
// names of an input that no probe matches. At most maxSpanNames distinct
// names are tracked, each cut to contract.MaxNameLength bytes; the spans of
// further names are counted in untracked.
type spanNames struct {
	counts           map[string]int64
	spans, untracked int64
	// latestEnd is the latest end time read so far, behind the most a span
	// ended before a span read earlier: the lag that would have kept every
	// window open for it.
	latestEnd, behind pcommon.Timestamp
}

// forEachSpan calls fn with every span of td.
func forEachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, span := range ss.Spans().All() {
				fn(span)
			}
		}
	}
}

// AddSpans counts the spans of td by name: the function the input is read
// through, for the names of an input that no probe matches.
func (r *Report) AddSpans(td ptrace.Traces) { r.names.add(td) }

// SpansRead returns the number of spans AddSpans has counted.
func (r *Report) SpansRead() int64 { return r.names.spans }

func (s *spanNames) add(td ptrace.Traces) {
	if s.counts == nil {
		s.counts = make(map[string]int64)
	}
	forEachSpan(td, func(span ptrace.Span) {
		s.spans++
		if end := span.EndTimestamp(); end < s.latestEnd {
			s.behind = max(s.behind, s.latestEnd-end)
		} else {
			s.latestEnd = end
		}
		name := span.Name()
		if len(name) > contract.MaxNameLength {
			name = name[:contract.MaxNameLength]
		}
		if _, ok := s.counts[name]; !ok && len(s.counts) >= maxSpanNames {
			s.untracked++
			return
		}
		if _, ok := s.counts[name]; !ok {
			name = strings.Clone(name) // do not keep the pdata alive
		}
		s.counts[name]++
	})
}

// nameCount is one span name and its number of spans.
type nameCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// top returns the n most frequent names, by count then name.
func (s *spanNames) top(n int) []nameCount {
	all := make([]nameCount, 0, len(s.counts))
	for name, c := range s.counts {
		all = append(all, nameCount{Name: name, Count: c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Count != all[j].Count {
			return all[i].Count > all[j].Count
		}
		return all[i].Name < all[j].Name
	})
	return all[:min(n, len(all))]
}

func (s *spanNames) writeText(w io.Writer) {
	fmt.Fprintf(w, "\nno span matched any probe: %d spans read", s.spans)
	if s.spans == 0 {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "; the most frequent span names:\n")
	for _, nc := range s.top(topSpanNames) {
		fmt.Fprintf(w, "  %8d  %s\n", nc.Count, printable.String(nc.Name))
	}
	if s.untracked > 0 {
		fmt.Fprintf(w, "(%d spans were not tracked by name: only the first %d distinct names are)\n", s.untracked, maxSpanNames)
	}
}

// unmatchedSpansJSON is the "unmatched" object of --json.
type unmatchedSpansJSON struct {
	Spans          int64       `json:"spans"`
	SpanNames      []nameCount `json:"span_names"`
	UntrackedSpans int64       `json:"untracked_spans"`
	TrackedNames   int         `json:"tracked_names_limit"`
}

func (s *spanNames) json() *unmatchedSpansJSON {
	return &unmatchedSpansJSON{Spans: s.spans, SpanNames: s.top(topSpanNames), UntrackedSpans: s.untracked, TrackedNames: maxSpanNames}
}
