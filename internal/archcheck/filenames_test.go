// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package archcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path"
	"slices"
	"strings"
	"testing"
)

// sharedFileNames are the file names that non-test, non-generated files of
// more than one package have, each with the one meaning it has in every
// package that has it: a reader who knows one such file knows what the
// others hold. A name that means something else in one package is renamed
// there, not added here.
var sharedFileNames = map[string]string{
	"autorange.go":       "`dmax: auto`: a probe's dMax chosen from the delays it observes",
	"clock.go":           "the clock a timer is given, so that a test moves time instead of sleeping",
	"collectorconfig.go": "a collector configuration read as the collector reads it, and the flags that name it",
	"config.go":          "a component's or package's configuration: its options, defaults and checks",
	"doc.go":             "the package documentation",
	"factory.go":         "a collector component's factory (NewFactory)",
	"fine.go":            "the analysis resolution (deltaq.Fine): its layout, and the ΔQs read at it",
	"handover.go":        "state carried across a configuration reload",
	"main.go":            "a program's entry point",
	"matched.go":         "the probes the connector matches in the spans themselves",
	"matcher.go":         "the matcher of spans to probes (spanmatch.Matcher) and what holds it",
	"printable.go":       "text from outside made safe to show on a terminal",
	"qoo.go":             "the Quality of Outcome score (draft-ietf-ippm-qoo)",
	"report.go":          "what a command reports of its run",
	"slo.go":             "QTAs as service-level objectives (deltaq slo)",
	"starts.go":          "start events (deltaq.span.start): made, or read into in-flight instances",
	"telemetry.go":       "a collector's self-telemetry: the instruments a component records, or a scrape of them",
}

// commandPkg is the command line whose commands each live in a file named
// after the command (analyze.go, check.go, …), which may share its name
// with the package that does the command's work.
const commandPkg = "cmd/deltaq"

// TestFileNamesMeanOneThing: a file name that non-test, non-generated files
// of more than one package have is in sharedFileNames, and every name there
// is still so shared; the command files of cmd/deltaq are set aside.
func TestFileNamesMeanOneThing(t *testing.T) {
	files, _ := parseModule(t)
	shared := sharedNames(files)
	for _, name := range slices.Sorted(maps.Keys(shared)) {
		if _, ok := sharedFileNames[name]; !ok {
			t.Errorf("%s is the name of a file in %s: rename the files whose meanings differ so that each name says what "+
				"its file holds, or, if the name means one thing in all of them, add it to sharedFileNames with that meaning",
				name, strings.Join(shared[name], ", "))
		}
	}
	for name := range sharedFileNames {
		if _, ok := shared[name]; !ok {
			t.Errorf("sharedFileNames lists %s, which no longer names files in more than one package: remove it", name)
		}
	}
}

// sharedNames returns the file names that files of more than one package
// have, each with its packages, sorted; a command file of commandPkg does
// not count.
func sharedNames(files []goFile) map[string][]string {
	pkgs := map[string][]string{}
	for _, f := range files {
		name := path.Base(f.rel)
		if commandFile(f) {
			continue
		}
		pkgs[name] = append(pkgs[name], f.pkg)
	}
	for name, ps := range pkgs {
		if len(ps) < 2 {
			delete(pkgs, name)
			continue
		}
		slices.Sort(ps)
	}
	return pkgs
}

// commandFile reports whether f is the file of one of commandPkg's
// commands: NAME.go, declaring the command's table entry, NAMECommand.
func commandFile(f goFile) bool {
	if f.pkg != commandPkg {
		return false
	}
	entry := strings.TrimSuffix(path.Base(f.rel), ".go") + "Command"
	for _, decl := range f.file.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == entry {
			return true
		}
	}
	return false
}

// TestSharedNamesFound: sharedNames finds, in files written for the
// purpose, the names of more than one package, a subpackage counting as a
// package of its own, and passes over a command file of cmd/deltaq but not
// another file of it.
func TestSharedNamesFound(t *testing.T) {
	fset := token.NewFileSet()
	var files []goFile
	for rel, src := range map[string]string{
		"a/doc.go":            "package a",
		"b/doc.go":            "package b",
		"a/x/doc.go":          "package x",
		"a/only.go":           "package a",
		"c/check.go":          "package c",
		"cmd/deltaq/check.go": "package main\n\nfunc checkCommand() command { return command{} }",
		"cmd/deltaq/util.go":  "package main\n\nfunc util() {}",
		"d/util.go":           "package d",
		"cmd/deltaq/scope.go": "package main\n\nfunc (c command) scopeCommand() {}",
		"e/scope.go":          "package e",
	} {
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, goFile{rel: rel, pkg: path.Dir(rel), file: f})
	}
	got := sharedNames(files)
	want := map[string][]string{
		"doc.go":   {"a", "a/x", "b"},
		"util.go":  {"cmd/deltaq", "d"},
		"scope.go": {"cmd/deltaq", "e"}, // a method of that name is no command's entry
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("shared names %v, want %v", got, want)
	}
}
