// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

func TestConsumeTracesReadsOnlyInstances(t *testing.T) {
	h := newHarness(t, testConfig(), at(time.Second))
	dm := 20 * time.Millisecond
	h.consume(
		span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(3), dmax: dm, bins: 20},
		span{probe: "p", outcome: contract.Failure, end: ms(200), delay: ms(3), dmax: dm, bins: 20},
		// Late: the instance was already counted as a timeout.
		span{probe: "p", outcome: contract.Timeout, end: ms(300), delay: ms(30), dmax: dm, bins: 20, late: true},
		// An outcome the contract does not know: counted as invalid.
		span{probe: "p", outcome: "maybe", end: ms(400), delay: ms(3), dmax: dm, bins: 20},
	)
	// A span whose deltaq.probe is not a string is not an instance.
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.Attributes().PutInt(contract.AttrProbe, 7)
	require.NoError(t, h.obs.ConsumeTraces(context.Background(), td))

	st := h.obs.Stats()
	assert.Equal(t, int64(2), st.Counted, "a success and a failure")
	assert.Equal(t, int64(1), st.Dropped[analysis.DropInvalid], "the unknown outcome")
	assert.Equal(t, int64(1), st.Dropped.Total())
}

func TestReadInstance(t *testing.T) {
	sp := ptrace.NewSpan()
	start := at(0)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(ms(7))))
	a := sp.Attributes()
	a.PutStr(contract.AttrProbe, "checkout")
	a.PutStr(contract.AttrOutcome, contract.Timeout)
	a.PutInt(contract.AttrDMaxNs, int64(50*time.Millisecond))
	a.PutInt(contract.AttrBins, 50)
	a.PutBool(contract.AttrSynthetic, true)
	var in analysis.Instance
	read := func() bool {
		isInstance, timed := readInstance(sp, &in)
		require.Equal(t, isInstance, timed, "a span with both times")
		return isInstance
	}
	require.True(t, read())
	assert.Equal(t, analysis.Instance{
		Probe: "checkout", Outcome: analysis.Timeout,
		Start: start.UnixNano(), End: start.Add(ms(7)).UnixNano(),
		DMaxNs: int64(50 * time.Millisecond), Bins: 50,
	}, in)
	a.PutBool(contract.AttrLate, true)
	assert.False(t, read(), "late spans are not counted again")

	// A success as the processor writes most of them: deltaq.probe alone, no
	// outcome and no layout attributes, so a success with no layout of its
	// own (zero).
	a.Clear()
	a.PutStr(contract.AttrProbe, "checkout")
	success := analysis.Instance{
		Probe: "checkout", Outcome: analysis.Success,
		Start: start.UnixNano(), End: start.Add(ms(7)).UnixNano(),
	}
	require.True(t, read())
	assert.Equal(t, success, in)
	// An explicit success, as earlier processors wrote it, reads the same.
	a.PutStr(contract.AttrOutcome, contract.Success)
	require.True(t, read())
	assert.Equal(t, success, in)

	// A present outcome that is empty, not a string or unknown is an
	// instance with no outcome (0), which the engine counts as invalid: not
	// a success.
	for _, put := range illFormedOutcomes {
		put(a)
		require.True(t, read())
		assert.Equal(t, analysis.Outcome(0), in.Outcome, "%v", a.AsRaw())
		assert.Equal(t, "checkout", in.Probe)
	}
}

func TestSnapshotFile(t *testing.T) {
	cfg := goldenConfig()
	cfg.Snapshot.Directory = t.TempDir()
	h := newHarness(t, cfg, at(time.Second))
	goldenWindows(h)

	files, err := filepath.Glob(filepath.Join(cfg.Snapshot.Directory, "deltaq-snapshot-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one snapshot, one file")
	assert.Equal(t, "deltaq-snapshot-1-20231114T221322.000000000Z.json", filepath.Base(files[0]))
	raw, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var snap struct {
		ID       int64 `json:"id"`
		Triggers []struct {
			Probe, Trigger string
		} `json:"triggers"`
		Windows []struct {
			Probes []struct {
				Probe    string `json:"probe"`
				Observed *struct {
					Width float64   `json:"width"`
					CDF   []float64 `json:"cdf"`
				} `json:"observed"`
			} `json:"probes"`
		} `json:"windows"`
	}
	require.NoError(t, json.Unmarshal(raw, &snap))
	assert.Equal(t, int64(1), snap.ID)
	// The divergence of window 2 (6 instances) is not significant: the
	// divergence test does not fire on so few (analysis package doc).
	assert.Len(t, snap.Triggers, 3, "qta, failure and load fired together")
	require.Len(t, snap.Windows, 2, "one window before the trigger's, none after")
	e2e := snap.Windows[1].Probes[2]
	require.Equal(t, "e2e", e2e.Probe)
	require.NotNil(t, e2e.Observed)
	assert.Len(t, e2e.Observed.CDF, 20)
	// Three of six instances took 15.5 ms (bin 15); the rest failed or timed out.
	assert.InDelta(t, 0.5, e2e.Observed.CDF[15], 1e-12)
	assert.InDelta(t, 0.0, e2e.Observed.CDF[14], 1e-12)
}

func TestEdgeLabels(t *testing.T) {
	b := newBuilder(0, 0, exporterScope, "", t0)
	// 0.3 ms bins: (i+1)·w in floating point is 0.00030000000000000003 for
	// i = 0 without the picosecond rounding.
	e := b.edgesOf(0.0003, 4)
	assert.Equal(t, []string{"0.0003", "0.0006", "0.0009", "0.0012"}, e.labels)
	// The thesis's finest width, 1 ms·2⁻¹⁰ = 976.5625 ns, is kept exactly.
	e = b.edgesOf(0.001/1024, 2)
	assert.Equal(t, []string{"9.765625e-07", "1.953125e-06"}, e.labels)
	// cdf_points 3 over 10 bins: stride 4, edges of bins 3, 7 and dMax.
	b = newBuilder(3, 0, exporterScope, "", t0)
	e = b.edgesOf(0.001, 10)
	assert.Equal(t, []int{3, 7, 9}, e.idx)
	assert.Equal(t, []string{"0.004", "0.008", "0.01"}, e.labels)
}

// Shutdown closes the windows still open (their lag not yet passed, or the
// current one) instead of losing instances already accepted.
func TestShutdownFlushesOpenWindows(t *testing.T) {
	h := newHarness(t, testConfig(), at(1500*time.Millisecond))
	dm := 20 * time.Millisecond
	h.consume(
		span{probe: "p", outcome: contract.Success, end: ms(100), delay: ms(3), dmax: dm, bins: 20},
		span{probe: "p", outcome: contract.Success, end: ms(200), delay: ms(4), dmax: dm, bins: 20},
		span{probe: "p", outcome: contract.Failure, end: ms(1200), delay: ms(5), dmax: dm, bins: 20},
	)
	require.Empty(t, h.metrics.AllMetrics(), "no window has reached its close time")
	require.NoError(t, h.obs.Shutdown(context.Background()))

	counts := outcomeCounts(t, h, "p")
	assert.Equal(t, int64(2), counts[contract.Success], "both successes of the first window")
	assert.Equal(t, int64(1), counts[contract.Failure], "the failure of the current, partial window")
}

// A timeout whose span arrives long after start + dMax (no start event timed
// it out on time) still counts, in the oldest open window, and the
// self-telemetry says how many did.
func TestLateTimeoutCountedAndReported(t *testing.T) {
	h := newHarness(t, testConfig(), at(5*time.Second))
	h.obs.tick(at(5 * time.Second)) // windows up to [3s, 4s) close
	dm := 20 * time.Millisecond
	// Started at 100 ms, ended at 4.6 s: a timeout whose own window is
	// [0, 1s), long closed.
	h.consume(span{probe: "p", outcome: contract.Timeout, end: 4600 * time.Millisecond, delay: 4500 * time.Millisecond, dmax: dm, bins: 20})
	h.obs.tick(at(6 * time.Second))
	assert.Equal(t, int64(1), h.obs.Stats().Counted)
	assert.Equal(t, int64(1), counter(t, h, "exporter_deltaq_late_timeouts", ""))
}
