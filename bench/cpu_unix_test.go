// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package bench

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system, on
// every thread (the garbage collector's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
