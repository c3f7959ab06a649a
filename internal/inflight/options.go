// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package inflight

import (
	"time"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// Options are the start-event options of the deltaq connector (its
// start_events section) and of the deltaq processor (at the top of its
// section): the bounds of a Tracker and its timer.
type Options struct {
	// MaxInFlight bounds the number of instances tracked from start events
	// (started, or timed out and waiting for a late span). Past the bound the
	// oldest instance is evicted and counted.
	MaxInFlight int `mapstructure:"max_in_flight"`

	// TimerResolution is the period of the timer that fires timeouts: an
	// instance whose span has not arrived is reported at most one period
	// after start + dMax.
	TimerResolution time.Duration `mapstructure:"timer_resolution"`

	// TimeoutGrace delays the report of a timeout, to allow for the transit
	// of spans from the application to the collector: an instance whose span
	// has not arrived is reported at the first tick at or after
	// start + dMax + grace (it still ends at start + dMax), and a span that
	// arrives within the grace is counted by its own duration. Zero, the
	// default, reports timeouts within one tick of start + dMax. At most 1h.
	TimeoutGrace time.Duration `mapstructure:"timeout_grace"`

	// LateWindow is how long after its timeout an instance is remembered, so
	// that a span arriving in that time is recognised as late and not
	// counted again.
	LateWindow time.Duration `mapstructure:"late_window"`

	// MaxEnded bounds the number of spans remembered, while start events
	// are in use, as having ended (whether they ended a tracked instance or
	// not): a start event that arrives after its span is recognised and not
	// tracked. They are kept in two generations of MaxEnded/2 (rounded
	// down); when the newer is full the older is forgotten, and those of
	// its spans still inside EndedWindow are counted.
	MaxEnded int `mapstructure:"max_ended"`

	// EndedWindow is how long such a span is remembered after it arrived.
	EndedWindow time.Duration `mapstructure:"ended_window"`
}

// Defaults and bounds of Options.
const (
	DefaultMaxInFlight     = 100_000
	DefaultTimerResolution = 10 * time.Millisecond
	DefaultLateWindow      = time.Minute
	DefaultMaxEnded        = 100_000
	DefaultEndedWindow     = 30 * time.Second

	// Bounds: far above any sensible setting, there so that a typing
	// error cannot make a component allocate without limit or spin.
	// max_in_flight and max_ended size the two tables of spans kept in
	// memory, each entry at least a trace and span ID (24 B) and its map
	// slot.
	MinMaxInFlight = 1
	MaxMaxInFlight = 10_000_000
	MinMaxEnded    = 2
	MaxMaxEnded    = 10_000_000
	// The timer ticks at most every millisecond (finer ticks cost CPU
	// without making timeouts more exact than the transit of spans) and at
	// least every second (a coarser tick delays every timeout by up to it).
	MinTimerResolution = time.Millisecond
	MaxTimerResolution = time.Second
	// A grace longer than an hour would no longer be a real-time timeout,
	// and it holds every instance in flight for that much longer.
	MaxTimeoutGrace = time.Hour
	// How long a timed-out instance or an ended span is remembered.
	MaxLateWindow  = 24 * time.Hour
	MaxEndedWindow = 24 * time.Hour
)

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		MaxInFlight:     DefaultMaxInFlight,
		TimerResolution: DefaultTimerResolution,
		LateWindow:      DefaultLateWindow,
		MaxEnded:        DefaultMaxEnded,
		EndedWindow:     DefaultEndedWindow,
	}
}

// Check returns the problems of o, each naming its option.
func (o *Options) Check() []error {
	var errs []error
	if o.MaxInFlight < MinMaxInFlight || o.MaxInFlight > MaxMaxInFlight {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_in_flight"), "must be in [%d, %d], got %d", MinMaxInFlight, MaxMaxInFlight, o.MaxInFlight))
	}
	if o.TimerResolution < MinTimerResolution || o.TimerResolution > MaxTimerResolution {
		errs = append(errs, confpath.Errorf(confpath.Fields("timer_resolution"), "must be in [%v, %v], got %v", MinTimerResolution, MaxTimerResolution, o.TimerResolution))
	}
	if o.TimeoutGrace < 0 || o.TimeoutGrace > MaxTimeoutGrace {
		errs = append(errs, confpath.Errorf(confpath.Fields("timeout_grace"), "must be in [0s, %v], got %v", MaxTimeoutGrace, o.TimeoutGrace))
	}
	if o.LateWindow <= 0 || o.LateWindow > MaxLateWindow {
		errs = append(errs, confpath.Errorf(confpath.Fields("late_window"), "must be in (0s, %v], got %v", MaxLateWindow, o.LateWindow))
	}
	if o.MaxEnded < MinMaxEnded || o.MaxEnded > MaxMaxEnded {
		errs = append(errs, confpath.Errorf(confpath.Fields("max_ended"), "must be in [%d, %d], got %d", MinMaxEnded, MaxMaxEnded, o.MaxEnded))
	}
	if o.EndedWindow <= 0 || o.EndedWindow > MaxEndedWindow {
		errs = append(errs, confpath.Errorf(confpath.Fields("ended_window"), "must be in (0s, %v], got %v", MaxEndedWindow, o.EndedWindow))
	}
	return errs
}
