// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenConfig: e2e = a -> b with 1 ms bins up to 20 ms, a QTA and every
// trigger on e2e, five deltaq.le points per curve, and snapshots of one
// window before the trigger and none after.
func goldenConfig() *Config {
	cfg := testConfig()
	cfg.Diagram = "e2e = a -> b;"
	cfg.CDFPoints = 5
	cfg.Probes = map[string]analysis.ProbeConfig{"e2e": {
		QTA:      analysis.QTA{Points: []analysis.QTAPoint{{Delay: 8 * time.Millisecond, P: 0.5}}, MaxFailure: 0.3},
		Triggers: analysis.Triggers{QTA: true, Failure: true, MaxInstances: 5, MaxDivergence: 0.5},
	}}
	cfg.Snapshot = analysis.SnapshotConfig{Enabled: true, Before: 1, After: 0}
	return cfg
}

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// goldenWindows feeds two windows; the second fires the qta, failure and
// load triggers of e2e and completes a snapshot (its divergence, on six
// instances, is not significant).
func goldenWindows(h *harness) {
	mk := func(probe, oc string, end, delay time.Duration) span {
		return span{probe: probe, outcome: oc, end: end, delay: delay, dmax: 20 * time.Millisecond, bins: 20}
	}
	var w1, w2 []span
	for i := range 4 {
		end := ms(100 + 100*float64(i))
		w1 = append(w1, mk("a", contract.Success, end, ms(2.5)), mk("b", contract.Success, end, ms(3.5)))
		w2 = append(w2, mk("a", contract.Success, time.Second+end, ms(2.5)), mk("b", contract.Success, time.Second+end, ms(3.5)))
	}
	// Window 1: e2e takes 6 ms, what a -> b predicts (2.5 ms + 3.5 ms),
	// and one instance in five fails: no divergence beyond the calculated
	// ΔQ's bounds, within the QTA.
	w1 = append(w1,
		mk("e2e", contract.Success, ms(500), ms(6)),
		mk("e2e", contract.Success, ms(550), ms(6)),
		mk("e2e", contract.Success, ms(600), ms(6)),
		mk("e2e", contract.Success, ms(650), ms(6)),
		mk("e2e", contract.Failure, ms(800), ms(1)),
	)
	// Window 2: e2e is slow (15.5 ms: the QTA's 50 % by 8 ms is broken),
	// half its six instances fail or time out, and it is far from a -> b.
	w2 = append(w2,
		mk("e2e", contract.Success, time.Second+ms(500), ms(15.5)),
		mk("e2e", contract.Success, time.Second+ms(550), ms(15.5)),
		mk("e2e", contract.Success, time.Second+ms(600), ms(15.5)),
		mk("e2e", contract.Failure, time.Second+ms(700), ms(1)),
		// Synthetic timeouts: they end at start + dMax.
		mk("e2e", contract.Timeout, time.Second+ms(800), ms(20)),
		mk("e2e", contract.Timeout, time.Second+ms(850), ms(20)),
		// The late span of an instance that already timed out: not counted.
		func() span { s := mk("e2e", contract.Success, time.Second+ms(810), ms(30)); s.late = true; return s }(),
	)
	h.consume(w1...)
	h.consume(w2...)
	h.obs.tick(at(2 * time.Second))
	h.obs.tick(at(3 * time.Second))
}

func TestGoldenMetricsAndLogs(t *testing.T) {
	h := newHarness(t, goldenConfig(), at(time.Second))
	goldenWindows(h)

	mds := h.metrics.AllMetrics()
	require.Len(t, mds, 2, "one metrics batch per closed window")
	for i, md := range mds {
		path := filepath.Join("testdata", "golden", "metrics_window"+string(rune('1'+i))+".json")
		b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
		require.NoError(t, err)
		if writeGolden(t, path, b) {
			continue
		}
		want, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(readGolden(t, path))
		require.NoError(t, err)
		// Exact comparison, order included: the exporter emits probes,
		// series and points in a documented, deterministic order.
		require.NoError(t, pmetrictest.CompareMetrics(want, md), "%s (go test -run Golden -update rewrites it after review)", path)
	}
	lds := h.logs.AllLogs()
	require.Len(t, lds, 1, "the second window fires triggers and completes a snapshot; the first is quiet")
	path := filepath.Join("testdata", "golden", "logs_window2.json")
	b, err := (&plog.JSONMarshaler{}).MarshalLogs(lds[0])
	require.NoError(t, err)
	if writeGolden(t, path, b) {
		return
	}
	want, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(readGolden(t, path))
	require.NoError(t, err)
	require.NoError(t, plogtest.CompareLogs(want, lds[0]), "%s (go test -run Golden -update rewrites it after review)", path)
}

// writeGolden writes the pdata JSON form, indented, to a golden file when
// the test runs with -update, and reports whether it did.
func writeGolden(t *testing.T, path string, raw []byte) bool {
	t.Helper()
	if !*update {
		return false
	}
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, raw, "", "  "))
	buf.WriteByte('\n')
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return true
}

func readGolden(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test -run Golden -update")
	return b
}

// The collector's own resource (service.name, service.instance.id) rides on
// every metrics and logs batch, so that several collectors exporting the
// same probe stay apart downstream.
func TestOutputCarriesCollectorResource(t *testing.T) {
	h := newHarnessWith(t, goldenConfig(), at(time.Second), func(set *Settings) {
		set.Telemetry.Resource = pcommon.NewResource()
		set.Telemetry.Resource.Attributes().PutStr("service.name", "otelcol-deltaq")
		set.Telemetry.Resource.Attributes().PutStr("service.instance.id", "agent-7")
	})
	goldenWindows(h)
	check := func(signal string, attrs pcommon.Map) {
		name, ok := attrs.Get("service.name")
		require.True(t, ok, "%s: no service.name", signal)
		require.Equal(t, "otelcol-deltaq", name.Str(), signal)
		id, ok := attrs.Get("service.instance.id")
		require.True(t, ok, "%s: no service.instance.id", signal)
		require.Equal(t, "agent-7", id.Str(), signal)
	}
	mds := h.metrics.AllMetrics()
	require.NotEmpty(t, mds)
	for _, md := range mds {
		check("metrics", md.ResourceMetrics().At(0).Resource().Attributes())
	}
	lds := h.logs.AllLogs()
	require.NotEmpty(t, lds)
	check("logs", lds[0].ResourceLogs().At(0).Resource().Attributes())
}
