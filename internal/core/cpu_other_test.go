// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !unix

package core

import "time"

// processCPU is not measured on this platform.
func processCPU() time.Duration { return 0 }
