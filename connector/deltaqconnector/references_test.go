// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/deltaq-otel/deltaq/connector/deltaqconnector"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/processor/deltaqprocessor"
)

// TestMisspelledProbeOfProcessorMadeFirst: a deltaq processor the
// collector makes before the connector — one of a pipeline that does not
// feed it, or one it shares with such a pipeline (a logs pipeline, for the
// start events) — has run its check of the connectors' probes before the
// connector existed. The connector then checks its own probes against the
// processor's when it is made, so that validate refuses the misspelled
// outcome and QTA probe that the start refuses, with the probes meant.
func TestMisspelledProbeOfProcessorMadeFirst(t *testing.T) {
	ctx := context.Background()
	st := collectorstate.New()
	pf := deltaqprocessor.NewFactoryFor(st)
	pcfg := pf.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{
		"checkout":  map[string]any{"dmax": "2s", "bins": 200},
		"inventory": map[string]any{"dmax": "500ms", "bins": 100},
		"payment":   map[string]any{"dmax": "1s", "bins": 100},
	}}).Unmarshal(pcfg))
	proc, err := pf.CreateLogs(ctx, processortest.NewNopSettings(pf.Type()), pcfg, consumertest.NewNop())
	require.NoError(t, err)
	defer func() { require.NoError(t, proc.Shutdown(ctx)) }()

	f := deltaqconnector.ClockFactoryFor(st, coretest.NewClock(coretest.At(0)))
	cfg := f.CreateDefaultConfig()
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"diagram": "checkout = inventory -> paymnet;",
		"probes":  map[string]any{"chekout": map[string]any{"qta": map[string]any{"points": []any{map[string]any{"delay": "1s", "p": 0.9}}}}},
	}).Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg), "alone, the connector knows no probe the names could be misspellings of")
	set := connectortest.NewNopSettings(f.Type())
	set.ID = component.NewID(f.Type())
	_, err = f.CreateTracesToMetrics(ctx, set, cfg, consumertest.NewNop())
	require.Error(t, err)
	assert.Equal(t, "connectors::deltaq: diagram: outcome paymnet is not a probe any deltaq processor or the connector counts (did you mean payment?)\n"+
		`probes["chekout"]: no deltaq processor, connector probe or diagram defines probe chekout (did you mean checkout?)`, err.Error())
}
