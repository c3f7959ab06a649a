// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build !race

package analysis

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
