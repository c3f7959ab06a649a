// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

// The names below are the output contract of the deltaq exporter and the
// deltaq connector: dashboards and alert rules depend on them. Prometheus
// (remote write, OTLP translation) sees them with '.' turned into '_' and
// the unit as a suffix: deltaq_observed_seconds_bucket/_sum/_count,
// deltaq_cdf_ratio, deltaq_quantile_seconds, deltaq_outcomes_total,
// deltaq_failure_ratio, deltaq_qta_violation, deltaq_qta_point_ratio,
// deltaq_qta_max_failure_ratio, deltaq_divergence_ratio;
// attributes become labels deltaq_probe, deltaq_series, deltaq_scenario,
// deltaq_le, deltaq_q, deltaq_outcome. The probe and outcome attributes of the output are the
// same as the input's, AttrProbe and AttrOutcome (outcome.go).

// Metric names and units.
const (
	// MetricObserved is a cumulative histogram of the probe's successful
	// delays since the stream's start (a fixed start time; a probe whose
	// layout changes starts a new stream). Explicit bounds are the bin
	// edges w, 2w, …, dMax, each success in its bin's bucket (nothing is
	// above dMax: a longer operation is a timeout); with
	// histogram::exponential it is an exponential histogram instead, of
	// OpenTelemetry's buckets (baseⁱ, baseⁱ⁺¹], base = 2^(2^−scale)
	// (deltaq.ExpIndex), at the finest scale, at most 20, at which the
	// buckets from the first bin's upper edge to dMax number at most
	// histogram::exponential::max_size, and at least −4, the coarsest of
	// Prometheus's native histograms. Count and sum are the successes'
	// count and the sum of their delays. Timeouts and failures are not in
	// it: MetricOutcomes counts them, and the improper CDF at d is the
	// successes at or below d divided by all the instances.
	MetricObserved = "deltaq.observed"
	UnitObserved   = "s"

	// MetricCDF is a gauge of the curves a ΔQ plot draws (thesis 4.2):
	// attribute AttrSeries says which curve, AttrLE the delay in seconds at
	// which the CDF is read.
	MetricCDF = "deltaq.cdf"
	UnitCDF   = "1"

	// MetricQuantile is a gauge of the delay at quantile AttrQ of the
	// observed, calculated or what-if ΔQ (AttrSeries). An unreachable
	// quantile (more than the tangible mass) has no point.
	MetricQuantile = "deltaq.quantile"
	UnitQuantile   = "s"

	// MetricOutcomes is a monotonic cumulative sum: instances since the
	// stream's start, by AttrOutcome. The stream starts with the probe's
	// first window; a probe forgotten and seen again starts a new one.
	MetricOutcomes = "deltaq.outcomes"
	UnitOutcomes   = "{instance}"

	// MetricFailureRatio is a gauge: the intangible mass of the window's
	// observed ΔQ, (timeouts + failures) / instances.
	MetricFailureRatio = "deltaq.failure_ratio"
	UnitFailureRatio   = "1"

	// MetricQTAViolation is a gauge, 1 while the window's observed ΔQ breaks
	// the probe's QTA (a point or the failure bound), else 0. Its unit is an
	// annotation so that Prometheus names it deltaq_qta_violation: a flag,
	// not a ratio.
	MetricQTAViolation = "deltaq.qta.violation"
	UnitQTAViolation   = "{violation}"

	// MetricQTAPoint is a gauge of the probe's QTA, one point per QTA step:
	// the probability the observed ΔQ must reach by the delay AttrLE.
	// MetricQTAMaxFailure is the QTA's bound on the intangible mass. Both
	// are emitted every window for each probe with a QTA, so that one alert
	// rule compares every probe with its own limits.
	MetricQTAPoint      = "deltaq.qta.point"
	UnitQTAPoint        = "1"
	MetricQTAMaxFailure = "deltaq.qta.max_failure"
	UnitQTAMaxFailure   = "1"

	// MetricDivergenceP is a gauge: the p-value of the two-sample
	// Kolmogorov–Smirnov test of the observed against the calculated ΔQ
	// (analysis package documentation), and MetricDivergenceStatistic its
	// statistic λ = √(n·m/(n+m))·D. Emitted with MetricDivergence. Their
	// units are annotations: neither is a ratio.
	MetricDivergenceP         = "deltaq.divergence.p_value"
	UnitDivergenceP           = "{probability}"
	MetricDivergenceStatistic = "deltaq.divergence.statistic"
	UnitDivergenceStatistic   = "{statistic}"

	// MetricQTASlack is a gauge of each QTA point's slack F_obs(d) − p
	// (attribute AttrLE = d): negative when the point fails.
	// MetricQTASlackMin is the smallest of them, the headline series, and
	// MetricQTAMarginMin the smallest delay margin d − Q_obs(p), in
	// seconds (no point when a quantile is unreachable within dMax).
	// MetricQTATimeToViolation is, while the slack's least-squares trend
	// over the last windows falls, how long until it projects a violation
	// (0 when the line is below zero already).
	MetricQTASlack           = "deltaq.qta.slack"
	UnitQTASlack             = "{probability}"
	MetricQTASlackMin        = "deltaq.qta.slack.min"
	UnitQTASlackMin          = "{probability}"
	MetricQTAMarginMin       = "deltaq.qta.margin.min"
	UnitQTAMarginMin         = "s"
	MetricQTATimeToViolation = "deltaq.qta.time_to_violation"
	UnitQTATimeToViolation   = "s"
	// MetricQTASlackTrendStdErr is the standard error of the slope of that
	// trend, in slack per second, once it has its windows: the slack_trend
	// trigger fires only when the slope is below zero by more than its
	// confidence's multiple of it.
	MetricQTASlackTrendStdErr = "deltaq.qta.slack.trend.stderr"
	UnitQTASlackTrendStdErr   = "1/s"
	// MetricQTASlackTrendUpper is, while the slope is significantly
	// negative, the one-sided upper confidence bound of the trend's line
	// at the slack_trend horizon: below zero exactly when the slack_trend
	// trigger's condition holds.
	MetricQTASlackTrendUpper = "deltaq.qta.slack.trend.upper"
	UnitQTASlackTrendUpper   = "{probability}"
	// MetricQTAHolds is a gauge per window and curve (AttrSeries observed
	// or calculated) of how the QTA holds: 2 for the pessimistic bound of
	// the curve's binning (so for any delays within the bins), 1 for the
	// curve only, 0 for neither (broken).
	MetricQTAHolds = "deltaq.qta.holds"
	UnitQTAHolds   = "1"

	// MetricBoundsWidth is a gauge of a calculated probe: the largest gap
	// between the CDFs of its calculated ΔQ's pessimistic and optimistic
	// bounds (the inputs' masses at the upper and lower edges of their
	// bins), the discretisation error the divergence test sets aside. A
	// width near the divergences that matter says the bins are too
	// coarse. MetricDivergenceDetectable is the smallest divergence the
	// test detects at its α with 80 % power given its instances, the
	// width included: what a quiet test could have seen.
	MetricBoundsWidth          = "deltaq.calculated.bounds.width"
	UnitBoundsWidth            = "1"
	MetricDivergenceDetectable = "deltaq.divergence.detectable"
	UnitDivergenceDetectable   = "1"

	// MetricWindow is one probe's window in the form a gateway merges
	// exactly, emitted by an agent with emit_windows: a delta histogram
	// whose start and end are the window's bounds, whose explicit bounds
	// are upper edges of the probe's bins — w, 2w, …, dMax for uniform
	// bins; for log-linear buckets their edges low … high, with the
	// attributes AttrBinningFactor and AttrBinningSteps — and whose
	// buckets hold the window's successes by bin and, above dMax, its
	// timeouts and failures, counted apart in the attributes AttrTimeout
	// and AttrFailure (integers); the sum is the successes' delays. The
	// bounds always include the first edge and dMax; between them only
	// the edges around occupied bins may be written, a bucket spanning
	// several bins holding none (sparse: a window costs what its occupied
	// bins cost). Delta temporality: meant for a gateway's deltaq
	// connector, not a Prometheus. The same instances at the analysis
	// resolution (deltaq.Fine), which merge with no layout to agree on,
	// are the bytes attribute AttrFine: for each occupied bucket, in
	// increasing order, the unsigned varints (encoding/binary) of its index
	// less the previous one's plus one (the first's: its index) and of its
	// completed instances (the rest of the window's instances, less its
	// failures, are timeouts whose end is unknown); AttrWeightSum and
	// AttrWeightSquares are Σw and Σw² over the instances' adjusted counts
	// w (doubles), for the effective count of a sampled window;
	// AttrAgentStart says when the agent's analysis began.
	MetricWindow = "deltaq.window"
	UnitWindow   = "s"
	// MetricContributors is a gauge of a gateway: the agents whose windows
	// were merged into its window, and those whose MetricWindowIdle said
	// they were up and saw no instance in it, once windows of agents have
	// arrived.
	MetricContributors = "deltaq.window.contributors"
	UnitContributors   = "{agent}"
	// MetricWindowIdle is an agent's word that it was up and saw no
	// instance in a window, sent by an agent with emit_windows for each
	// window it closes without a MetricWindow point: a delta sum of 1
	// whose start and end are the window's bounds, with AttrAgentStart. A
	// gateway counts the agent among the window's contributors and merges
	// nothing: an idle agent is not a missing one. A gateway of an older
	// release ignores it, as it ignores every metric but MetricWindow.
	MetricWindowIdle = "deltaq.window.idle"
	UnitWindowIdle   = "{window}"

	// MetricDivergence is a gauge: sup_t |F_obs(t) − F_calc(t)|, the
	// distance between the probe's observed and calculated ΔQ.
	MetricDivergence = "deltaq.divergence"
	UnitDivergence   = "1"
)

// Quality of Outcome (the QoO draft, "Quality of Outcome",
// draft-ietf-ippm-qoo-10): gauges per window of a probe with a qoo
// requirement, one point per scored ΔQ, AttrSeries observed or calculated.
// MetricQoOScore is the score, 0 (unacceptable) to 100 (optimal), the least
// of the components; MetricQoOLatency the latency component (the least
// over the requirement's percentiles, read over the completed instances;
// absent when none completed, or too few for the percentiles), MetricQoOLoss the loss component (the
// failure and timeout ratio scored between the thresholds' max_failure,
// not the ratio itself), MetricQoORate the rate component (100 or 0,
// only with a min_rate; never on the calculated series). A score withheld
// for too few instances has no point. Prometheus names them
// deltaq_qoo_score_percent, deltaq_qoo_latency_percent,
// deltaq_qoo_loss_percent and deltaq_qoo_rate_percent.
const (
	MetricQoOScore   = "deltaq.qoo.score"
	MetricQoOLatency = "deltaq.qoo.latency"
	MetricQoOLoss    = "deltaq.qoo.loss"
	MetricQoORate    = "deltaq.qoo.rate"
	UnitQoO          = "%"
)

// Attribute names.
const (
	// AttrSeries is the curve of deltaq.cdf and deltaq.quantile.
	AttrSeries = "deltaq.series"
	// AttrScenario names the what-if scenario (the whatif option) of a
	// deltaq.cdf or deltaq.quantile point of series SeriesWhatIf; the
	// other series do not carry it.
	AttrScenario = "deltaq.scenario"
	// AttrLE is the delay in seconds at which deltaq.cdf reads a curve,
	// formatted with strconv.FormatFloat(x, 'g', -1, 64).
	AttrLE = "deltaq.le"
	// AttrQ is the quantile of deltaq.quantile, formatted like AttrLE.
	AttrQ = "deltaq.q"
	// AttrService is on every series of a probe whose instances came from
	// spans of resources with a service.name (at a gateway, from agents'
	// windows that carry it): the application's services,
	// each cut to MaxNameLength bytes, sorted and joined by ",", at most
	// services::max_per_probe of them (4 by default), then ServiceOverflow
	// when further services sent instances. A service unseen for
	// services::idle_timeout leaves the list. The resource of the output
	// is the collector's own, so this is how the series of a probe are
	// sliced by application. New services make new series: the
	// cumulative ones (MetricObserved, MetricOutcomes) count from the
	// window the list changed in, with that window's start.
	AttrService = "deltaq.service"
	// ServiceOverflow ends the AttrService list of a probe when more
	// services sent its instances than the list has places, as contrib's
	// spanmetrics connector marks the series beyond its cardinality limit
	// with otel.metric.overflow.
	ServiceOverflow = "otel.metric.overflow"
	// AttrTrigger is the kind of a trigger: qta, failure, load, divergence
	// or slack_trend.
	AttrTrigger = "deltaq.trigger"
	// AttrObserved and AttrRequired are the values a trigger compared.
	AttrObserved = "deltaq.observed"
	AttrRequired = "deltaq.required"
	// AttrDelay is, in seconds, the QTA point's delay of a qta trigger and
	// the projected time to violation of a slack_trend trigger.
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
	// AttrSlowestTraceIDs, AttrTimeoutTraceIDs and AttrFailureTraceIDs name
	// the worst instances of a trigger's or snapshot record's probe in its
	// window by trace id (lowercase hex, W3C Trace Context): the slowest
	// successes, slowest first, and the first timeouts and failures; each a
	// string slice of at most worst_instances, absent when empty.
	AttrSlowestTraceIDs = "deltaq.trace_ids.slowest"
	AttrTimeoutTraceIDs = "deltaq.trace_ids.timeout"
	AttrFailureTraceIDs = "deltaq.trace_ids.failure"
	// AttrBinningFactor and AttrBinningSteps are the factor and steps of
	// a log-linear probe's MetricWindow point (integers); its low and
	// high are its first and last bounds.
	AttrBinningFactor = "deltaq.binning.factor"
	AttrBinningSteps  = "deltaq.binning.steps"
	// AttrFine, AttrWeightSum and AttrWeightSquares are a window's counts
	// at the analysis resolution and its weights (MetricWindow).
	AttrFine          = "deltaq.fine"
	AttrWeightSum     = "deltaq.weight.sum"
	AttrWeightSquares = "deltaq.weight.squares"
	// AttrAgentStart is when the agent's analysis began (Unix ns, an
	// integer) on its MetricWindow and MetricWindowIdle points: with the
	// agent's name it tells a window delivered twice (an exporter's retry
	// of a request the gateway had taken) from a window of an agent
	// restarted under the same name, which began later. Trigger and
	// snapshot records that carry AttrSnapshotID carry it too: a restarted
	// collector numbers its snapshots from 1 again.
	AttrAgentStart = "deltaq.agent.start"
)

// Values of AttrSeries.
const (
	SeriesObserved   = "observed"
	SeriesCalculated = "calculated"
	SeriesMean       = "mean"
	SeriesLower      = "lower"
	SeriesUpper      = "upper"
	SeriesQTA        = "qta"
	// SeriesWhatIf is a probe's calculated ΔQ under a what-if scenario,
	// named by AttrScenario.
	SeriesWhatIf = "whatif"
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
