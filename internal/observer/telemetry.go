// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Instruments are an observer's self-telemetry. Each component declares its
// instruments in its metadata.yaml (otelcol_connector_deltaq_* for the
// connector, otelcol_exporter_deltaq_* for the exporter, the collector's
// naming of component telemetry), mdatagen generates the component's
// TelemetryBuilder from it, and the component hands the builder's
// instruments to its observer (Settings.Instruments). The generated
// documentation.md of each component lists them with their descriptions.
type Instruments struct {
	// Counters, by the name's last part.
	Contributions, Instances, InstancesDropped, InstancesRebinned, LateTimeouts metric.Int64Counter
	InstancesWeightClamped, LayoutChanges, LayoutsAgreed, TotalsSaturated       metric.Int64Counter
	WindowsMissingAgents                                                        metric.Int64Counter
	QooScoresWithheld                                                           metric.Int64Counter
	OutputDropped, OutputOversized, ProbesExpired, ReferencedProbeEmptyWindows  metric.Int64Counter
	SnapshotFilesRemoved, TriggersFired, UnderResolvedWindows, WindowsClosed    metric.Int64Counter
	ServicesBounded                                                             metric.Int64Counter
	// Probes is the number of probes tracked.
	Probes metric.Int64Gauge
	// WindowCloseDuration is the time one closed window took to analyse
	// and to build its output, in seconds.
	WindowCloseDuration metric.Float64Histogram
}

// noInstruments are instruments that record nothing: the self-telemetry of
// an observer given none (an offline analysis).
func noInstruments() *Instruments {
	m := noop.NewMeterProvider().Meter("")
	c := func() metric.Int64Counter { v, _ := m.Int64Counter(""); return v }
	g, _ := m.Int64Gauge("")
	h, _ := m.Float64Histogram("")
	return &Instruments{
		Contributions: c(), Instances: c(), InstancesDropped: c(), InstancesRebinned: c(), LateTimeouts: c(),
		InstancesWeightClamped: c(), LayoutChanges: c(), LayoutsAgreed: c(), TotalsSaturated: c(),
		WindowsMissingAgents: c(), QooScoresWithheld: c(),
		OutputDropped: c(), OutputOversized: c(), ProbesExpired: c(), ReferencedProbeEmptyWindows: c(),
		SnapshotFilesRemoved: c(), TriggersFired: c(), UnderResolvedWindows: c(), WindowsClosed: c(),
		ServicesBounded: c(), Probes: g, WindowCloseDuration: h,
	}
}
