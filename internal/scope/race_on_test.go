// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build race

package scope

// raceDetector is true when the tests run with -race.
const raceDetector = true
