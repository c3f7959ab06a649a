// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// traceIDToken is what a trace URL template (--trace-url) has in place of a
// trace id.
const traceIDToken = "{trace_id}"

// maxTraceLinks bounds the trace links one trigger carries: the ids of
// deltaq.trace_ids.* (worst_instances of each of three kinds, at most 100
// each) and of the record's own trace context.
const maxTraceLinks = 16

// TraceURL is a template of the address of one trace in a tracing UI, with
// {trace_id} where the trace's id goes (32 lowercase hex digits): Jaeger's
// "http://jaeger:16686/trace/{trace_id}", Tempo's or any other's through
// Grafana Explore, or a tracing backend's own page. Empty: no links.
type TraceURL string

// Validate reports a template that is not an http or https URL with
// {trace_id} in it.
func (t TraceURL) Validate() error {
	if t == "" {
		return nil
	}
	s := string(t)
	if !strings.Contains(s, traceIDToken) {
		return fmt.Errorf("--trace-url %q: no %s in it, where the trace id goes", s, traceIDToken)
	}
	u, err := url.Parse(t.Link("0af7651916cd43dd8448eb211c80319c"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--trace-url %q: want an http:// or https:// address, such as http://jaeger:16686/trace/%s", s, traceIDToken)
	}
	return nil
}

// Link is the address of the trace id, a 32-digit lowercase hex string.
func (t TraceURL) Link(id string) string {
	return strings.ReplaceAll(string(t), traceIDToken, id)
}

// traceLinks returns the links of a trigger record to its traces, trace id
// → address: the record's own trace context (its worst instance) and the
// ids of its deltaq.trace_ids.* attributes; nil without a template. Only
// well-formed ids (32 hex digits, not all zero) are linked, at most
// maxTraceLinks.
func (t TraceURL) traceLinks(lr plog.LogRecord) map[string]string {
	if t == "" {
		return nil
	}
	links := map[string]string{}
	add := func(id string) {
		if len(links) < maxTraceLinks && validTraceID(id) {
			links[id] = t.Link(id)
		}
	}
	if id := lr.TraceID(); !id.IsEmpty() {
		add(hex.EncodeToString(id[:]))
	}
	for _, key := range [...]string{contract.AttrSlowestTraceIDs, contract.AttrTimeoutTraceIDs, contract.AttrFailureTraceIDs} {
		v, ok := lr.Attributes().Get(key)
		if !ok || v.Type() != pcommon.ValueTypeSlice {
			continue
		}
		for _, e := range v.Slice().All() {
			add(e.Str())
		}
	}
	if len(links) == 0 {
		return nil
	}
	return links
}

// validTraceID reports whether s is a W3C trace id: 32 lowercase hex
// digits, not all zero.
func validTraceID(s string) bool {
	if len(s) != 32 || strings.Trim(s, "0") == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
