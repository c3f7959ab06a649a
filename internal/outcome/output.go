// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package outcome

// The names below are the output contract of the deltaq exporter and the
// deltaq connector: dashboards and alert rules depend on them. Prometheus
// (remote write, OTLP translation) sees them with '.' turned into '_' and
// the unit as a suffix: deltaq_observed_seconds_bucket/_sum/_count,
// deltaq_cdf_ratio, deltaq_quantile_seconds, deltaq_outcomes_total,
// deltaq_failure_ratio, deltaq_qta_violation_ratio, deltaq_divergence_ratio;
// attributes become labels deltaq_probe, deltaq_series, deltaq_le, deltaq_q,
// deltaq_outcome. The probe and outcome attributes of the output are the
// same as the input's, AttrProbe and AttrOutcome (outcome.go).

// Metric names and units.
const (
	// MetricObserved is a histogram of the last closed window: explicit
	// bounds are the bin edges w, 2w, …, dMax; successes fall in their bin's
	// bucket, timeouts and failures in the overflow bucket (+Inf). Its sum is
	// the sum of the successful delays.
	MetricObserved = "deltaq.observed"
	UnitObserved   = "s"

	// MetricCDF is a gauge of the curves a ΔQ plot draws (thesis 4.2):
	// attribute AttrSeries says which curve, AttrLE the delay in seconds at
	// which the CDF is read.
	MetricCDF = "deltaq.cdf"
	UnitCDF   = "1"

	// MetricQuantile is a gauge of the delay at quantile AttrQ of the
	// observed or calculated ΔQ (AttrSeries). An unreachable quantile (more
	// than the tangible mass) has no point.
	MetricQuantile = "deltaq.quantile"
	UnitQuantile   = "s"

	// MetricOutcomes is a monotonic cumulative sum: instances since the
	// component started, by AttrOutcome.
	MetricOutcomes = "deltaq.outcomes"
	UnitOutcomes   = "{instance}"

	// MetricFailureRatio is a gauge: the intangible mass of the window's
	// observed ΔQ, (timeouts + failures) / instances.
	MetricFailureRatio = "deltaq.failure_ratio"
	UnitFailureRatio   = "1"

	// MetricQTAViolation is a gauge, 1 while the window's observed ΔQ breaks
	// the probe's QTA (a point or the failure bound), else 0.
	MetricQTAViolation = "deltaq.qta.violation"
	UnitQTAViolation   = "1"

	// MetricDivergence is a gauge: sup_t |F_obs(t) − F_calc(t)|, the
	// distance between the probe's observed and calculated ΔQ.
	MetricDivergence = "deltaq.divergence"
	UnitDivergence   = "1"
)

// Attribute names.
const (
	// AttrSeries is the curve of deltaq.cdf and deltaq.quantile.
	AttrSeries = "deltaq.series"
	// AttrLE is the delay in seconds at which deltaq.cdf reads a curve,
	// formatted with strconv.FormatFloat(x, 'g', -1, 64).
	AttrLE = "deltaq.le"
	// AttrQ is the quantile of deltaq.quantile, formatted like AttrLE.
	AttrQ = "deltaq.q"
	// AttrTrigger is the kind of a trigger: qta, failure, load or divergence.
	AttrTrigger = "deltaq.trigger"
	// AttrObserved and AttrRequired are the values a trigger compared.
	AttrObserved = "deltaq.observed"
	AttrRequired = "deltaq.required"
	// AttrDelay is the QTA point's delay in seconds of a qta trigger.
	AttrDelay = "deltaq.delay"
	// AttrSnapshotID numbers a snapshot; its records share it.
	AttrSnapshotID = "deltaq.snapshot.id"
	// AttrWindowStart and AttrWindowEnd bound a snapshot record's window
	// (RFC 3339 with nanoseconds).
	AttrWindowStart = "deltaq.window.start"
	AttrWindowEnd   = "deltaq.window.end"
	// AttrSuccess, AttrTimeout and AttrFailure are a snapshot record's
	// instance counts.
	AttrSuccess = "deltaq.success"
	AttrTimeout = "deltaq.timeout"
	AttrFailure = "deltaq.failure"
)

// Values of AttrSeries.
const (
	SeriesObserved   = "observed"
	SeriesCalculated = "calculated"
	SeriesMean       = "mean"
	SeriesLower      = "lower"
	SeriesUpper      = "upper"
	SeriesQTA        = "qta"
)

// Log event names.
const (
	// EventTrigger is the EventName of a trigger record (severity WARN).
	EventTrigger = "deltaq.trigger"
	// EventSnapshot is the EventName of a snapshot record: one per probe
	// per window of the snapshot, its body a map {"observed": {"width": w,
	// "cdf": [F(w), F(2w), …]}, "calculated": {…}} (a key is absent when the
	// window had no such ΔQ).
	EventSnapshot = "deltaq.snapshot"
)
