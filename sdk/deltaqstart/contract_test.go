// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqstart

import (
	"encoding/json"
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
// them (TestStartEventContract checks them against the shared contract).
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

// TestStartEventContract checks the package's strings against the shared
// contract, docs/contract/start-event.json, which internal/contract's
// tests check the collector's constants against: the module imports
// nothing of the collector's, and the two meet in that file.
func TestStartEventContract(t *testing.T) {
	b, err := os.ReadFile("../../docs/contract/start-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		EventName  string            `json:"event_name"`
		Attributes map[string]string `json:"attributes"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, got, want string }{
		{"startEventName", startEventName, c.EventName},
		{"attrProbe", attrProbe, c.Attributes["probe"]},
		{"attrSpanName", attrSpanName, c.Attributes["span_name"]},
		{"attrTraceState", attrTraceState, c.Attributes["tracestate"]},
	} {
		if p.want == "" || p.got != p.want {
			t.Errorf("%s = %q, the contract says %q", p.name, p.got, p.want)
		}
	}
}
