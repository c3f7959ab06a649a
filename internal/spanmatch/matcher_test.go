// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// compile compiles the match options of probes named p0, p1, … into a
// matcher.
func compile(t *testing.T, ms ...MatchConfig) *Matcher {
	t.Helper()
	rules := make([]Rule, len(ms))
	for i := range ms {
		var errs []error
		rules[i], errs = Compile(&ms[i], "p"+string(rune('0'+i)))
		require.Empty(t, errs)
	}
	return NewMatcher(rules)
}

func span(name string, kind ptrace.SpanKind) ptrace.Span {
	s := ptrace.NewSpan()
	s.SetName(name)
	s.SetKind(kind)
	return s
}

// TestRegexpNameCache checks that matching stays right when the cache of
// span names is full and when names repeat.
func TestRegexpNameCache(t *testing.T) {
	m := compile(t,
		MatchConfig{SpanNameRegexp: `items/\d+$`},
		MatchConfig{SpanNameRegexp: `(?i)^get `},
		MatchConfig{SpanNameRegexp: `^GET /x`, SpanKind: "client"},
	)
	m.names.init(3)
	tests := []struct {
		name string
		kind ptrace.SpanKind
		want int
		all  []int32
	}{
		{"GET /items/1", ptrace.SpanKindServer, 0, []int32{0, 1}},
		{"get /items/x", ptrace.SpanKindServer, 1, []int32{1}},
		{"POST /items/1", ptrace.SpanKindServer, 0, []int32{0}},
		{"POST /other", ptrace.SpanKindServer, -1, nil},
		{"GET /x", ptrace.SpanKindServer, 1, []int32{1}}, // p2 needs kind client
		{"GET /x", ptrace.SpanKindClient, 1, []int32{1, 2}},
		{"PUT /x", ptrace.SpanKindClient, -1, nil},
	}
	for round := range 2 { // the second round reads the cache where it has the name
		for _, tt := range tests {
			s := span(tt.name, tt.kind)
			res := NewResource(pcommon.NewResource())
			assert.Equal(t, tt.want, m.Match(s, &res), "round %d: %q", round, tt.name)
			assert.Equal(t, tt.all, m.AppendMatches(nil, s, &res), "round %d: %q", round, tt.name)
			for i := range 3 {
				assert.Equal(t, slices.Contains(tt.all, int32(i)), m.Holds(i, s, &res), "rule %d: %q", i, tt.name)
			}
		}
	}
	assert.Len(t, *m.names.m.Load(), 3, "the cache stops at its limit")
}

// TestLongSpanNamesAreNotCached: a span name longer than
// contract.MaxNameLength is matched against the expressions like any other,
// but not kept in the name cache, whose bound counts names.
func TestLongSpanNamesAreNotCached(t *testing.T) {
	m := compile(t, MatchConfig{SpanNameRegexp: `^GET /`})
	for _, name := range []string{"GET /" + strings.Repeat("x", contract.MaxNameLength), "GET /short"} {
		s := span(name, ptrace.SpanKindServer)
		for range 2 {
			res := NewResource(pcommon.NewResource())
			assert.Equal(t, 0, m.Match(s, &res))
		}
	}
	cached := *m.names.m.Load()
	assert.Len(t, cached, 1)
	assert.Contains(t, cached, "GET /short")
}

// TestMatchConditions: the exact name defaults to the probe's name; kind,
// service and attributes must all hold; Match takes the first rule in
// order, AppendMatches every one.
func TestMatchConditions(t *testing.T) {
	m := compile(t,
		MatchConfig{SpanName: "checkout", ServiceName: "shop"},
		MatchConfig{SpanName: "checkout", Attributes: map[string]any{"http.status_code": 200, "region": "eu"}},
		MatchConfig{}, // the name p2
		MatchConfig{SpanNameRegexp: "^check"},
	)
	res := func(service string) *Resource {
		r := pcommon.NewResource()
		if service != "" {
			r.Attributes().PutStr("service.name", service)
		}
		x := NewResource(r)
		return &x
	}
	s := span("checkout", ptrace.SpanKindServer)
	assert.Equal(t, 0, m.Match(s, res("shop")))
	assert.Equal(t, []int32{0, 3}, m.AppendMatches(nil, s, res("shop")))
	assert.Equal(t, 3, m.Match(s, res("other")), "p0 needs service shop, p1 its attributes")
	s.Attributes().PutInt("http.status_code", 200)
	s.Attributes().PutStr("region", "eu")
	assert.Equal(t, 1, m.Match(s, res("other")))
	assert.Equal(t, []int32{0, 1, 3}, m.AppendMatches(nil, s, res("shop")))
	s.Attributes().PutDouble("http.status_code", 200.0) // numbers equal across int and double
	assert.Equal(t, 1, m.Match(s, res("")))
	s.Attributes().PutStr("http.status_code", "200") // a string is not a number
	assert.Equal(t, 3, m.Match(s, res("")))
	assert.Equal(t, 2, m.Match(span("p2", ptrace.SpanKindClient), res("")))
	assert.Equal(t, -1, m.Match(span("other", ptrace.SpanKindClient), res("")))
	// Holds runs one rule, its name included: what AppendMatches lists.
	for _, s := range []ptrace.Span{s, span("checkout", 0), span("p2", 0), span("checkoutx", 0), span("other", 0)} {
		for _, service := range []string{"shop", "other"} {
			all := m.AppendMatches(nil, s, res(service))
			for i := range 4 {
				assert.Equal(t, slices.Contains(all, int32(i)), m.Holds(i, s, res(service)), "rule %d: %q of %s", i, s.Name(), service)
			}
		}
	}
}

// TestAppendMatchesAllocatesNothing: with a destination on the stack, a
// matched and an unmatched span cost no allocation.
func TestAppendMatchesAllocatesNothing(t *testing.T) {
	m := compile(t, MatchConfig{SpanName: "a"}, MatchConfig{SpanName: "b", SpanKind: "server"}, MatchConfig{SpanNameRegexp: "^c"})
	spans := []ptrace.Span{span("a", 0), span("b", ptrace.SpanKindServer), span("cx", 0), span("zzz", 0)}
	r := NewResource(pcommon.NewResource())
	var buf [4]int32
	n := 0
	m.AppendMatches(buf[:0], spans[2], &r) // fills the name cache
	allocs := testing.AllocsPerRun(100, func() {
		for _, s := range spans {
			n += len(m.AppendMatches(buf[:0], s, &r))
		}
	})
	assert.Zero(t, allocs)
	assert.Positive(t, n)
}

// TestCompileErrors: each problem names its field.
func TestCompileErrors(t *testing.T) {
	_, errs := Compile(&MatchConfig{
		SpanName: "a", SpanNameRegexp: "(", SpanKind: "sideways",
		Attributes: map[string]any{"": 1, contract.AttrProbe: "x", "k": []int{1}},
	}, "p")
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	want := []string{"match.span_name, match.span_name_regexp", "match.span_name_regexp: error parsing regexp",
		"match.span_kind: unknown span kind \"sideways\"", "match.attributes: a key must not be empty",
		`match.attributes["deltaq.probe"] is an attribute the deltaq processor writes`, `match.attributes["k"]: value must be a string, number or boolean, got`}
	require.Len(t, msgs, len(want), "%q", msgs)
	for i, w := range want {
		assert.True(t, strings.HasPrefix(msgs[i], w), "%q does not start with %q", msgs[i], w)
	}
	// A misspelled kind is named with the closest one.
	_, errs = Compile(&MatchConfig{SpanKind: "sever"}, "p")
	require.Len(t, errs, 1)
	assert.Equal(t, `match.span_kind: unknown span kind "sever" (did you mean server?) (want internal, server, client, producer or consumer)`, errs[0].Error())
	_, errs = CompileFailure(&FailureConfig{Conditions: []ConditionConfig{{Attribute: "x", Op: "<", Value: "a"}, {Attribute: "deltaq.outcome", Value: "x"}}})
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), "failure.conditions[0].value: operator < needs a number")
	assert.Contains(t, errs[1].Error(), "failure.conditions[1].attribute: \"deltaq.outcome\"")
}

// TestFailure: status ERROR counts unless status_error is false; any
// condition makes a failure; an absent attribute holds no condition.
func TestFailure(t *testing.T) {
	no := false
	s := ptrace.NewSpan()
	def, errs := CompileFailure(&FailureConfig{})
	require.Empty(t, errs)
	noStatus, _ := CompileFailure(&FailureConfig{StatusError: &no,
		Conditions: []ConditionConfig{{Attribute: "http.status_code", Op: ">=", Value: 500}}})
	assert.False(t, def.Holds(s))
	assert.False(t, (&Failure{}).Holds(s), "the zero Failure holds for no span")
	s.Status().SetCode(ptrace.StatusCodeError)
	assert.True(t, def.Holds(s))
	assert.False(t, noStatus.Holds(s))
	for _, c := range []struct {
		v    int64
		want bool
	}{{499, false}, {500, true}, {503, true}} {
		s.Attributes().PutInt("http.status_code", c.v)
		assert.Equal(t, c.want, noStatus.Holds(s), "%d", c.v)
	}
}

// TestNameIndex: a nameIndex returns, for any name, the rules added under
// it in order, as a map would: names of few and many lengths, a length
// shared by more names than it compares in turn (filed by a byte, the
// rules added before kept, keys shared by several names), the empty name,
// names longer than maxIndexedLength, the same name added again, and names
// never added, every short name of the alphabet among them.
func TestNameIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		var x nameIndex
		want := map[string][]int32{}
		var added []string
		for i := range int32(1 + rng.IntN(40)) {
			var name string
			switch r := rng.IntN(10); {
			case r == 0 && len(added) > 0: // a name again
				name = added[rng.IntN(len(added))]
			case r == 1:
				name = strings.Repeat("x", maxIndexedLength-1+rng.IntN(3))
			default: // short names over a small alphabet: lengths shared
				b := make([]byte, rng.IntN(5))
				for k := range b {
					b[k] = "ab"[rng.IntN(2)]
				}
				name = string(b)
			}
			x.add(name, i)
			want[name] = append(want[name], i)
			added = append(added, name)
		}
		lookups := append(added, "c", "abababab", strings.Repeat("y", 100))
		for n := range 5 {
			for bits := range 1 << n {
				b := make([]byte, n)
				for k := range b {
					b[k] = "ab"[bits>>k&1]
				}
				lookups = append(lookups, string(b))
			}
		}
		for _, name := range lookups {
			// A fresh copy, as a decoded span's name is.
			if got := x.get(string([]byte(name))); !slices.Equal(got, want[name]) {
				t.Fatalf("round %d: rules of %q = %v, want %v", round, name, got, want[name])
			}
		}
	}
	// More names of one length than the byte filing takes (maxWideNames):
	// each is found with its rules, at every count on the way to the map,
	// and a name of that length never added with none.
	var x nameIndex
	want := map[string][]int32{}
	for i := range int32(3 * maxWideNames) {
		name := fmt.Sprintf("op-%03d", i%(2*maxWideNames)) // the last third again
		x.add(name, i)
		want[name] = append(want[name], i)
		for k := range 2*maxWideNames + 1 {
			name := fmt.Sprintf("op-%03d", k)
			if got := x.get(string([]byte(name))); !slices.Equal(got, want[name]) {
				t.Fatalf("after %d names: rules of %q = %v, want %v", i+1, name, got, want[name])
			}
		}
	}
}
