// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"errors"
	"slices"

	"go.opentelemetry.io/otel/metric"
)

// The self-telemetry of an observer: one implementation for both
// components, whose instruments are named otelcol_deltaq_<kind>_<name>
// (Settings.Kind: otelcol_deltaq_exporter_instances for the exporter,
// otelcol_deltaq_connector_instances for the connector), made from the
// component's own MeterProvider. Each component's README lists them.

// telemetry holds the observer's instruments.
type telemetry struct {
	instances, instancesDropped, instancesRebinned, lateTimeouts metric.Int64Counter
	outputDropped, outputOversized, probesExpired, triggersFired metric.Int64Counter
	referencedProbeEmptyWindows, snapshotFilesRemoved            metric.Int64Counter
	underResolvedWindows, windowsClosed, contributions           metric.Int64Counter
	layoutChanges, layoutsAgreed, totalsSaturated                metric.Int64Counter
	windowsMissingAgents                                         metric.Int64Counter
	probes                                                       metric.Int64Gauge
	windowCloseDuration                                          metric.Float64Histogram
}

// counterSpec describes one counter of the self-telemetry.
type counterSpec struct {
	name, unit, desc string
	field            func(*telemetry) *metric.Int64Counter
}

// counters are the counters of the self-telemetry, by name without the
// prefix.
var counters = []counterSpec{
	{"contributions", "{window}", "Windows of other collectors (agents with emit_windows) received on a metrics " +
		"input, by fate: accepted (merged), late (the window had closed: raise lag), early, misaligned (another " +
		"interval), layout_mismatch (another layout than the probe's for that window; never mixed), invalid (a " +
		"malformed point, a sum that is not finite or not within its bins, counts beyond their bound), unagreed " +
		"(the probe has no layout yet: a vote towards gateway::layout_quorum), agent_limit (beyond " +
		"gateway::max_agents agents in the window), agent_invalid (a service.instance.id longer than 256 bytes), " +
		"probe_limit (a new probe beyond max_probes).",
		func(t *telemetry) *metric.Int64Counter { return &t.contributions }},
	{"instances", "{instance}", "Outcome instances counted into a window.",
		func(t *telemetry) *metric.Int64Counter { return &t.instances }},
	{"instances_dropped", "{instance}", "Outcome instances not counted, by reason: probe_limit (a new probe that no " +
		"configuration names, beyond max_probes such probes), too_late (their window had already closed), too_early " +
		"(they end more than one interval after the component's clock), invalid (missing or malformed deltaq.* " +
		"attributes), layout_mismatch (a timeout whose own dMax is shorter than the probe's), name_too_long (a probe " +
		"name longer than 256 bytes), malformed (a success or failure that ends before it starts).",
		func(t *telemetry) *metric.Int64Counter { return &t.instancesDropped }},
	{"instances_rebinned", "{instance}", "Outcome instances counted whose own deltaq.dmax_ns or deltaq.bins differ " +
		"from their probe's layout, classified and binned under the probe's layout.",
		func(t *telemetry) *metric.Int64Counter { return &t.instancesRebinned }},
	{"layout_changes", "{change}", "Probes that moved to another layout after their first (a processor's " +
		"dmax: auto, or the agents' agreement), each at a window boundary.",
		func(t *telemetry) *metric.Int64Counter { return &t.layoutChanges }},
	{"layouts_agreed", "{layout}", "Layouts probes took from the agreement of gateway::layout_quorum agents, " +
		"the first included.",
		func(t *telemetry) *metric.Int64Counter { return &t.layoutsAgreed }},
	{"late_timeouts", "{instance}", "Timeouts that became known after their own window (by start + dMax) had " +
		"closed, and were counted in the oldest open window instead.",
		func(t *telemetry) *metric.Int64Counter { return &t.lateTimeouts }},
	{"output_dropped", "{batch}", "Metric or log batches produced but not accepted downstream (the exporter's " +
		"sending queue full or its sender failed, or the connector's next consumer refused them), by signal.",
		func(t *telemetry) *metric.Int64Counter { return &t.outputDropped }},
	{"output_oversized", "{item}", "Data points or log records dropped because one alone encodes to more than " +
		"max_request_bytes, so that no batch could carry it, by signal. A window larger than max_request_bytes is " +
		"otherwise sent in several batches.",
		func(t *telemetry) *metric.Int64Counter { return &t.outputOversized }},
	{"probes_expired", "{probe}", "Probes that no configuration names, forgotten after probe_idle_timeout " +
		"without an instance.",
		func(t *telemetry) *metric.Int64Counter { return &t.probesExpired }},
	{"referenced_probe_empty_windows", "{window}", "Closed windows in which a referenced probe (an outcome of " +
		"the diagram or an entry of probes) had no instance, one per probe and window.",
		func(t *telemetry) *metric.Int64Counter { return &t.referencedProbeEmptyWindows }},
	{"snapshot_files_removed", "{file}", "Snapshot files (deltaq-snapshot-*.json) removed from " +
		"snapshot::directory, oldest first, to keep at most snapshot::max_files files and snapshot::max_bytes " +
		"bytes there.",
		func(t *telemetry) *metric.Int64Counter { return &t.snapshotFilesRemoved }},
	{"totals_saturated", "{total}", "Running outcome totals (deltaq.outcomes) that reached 2^63-1 and stopped " +
		"there rather than run backwards.",
		func(t *telemetry) *metric.Int64Counter { return &t.totalsSaturated }},
	{"triggers_fired", "{trigger}", "Triggers fired, by kind (qta, failure, load, divergence).",
		func(t *telemetry) *metric.Int64Counter { return &t.triggersFired }},
	{"under_resolved_windows", "{window}", "Closed windows in which most successes of a probe fell into its " +
		"first bin, one per probe and window; divergences that depend on the probe are withheld in such windows.",
		func(t *telemetry) *metric.Int64Counter { return &t.underResolvedWindows }},
	{"windows_closed", "{window}", "Windows closed and analysed.",
		func(t *telemetry) *metric.Int64Counter { return &t.windowsClosed }},
	{"windows_missing_agents", "{window}", "Windows a gateway closed with fewer contributing agents than " +
		"gateway::expected_agents.",
		func(t *telemetry) *metric.Int64Counter { return &t.windowsMissingAgents }},
}

// Names of the self-telemetry instruments that are not counters, without
// the prefix.
const (
	telemetryProbes              = "probes"
	telemetryWindowCloseDuration = "window_close_duration"
)

// windowCloseBuckets are the bucket bounds, in seconds, of
// window_close_duration.
var windowCloseBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

// telemetryPrefix is the prefix of the self-telemetry names of a component
// of the given kind.
func telemetryPrefix(kind string) string { return "otelcol_deltaq_" + kind + "_" }

// TelemetryNames returns the names of the self-telemetry instruments of a
// component of the given kind ("exporter", "connector"), sorted.
func TelemetryNames(kind string) []string {
	p := telemetryPrefix(kind)
	names := []string{p + telemetryProbes, p + telemetryWindowCloseDuration}
	for _, c := range counters {
		names = append(names, p+c.name)
	}
	slices.Sort(names)
	return names
}

// newTelemetry makes the instruments of a component of the given kind with
// meter.
func newTelemetry(meter metric.Meter, kind string) (*telemetry, error) {
	p := telemetryPrefix(kind)
	t := &telemetry{}
	var errs []error
	for _, c := range counters {
		var err error
		*c.field(t), err = meter.Int64Counter(p+c.name, metric.WithDescription(c.desc), metric.WithUnit(c.unit))
		errs = append(errs, err)
	}
	var err error
	t.probes, err = meter.Int64Gauge(p+telemetryProbes, metric.WithDescription("Probes currently tracked."), metric.WithUnit("{probe}"))
	errs = append(errs, err)
	t.windowCloseDuration, err = meter.Float64Histogram(p+telemetryWindowCloseDuration,
		metric.WithDescription("Time taken to analyse one closed window and build its metrics and logs."),
		metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(windowCloseBuckets...))
	errs = append(errs, err)
	return t, errors.Join(errs...)
}
