// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package coretest // import "github.com/deltaq-otel/deltaq/internal/core/coretest"

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Clock is a clock a test moves, and the tick channels of an observer's
// timers (core.Settings.Now, Ticks, StartTicks and Ticked): windows close,
// and the timeouts of start events fall due, when the test says, through
// the timers' own loops.
type Clock struct {
	ns atomic.Int64
	// C is the window timer's tick channel (core.Settings.Ticks), Starts
	// the timeout timer's (core.Settings.StartTicks); unbuffered.
	C, Starts chan time.Time
	// done holds the word of Ticked, that a timer has done a tick's work;
	// one place, so that a timer whose tick no one waits for (a test that
	// sends on C or Starts itself) does not block on it.
	done chan struct{}
}

// NewClock returns a clock set to now.
func NewClock(now time.Time) *Clock {
	c := &Clock{C: make(chan time.Time), Starts: make(chan time.Time), done: make(chan struct{}, 1)}
	c.ns.Store(now.UnixNano())
	return c
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Ticked is core.Settings.Ticked: a timer has done the work of a tick of
// ticks. A tick of another channel than the clock's is not waited for.
func (c *Clock) Ticked(ticks <-chan time.Time) {
	if ticks == c.C || ticks == c.Starts {
		select {
		case c.done <- struct{}{}:
		default:
		}
	}
}

// Tick moves the clock to t and has the window timer close the windows
// due, and returns once it has: their output is handed to the outputs by
// then, and the timer does nothing more until the next tick. The
// observer's settings must have Ticked set to the clock's.
func (c *Clock) Tick(t time.Time) { c.send(c.C, t) }

// Expire moves the clock to t and has the timeout timer count the
// instances due, and returns once it has (Tick).
func (c *Clock) Expire(t time.Time) { c.send(c.Starts, t) }

// tickWait is how long a tick waits for its timer before the test is
// told that the timer never said it was done.
const tickWait = time.Minute

// send moves the clock to t, ticks ch and waits for the timer's word. A
// word left by a tick a test sent itself and did not wait for is dropped
// first.
func (c *Clock) send(ch chan time.Time, t time.Time) {
	c.ns.Store(t.UnixNano())
	select {
	case <-c.done:
	default:
	}
	ch <- t
	select {
	case <-c.done:
	case <-time.After(tickWait):
		panic(fmt.Sprintf("coretest.Clock: no word from the timer %v after its tick at %v: set core.Settings.Ticked to the clock's Ticked", tickWait, t))
	}
}

// Set moves the clock to t without a tick.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// T0 is a window boundary of every interval that divides 100 s (windows are
// aligned on the Unix epoch), for the tests' clocks to start from.
var T0 = time.Unix(1_700_000_000, 0).UTC()

// At returns T0 + d.
func At(d time.Duration) time.Time { return T0.Add(d) }
