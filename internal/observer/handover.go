// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package observer // import "github.com/deltaq-otel/deltaq/internal/observer"

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/deltaq-otel/deltaq/analysis"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// parked is what an observer hands to its successor across a configuration
// reload (package reload): the analysis engine with its open windows and
// history, and the output's running streams, so that the cumulative
// series continue without a reset.
type parked struct {
	engine *analysis.Engine
	start  pcommon.Timestamp
	cum    map[string]*cumulative
}

// reloadKey is the key of an observer's parked state: the component's kind
// and ID.
func (o *Observer) reloadKey() string { return o.set.Kind + "/" + o.set.ID }

// park hands the observer's state to the observer of the same component
// that the reload builds, instead of flushing the open windows. Called by
// Shutdown after the window timer stopped.
func (o *Observer) park() {
	reload.Park(o.reloadKey(), &parked{engine: o.engine, start: o.build.start, cum: o.build.cum})
	o.logger.Info("configuration reload: handing the open windows and the ΔQ history to the reloaded component")
}

// adopt takes over the state an observer of the same component parked
// before a reload; called by New, before the window timer starts.
func (o *Observer) adopt(st *parked) {
	ad := o.engine.Adopt(st.engine)
	if ad.Reason != "" {
		o.logger.Warn("configuration reload: nothing carried over; every probe starts afresh", zap.String("reason", ad.Reason))
		return
	}
	o.build.start = st.start
	o.build.cum = st.cum
	o.logger.Info("configuration reload: open windows, history, totals and trigger states carried over",
		zap.Strings("probes", ad.Carried))
	for name, why := range ad.Fresh {
		o.logger.Warn("configuration reload: the probe starts afresh", zap.String("probe", name), zap.String("reason", why))
	}
}
