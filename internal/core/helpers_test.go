// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"reflect"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/metric"

	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// t0 and at: a window boundary and the times after it.
var t0, at = coretest.T0, coretest.At

// span describes one outcome-instance span as the processor writes it.
type span struct {
	probe   string
	outcome string
	// end is relative to t0; delay is end − start.
	end, delay time.Duration
	dmax       time.Duration
	bins       int
	late       bool
}

// instanceTraces builds traces holding one span per spec, plus one span
// that is not an instance (coretest.Traces).
func instanceTraces(specs ...span) ptrace.Traces {
	out := make([]coretest.Span, len(specs))
	for i, s := range specs {
		end := at(s.end)
		out[i] = coretest.Span{Probe: s.probe, Outcome: s.outcome, Start: end.Add(-s.delay), End: end,
			DMax: s.dmax, Bins: s.bins, Late: s.late}
	}
	return coretest.Traces(out...)
}

// exporterScope is the scope the tests name the output with: the golden
// files hold the exporter's output.
const exporterScope = "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

// harness runs an observer whose output goes to sinks and whose clock the
// test sets; tick closes windows synchronously.
type harness struct {
	t       *testing.T
	obs     *Observer
	metrics *consumertest.MetricsSink
	logs    *consumertest.LogsSink
	tel     *componenttest.Telemetry
}

func newHarness(t *testing.T, cfg *Config, now time.Time) *harness {
	return newHarnessWith(t, cfg, now, nil)
}

// testSettings are the settings of an exporter's observer with the
// telemetry of tel, the clock now and no ticker.
func testSettings(tel *componenttest.Telemetry, now func() time.Time) Settings {
	ts := componenttest.NewNopTelemetrySettings()
	if tel != nil {
		ts = tel.NewTelemetrySettings()
	}
	set := Settings{
		Kind:      "exporter",
		Scope:     exporterScope,
		Telemetry: ts,
		Layouts:   testLayouts,
		Version:   "test",
		Now:       now,
		Ticks:     make(chan time.Time), // never ticks: the test calls tick
	}
	if tel != nil {
		set.Instruments = testInstruments(ts.MeterProvider.Meter(exporterScope), "exporter")
	}
	return set
}

// instrumentNames are the names the generated TelemetryBuilder of a
// component of the given kind gives the fields of Instruments, in order:
// otelcol_<kind>_deltaq_ and the field's name in snake case
// (WindowsClosed: windows_closed).
func instrumentNames(kind string) []string { return fieldNames(reflect.TypeFor[Instruments](), kind) }

// spanInstrumentNames are the names of the fields of SpanInstruments, the
// connector's alone.
func spanInstrumentNames() []string {
	return fieldNames(reflect.TypeFor[SpanInstruments](), "connector")
}

// senderInstrumentNames are the names of the fields of SenderInstruments,
// the exporter's alone.
func senderInstrumentNames() []string {
	return fieldNames(reflect.TypeFor[SenderInstruments](), "exporter")
}

// fieldNames names the instruments of the fields of typ as the generated
// TelemetryBuilder of a component of the given kind names them.
func fieldNames(typ reflect.Type, kind string) []string {
	names := make([]string, typ.NumField())
	for i := range typ.NumField() {
		var snake []rune
		for j, r := range typ.Field(i).Name {
			if unicode.IsUpper(r) && j > 0 {
				snake = append(snake, '_')
			}
			snake = append(snake, unicode.ToLower(r))
		}
		names[i] = "otelcol_" + kind + "_deltaq_" + string(snake)
	}
	return names
}

// testInstruments makes the instruments as the generated TelemetryBuilder
// of a component of the given kind names them (instrumentNames).
func testInstruments(m metric.Meter, kind string) *Instruments {
	ins := &Instruments{}
	v := reflect.ValueOf(ins).Elem()
	for i, name := range instrumentNames(kind) {
		var inst any
		switch v.Field(i).Type() {
		case reflect.TypeFor[metric.Int64Counter]():
			inst, _ = m.Int64Counter(name)
		case reflect.TypeFor[metric.Int64Gauge]():
			inst, _ = m.Int64Gauge(name)
		case reflect.TypeFor[metric.Float64Histogram]():
			inst, _ = m.Float64Histogram(name)
		}
		v.Field(i).Set(reflect.ValueOf(inst))
	}
	return ins
}

// newHarnessWith is newHarness with the observer's settings adjusted by
// adjust before the observer is made.
func newHarnessWith(t *testing.T, cfg *Config, now time.Time, adjust func(*Settings)) *harness {
	t.Helper()
	h := &harness{t: t, metrics: new(consumertest.MetricsSink), logs: new(consumertest.LogsSink), tel: componenttest.NewTelemetry()}
	t.Cleanup(func() { require.NoError(t, h.tel.Shutdown(context.Background())) })
	set := testSettings(h.tel, func() time.Time { return now })
	if adjust != nil {
		adjust(&set)
	}
	set.Instruments = testInstruments(set.Telemetry.MeterProvider.Meter(exporterScope), set.Kind)
	obs, err := New(cfg, set)
	require.NoError(t, err)
	require.NoError(t, obs.Start(Outputs{Metrics: h.metrics, Logs: h.logs}))
	t.Cleanup(func() { require.NoError(t, obs.Shutdown(context.Background())) })
	h.obs = obs
	return h
}

func (h *harness) consume(specs ...span) {
	h.t.Helper()
	require.NoError(h.t, h.obs.ConsumeTraces(context.Background(), instanceTraces(specs...)))
}

// testConfig is the default configuration.
func testConfig() *Config {
	cfg := NewDefaultConfig()
	return &cfg
}
