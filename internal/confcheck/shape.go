// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// checkShape reports a value the collector's decoder would refuse for a
// field of type t (pointers followed) because of its shape — a string
// where a map of options is expected (`binning: log-linear`), a word where
// a number is (`bins: many`), a number where a string is (`span_name:
// 404`) — and returns false; the walk then goes no deeper. The decoder
// would refuse it too, but in its own notation and, in a section a
// component decodes apart (a probe's match), at a path without the probe:
// "'match' expected a map or struct, got "string"". Here the message names
// the option at its whole path and says what it takes: "probes["pay"].binning:
// must be a map of its options (factor, high, kind, low, steps), got the
// string "log-linear"".
//
// What the decoder takes is as the collector configures it (no weak
// typing): nil anywhere (the zero value); a map for a type that decodes
// itself (confmap.Unmarshaler), a struct or a map; a list for a list, or
// a string for a []string, which it splits at commas; a string for a string, and a value expanded from a ${…} reference
// whatever it parsed as (its text); true or false for a bool; a number for
// a number (checkInt and checkFloat judge which). Durations
// (checkDuration), types that decode themselves from text and interfaces
// are not judged here. orig is the value before Value, raw after it.
func (w *walker) checkShape(orig, raw any, t reflect.Type, p confpath.Path) bool {
	if raw == nil {
		return true
	}
	if _, ok := reflect.PointerTo(t).MethodByName("UnmarshalScalar"); ok {
		return true // it decodes itself from a scalar too (confmap's ScalarUnmarshaler)
	}
	if _, isMap := raw.(map[string]any); isMap && reflect.PointerTo(t).Implements(unmarshalerType) {
		// It decodes itself from a map, whatever its kind: the collector's
		// header lists (configopaque.MapList, a list of pairs) are
		// written as maps.
		return true
	}
	var want string
	switch t.Kind() {
	case reflect.Struct:
		if _, ok := raw.(map[string]any); ok {
			return true
		}
		want = "a map"
		if keys, open := structKeys(t); !open && len(keys) > 0 {
			slices.Sort(keys) // structKeys makes a new list each call
			want = "a map of its options (" + strings.Join(keys, ", ") + ")"
		}
	case reflect.Map:
		if _, ok := raw.(map[string]any); ok {
			return true
		}
		want = "a map"
		if elem := deref(t.Elem()); elem.Kind() == reflect.Struct {
			want = "a map from each name to its options"
			if name := listedName(raw); name != "" {
				w.report(p, "must be %s, got a list; write each item under its name (%s: {…})", want, name)
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		if _, ok := raw.([]any); ok {
			return true
		}
		if _, ok := raw.(string); ok && t == stringsType {
			return true
		}
		want = "a list"
	case reflect.String:
		if _, ok := raw.(string); ok || isExpanded(orig) {
			return true
		}
		want = "a string"
		if written, _, ok := number(raw); ok {
			want = fmt.Sprintf("a string (quote it: %q)", written)
		}
	case reflect.Bool:
		if _, ok := raw.(bool); ok {
			return true
		}
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, _, ok := number(raw); ok {
			return true
		}
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		if _, _, ok := number(raw); ok {
			return true
		}
		if s, ok := raw.(string); ok && percentage(s) {
			return true // checkFloat says which fraction to write
		}
		want = "a number"
	default:
		return true
	}
	w.report(p, "must be %s, got %s", want, describe(raw))
	return false
}

// deref is t with its pointers followed.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// listedName returns the name of the first item of a list of maps that
// name themselves (`- {name: pay, …}`), as a map keyed by name is written
// in the other shape, else "".
func listedName(raw any) string {
	l, ok := raw.([]any)
	if !ok || len(l) == 0 {
		return ""
	}
	m, ok := Value(l[0]).(map[string]any)
	if !ok {
		return ""
	}
	name, _ := Value(m["name"]).(string)
	return name
}

// stringsType is the one list type the decoder takes a string into: it
// splits the string at commas (mapstructure.StringToSliceHookFunc).
var stringsType = reflect.TypeFor[[]string]()

// isExpanded reports whether v is a value the collector expanded from a
// ${…} reference, which a string field takes as the text it replaced.
func isExpanded(v any) bool {
	if v == nil {
		return false
	}
	t := reflect.TypeOf(v)
	return t.Kind() == reflect.Struct && t.Name() == expandedName && t.PkgPath() == expandedPkg
}

// describe names a raw value as a message quotes it: the string "x", the
// number 5, true, a list, a map.
func describe(raw any) string {
	switch v := raw.(type) {
	case string:
		return "the string " + strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	if written, _, ok := number(raw); ok {
		return "the number " + written
	}
	return fmt.Sprintf("%v", raw)
}
