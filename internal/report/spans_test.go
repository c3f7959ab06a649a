// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestSpanNamesBounded: at most maxSpanNames names are tracked, each cut to
// contract.MaxNameLength bytes; the spans of the others are counted.
func TestSpanNamesBounded(t *testing.T) {
	var s spanNames
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range maxSpanNames + 5 {
		spans.AppendEmpty().SetName(fmt.Sprintf("name-%d", i))
	}
	long := strings.Repeat("x", 1000)
	spans.AppendEmpty().SetName("name-0")
	s.add(td)
	if len(s.counts) != maxSpanNames || s.untracked != 5 || s.spans != maxSpanNames+6 || s.counts["name-0"] != 2 {
		t.Errorf("%d names, %d untracked, %d spans, name-0 %d; want %d, 5, %d, 2", len(s.counts), s.untracked, s.spans, s.counts["name-0"], maxSpanNames, maxSpanNames+6)
	}
	var l spanNames
	td = ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName(long)
	l.add(td)
	if top := l.top(10); len(top) != 1 || len(top[0].Name) != 256 {
		t.Errorf("a 1000-byte name is kept as %d bytes, want 256", len(top[0].Name))
	}
}
