// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package globtest gives a test the files it runs on and fails the test
// when there are none: a test that loops over the matches of a glob or the
// entries of a directory would otherwise pass on nothing when the files
// move or the pattern is wrong. internal/archcheck holds every test of the
// repository that globs or lists a directory to it, or to a check of its
// own that the result is not empty.
package globtest // import "github.com/deltaq-otel/deltaq/internal/globtest"

import (
	"os"
	"path/filepath"
	"testing"
)

// Glob returns the names of the files matching pattern (filepath.Glob),
// and fails the test when the pattern is malformed or matches nothing.
func Glob(tb testing.TB, pattern string) []string {
	tb.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		tb.Fatalf("glob %s: %v", pattern, err)
	}
	if len(files) == 0 {
		tb.Fatalf("no file matches %s", pattern)
	}
	return files
}

// ReadDir returns the entries of the directory dir (os.ReadDir), and fails
// the test when it cannot be read or is empty.
func ReadDir(tb testing.TB, dir string) []os.DirEntry {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("read directory: %v", err)
	}
	if len(entries) == 0 {
		tb.Fatalf("directory %s is empty", dir)
	}
	return entries
}
