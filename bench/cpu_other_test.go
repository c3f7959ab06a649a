// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package bench

import "time"

// cpuTime is not measured here: cpu-ns/span reads 0.
func cpuTime() time.Duration { return 0 }
