// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package globtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf records the message and stops its
// goroutine, as the testing package's does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs f on a recorder and returns the message of its Fatalf, or
// "" when f returned.
func fatalOf(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.fatal
}

func TestGlob(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.dq", "b.dq", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if msg := fatalOf(t, func(tb testing.TB) { got = Glob(tb, filepath.Join(dir, "*.dq")) }); msg != "" {
		t.Fatalf("two matches: %s", msg)
	}
	if want := []string{filepath.Join(dir, "a.dq"), filepath.Join(dir, "b.dq")}; !slices.Equal(got, want) {
		t.Errorf("Glob = %q, want %q", got, want)
	}
	none := filepath.Join(dir, "*.json")
	if msg := fatalOf(t, func(tb testing.TB) { Glob(tb, none) }); msg != "no file matches "+none {
		t.Errorf("no match: fatal %q", msg)
	}
	if msg := fatalOf(t, func(tb testing.TB) { Glob(tb, "[") }); msg != "glob [: syntax error in pattern" {
		t.Errorf("a malformed pattern: fatal %q", msg)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	if msg := fatalOf(t, func(tb testing.TB) { ReadDir(tb, dir) }); msg != "directory "+dir+" is empty" {
		t.Errorf("an empty directory: fatal %q", msg)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []os.DirEntry
	if msg := fatalOf(t, func(tb testing.TB) { got = ReadDir(tb, dir) }); msg != "" || len(got) != 1 || got[0].Name() != "sub" {
		t.Errorf("one entry: %v, fatal %q", got, msg)
	}
	missing := filepath.Join(dir, "missing")
	if msg := fatalOf(t, func(tb testing.TB) { ReadDir(tb, missing) }); !strings.HasPrefix(msg, "read directory: open "+missing+": ") {
		t.Errorf("a missing directory: fatal %q", msg)
	}
}
