// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/core"
)

// shared is the analysis of one component ID, shared by its traces→metrics
// and traces→logs connectors.
type shared struct {
	obs     *core.Observer
	release func()
	// stop shuts the analysis down once.
	stop    sync.Once
	stopErr error

	mu sync.Mutex
	// out are the next consumers of the connectors attached so far.
	out core.Outputs
	// live counts the connectors not shut down; started says the window
	// timer runs.
	live    int
	started bool
	// feeder is the connector whose traces go into the analysis, mfeeder
	// the one whose metrics (agents' windows) do, lfeeder the one whose
	// logs (start events) do.
	feeder, mfeeder, lfeeder *deltaqConnector
}

// input is the signal a connector receives.
type input int

const (
	inputTraces input = iota
	inputMetrics
	inputLogs
)

// deltaqConnector is one of the connectors of a shared analysis. The
// collector sends every batch of a traces pipeline to each connector node
// the pipeline feeds, one per output signal, so the traces→metrics and
// traces→logs connectors of an ID receive the same spans: only one of them,
// the feeder, adds them to the analysis, or every instance would count
// twice. The same holds for the metrics→metrics and metrics→logs
// connectors of a gateway and the windows they receive, and for the
// logs→metrics and logs→logs connectors and the start events.
type deltaqConnector struct {
	shared *shared
	input  input
	feeds  atomic.Bool
	once   sync.Once
}

// Start starts the window timer with the first connector to start; the
// collector creates every connector before it starts any, so the outputs of
// both are known by then.
func (c *deltaqConnector) Start(context.Context, component.Host) error {
	s := c.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	feeder := &s.feeder
	switch c.input {
	case inputMetrics:
		feeder = &s.mfeeder
	case inputLogs:
		feeder = &s.lfeeder
	}
	if *feeder == nil {
		*feeder = c
		c.feeds.Store(true)
	}
	if !s.started {
		if err := s.obs.Start(s.out); err != nil {
			return err
		}
		s.started = true
	}
	return nil
}

// ConsumeTraces adds the outcome instances among the spans to the analysis
// when c is the feeder; it only takes the analysis' lock and never waits
// for the next consumers.
func (c *deltaqConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !c.feeds.Load() {
		return nil
	}
	return c.shared.obs.ConsumeTraces(ctx, td)
}

// ConsumeMetrics merges the agents' windows among the metrics into the
// analysis when c is the metrics feeder.
func (c *deltaqConnector) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	if !c.feeds.Load() {
		return nil
	}
	return c.shared.obs.ConsumeMetrics(ctx, md)
}

// ConsumeLogs tracks the instances the start events among the log records
// announce, for their real-time timeouts, when c is the logs feeder; other
// log records are ignored.
func (c *deltaqConnector) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if !c.feeds.Load() {
		return nil
	}
	return c.shared.obs.ConsumeLogs(ctx, ld)
}

// Capabilities says that the connector only reads its input.
func (*deltaqConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Shutdown shuts the analysis down with the first of its connectors to
// shut down: the windows still open are closed and emitted to the next
// consumers. The collector shuts components down from the receivers on, a
// connector before the pipeline it feeds: when the first connector of an
// ID shuts down, no more traces come, and neither the metrics nor the logs
// pipeline has shut down. The analysis leaves the factory with the last.
func (c *deltaqConnector) Shutdown(ctx context.Context) error {
	s := c.shared
	s.stop.Do(func() { s.stopErr = s.obs.Shutdown(ctx) })
	c.once.Do(func() {
		s.mu.Lock()
		s.live--
		last := s.live == 0
		s.mu.Unlock()
		if last {
			s.release()
		}
	})
	return s.stopErr
}
