// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package outcome

import (
	"slices"
	"testing"
)

// TestRegistry: the first registered owner of a probe name wins a lookup;
// unregistering an owner hands the name to the next; re-registering an
// owner replaces its probes.
func TestRegistry(t *testing.T) {
	a, b := new(int), new(int)
	t.Cleanup(func() { Unregister(a); Unregister(b) })
	Register(a, map[string]Layout{"checkout": {DMaxNs: 2e9, Bins: 200}, "payment": {DMaxNs: 1e9, Bins: 125}})
	Register(b, map[string]Layout{"checkout": {DMaxNs: 1e9, Bins: 10}, "search": {DMaxNs: 5e8, Bins: 50}})

	if l, ok := LookupLayout("checkout"); !ok || l != (Layout{DMaxNs: 2e9, Bins: 200}) {
		t.Errorf("checkout: %v %v, want the first owner's layout", l, ok)
	}
	if _, ok := LookupLayout("inventory"); ok {
		t.Error("inventory: found, but nobody registered it")
	}
	if got, want := RegisteredProbes(), []string{"checkout", "payment", "search"}; !slices.Equal(got, want) {
		t.Errorf("RegisteredProbes() = %v, want %v", got, want)
	}
	Unregister(a)
	if l, ok := LookupLayout("checkout"); !ok || l != (Layout{DMaxNs: 1e9, Bins: 10}) {
		t.Errorf("checkout after a left: %v %v, want b's layout", l, ok)
	}
	Register(b, map[string]Layout{"search": {DMaxNs: 5e8, Bins: 50}})
	if _, ok := LookupLayout("checkout"); ok {
		t.Error("checkout still found after its last owner re-registered without it")
	}
	if got, want := RegisteredProbes(), []string{"search"}; !slices.Equal(got, want) {
		t.Errorf("RegisteredProbes() = %v, want %v", got, want)
	}
}
