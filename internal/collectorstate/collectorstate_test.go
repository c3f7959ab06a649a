// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package collectorstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// The collector's state is one: every factory that asks gets the same, so a
// probe a processor registers is seen by the connector.
func TestCollectorIsOne(t *testing.T) {
	a, b := Collector(), Collector()
	require.Same(t, a, b)
	owner := new(int)
	a.Layouts.Register(owner, map[string]deltaq.Layout{"one": {DMaxNs: 1e9, Bins: 10}})
	t.Cleanup(func() { a.Layouts.Unregister(owner) })
	_, ok := b.Layouts.LookupLayout("one")
	assert.True(t, ok, "a probe registered through one Collector() is not seen through another")
}

// New states share nothing with each other or with the collector's.
func TestNewSharesNothing(t *testing.T) {
	a, b := New(), New()
	require.NotNil(t, a.Layouts)
	require.NotNil(t, a.Claims)
	require.NotNil(t, a.Reload)
	owner := new(int)
	a.Layouts.Register(owner, map[string]deltaq.Layout{"only-a": {DMaxNs: 1e9, Bins: 10}})
	require.NoError(t, a.Claims.Claim(owner, "processor", "deltaq", []string{"only-a"}))
	a.Reload.Park("processor/deltaq", 1)

	_, ok := b.Layouts.LookupLayout("only-a")
	assert.False(t, ok, "another State's registry")
	_, ok = Collector().Layouts.LookupLayout("only-a")
	assert.False(t, ok, "the collector's registry")
	assert.NoError(t, b.Claims.Claim(new(int), "connector", "deltaq", []string{"only-a"}),
		"another State's claims do not refuse")
	_, ok = b.Reload.Claim("processor/deltaq")
	assert.False(t, ok, "another State's parked state")
	assert.Error(t, a.Claims.Claim(new(int), "connector", "deltaq", []string{"only-a"}),
		"the same State's claims refuse a probe matched by a processor and a connector")
}
