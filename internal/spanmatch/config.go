// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package spanmatch

// MatchConfig selects spans. All the conditions that are set must hold.
type MatchConfig struct {
	// SpanName is the exact span name.
	SpanName string `mapstructure:"span_name" confcheck:"nonempty"`
	// SpanNameRegexp is a regular expression (RE2 syntax) the span name must
	// match; anchor it with ^ and $ to match the whole name.
	SpanNameRegexp string `mapstructure:"span_name_regexp" confcheck:"nonempty"`
	// ServiceName is the exact value of the resource attribute service.name.
	ServiceName string `mapstructure:"service_name" confcheck:"nonempty"`
	// SpanKind is one of internal, server, client, producer, consumer.
	SpanKind string `mapstructure:"span_kind" confcheck:"nonempty"`
	// Attributes maps span attribute keys to the values they must equal.
	Attributes map[string]any `mapstructure:"attributes"`
}

// FailureConfig says which spans that end within dMax are failures: those
// with status ERROR (unless StatusError is false) and those for which any of
// the conditions holds.
type FailureConfig struct {
	// StatusError makes spans with status code ERROR failures; true when
	// omitted.
	StatusError *bool `mapstructure:"status_error"`
	// Conditions are attribute conditions; a span for which any holds is a
	// failure.
	Conditions []ConditionConfig `mapstructure:"conditions"`
}

// ConditionConfig compares a span attribute with a value. A condition on an
// attribute the span does not have does not hold.
type ConditionConfig struct {
	// Attribute is the span attribute key.
	Attribute string `mapstructure:"attribute"`
	// Op is one of ==, !=, <, <=, >, >=; == when omitted. The ordering
	// operators take a numeric Value and hold only for numeric attributes.
	Op string `mapstructure:"op"`
	// Value is a string, integer, floating-point number or boolean.
	Value any `mapstructure:"value"`
}
