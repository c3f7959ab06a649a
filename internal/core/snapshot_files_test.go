// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/telemetrytest"
)

// testSnapshot is snapshot id at t0 + id seconds.
func testSnapshot(id int64) *analysis.Snapshot {
	return &analysis.Snapshot{ID: id, Time: at(time.Duration(id) * time.Second)}
}

// dirNames lists the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func snapshotNames(ids ...int64) []string {
	var out []string
	for _, id := range ids {
		out = append(out, snapshotName(testSnapshot(id)))
	}
	slices.Sort(out)
	return out
}

func TestParseSnapshotName(t *testing.T) {
	id, ts, ok := parseSnapshotName("deltaq-snapshot-12-20231114T221322.500000000Z.json")
	require.True(t, ok)
	assert.Equal(t, int64(12), id)
	assert.Equal(t, time.Date(2023, 11, 14, 22, 13, 22, 5e8, time.UTC), ts)
	assert.Equal(t, "deltaq-snapshot-3-20231114T221323.000000000Z.json", snapshotName(testSnapshot(3)))
	for _, bad := range []string{"deltaq-snapshot-x.json", "deltaq-snapshot-1-yesterday.json", "deltaq-snapshot-.json"} {
		_, _, ok := parseSnapshotName(bad)
		assert.False(t, ok, bad)
	}
}

// TestSnapshotRetentionMaxFiles: with max_files 3, five snapshots leave the
// three newest, and the two removed are counted.
func TestSnapshotRetentionMaxFiles(t *testing.T) {
	dir := t.TempDir()
	removed := 0
	st := newSnapshotStore(dir, 3, 0, zap.NewNop())
	for id := int64(1); id <= 5; id++ {
		n, err := st.write(testSnapshot(id))
		require.NoError(t, err)
		removed += n
	}
	assert.Equal(t, snapshotNames(3, 4, 5), dirNames(t, dir))
	assert.Equal(t, 2, removed)
}

// TestSnapshotRetentionMaxBytes: with max_bytes room for two and a half
// files of the same size, two files are kept; the byte count is the files'
// sizes on disk.
func TestSnapshotRetentionMaxBytes(t *testing.T) {
	dir := t.TempDir()
	f, err := writeSnapshot(t.TempDir(), testSnapshot(1))
	require.NoError(t, err)
	removed := 0
	st := newSnapshotStore(dir, 0, f.size*5/2, zap.NewNop())
	for id := int64(1); id <= 4; id++ {
		n, err := st.write(testSnapshot(id))
		require.NoError(t, err)
		removed += n
	}
	assert.Equal(t, snapshotNames(3, 4), dirNames(t, dir))
	assert.Equal(t, 2, removed)
	var total int64
	for _, n := range dirNames(t, dir) {
		info, err := os.Stat(filepath.Join(dir, n))
		require.NoError(t, err)
		total += info.Size()
	}
	assert.Equal(t, total, st.bytes)
	assert.Equal(t, f.size, total/2, "the same snapshot content, the same size")
}

// TestSnapshotRetentionKeepsTheNewest: a bound smaller than one snapshot
// still keeps the one just written.
func TestSnapshotRetentionKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	st := newSnapshotStore(dir, 0, 1, zap.NewNop())
	removed, err := st.write(testSnapshot(1))
	require.NoError(t, err)
	assert.Zero(t, removed, "the only file is the one just written")
	removed, err = st.write(testSnapshot(2))
	require.NoError(t, err)
	assert.Equal(t, 1, removed)
	assert.Equal(t, snapshotNames(2), dirNames(t, dir))
}

// TestSnapshotRetentionLeavesForeignFiles: only deltaq-snapshot-*.json
// files count and are removed; other files, a directory with a snapshot
// name and the hidden temporary files of writes stay, whatever their age.
func TestSnapshotRetentionLeavesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	old := t0.Add(-time.Hour)
	foreign := []string{"notes.txt", "deltaq-snapshot-1.txt", "deltaq-snapshot-1-20231114T221322.000000000Z.json.bak", ".deltaq-snapshot-123", "snapshot.json"}
	for _, n := range foreign {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), make([]byte, 1<<20), 0o600))
		require.NoError(t, os.Chtimes(filepath.Join(dir, n), old, old))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "deltaq-snapshot-0-20000101T000000.000000000Z.json"), 0o700))

	st := newSnapshotStore(dir, 1, 1000, zap.NewNop())
	for id := int64(1); id <= 3; id++ {
		_, err := st.write(testSnapshot(id))
		require.NoError(t, err)
	}
	want := append(slices.Clone(foreign), "deltaq-snapshot-0-20000101T000000.000000000Z.json", snapshotName(testSnapshot(3)))
	slices.Sort(want)
	assert.Equal(t, want, dirNames(t, dir))
}

// TestSnapshotRetentionCountsFilesAlreadyThere: the snapshot files in the
// directory before the first write (from an earlier run, whose ids started
// at 1 too, and one whose name carries no time, ordered by its modification
// time) count against the bounds and are removed oldest first; the
// directory is listed once.
func TestSnapshotRetentionCountsFilesAlreadyThere(t *testing.T) {
	dir := t.TempDir()
	earlier := []*analysis.Snapshot{
		{ID: 1, Time: t0.Add(-3 * time.Hour)},
		{ID: 2, Time: t0.Add(-2 * time.Hour)},
		{ID: 3, Time: t0.Add(-time.Hour)},
	}
	for _, s := range earlier {
		_, err := writeSnapshot(dir, s)
		require.NoError(t, err)
	}
	odd := "deltaq-snapshot-manual.json"
	require.NoError(t, os.WriteFile(filepath.Join(dir, odd), []byte("{}"), 0o600))
	require.NoError(t, os.Chtimes(filepath.Join(dir, odd), t0.Add(-150*time.Minute), t0.Add(-150*time.Minute)))

	core, logs := observer.New(zapcore.DebugLevel)
	st := newSnapshotStore(dir, 3, 0, zap.New(core))
	removed, err := st.write(testSnapshot(1))
	require.NoError(t, err)
	// Oldest first: earlier 1 (−3 h), then the odd file (−2.5 h).
	want := []string{snapshotName(earlier[1]), snapshotName(earlier[2]), snapshotName(testSnapshot(1))}
	slices.Sort(want)
	assert.Equal(t, want, dirNames(t, dir))
	assert.Equal(t, 2, removed)
	assert.Equal(t, 2, logs.FilterMessage("removed an old ΔQ snapshot file").Len(), "a Debug log per file removed")

	// A file put there later is not seen: the list is kept in memory,
	// not re-read at every write.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deltaq-snapshot-9-20000101T000000.000000000Z.json"), []byte("{}"), 0o600))
	_, err = st.write(testSnapshot(2))
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "deltaq-snapshot-9-20000101T000000.000000000Z.json"))
	assert.NoFileExists(t, filepath.Join(dir, snapshotName(earlier[1])))
}

// TestSnapshotFilesRemovedTelemetry: the exporter prunes the snapshot
// directory after writing and counts the files it removed in
// exporter_deltaq_snapshot_files_removed.
func TestSnapshotFilesRemovedTelemetry(t *testing.T) {
	cfg := goldenConfig()
	cfg.Snapshot.Directory = t.TempDir()
	cfg.Snapshot.MaxFiles = 1
	for _, s := range []*analysis.Snapshot{{ID: 7, Time: t0.Add(-time.Hour)}, {ID: 8, Time: t0.Add(-time.Minute)}} {
		_, err := writeSnapshot(cfg.Snapshot.Directory, s)
		require.NoError(t, err)
	}
	h := newHarness(t, cfg, at(time.Second))
	goldenWindows(h)

	assert.Equal(t, []string{"deltaq-snapshot-1-20231114T221322.000000000Z.json"}, dirNames(t, cfg.Snapshot.Directory))
	assert.Equal(t, map[string]int64{"": 2}, telemetrytest.Sum(t, h.tel, "otelcol_exporter_deltaq_snapshot_files_removed"))
}
