// Package outcome holds the contract between the deltaq processor and the
// deltaq exporter: the span attributes that make a span an outcome instance
// (see the project's DESIGN, "Outcome instances").
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
