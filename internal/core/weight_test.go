// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestOneSpanWeighsAtMostTheDefaultBound reproduces one failed span whose
// tracestate claims th:ffffffffffffff (kept one in 2⁵⁶) beside 1,000 honest
// successes: it counted 2²⁰ failures, a failure ratio of 0.999. With the
// default max_adjusted_count (2¹⁰) it counts 1024 and is counted as
// clamped; the same span carrying an explicit randomness value below its
// threshold (rv:00000000000001, which that threshold would have dropped)
// has its threshold erased, as OpenTelemetry "TraceState: Probability
// Sampling" asks, and counts one.
func TestOneSpanWeighsAtMostTheDefaultBound(t *testing.T) {
	for _, c := range []struct {
		ts       string
		failures int64
		clamped  map[string]int64
	}{
		{"ot=th:ffffffffffffff", analysis.DefaultMaxAdjustedCount, map[string]int64{"": 1}},
		{"ot=th:ffffffffffffff;rv:00000000000001", 1, map[string]int64{}},
	} {
		cfg := testConfig()
		cfg.Probes = map[string]analysis.ProbeConfig{"p": {DMax: 100 * time.Millisecond, Bins: 100}}
		h := newHarness(t, cfg, at(time.Second))
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for i := range 1000 {
			sampledSpan(spans, contract.Success, byte(i), ms(100)+time.Duration(i)*time.Microsecond, ms(10.5), "")
		}
		sampledSpan(spans, contract.Failure, 0xff, ms(300), ms(5), c.ts)
		require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))
		h.obs.tick(at(2 * time.Second))

		got := outcomeCounts(t, h, "p")
		assert.Equal(t, map[string]int64{"success": 1000, "failure": c.failures, "timeout": 0}, got, "%s", c.ts)
		assert.Equal(t, c.clamped, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_instances_weight_clamped"), "%s", c.ts)
		t.Logf("%s: failure ratio %.3f (was 0.999)", c.ts, float64(got["failure"])/float64(got["failure"]+got["success"]))
	}
}
