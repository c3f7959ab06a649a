// Package outcome holds the contract between the deltaq processor and the
// deltaq exporter: the span attributes that make a span an outcome instance
// (docs/design.md, "Outcome instances").
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

// Attribute names written by the processor and read by the exporter.
const (
	// AttrProbe is the probe (outcome) name, a string.
	AttrProbe = "deltaq.probe"
	// AttrOutcome is one of Success, Timeout or Failure, a string.
	AttrOutcome = "deltaq.outcome"
	// AttrDMaxNs is the dMax in force for the instance in nanoseconds, an int.
	AttrDMaxNs = "deltaq.dmax_ns"
	// AttrBins is the number of bins of the probe's ΔQ (width = dMax/bins), an int.
	AttrBins = "deltaq.bins"
	// AttrSynthetic is true on spans the processor created for timeouts, a bool.
	AttrSynthetic = "deltaq.synthetic"
	// AttrLate is true on a span that ended after its instance had already
	// been reported as a timeout; such spans are not counted again.
	AttrLate = "deltaq.late"
)

// Values of AttrOutcome.
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
