// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/sdk/deltaqstart"
)

// traceStateSampler keeps every span and gives it the tracestate that
// follows the '|' in its name (none without one).
type traceStateSampler struct{}

func (traceStateSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	var ts trace.TraceState
	if _, v, ok := strings.Cut(p.Name, "|"); ok {
		var err error
		if ts, err = trace.ParseTraceState(v); err != nil {
			panic(err)
		}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts}
}
func (traceStateSampler) Description() string { return "traceStateSampler" }

// sdkStart is a start as this package reads it from a record of either
// form: the instance's ids, start time, probe and threshold.
type sdkStart struct {
	traceID   pcommon.TraceID
	spanID    pcommon.SpanID
	start     int64
	probe     string
	threshold uint64
}

// readStarts reads every start event of lds as the collector's components
// do: a batch record through ReadStarts, which must take it whole, and
// every entry of it valid; a record per span by its ids, timestamp,
// AttrProbe and the threshold of its AttrTraceState.
func readStarts(t *testing.T, lds []plog.Logs) []sdkStart {
	t.Helper()
	var out []sdkStart
	for _, ld := range lds {
		for lr := range otlprecv.LogRecords(ld) {
			switch lr.EventName() {
			case contract.StartsEventName:
				starts, probe, err := contract.ReadStarts(lr.Attributes())
				if err != contract.StartsOK {
					t.Errorf("a batch record of probe %q refused: %v", probe, err)
					continue
				}
				for i := range starts.Len() {
					e := starts.At(i)
					if !e.Valid() {
						t.Errorf("probe %q, entry %d refused: %+v", probe, i, e)
					}
					out = append(out, sdkStart{e.TraceID, e.SpanID, e.Start, probe, e.Threshold})
				}
			case contract.StartEventName:
				probe, _ := lr.Attributes().Get(contract.AttrProbe)
				s := sdkStart{lr.TraceID(), lr.SpanID(), int64(lr.Timestamp()), probe.Str(), 0}
				if ts, ok := lr.Attributes().Get(contract.AttrTraceState); ok {
					s.threshold, _ = contract.Threshold(ts.Str())
				}
				if probe.Type() != pcommon.ValueTypeStr || s.probe == "" || s.traceID.IsEmpty() || s.spanID.IsEmpty() ||
					s.start <= 0 {
					t.Errorf("a record per span the collector refuses: %+v", s)
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// TestSDKStartsRoundTrip sends the start events of sdk/deltaqstart, in
// each form, through the OpenTelemetry Go SDK's OTLP/gRPC log exporter to
// a loopback receiver, and reads them back with this package's reader
// (docs/contract/start-event.json): every record is read whole, and every
// span the selector named a probe for is announced once with its ids, its
// start time and the threshold of its tracestate. A span whose selector
// gives an empty probe names no probe (a batch record without one is
// refused whole), so it has no start event.
func TestSDKStartsRoundTrip(t *testing.T) {
	for _, form := range []struct {
		name string
		opts []deltaqstart.Option
	}{{"batch", nil}, {"per_span", []deltaqstart.Option{deltaqstart.WithRecordPerSpan()}}} {
		t.Run(form.name, func(t *testing.T) {
			recv := otlptest.Start(t, otlptest.Options{})
			ctx := context.Background()
			exp, err := otlploggrpc.New(ctx, otlploggrpc.WithEndpoint(recv.Addr()), otlploggrpc.WithInsecure())
			if err != nil {
				t.Fatal(err)
			}
			lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(sdklog.NewBatchProcessor(exp)))
			defer lp.Shutdown(ctx)
			// The probe is the name up to '|' or '#'.
			sel := func(s sdktrace.ReadOnlySpan) (string, bool) {
				probe, _, _ := strings.Cut(s.Name(), "|")
				probe, _, _ = strings.Cut(probe, "#")
				return probe, true
			}
			p, err := deltaqstart.NewSpanProcessor(lp, append(form.opts, deltaqstart.WithSelector(sel))...)
			if err != nil {
				t.Fatal(err)
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(traceStateSampler{}), sdktrace.WithSpanProcessor(p))
			defer tp.Shutdown(ctx)
			tr := tp.Tracer("test")
			t0 := time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.UTC)
			want := map[pcommon.SpanID]sdkStart{}
			for i, name := range []string{"a", "b|ot=th:c", "a|ot=th:8;rv:ffffffffffffff", "#no probe", "b",
				"a|ot=th:fff;rv:00000000000000"} {
				_, s := tr.Start(ctx, name, trace.WithTimestamp(t0.Add(time.Duration(i)*time.Millisecond)))
				sc := s.SpanContext()
				probe, _ := sel(s.(sdktrace.ReadOnlySpan))
				th, _ := contract.Threshold(sc.TraceState().String())
				if probe != "" {
					want[pcommon.SpanID(sc.SpanID())] = sdkStart{pcommon.TraceID(sc.TraceID()), pcommon.SpanID(sc.SpanID()),
						t0.Add(time.Duration(i) * time.Millisecond).UnixNano(), probe, th}
				}
			}
			if err := p.ForceFlush(ctx); err != nil {
				t.Fatal(err)
			}
			got := readStarts(t, recv.Logs())
			if len(got) != len(want) || p.Emitted() != uint64(len(want)) {
				t.Errorf("%d starts read, Emitted %d; want %d", len(got), p.Emitted(), len(want))
			}
			for _, g := range got {
				if w, ok := want[g.spanID]; !ok || g != w {
					t.Errorf("read %+v, want %+v", g, w)
				}
				delete(want, g.spanID)
			}
			for _, w := range want {
				t.Errorf("not announced: %+v", w)
			}
		})
	}
}
