// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package reload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock sets the package clock to a time the test advances.
func fakeClock(t *testing.T) *time.Time {
	t.Helper()
	c := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	mu.Lock()
	old, oldHup, oldVerdict := now, hup, verdict
	now = func() time.Time { return c }
	hup, verdict = time.Time{}, nil
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		now, hup, verdict = old, oldHup, oldVerdict
		clear(parked)
		mu.Unlock()
	})
	return &c
}

func TestPendingWithinTheWindowAfterARequest(t *testing.T) {
	c := fakeClock(t)
	assert.False(t, Pending(), "no SIGHUP yet")
	Requested()
	assert.True(t, Pending())
	*c = c.Add(Window)
	assert.True(t, Pending(), "at the end of the window")
	*c = c.Add(time.Nanosecond)
	assert.False(t, Pending(), "a shutdown long after the SIGHUP is a stop")
}

func TestParkAndClaimOnce(t *testing.T) {
	c := fakeClock(t)
	Park("processor/deltaq", 42)
	_, ok := Claim("processor/other")
	assert.False(t, ok, "another component's key")
	v, ok := Claim("processor/deltaq")
	require.True(t, ok)
	assert.Equal(t, 42, v)
	_, ok = Claim("processor/deltaq")
	assert.False(t, ok, "claimed once")

	Park("connector/deltaq", "state")
	*c = c.Add(maxParked + time.Second)
	_, ok = Claim("connector/deltaq")
	assert.False(t, ok, "nobody claimed it in time: dropped")
}
