// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMoveToKeepsStateAndDueTimes: instances move with their state and due
// time, in insertion order, remapped or dropped by keep; the source is left
// empty.
func TestMoveToKeepsStateAndDueTimes(t *testing.T) {
	src := New(10, 50)
	key := func(b byte) Key { return Key{TraceID: [16]byte{b}, SpanID: [8]byte{b}} }
	src.Add(&Instance{Key: key(1), Probe: 0, Start: 0, Deadline: 100})
	src.Add(&Instance{Key: key(2), Probe: 1, Start: 10, Deadline: 110})
	src.Add(&Instance{Key: key(3), Probe: 0, Start: 20, Deadline: 120})
	timedOut, _ := src.Expire(100, nil)
	require.Len(t, timedOut, 1, "instance 1 timed out; due again at 150")

	dst := New(2, 50)
	moved, dropped := src.MoveTo(dst, func(in *Instance) bool {
		if in.Probe == 1 {
			return false // its probe changed its dMax
		}
		in.Probe = 7
		return true
	}, func(*Eviction) { t.Fatal("nothing to evict") })
	assert.Equal(t, 2, moved)
	assert.Equal(t, 1, dropped)
	assert.Equal(t, 0, src.Len())
	started, to := dst.Counts()
	assert.Equal(t, 1, started)
	assert.Equal(t, 1, to)

	// Instance 3 times out at its own deadline; instance 1 is forgotten at
	// 100 + 50.
	due, ok := dst.NextDue()
	require.True(t, ok)
	assert.Equal(t, int64(120), due)
	timedOut, _ = dst.Expire(120, nil)
	require.Len(t, timedOut, 1)
	assert.Equal(t, key(3), timedOut[0].Key)
	assert.Equal(t, 7, timedOut[0].Probe)
	_, forgotten := dst.Expire(150, nil)
	assert.Equal(t, 1, forgotten)
}

// TestMoveToFullDestination: a destination smaller than the instances
// evicts the oldest, described as Add describes an eviction; they are not
// dropped by keep.
func TestMoveToFullDestination(t *testing.T) {
	src := New(10, 0)
	for b := range byte(3) {
		src.Add(&Instance{Key: Key{TraceID: [16]byte{b + 1}}, Deadline: int64(b) + 100})
	}
	dst := New(2, 0)
	var evicted []Eviction
	moved, dropped := src.MoveTo(dst, func(*Instance) bool { return true }, func(ev *Eviction) { evicted = append(evicted, *ev) })
	assert.Equal(t, 2, moved)
	assert.Equal(t, 0, dropped)
	require.Len(t, evicted, 1)
	assert.Equal(t, Key{TraceID: [16]byte{1}}, evicted[0].Instance.Key, "the oldest")
	assert.Equal(t, Started, evicted[0].State)
	assert.Equal(t, 2, dst.Len())
}

// TestMoveToHoldsLonger: keep may raise a started instance's Due, and it
// then times out no earlier; a timed-out instance keeps its own due time
// (when it is forgotten), and a Due below the one it had changes nothing.
func TestMoveToHoldsLonger(t *testing.T) {
	src := New(10, 50)
	key := func(b byte) Key { return Key{TraceID: [16]byte{b}, SpanID: [8]byte{b}} }
	src.Add(&Instance{Key: key(1), Start: 0, Deadline: 100})
	src.Add(&Instance{Key: key(2), Start: 10, Deadline: 110})
	src.Add(&Instance{Key: key(3), Start: 20, Deadline: 120})
	timedOut, _ := src.Expire(100, nil)
	require.Len(t, timedOut, 1, "instance 1 timed out; forgotten at 150")

	dst := New(10, 50)
	src.MoveTo(dst, func(in *Instance) bool {
		switch in.Key {
		case key(2):
			in.Due = 400
		default:
			in.Due = 5 // below the deadline: no change
		}
		return true
	}, func(*Eviction) { t.Fatal("nothing to evict") })
	due, ok := dst.NextDue()
	require.True(t, ok)
	assert.Equal(t, int64(120), due, "instance 3 at its deadline")
	timedOut, forgotten := dst.Expire(160, nil)
	require.Len(t, timedOut, 1)
	assert.Equal(t, key(3), timedOut[0].Key)
	assert.Equal(t, 1, forgotten, "instance 1 forgotten at 150, as before the move")
	timedOut, _ = dst.Expire(399, nil)
	assert.Empty(t, timedOut, "instance 2 held")
	timedOut, _ = dst.Expire(400, nil)
	require.Len(t, timedOut, 1, "instance 2 held until 400")
	assert.Equal(t, key(2), timedOut[0].Key)
	assert.Equal(t, int64(110), timedOut[0].Deadline, "its deadline unchanged")
}
