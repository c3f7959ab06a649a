// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package coretest // import "github.com/deltaq-otel/deltaq/internal/core/coretest"

import (
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/analysis"
)

// InvalidConfig is a section of a component's testdata/config.yaml, named
// deltaq/<Name>, whose analysis options are invalid, and a part of the
// message that refuses it.
type InvalidConfig struct {
	Name, Want string
}

// InvalidConfigs are the invalid analysis options every component that
// squashes core.Config tests: each component's testdata/config.yaml
// has a section per entry, and its config test checks that the collector's
// validation refuses it with Want.
var InvalidConfigs = []InvalidConfig{
	{"bad_diagram", `diagram: diagram:1:`},
	{"empty_diagram", `diagram: the outcome diagram defines no outcome`},
	{"two_diagrams", `diagram, diagram_file: set one or the other, not both`},
	{"bad_qta", `probes["checkout"].qta.points[1].delay: 150ms does not follow 250ms of points[0] (delays must increase)`},
	{"trigger_without_qta", `the qta and failure triggers need a qta`},
	{"dmax_without_bins", `probes["checkout"].bins: must be set together with dmax`},
	{"lag_too_long", `lag: 1m0s is more than 16 intervals`},
	{"zero_interval", `interval: must be positive`},
	{"bad_quantile", `quantiles: 1.5 is not in (0, 1)`},
	{"missing_snapshot_dir", `snapshot.directory:`},
	// Out of bounds. 1e9 is a float in YAML, integral and within an int:
	// it is decoded exactly and refused here.
	{"interval_too_short", `interval: 1ns is below the minimum 100ms`},
	{"interval_too_long", `interval: 2h0m0s is above the maximum 1h0m0s`},
	{"history_too_long", `history: 1000000000 is above the maximum 1000`},
	{"history_zero", `history: 0 is below the minimum 1`},
	{"max_probes_zero", `max_probes: 0 is below the minimum 1`},
	{"max_probes_too_many", `max_probes: 100001 is above the maximum 100000`},
	{"probe_idle_timeout_too_short", `probe_idle_timeout: 500ms is below the minimum 1s`},
	{"probe_idle_timeout_too_long", `probe_idle_timeout: 192h0m0s is above the maximum 168h0m0s`},
	{"probe_idle_timeout_below_interval", `probe_idle_timeout: 2s is shorter than interval 5s`},
	{"max_request_bytes_too_small", `max_request_bytes: 1000 is below the minimum 65536`},
	{"max_request_bytes_too_large", `max_request_bytes: 1000000000 is above the maximum 67108864`},
	{"cdf_points_negative", `cdf_points: -1 is below the minimum 0`},
	{"cdf_points_too_many", `cdf_points: 10001 is above the maximum 10000`},
	{"too_many_quantiles", `quantiles: 33 values are more than the maximum 32`},
	{"rearm_windows_too_many", `rearm_windows: 10001 is above the maximum 10000`},
	{"snapshot_before_too_many", `snapshot.before: 1000000000 is above the maximum 1000`},
	{"snapshot_after_too_long", `snapshot.after: 1000000h0m0s is above the maximum 1h0m0s`},
	// 1h is in range, but 36,000 windows of 100ms held in memory.
	{"snapshot_after_too_many_windows", `snapshot.after: 1h0m0s is 36000 windows of interval 100ms, more than the maximum 3600: a snapshot keeps every window it records in memory (at most 6m0s at this interval)`},
	{"empty_probe_name", `probes[""]: a probe's name must not be empty`},
	{"snapshot_max_files_zero", `snapshot.max_files: 0 is below the minimum 1`},
	{"snapshot_max_bytes_too_small", `snapshot.max_bytes: 1000 is below the minimum 1048576`},
	{"probe_bins_too_many", `probes["checkout"].bins: 5000 is above the maximum 1000`},
	{"probe_dmax_too_long", `probes["checkout"].dmax: 25h0m0s is above the maximum 24h0m0s`},
	{"qta_delay_too_long", `probes["checkout"].qta.points[1].delay: 25h0m0s is above the maximum 24h0m0s`},
	{"max_instances_too_many", `probes["checkout"].triggers.max_instances: 10000000000000 is above the maximum 1000000000000`},
}

// NoUnit ends the message that refuses a duration written without a unit.
const NoUnit = " has no unit; write a duration such as 500ms or 2s"

// UndecodableConfigs are sections, as InvalidConfigs, refused while
// decoding: the values validation would see are not the values written.
var UndecodableConfigs = []InvalidConfig{
	// Decoded, 500 would be 500ns.
	{"dmax_without_unit", `probes["checkout"].dmax: 500` + NoUnit},
	{"interval_without_unit", `interval: 5` + NoUnit},
	// Decoded, 1e20 would be -9223372036854775808.
	{"history_huge", `history: 100000000000000000000 is out of the integer range [-9223372036854775808, 9223372036854775807]`},
	{"before_fraction", `snapshot.before: 2.5 is not an integer`},
}

// SetFull sets on want the analysis options that the section deltaq/full of
// each component's testdata/config.yaml writes alike: quantiles, the probe
// "checkout" (dMax 2s over 200 bins, the component's own QTA points qta, a
// 5% failure bound, every trigger), rearm_windows and the snapshot section.
// The options the sections write differently are each component test's.
func SetFull(want *analysis.Config, qta ...analysis.QTAPoint) {
	want.Quantiles = []float64{0.5, 0.99}
	want.Probes = map[string]analysis.ProbeConfig{"checkout": {
		DMax: 2 * time.Second, Bins: 200,
		QTA:      analysis.QTA{Points: qta, MaxFailure: 0.05},
		Triggers: analysis.Triggers{QTA: true, Failure: true, MaxInstances: 10000, MaxDivergence: 0.2},
	}}
	want.RearmWindows = 3
	want.Snapshot = analysis.SnapshotConfig{Enabled: true, Before: 2, After: 10 * time.Second, Directory: "testdata", MaxFiles: 10, MaxBytes: 16 << 20}
}

// ReferencedProbes builds the analysis engine of cfg, failing the test when
// it cannot, and returns the probes it references: with a diagram (inline or
// from diagram_file), the diagram's outcomes, which shows it was parsed.
func ReferencedProbes(t testing.TB, cfg analysis.Config) []string {
	t.Helper()
	e, err := analysis.New(cfg, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return e.ReferencedProbes()
}
