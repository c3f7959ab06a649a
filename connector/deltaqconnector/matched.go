// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqconnector // import "github.com/deltaq-otel/deltaq/connector/deltaqconnector"

import (
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/deltaq-otel/deltaq/internal/autorange"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/spanmatch"
)

// SpanProbes compiles the probes the connector matches in the spans, in
// name order, as the connector does; nil when there are none. cfg has been
// validated. The command line's offline analysis matches them with it.
func SpanProbes(cfg *Config) *core.SpanProbes {
	var sp core.SpanProbes
	var rules []spanmatch.Rule
	for _, name := range slices.Sorted(maps.Keys(cfg.Matched)) {
		mp := cfg.Matched[name]
		if mp.Match == nil {
			continue // a failure rule alone, which Validate refuses
		}
		rule, failure, _ := compileMatched(name, &mp)
		rules = append(rules, rule)
		sp.Names = append(sp.Names, name)
		sp.Failures = append(sp.Failures, failure)
		var auto *core.AutoProbe
		if mp.DMaxAuto {
			auto = &core.AutoProbe{Options: autoOptions(mp.Auto, cfg.Probes[name].QTA.LastDelay()), Bins: mp.Bins}
		}
		sp.Auto = append(sp.Auto, auto)
	}
	if len(rules) == 0 {
		return nil
	}
	sp.Matcher = spanmatch.NewMatcher(rules)
	return &sp
}

// claimMatched claims in claims, for owner, the probes the connector id
// matches: a probe that a deltaq processor of the collector matches too is
// refused.
func claimMatched(claims *spanmatch.Claims, owner any, id component.ID, sp *core.SpanProbes) error {
	if sp == nil {
		return nil
	}
	return claims.Claim(owner, "connector", id.String(), sp.Names)
}

// autoOptions returns the auto-ranging options of a probe whose QTA's last
// point is at qta: its dmax_min raised to it. A dMax below a point counts
// the instances between the two as timeouts, which the point then reads as
// late: 3 spans of 300 ms among 2000 of 10 ms, a dMax chosen at 50 ms, and
// a QTA of 99.9 % within 500 ms that held under the learning phase's
// dmax_max failed, and its trigger fired, from the change alone.
func autoOptions(o autorange.Options, qta time.Duration) autorange.Options {
	if qta > o.WithDefaults().Min {
		o.Min = qta
	}
	return o
}
