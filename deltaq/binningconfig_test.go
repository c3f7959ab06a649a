// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestBinningConfigLogLinear: a valid binning gives its layout, and each
// problem of one names its option under binning, the messages the
// processor and a gateway's connector both put under the probe's path.
func TestBinningConfigLogLinear(t *testing.T) {
	good := BinningConfig{Kind: BinningLogLinear, Factor: 10, Low: time.Millisecond, High: 10 * time.Second, Steps: 10}
	ll, errs := good.LogLinear()
	if len(errs) != 0 || ll != (LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}) {
		t.Fatalf("LogLinear() = %+v, %v; want the layout", ll, errs)
	}
	for _, c := range []struct {
		edit func(*BinningConfig)
		want string
	}{
		{func(b *BinningConfig) { b.Kind = "linear" }, `binning.kind: must be log-linear, got "linear"`},
		{func(b *BinningConfig) { b.Factor = 1 }, "binning.factor: must be at least 2, got 1"},
		{func(b *BinningConfig) { b.Steps = 15 }, "binning.steps: must be a positive multiple of binning.factor 10, got 15"},
		{func(b *BinningConfig) { b.Low = 0 }, "binning.low: must be in (0s, binning.high 10s), got 0s"},
		{func(b *BinningConfig) { b.High = 48 * time.Hour }, "binning.high: must be in [1µs, 24h0m0s], got 48h0m0s"},
		{func(b *BinningConfig) { b.High = 5 * time.Second }, "binning: high 5s is not low 1ms times a power of the factor 10; use 1s or 10s"},
		// The power above 24h is no choice: only the one below is named.
		{func(b *BinningConfig) { b.Factor, b.Steps, b.Low, b.High = 2, 2, time.Microsecond, 24*time.Hour },
			"binning: high 24h0m0s is not low 1µs times a power of the factor 2; use 19h5m19.476736s"},
		{func(b *BinningConfig) { b.Low, b.Steps = 1, 1000 }, "binning: 7300 buckets, more than 1000; use fewer steps or magnitudes"},
	} {
		b := good
		c.edit(&b)
		if _, errs := b.LogLinear(); len(errs) != 1 || errs[0].Error() != c.want {
			t.Errorf("%+v: %v, want %q", b, errors.Join(errs...), c.want)
		}
	}
	if _, errs := (BinningConfig{}).LogLinear(); len(errs) != 5 || !strings.HasPrefix(errs[0].Error(), "binning.kind: ") {
		t.Errorf("the zero binning: %v; want its five options named", errors.Join(errs...))
	}
}
