// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import "time"

// Layout is the shape of a probe's observed histogram, the one type a
// layout has wherever it is kept: the deltaq processor's probe, the
// registry that carries it to the connector and the exporter of the same
// collector (contract.Layouts), the analysis engine's probes and windows,
// and the command line's checks. It is either
//
//   - Bins uniform bins of width DMaxNs/Bins up to dMax = DMaxNs,
//     upper-inclusive like a DeltaQ's, LogLinear zero; or
//   - the log-linear buckets LogLinear, with DMaxNs = LogLinear.High and
//     Bins = 0: their ΔQ is read on the uniform grid Grid gives.
//
// dMax is in integer nanoseconds, as spans measure delays; the widths the
// methods return are in seconds, like every ΔQ of the package. The zero
// Layout is none (not Valid). Layouts are comparable: two are the same
// layout exactly when they are equal, so a layout keys a map.
//
// BinningConfig is not a Layout: it is the configuration's form of
// log-linear buckets, with its options' names and checks, which
// BinningConfig.LogLinear turns into the LogLinear of a layout.
type Layout struct {
	// DMaxNs is dMax, in nanoseconds.
	DMaxNs int64
	// Bins is the number of uniform bins; 0 for log-linear buckets.
	Bins int
	// LogLinear is the log-linear buckets; zero for uniform bins.
	LogLinear LogLinear
}

// LogLinearLayout returns the layout of log-linear buckets ll (dMax =
// ll.High), or false when ll is no valid binning (LogLinear.Edges fails):
// a log-linear layout made here can be counted (NewLogLinearHistogram)
// and read on its grid without further checks.
func LogLinearLayout(ll LogLinear) (Layout, bool) {
	if _, err := ll.Edges(); err != nil {
		return Layout{}, false
	}
	return Layout{DMaxNs: ll.High, LogLinear: ll}, true
}

// Equal reports whether l and o are the same layout (l == o), field by
// field: == on the struct, six words, is a call to memequal, which the
// gateway's merge makes for every window it agrees with its probe.
func (l Layout) Equal(o Layout) bool {
	return l.DMaxNs == o.DMaxNs && l.Bins == o.Bins && l.LogLinear.Factor == o.LogLinear.Factor &&
		l.LogLinear.Low == o.LogLinear.Low && l.LogLinear.High == o.LogLinear.High &&
		l.LogLinear.Steps == o.LogLinear.Steps
}

// IsLogLinear reports whether the layout has log-linear buckets.
func (l Layout) IsLogLinear() bool { return l.LogLinear != (LogLinear{}) }

// Valid reports whether the layout has a positive dMax and either 1 to
// MaxBins uniform bins, or log-linear buckets that end at dMax and no bin
// count. It reads the fields only: whether the buckets themselves are
// valid is LogLinearLayout's check.
func (l Layout) Valid() bool {
	if l.IsLogLinear() {
		return l.Bins == 0 && l.DMaxNs > 0 && l.LogLinear.High == l.DMaxNs
	}
	return l.DMaxNs > 0 && l.Bins > 0 && l.Bins <= MaxBins
}

// DMax returns dMax as a duration.
func (l Layout) DMax() time.Duration { return time.Duration(l.DMaxNs) }

// Grid returns the uniform grid the layout's ΔQ is on: its bin width in
// seconds and its bin count. For uniform bins they are dMax/Bins and Bins;
// for log-linear buckets, the grid LogLinear.GridWidth(MaxGridBins) on
// which their ΔQ is read (LogLinearHistogram.DeltaQ). The layout must be
// valid.
func (l Layout) Grid() (width float64, bins int) {
	if l.IsLogLinear() {
		return l.LogLinear.GridWidth(MaxGridBins)
	}
	return float64(l.DMaxNs) / 1e9 / float64(l.Bins), l.Bins
}
