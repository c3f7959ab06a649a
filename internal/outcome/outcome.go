// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package outcome holds the contracts of the deltaq components: the span
// attributes that make a span an outcome instance, between the deltaq
// processor and the deltaq exporter and connector (this file;
// docs/design.md, "Outcome instances") and the start event (also here); the
// names of the metrics, attributes and log events they emit (output.go);
// the adjusted counts of sampled spans (sampling.go); and the type of the
// registry of probe layouts (layout.go), of which each collector has one
// (internal/process).
//
// Which span carries which attributes:
//
//   - every counted span of a probe: AttrProbe. A success carries nothing
//     more (but for the layout, below): a span with AttrProbe and no
//     AttrOutcome is a success. A failure carries AttrOutcome = failure, a
//     timeout AttrOutcome = timeout. A reader re-derives a success's or a
//     failure's outcome under its own layout from the span's own start and
//     end: d ≤ dMax keeps it, d > dMax is a timeout (the thesis, section
//     3.3);
//   - a timeout (outcome = timeout), and the first span of each probe in
//     each batch the processor maps: also the layout, AttrDMaxNs and
//     AttrBins. A timeout has no delay a reader could judge by its own dMax
//     (a synthetic one has no real end at all), so the reader must know the
//     dMax it was judged by: under a longer dMax of its own it might have
//     ended in time. The first span of a probe in a batch carries the layout
//     so that a reader that configures none for the probe, in another
//     collector, takes it from there. A probe with log-linear buckets
//     (the processor's `binning: log-linear`) has no bin count a span could
//     give: its spans carry AttrDMaxNs (its dMax, the buckets' High) and no
//     AttrBins. A reader of the same collector takes its buckets from the
//     registry (Layout.LogLinear); a reader in another collector that does
//     not configure the probe itself finds no layout it can follow and
//     refuses its instances, counted as invalid (see below);
//   - a synthetic timeout span, made by the processor for an instance
//     announced by a start event that never ended: also AttrSynthetic;
//   - a late span, one that ended after its instance had been reported as a
//     timeout: AttrProbe, AttrOutcome = timeout and AttrLate, not counted.
//
// Readers take an absent AttrOutcome for a success and still accept an
// explicit AttrOutcome = success, which earlier versions of the processor
// wrote; an AttrOutcome that is present but not a string, or not one of
// the three values (the empty string included), makes the instance invalid
// (dropped and counted). Layout attributes on the other spans were also
// written by earlier versions; readers accept them, and a probe's layout
// still comes from configuration first. A reader counts a span in its
// probe's layout: the layout configured for the probe (the reader's own
// configuration, else the registry of this process's processors,
// LookupLayout), else the layout of the probe's first instance that carries
// one. An instance of a probe with no layout yet is dropped and counted as
// invalid.
//
// Each attribute costs a matched span an allocation in pdata (a boxed
// value), which is why the layout is not on every span and a success, the
// common case, carries no AttrOutcome. A bare AttrProbe is safe to read as
// a success because of the rule below: the processor removes every contract
// attribute a span arrives with, so a span that reaches a reader with
// AttrProbe was given it by a processor of the collector, which gave a
// failure or a timeout its AttrOutcome.
//
// The processor is the only writer of the span attributes of the contract
// (AttrProbe, AttrOutcome, AttrDMaxNs, AttrBins, AttrSynthetic, AttrLate) in
// a collector. It removes them from every span that arrives carrying any,
// matched by a probe or not, and counts it; a matched span is then mapped
// again by the processor's own configuration, from its own timestamps and
// status (trace data, where the attributes are only claims), and a span that
// arrived with AttrSynthetic = true, a timeout span fabricated elsewhere with
// no timing of its own, is not mapped. A span attribute added to the contract
// must be added to the processor's list of attributes it removes. Other
// deltaq.* attributes (such as deltaq.failed, which applications set on
// failed spans) are application data and are left alone.
package outcome

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
