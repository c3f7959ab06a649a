// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package reload carries the state of the deltaq components across a
// configuration reload of the collector.
//
// The collector reloads its configuration on SIGHUP by shutting every
// component down and building the pipelines again from the new
// configuration; a component cannot tell that shutdown from a final one.
// This package watches for SIGHUP itself: a component that shuts down soon
// after one parks its state here under its kind and ID (Park), and the
// component of the same kind and ID that the new configuration builds
// claims it (Claim). A shutdown without a SIGHUP before it is final, and
// the components flush and drop their state as they always did; so is a
// reload triggered otherwise (a configuration provider's watcher), which
// therefore starts fresh.
//
// State nobody claims within maxParked is dropped, so that a reload whose
// new configuration lacks a component does not keep its state forever.
package reload // import "github.com/deltaq-otel/deltaq/internal/reload"

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Window is how long after a SIGHUP a shutdown counts as part of a reload.
// The collector shuts its components down at once on SIGHUP; a shutdown
// that comes later is a stop.
const Window = 10 * time.Second

// maxParked is how long parked state waits to be claimed. The new
// components are built right after the old ones shut down.
const maxParked = time.Minute

var (
	mu sync.Mutex
	// sighup receives SIGHUP once Watch ran; Pending drains it, so no
	// goroutine waits on it.
	sighup  chan os.Signal
	watched bool
	// hup is when the last SIGHUP arrived (zero: none yet).
	hup    time.Time
	parked = map[string]parkedState{}
	// now is the clock, replaced in tests.
	now = time.Now
)

type parkedState struct {
	state any
	at    time.Time
}

// Watch starts watching for SIGHUP, once per process. The components call
// it when they start. Receiving SIGHUP here does not stop the collector
// from receiving it too (os/signal delivers to every registered channel).
func Watch() {
	mu.Lock()
	defer mu.Unlock()
	if watched {
		return
	}
	watched = true
	sighup = make(chan os.Signal, 1)
	signal.Notify(sighup, syscall.SIGHUP)
}

// Requested records that a reload was requested now: what a SIGHUP does.
// Tests call it in place of a signal.
func Requested() {
	mu.Lock()
	defer mu.Unlock()
	hup = now()
}

// Done says that the components a reload built have started: the reload
// is over, and a shutdown from now on is a stop (until the next SIGHUP).
func Done() {
	mu.Lock()
	defer mu.Unlock()
	hup = time.Time{}
}

// Reset withdraws a reload request and drops all parked state: the
// shutdowns that follow are final. Tests of the components call it when
// they are done simulating a reload.
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	hup = time.Time{}
	clear(parked)
}

// Pending reports whether a reload was requested within Window: a shutdown
// now is part of it. A SIGHUP not yet seen counts from now: the collector
// shuts its components down as soon as it receives one.
func Pending() bool {
	mu.Lock()
	defer mu.Unlock()
	select {
	case <-sighup: // nil before Watch: never ready
		hup = now()
	default:
	}
	return !hup.IsZero() && now().Sub(hup) <= Window
}

// Park keeps state for the component of the given key (its kind and ID)
// that the reloaded configuration builds.
func Park(key string, state any) {
	mu.Lock()
	defer mu.Unlock()
	expire()
	parked[key] = parkedState{state: state, at: now()}
}

// Claim returns and removes the state parked under key, if any.
func Claim(key string) (any, bool) {
	mu.Lock()
	defer mu.Unlock()
	expire()
	p, ok := parked[key]
	if !ok {
		return nil, false
	}
	delete(parked, key)
	return p.state, true
}

// expire drops the state parked longer than maxParked. Called with mu held.
func expire() {
	t := now()
	for k, p := range parked {
		if t.Sub(p.at) > maxParked {
			delete(parked, k)
		}
	}
}
