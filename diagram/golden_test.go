// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package diagram

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltaq-otel/deltaq/internal/globtest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the formatter and DOT tests")

// checkGolden compares got with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// forEachDiagram runs check, as a subtest named after the file, on every
// file matching pattern (there must be one at least) with its name without
// .dq, its text and the diagram it parses to; a file that does not parse
// fails its subtest.
func forEachDiagram(t *testing.T, pattern string, check func(t *testing.T, file, name string, src []byte, d *Diagram)) {
	t.Helper()
	for _, file := range globtest.Glob(t, pattern) {
		name := strings.TrimSuffix(filepath.Base(file), ".dq")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Parse(name+".dq", src)
			if err != nil {
				t.Fatal(err)
			}
			check(t, file, name, src, d)
		})
	}
}

// dotOf returns the DOT drawing of d.
func dotOf(t *testing.T, d *Diagram) []byte {
	t.Helper()
	var dot bytes.Buffer
	if err := WriteDOT(&dot, d); err != nil {
		t.Fatal(err)
	}
	return dot.Bytes()
}

// TestGolden formats and draws every testdata/golden/*.dq and compares with
// NAME.fmt.golden and NAME.dot.golden. The formatted text must parse to the
// same diagram and format to itself.
func TestGolden(t *testing.T) {
	forEachDiagram(t, "testdata/golden/*.dq", func(t *testing.T, file, name string, _ []byte, d *Diagram) {
		out := Format(d)
		checkGolden(t, strings.TrimSuffix(file, ".dq")+".fmt.golden", out)
		checkGolden(t, strings.TrimSuffix(file, ".dq")+".dot.golden", dotOf(t, d))

		d2, err := Parse(name+".dq", out)
		if err != nil {
			t.Fatalf("formatted text does not parse: %v", err)
		}
		if !equalDiagrams(d, d2) {
			t.Error("formatted text parses to a different diagram")
		}
		if again := Format(d2); !bytes.Equal(again, out) {
			t.Errorf("Format is not idempotent:\n%s\nthen\n%s", out, again)
		}
	})
}

// TestExamples checks the thesis examples shipped in the repository's
// testdata: they are valid, already in canonical form, and draw as their
// golden DOT.
func TestExamples(t *testing.T) {
	forEachDiagram(t, "../testdata/*.dq", func(t *testing.T, file, name string, src []byte, d *Diagram) {
		if out := Format(d); !bytes.Equal(out, src) {
			t.Errorf("%s is not in canonical form; deltaq fmt gives:\n%s", file, out)
		}
		checkGolden(t, filepath.Join("testdata", "golden", "example_"+name+".dot.golden"), dotOf(t, d))
	})
}

// TestDOTRenders runs Graphviz on every golden DOT file when it is
// installed, so that the golden files are known to be valid DOT.
func TestDOTRenders(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz dot not installed")
	}
	for _, f := range globtest.Glob(t, "testdata/golden/*.dot.golden") {
		var stderr bytes.Buffer
		cmd := exec.Command(dot, "-Tsvg", f)
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil || stderr.Len() > 0 || !bytes.Contains(out, []byte("<svg")) {
			t.Errorf("dot %s: %v %s", f, err, stderr.String())
		}
	}
}
