// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package reload carries the state of the deltaq components across a
// configuration reload of the collector.
//
// The collector reloads its configuration on SIGHUP by shutting every
// component down and building the pipelines again from the new
// configuration; a component cannot tell that shutdown from a final one.
// A Handover watches for SIGHUP itself: a component that shuts down soon
// after one parks its state there under its kind and ID (Park), and the
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
// verdict is needed before: on SIGHUP the Handover asks the collector's own
// `validate` command, run on the same command line, whether it accepts the
// configuration as it is now, and Pending is false when it does not. The
// components then flush, as at a stop. A configuration rewritten again
// between that check and the collector's own reading of it is the case this
// cannot see.
//
// A SIGHUP that arrives while the components shut down for an earlier one
// is the collector's next reload (it queues the signal and reloads again
// once the new components have started): the Handover keeps it pending
// past the start (Done), for that reload's shutdown.
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

// Handover is the reload state of one collector's deltaq components: the
// SIGHUPs seen, the verdict on the configuration the last one asked for,
// and the state parked for the components the reload builds. The
// components are given it (internal/collectorstate); New makes one.
type Handover struct {
	mu sync.Mutex
	// sighup receives SIGHUP once Watch ran; Status drains it, so no
	// goroutine waits on it.
	sighup  chan os.Signal
	watched bool
	// hup is when the last SIGHUP arrived (zero: none yet).
	hup time.Time
	// verdict is the check of the configuration the last SIGHUP asked the
	// collector to load (nil: none yet).
	verdict *check
	// queued counts the SIGHUPs Status took while the reload of an
	// earlier one was under way (hup within Window, Done not yet called):
	// the collector queues them, and runs a reload for each after the
	// current one; Done keeps one pending for the next. started says that
	// Done was called since the last Status: the components a reload built
	// are starting, each calls Done, and the first alone ends the reload.
	queued  int
	started bool
	parked  map[string]parkedState
	// now is the clock.
	now func() time.Time
	// checkConfig says whether the collector refuses its configuration as
	// it is now: a non-nil error is its refusal; nil is acceptance or no
	// answer.
	checkConfig func(context.Context) error
}

// New returns a Handover with nothing parked that asks the collector's
// own validate command (validateByCommand) for its verdicts.
func New() *Handover {
	return &Handover{parked: map[string]parkedState{}, now: time.Now, checkConfig: validateByCommand}
}

// check is the verdict on one reload's configuration, err valid once done
// is closed.
type check struct {
	done chan struct{}
	err  error
}

// startCheck records a reload request now and checks its configuration in
// the background. Called with h.mu held.
func (h *Handover) startCheck(refusal error) {
	h.hup = h.now()
	c := &check{done: make(chan struct{})}
	h.verdict = c
	if refusal != nil {
		c.err = refusal
		close(c.done)
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), CheckTimeout)
		defer cancel()
		c.err = h.checkConfig(ctx)
		close(c.done)
	}()
}

type parkedState struct {
	state any
	at    time.Time
}

// sighupQueue is how many SIGHUPs the Handover holds until a shutdown takes
// them, as many as the collector queues (its signal channel's capacity,
// otelcol.Collector): os/signal drops a signal a full channel cannot take,
// and the collector would run a reload the Handover never heard of, taken
// for a stop.
const sighupQueue = 3

// Watch starts watching for SIGHUP, once per Handover. The components
// call it when they start. Receiving SIGHUP here does not stop the
// collector from receiving it too (os/signal delivers to every registered
// channel).
func (h *Handover) Watch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watched {
		return
	}
	h.watched = true
	h.sighup = make(chan os.Signal, sighupQueue)
	signal.Notify(h.sighup, syscall.SIGHUP)
}

// Requested records that a reload was requested now: what a SIGHUP does.
// Tests call it in place of a signal.
func (h *Handover) Requested() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.startCheck(nil)
}

// Refused records that a reload was requested now with a configuration the
// collector refuses (err says why): what a SIGHUP after an invalid
// configuration was written does. The collector stops after it, so the
// components must flush rather than hand over. Tests call it in place of a
// signal and an invalid file.
func (h *Handover) Refused(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.startCheck(err)
}

// Done says that the components a reload built have started: the reload
// is over, and a shutdown from now on is a stop (until the next SIGHUP),
// unless a SIGHUP came while it was under way (queued): the collector
// reloads again for it, at once, and that reload is pending from now.
func (h *Handover) Done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return // another component of the same start
	}
	h.started = true
	if h.queued > 0 {
		h.queued--
		h.startCheck(nil)
		return
	}
	h.hup, h.verdict = time.Time{}, nil
}

// Pending reports whether a reload was requested within Window whose
// configuration the collector accepts: a shutdown now is part of it, and
// the component hands its state over. It is Status without the refusal.
func (h *Handover) Pending() bool {
	pending, _ := h.Status()
	return pending
}

// Status reports whether a shutdown now is part of a reload (see Pending)
// and, when a reload was requested within Window but the collector refuses
// its configuration, the refusal: the collector stops after this shutdown,
// and the component flushes its state as at a stop. A SIGHUP not yet seen
// counts from now: the collector shuts its components down as soon as it
// receives one. It waits for the check of the configuration, at most
// CheckTimeout after the SIGHUP.
func (h *Handover) Status() (pending bool, refused error) {
	h.delivered()
	h.mu.Lock()
	h.started = false // a shutdown: the components that started are stopping
	select {
	case <-h.sighup: // nil before Watch: never ready
		// A SIGHUP while the reload of another is under way (the
		// collector shutting its components down, one after the other) is
		// the collector's next reload, not this one's.
		if !h.hup.IsZero() && h.now().Sub(h.hup) <= Window {
			h.queued++
		}
		h.startCheck(nil)
	default:
	}
	if h.hup.IsZero() || h.now().Sub(h.hup) > Window {
		h.mu.Unlock()
		return false, nil
	}
	c := h.verdict
	h.mu.Unlock()
	<-c.done // bounded by CheckTimeout
	if c.err != nil {
		return false, c.err
	}
	return true, nil
}

// delivered waits until a SIGHUP the process is handing out has reached
// the Handover's channel. os/signal hands a signal to the registered
// channels one after another, under its lock, and in no fixed order: the
// collector's channel may hold the SIGHUP, and the collector be shutting
// the components down, before the Handover's channel has it, and the
// shutdown would pass for a stop. Notify takes that lock, so registering
// the channel again (which changes nothing) returns only once the signal
// went to every channel.
func (h *Handover) delivered() {
	h.mu.Lock()
	c := h.sighup
	h.mu.Unlock()
	if c != nil {
		signal.Notify(c, syscall.SIGHUP)
	}
}

// Park keeps state for the component of the given key (its kind and ID)
// that the reloaded configuration builds.
func (h *Handover) Park(key string, state any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire()
	h.parked[key] = parkedState{state: state, at: h.now()}
}

// Claim returns and removes the state parked under key, if any.
func (h *Handover) Claim(key string) (any, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expire()
	p, ok := h.parked[key]
	if !ok {
		return nil, false
	}
	delete(h.parked, key)
	return p.state, true
}

// expire drops the state parked longer than maxParked. Called with h.mu
// held.
func (h *Handover) expire() {
	t := h.now()
	for k, p := range h.parked {
		if t.Sub(p.at) > maxParked {
			delete(h.parked, k)
		}
	}
}
