// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"time"

	"go.opentelemetry.io/collector/connector"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// ClockFactoryFor is, for the external tests, the connector factory whose
// observers run on clk, sharing the collector's state st with the other
// deltaq components.
func ClockFactoryFor(st *collectorstate.State, clk *coretest.Clock) connector.Factory {
	return newFactory(st, func(s *core.Settings) { s.Now, s.Ticks = clk.Now, clk.C }).connectorFactory()
}

// StartClockFactoryFor is ClockFactoryFor whose observers also count the
// start events' timeouts when starts ticks (core.Settings.StartTicks).
func StartClockFactoryFor(st *collectorstate.State, clk *coretest.Clock, starts chan time.Time) connector.Factory {
	return newFactory(st, func(s *core.Settings) { s.Now, s.Ticks, s.StartTicks = clk.Now, clk.C, starts }).connectorFactory()
}
