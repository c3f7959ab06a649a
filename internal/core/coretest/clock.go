// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package coretest // import "github.com/deltaq-otel/deltaq/internal/core/coretest"

import (
	"sync/atomic"
	"time"
)

// Clock is a clock a test moves, and the tick channel of an observer's
// window timer (core.Settings.Now and Ticks): windows close when the
// test says, through the timer's own loop.
type Clock struct {
	ns atomic.Int64
	// C is the tick channel; unbuffered.
	C chan time.Time
}

// NewClock returns a clock set to now.
func NewClock(now time.Time) *Clock {
	c := &Clock{C: make(chan time.Time)}
	c.ns.Store(now.UnixNano())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Tick moves the clock to t and has the timer close the windows due. It
// sends t twice: the second send returns once the timer is back in its
// loop, so the windows of the first are closed and handed to the outputs
// by then.
func (c *Clock) Tick(t time.Time) {
	c.ns.Store(t.UnixNano())
	c.C <- t
	c.C <- t
}

// Set moves the clock to t without a tick.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// T0 is a window boundary of every interval that divides 100 s (windows are
// aligned on the Unix epoch), for the tests' clocks to start from.
var T0 = time.Unix(1_700_000_000, 0).UTC()

// At returns T0 + d.
func At(d time.Duration) time.Time { return T0.Add(d) }
