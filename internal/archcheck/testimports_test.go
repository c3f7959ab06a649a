// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// testImports are the imports of test-only packages by non-test files of
// the main module that are still to be removed ("file import"), each with
// why it is there. The list is empty and is to stay so.
var testImports = map[string]string{}

// TestNoTestPackagesInProduction: no non-test file of the main module
// imports a test-only package (testOnly), but those of test-support
// packages (whose names end in "test", as internal/otlptest) and the
// imports listed in testImports: a test helper in the product is code
// nobody meant to ship, built on APIs the collector keeps for tests.
func TestNoTestPackagesInProduction(t *testing.T) {
	files, _ := parseModule(t)
	dir := root(t)
	seen := map[string]bool{}
	for _, f := range files {
		if !inMainModule(dir, f.pkg) {
			continue
		}
		for _, imp := range testPackagesImported(f.file, f.pkg) {
			key := f.rel + " " + imp
			if _, ok := testImports[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s imports %s, a test-only package: the product must not build a test helper in; "+
				"use what the helper wraps, or move the code into a _test.go file or a test-support package", f.rel, imp)
		}
	}
	for key := range testImports {
		if !seen[key] {
			t.Errorf("testImports lists %q, which is no longer imported: remove it", key)
		}
	}
}

// testOnly reports whether an import path is a test-only package: its last
// element ends in "test" and it is the standard library's (httptest,
// iotest, fstest, …), OpenTelemetry's (componenttest, processortest,
// consumertest, metricdatatest, …) or the module's own (internal/otlptest,
// internal/e2etest, coretest, metadatatest, …).
func testOnly(imp string) bool {
	if !strings.HasSuffix(path.Base(imp), "test") {
		return false
	}
	std := !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
	return std || strings.HasPrefix(imp, "go.opentelemetry.io/") || strings.HasPrefix(imp, module+"/")
}

// testPackagesImported returns the test-only packages f imports, none for
// a file of a test-support package pkg (module-relative), which may build
// on other test helpers.
func testPackagesImported(f *ast.File, pkg string) []string {
	if strings.HasSuffix(path.Base(pkg), "test") {
		return nil
	}
	var out []string
	for _, imp := range f.Imports {
		if p := strings.Trim(imp.Path.Value, `"`); testOnly(p) {
			out = append(out, p)
		}
	}
	return out
}

// inMainModule reports whether the package directory pkg (relative to the
// repository's root dir) is the main module's: no directory from pkg up
// to the root, the root excluded, holds a go.mod of a module of its own.
func inMainModule(dir, pkg string) bool {
	for p := pkg; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p), "go.mod")); err == nil {
			return false
		}
	}
	return true
}

// TestTestPackagesFound: testPackagesImported flags, in a source written
// for the purpose, the test helpers of the standard library, the
// collector, OpenTelemetry Go and the module, and passes over packages
// whose names merely end in "test" elsewhere, testdata packages, the
// testing package, and any import of a test-support package.
func TestTestPackagesFound(t *testing.T) {
	const src = `package p

import (
	"net/http/httptest"
	"testing"

	"github.com/example/latest"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/testdata"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/core"
)
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"net/http/httptest", "go.opentelemetry.io/collector/component/componenttest",
		"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest", module + "/internal/otlptest"}
	if got := testPackagesImported(f, "cmd/deltaq"); !slices.Equal(got, want) {
		t.Errorf("in cmd/deltaq: flagged %q, want %q", got, want)
	}
	if got := testPackagesImported(f, "internal/core/coretest"); got != nil {
		t.Errorf("in a test-support package: flagged %q, want none", got)
	}
}
