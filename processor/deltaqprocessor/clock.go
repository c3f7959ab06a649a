// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

import "time"

// clock makes the timer injectable: the processor's timer goroutine fires
// the timeouts due at each tick's time, so tests drive timeouts by sending
// ticks instead of sleeping.
type clock interface {
	// NewTicker returns a ticker with period d.
	NewTicker(d time.Duration) ticker
	// Now returns the current time.
	Now() time.Time
}

// ticker delivers the current time once per period.
type ticker interface {
	C() <-chan time.Time
	Stop()
	// Done is called by the timer once the work of a tick is done: a
	// test's ticker returns from its tick then.
	Done()
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) NewTicker(d time.Duration) ticker { return wallTicker{time.NewTicker(d)} }
func (wallClock) Now() time.Time                   { return time.Now() }

type wallTicker struct{ t *time.Ticker }

func (w wallTicker) C() <-chan time.Time { return w.t.C }
func (w wallTicker) Stop()               { w.t.Stop() }
func (w wallTicker) Done()               {}
