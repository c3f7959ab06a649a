// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/offline"
)

// analyseAutoProbe runs deltaq analyze's analysis of a processor whose
// probe a is dmax: auto (a sample of 100, a choice a second at most) over
// 2000 spans of a, 10 ms apart and 1 to 7 ms long, pausing for pause
// after the 500th, and returns each window's layout of a (its dMax) and
// counts.
func analyseAutoProbe(t *testing.T, pause time.Duration) map[int64]autoWindow {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
processors:
  deltaq:
    probes:
      a: {dmax: auto, bins: 50, dmax_sample: 100, dmax_period: 1s, dmax_max: 1s}
connectors:
  deltaq:
    interval: 1s
`), 0o600))
	l, err := (&offline.Source{Paths: []string{cfg}, Processor: "deltaq", Exporter: "deltaq"}).Load()
	require.NoError(t, err)
	an, proc, err := offline.NewAnalysis(l, l.Analysis)
	require.NoError(t, err)
	out := map[int64]autoWindow{}
	an.OnWindow(func(r *analysis.Result) {
		for _, p := range r.Probes {
			if p.Name == "a" && p.Counts.Total() > 0 {
				out[r.End.UnixNano()] = autoWindow{time.Duration(p.Width * float64(p.Bins) * 1e9).Round(time.Microsecond), p.Counts}
			}
		}
	})
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 2000 {
		td := ptrace.NewTraces()
		sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		sp.SetName("a")
		sp.SetTraceID([16]byte{byte(i), byte(i >> 8), 1})
		sp.SetSpanID([8]byte{byte(i), byte(i >> 8), 1})
		start := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(1+i%7) * time.Millisecond)))
		require.NoError(t, proc.ConsumeTraces(context.Background(), td))
		if i == 500 {
			time.Sleep(pause)
		}
	}
	require.NoError(t, proc.Shutdown(context.Background()))
	an.Result()
	return out
}

// autoWindow is a window of an auto probe: its dMax and counts.
type autoWindow struct {
	dmax   time.Duration
	counts analysis.Counts
}

// TestAnalyzeProcessorAutoProbeAtDMaxMax: a probe the deltaq processor
// maps with dmax: auto is read at its dmax_max, as deltaq analyze reads
// the connector's auto probes: the processor chose its dMax on its own
// timer, by the time it took to read the file, so that a file read slowly
// (a pause longer than dmax_period after dmax_sample spans) moved the probe
// to a layout of 20 ms from the window after, and one read at once kept
// 1 s: the same spans, analysed twice, gave two analyses.
func TestAnalyzeProcessorAutoProbeAtDMaxMax(t *testing.T) {
	fast, slow := analyseAutoProbe(t, 0), analyseAutoProbe(t, 1100*time.Millisecond)
	require.Len(t, fast, 20)
	require.Equal(t, fast, slow)
	for end, w := range slow {
		require.Equal(t, autoWindow{time.Second, analysis.Counts{Success: 100}}, w, "window ending %s", time.Unix(0, end).UTC())
	}
}

// TestProcessorNamedAsConfigured: the processor read with --processor
// deltaq/a is made with that ID, so that the messages about it name it as
// the configuration does (it was made as "deltaq" whatever its ID, and the
// collector's refusal of a probe it and the connector both match named
// the processor "deltaq"), in deltaq analyze and deltaq slo alike; and a
// processor of the pipelines that does not validate is named with its
// file, as the processor read is (the file was left out).
func TestProcessorNamedAsConfigured(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "collector.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
processors:
  deltaq/a:
    probes:
      a: {dmax: 50ms, bins: 50}
  deltaq/b:
    probes:
      b: {dmax: 50ms}
connectors:
  deltaq:
    probes:
      a: {match: {}, dmax: 50ms, bins: 50, qta: {points: [{delay: 10ms, p: 0.5}]}}
`), 0o600))
	src := offline.Source{Paths: []string{cfg}, Processor: "deltaq/a", ProcessorSet: true, Connector: "deltaq"}
	_, err := src.Load()
	require.ErrorContains(t, err, cfg+`: processors::deltaq/b: probes["b"].bins: is required`)

	require.NoError(t, os.WriteFile(cfg, []byte(`
processors:
  deltaq/a:
    probes:
      a: {dmax: 50ms, bins: 50}
connectors:
  deltaq:
    probes:
      a: {match: {}, dmax: 50ms, bins: 50, qta: {points: [{delay: 10ms, p: 0.5}]}}
`), 0o600))
	l, err := src.Load()
	require.NoError(t, err)
	require.Equal(t, cfg+": processors::deltaq/a", l.Proc.Where)
	const want = `probe "a" is matched in the spans by both the deltaq processor "deltaq/a" and the deltaq connector "deltaq"`
	_, _, err = offline.NewAnalysis(l, l.Analysis)
	require.ErrorContains(t, err, want)
	_, err = offline.SLOProbes(l)
	require.ErrorContains(t, err, want)
}
