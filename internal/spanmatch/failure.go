// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

// The failure rule: which spans that ended within dMax are failures, from
// their status and attribute conditions with configured literals.

import (
	"cmp"
	"errors"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Failure decides which spans that ended within dMax are failures. The zero
// Failure holds for no span; CompileFailure makes one from its options.
type Failure struct {
	statusError bool
	conds       []condition
}

// Holds reports whether the span is a failure: status ERROR (when the rule
// counts it) or any condition holds. It allocates nothing.
func (f *Failure) Holds(span ptrace.Span) bool {
	if f.statusError && span.Status().Code() == ptrace.StatusCodeError {
		return true
	}
	if len(f.conds) == 0 {
		return false
	}
	attrs := span.Attributes()
	for i := range f.conds {
		if f.conds[i].holds(attrs) {
			return true
		}
	}
	return false
}

// errContractKey refuses a condition on an outcome attribute: the processor
// removes those from every span it receives before it matches the span, so
// such a condition could never hold.
var errContractKey = errors.New("is an attribute the deltaq processor writes (and removes from incoming spans), so no span can carry it here")

// CompileFailure checks the failure option of a probe or of a component and
// compiles it. Each error names its field (failure.conditions[0].op: …).
func CompileFailure(fc *FailureConfig) (Failure, []error) {
	var errs []error
	f := Failure{statusError: fc.StatusError == nil || *fc.StatusError}
	for i, cc := range fc.Conditions {
		c, err := compileCondition(&cc)
		if err == nil && contract.IsContractAttr(cc.Attribute) {
			err = confpath.Errorf(confpath.Fields("attribute"), "%q %w", cc.Attribute, errContractKey)
		}
		if err != nil {
			errs = append(errs, confpath.Under(confpath.Fields("failure", "conditions").Index(i), err))
			continue
		}
		f.conds = append(f.conds, c)
	}
	return f, errs
}

// op is a comparison operator of a failure condition.
type op uint8

const (
	opEq op = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var ops = map[string]op{"": opEq, "==": opEq, "=": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

// condition compares one span attribute with a literal.
type condition struct {
	key string
	op  op
	val literal
}

func compileCondition(cc *ConditionConfig) (condition, error) {
	if cc.Attribute == "" {
		return condition{}, confpath.Errorf(confpath.Fields("attribute"), "must not be empty")
	}
	o, ok := ops[cc.Op]
	if !ok {
		return condition{}, confpath.Errorf(confpath.Fields("op"), "unknown operator %q (want ==, !=, <, <=, > or >=)", cc.Op)
	}
	lit, err := literalOf(cc.Value)
	if err != nil {
		return condition{}, confpath.Under(confpath.Fields("value"), err)
	}
	if o >= opLt && lit.kind != litInt && lit.kind != litDouble {
		return condition{}, confpath.Errorf(confpath.Fields("value"), "operator %s needs a number, got %#v", cc.Op, cc.Value)
	}
	return condition{key: cc.Attribute, op: o, val: lit}, nil
}

// holds reports whether the condition holds for the attributes. It does not
// hold when the attribute is absent, or when an ordering operator meets a
// value that is not a number.
func (c *condition) holds(attrs pcommon.Map) bool {
	v, ok := attrs.Get(c.key)
	if !ok {
		return false
	}
	switch c.op {
	case opEq:
		return c.val.equal(v)
	case opNe:
		return !c.val.equal(v)
	}
	r, ok := c.val.compareNumber(v)
	if !ok {
		return false
	}
	switch c.op {
	case opLt:
		return r < 0
	case opLe:
		return r <= 0
	case opGt:
		return r > 0
	default: // opGe
		return r >= 0
	}
}

type litKind uint8

const (
	litString litKind = iota + 1
	litBool
	litInt
	litDouble
)

// literal is a configured attribute value.
type literal struct {
	kind litKind
	s    string
	b    bool
	i    int64
	f    float64
}

// equal reports whether v equals the literal. Strings and booleans equal
// values of their own type; numbers equal int and double values of the same
// numeric value.
func (l *literal) equal(v pcommon.Value) bool {
	switch l.kind {
	case litString:
		return v.Type() == pcommon.ValueTypeStr && v.Str() == l.s
	case litBool:
		return v.Type() == pcommon.ValueTypeBool && v.Bool() == l.b
	default:
		r, ok := l.compareNumber(v)
		return ok && r == 0
	}
}

// compareNumber returns the sign of v − l for a numeric v and literal; ok is
// false when either is not a number (or v is NaN). An int compared with an
// int is exact; otherwise both are compared as float64.
func (l *literal) compareNumber(v pcommon.Value) (sign int, ok bool) {
	if l.kind != litInt && l.kind != litDouble {
		return 0, false
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if l.kind == litInt {
			return cmp.Compare(v.Int(), l.i), true
		}
		return cmp.Compare(float64(v.Int()), l.f), true
	case pcommon.ValueTypeDouble:
		x := v.Double()
		if math.IsNaN(x) {
			return 0, false
		}
		if l.kind == litInt {
			return cmp.Compare(x, float64(l.i)), true
		}
		return cmp.Compare(x, l.f), true
	}
	return 0, false
}
