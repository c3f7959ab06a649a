// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a window timer running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
