// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"go/parser"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestDocListsEveryCommand: the package documentation in main.go lists
// exactly the registered commands, so that it cannot drift from them.
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
	registered := slices.Sorted(maps.Keys(commands))
	if !slices.Equal(listed, registered) {
		t.Errorf("main.go's documentation lists the commands %q; registered: %q. Keep the list (sorted) equal to them", listed, registered)
	}
}
