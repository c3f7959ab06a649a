// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/inflight"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor/internal/metadata"
)

// Reasons for refusing an input item, the values of the malformed counter's
// reason attribute.
const (
	reasonMissingIDs = iota
	reasonInvalidTimestamp
	reasonEndBeforeStart
	reasonUnknownProbe
	reasonDuplicateStart
	// reasonForeignSynthetic: a span that arrived marked deltaq.synthetic =
	// true, a timeout span fabricated elsewhere, with no timing of its own.
	reasonForeignSynthetic
	// reasonMalformedBatch: a batch start event malformed as a whole
	// (contract.DecodeStarts), counted once whatever its entries.
	reasonMalformedBatch
	// reasonStaleStart: a start event due more than ended_window ago
	// (inflight.Stale).
	reasonStaleStart
	// reasonFutureStart: a start event that starts more than ended_window
	// after the processor's clock (inflight.Future).
	reasonFutureStart
	numReasons
)

var reasonValues = [numReasons]string{"missing_ids", "invalid_timestamp", "end_before_start", "unknown_probe", "duplicate_start", "foreign_synthetic", "malformed_batch", "stale_start", "future_start"}

// outcomeValues are the values of deltaq.outcome, indexed by outcome.
var outcomeValues = [numOutcomes]string{contract.Success, contract.Timeout, contract.Failure}

// stateValues are the values of the state attribute, indexed by
// inflight.State.
var stateValues = [2]string{inflight.Started.String(), inflight.TimedOut.String()}

// stats are the processor's counters. The span path only adds to atomics;
// the metrics SDK reads them through asynchronous instruments when it
// collects, so counting costs the span path no metric calls.
type stats struct {
	instances     [][numOutcomes]atomic.Int64 // by probe
	late          []atomic.Int64              // by probe
	startTimeouts []atomic.Int64              // by probe
	startAfterEnd []atomic.Int64              // by probe
	// mismatched counts, by probe, the instances a span that the probe's
	// match does not select ended; mismatchWarned[i] is set once such an
	// instance of probe i was logged at warn level.
	mismatched       []atomic.Int64
	mismatchWarned   []atomic.Bool
	malformed        [numReasons]atomic.Int64
	evictions        [2]atomic.Int64 // by inflight.State
	endedEvictions   atomic.Int64
	syntheticDropped atomic.Int64
	// foreignAttributes counts the spans that arrived with contract
	// attributes, which were removed.
	foreignAttributes atomic.Int64
}

func newStats(probes int) *stats {
	return &stats{
		instances:      make([][numOutcomes]atomic.Int64, probes),
		late:           make([]atomic.Int64, probes),
		startTimeouts:  make([]atomic.Int64, probes),
		startAfterEnd:  make([]atomic.Int64, probes),
		mismatched:     make([]atomic.Int64, probes),
		mismatchWarned: make([]atomic.Bool, probes),
	}
}

// registerTelemetry registers the callbacks that report the stats and the
// in-flight counts.
func (p *deltaqProcessor) registerTelemetry(tb *metadata.TelemetryBuilder) error {
	probeOpts := make([]metric.ObserveOption, len(p.m.probes))
	instanceOpts := make([][numOutcomes]metric.ObserveOption, len(p.m.probes))
	for i := range p.m.probes {
		name := attribute.String("probe", p.m.probes[i].name)
		probeOpts[i] = metric.WithAttributeSet(attribute.NewSet(name))
		for o := range numOutcomes {
			instanceOpts[i][o] = metric.WithAttributeSet(attribute.NewSet(name, attribute.String("outcome", outcomeValues[o])))
		}
	}
	var reasonOpts [numReasons]metric.ObserveOption
	for r := range numReasons {
		reasonOpts[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reasonValues[r])))
	}
	var stateOpts [2]metric.ObserveOption
	for s := range stateOpts {
		stateOpts[s] = metric.WithAttributeSet(attribute.NewSet(attribute.String("state", stateValues[s])))
	}
	s := p.stats

	return errors.Join(
		tb.RegisterProcessorDeltaqInstancesCallback(func(_ context.Context, o metric.Int64Observer) error {
			for i := range s.instances {
				for oc := range numOutcomes {
					observeNonZero(o, &s.instances[i][oc], instanceOpts[i][oc])
				}
			}
			return nil
		}),
		tb.RegisterProcessorDeltaqLateSpansCallback(observeByProbe(s.late, probeOpts)),
		tb.RegisterProcessorDeltaqStartTimeoutsCallback(observeByProbe(s.startTimeouts, probeOpts)),
		tb.RegisterProcessorDeltaqStartAfterEndCallback(observeByProbe(s.startAfterEnd, probeOpts)),
		tb.RegisterProcessorDeltaqStartEventsMismatchedCallback(observeByProbe(s.mismatched, probeOpts)),
		tb.RegisterProcessorDeltaqEndedEvictionsCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(s.endedEvictions.Load())
			return nil
		}),
		tb.RegisterProcessorDeltaqMalformedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for r := range s.malformed {
				observeNonZero(o, &s.malformed[r], reasonOpts[r])
			}
			return nil
		}),
		tb.RegisterProcessorDeltaqEvictionsCallback(func(_ context.Context, o metric.Int64Observer) error {
			for st := range s.evictions {
				observeNonZero(o, &s.evictions[st], stateOpts[st])
			}
			return nil
		}),
		tb.RegisterProcessorDeltaqSyntheticDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(s.syntheticDropped.Load())
			return nil
		}),
		tb.RegisterProcessorDeltaqForeignAttributesCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(s.foreignAttributes.Load())
			return nil
		}),
		p.registerAutoTelemetry(tb, probeOpts),
		tb.RegisterProcessorDeltaqInFlightCallback(func(_ context.Context, o metric.Int64Observer) error {
			started, timedOut := p.tracker.Counts()
			o.Observe(int64(started), stateOpts[inflight.Started])
			o.Observe(int64(timedOut), stateOpts[inflight.TimedOut])
			return nil
		}),
	)
}

// registerAutoTelemetry registers the callbacks of the dmax: auto probes:
// their dMax, its changes and the changes suppressed.
func (p *deltaqProcessor) registerAutoTelemetry(tb *metadata.TelemetryBuilder, probeOpts []metric.ObserveOption) error {
	return errors.Join(
		tb.RegisterProcessorDeltaqDmaxCallback(func(_ context.Context, o metric.Float64Observer) error {
			for _, i := range p.m.auto {
				o.Observe(float64(p.m.probes[i].auto.DMax())/1e9, probeOpts[i])
			}
			return nil
		}),
		tb.RegisterProcessorDeltaqDmaxChangesCallback(func(_ context.Context, o metric.Int64Observer) error {
			for _, i := range p.m.auto {
				observeNonZero(o, p.m.probes[i].auto.Changes(), probeOpts[i])
			}
			return nil
		}),
		tb.RegisterProcessorDeltaqDmaxChangesSuppressedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for _, i := range p.m.auto {
				observeNonZero(o, p.m.probes[i].auto.Suppressed(), probeOpts[i])
			}
			return nil
		}),
	)
}

// observeByProbe returns the callback of a counter kept per probe: one
// observation per probe with a non-zero count.
func observeByProbe(counts []atomic.Int64, probeOpts []metric.ObserveOption) metric.Int64Callback {
	return func(_ context.Context, o metric.Int64Observer) error {
		for i := range counts {
			observeNonZero(o, &counts[i], probeOpts[i])
		}
		return nil
	}
}

// observeNonZero reports a counter once it has counted something, so that an
// idle probe adds no series.
func observeNonZero(o metric.Int64Observer, c *atomic.Int64, opt metric.ObserveOption) {
	if v := c.Load(); v != 0 {
		o.Observe(v, opt)
	}
}
