// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock returns a Handover whose clock is a time the test advances.
func fakeClock(t *testing.T) (*Handover, *time.Time) {
	t.Helper()
	c := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	h := New()
	h.now = func() time.Time { return c }
	return h, &c
}

func TestPendingWithinTheWindowAfterARequest(t *testing.T) {
	h, c := fakeClock(t)
	assert.False(t, h.Pending(), "no SIGHUP yet")
	h.Requested()
	assert.True(t, h.Pending())
	*c = c.Add(Window)
	assert.True(t, h.Pending(), "at the end of the window")
	*c = c.Add(time.Nanosecond)
	assert.False(t, h.Pending(), "a shutdown long after the SIGHUP is a stop")
	assert.False(t, New().Pending(), "another Handover saw no request")
}

func TestParkAndClaimOnce(t *testing.T) {
	h, c := fakeClock(t)
	h.Park("processor/deltaq", 42)
	_, ok := h.Claim("processor/other")
	assert.False(t, ok, "another component's key")
	v, ok := h.Claim("processor/deltaq")
	require.True(t, ok)
	assert.Equal(t, 42, v)
	_, ok = h.Claim("processor/deltaq")
	assert.False(t, ok, "claimed once")

	h.Park("connector/deltaq", "state")
	*c = c.Add(maxParked + time.Second)
	_, ok = h.Claim("connector/deltaq")
	assert.False(t, ok, "nobody claimed it in time: dropped")
}

// TestSIGHUPDuringAReloadIsTheNext: a second SIGHUP that arrives while the
// collector shuts its components down for the first is taken by the
// Status of a component shut down later. The collector queues it too, and
// reloads again once the first reload's components have started: that
// second shutdown is part of a reload as well. It was taken for a stop
// (Done had forgotten the SIGHUP): the components flushed their open
// windows and dropped their instances in flight, their streams restarted.
func TestSIGHUPDuringAReloadIsTheNext(t *testing.T) {
	h, c := fakeClock(t)
	h.Watch()
	h.sighup <- syscall.SIGHUP
	assert.True(t, h.Pending(), "the processor's shutdown, the first SIGHUP")
	h.sighup <- syscall.SIGHUP
	assert.True(t, h.Pending(), "the connector's shutdown, after the second came")
	h.Done() // the reloaded components start, each calling Done
	h.Done()
	*c = c.Add(time.Second)
	assert.True(t, h.Pending(), "the collector's reload for the second SIGHUP")
	h.Done()
	h.Done()
	assert.False(t, h.Pending(), "no third SIGHUP")

	// A SIGHUP long after one whose reload never finished (the collector
	// reloaded its receivers alone) is a reload of its own, not a queued
	// one.
	h.sighup <- syscall.SIGHUP
	assert.True(t, h.Pending())
	*c = c.Add(Window + time.Second)
	h.sighup <- syscall.SIGHUP
	assert.True(t, h.Pending())
	h.Done()
	assert.False(t, h.Pending())
}

// TestSIGHUPsQueuedAsTheCollectorQueuesThem: three SIGHUPs that arrive
// before the first reload's shutdown are three reloads to the collector,
// which queues them; each shutdown is part of one. The Handover held one:
// the third reload was taken for a stop.
func TestSIGHUPsQueuedAsTheCollectorQueuesThem(t *testing.T) {
	h, _ := fakeClock(t)
	h.Watch()
	for range 3 {
		select {
		case h.sighup <- syscall.SIGHUP:
		default:
			t.Fatal("a SIGHUP the collector queues is dropped") // as os/signal drops it
		}
	}
	for i := range 3 {
		assert.True(t, h.Pending(), "reload %d", i+1)
		h.Done()
	}
	assert.False(t, h.Pending(), "no fourth")
}
