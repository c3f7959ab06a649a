// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"strings"
	"time"

	"github.com/deltaq-otel/deltaq/internal/confpath"
)

// MinDMax and MaxDMax bound a probe's dMax as a configuration gives it:
// directly (the deltaq processor's dmax) or as the high end of its
// log-linear buckets (BinningConfig.High). With at most MaxThesisBins
// bins, MinDMax keeps every bin at least 1ns wide. The thesis form
// DeltaBase·2ⁿ·N has its own bounds through n and N: from 977ns (n = −10,
// N = 1) to 1024s (n = 10, N = 1000).
const (
	MinDMax = time.Microsecond
	MaxDMax = 24 * time.Hour
)

// BinningConfig is a probe's log-linear binning as a configuration gives
// it, DTrace's llquantize (LogLinear): one bucket [0, Low), then each
// magnitude [Low·Factorᵐ, Low·Factorᵐ⁺¹) up to High cut into linear
// buckets of width Low·Factorᵐ⁺¹/Steps. It is the deltaq processor's
// `binning` option and the one a connector or exporter pins the same
// buckets with (`probes::NAME::binning`); the tags are the options' names.
// It is the configuration's shape, durations and a kind with their checks,
// not a layout: LogLinear gives the buckets of the probe's Layout.
type BinningConfig struct {
	// Kind is log-linear, the only kind (uniform bins are set by bins).
	Kind string `mapstructure:"kind"`
	// Factor is the ratio between magnitudes, at least 2.
	Factor int64 `mapstructure:"factor"`
	// Low and High bound the magnitudes: High = Low·Factorᴹ for some
	// M ≥ 1. High is the probe's dMax, in [MinDMax, MaxDMax].
	Low  time.Duration `mapstructure:"low"`
	High time.Duration `mapstructure:"high"`
	// Steps is the number of linear steps of a magnitude, a multiple of
	// Factor (Steps − Steps/Factor buckets a magnitude).
	Steps int64 `mapstructure:"steps"`
}

// BinningLogLinear is the one value of BinningConfig.Kind.
const BinningLogLinear = "log-linear"

// LogLinear returns the buckets of b, or every problem with them, each a
// confpath.Error at its option under binning ("binning.factor: must be at
// least 2, got 1"), for the caller to put under the probe's path
// (confpath.Under). Beyond what
// LogLinear.Edges checks, High is in [MinDMax, MaxDMax] and the buckets
// are at most MaxThesisBins, as the bins of a uniform probe: each is a
// bucket of the probe's observed histogram.
func (b BinningConfig) LogLinear() (LogLinear, []error) {
	var errs []error
	if b.Kind != BinningLogLinear {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning", "kind"), "must be %s, got %q", BinningLogLinear, b.Kind))
	}
	if b.Factor < 2 {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning", "factor"), "must be at least 2, got %d", b.Factor))
	}
	if b.Steps < max(b.Factor, 1) || (b.Factor > 0 && b.Steps%b.Factor != 0) {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning", "steps"), "must be a positive multiple of binning.factor %d, got %d", b.Factor, b.Steps))
	}
	if b.Low <= 0 || b.Low >= b.High {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning", "low"), "must be in (0s, binning.high %v), got %v", b.High, b.Low))
	}
	if b.High < MinDMax || b.High > MaxDMax {
		errs = append(errs, confpath.Errorf(confpath.Fields("binning", "high"), "must be in [%v, %v], got %v", MinDMax, MaxDMax, b.High))
	}
	if len(errs) > 0 {
		return LogLinear{}, errs
	}
	ll := LogLinear{Factor: b.Factor, Low: int64(b.Low), High: int64(b.High), Steps: b.Steps}
	edges, err := ll.Edges()
	switch {
	case err != nil:
		// The power of the factor, with its valid neighbours, or buckets
		// of fractional nanoseconds.
		return LogLinear{}, []error{confpath.Errorf(confpath.Fields("binning"), "%s", strings.TrimPrefix(err.Error(), "deltaq: LogLinear: "))}
	case len(edges)-1 > MaxThesisBins:
		return LogLinear{}, []error{confpath.Errorf(confpath.Fields("binning"), "%d buckets, more than %d; use fewer steps or magnitudes", len(edges)-1, MaxThesisBins)}
	}
	return ll, nil
}
