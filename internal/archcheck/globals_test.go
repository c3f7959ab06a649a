// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The one package variable that holds mutable state of the process (the
// deltaq components' shared state: docs/design.md, "State of the
// process"), its package, and the function through which it is reached.
const (
	statePkg      = "internal/collectorstate"
	stateVar      = "collector"
	stateAccessor = "Collector"
)

// mutableVars are the other package variables written after their
// declaration, each with why: none holds state a component depends on.
// A memo of a pure function returns what the function would.
var mutableVars = map[string]string{
	"deltaq.tMu":                  "guards tCache",
	"deltaq.tCache":               "memo of Student's t quantiles (studentT975), a pure function, bounded to 4096 entries",
	"deltaq/internal/fft.plansMu": "guards plans",
	"deltaq/internal/fft.plans":   "memo of the FFT plans by size (getPlan), at most 32",
}

// goFile is one parsed non-generated Go file of the repository.
type goFile struct {
	rel  string // module-relative path, slash-separated
	pkg  string // module-relative directory: the package
	file *ast.File
}

// parseModule parses the module's non-test, non-generated Go files (those
// TestFunctionLength and the checks of package state read), with object
// resolution, so that an identifier declared in its own function resolves
// there and a package variable of another file does not.
func parseModule(t *testing.T) ([]goFile, *token.FileSet) {
	t.Helper()
	return parseGoFiles(t, func(name string) bool { return !strings.HasSuffix(name, "_test.go") })
}

// parseGoFiles parses the non-generated Go files of the repository whose
// names keep accepts, and fails the test when there is none: a check that
// read nothing would pass on nothing.
func parseGoFiles(t *testing.T, keep func(name string) bool) ([]goFile, *token.FileSet) {
	t.Helper()
	dir := root(t)
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".go") || !keep(d.Name()) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil || ast.IsGenerated(f) || bytes.Contains(src[:min(len(src), 200)], []byte("// Code generated")) {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		files = append(files, goFile{rel: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), file: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no Go file found under %s", dir)
	}
	return files, fset
}

// skippedDir reports whether a directory holds no product code: hidden
// directories, test data, the generated collector, binaries, node modules.
func skippedDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "testdata" || name == "build" || name == "bin" || name == "node_modules"
}

// packageVars returns the names of the package-level variables of each
// package, and where each is declared.
func packageVars(files []goFile, fset *token.FileSet) map[string]map[string]token.Position {
	vars := map[string]map[string]token.Position{}
	for _, f := range files {
		for _, decl := range f.file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.Name == "_" {
						continue
					}
					if vars[f.pkg] == nil {
						vars[f.pkg] = map[string]token.Position{}
					}
					vars[f.pkg][n.Name] = fset.Position(n.Pos())
				}
			}
		}
	}
	return vars
}

// TestNoHiddenGlobals: no package variable of the module's code is written
// after its declaration (assigned, incremented, an element or field set,
// deleted from or cleared) outside init functions, and none holds a lock,
// except the process's shared state and the entries of mutableVars. So
// what a component depends on is given to it, and a test or a second
// collector in one process makes its own.
func TestNoHiddenGlobals(t *testing.T) {
	files, fset := parseModule(t)
	vars := packageVars(files, fset)
	written := map[string]string{} // "pkg.name" → where first written
	for _, f := range files {
		for _, w := range writesOfPackageVars(f, vars[f.pkg], fset) {
			if _, ok := written[w.key]; !ok {
				written[w.key] = w.at
			}
		}
		for _, l := range lockedVars(f, fset) {
			written[l.key] = l.at
		}
	}
	for key, at := range written {
		if key == statePkg+"."+stateVar {
			continue
		}
		if _, ok := mutableVars[key]; ok {
			continue
		}
		t.Errorf("%s: package variable %s holds mutable state: give it to what uses it (a field, a parameter), "+
			"or, for state the components of one collector share, put it in %s.State", at, key, statePkg)
	}
	for key := range mutableVars {
		if _, ok := written[key]; !ok {
			t.Errorf("mutableVars lists %s, which is no longer written: remove it", key)
		}
	}
	if _, ok := vars[statePkg][stateVar]; !ok {
		t.Errorf("%s has no package variable %s: update this check and docs/design.md", statePkg, stateVar)
	}
}

// write is a package variable written, or holding a lock, somewhere.
type write struct{ key, at string }

// writesOfPackageVars returns the writes, in f's functions other than init,
// of the package variables names of f's package.
func writesOfPackageVars(f goFile, names map[string]token.Position, fset *token.FileSet) []write {
	var out []write
	top := topSpecs(f.file)
	note := func(e ast.Expr) {
		if id := rootIdent(e); id != nil && isPackageVar(id, names, top) {
			out = append(out, write{key: f.pkg + "." + id.Name, at: fset.Position(id.Pos()).String()})
		}
	}
	for _, decl := range f.file.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil || (fd.Recv == nil && fd.Name.Name == "init") {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					for _, l := range n.Lhs {
						note(l)
					}
				}
			case *ast.IncDecStmt:
				note(n.X)
			case *ast.RangeStmt:
				if n.Tok == token.ASSIGN {
					note(n.Key)
					note(n.Value)
				}
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && (fn.Name == "delete" || fn.Name == "clear") && len(n.Args) > 0 {
					note(n.Args[0])
				}
			}
			return true
		})
	}
	return out
}

// rootIdent returns the variable an assignable expression writes into:
// x for x, x[i], x.f, *x and (x); nil otherwise.
func rootIdent(e ast.Expr) *ast.Ident {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x
		case *ast.IndexExpr:
			e = x.X
		case *ast.SelectorExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		default:
			return nil
		}
	}
}

// isPackageVar reports whether id names one of the package variables
// names: it resolves to nothing in its file (declared in another file of
// the package) or to one of the file's package-level specs top. A local
// variable of the same name resolves to its own declaration.
func isPackageVar(id *ast.Ident, names map[string]token.Position, top map[*ast.ValueSpec]bool) bool {
	if _, ok := names[id.Name]; !ok {
		return false
	}
	if id.Obj == nil {
		return true
	}
	vs, ok := id.Obj.Decl.(*ast.ValueSpec)
	return ok && top[vs]
}

// topSpecs returns the package-level variable specs of f.
func topSpecs(f *ast.File) map[*ast.ValueSpec]bool {
	top := map[*ast.ValueSpec]bool{}
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
			for _, spec := range gd.Specs {
				top[spec.(*ast.ValueSpec)] = true
			}
		}
	}
	return top
}

// lockedVars returns f's package variables whose type or value names the
// sync package (a mutex, a Once, an atomic): state that is locked is state
// that changes; and those that hold a new value by pointer (new(T), &T{})
// or a channel: state changed through methods or sends.
func lockedVars(f goFile, fset *token.FileSet) []write {
	var out []write
	for _, decl := range f.file.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.VAR {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if !mentionsSync(vs) && !slices.ContainsFunc(vs.Values, heldByPointer) {
				continue
			}
			for _, n := range vs.Names {
				out = append(out, write{key: f.pkg + "." + n.Name, at: fset.Position(n.Pos()).String()})
			}
		}
	}
	return out
}

// mentionsSync reports whether a value spec's type or values use the sync
// or sync/atomic package.
func mentionsSync(vs *ast.ValueSpec) bool {
	found := false
	check := func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "sync" || x.Name == "atomic") {
				found = true
			}
		}
		return !found
	}
	if vs.Type != nil {
		ast.Inspect(vs.Type, check)
	}
	for _, v := range vs.Values {
		ast.Inspect(v, check)
	}
	return found
}

// heldByPointer reports whether a package variable's value is a new value
// held by pointer, new(T) or &T{...}, or a new channel, make(chan T).
func heldByPointer(v ast.Expr) bool {
	switch v := v.(type) {
	case *ast.UnaryExpr:
		_, lit := v.X.(*ast.CompositeLit)
		return v.Op == token.AND && lit
	case *ast.CallExpr:
		fn, ok := v.Fun.(*ast.Ident)
		if !ok || len(v.Args) == 0 {
			return false
		}
		_, isChan := v.Args[0].(*ast.ChanType)
		return fn.Name == "new" || (fn.Name == "make" && isChan)
	}
	return false
}

// TestCollectorStateReachedByFactories: the collector's shared state is
// reached only by the NewFactory functions the collector's builder calls
// and by main packages, which stand in for a collector; everything below
// them is given it.
func TestCollectorStateReachedByFactories(t *testing.T) {
	files, fset := parseModule(t)
	var callers []string
	for _, f := range files {
		name, ok := importName(f.file, module+"/"+statePkg)
		if !ok {
			continue
		}
		for _, decl := range f.file.Decls {
			fd, isFunc := decl.(*ast.FuncDecl)
			ast.Inspect(decl, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != stateAccessor {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != name {
					return true
				}
				allowed := f.file.Name.Name == "main" || (isFunc && fd.Recv == nil && fd.Name.Name == "NewFactory")
				where := fmt.Sprintf("%s (%s)", fset.Position(sel.Pos()), f.pkg)
				if !allowed {
					t.Errorf("%s: %s.%s outside a NewFactory function or package main: give the component the state instead",
						where, statePkg, stateAccessor)
				}
				callers = append(callers, f.pkg)
				return true
			})
		}
	}
	slices.Sort(callers)
	callers = slices.Compact(callers)
	for _, want := range []string{"processor/deltaqprocessor", "connector/deltaqconnector", "exporter/deltaqexporter"} {
		if !slices.Contains(callers, want) {
			t.Errorf("%s does not reach the process's state from its NewFactory: its components would not meet the others", want)
		}
	}
}

// importName returns the name under which f imports path.
func importName(f *ast.File, path string) (string, bool) {
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name, true
		}
		return path[strings.LastIndex(path, "/")+1:], true
	}
	return "", false
}

// TestHiddenGlobalsFound: the detectors of TestNoHiddenGlobals find every
// kind of write and lock in a source written for the purpose, and pass over
// local variables of the same names, init functions and read-only tables.
func TestHiddenGlobalsFound(t *testing.T) {
	const src = `package p

import "sync"

var (
	assigned, incremented, indexed, field, deleted, cleared, ranged int
	table   = map[string]int{"a": 1}
	locked  sync.Mutex
	guarded = struct{ mu sync.Mutex }{}
	onlyInit map[string]int
	readOnly = []int{1, 2}
	registry = new(struct{ n int })
	literal  = &struct{ n int }{}
	signals  = make(chan int, 1)
	sized    = make([]int, 4)
)

func init() { onlyInit = map[string]int{}; onlyInit["x"] = 1 }

func writes(m map[string]int) {
	assigned = 1
	incremented++
	table["b"] = 2
	var s struct{ f int }
	s.f = 1
	delete(table, "a")
	clear(table)
	for ranged = range 3 {
	}
	_ = readOnly[0]
}

func shadows() {
	assigned := 2
	assigned++
	var indexed []int
	indexed[0] = 1
	_ = assigned
}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	f := goFile{rel: "p/p.go", pkg: "p", file: file}
	vars := packageVars([]goFile{f}, fset)
	var got []string
	for _, w := range append(writesOfPackageVars(f, vars["p"], fset), lockedVars(f, fset)...) {
		got = append(got, w.key)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := []string{"p.assigned", "p.guarded", "p.incremented", "p.literal", "p.locked", "p.ranged", "p.registry", "p.signals", "p.table"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q, want %q", got, want)
	}
}
