// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
)

// Snapshot files are named deltaq-snapshot-<id>-<time>.json, <time> the
// snapshot's time in UTC with nanoseconds. Only files so named are ours: the
// retention below never touches any other file of the directory.
const (
	snapshotPrefix     = "deltaq-snapshot-"
	snapshotSuffix     = ".json"
	snapshotTimeLayout = "20060102T150405.000000000Z"
)

// snapshotName is the file name of a snapshot.
func snapshotName(s *analysis.Snapshot) string {
	return fmt.Sprintf("%s%d-%s%s", snapshotPrefix, s.ID, s.Time.UTC().Format(snapshotTimeLayout), snapshotSuffix)
}

// snapshotFile is one snapshot file of the directory.
type snapshotFile struct {
	name string
	size int64
	// at orders the files, oldest first: the time in the name, or the
	// modification time of a file whose name carries none; id breaks ties.
	at time.Time
	id int64
}

func (a snapshotFile) compare(b snapshotFile) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	if a.id != b.id {
		if a.id < b.id {
			return -1
		}
		return 1
	}
	return strings.Compare(a.name, b.name)
}

// parseSnapshotName returns the id and time in a snapshot file name; ok is
// false when the name is ours (prefix and suffix) but carries neither.
func parseSnapshotName(name string) (id int64, at time.Time, ok bool) {
	rest := strings.TrimSuffix(strings.TrimPrefix(name, snapshotPrefix), snapshotSuffix)
	ids, ts, found := strings.Cut(rest, "-")
	if !found {
		return 0, time.Time{}, false
	}
	id, err := strconv.ParseInt(ids, 10, 64)
	if err != nil {
		return 0, time.Time{}, false
	}
	at, err = time.Parse(snapshotTimeLayout, ts)
	if err != nil {
		return 0, time.Time{}, false
	}
	return id, at, true
}

// isSnapshotFile tells whether a directory entry is one of our snapshot
// files (not the hidden temporary file of a write in progress).
func isSnapshotFile(name string) bool {
	return strings.HasPrefix(name, snapshotPrefix) && strings.HasSuffix(name, snapshotSuffix) &&
		len(name) > len(snapshotPrefix)+len(snapshotSuffix)
}

// snapshotStore writes snapshot files into the snapshot directory and keeps
// it within maxFiles files and maxBytes bytes of snapshot files (≤ 0: no
// bound), removing the oldest first. The directory is listed once, at the
// first write; from then on the store keeps the list of its files in memory,
// so that a write costs no directory listing. The snapshot just written is
// never removed, so that a bound smaller than one snapshot still keeps the
// latest. Files removed by someone else are forgotten when the store fails
// to remove them. It is used by the window timer only.
type snapshotStore struct {
	dir      string
	maxFiles int
	maxBytes int64
	logger   *zap.Logger

	scanned bool
	files   []snapshotFile // oldest first
	bytes   int64          // Σ size of files
}

func newSnapshotStore(dir string, maxFiles int, maxBytes int64, logger *zap.Logger) *snapshotStore {
	return &snapshotStore{dir: dir, maxFiles: maxFiles, maxBytes: maxBytes, logger: logger}
}

// scan lists the snapshot files already in the directory.
func (st *snapshotStore) scan() error {
	entries, err := os.ReadDir(st.dir)
	if err != nil {
		return err
	}
	st.files, st.bytes = st.files[:0], 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !isSnapshotFile(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		f := snapshotFile{name: e.Name(), size: info.Size()}
		var ok bool
		if f.id, f.at, ok = parseSnapshotName(f.name); !ok {
			f.at = info.ModTime()
		}
		st.files = append(st.files, f)
		st.bytes += f.size
	}
	slices.SortFunc(st.files, snapshotFile.compare)
	st.scanned = true
	return nil
}

// write writes one snapshot file, then removes the oldest files past the
// bounds; it returns the number of files removed.
func (st *snapshotStore) write(s *analysis.Snapshot) (removed int, err error) {
	if !st.scanned {
		if err := st.scan(); err != nil {
			// Write anyway; the files already there are not known
			// and the next write lists the directory again.
			st.logger.Warn("cannot list the ΔQ snapshot directory: old snapshot files are not pruned", zap.String("directory", st.dir), zap.Error(err))
		}
	}
	f, err := writeSnapshot(st.dir, s)
	if err != nil {
		return 0, err
	}
	// Keep the list ordered: insert the new file at its place, the end
	// unless the clock went back.
	if i, found := slices.BinarySearchFunc(st.files, f, snapshotFile.compare); found {
		st.bytes += f.size - st.files[i].size // rewritten in place
		st.files[i] = f
	} else {
		st.files = slices.Insert(st.files, i, f)
		st.bytes += f.size
	}
	return st.prune(f.name), nil
}

// prune removes the oldest files, except keep, while the directory holds
// more than maxFiles files or maxBytes bytes of snapshot files, and returns
// the number removed.
func (st *snapshotStore) prune(keep string) (removed int) {
	for i := 0; i < len(st.files) && st.over(); {
		f := st.files[i]
		if f.name == keep {
			i++
			continue
		}
		err := os.Remove(filepath.Join(st.dir, f.name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			// Leave it (and its bytes) in the list: a later write
			// tries again, and the bound stays honest.
			st.logger.Warn("cannot remove an old ΔQ snapshot file", zap.String("file", f.name), zap.Error(err))
			i++
			continue
		}
		if err == nil {
			removed++
			st.logger.Debug("removed an old ΔQ snapshot file", zap.String("file", f.name), zap.Int64("bytes", f.size),
				zap.Int("max_files", st.maxFiles), zap.Int64("max_bytes", st.maxBytes))
		}
		st.files = slices.Delete(st.files, i, i+1)
		st.bytes -= f.size
	}
	return removed
}

func (st *snapshotStore) over() bool {
	return (st.maxFiles > 0 && len(st.files) > st.maxFiles) || (st.maxBytes > 0 && st.bytes > st.maxBytes)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeSnapshot writes one snapshot as deltaq-snapshot-<id>-<time>.json,
// through a temporary file so that a reader never sees half a snapshot, and
// returns the file written.
func writeSnapshot(dir string, s *analysis.Snapshot) (snapshotFile, error) {
	f := snapshotFile{name: snapshotName(s), at: s.Time.UTC(), id: s.ID}
	tmp, err := os.CreateTemp(dir, "."+snapshotPrefix+"*")
	if err != nil {
		return f, err
	}
	cw := &countingWriter{w: tmp}
	werr := s.WriteJSON(cw)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return f, err
	}
	f.size = cw.n
	if err := os.Rename(tmp.Name(), filepath.Join(dir, f.name)); err != nil {
		os.Remove(tmp.Name())
		return f, err
	}
	return f, nil
}
