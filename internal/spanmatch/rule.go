// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

// A probe's match, compiled: the span name (exact or an expression), then the
// kind, service and attributes the span must have.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

// attrServiceName is the resource attribute naming the service
// (OpenTelemetry semantic conventions, service.name).
const attrServiceName = "service.name"

// Rule is a compiled MatchConfig.
type Rule struct {
	// exact is the span name of a rule without an expression.
	exact string
	// re is the span name expression; nil when the rule matches the exact
	// name.
	re *regexp.Regexp
	// rePrefix is a literal every match of re contains (regexp.LiteralPrefix),
	// a cheap test that rejects most names before the expression runs.
	rePrefix string

	hasKind    bool
	kind       ptrace.SpanKind
	hasService bool
	service    string
	attrs      []attrEquals
}

// attrEquals requires a span attribute to equal a value.
type attrEquals struct {
	key string
	val literal
}

// Compile checks a probe's match options and compiles them. name is the
// span name matched when neither span_name nor span_name_regexp is set:
// the probe's own name. Each error names its field (match.span_kind: …).
func Compile(m *MatchConfig, name string) (Rule, []error) {
	var errs []error
	r := Rule{exact: name}
	if m.SpanName != "" {
		r.exact = m.SpanName
	}
	if m.SpanName != "" && m.SpanNameRegexp != "" {
		errs = append(errs, errors.New("match.span_name, match.span_name_regexp: set at most one"))
	}
	if m.SpanNameRegexp != "" {
		re, err := regexp.Compile(m.SpanNameRegexp)
		if err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("match", "span_name_regexp"), err))
		} else {
			r.re, r.exact = re, ""
			r.rePrefix, _ = re.LiteralPrefix()
		}
	}
	if m.SpanKind != "" {
		k, err := parseSpanKind(m.SpanKind)
		if err != nil {
			errs = append(errs, err)
		}
		r.hasKind, r.kind = true, ptrace.SpanKind(k)
	}
	if m.ServiceName != "" {
		r.hasService, r.service = true, m.ServiceName
	}
	keys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a fixed evaluation order
	for _, k := range keys {
		if k == "" {
			errs = append(errs, confpath.Errorf(confpath.Fields("match", "attributes"), "a key must not be empty"))
			continue
		}
		if contract.IsContractAttr(k) {
			// The key is the subject of the sentence, not a path
			// before a colon: under a probe the message follows its
			// path after one (probes["checkout"]: match.attributes…).
			errs = append(errs, fmt.Errorf("%s %w", confpath.Fields("match", "attributes").Key(k), errContractKey))
			continue
		}
		lit, err := literalOf(m.Attributes[k])
		if err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("match", "attributes").Key(k), err))
			continue
		}
		r.attrs = append(r.attrs, attrEquals{key: k, val: lit})
	}
	return r, errs
}

// matchesRest reports whether the span meets the rule's conditions other
// than the name.
func (r *Rule) matchesRest(span ptrace.Span, res *Resource) bool {
	if r.hasKind && span.Kind() != r.kind {
		return false
	}
	if r.hasService && res.ServiceName() != r.service {
		return false
	}
	if len(r.attrs) > 0 {
		attrs := span.Attributes()
		for i := range r.attrs {
			v, ok := attrs.Get(r.attrs[i].key)
			if !ok || !r.attrs[i].val.equal(v) {
				return false
			}
		}
	}
	return true
}

// Resource reads the service name of a resource once, when a rule first
// needs it: make one per resource of a batch (NewResource).
type Resource struct {
	res     pcommon.Resource
	loaded  bool
	service string
}

// NewResource returns the Resource of r.
func NewResource(r pcommon.Resource) Resource { return Resource{res: r} }

// ServiceName returns the resource's service.name, or "" when it has none
// or it is not a string.
func (r *Resource) ServiceName() string {
	if !r.loaded {
		r.loaded = true
		if v, ok := r.res.Attributes().Get(attrServiceName); ok && v.Type() == pcommon.ValueTypeStr {
			r.service = v.Str()
		}
	}
	return r.service
}

// spanKinds maps the configuration names of span kinds to their OTLP codes
// (opentelemetry-proto, trace.proto, Span.SpanKind).
var spanKinds = map[string]int32{
	"internal": 1,
	"server":   2,
	"client":   3,
	"producer": 4,
	"consumer": 5,
}

// parseSpanKind returns the OTLP code of a span kind name (case-insensitive).
func parseSpanKind(s string) (int32, error) {
	k, ok := spanKinds[strings.ToLower(s)]
	if !ok {
		return 0, confpath.Errorf(confpath.Fields("match", "span_kind"), "unknown span kind %q%s (want internal, server, client, producer or consumer)",
			s, suggest.Hint(s, []string{"internal", "server", "client", "producer", "consumer"}))
	}
	return k, nil
}

// literalOf converts a configured value to a literal.
func literalOf(v any) (literal, error) {
	switch x := v.(type) {
	case nil:
		return literal{}, errors.New("value is required")
	case string:
		return literal{kind: litString, s: x}, nil
	case bool:
		return literal{kind: litBool, b: x}, nil
	case int:
		return literal{kind: litInt, i: int64(x)}, nil
	case int64:
		return literal{kind: litInt, i: x}, nil
	case int32:
		return literal{kind: litInt, i: int64(x)}, nil
	case uint64:
		if x > math.MaxInt64 {
			return literal{}, fmt.Errorf("value %d is out of the int64 range", x)
		}
		return literal{kind: litInt, i: int64(x)}, nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return literal{}, fmt.Errorf("value %d is out of the int64 range", x)
		}
		return literal{kind: litInt, i: int64(x)}, nil
	case float64:
		if math.IsNaN(x) {
			return literal{}, errors.New("value must not be NaN")
		}
		return literal{kind: litDouble, f: x}, nil
	case float32:
		if math.IsNaN(float64(x)) {
			return literal{}, errors.New("value must not be NaN")
		}
		return literal{kind: litDouble, f: float64(x)}, nil
	case []any:
		return literal{}, errors.New("value must be a string, number or boolean, got a list")
	case map[string]any:
		return literal{}, errors.New("value must be a string, number or boolean, got a map")
	default:
		return literal{}, fmt.Errorf("value must be a string, number or boolean, got %T", v)
	}
}
