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
// A reload whose new configuration the collector refuses stops the
// collector: it shuts the old components down, fails to build the new ones
// and exits, so state parked for them would be lost with the open windows
// it holds. Nothing of the components runs after that shutdown (the
// process exits, and the pipelines' exporters have shut down), so the
// verdict is needed before: on SIGHUP this package asks the collector's own
// `validate` command, run on the same command line, whether it accepts the
// configuration as it is now, and Pending is false when it does not. The
// components then flush, as at a stop. A configuration rewritten again
// between that check and the collector's own reading of it is the case this
// cannot see.
//
// State nobody claims within maxParked is dropped, so that a reload whose
// new configuration lacks a component does not keep its state forever.
package reload // import "github.com/deltaq-otel/deltaq/internal/reload"

import (
	"context"
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

// CheckTimeout bounds how long a shutdown waits for the verdict on the new
// configuration. A check that takes longer says nothing, and the state is
// handed over as before the check existed.
const CheckTimeout = 5 * time.Second

var (
	mu sync.Mutex
	// sighup receives SIGHUP once Watch ran; Pending drains it, so no
	// goroutine waits on it.
	sighup  chan os.Signal
	watched bool
	// hup is when the last SIGHUP arrived (zero: none yet).
	hup time.Time
	// verdict is the check of the configuration the last SIGHUP asked the
	// collector to load (nil: none yet).
	verdict *check
	parked  = map[string]parkedState{}
	// now is the clock, replaced in tests.
	now = time.Now
	// checkConfig says whether the collector refuses its configuration as
	// it is now: a non-nil error is its refusal; nil is acceptance or no
	// answer. Replaced in tests.
	checkConfig = validateByCommand
)

// check is the verdict on one reload's configuration, err valid once done
// is closed.
type check struct {
	done chan struct{}
	err  error
}

// startCheck records a reload request now and checks its configuration in
// the background. Called with mu held.
func startCheck(refusal error) {
	hup = now()
	c := &check{done: make(chan struct{})}
	verdict = c
	if refusal != nil {
		c.err = refusal
		close(c.done)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), CheckTimeout)
		defer cancel()
		c.err = checkConfig(ctx)
		close(c.done)
	}()
}

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
	startCheck(nil)
}

// Refused records that a reload was requested now with a configuration the
// collector refuses (err says why): what a SIGHUP after an invalid
// configuration was written does. The collector stops after it, so the
// components must flush rather than hand over. Tests call it in place of a
// signal and an invalid file.
func Refused(err error) {
	mu.Lock()
	defer mu.Unlock()
	startCheck(err)
}

// Done says that the components a reload built have started: the reload
// is over, and a shutdown from now on is a stop (until the next SIGHUP).
func Done() {
	mu.Lock()
	defer mu.Unlock()
	hup, verdict = time.Time{}, nil
}

// Reset withdraws a reload request and drops all parked state: the
// shutdowns that follow are final. Tests of the components call it when
// they are done simulating a reload.
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	hup, verdict = time.Time{}, nil
	clear(parked)
}

// Pending reports whether a reload was requested within Window whose
// configuration the collector accepts: a shutdown now is part of it, and
// the component hands its state over. It is Status without the refusal.
func Pending() bool {
	pending, _ := Status()
	return pending
}

// Status reports whether a shutdown now is part of a reload (see Pending)
// and, when a reload was requested within Window but the collector refuses
// its configuration, the refusal: the collector stops after this shutdown,
// and the component flushes its state as at a stop. A SIGHUP not yet seen
// counts from now: the collector shuts its components down as soon as it
// receives one. It waits for the check of the configuration, at most
// CheckTimeout after the SIGHUP.
func Status() (pending bool, refused error) {
	mu.Lock()
	select {
	case <-sighup: // nil before Watch: never ready
		startCheck(nil)
	default:
	}
	if hup.IsZero() || now().Sub(hup) > Window {
		mu.Unlock()
		return false, nil
	}
	c := verdict
	mu.Unlock()
	<-c.done // bounded by CheckTimeout
	if c.err != nil {
		return false, c.err
	}
	return true, nil
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
