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
	return newFactory(st, func(s *core.Settings) { s.Now, s.Ticks = clk.Now, clk.C }).connectorFactory()
}
