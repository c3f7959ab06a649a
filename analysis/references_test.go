// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckReferences: the mistakes a newcomer makes in naming probes —
// a misspelled outcome in the diagram, a QTA for a probe that does not
// exist — are reported with the closest defined name; a QTA on a
// definition of the diagram (a calculated ΔQ) is fine.
func TestCheckReferences(t *testing.T) {
	defined := []string{"checkout", "inventory", "payment"}
	cfg := Config{
		Diagram: "checkout = inventory -> paymnet;\n",
		Probes: map[string]ProbeConfig{
			"chekout":  {},
			"checkout": {},
		},
	}
	err := cfg.CheckReferences(defined)
	want := "diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n" +
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckReferences = %v\nwant %s", err, want)
	}
	good := Config{
		Diagram: "system = inventory -> payment;\n",
		Probes:  map[string]ProbeConfig{"system": {}, "checkout": {}},
	}
	if err := good.CheckReferences(defined); err != nil {
		t.Errorf("a QTA on the diagram's definition and on a defined probe: %v", err)
	}
	// In a diagram_file, the outcome is named under that option, with its
	// position in the file, as its syntax errors are.
	file := filepath.Join(t.TempDir(), "shop.dq")
	if err := os.WriteFile(file, []byte("checkout =\n  inventory -> paymnet;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile := Config{DiagramFile: file}
	want = "diagram_file: " + file + ":2:16: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)"
	if err := fromFile.CheckReferences(defined); err == nil || err.Error() != want {
		t.Errorf("diagram_file: %v\nwant %s", err, want)
	}
	far := Config{Diagram: "x = zzz;\n"}
	if err := far.CheckReferences(defined); err == nil || err.Error() != "diagram: outcome zzz is not a probe any deltaq processor or the connector counts" {
		t.Errorf("nothing close: %v", err)
	}
}

func TestIsTypo(t *testing.T) {
	for _, c := range []struct {
		name, closest string
		want          bool
	}{
		{"paymnet", "payment", true},     // a transposition
		{"chekout", "checkout", true},    // a letter missing
		{"inventroy", "inventory", true}, // long: two edits allowed
		{"b", "a", false},                // short names one edit apart are two probes
		{"w_1", "w_2", false},            // likewise
		{"worker_3", "worker_1", false},  // numbered probes of one kind
		{"wroker_1", "worker_1", true},   // a slip
		{"shipping", "shopping", true},   // alike enough to ask
		{"checkout", "cart", false},      // far
	} {
		u := UnknownProbe{Name: c.name, Closest: []string{c.closest}}
		if got := u.IsTypo(); got != c.want {
			t.Errorf("%s ~ %s: IsTypo = %v, want %v", c.name, c.closest, got, c.want)
		}
	}
}
