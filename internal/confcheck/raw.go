// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package confcheck

import (
	"reflect"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// Raw returns the values of a component's section as nested maps and
// lists, read in one pass. conf.ToStringMap would give the same values, but
// it copies each level of the section again for every level above it (a
// probe under probes under the section: three copies), which made a
// section of 20,000 probes take seconds; conf.Get copies likewise.
//
// A value the collector expanded from a ${…} reference stays as the
// collector holds it, with both the value it parsed and the text it
// replaced, so that a map built from Raw's (confmap.NewFromStringMap)
// decodes as the section would: such a text into a string field, the
// parsed value elsewhere. Value gives the parsed value, which is what the
// checks of this package read and what conf.ToStringMap gives.
func Raw(conf *confmap.Conf) map[string]any {
	if conf == nil {
		return nil
	}
	var m map[string]any
	if err := conf.Unmarshal(&m); err != nil {
		// Not expected: a section is a map, and any value decodes
		// into an any. The slower copy reads the same values.
		return conf.ToStringMap()
	}
	return m
}

// expandedPkg and expandedName name the type in which the collector keeps
// a value expanded from a ${…} reference: its field Value is the parsed
// value, Original the text.
const (
	expandedPkg  = "go.opentelemetry.io/collector/confmap/internal"
	expandedName = "ExpandedValue"
)

// Value returns v, or the parsed value when v is a value the collector
// expanded from a ${…} reference (see Raw).
func Value(v any) any {
	if !isExpanded(v) {
		return v
	}
	f := reflect.ValueOf(v).FieldByName("Value")
	if !f.IsValid() || !f.CanInterface() {
		return v
	}
	return f.Interface()
}

// IsWord reports whether v (Value) is the string word, in any case, with
// any spaces around it: a keyword written in place of a value, as
// "dmax: auto".
func IsWord(v any, word string) bool {
	s, ok := Value(v).(string)
	return ok && strings.EqualFold(strings.TrimSpace(s), word)
}
