// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package core

import (
	"syscall"
	"time"
)

// processCPU returns the user and system CPU time of the process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
