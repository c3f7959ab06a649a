// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// TestSDKUsesTheContract: sdk/deltaqstart, a module of its own that
// imports nothing of the collector's, writes the start event's strings
// from constants of its own; they must be this package's.
func TestSDKUsesTheContract(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../sdk/deltaqstart/deltaqstart.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						got[name.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	for name, want := range map[string]string{"startEventName": StartEventName, "attrProbe": AttrProbe, "attrSpanName": AttrSpanName, "attrTraceState": AttrTraceState} {
		if got[name] != want {
			t.Errorf("sdk/deltaqstart: %s = %q, want internal/contract's %q", name, got[name], want)
		}
	}
}
