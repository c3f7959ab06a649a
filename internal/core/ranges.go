// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package core // import "github.com/deltaq-otel/deltaq/internal/core"

import (
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/confpath"
	"github.com/deltaq-otel/deltaq/internal/contract"
)

// Bounds of the numeric options. The upper bounds are far above any
// sensible setting; they are there so that a typing error cannot make the
// component allocate without limit or spin. The lag is bounded by
// analysis.Config.Check (at most 16 intervals).
const (
	// A window shorter than 100ms holds too few instances to estimate a
	// ΔQ, and its timer costs CPU for nothing; one longer than an hour is
	// no longer a live view.
	minInterval = 100 * time.Millisecond
	maxInterval = time.Hour
	// The observed ΔQs kept per probe take history × bins × 8 B: at most
	// 1000 × 1000 × 8 B = 8 MB per probe, ten times that for a probe with
	// log-linear buckets, read on up to deltaq.MaxGridBins = 10,000 bins.
	minHistory = 1
	maxHistory = 1000
	// The probes that no configuration names; with the history, at most
	// 100 000 × 30 × 1000 × 8 B = 24 GB at the default history and the
	// largest bin count, so the bound is a guard, not a budget.
	minMaxProbes = 1
	maxMaxProbes = 100_000
	// A probe is forgotten after at least a second of silence (and not
	// before a window has passed), and at most after a week.
	minProbeIdleTimeout = time.Second
	maxProbeIdleTimeout = 7 * 24 * time.Hour
	// One OTLP request: at least 64 KiB, so that a request holds many data
	// points (a single item larger than the bound is dropped and counted),
	// at most 64 MiB, far past the 4 MiB gRPC servers accept by default.
	minMaxRequestBytes = 64 << 10
	maxMaxRequestBytes = 64 << 20
	// maxCDFPoints is ten times the largest bin count of a probe.
	maxCDFPoints = 10 * deltaq.MaxThesisBins
	// An exponential histogram needs at least two buckets to tell delays
	// apart; the OpenTelemetry SDKs' default is 160.
	minExpMaxSize = 2
	maxExpMaxSize = 10_000
	// maxQuantiles bounds the series of the deltaq.quantile gauge per curve.
	maxQuantiles    = 32
	maxRearmWindows = 10_000
	// A snapshot holds before + 1 + ⌈after/interval⌉ windows of every
	// probe, kept in memory while it records: each window a probe's
	// observed ΔQ (and its calculated one). after is bounded in windows
	// as before is, whatever the interval.
	maxSnapshotBefore       = 1000
	maxSnapshotAfter        = time.Hour
	maxSnapshotAfterWindows = 3600 // 1h at the default interval
	minSnapshotMaxFiles     = 1
	maxSnapshotMaxFiles     = 1_000_000
	minSnapshotMaxBytes     = 1 << 20
	maxSnapshotMaxBytes     = 1 << 40
	// A probe's own dmax and bins are bounded as the deltaq processor's
	// (deltaq.MinDMax, deltaq.MaxDMax, deltaq.MaxThesisBins); a QTA's
	// delays by the longest dMax.
	minProbeBins  = 1
	maxTriggerMax = 1_000_000_000_000
	// A probe's deltaq.service label names at most 32 services of at most
	// contract.MaxNameLength bytes: about 8 KiB on each of its series. A
	// service keeps its place for at least a second and at most a week.
	minServicesMaxPerProbe = 1
	maxServicesMaxPerProbe = 32
	minServicesIdleTimeout = time.Second
	maxServicesIdleTimeout = 7 * 24 * time.Hour
)

// checkBounds checks every numeric option against the bounds a collector
// puts on it (the constants above, from the algebra's where there is one),
// and the length of the probe names, and reports every problem, each naming
// the option, the value and the bound:
//
//	"history": 1000000000 is above the maximum 1000
//
// An interval of zero or below is refused (checkLive). snapshot::max_files and
// snapshot::max_bytes are checked when snapshot::directory is set. Check,
// the one check of the options, calls it. It does not repeat what
// analysis.Config.Check reports: negative values of the options it checks,
// a QTA delay of zero, the lag, and the exact ranges (quantiles in (0, 1),
// QTA probabilities and max_failure, max_divergence in [0, 1], dmax and bins
// set together).
func (c *Config) checkBounds() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(c.checkLive())
	if c.Interval > 0 {
		add(inRange(confpath.Fields("interval"), c.Interval, minInterval, maxInterval))
	}
	add(analysisRange(confpath.Fields("history"), c.History, minHistory, maxHistory))
	add(analysisRange(confpath.Fields("max_probes"), c.MaxProbes, minMaxProbes, maxMaxProbes))
	add(analysisRange(confpath.Fields("probe_idle_timeout"), c.ProbeIdleTimeout, minProbeIdleTimeout, maxProbeIdleTimeout))
	add(c.idleBelowInterval())
	add(inRange(confpath.Fields("max_request_bytes"), c.MaxRequestBytes, minMaxRequestBytes, maxMaxRequestBytes))
	add(c.Services.check(c.Interval))
	add(inRange(confpath.Fields("cdf_points"), c.CDFPoints, 0, maxCDFPoints))
	if e := c.Histogram.Exponential; e != nil && e.MaxSize != 0 {
		add(inRange(confpath.Fields("histogram", "exponential", "max_size"), e.MaxSize, minExpMaxSize, maxExpMaxSize))
	}
	if n := len(c.Quantiles); n > maxQuantiles {
		errs = append(errs, confpath.Errorf(confpath.Fields("quantiles"), `%d values are more than the maximum %d`, n, maxQuantiles))
	}
	add(analysisRange(confpath.Fields("rearm_windows"), c.RearmWindows, 0, maxRearmWindows))
	add(analysisRange(confpath.Fields("snapshot", "before"), c.Snapshot.Before, 0, maxSnapshotBefore))
	add(analysisRange(confpath.Fields("snapshot", "after"), c.Snapshot.After, 0, maxSnapshotAfter))
	if c.Interval >= minInterval && c.Snapshot.After > 0 && c.Snapshot.After <= maxSnapshotAfter {
		if n := (c.Snapshot.After + c.Interval - 1) / c.Interval; n > maxSnapshotAfterWindows {
			errs = append(errs, confpath.Errorf(confpath.Fields("snapshot", "after"),
				"%s is %d windows of interval %s, more than the maximum %d: a snapshot keeps every window it records in memory (at most %s at this interval)",
				c.Snapshot.After, int64(n), c.Interval, maxSnapshotAfterWindows, maxSnapshotAfterWindows*c.Interval))
		}
	}
	if c.Snapshot.Directory != "" {
		// They bound the files in the directory, and nothing without one.
		add(inRange(confpath.Fields("snapshot", "max_files"), c.Snapshot.MaxFiles, minSnapshotMaxFiles, maxSnapshotMaxFiles))
		add(inRange(confpath.Fields("snapshot", "max_bytes"), c.Snapshot.MaxBytes, minSnapshotMaxBytes, maxSnapshotMaxBytes))
	}

	names := make([]string, 0, len(c.Probes))
	for name := range c.Probes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if name == "" {
			// Its series would have an empty deltaq.probe, which
			// Prometheus takes for no label at all.
			errs = append(errs, confpath.Errorf(confpath.Fields("probes").Key(name), `a probe's name must not be empty`))
			continue
		}
		if len(name) > contract.MaxNameLength {
			// The name is cut in the message: it is what is too long.
			errs = append(errs, confpath.Errorf(confpath.Fields("probes"), `the name %q… of %d bytes is longer than the maximum %d`,
				cutName(name, 32), len(name), contract.MaxNameLength))
			continue
		}
		pc := c.Probes[name]
		key := confpath.Fields("probes").Key(name)
		// Zero dmax and bins are unset; a delay of zero, like a negative
		// value and dmax without bins, is the analysis's to refuse.
		if pc.DMax > 0 {
			add(inRange(key.Field("dmax"), pc.DMax, deltaq.MinDMax, deltaq.MaxDMax))
		}
		if pc.Bins > 0 {
			add(inRange(key.Field("bins"), pc.Bins, minProbeBins, deltaq.MaxThesisBins))
		}
		for i, p := range pc.QTA.Points {
			if p.Delay > 0 {
				add(inRange(key.Field("qta").Field("points").Index(i).Field("delay"), p.Delay, 1, deltaq.MaxDMax))
			}
		}
		add(analysisRange(key.Field("triggers").Field("max_instances"), pc.Triggers.MaxInstances, 0, maxTriggerMax))
	}
	return errors.Join(errs...)
}

// checkLive refuses an interval of zero, which analysis.Config takes for an
// offline analysis: the windows of a collector close on a timer. A negative
// one gets the same words, so that the user who corrects it does not meet
// a second rule (CheckOwn leaves it out of the analysis's check).
func (c *Config) checkLive() error {
	if c.Interval <= 0 {
		return confpath.Errorf(confpath.Fields("interval"), `must be positive, got %s`, c.Interval)
	}
	return nil
}

// inRange reports v outside [lo, hi], the problem of the option at key.
func inRange[T int | int64 | time.Duration](key confpath.Path, v, lo, hi T) error {
	switch {
	case v < lo:
		return confpath.Errorf(key, "%v is below the minimum %v", v, lo)
	case v > hi:
		return confpath.Errorf(key, "%v is above the maximum %v", v, hi)
	}
	return nil
}

// analysisRange is inRange for an option that analysis.Config.Check refuses
// when negative: a negative value is reported there, once.
func analysisRange[T int | int64 | time.Duration](key confpath.Path, v, lo, hi T) error {
	if v < 0 {
		return nil
	}
	return inRange(key, v, lo, hi)
}

// cutName returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence.
func cutName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// check checks services::* against their bounds; interval is the window's
// length: a service forgotten within one window would leave and return
// every window. An idle_timeout of 0 is probe_idle_timeout's, checked
// with it.
func (c ServicesConfig) check(interval time.Duration) error {
	var errs []error
	if err := inRange(confpath.Fields("services", "max_per_probe"), c.MaxPerProbe, minServicesMaxPerProbe, maxServicesMaxPerProbe); err != nil {
		errs = append(errs, err)
	}
	if c.IdleTimeout == 0 { // probe_idle_timeout's
		return errors.Join(errs...)
	}
	if err := inRange(confpath.Fields("services", "idle_timeout"), c.IdleTimeout, minServicesIdleTimeout, maxServicesIdleTimeout); err != nil {
		errs = append(errs, err)
	} else if interval > 0 && c.IdleTimeout < interval {
		errs = append(errs, confpath.Errorf(confpath.Fields("services", "idle_timeout"), "%s is shorter than interval %s", c.IdleTimeout, interval))
	}
	return errors.Join(errs...)
}

// idleBelowInterval refuses a probe_idle_timeout, in range, shorter than
// the interval: a probe would be forgotten between two of its windows. Its
// default, 10m, is what an interval above it meets unawares: the message
// says so, and what to set.
func (c *Config) idleBelowInterval() error {
	if c.Interval <= 0 || c.ProbeIdleTimeout >= c.Interval || c.ProbeIdleTimeout < minProbeIdleTimeout {
		return nil
	}
	dflt := ""
	if c.ProbeIdleTimeout == DefaultProbeIdleTimeout {
		dflt = " (its default)"
	}
	return confpath.Errorf(confpath.Fields("probe_idle_timeout"), `%s%s is shorter than interval %s: a probe would be forgotten between two of its windows; set probe_idle_timeout to at least the interval`, c.ProbeIdleTimeout, dflt, c.Interval)
}
