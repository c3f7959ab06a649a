// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// listingCalls are the functions that list files, by package: a test that
// loops over what they return passes on nothing when they find nothing.
var listingCalls = map[string][]string{
	"path/filepath": {"Glob"},
	"os":            {"ReadDir"},
	"io/fs":         {"Glob", "ReadDir"},
}

// emptyListings are the test functions ("path:function") allowed to list
// files without checking that they found some, each with why: its result,
// empty or not, is compared with what is expected there.
var emptyListings = map[string]string{
	"internal/core/snapshot_files_test.go:dirNames": "lists a directory for a comparison with the names expected in it, none among them",
}

// TestListingsChecked: every test of the repository that globs or lists a
// directory fails when it finds nothing — it takes its files from
// internal/globtest, or its function compares the length of the result (a
// len(x) comparison, testify's Len, NotEmpty or Empty) — so that no test
// passes on no input. The functions of emptyListings excepted.
func TestListingsChecked(t *testing.T) {
	files, fset := parseGoFiles(t, func(name string) bool { return strings.HasSuffix(name, "_test.go") })
	seen := map[string]bool{}
	for _, f := range files {
		for _, l := range uncheckedListings(f.file, fset) {
			key := f.rel + ":" + l.function
			if _, ok := emptyListings[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s:%d: %s in %s: nothing checks that it found something, so the test would pass on nothing: "+
				"take the files from globtest.Glob or globtest.ReadDir (internal/globtest), or fail when the result's length is 0",
				f.rel, l.line, l.call, l.function)
		}
	}
	for key := range emptyListings {
		if !seen[key] {
			t.Errorf("emptyListings lists %s, which no longer lists files unchecked: remove it", key)
		}
	}
}

// listing is a call that lists files, in a function that does not check
// that it found some.
type listing struct {
	function string // the top-level function that makes it
	call     string // "filepath.Glob"
	line     int
}

// uncheckedListings returns the calls of listingCalls in f whose result is
// not held in a variable whose length the calling top-level function
// checks (listingChecked).
func uncheckedListings(f *ast.File, fset *token.FileSet) []listing {
	names := map[string][]string{} // the import name of a listing package → its functions
	for path, funcs := range listingCalls {
		if name, ok := importName(f, path); ok {
			names[name] = funcs
		}
	}
	var out []listing
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		results := resultVars(fd.Body)
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || !slices.Contains(names[x.Name], sel.Sel.Name) {
				return true
			}
			if v := results[call]; v == "" || v == "_" || !listingChecked(fd.Body, v) {
				out = append(out, listing{function: fd.Name.Name, call: sel.X.(*ast.Ident).Name + "." + sel.Sel.Name, line: fset.Position(call.Pos()).Line})
			}
			return true
		})
	}
	return out
}

// resultVars returns, for each call of body that is the only value of an
// assignment or a var declaration, the name of the first variable it
// assigns.
func resultVars(body *ast.BlockStmt) map[*ast.CallExpr]string {
	vars := map[*ast.CallExpr]string{}
	note := func(lhs []ast.Expr, rhs []ast.Expr) {
		if len(rhs) != 1 || len(lhs) == 0 {
			return
		}
		call, ok := rhs[0].(*ast.CallExpr)
		id, isIdent := lhs[0].(*ast.Ident)
		if ok && isIdent {
			vars[call] = id.Name
		}
	}
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			note(n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			note(lhs, n.Values)
		}
		return true
	})
	return vars
}

// listingChecked reports whether body checks the length of the variable v:
// compares len(v) with something, or passes v to a function named Len,
// NotEmpty or Empty (testify's assertions).
func listingChecked(body *ast.BlockStmt, v string) bool {
	isV := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		return ok && id.Name == v
	}
	isLenV := func(e ast.Expr) bool {
		call, ok := e.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 || !isV(call.Args[0]) {
			return false
		}
		fn, ok := call.Fun.(*ast.Ident)
		return ok && fn.Name == "len"
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			switch n.Op {
			case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
				found = found || isLenV(n.X) || isLenV(n.Y)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Len", "NotEmpty", "Empty"}, sel.Sel.Name) {
				found = found || slices.ContainsFunc(n.Args, isV)
			}
		}
		return !found
	})
	return found
}

// TestListingsFound: uncheckedListings flags, in a source written for the
// purpose, a glob whose error alone is checked or which is ignored, a
// listing not held in a variable, one under another import name and one
// whose check is of another variable; and passes over those checked by a
// len comparison or testify, declared with var, and calls of other
// packages' Glob.
func TestListingsFound(t *testing.T) {
	const src = `package p

import (
	"os"
	"path/filepath"
	"testing"
	iofs "io/fs"

	"github.com/stretchr/testify/require"
)

func TestIgnored(t *testing.T) {
	files, _ := filepath.Glob("*.dq")
	for _, f := range files {
		check(f)
	}
}

func TestErrorOnly(t *testing.T) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	use(entries)
}

func TestNotHeld(t *testing.T) { use(must(filepath.Glob("*"))) }

func TestRenamed(t *testing.T) { m, _ := iofs.Glob(fsys, "*"); use(m) }

func TestOtherChecked(t *testing.T) {
	files, _ := filepath.Glob("*")
	other := files[:0]
	if len(other) == 0 {
		t.Fatal("none")
	}
}

func TestChecked(t *testing.T) {
	files, err := filepath.Glob("*.dq")
	if err != nil || len(files) == 0 {
		t.Fatal(err)
	}
	use(files)
}

func TestAtLeast(t *testing.T) {
	files, _ := filepath.Glob("*.yml")
	if 3 > len(files) {
		t.Fatal(files)
	}
}

func TestTestify(t *testing.T) {
	files, err := filepath.Glob("*.json")
	require.NoError(t, err)
	require.Len(t, files, 1)
}

func TestVar(t *testing.T) {
	var entries, err = os.ReadDir("d")
	require.NotEmpty(t, entries, err)
}

func TestHelper(t *testing.T) { use(globtest.Glob(t, "*")) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range uncheckedListings(f, fset) {
		got = append(got, l.function+" "+l.call)
	}
	want := []string{"TestIgnored filepath.Glob", "TestErrorOnly os.ReadDir", "TestNotHeld filepath.Glob", "TestRenamed iofs.Glob", "TestOtherChecked filepath.Glob"}
	if !slices.Equal(got, want) {
		t.Errorf("flagged %q, want %q", got, want)
	}
}
