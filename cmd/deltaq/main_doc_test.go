// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// TestDocListsEveryCommand: the package documentation in main.go lists
// exactly the commands of the command table, in its order (sorted), so
// that it cannot drift from them.
func TestDocListsEveryCommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	_, list, ok := strings.Cut(doc, "Commands (")
	if !ok {
		t.Fatal("main.go's package documentation has no \"Commands (\" list")
	}
	list, _, _ = strings.Cut(list[strings.Index(list, "\n\n")+2:], "\n\n")
	var listed []string
	for _, line := range strings.Split(list, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 {
			listed = append(listed, fields[0])
		}
	}
	var table []string
	for _, c := range commands() {
		table = append(table, c.name)
	}
	if !slices.Equal(listed, table) || !slices.IsSorted(table) {
		t.Errorf("main.go's documentation lists the commands %q; the command table: %q. Keep both sorted and equal", listed, table)
	}
}
