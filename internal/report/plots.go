// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package report

import (
	"fmt"
	"sort"

	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/figure"
	"github.com/deltaq-otel/deltaq/internal/printable"
)

// WritePlots draws into dir, for every probe with an observed or
// calculated ΔQ of the whole input, its ΔQ plot (figure.DrawCDF: observed
// solid, calculated dashed, the band of its last windows, the QTA, dMax),
// and for every probe with windows its plot over time. It returns the
// files written.
func (r *Report) WritePlots(dir string) ([]string, error) {
	files, err := figure.NewFiles(dir)
	if err != nil {
		return nil, err
	}
	var written []string
	for i := range r.whole.Probes {
		p := &r.whole.Probes[i]
		if p.Observed == nil && p.Calculated == nil {
			continue
		}
		cp := &figure.CDF{Title: "ΔQ of " + printable.String(p.Name), QTA: p.QTA}
		if p.Observed != nil {
			cp.Curves = append(cp.Curves, figure.Curve{Label: "observed", DQ: *p.Observed, Color: figure.Observed})
		}
		if p.Calculated != nil {
			cp.Curves = append(cp.Curves, figure.Curve{Label: "calculated", DQ: *p.Calculated, Color: figure.Calculated, Dashed: true})
		}
		if b := r.bands[p.Name]; b != nil {
			cp.Band, cp.BandLabel = b, fmt.Sprintf("95 %% band (last %d windows)", b.K)
		}
		path := files.Path(p.Name, ".png")
		if err := figure.DrawCDF(path, cp); err != nil {
			return written, fmt.Errorf("plot of %s: %w", printable.String(p.Name), err)
		}
		written = append(written, path)
	}
	for _, name := range r.windowProbes() {
		s := r.series(name)
		path := files.Path(name, ".windows.png")
		if err := figure.DrawTimeSeries(path, s); err != nil {
			return written, fmt.Errorf("plot over time of %s: %w", printable.String(name), err)
		}
		written = append(written, path)
	}
	return written, nil
}

// windowProbes returns, sorted, the probes with instances in a kept window.
func (r *Report) windowProbes() []string {
	seen := map[string]bool{}
	var names []string
	for _, row := range r.rows {
		for _, p := range row.probes {
			if !seen[p.name] {
				seen[p.name] = true
				names = append(names, p.name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// series returns the values of probe in the windows in which it has
// instances.
func (r *Report) series(probe string) *figure.TimeSeries {
	s := &figure.TimeSeries{Title: "ΔQ of " + printable.String(probe) + " per window of " + distribution.FormatDuration(r.cfg.Interval.Seconds()),
		Interval: r.cfg.Interval, Quantiles: r.qs}
	if pc, ok := r.cfg.Probes[probe]; ok && (len(pc.QTA.Points) > 0 || pc.QTA.MaxFailure > 0) {
		mf := pc.QTA.MaxFailure
		s.MaxFailure = &mf
	}
	for _, row := range r.rows {
		for _, p := range row.probes {
			if p.name == probe {
				s.Starts = append(s.Starts, row.start)
				s.Values = append(s.Values, p.quantiles)
				s.Failure = append(s.Failure, p.failure)
			}
		}
	}
	return s
}
