// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/suggest"
)

var unmarshalerType = reflect.TypeFor[confmap.Unmarshaler]()

// checkKeys reports every key of m that no field of struct type t reads,
// with the closest valid key. Structs that keep the remaining keys
// (",remain") take any key; nested types that decode themselves
// (confmap.Unmarshaler) may read keys that are not fields, so they are not
// judged, but the top-level struct is (its Unmarshal calls Check). Keys
// match exactly, as the decoder matches them: `Dmax` is not dmax.
func (w *walker) checkKeys(m map[string]any, t reflect.Type, p confpath.Path) {
	if len(p) > 0 && reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	known, open := structKeys(t)
	if open {
		return
	}
	for _, k := range unknownKeys(m, known) {
		if owner := nestedOwner(t, k); owner != "" {
			w.report(p.Field(k), "%s", MisplacedMessage(owner, k))
			continue
		}
		w.report(p.Field(k), "%s", unknownMessage(k, known))
	}
}

// MisplacedMessage is what is said of option k written beside the section
// owner (a path such as triggers.divergence) that it belongs to.
func MisplacedMessage(owner, k string) string {
	parts := strings.Split(owner, ".")
	flow := k + ": …"
	for i := len(parts) - 1; i >= 0; i-- {
		flow = parts[i] + ": {" + flow + "}"
	}
	return fmt.Sprintf("an option of %s, not of this level: write it under %s (%s)", owner, owner, flow)
}

// NestedOwner is nestedOwner of the struct cfg points to (or is).
func NestedOwner(cfg any, k string) string { return nestedOwner(deref(reflect.TypeOf(cfg)), k) }

// nestedOwner returns the path, from struct type t, of the nearest nested
// section that has the option k (span_name written beside match rather
// than in it: "match"; alpha beside triggers: "triggers.divergence"), at
// most two sections down, or "" for none.
func nestedOwner(t reflect.Type, k string) string {
	return ownerWithin(t, k, 2)
}

// ownerWithin is nestedOwner looking depth sections down, the shallower
// first.
func ownerWithin(t reflect.Type, k string, depth int) string {
	var sections []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if !f.IsExported() || key == "" || key == "-" || strings.Contains(opts, "squash") {
			continue
		}
		ft := deref(f.Type)
		if ft.Kind() != reflect.Struct {
			continue
		}
		inner, open := structKeys(ft)
		if open {
			continue
		}
		if HasKey(inner, k) {
			return key
		}
		sections = append(sections, f)
	}
	if depth <= 1 {
		return ""
	}
	for _, f := range sections {
		key, _, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if sub := ownerWithin(deref(f.Type), k, depth-1); sub != "" {
			return key + "." + sub
		}
	}
	return ""
}

// HasKey reports whether keys holds k. Case counts, as it does for the
// collector's decoder (confmap matches keys case-sensitively): `Dmax`
// would reach it, to be refused as "invalid keys: Dmax" with no path and
// no suggestion.
func HasKey(keys []string, k string) bool { return slices.Contains(keys, k) }

// unknownKeys returns the keys of m that known lacks, sorted, matched as
// HasKey matches them.
func unknownKeys(m map[string]any, known []string) []string {
	unknown := make([]string, 0)
	for k := range m {
		if !HasKey(known, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// unknownMessage is what is said of an unknown key k where the keys known
// are valid: the closest of them, else all of them.
func unknownMessage(k string, known []string) string {
	if hint := suggest.Closest(k, known, 2); len(hint) > 0 {
		return fmt.Sprintf("unknown option; did you mean %s?", strings.Join(hint, " or "))
	}
	valid := slices.Clone(known)
	slices.Sort(valid)
	return "unknown option; the options here are " + strings.Join(valid, ", ")
}

// Keys returns the keys the collector's decoder reads into the struct cfg
// points to (or is), squashed structs' keys included.
func Keys(cfg any) []string {
	keys, _ := structKeys(deref(reflect.TypeOf(cfg)))
	return keys
}

// TakeUnknown removes from m (which it changes) the keys that known lacks
// and returns their problems, at p, in the words of Check: for a
// component that reads some keys of a section itself before Check sees the
// rest, so that the unknown ones are named with every valid key.
func TakeUnknown(m map[string]any, known []string, p confpath.Path) []error {
	var errs []error
	for _, k := range unknownKeys(m, known) {
		errs = append(errs, confpath.Errorf(p.Field(k), "%s", unknownMessage(k, known)))
		delete(m, k)
	}
	return errs
}

// structKeys returns the keys the collector's decoder reads into struct
// type t (squashed structs' keys included) and whether t keeps any other
// key (a ",remain" field).
func structKeys(t reflect.Type) (keys []string, open bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		key, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		flags := strings.Split(opts, ",")
		switch {
		case key == "-":
			continue
		case slices.Contains(flags, "remain"):
			return nil, true
		case slices.Contains(flags, "squash"):
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				continue
			}
			inner, innerOpen := structKeys(ft)
			if innerOpen {
				return nil, true
			}
			keys = append(keys, inner...)
			continue
		case !f.IsExported():
			continue
		}
		if key == "" {
			key = f.Name
		}
		keys = append(keys, key)
	}
	return keys, false
}

// durationUnits maps units people write to Go's: "2min" means 2m.
var durationUnits = map[string]string{
	"nsec": "ns", "nsecs": "ns", "nanosecond": "ns", "nanoseconds": "ns",
	"usec": "us", "usecs": "us", "microsecond": "us", "microseconds": "us",
	"msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms", "millis": "ms",
	"sec": "s", "secs": "s", "second": "s", "seconds": "s", "S": "s",
	"min": "m", "mins": "m", "minute": "m", "minutes": "m", "M": "m",
	"hr": "h", "hrs": "h", "hour": "h", "hours": "h", "H": "h",
	"d": "", "day": "", "days": "",
}

// badDuration says why s is not a duration and how to write it: the units
// Go's time.ParseDuration knows, and s rewritten in them when its unit is a
// common spelling of one ("2min" → 2m; "1d" → 24h).
func badDuration(s string) string {
	msg := fmt.Sprintf("%q is not a duration: the units are ns, us (or µs), ms, s, m and h", s)
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := strings.TrimSpace(s[len(num):])
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || num == "" {
		return msg + ", for example 500ms or 2s"
	}
	goUnit, known := durationUnits[unit]
	if !known {
		goUnit, known = durationUnits[strings.ToLower(unit)]
	}
	switch {
	case !known:
		return msg + ", for example 500ms or 2s"
	case goUnit == "": // days: time.ParseDuration has no unit for them
		return msg + fmt.Sprintf("; write %v", time.Duration(v*float64(24*time.Hour)))
	}
	return msg + fmt.Sprintf("; write %s%s", strings.TrimSpace(num), goUnit)
}
