// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestLightImports checks that the package, which applications import,
// pulls in none of the collector's modules (pdata among them) or gRPC: its
// only dependencies outside the standard library are the OpenTelemetry Go
// API and SDK (go list -deps); its module requires nothing else.
func TestLightImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/auto/sdk", "github.com/go-logr/",
		"github.com/cespare/xxhash/", "github.com/google/uuid", "golang.org/x/sys/",
		"github.com/deltaq-otel/deltaq/sdk/deltaqstart"}
	for _, pkg := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(pkg, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(pkg, a)
		}
		if !ok || strings.HasPrefix(pkg, "go.opentelemetry.io/otel/exporters") {
			t.Errorf("deltaqstart depends on %s", pkg)
		}
	}
}

// TestReadmeContract checks that README.md, which tells other languages what
// a start event holds, names the contract's strings as this package defines
// them (internal/contract's tests check that they are the collector's).
func TestReadmeContract(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{startEventName, attrProbe, attrSpanName} {
		if !strings.Contains(string(b), "`"+s+"`") {
			t.Errorf("README.md does not name `%s`", s)
		}
	}
}
