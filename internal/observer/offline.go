// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
)

// OfflineAnalysis is the observer's analysis run offline over recorded
// traces whose spans the deltaq processor has mapped: every outcome
// instance goes into one window (the whole input), which Result closes and
// analyses as the deltaq exporter and connector would, with the
// configuration's probes, QTAs, triggers, quantiles and outcome diagram. Snapshots are off. It is a
// traces consumer that keeps nothing of the traces but the analysis state
// (a histogram per probe), so its memory does not grow with its input.
type OfflineAnalysis struct {
	engine *analysis.Engine
}

// NewOfflineAnalysis makes the offline analysis of cfg. Probes that the
// deltaq processors of this process configure (created before it) lend it
// their layouts, as in a collector.
func NewOfflineAnalysis(cfg *Config) (*OfflineAnalysis, error) {
	ac := cfg.engineConfig()
	ac.Interval, ac.Lag = 0, 0
	ac.Snapshot = analysis.SnapshotConfig{}
	e, err := analysis.New(ac, time.Time{})
	if err != nil {
		return nil, err
	}
	return &OfflineAnalysis{engine: e}, nil
}

// ConsumeTraces adds the outcome instances among the spans of td. It may
// be called concurrently (the engine locks).
func (a *OfflineAnalysis) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	b := a.engine.Begin()
	addTraces(b, td)
	b.End()
	return nil
}

// Capabilities says that the analysis only reads the traces.
func (a *OfflineAnalysis) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Result closes the window and returns its analysis and the instance
// counters (counted and dropped). Call it once, after the last traces.
func (a *OfflineAnalysis) Result() (*analysis.Result, analysis.Stats) {
	res := a.engine.Flush(time.Time{})
	return res[0], a.engine.Stats()
}
