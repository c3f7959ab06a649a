// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package reload

import (
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
