// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"fmt"
	"reflect"

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

// SenderInstruments are the self-telemetry of a component that sends its
// output to an OTLP endpoint itself (the exporter's): what the endpoint's
// answers say of it.
type SenderInstruments struct {
	// OutputRejected counts the data points or log records an endpoint
	// rejected in an OTLP partial success, by signal.
	OutputRejected metric.Int64Counter
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

// InstrumentsOf returns the instruments of a component's generated
// TelemetryBuilder tb (a pointer): each field F of Instruments is tb's
// field prefix+F (mdatagen names otelcol_connector_deltaq_instances
// ConnectorDeltaqInstances), so that the mapping is written once, for
// every component, and an instrument metadata.yaml does not declare is an
// error when the component is made.
func InstrumentsOf(tb any, prefix string) (*Instruments, error) {
	ins := &Instruments{}
	return ins, fillFrom(ins, tb, prefix)
}

// SenderInstrumentsOf is InstrumentsOf for SenderInstruments: the
// exporter's.
func SenderInstrumentsOf(tb any, prefix string) (*SenderInstruments, error) {
	ins := &SenderInstruments{}
	return ins, fillFrom(ins, tb, prefix)
}

// SpanInstrumentsOf is InstrumentsOf for SpanInstruments: the connector's.
func SpanInstrumentsOf(tb any, prefix string) (*SpanInstruments, error) {
	ins := &SpanInstruments{}
	return ins, fillFrom(ins, tb, prefix)
}

// fillFrom sets each field F of the struct dst points to from the field
// prefix+F of the struct src points to.
func fillFrom(dst, src any, prefix string) error {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range d.NumField() {
		name := prefix + d.Type().Field(i).Name
		f := s.FieldByName(name)
		if !f.IsValid() || !f.Type().AssignableTo(d.Field(i).Type()) {
			return fmt.Errorf("deltaq observer: the telemetry builder has no %s of type %v: declare it in metadata.yaml", name, d.Field(i).Type())
		}
		d.Field(i).Set(f)
	}
	return nil
}
