// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package reload

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchSeesSIGHUP sends the process a real SIGHUP: with Watch running,
// it is a reload request and does not stop the test binary.
func TestWatchSeesSIGHUP(t *testing.T) {
	h, _ := fakeClock(t)
	h.Watch()
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGHUP))
	assert.Eventually(t, h.Pending, 5*time.Second, 10*time.Millisecond)
}

// TestStatusSeesTheSIGHUPTheCollectorActsOn is the order of a reload as
// the collector runs it: the collector receives SIGHUP on its own channel
// and shuts the components down at once, and a component asks Status
// straight away. os/signal hands a signal to the registered channels one
// after another, in no fixed order, so the collector's may hold it while
// the Handover's does not yet. Many other channels registered for SIGHUP
// widen that gap. Every round must count as a reload.
func TestStatusSeesTheSIGHUPTheCollectorActsOn(t *testing.T) {
	h, _ := fakeClock(t)
	h.Watch()
	others := make([]chan os.Signal, 500)
	for i := range others {
		others[i] = make(chan os.Signal, 1)
		signal.Notify(others[i], syscall.SIGHUP)
	}
	collector := make(chan os.Signal, 1)
	signal.Notify(collector, syscall.SIGHUP)
	t.Cleanup(func() {
		signal.Stop(collector)
		for _, c := range others {
			signal.Stop(c)
		}
	})
	const rounds = 200
	missed := 0
	for range rounds {
		require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGHUP))
		<-collector
		if !h.Pending() {
			missed++
		}
		h.Done()
		for _, c := range others {
			select {
			case <-c:
			default:
			}
		}
		// os/signal coalesces a signal that arrives before the last one
		// was delivered; let this one settle before the next.
		time.Sleep(time.Millisecond)
	}
	assert.Zero(t, missed, "shutdowns right after a SIGHUP taken for a stop, of %d", rounds)
}
