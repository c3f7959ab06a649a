package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import "github.com/deltaq-otel/deltaq/internal/observer"

// The names of the exporter's output contract, the same as the deltaq
// connector's: dashboards and alert rules depend on them. Their meanings
// are documented where they are defined, in the observer package that
// builds the output.

// Metric names and units.
const (
	MetricObserved     = observer.MetricObserved
	UnitObserved       = observer.UnitObserved
	MetricCDF          = observer.MetricCDF
	UnitCDF            = observer.UnitCDF
	MetricQuantile     = observer.MetricQuantile
	UnitQuantile       = observer.UnitQuantile
	MetricOutcomes     = observer.MetricOutcomes
	UnitOutcomes       = observer.UnitOutcomes
	MetricFailureRatio = observer.MetricFailureRatio
	UnitFailureRatio   = observer.UnitFailureRatio
	MetricQTAViolation = observer.MetricQTAViolation
	UnitQTAViolation   = observer.UnitQTAViolation
	MetricDivergence   = observer.MetricDivergence
	UnitDivergence     = observer.UnitDivergence
)

// Attribute names.
const (
	AttrProbe       = observer.AttrProbe
	AttrSeries      = observer.AttrSeries
	AttrLE          = observer.AttrLE
	AttrQ           = observer.AttrQ
	AttrOutcome     = observer.AttrOutcome
	AttrTrigger     = observer.AttrTrigger
	AttrObserved    = observer.AttrObserved
	AttrRequired    = observer.AttrRequired
	AttrDelay       = observer.AttrDelay
	AttrSnapshotID  = observer.AttrSnapshotID
	AttrWindowStart = observer.AttrWindowStart
	AttrWindowEnd   = observer.AttrWindowEnd
	AttrSuccess     = observer.AttrSuccess
	AttrTimeout     = observer.AttrTimeout
	AttrFailure     = observer.AttrFailure
)

// Values of AttrSeries.
const (
	SeriesObserved   = observer.SeriesObserved
	SeriesCalculated = observer.SeriesCalculated
	SeriesMean       = observer.SeriesMean
	SeriesLower      = observer.SeriesLower
	SeriesUpper      = observer.SeriesUpper
	SeriesQTA        = observer.SeriesQTA
)

// Log event names.
const (
	EventTrigger  = observer.EventTrigger
	EventSnapshot = observer.EventSnapshot
)
