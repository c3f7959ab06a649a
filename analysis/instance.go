// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math"

	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Outcome is how an outcome instance ended (thesis 3.3): within dMax
// (Success), not within dMax (Timeout), or with a failure the application
// defined (Failure).
type Outcome uint8

// The three outcomes of an instance (thesis 3.3).
const (
	Success Outcome = iota + 1
	Timeout
	Failure
)

// String returns "success", "timeout" or "failure", the values of the
// deltaq.outcome span attribute (contract.Success, …).
func (o Outcome) String() string {
	switch o {
	case Success:
		return contract.Success
	case Timeout:
		return contract.Timeout
	case Failure:
		return contract.Failure
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// ParseOutcome maps "success", "timeout" and "failure" to their Outcome.
func ParseOutcome(s string) (Outcome, bool) {
	switch s {
	case contract.Success:
		return Success, true
	case contract.Timeout:
		return Timeout, true
	case contract.Failure:
		return Failure, true
	}
	return 0, false
}

// Instance is one outcome instance (thesis 3.3): a probe, how it ended, and
// when. Times are Unix nanoseconds so that the hot path carries no
// time.Time.
type Instance struct {
	// Probe names the probe (outcome) the instance belongs to.
	Probe string
	// Outcome is how the instance ended.
	Outcome Outcome
	// Start and End are the instance's start and end in Unix nanoseconds.
	// End is ignored for a Timeout: a timeout ends at Start + dMax (thesis
	// 3.3, "the end time is equal to t_s + timeout").
	Start, End int64
	// DMaxNs and Bins are the dMax (nanoseconds) and bin count in force for
	// the instance, as the processor wrote them (deltaq.dmax_ns, deltaq.bins).
	// Zero means unknown; a probe configured with its own dMax and bins
	// ignores them. More than deltaq.MaxThesisBins bins is not accepted
	// from an instance.
	DMaxNs int64
	Bins   int
	// TraceID and SpanID name the instance's span; zero when unknown. They
	// name the instance in exemplars and on trigger records.
	TraceID [16]byte
	SpanID  [8]byte
	// Weight is the instance's adjusted count: the number of instances of
	// the population it stands for under probability sampling (OpenTelemetry
	// "TraceState: Probability Sampling"), counted in every bin, counter and
	// window. Zero or one counts one; more than Config.MaxAdjustedCount
	// counts that many (Stats.WeightClamped).
	Weight int64
	// Ended says that a Timeout ended after its dMax, at End — a span the
	// processor judged a timeout — rather than never (a synthetic timeout
	// span, a start event whose span never came): the analysis resolution
	// counts it as a completion at End − Start, as it counts a success or
	// failure that ended after the probe's dMax, so that it still enters
	// the composition of a whole with a longer dMax.
	Ended bool
}

// Counts are the numbers of instances by outcome.
type Counts struct {
	Success, Timeout, Failure int64
}

// Total returns Success + Timeout + Failure, saturated at math.MaxInt64.
func (c Counts) Total() int64 {
	t := c.Success
	for _, n := range [2]int64{c.Timeout, c.Failure} {
		if t > math.MaxInt64-n {
			return math.MaxInt64
		}
		t += n
	}
	return t
}

// add adds o to c, each count saturating at math.MaxInt64 rather than
// wrapping round to a negative number (a running total must never run
// backwards), and reports whether any saturated. Counts are never
// negative.
func (c *Counts) add(o Counts) (saturated bool) {
	sat := func(a *int64, b int64) {
		if *a > math.MaxInt64-b {
			*a, saturated = math.MaxInt64, true
			return
		}
		*a += b
	}
	sat(&c.Success, o.Success)
	sat(&c.Timeout, o.Timeout)
	sat(&c.Failure, o.Failure)
	return saturated
}
