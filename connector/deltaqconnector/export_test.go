// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector

import (
	"go.opentelemetry.io/collector/connector"

	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
)

// ClockFactoryFor is, for the external tests, the connector factory whose
// observers run on clk, sharing the collector's state st with the other
// deltaq components.
func ClockFactoryFor(st *collectorstate.State, clk *coretest.Clock) connector.Factory {
	return newFactory(st, func(s *core.Settings) { s.Now, s.Ticks, s.Ticked = clk.Now, clk.C, clk.Ticked }).connectorFactory()
}

// StartClockFactoryFor is ClockFactoryFor whose observers also count the
// start events' timeouts when the clock says (coretest.Clock.Expire).
func StartClockFactoryFor(st *collectorstate.State, clk *coretest.Clock) connector.Factory {
	return newFactory(st, func(s *core.Settings) {
		s.Now, s.Ticks, s.StartTicks, s.Ticked = clk.Now, clk.C, clk.Starts, clk.Ticked
	}).connectorFactory()
}
