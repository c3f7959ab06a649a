// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"slices"
	"strconv"
	"testing"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// TestRegistry: the first registered owner of a probe name wins a lookup;
// unregistering an owner hands the name to the next; re-registering an
// owner replaces its probes.
func TestRegistry(t *testing.T) {
	r := new(Layouts)
	a, b := new(int), new(int)
	r.Register(a, map[string]deltaq.Layout{"checkout": {DMaxNs: 2e9, Bins: 200}, "payment": {DMaxNs: 1e9, Bins: 125}})
	r.Register(b, map[string]deltaq.Layout{"checkout": {DMaxNs: 1e9, Bins: 10}, "search": {DMaxNs: 5e8, Bins: 50}})

	if l, ok := r.LookupLayout("checkout"); !ok || l != (deltaq.Layout{DMaxNs: 2e9, Bins: 200}) {
		t.Errorf("checkout: %v %v, want the first owner's layout", l, ok)
	}
	if _, ok := r.LookupLayout("inventory"); ok {
		t.Error("inventory: found, but nobody registered it")
	}
	// b's checkout is not the layout readers take; a's is the first.
	if l, ok := r.Earlier(b, "checkout", deltaq.Layout{DMaxNs: 1e9, Bins: 10}); !ok || l != (deltaq.Layout{DMaxNs: 2e9, Bins: 200}) {
		t.Errorf("Earlier(b, checkout) = %v %v, want a's layout", l, ok)
	}
	if _, ok := r.Earlier(a, "checkout", deltaq.Layout{DMaxNs: 2e9, Bins: 200}); ok {
		t.Error("Earlier(a, checkout): a registered first")
	}
	if _, ok := r.Earlier(b, "checkout", deltaq.Layout{DMaxNs: 2e9, Bins: 200}); ok {
		t.Error("Earlier(b, checkout) with a's own layout: the same layout is no conflict")
	}
	if got, want := r.RegisteredProbes(), []string{"checkout", "payment", "search"}; !slices.Equal(got, want) {
		t.Errorf("r.RegisteredProbes() = %v, want %v", got, want)
	}
	r.Unregister(a)
	if l, ok := r.LookupLayout("checkout"); !ok || l != (deltaq.Layout{DMaxNs: 1e9, Bins: 10}) {
		t.Errorf("checkout after a left: %v %v, want b's layout", l, ok)
	}
	r.Register(b, map[string]deltaq.Layout{"search": {DMaxNs: 5e8, Bins: 50}})
	if _, ok := r.LookupLayout("checkout"); ok {
		t.Error("checkout still found after its last owner re-registered without it")
	}
	if got, want := r.RegisteredProbes(), []string{"search"}; !slices.Equal(got, want) {
		t.Errorf("r.RegisteredProbes() = %v, want %v", got, want)
	}
}

// TestSetLayout: SetLayout changes one probe of its owner, visible to
// LookupLayout, and every change of the registry advances Generation; a
// probe the owner did not register is not added.
func TestSetLayout(t *testing.T) {
	r := new(Layouts)
	a, b := new(int), new(int)
	g0 := r.Generation()
	r.Register(a, map[string]deltaq.Layout{"checkout": {DMaxNs: 60e9, Bins: 100}})
	g1 := r.Generation()
	if g1 <= g0 {
		t.Fatalf("Generation after Register = %d, want > %d", g1, g0)
	}
	if !r.SetLayout(a, "checkout", deltaq.Layout{DMaxNs: 5e6, Bins: 100}) {
		t.Fatal("r.SetLayout(a, checkout) = false, want true")
	}
	if l, _ := r.LookupLayout("checkout"); l != (deltaq.Layout{DMaxNs: 5e6, Bins: 100}) {
		t.Errorf("checkout after SetLayout: %v, want dMax 5ms", l)
	}
	g2 := r.Generation()
	if g2 <= g1 {
		t.Errorf("Generation after SetLayout = %d, want > %d", g2, g1)
	}
	if r.SetLayout(a, "payment", deltaq.Layout{DMaxNs: 1e9, Bins: 10}) || r.SetLayout(b, "checkout", deltaq.Layout{DMaxNs: 1e9, Bins: 10}) {
		t.Error("SetLayout of a probe its owner did not register = true")
	}
	if _, ok := r.LookupLayout("payment"); ok || r.Generation() != g2 {
		t.Errorf("a refused SetLayout changed the registry (payment found %v, generation %d, want %d)", ok, r.Generation(), g2)
	}
}

// TestDeclaredUntilSettled: the probes a configuration declares last until
// the components start (Settle); the next configuration, a reload's,
// declares its own. Through reloads of configurations of other names each
// time, the declarations hold the last configuration's alone, and one of
// the first configuration's is no longer declared: kept, they piled up
// until MaxDeclared stopped Declare, and the checkout/checkouts order of
// making processors was refused again.
func TestDeclaredUntilSettled(t *testing.T) {
	r := new(Layouts)
	name := func(gen, i int) string { return "probe-" + strconv.Itoa(gen) + "-" + strconv.Itoa(i) }
	const perConfig = 1000
	for gen := range 3 * MaxDeclared / perConfig {
		for i := range perConfig {
			r.Declare(name(gen, i))
		}
		if !r.Declared(name(gen, perConfig-1)) {
			t.Fatalf("configuration %d: its last probe is not declared (%d kept)", gen, len(r.declared))
		}
		r.Settle()
	}
	if r.Declared(name(0, 0)) || len(r.declared) != 0 {
		t.Errorf("after the last start, %d probes still declared, the first configuration's among them: %v", len(r.declared), r.Declared(name(0, 0)))
	}
}
