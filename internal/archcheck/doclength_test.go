// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"go/parser"
	"go/token"
	"testing"
)

// longPackageDocs are the packages whose documentation is longer than
// MaxPackageDocLines still to be shortened, the rest moved into
// docs/design.md; one that got short must leave the list.
var longPackageDocs = map[string]bool{
	"deltaq/internal/fft": true, // the derivation of the real-input FFT, beside its code
}

// TestPackageDocLength holds every package's documentation (the comments
// before its package clauses, doc.go's or another file's) to a screen,
// MaxPackageDocLines lines: what the package is, its main types, and a
// pointer to docs/design.md for the rest.
func TestPackageDocLength(t *testing.T) {
	files, fset := parseModule(t)
	lines := packageDocLines(files, fset)
	for pkg, n := range lines {
		if n > MaxPackageDocLines && !longPackageDocs[pkg] {
			t.Errorf("package %s's documentation is %d lines, more than %d: keep what the package is and its main types, "+
				"and move the rest into docs/design.md", pkg, n, MaxPackageDocLines)
		}
	}
	for pkg := range longPackageDocs {
		if lines[pkg] <= MaxPackageDocLines {
			t.Errorf("longPackageDocs lists %s, whose documentation is gone or at most %d lines now: remove it", pkg, MaxPackageDocLines)
		}
	}
}

// packageDocLines returns, by package, the lines of the comments attached
// to its files' package clauses, which go doc shows one after the other.
func packageDocLines(files []goFile, fset *token.FileSet) map[string]int {
	lines := map[string]int{}
	for _, f := range files {
		if doc := f.file.Doc; doc != nil {
			lines[f.pkg] += fset.Position(doc.End()).Line - fset.Position(doc.Pos()).Line + 1
		}
	}
	return lines
}

// TestPackageDocLinesCounted: packageDocLines counts the package comments
// of every file of a package, from their first line to their last, and
// neither the licence header nor a comment set apart by a blank line.
func TestPackageDocLinesCounted(t *testing.T) {
	fset := token.NewFileSet()
	var files []goFile
	for name, src := range map[string]string{
		"a/doc.go": "// Copyright\n\n// Package a is\n// three\n//\n// lines and one.\npackage a\n",
		"a/b.go":   "// More of a's documentation.\npackage a\n",
		"a/c.go":   "// Not a's: a blank line sets it apart.\n\npackage a\n",
		"b/b.go":   "/*\nPackage b is a block\ncomment.\n*/\npackage b\n",
	} {
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, goFile{rel: name, pkg: name[:1], file: f})
	}
	got := packageDocLines(files, fset)
	if got["a"] != 5 || got["b"] != 4 || len(got) != 2 {
		t.Errorf("lines %v, want a: 5, b: 4", got)
	}
}
