// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"math"
	"testing"
	"time"
)

// Known values of the ramp from 100/s to 500/s over 40 s, worked by hand:
// the linear ramp adds 10/s per second; in steps of 5 s each step holds the
// linear ramp's rate at its start, 100 + 10·5i for step i; from 40 s on λ is
// 500/s. Without a ramp λ is the arrival rate throughout.
func TestRateAt(t *testing.T) {
	cfg := base()
	if got := cfg.RateAt(time.Hour); got != 100 {
		t.Errorf("no ramp: RateAt(1h) = %v, want 100", got)
	}
	cfg.ArrivalRate, cfg.RampTo, cfg.RampOver = 100, 500, 40*time.Second
	for _, c := range []struct {
		step time.Duration
		at   time.Duration
		want float64
	}{
		{0, 0, 100},
		{0, 10 * time.Second, 200},
		{0, 25 * time.Second, 350},
		{0, 40 * time.Second, 500},
		{0, time.Hour, 500},
		{5 * time.Second, 0, 100},
		{5 * time.Second, 5*time.Second - 1, 100},
		{5 * time.Second, 5 * time.Second, 150},
		{5 * time.Second, 39 * time.Second, 450},
		{5 * time.Second, 40 * time.Second, 500},
	} {
		cfg.RampStep = c.step
		if got := cfg.RateAt(c.at); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("step %v: RateAt(%v) = %v, want %v", c.step, c.at, got, c.want)
		}
	}
	cfg.RampTo = 20 // a ramp down
	cfg.RampStep = 0
	if got := cfg.RateAt(20 * time.Second); got != 60 {
		t.Errorf("ramp down: RateAt(20s) = %v, want 60", got)
	}
}

// arrivalsIn counts the jobs that arrived in [from, to) and checks that each
// carries the rate RateAt gives at its arrival.
func arrivalsIn(t *testing.T, cfg Config, r *record, from, to time.Duration) int {
	t.Helper()
	n := 0
	count := func(in Instance) {
		if in.Probe != ProbeJob || in.Start < from || in.Start >= to {
			return
		}
		n++
		if want := cfg.RateAt(in.Start); in.Rate != want {
			t.Fatalf("job arrived at %v with rate %v, RateAt gives %v", in.Start, in.Rate, want)
		}
	}
	for _, e := range r.ended {
		count(e.in)
	}
	for _, in := range r.open {
		count(in)
	}
	return n
}

// The arrivals of a ramp are a Poisson process of the current rate: the
// number in a window is Poisson with mean ∫λ over the window, so it lies
// within 4 standard deviations (√mean) of it, short of a 1-in-15 000 chance
// per window (the normal tail beyond 4σ is 6.3e−5). In steps of 5 s from
// 50/s to 450/s over 40 s, the means are 5·(50 + 50i); linearly from 100/s
// to 500/s over 40 s, the mean over [a, b) is (b − a)·(λ(a) + λ(b))/2.
// arrivalsIn checks that every job carries the rate of its arrival.
func TestRampArrivalsArePoisson(t *testing.T) {
	cfg := base()
	cfg.ServiceRate = [2]float64{1000, 1000}
	cfg.K = 1000
	cfg.ArrivalRate, cfg.RampTo, cfg.RampOver, cfg.RampStep = 50, 450, 40*time.Second, 5*time.Second
	_, r := simulate(t, cfg, 60*time.Second)
	const step = 5 * time.Second
	for i := range 12 { // 8 steps of the ramp, then 20 s at 450/s
		from := time.Duration(i) * step
		want := 5 * min(50+50*float64(i), 450)
		got := arrivalsIn(t, cfg, r, from, from+step)
		if math.Abs(float64(got)-want) > 4*math.Sqrt(want) {
			t.Errorf("steps: %d arrivals in [%v, %v), want %.0f ± %.0f", got, from, from+step, want, 4*math.Sqrt(want))
		}
	}
	// Poisson, not merely the right mean: over the 60 one-second windows the
	// dispersion Σ (n − m)²/m is χ² with 60 degrees of freedom, of mean 60
	// and standard deviation √120 ≈ 11; evenly spaced arrivals would give 0.
	var dispersion float64
	for i := range 60 {
		from := time.Duration(i) * time.Second
		m := cfg.RateAt(from) // constant over the second: the steps are whole seconds
		n := float64(arrivalsIn(t, cfg, r, from, from+time.Second))
		dispersion += (n - m) * (n - m) / m
	}
	t.Logf("dispersion over 60 one-second windows: %.1f (χ²₆₀: 60 ± 11)", dispersion)
	if dispersion < 60-4*11 || dispersion > 60+4*11 {
		t.Errorf("dispersion %.1f over 60 one-second windows, want χ²₆₀: 60 ± 44", dispersion)
	}

	cfg.ArrivalRate, cfg.RampTo, cfg.RampStep = 100, 500, 0
	_, r = simulate(t, cfg, 40*time.Second)
	lambda := func(d time.Duration) float64 { return 100 + 10*d.Seconds() }
	for i := range 8 {
		from, to := time.Duration(i)*step, time.Duration(i+1)*step
		want := step.Seconds() * (lambda(from) + lambda(to)) / 2
		got := arrivalsIn(t, cfg, r, from, to)
		if math.Abs(float64(got)-want) > 4*math.Sqrt(want) {
			t.Errorf("linear: %d arrivals in [%v, %v), want %.0f ± %.0f", got, from, to, want, 4*math.Sqrt(want))
		}
	}
}
