// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"go/ast"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the main module's path.
const module = "github.com/deltaq-otel/deltaq"

// modules are the directories of the modules the table covers: the main
// module and those nested in it that applications import (a module of its
// own so that it requires the OpenTelemetry Go SDK only). internal/tools and
// bench are tooling, not the product's packages.
var modules = []string{".", "sdk/deltaqstart"}

// root returns the repository's root directory: the main module's.
func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// pkg is a package of the module as go list reports it.
type pkg struct {
	rel     string // module-relative path
	imports []string
}

// listPackages returns the packages of the module in dir and their non-test
// imports.
func listPackages(t *testing.T, dir string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", "./...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v", dir, err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, imports, _ := strings.Cut(line, "|")
		pkgs = append(pkgs, pkg{rel: strings.TrimPrefix(strings.TrimPrefix(path, module), "/"), imports: strings.Fields(imports)})
	}
	return pkgs
}

// generated reports whether a package is mdatagen's (internal/metadata and
// its test package): its imports are the generator's, not the design's.
func generated(rel string) bool {
	return strings.HasSuffix(rel, "/internal/metadata") || strings.HasSuffix(rel, "/internal/metadatatest")
}

// TestDesignPackageTable compares docs/design.md's package table with the
// imports of every package of the module, both ways: a package without a
// row, an import the table does not allow, a row naming no package and an
// allowance nothing uses all fail, naming the package, the edge and the
// line of the table.
func TestDesignPackageTable(t *testing.T) {
	dir := root(t)
	f, err := os.Open(filepath.Join(dir, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := ParseTable(f)
	if err != nil {
		t.Fatalf("docs/design.md: %v", err)
	}
	var pkgs []pkg
	for _, m := range modules {
		pkgs = append(pkgs, listPackages(t, filepath.Join(dir, m))...)
	}
	used := make([]map[string]bool, len(rows)) // by row: the allowances used
	covers := make([]bool, len(rows))
	for i := range used {
		used[i] = map[string]bool{}
	}
	for _, p := range pkgs {
		if generated(p.rel) {
			continue
		}
		r := RowOf(rows, p.rel)
		if r < 0 {
			t.Errorf("package %s has no row in docs/design.md's package table (nor has any parent of it): add one", p.rel)
			continue
		}
		covers[r] = true
		for _, imp := range p.imports {
			if a, ok := allowance(rows, r, imp); !ok {
				t.Errorf("package %s imports %s, which docs/design.md line %d (row %s) does not allow: add %s to the row's \"may import\", or remove the import",
					p.rel, imp, rows[r].Line, rowName(rows[r]), a)
			} else if a != "" {
				used[r][a] = true
			}
		}
	}
	for i, r := range rows {
		if !covers[i] {
			t.Errorf("docs/design.md line %d: row %s names no package of the module", r.Line, rowName(r))
		}
		for _, a := range slices.Concat(quote(r.Internal), r.External) {
			if !used[i][a] {
				t.Errorf("docs/design.md line %d: row %s may import %s, but none of its packages does: remove it from the row",
					r.Line, rowName(r), a)
			}
		}
	}
}

// allowance returns the entry of row r's "may import" that allows the
// import (empty when nothing needs allowing: the standard library, the
// row's own packages, a command's "any"), or what the row would need.
func allowance(rows []Row, r int, imp string) (string, bool) {
	if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return "", true // the standard library
	}
	if imp == module || strings.HasPrefix(imp, module+"/") {
		rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
		q := RowOf(rows, rel)
		if q == r || generated(rel) || rows[r].Any && q >= 0 {
			return "", true
		}
		for _, name := range rows[r].Internal {
			if RowOf(rows, name) == q && q >= 0 {
				return "`" + name + "`", true
			}
		}
		return "`" + rel + "`", false
	}
	for _, name := range rows[r].External {
		for _, prefix := range Outside[name] {
			if strings.HasPrefix(imp, prefix) {
				return name, true
			}
		}
	}
	return "the short name of " + imp + " (defined in archcheck.Outside)", false
}

func quote(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return q
}

func rowName(r Row) string { return strings.Join(quote(r.Packages), ", ") }

// TestParseTable checks the reading of a table on a known document.
func TestParseTable(t *testing.T) {
	doc := "# D\n\n## Packages and their dependencies\n\ntext\n\n| package | role | may import |\n|---|---|---|\n" +
		"| `a` | the a | gonum |\n| `b`, `c/d` | the b | `a`, collector, any |\n| `e` | e | — |\n\n## Next\n\n| `x` | y | z |\n"
	rows, err := ParseTable(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(rows), rows)
	}
	if b := rows[1]; !slices.Equal(b.Packages, []string{"b", "c/d"}) || !slices.Equal(b.Internal, []string{"a"}) ||
		!slices.Equal(b.External, []string{"collector"}) || !b.Any || b.Line != 10 {
		t.Errorf("row 2: %+v", b)
	}
	if RowOf(rows, "c/d/e") != 1 || RowOf(rows, "c") != -1 || RowOf(rows, "ab") != -1 {
		t.Error("RowOf: a row covers its packages and their subpackages only")
	}
	if _, err := ParseTable(strings.NewReader(strings.Replace(doc, "gonum", "gnuplot", 1))); err == nil ||
		!strings.Contains(err.Error(), `"gnuplot"`) {
		t.Errorf("an unknown short name: %v", err)
	}
}

// longFunctions are the functions longer than MaxFunctionLines still to be
// split ("path:function"); one that got short must leave the list.
var longFunctions = map[string]bool{}

// TestFunctionLength holds every function of the module's non-test,
// non-generated Go code to MaxFunctionLines lines, from func to its closing
// brace.
func TestFunctionLength(t *testing.T) {
	files, fset := parseModule(t)
	seen := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.file.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			key := f.rel + ":" + fd.Name.Name
			if longFunctions[key] {
				seen[key] = n > MaxFunctionLines
				continue
			}
			if n > MaxFunctionLines {
				t.Errorf("%s:%d: %s is %d lines, more than %d: split it", f.rel, fset.Position(fd.Pos()).Line, fd.Name.Name, n, MaxFunctionLines)
			}
		}
	}
	for key := range longFunctions {
		if !seen[key] {
			t.Errorf("%s is gone or at most %d lines now: remove it from longFunctions", key, MaxFunctionLines)
		}
	}
}
