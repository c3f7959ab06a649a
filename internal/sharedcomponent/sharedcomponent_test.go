// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package sharedcomponent

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

type value struct{ n int }

func TestOneValuePerIDUntilReleased(t *testing.T) {
	var m Map[*value]
	id, other := component.MustNewID("deltaq"), component.MustNewIDWithName("deltaq", "b")
	made := 0
	var releases []func()
	create := func(release func()) (*value, error) {
		made++
		releases = append(releases, release)
		return &value{n: made}, nil
	}
	a, err := m.LoadOrCreate(id, create)
	require.NoError(t, err)
	b, err := m.LoadOrCreate(id, create)
	require.NoError(t, err)
	assert.Same(t, a, b, "the second side of one ID shares the first's value")
	c, err := m.LoadOrCreate(other, create)
	require.NoError(t, err)
	assert.NotSame(t, a, c, "another ID has its own")

	releases[0]()
	_, ok := m.Load(id)
	assert.False(t, ok, "released: a reload builds a fresh value")
	d, err := m.LoadOrCreate(id, create)
	require.NoError(t, err)
	assert.Equal(t, 3, d.n)
	releases[0]() // the old value's release again: it no longer owns the ID
	got, ok := m.Load(id)
	assert.True(t, ok)
	assert.Same(t, d, got, "a stale release leaves the new value")

	_, err = m.LoadOrCreate(component.MustNewIDWithName("deltaq", "bad"), func(func()) (*value, error) {
		return nil, errors.New("refused")
	})
	assert.EqualError(t, err, "refused")
	_, ok = m.Load(component.MustNewIDWithName("deltaq", "bad"))
	assert.False(t, ok, "a failed creation keeps nothing")
	assert.Equal(t, 2, m.Len())
}
