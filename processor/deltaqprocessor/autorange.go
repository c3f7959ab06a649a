// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaqprocessor

// Auto-ranging probes (`dmax: auto`): the probe chooses its dMax from the
// delays it observes (internal/autorange, which the deltaq connector's
// probes use too). Each change is written into the process's registry of
// probe layouts (contract.Layouts.SetLayout), from which the deltaq
// connector or exporter of the same collector moves the probe to the new
// layout at its next window boundary.

import (
	"errors"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/autorange"
)

// autoDMaxNanos checks the options of an auto probe (errs holds the bins
// error, if any) and returns its provisional dMax, dmax_max.
func (pc *ProbeConfig) autoDMaxNanos(errs []error) (int64, []error) {
	if !pc.DMaxAuto {
		return 0, append(errs, autorange.ErrNotAuto)
	}
	if pc.DMax != 0 || pc.Exponent != nil {
		errs = append(errs, errors.New("dmax, exponent: dmax: auto chooses the dMax; set no exponent"))
	}
	o := pc.autoOptions()
	errs = append(errs, o.Check()...)
	if len(errs) > 0 {
		return 0, errs
	}
	return int64(o.WithDefaults().Max), nil
}

// autoOptions returns the probe's auto-ranging options.
func (pc *ProbeConfig) autoOptions() autorange.Options {
	return autorange.Options{Min: pc.DMaxMin, Max: pc.DMaxMax, Sample: pc.DMaxSample, Period: pc.DMaxPeriod,
		ChangesPerHour: pc.DMaxChangesPerHour}
}

// rangeProbes closes the due samples of the auto probes and announces the
// changes of dMax: a log record, the registry (contract.Layouts.SetLayout) and the
// self-telemetry. Timer goroutine.
func (p *deltaqProcessor) rangeProbes(now int64) {
	for _, i := range p.m.auto {
		pr := &p.m.probes[i]
		ch, ok := pr.auto.Step(now)
		if !ok {
			continue
		}
		if !ch.Suppressed {
			p.layouts.SetLayout(p, pr.name, deltaq.Layout{DMaxNs: ch.To, Bins: pr.lay.Bins})
		}
		autorange.Log(p.logger, pr.auto, pr.name, pr.lay.Bins, ch, now)
	}
}
