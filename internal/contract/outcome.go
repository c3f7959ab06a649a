// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package contract holds the input and output contracts of the deltaq
// components:
//
//   - the span attributes that make a span an outcome instance, written by
//     the deltaq processor and read by the deltaq connector and exporter
//     (AttrProbe, AttrOutcome, AttrDMaxNs, AttrBins, AttrSynthetic,
//     AttrLate; IsContractAttr lists them), and the start event that
//     announces a span (StartEventName, AttrSpanName): this file; the
//     batch start event, many starts of one probe in one record, and its
//     decoder (StartsEventName, DecodeStarts; starts.go);
//   - the names of the metrics, attributes and log events the components
//     emit, on which dashboards and alert rules depend, and the buckets of
//     deltaq.observed (output.go);
//   - the adjusted counts of sampled spans (AdjustedCount, Weight;
//     sampling.go);
//   - the registry of probe layouts (Layouts, of deltaq.Layout;
//     layouts.go), of which each collector has one (internal/collectorstate).
//
// The span contract in short. Every counted span of a probe carries
// AttrProbe; a failure or a timeout also AttrOutcome, a success nothing
// more: a reader takes a bare AttrProbe for a success. A timeout, and the
// first span of each probe in each batch the processor maps, also carry the
// layout: AttrDMaxNs, and AttrBins but for a probe with log-linear buckets.
// The processor's synthetic timeout span carries AttrSynthetic, and a span
// that ended after its instance timed out AttrLate (it is not counted). A
// reader classifies every instance under its probe's layout from the span's
// own start and end. The processor is the only writer of these attributes
// in a collector: it removes them from every span that arrives with any, so
// a bare AttrProbe downstream is its own.
//
// docs/design.md, "Outcome instances: the processor's contract", gives the
// rules in full: where a reader takes a probe's layout, what makes an
// instance invalid, why a success carries no outcome, and what earlier
// versions of the processor wrote.
package contract

// Attribute names written by the processor and read by the connector and the exporter.
const (
	// AttrProbe is the probe (outcome) name, a string.
	AttrProbe = "deltaq.probe"
	// AttrOutcome is Timeout or Failure, a string; absent on a success
	// (readers also accept Success).
	AttrOutcome = "deltaq.outcome"
	// AttrDMaxNs is the dMax in force for the instance in nanoseconds, an
	// int; on timeouts and on the first span of each probe in a batch.
	AttrDMaxNs = "deltaq.dmax_ns"
	// AttrBins is the number of bins of the probe's ΔQ (width = dMax/bins),
	// an int; on the spans that carry AttrDMaxNs, but for those of a probe
	// with log-linear buckets, which has no bin count.
	AttrBins = "deltaq.bins"
	// AttrSynthetic is true on spans the processor created for timeouts, a bool.
	AttrSynthetic = "deltaq.synthetic"
	// AttrLate is true on a span that ended after its instance had already
	// been reported as a timeout; such spans are not counted again.
	AttrLate = "deltaq.late"
)

// Values of AttrOutcome. The processor writes Timeout and Failure on spans;
// Success is what a reader takes a span with no AttrOutcome for, and a value
// of the outcome attribute of the output (output.go).
const (
	Success = "success"
	Timeout = "timeout"
	Failure = "failure"
)

// StartEventName is the EventName of the OTLP log record that announces that a
// span started: it carries the span's trace and span ids, the AttrProbe
// attribute and the start time as its timestamp.
const StartEventName = "deltaq.span.start"

// AttrSpanName is an optional string attribute of a start event: the name of
// the span that started. The synthetic timeout span of an instance that never
// ended takes this name; without it, it takes the probe name.
const AttrSpanName = "deltaq.span.name"

// contractPrefix is the prefix every span attribute of the contract shares;
// it rejects almost every other key with one comparison.
const contractPrefix = "deltaq."

// IsContractAttr reports whether k is a span attribute of the contract
// (AttrProbe, AttrOutcome, AttrDMaxNs, AttrBins, AttrSynthetic, AttrLate),
// the attributes the processor writes and removes from the spans that
// arrive with them. Other deltaq.* keys, such as the deltaq.failed an
// application sets on a failed span, are application data: IsContractAttr
// is false for them.
func IsContractAttr(k string) bool {
	if len(k) < len(contractPrefix) || k[:len(contractPrefix)] != contractPrefix {
		return false
	}
	switch k {
	case AttrProbe, AttrOutcome, AttrDMaxNs, AttrBins, AttrSynthetic, AttrLate:
		return true
	}
	return false
}
