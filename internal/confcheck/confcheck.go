// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package confcheck finds, in a component's raw configuration, what decoding
// it into the component's Go configuration would lose without a word, so that
// the component can refuse it with a message quoting what was written.
//
// Two things are lost between the YAML and the struct:
//
//   - a time.Duration written as a bare number (`dmax: 500`) decodes as that
//     many nanoseconds, where the writer almost always meant milliseconds or
//     seconds;
//   - a number too large for its integer field (`bins: 100000000000000000000`,
//     which YAML reads as the float 1e20) or not integral (`bins: 2.5`)
//     decodes to a wrapped or truncated value, so that a later range check
//     reports a number nobody wrote (-9223372036854775808, 2).
//
// More mistakes would reach the user only as the decoder's terse
// messages, in its own notation and, in a section a component decodes
// apart, at a path without the probe: a misspelled option (`bin:`),
// reported with the closest valid key, a duration with a unit Go does not
// know (`2min`), reported with the units there are and the value rewritten
// in one of them, a ratio written as a percentage (`max_failure: 1%`),
// reported with the fraction to write, and a value of another shape than
// its option's (`binning: log-linear`, `bins: many`, `span_name: 404`),
// reported with what the option takes (shape.go).
//
// Range checks proper (bins in [1, 1000], …) stay in each component's
// Validate; this package only sees what Validate cannot. Each problem is
// a confpath.Error at the option's path, written as every message of the
// components names an option (package confpath says which notation is for
// what).
package confcheck // import "github.com/deltaq-otel/deltaq/internal/confcheck"

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/confmap"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Check walks the raw configuration conf (as conf.ToStringMap() gives it)
// together with the type of cfg, a pointer to the component's configuration
// struct, following the mapstructure tags the collector decodes with:
// ",squash" fields read the same map, nested structs, pointers, lists and
// maps (such as probes keyed by name) are followed. It reports, in the order
// of the fields, then of the list indexes and sorted map keys:
//
//   - a time.Duration written as a number other than 0 (or as a string that
//     is such a number): "dmax: 500 has no unit; write a duration such as
//     500ms or 2s";
//   - an integer field written as a number that is not an integer ("bins:
//     2.5 is not an integer") or is outside the field's type's range ("bins:
//     100000000000000000000 is out of the integer range [-9223372036854775808,
//     9223372036854775807]"), the number printed as written (a float in its
//     shortest exact decimal form, strconv.FormatFloat(v, 'f', -1, 64));
//   - a value of another shape than its field's, which the decoder would
//     refuse, with what the field takes (checkShape; for `bins: many`, bins:
//     must be an integer, got the string "many"), and nothing under it;
//   - an empty string in a field tagged `confcheck:"nonempty"`, whose
//     empty value would read as unset and change what the option does
//     (match::span_name: "" matched the probe's own name, as an unset
//     ${env:SPAN} gave it), and a section written empty (`qoo: {}`, or
//     the key alone) in a struct field tagged so, which reads as no
//     requirement at all;
//   - a field tagged `confcheck:"required"` left out of a map that is
//     written, whose zero value is valid and means something else than
//     nothing (a qoo point without p read as the 0th percentile, the
//     least delay).
//
// Each problem is a *confpath.Error at the path of its value, which at, when
// not nil, rewrites first (the processor names a probe of its list by the
// key it was written under). Types that decode themselves from text
// (encoding.TextUnmarshaler) are skipped; the collector's
// configoptional.Optional[T] is followed into T.
func Check(conf *confmap.Conf, cfg any, at func(confpath.Path) confpath.Path) error {
	if conf == nil {
		return nil
	}
	return CheckRaw(Raw(conf), cfg, at)
}

// CheckRaw is Check of a section already read with Raw, for a component
// that reads the section's values itself too (without reading it twice).
func CheckRaw(raw map[string]any, cfg any, at func(confpath.Path) confpath.Path) error {
	if cfg == nil {
		return nil
	}
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	w := walker{at: at}
	// The top-level struct is walked even though it usually implements
	// confmap.Unmarshaler itself (by calling Check).
	w.walkStruct(raw, t, nil)
	return errors.Join(w.errs...)
}

type walker struct {
	at   func(confpath.Path) confpath.Path
	errs []error
}

func (w *walker) report(p confpath.Path, format string, args ...any) {
	if w.at != nil {
		p = w.at(p)
	}
	w.errs = append(w.errs, confpath.Errorf(p, format, args...))
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// optionalPkg is the package of configoptional.Optional[T], a struct with
// no exported fields whose section decodes into a T.
const optionalPkg = "go.opentelemetry.io/collector/config/configoptional"

func (w *walker) walk(orig any, t reflect.Type, p confpath.Path) {
	raw := Value(orig)
	t = deref(t)
	if t == durationType {
		w.checkDuration(raw, p)
		return
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return
	}
	if t.Kind() == reflect.Struct && t.PkgPath() == optionalPkg && strings.HasPrefix(t.Name(), "Optional[") {
		// (*Optional[T]).Get returns *T: follow the section into T.
		if get, ok := reflect.PointerTo(t).MethodByName("Get"); ok && get.Type.NumOut() == 1 && get.Type.Out(0).Kind() == reflect.Pointer {
			w.walk(raw, get.Type.Out(0).Elem(), p)
		}
		return
	}
	if !w.checkShape(orig, raw, t, p) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if m, ok := raw.(map[string]any); ok {
			w.walkStruct(m, t, p)
		}
	case reflect.Slice, reflect.Array:
		if l, ok := raw.([]any); ok {
			for i, v := range l {
				w.walk(v, t.Elem(), p.Index(i))
			}
		}
	case reflect.Map:
		m, ok := raw.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			w.walk(m[k], t.Elem(), p.Key(k))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.checkInt(raw, t.Bits(), true, p)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		w.checkInt(raw, t.Bits(), false, p)
	case reflect.Float32, reflect.Float64:
		w.checkFloat(raw, p)
	}
}

// walkStruct walks the fields of struct type t that m sets. As the
// collector's decoder does, a field's key is the first part of its
// mapstructure tag, or its Go name when the tag has none, and keys match
// exactly.
func (w *walker) walkStruct(m map[string]any, t reflect.Type, p confpath.Path) {
	w.checkKeys(m, t, p)
	w.walkFields(m, t, p)
}

// walkFields walks the fields of struct type t that m sets, squashed
// structs' fields reading the same map.
func (w *walker) walkFields(m map[string]any, t reflect.Type, p confpath.Path) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, opts, _ := strings.Cut(f.Tag.Get("mapstructure"), ",")
		if key == "-" {
			continue
		}
		flags := strings.Split(opts, ",")
		if slices.Contains(flags, "remain") {
			continue
		}
		if slices.Contains(flags, "squash") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(textUnmarshalerType) {
				w.walkFields(m, ft, p)
			}
			continue
		}
		if key == "" {
			key = f.Name
		}
		v, ok := m[key]
		if !ok {
			if f.Tag.Get("confcheck") == "required" {
				// Left out, it would read as its zero value, which
				// is valid and means something else than nothing.
				w.report(p.Field(key), "is missing: it has no default (write 0 for zero)")
			}
			continue
		}
		if s, isStr := Value(v).(string); isStr && s == "" && f.Tag.Get("confcheck") == "nonempty" {
			// An empty string would read as the option unset, which
			// changes what it does: what an unset ${env:…} gives.
			w.report(p.Field(key), "must not be empty (is an environment variable it names unset?); leave the option out to have its default")
			continue
		}
		if f.Tag.Get("confcheck") == "nonempty" && f.Type.Kind() == reflect.Struct && emptyMap(v) {
			// Written with nothing in it, a requirement reads as none,
			// silently: the user meant one.
			w.report(p.Field(key), "is empty, which is no requirement: write its options, or leave it out")
			continue
		}
		w.walk(v, f.Type, p.Field(key))
	}
}

// emptyMap reports whether v, a section as written, holds nothing: a key
// with no value, or an empty map.
func emptyMap(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// checkDuration reports a duration written without a unit. Zero is the same
// in every unit and is accepted.
func (w *walker) checkDuration(raw any, p confpath.Path) {
	written, zero, ok := number(raw)
	if !ok {
		s, isString := raw.(string)
		if !isString {
			if raw != nil {
				w.report(p, "must be a duration such as 500ms or 2s, got %s", describe(raw))
			}
			return
		}
		s = strings.TrimSpace(s)
		if _, err := time.ParseDuration(s); err == nil {
			return // "0", or a duration with its unit
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			w.report(p, "%s", badDuration(s))
			return
		}
		written, zero = s, f == 0
	}
	if zero {
		return
	}
	w.report(p, "%s has no unit; write a duration such as 500ms or 2s", written)
}

// number returns a YAML number as written and whether it is zero.
func number(raw any) (written string, zero, ok bool) {
	switch v := raw.(type) {
	case int, int8, int16, int32, int64:
		i := reflect.ValueOf(v).Int()
		return strconv.FormatInt(i, 10), i == 0, true
	case uint, uint8, uint16, uint32, uint64:
		u := reflect.ValueOf(v).Uint()
		return strconv.FormatUint(u, 10), u == 0, true
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), v == 0, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), v == 0, true
	}
	return "", false, false
}

// checkInt reports a number that an integer field of the given width and
// signedness cannot hold exactly. The decoder would convert it with Go's
// conversion, which truncates a fraction and wraps (or, for a float, gives
// an implementation-defined value) out of range.
func (w *walker) checkInt(raw any, bits int, signed bool, p confpath.Path) {
	// The field's range [lo, hi], and as float64 (flo, fhi) for a signed
	// 64-bit field, [flo, fhi) otherwise: fhi = 2⁶³ or 2⁶⁴ is exact where hi
	// is not, and YAML gives an integer literal that fits an int64 as an
	// int, so a float at −2⁶³ is the rounding of a smaller literal such as
	// -9223372036854775809.
	var lo int64
	var hi uint64
	if signed {
		lo, hi = -1<<(bits-1), 1<<(bits-1)-1
	} else {
		hi = math.MaxUint64 >> (64 - bits)
	}
	flo, fhi := float64(lo), math.Ldexp(1, bits)
	if signed {
		fhi = math.Ldexp(1, bits-1)
	}
	rangeText := func() string {
		return fmt.Sprintf("[%d, %d]", lo, hi)
	}
	written, _, ok := number(raw)
	if !ok {
		return
	}
	var inRange bool
	switch v := raw.(type) {
	case int, int8, int16, int32, int64:
		i := reflect.ValueOf(v).Int()
		inRange = i >= lo && (i < 0 || uint64(i) <= hi)
	case uint, uint8, uint16, uint32, uint64:
		inRange = reflect.ValueOf(v).Uint() <= hi
	case float32, float64:
		f := reflect.ValueOf(v).Float()
		if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) {
			w.report(p, "%s is not an integer", written)
			return
		}
		inRange = f >= flo && f < fhi && !(signed && bits == 64 && f == flo)
	}
	if !inRange {
		w.report(p, "%s is out of the integer range %s", written, rangeText())
	}
}
