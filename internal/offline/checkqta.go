// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package offline

import (
	"errors"
	"maps"
	"slices"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/core"
	"github.com/deltaq-otel/deltaq/internal/slo"
)

// qtaOffEdges refuses a QTA point whose delay lies between two bin edges of
// its probe's layout — the front end's own, else that of a processor
// feeding it — as `deltaq slo` refuses it: deltaq.observed has no bucket
// bound there, so neither its rules nor any PromQL over the histogram count
// the instances within that delay exactly. The collector itself accepts
// such a point (its QTA verdicts are worked out at the analysis resolution,
// whatever the layout: off by at most the instances of the analysis bucket
// that holds the delay, its breach tests counting them as within), so
// `otelcol validate` does not refuse it. A probe's
// layout is its own (dmax and bins, or log-linear buckets) or the
// processor's that feeds it; points of a probe with no fixed layout (dmax:
// auto) and of an exponential histogram (histogram_fraction interpolates)
// are not judged here.
func qtaOffEdges(acfg *core.Config, procs []string, layouts map[string]map[string]deltaq.Layout) error {
	if acfg.Histogram.Exponential != nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(acfg.Probes)) {
		pc := acfg.Probes[name]
		if len(pc.QTA.Points) == 0 {
			continue
		}
		lay, ok := configuredLayout(pc.DMax, pc.Bins, pc.Binning)
		for _, p := range procs {
			if l, has := layouts[p][name]; has && !ok {
				lay, ok = l, true
			}
		}
		if !ok {
			continue
		}
		bounds, desc, err := bucketBounds(lay)
		if err != nil {
			continue // the layout's own check reports it
		}
		pr := slo.Probe{Name: name, Bounds: bounds, Layout: desc}
		for i, pt := range pc.QTA.Points {
			if reason := slo.InexactPoint(pr, pt.Delay); reason != "" {
				errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name).Field("qta").Field("points").Index(i), "%s (deltaq slo refuses it; the collector's own QTA verdict reads it at the analysis resolution, off by at most the instances of a bucket under 1/64 of the delay wide)", reason))
			}
		}
	}
	return errors.Join(errs...)
}
