package deltaqexporter // import "github.com/deltaq-otel/deltaq/exporter/deltaqexporter"

import (
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/analysis"
)

// AnalyzeTraces runs the exporter's analysis offline over recorded traces
// whose spans the deltaq processor has already mapped: every outcome
// instance goes into one window (the whole input), which is then closed
// and analysed as the exporter would, with cfg's probes, QTAs, triggers,
// quantiles and outcome diagram. Snapshots are off. It returns the
// window's result and the instance counters (counted and dropped).
func AnalyzeTraces(cfg *Config, traces ...ptrace.Traces) (*analysis.Result, analysis.Stats, error) {
	ac, err := cfg.AnalysisConfig()
	if err != nil {
		return nil, analysis.Stats{}, err
	}
	ac.Interval, ac.Lag = 0, 0
	ac.Snapshot = analysis.SnapshotConfig{}
	e, err := analysis.New(ac, time.Time{})
	if err != nil {
		return nil, analysis.Stats{}, err
	}
	b := e.Begin()
	for _, td := range traces {
		addTraces(b, td)
	}
	b.End()
	res := e.Flush(time.Time{})
	return res[0], e.Stats(), nil
}
