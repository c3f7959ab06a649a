// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// What TestHostileSpansThroughCollector sends of probe op: honest successes
// of service shop, one success whose resource's service.name is hugeName
// bytes, one success of each of junkServices services, and two failures of
// shop whose tracestate claims th:ffffffffffffff (kept one in 2⁵⁶), the
// second with an explicit randomness value that threshold would have
// dropped.
const (
	honest       = 1000
	hugeName     = 1_000_000
	junkServices = 10
	// The default max_adjusted_count: one span weighs at most this much.
	maxWeight = 1024
)

// TestHostileSpansThroughCollector runs the built collector with
// testdata/one-component.yaml and sends, in one request, the spans of two
// attacks on probe op: a resource service.name of 1,000,000 bytes beside
// ten junk services (it put a 1 MB deltaq.service label on every series of
// the probe, about 45 requests of 3 MB a window), and a failed span whose
// threshold claims 2⁵⁶ instances (it counted 1,048,576 failures beside
// 1,000 successes). It checks that
//  1. the sink gets deltaq.outcomes with exactly the successes sent and
//     1024 + 1 failures: the forged span weighs max_adjusted_count, the one
//     whose rv contradicts its threshold counts one;
//  2. every deltaq.service value of the probe names at most four services
//     of at most 256 bytes each, then the overflow value otel.metric.overflow,
//     and every request of ΔQ output is below 256 KiB;
//  3. the collector logs no error and exits 0 on SIGTERM.
func TestHostileSpansThroughCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	backend := otlptest.Start(t, otlptest.Options{})
	sink := otlptest.Start(t, otlptest.Options{})
	col := e2etest.StartCollector(t, "collector", otelcol, []string{"testdata/one-component.yaml"},
		"DELTAQ_BACKEND="+backend.Addr(), "DELTAQ_SINK="+sink.Addr())
	col.WaitReady(t)

	sendHostile(t, col.Addr)
	successes := int64(honest + 1 + junkServices)
	failures := int64(maxWeight + 1)
	var got map[string]int64
	e2etest.Until(t, "the outcomes in the sink", 30*time.Second, func() bool {
		got = hostileOutcomes(sink.Metrics())
		return got[contract.Success] >= successes && got[contract.Failure] >= failures
	}, col.Proc)
	if got[contract.Success] != successes || got[contract.Failure] != failures {
		t.Errorf("%s of %s: %v, want %d successes and %d failures", contract.MetricOutcomes, probe, got, successes, failures)
	}
	checkServiceLabels(t, sink.Metrics())
	col.StopCleanly(t)
}

// sendHostile sends the spans over OTLP/gRPC to addr in one request, each
// group under a resource of its own.
func sendHostile(t *testing.T, addr string) {
	t.Helper()
	conn := otlptest.Dial(t, addr)
	now := time.Now()
	td := ptrace.NewTraces()
	i := 0
	add := func(service string, n int, failed bool, tracestate string) {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		for range n {
			sp := spans.AppendEmpty()
			tid, sid := ids(10_000 + i)
			i++
			sp.SetName(probe)
			sp.SetKind(ptrace.SpanKindServer)
			sp.SetTraceID(tid)
			sp.SetSpanID(sid)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-5 * time.Millisecond)))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
			sp.TraceState().FromRaw(tracestate)
			if failed {
				sp.Status().SetCode(ptrace.StatusCodeError)
			}
		}
	}
	add("shop", honest, false, "")
	add(strings.Repeat("x", hugeName), 1, false, "")
	for k := range junkServices {
		add(fmt.Sprintf("junk%d", k), 1, false, "")
	}
	add("shop", 1, true, "ot=th:ffffffffffffff")
	add("shop", 1, true, "ot=th:ffffffffffffff;rv:00000000000001")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err != nil {
		t.Fatalf("sending the spans: %v", err)
	}
}

// hostileOutcomes returns the latest deltaq.outcomes of the probe, by
// outcome.
func hostileOutcomes(mds []pmetric.Metrics) map[string]int64 {
	return fold(mds, nil).outcomes
}

// checkServiceLabels checks every deltaq.service value of the probe's
// points, and the size of every request of ΔQ output.
func checkServiceLabels(t *testing.T, mds []pmetric.Metrics) {
	t.Helper()
	var sizer pmetric.ProtoMarshaler
	labels := map[string]bool{}
	for _, md := range mds {
		if n := sizer.MetricsSize(md); n > 256<<10 {
			t.Errorf("a request of ΔQ output of %d bytes (was about 3 MB with a 1 MB service.name)", n)
		}
		for m := range otlprecv.Metrics(md) {
			for _, a := range pointAttributes(m) {
				if str(a, contract.AttrProbe) == probe {
					labels[str(a, contract.AttrService)] = true
				}
			}
		}
	}
	if len(labels) == 0 {
		t.Fatalf("no point of probe %s in the sink", probe)
	}
	for l := range labels {
		names := strings.Split(l, ",")
		if names[len(names)-1] != contract.ServiceOverflow {
			t.Errorf("%s = %.80q…: does not end with %s", contract.AttrService, l, contract.ServiceOverflow)
			continue
		}
		names = names[:len(names)-1]
		if len(names) > 4 {
			t.Errorf("%s names %d services, want at most 4", contract.AttrService, len(names))
		}
		for _, n := range names {
			if len(n) > contract.MaxNameLength {
				t.Errorf("%s names a service of %d bytes, want at most %d", contract.AttrService, len(n), contract.MaxNameLength)
			}
		}
		t.Logf("%s of %s: %d services and the overflow value, %d bytes", contract.AttrService, probe, len(names), len(l))
	}
}

// pointAttributes returns the attributes of every data point of m.
func pointAttributes(m pmetric.Metric) []pcommon.Map {
	var out []pcommon.Map
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		for _, dp := range m.Gauge().DataPoints().All() {
			out = append(out, dp.Attributes())
		}
	case pmetric.MetricTypeSum:
		for _, dp := range m.Sum().DataPoints().All() {
			out = append(out, dp.Attributes())
		}
	case pmetric.MetricTypeHistogram:
		for _, dp := range m.Histogram().DataPoints().All() {
			out = append(out, dp.Attributes())
		}
	}
	return out
}
