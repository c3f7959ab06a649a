// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package confpath names where a value is in a configuration, and carries
// a problem found there as an error that knows where it is (Error), so
// that every message of the deltaq components names its option one way.
//
// Two notations, each for one thing:
//
//   - an option within a component's section is written by Path.String:
//     fields joined by dots, list indexes and quoted map keys in brackets,
//     probes["checkout"].qta.points[1].delay;
//   - a component's section in the collector's configuration is written by
//     Section in the collector's key notation, processors::deltaq, as the
//     collector's --set flags and its own messages address a component.
//
// A check writes each problem at the path of its own options (bins, or
// binning.factor); Under puts the problems under the option that holds
// them (probes["checkout"]) by joining the paths, so that no message is
// ever read back to find where it is. The package imports nothing but the
// standard library: the configuration of the ΔQ algebra's log-linear
// binning writes its problems so too.
package confpath // import "github.com/deltaq-otel/deltaq/internal/confpath"

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Step is one step of a Path: a struct field's key, a map key, or a list
// index.
type Step struct {
	// Key is the key of a struct field or of a map entry; empty for an index.
	Key string
	// Index is the position in a list, when IsIndex.
	Index   int
	IsIndex bool
	// IsMapKey says that Key is a key of a map (for example a probe name),
	// not the name of a field.
	IsMapKey bool
}

// Path locates a value in a configuration, from the component's section.
// The methods that extend a Path never share its backing array.
type Path []Step

// Fields returns the path of nested fields, Fields("triggers", "divergence",
// "alpha") for triggers.divergence.alpha.
func Fields(keys ...string) Path {
	p := make(Path, len(keys))
	for i, k := range keys {
		p[i] = Step{Key: k}
	}
	return p
}

// Field returns p followed by the field key: p.key.
func (p Path) Field(key string) Path { return append(slices.Clip(p), Step{Key: key}) }

// Index returns p followed by the list index i: p[i].
func (p Path) Index(i int) Path { return append(slices.Clip(p), Step{Index: i, IsIndex: true}) }

// Key returns p followed by the map key: p["key"].
func (p Path) Key(key string) Path { return append(slices.Clip(p), Step{Key: key, IsMapKey: true}) }

// String writes p as the components' messages do: fields joined by dots,
// list indexes and quoted map keys in brackets, for example
// probes[0].dmax or probes["checkout"].bins.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.IsIndex:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case s.IsMapKey:
			fmt.Fprintf(&b, "[%q]", s.Key)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.Key)
		}
	}
	return b.String()
}

// Error is a problem with the value at Path: its message is the path, a
// colon and Err's message (probes["checkout"].bins: must be in [1, 1000],
// got 0). errors.Is and errors.As see Err through it.
type Error struct {
	Path Path
	Err  error
}

func (e *Error) Error() string {
	if len(e.Path) == 0 {
		return e.Err.Error()
	}
	return e.Path.String() + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns the problem at p that fmt.Errorf(format, args...)
// describes.
func Errorf(p Path, format string, args ...any) error {
	return Under(p, fmt.Errorf(format, args...))
}

// Under returns err as the problem of the value at p, or nil for a nil err:
// an *Error at q becomes the *Error at p followed by q (probes["checkout"]
// and bins give probes["checkout"].bins: …); each error of an errors.Join
// is put under p in turn; any other error is the *Error at p whose cause
// is err (probes["checkout"]: dmax, exponent: set either …). Any other
// list of errors (a diagram's, one a line at its position) is one cause,
// its text preceded by the path once. An empty p leaves err as it is.
func Under(p Path, err error) error {
	if err == nil || len(p) == 0 {
		return err
	}
	if e, ok := err.(*Error); ok {
		return &Error{Path: slices.Concat(p, e.Path), Err: e.Err}
	}
	if reflect.TypeOf(err) == joinType {
		errs := err.(interface{ Unwrap() []error }).Unwrap()
		under := make([]error, len(errs))
		for i, err := range errs {
			under[i] = Under(p, err)
		}
		return errors.Join(under...)
	}
	return &Error{Path: slices.Clone(p), Err: err}
}

// joinType is the type of the errors errors.Join returns.
var joinType = reflect.TypeOf(errors.Join(errors.New("")))

// keyDelimiter joins the keys of the collector's configuration, as
// confmap.KeyDelimiter (which this package does not import) does.
const keyDelimiter = "::"

// Section returns the key of a component's section in the collector's
// configuration, kind (processors, connectors, exporters) and the
// component's ID (deltaq, deltaq/gateway) joined as the collector joins
// keys: processors::deltaq.
func Section(kind, id string) string {
	return kind + keyDelimiter + id
}
