// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
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

// Two processors define checkout and checkouts, and the connector sets a
// QTA on both. Made before the processor that defines checkout, the one
// that defines checkouts ran the connector's check with checkouts alone
// registered, took checkout for its misspelling, and the collector refused
// a valid configuration, or not, by the order it made the processors in.
// Their configurations, validated before anything is made, declare their
// probes (contract.Layouts.Declare), and the checks made while components
// are made leave a declared probe to the start. A real misspelling is
// still refused when the components are made.
func TestProbesOfAProcessorMadeLaterAreNoMisspelling(t *testing.T) {
	ctx := context.Background()
	connector := map[string]any{"probes": map[string]any{
		"checkout":  map[string]any{"qta": map[string]any{"points": []any{map[string]any{"delay": "1s", "p": 0.9}}}},
		"checkouts": map[string]any{"qta": map[string]any{"points": []any{map[string]any{"delay": "1s", "p": 0.9}}}},
	}}
	for _, c := range []struct {
		name     string
		validate bool   // the processors' configurations validated first, as the collector does
		conn     string // the probe the connector names besides checkouts
		want     string // the error making the second processor, "" for none
	}{
		{"validated", true, "checkout", ""},
		{"not validated", false, "checkout", `probes["checkout"]: no deltaq processor, connector probe or diagram defines probe checkout (did you mean checkouts?)`},
		{"misspelled", true, "chekouts", `probes["chekouts"]: no deltaq processor, connector probe or diagram defines probe chekouts (did you mean checkouts?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := collectorstate.New()
			pf := deltaqprocessor.NewFactoryFor(st)
			pcfgs := make([]component.Config, 2)
			for i, probe := range []string{"checkouts", "checkout"} {
				pcfgs[i] = pf.CreateDefaultConfig()
				require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{
					probe: map[string]any{"dmax": "2s", "bins": 200}}}).Unmarshal(pcfgs[i]))
				if c.validate {
					require.NoError(t, confmap.Validate(pcfgs[i]))
				}
			}
			f := deltaqconnector.ClockFactoryFor(st, coretest.NewClock(coretest.At(0)))
			cfg := f.CreateDefaultConfig()
			probes := map[string]any{"checkouts": connector["probes"].(map[string]any)["checkouts"],
				c.conn: connector["probes"].(map[string]any)["checkout"]}
			require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": probes}).Unmarshal(cfg))
			set := connectortest.NewNopSettings(f.Type())
			set.ID = component.NewID(f.Type())
			conn, err := f.CreateTracesToMetrics(ctx, set, cfg, consumertest.NewNop())
			require.NoError(t, err)
			defer func() { require.NoError(t, conn.Shutdown(ctx)) }()
			// The collector makes a pipeline from its end: the connector,
			// then its processors, checkouts' first.
			for i, id := range []string{"a", "b"} {
				pset := processortest.NewNopSettings(pf.Type())
				pset.ID = component.MustNewIDWithName("deltaq", id)
				proc, err := pf.CreateTraces(ctx, pset, pcfgs[i], consumertest.NewNop())
				if i == 0 && c.want != "" {
					require.Error(t, err)
					assert.Equal(t, "connectors::deltaq: "+c.want, err.Error())
					return
				}
				require.NoError(t, err, "processor %s", id)
				defer func() { require.NoError(t, proc.Shutdown(ctx)) }()
			}
			require.NoError(t, conn.Start(ctx, componenttest.NewNopHost()), "every processor made, the start finds checkout")
		})
	}
}

// TestDeclaredProbesLastOneConfiguration: the probes a configuration
// declares are forgotten once its components start. A collector reloaded
// from processors defining checkout to one defining checkouts, its
// connector still naming checkout, kept checkout declared from the first
// configuration: making the second's components left it to the start, so
// that validate passed the misspelling the start refused, and every
// configuration's names piled up in the declarations.
func TestDeclaredProbesLastOneConfiguration(t *testing.T) {
	ctx := context.Background()
	st := collectorstate.New()
	pf := deltaqprocessor.NewFactoryFor(st)
	f := deltaqconnector.ClockFactoryFor(st, coretest.NewClock(coretest.At(0)))
	qta := map[string]any{"qta": map[string]any{"points": []any{map[string]any{"delay": "1s", "p": 0.9}}}}
	// build validates the processor's configuration, then makes the
	// connector and the processor, as the collector does, and starts them.
	build := func(probe string) (stop func(), err error) {
		pcfg := pf.CreateDefaultConfig()
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{
			probe: map[string]any{"dmax": "2s", "bins": 200}}}).Unmarshal(pcfg))
		require.NoError(t, confmap.Validate(pcfg))
		cfg := f.CreateDefaultConfig()
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"probes": map[string]any{"checkout": qta}}).Unmarshal(cfg))
		set := connectortest.NewNopSettings(f.Type())
		set.ID = component.NewID(f.Type())
		conn, err := f.CreateTracesToMetrics(ctx, set, cfg, consumertest.NewNop())
		require.NoError(t, err)
		proc, err := pf.CreateTraces(ctx, processortest.NewNopSettings(pf.Type()), pcfg, consumertest.NewNop())
		if err != nil {
			require.NoError(t, conn.Shutdown(ctx))
			return nil, err
		}
		require.NoError(t, conn.Start(ctx, componenttest.NewNopHost()))
		require.NoError(t, proc.Start(ctx, componenttest.NewNopHost()))
		return func() {
			require.NoError(t, proc.Shutdown(ctx))
			require.NoError(t, conn.Shutdown(ctx))
		}, nil
	}
	stop, err := build("checkout")
	require.NoError(t, err)
	stop()
	_, err = build("checkouts")
	require.Error(t, err, "the reloaded configuration's misspelling, refused when its components are made")
	assert.Equal(t, `connectors::deltaq: probes["checkout"]: no deltaq processor, connector probe or diagram defines probe checkout (did you mean checkouts?)`, err.Error())
}
