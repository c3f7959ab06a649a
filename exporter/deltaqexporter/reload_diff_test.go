// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqexporter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/deltaq-otel/deltaq/exporter/deltaqexporter/internal/metadata"
	"github.com/deltaq-otel/deltaq/internal/collectorstate"
	"github.com/deltaq-otel/deltaq/internal/core/coretest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// TestReloadHandsOverLikeNoReload: an exporter reloaded mid-window (a
// SIGHUP, its shutdown, and the exporter of the same ID that the new
// configuration builds) sends the same windows as one that ran throughout
// (README, "Configuration reload"): the open windows, totals, history and
// trigger states pass to the new exporter.
func TestReloadHandsOverLikeNoReload(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			raw := diffAnalysis(r)
			newCfg := func(addr string) *Config {
				cfg := grpcConfig(addr)
				require.NoError(t, confmap.NewFromStringMap(raw).Unmarshal(cfg))
				require.NoError(t, confmap.Validate(cfg))
				return cfg
			}
			start := func(cfg *Config, st *collectorstate.State, now time.Time) (*deltaqExporter, *coretest.Clock) {
				clk := coretest.NewClock(now)
				// The same ID before and after the reload, as the collector's.
				set := exportertest.NewNopSettings(metadata.Type)
				set.ID = component.NewID(metadata.Type)
				exp, err := newExporter(context.Background(), cfg, set, st, withClock(clk))
				require.NoError(t, err)
				require.NoError(t, exp.start(context.Background(), componenttest.NewNopHost()))
				return exp, clk
			}
			ref, reloaded := otlptest.Start(t, otlptest.Options{}), otlptest.Start(t, otlptest.Options{})
			refExp, refClk := start(newCfg(ref.Addr()), collectorstate.New(), coretest.T0)
			st := collectorstate.New()
			cfg := newCfg(reloaded.Addr())
			exp, clk := start(cfg, st, coretest.T0)

			interval, lag := cfg.Interval, cfg.Lag
			const windows = 6
			spans := diffInstances(r, interval, windows)
			reloadAt := coretest.At(2*interval + time.Duration(r.Int64N(int64(interval))))
			ctx := context.Background()
			next := 0
			feed := func(until time.Time) {
				for next < len(spans) && spans[next].End.Before(until) {
					seed := r.Uint64()
					batch := spans[next : next+1]
					require.NoError(t, refExp.obs.ConsumeTraces(ctx, diffTraces(rand.New(rand.NewPCG(seed, 1)), batch)))
					require.NoError(t, exp.obs.ConsumeTraces(ctx, diffTraces(rand.New(rand.NewPCG(seed, 1)), batch)))
					next++
				}
			}
			reloadDone := false
			for w := 1; w <= windows; w++ {
				tick := coretest.At(time.Duration(w)*interval + lag)
				if !reloadDone && reloadAt.Before(tick) {
					feed(reloadAt)
					clk.Set(reloadAt)
					st.Reload.Requested()
					require.NoError(t, exp.shutdown(ctx))
					exp, clk = start(cfg, st, reloadAt)
					st.Reload.Done()
					reloadDone = true
				}
				feed(tick)
				clk.Tick(tick)
				refClk.Tick(tick)
			}
			require.NoError(t, refExp.shutdown(ctx))
			require.NoError(t, exp.shutdown(ctx))

			want, got := canonMetrics(ref.Metrics()), canonMetrics(reloaded.Metrics())
			require.NotEmpty(t, want)
			require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"), "metrics of config %v", raw)
			require.Equal(t, strings.Join(canonLogs(ref.Logs()), "\n"), strings.Join(canonLogs(reloaded.Logs()), "\n"), "logs of config %v", raw)
		})
	}
}
