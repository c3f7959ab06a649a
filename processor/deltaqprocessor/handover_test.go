// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// TestReloadCarriesInstancesInFlight: a shutdown that is part of a
// configuration reload hands the instances in flight to the processor the
// new configuration builds. An instance of a probe whose dMax and bins did
// not change times out at its original deadline there; one of a probe
// whose dMax changed is dropped, and its span, arriving later, is an
// ordinary instance of the new layout.
func TestReloadCarriesInstancesInFlight(t *testing.T) {
	st := collectorstate.New()
	const dMax = 50 * time.Millisecond
	old := newHarnessIn(t, st, testConfig(probeConfig("checkout", dMax, 25), probeConfig("search", dMax, 25)), nil)
	start := base.Add(3 * time.Millisecond)
	old.consumeLogs(logsOf(
		startEvent{probe: "checkout", service: "shop", id: 1, at: start},
		startEvent{probe: "search", service: "shop", id: 2, at: start}))
	require.Equal(t, 2, old.p.tracker.Len())

	st.Reload.Requested()
	require.NoError(t, old.traces.Shutdown(context.Background()))
	require.NoError(t, old.logs.Shutdown(context.Background()))
	assert.Zero(t, old.tsink.SpanCount(), "nothing fired while shutting down")

	// The new configuration retunes search's dMax; checkout is unchanged.
	nu := newHarnessIn(t, st, testConfig(probeConfig("checkout", dMax, 25), probeConfig("search", 2*dMax, 25)), nil)
	require.Equal(t, 1, nu.p.tracker.Len(), "checkout's instance carried over, search's dropped")
	nu.clock.tick(base.Add(50 * time.Millisecond))
	require.Zero(t, nu.tsink.SpanCount(), "not before the deadline")
	nu.clock.tick(base.Add(60 * time.Millisecond))
	spans, _ := allSpans(nu.tsink.AllTraces())
	require.Len(t, spans, 1)
	assert.Equal(t, spanID(1), spans[0].SpanID())
	assert.Equal(t, "checkout", spans[0].Name())
	assert.Equal(t, pcommon.NewTimestampFromTime(start), spans[0].StartTimestamp(), "the original start")
	assert.Equal(t, pcommon.NewTimestampFromTime(start.Add(dMax)), spans[0].EndTimestamp(), "the original deadline")
}

// TestReloadCountsRememberedSpansCut: a reload to a smaller max_ended
// keeps the newest remembered spans it can hold and counts those it cut in
// ended_evictions, as the bound's cuts are counted on the span path.
func TestReloadCountsRememberedSpansCut(t *testing.T) {
	st := collectorstate.New()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	old := newHarnessIn(t, st, cfg, nil)
	old.consumeLogs(logsOf(startEvent{probe: "checkout", id: 9, at: base})) // start events in use
	for id := range byte(3) {
		old.consumeTraces(tracesOf(spanSpec{name: "checkout", id: id + 1, start: base, duration: 10 * time.Millisecond}))
	}
	st.Reload.Requested()
	require.NoError(t, old.traces.Shutdown(context.Background()))
	require.NoError(t, old.logs.Shutdown(context.Background()))

	cfg = testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	cfg.MaxEnded = 2 // one span a generation: the last two kept
	nu := newHarnessIn(t, st, cfg, nil)
	assert.Equal(t, 2, nu.endedLen())
	assert.Equal(t, map[string]int64{"": 1}, telemetrytest.Points(t, nu.tel, "otelcol_processor_deltaq_ended_evictions"))
}

// TestReloadCountsInstancesEvicted: a reload to a smaller max_in_flight
// keeps the newest instances it can hold and counts those it evicts in
// evictions, by state, as tracking counts its evictions (they were
// forgotten unsaid).
func TestReloadCountsInstancesEvicted(t *testing.T) {
	st := collectorstate.New()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	old := newHarnessIn(t, st, cfg, nil)
	old.consumeLogs(startEvents("checkout", base, 1, 2, 3))
	st.Reload.Requested()
	require.NoError(t, old.traces.Shutdown(context.Background()))
	require.NoError(t, old.logs.Shutdown(context.Background()))

	cfg = testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	cfg.MaxInFlight = 1
	nu := newHarnessIn(t, st, cfg, nil)
	assert.Equal(t, 1, nu.p.tracker.Len())
	assert.Equal(t, map[string]int64{"state=started": 2}, telemetrytest.Points(t, nu.tel, "otelcol_processor_deltaq_evictions"))
}

// TestShutdownWithoutReloadDropsInstances: without a reload request the
// shutdown is final and the next processor starts empty.
func TestShutdownWithoutReloadDropsInstances(t *testing.T) {
	st := collectorstate.New()
	cfg := testConfig(probeConfig("checkout", 50*time.Millisecond, 25))
	old := newHarnessIn(t, st, cfg, nil)
	old.consumeLogs(logsOf(startEvent{probe: "checkout", id: 1, at: base}))
	require.NoError(t, old.traces.Shutdown(context.Background()))
	require.NoError(t, old.logs.Shutdown(context.Background()))
	nu := newHarnessIn(t, st, cfg, nil)
	assert.Zero(t, nu.p.tracker.Len())
}
