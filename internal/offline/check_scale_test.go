// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// manyProbesConfig is a collector configuration of n processor probes, each
// matched by its span name, and a connector that sets a QTA for each.
func manyProbesConfig(n int) string {
	var b strings.Builder
	b.WriteString("receivers:\n  otlp: {protocols: {grpc: {endpoint: 127.0.0.1:0}}}\n")
	b.WriteString("processors:\n  deltaq:\n    probes:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {name: p%d, match: {span_name: op%d}, dmax: 1s, bins: 100}\n", i, i)
	}
	b.WriteString("connectors:\n  deltaq:\n    probes:\n")
	for i := range n {
		fmt.Fprintf(&b, "      p%d: {qta: {points: [{delay: 200ms, p: 0.5}]}}\n", i)
	}
	b.WriteString("exporters:\n  debug: {}\nservice:\n  pipelines:\n" +
		"    traces/deltaq: {receivers: [otlp], processors: [deltaq], exporters: [deltaq]}\n" +
		"    metrics/deltaq: {receivers: [deltaq], exporters: [debug]}\n")
	return b.String()
}

// writeManyProbes writes manyProbesConfig(n) into dir.
func writeManyProbes(tb testing.TB, dir string, n int) string {
	tb.Helper()
	path := filepath.Join(dir, fmt.Sprintf("probes-%d.yaml", n))
	if err := os.WriteFile(path, []byte(manyProbesConfig(n)), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkCheckProbes reads and checks, as deltaq check --config does,
// configurations of 1,000, 5,000 and 20,000 probes.
func BenchmarkCheckProbes(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("probes=%d", n), func(b *testing.B) {
			path := writeManyProbes(b, b.TempDir(), n)
			b.ReportAllocs()
			for b.Loop() {
				if err := resolveAndCheck(path, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// resolveAndCheck reads the configuration at path and checks it, as deltaq
// check --config does.
func resolveAndCheck(path string, w io.Writer) error {
	conf, err := Resolve([]string{path})
	if err != nil {
		return err
	}
	return Check(w, conf)
}

// TestCheckManyProbesMemory: deltaq check of 20,000 probes and a QTA for
// each allocates within a bound linear in the probes. Measured: 1,263
// allocations and 55 KB a probe; before the configuration was read once
// and decoded without copying it again, 5,270 and 210 KB (and 23 s).
func TestCheckManyProbesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a configuration of 20,000 probes")
	}
	const n = 20000
	path := writeManyProbes(t, t.TempDir(), n)
	if _, ok, err := resolvePlain([]string{path}); !ok || err != nil {
		t.Fatalf("a plain file is not read in one pass: ok %v, err %v", ok, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var stdout strings.Builder
	err := resolveAndCheck(path, &stdout)
	runtime.ReadMemStats(&after)
	if err != nil || !strings.Contains(stdout.String(), "processors::deltaq: ok, 20000 probes") {
		t.Fatalf("%v\nstdout %s", err, stdout.String())
	}
	allocs, bytes := after.Mallocs-before.Mallocs, after.TotalAlloc-before.TotalAlloc
	t.Logf("%d probes: %d allocations (%d a probe), %d MB (%d KB a probe)", n, allocs, allocs/n, bytes>>20, bytes/n>>10)
	if allocs > 2000*n || bytes > 100<<10*n {
		t.Errorf("%d allocations, %d bytes; want at most 2,000 and 100 KB a probe", allocs, bytes)
	}
}
