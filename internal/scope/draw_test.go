// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package scope

import (
	"bytes"
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/deltaq-otel/deltaq/distribution"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

var updateGolden = flag.Bool("update-scope", false, "rewrite testdata/frame.golden")

// testWindowEnd is the timestamp of every synthetic data point.
var testWindowEnd = time.Date(2026, 11, 21, 12, 0, 5, 0, time.UTC)

// exporterPayload builds deltaq exporter output the way docs/design.md, "Output",
// describes it.
type exporterPayload struct {
	md  pmetric.Metrics
	sm  pmetric.ScopeMetrics
	cdf pmetric.NumberDataPointSlice
	qs  pmetric.NumberDataPointSlice
}

func newExporterPayload() *exporterPayload {
	p := &exporterPayload{md: pmetric.NewMetrics()}
	p.sm = p.md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	p.sm.Scope().SetName("github.com/deltaq-otel/deltaq/exporter/deltaqexporter")
	cdf := p.sm.Metrics().AppendEmpty()
	cdf.SetName(metricCDF)
	cdf.SetUnit("1")
	p.cdf = cdf.SetEmptyGauge().DataPoints()
	q := p.sm.Metrics().AppendEmpty()
	q.SetName(metricQuantile)
	q.SetUnit("s")
	p.qs = q.SetEmptyGauge().DataPoints()
	return p
}

// curve adds one deltaq.cdf series of probe at the bin edges le = i·width,
// i = 1..bins, with values f(le).
func (p *exporterPayload) curve(probe, series string, width float64, bins int, f func(float64) float64) {
	for i := 1; i <= bins; i++ {
		le := float64(i) * width
		dp := p.cdf.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
		dp.Attributes().PutStr("deltaq.probe", probe)
		dp.Attributes().PutStr(attrSeries, series)
		dp.Attributes().PutStr(attrLE, strconv.FormatFloat(le, 'g', -1, 64))
		dp.SetDoubleValue(f(le))
	}
}

func (p *exporterPayload) quantile(probe, series string, q, delay float64) {
	dp := p.qs.AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	dp.Attributes().PutStr("deltaq.probe", probe)
	dp.Attributes().PutStr(attrSeries, series)
	dp.Attributes().PutStr(attrQ, strconv.FormatFloat(q, 'g', -1, 64))
	dp.SetDoubleValue(delay)
}

func (p *exporterPayload) gauge(name, probe string, v float64) {
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	dp.Attributes().PutStr("deltaq.probe", probe)
	dp.SetDoubleValue(v)
}

// qoo adds the Quality of Outcome of one series of a probe: the score
// and the latency and loss components, each a gauge of its own as the
// connector sends them.
func (p *exporterPayload) qoo(probe, series string, score, latency, loss float64) {
	for _, g := range []struct {
		name string
		v    float64
	}{{metricQoOScore, score}, {metricQoOLatency, latency}, {metricQoOLoss, loss}} {
		m := p.sm.Metrics().AppendEmpty()
		m.SetName(g.name)
		m.SetUnit("%")
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
		dp.Attributes().PutStr("deltaq.probe", probe)
		dp.Attributes().PutStr(attrSeries, series)
		dp.SetDoubleValue(g.v)
	}
}

// qta adds a probe's QTA as the connector sends it exactly: one
// deltaq.qta.point per point, at its delay deltaq.le, and
// deltaq.qta.max_failure.
func (p *exporterPayload) qta(probe string, maxFailure float64, points ...curvePoint) {
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(metricQTAPoint)
	dps := m.SetEmptyGauge().DataPoints()
	for _, pt := range points {
		dp := dps.AppendEmpty()
		dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
		dp.Attributes().PutStr("deltaq.probe", probe)
		dp.Attributes().PutStr(attrLE, strconv.FormatFloat(pt.delay, 'g', -1, 64))
		dp.SetDoubleValue(pt.p)
	}
	p.gauge(metricQTAMaxFailure, probe, maxFailure)
}

func (p *exporterPayload) outcomes(probe string, counts map[string]int64) {
	m := p.sm.Metrics().AppendEmpty()
	m.SetName(metricOutcomes)
	m.SetUnit("{instance}")
	sum := m.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, k := range []string{"success", "timeout", "failure"} {
		if n, ok := counts[k]; ok {
			dp := sum.DataPoints().AppendEmpty()
			dp.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
			dp.Attributes().PutStr("deltaq.probe", probe)
			dp.Attributes().PutStr("deltaq.outcome", k)
			dp.SetIntValue(n)
		}
	}
}

// uniformMass is the CDF of a ΔQ with mass `mass` spread uniformly over [0, hi].
func uniformMass(hi, mass float64) func(float64) float64 {
	return func(t float64) float64 { return mass * math.Min(1, t/hi) }
}

// testQTA is the step CDF of the QTA {2ms: 0.25, 5ms: 0.5, 9ms: 0.85}.
func testQTA(t float64) float64 {
	switch {
	case t >= 0.009-1e-12:
		return 0.85
	case t >= 0.005-1e-12:
		return 0.5
	case t >= 0.002-1e-12:
		return 0.25
	}
	return 0
}

// syntheticWindow is one window of two probes: "checkout" with every series,
// inside its QTA, which also comes exactly (testQTA, failures at most 15 %:
// 1 − 0.15 is the last point's level, so the curve has no failure step),
// and Quality of Outcome scores set by latency (observed) and by loss
// (calculated);
// "search" with only an observed ΔQ, breaking its QTA, which comes only as
// the sampled curve, as from an older connector.
func syntheticWindow() pmetric.Metrics {
	p := newExporterPayload()
	const w, n = 0.001, 10 // 1 ms bins, dMax = 10 ms
	obs := uniformMass(0.008, 0.9)
	p.curve("checkout", seriesObserved, w, n, obs)
	p.curve("checkout", seriesCalculated, w, n, uniformMass(0.010, 0.95))
	p.curve("checkout", seriesMean, w, n, uniformMass(0.0085, 0.92))
	p.curve("checkout", seriesLower, w, n, func(t float64) float64 { return math.Max(0, uniformMass(0.0085, 0.92)(t)-0.08) })
	p.curve("checkout", seriesUpper, w, n, func(t float64) float64 { return math.Min(1, uniformMass(0.0085, 0.92)(t)+0.08) })
	p.curve("checkout", seriesQTA, w, n, testQTA)
	p.qta("checkout", 0.15, curvePoint{0.002, 0.25}, curvePoint{0.005, 0.5}, curvePoint{0.009, 0.85})
	// Quantiles of U[0, 8ms] with mass 0.9: delay = q/0.9 · 8ms; 0.99 is unreachable.
	for _, q := range []float64{0.25, 0.5, 0.75, 0.9} {
		p.quantile("checkout", seriesObserved, q, q/0.9*0.008)
		p.quantile("checkout", seriesCalculated, q, q/0.95*0.010)
	}
	p.outcomes("checkout", map[string]int64{"success": 900, "timeout": 60, "failure": 40})
	p.gauge(metricFailureRatio, "checkout", 0.1)
	p.gauge(metricQTAViolation, "checkout", 0)
	p.gauge(metricDivergence, "checkout", 0.125)
	p.qoo("checkout", seriesObserved, 63.25, 63.25, 100)
	p.qoo("checkout", seriesCalculated, 80, 90, 80)

	p.curve("search", seriesObserved, w, n, func(t float64) float64 {
		// Nothing before 6 ms, then 0.7 within one bin.
		return 0.7 * math.Max(0, math.Min(1, (t-0.006)/0.001))
	})
	p.curve("search", seriesQTA, w, n, testQTA)
	p.quantile("search", seriesObserved, 0.5, 0.0067)
	p.outcomes("search", map[string]int64{"success": 70, "failure": 30})
	p.gauge(metricFailureRatio, "search", 0.3)
	p.gauge(metricQTAViolation, "search", 1)
	return p.md
}

// syntheticTriggers holds one deltaq.trigger record for "search" and one
// deltaq.snapshot record.
func syntheticTriggers() plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	tr := lrs.AppendEmpty()
	tr.SetEventName(eventTrigger)
	tr.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd.Add(-time.Second)))
	tr.SetSeverityNumber(plog.SeverityNumberWarn)
	tr.SetSeverityText("WARN")
	tr.Attributes().PutStr("deltaq.probe", "search")
	tr.Attributes().PutStr(attrTrigger, "qta")
	tr.Attributes().PutDouble("deltaq.observed", 0.35)
	tr.Attributes().PutDouble("deltaq.required", 0.5)
	// One snapshot of two probes and two windows: four records, one snapshot.
	for _, probe := range []string{"checkout", "search"} {
		for w := range 2 {
			snap := lrs.AppendEmpty()
			snap.SetEventName(eventSnapshot)
			snap.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd.Add(time.Duration(w-1) * time.Second)))
			snap.Attributes().PutStr("deltaq.probe", probe)
			snap.Attributes().PutInt(contract.AttrSnapshotID, 1)
		}
	}
	return ld
}

var defaultScopeFrame = DefaultFrame

// testScope is a terminal scope of the default limits whose clock stands a
// minute after testWindowEnd: the synthetic windows and triggers are of its
// day, and shown by their time of day alone.
func testScope() *scopeState {
	s := newScopeState(DefaultLimits())
	s.now = func() time.Time { return testWindowEnd.Add(time.Minute) }
	return s
}

// TestRenderScopeGolden renders the synthetic window with the default plot size
// and compares it with testdata/frame.golden (go test -run Golden -update-scope
// rewrites it; review the diff by eye).
func TestRenderScopeGolden(t *testing.T) {
	s := testScope()
	s.addMetrics(syntheticWindow())
	s.addLogs(syntheticTriggers())
	got := renderScope(s, defaultScopeFrame)

	golden := filepath.Join("testdata", "frame.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-scope to create it)", err)
	}
	if got != string(want) {
		t.Errorf("frame differs from %s:\n--- got ---\n%s\n--- want ---\n%s", golden, got, want)
	}
}

// TestRenderScopeContent checks the facts of the frame independently of the
// golden file's layout.
func TestRenderScopeContent(t *testing.T) {
	s := testScope()
	s.addMetrics(syntheticWindow())
	s.addLogs(syntheticTriggers())
	got := renderScope(s, defaultScopeFrame)
	assertContainsAll(t, "frame", got,
		"2 probes · 1 metric batches · 1 triggers · 1 snapshots",
		"── checkout ── window ending 12:00:05.000Z",
		"QTA met │ failure 10.00% │ divergence 0.125 │ in window: – (no window before it to count from)\n"+
			"total: success 900, timeout 60, failure 40\n"+
			"QTA: F(2ms) ≥ 0.25, F(5ms) ≥ 0.5, F(9ms) ≥ 0.85, failure ≤ 15%\n"+
			// Scores rounded down to one decimal.
			"QoO: observed 63.2 set by latency (latency 63.2, loss 100) │ calculated 80 set by loss (latency 90, loss 80)\n",
		"── search ── window ending 12:00:05.000Z",
		"QTA BROKEN │ failure 30.00% │ in window: – (no window before it to count from)\ntotal: success 70, failure 30\n 1.00 │",
		"# observed   * calculated   + mean   . 95% band   = QTA",
		// Quantiles of U[0, 8ms]·0.9: q/0.9 · 8ms, e.g. 0.5/0.9 · 8ms = 4.444ms.
		"observed     2.222ms   4.444ms   6.667ms       8ms",
		"12:00:04.000Z WARN  search qta deltaq.observed=0.35 deltaq.required=0.5",
	)
	if strings.Index(got, "checkout") > strings.Index(got, "search") {
		t.Errorf("probes not in name order:\n%s", got)
	}
}

// exactQTAWindow is one window of probe "api" (dMax 100 ms) with the QTA
// {20ms: 0.5, 70ms: 0.9}, failures at most 1 %, as a curve reported every
// 4 ms, the way a connector reporting fewer CDF points sends it: a corner
// counts from the first edge at or after its delay (deltaq.QTA.RequiredDeltaQ),
// so the curve reaches 0.9 only at 72 ms, and 1 − 0.01 = 0.99 at dMax. With
// exact, the QTA also comes exactly.
func exactQTAWindow(exact bool) pmetric.Metrics {
	p := newExporterPayload()
	p.curve("api", seriesQTA, 0.004, 25, func(t float64) float64 {
		switch {
		case t >= 0.1-1e-12:
			return 0.99
		case t >= 0.07:
			return 0.9
		case t >= 0.02-1e-12:
			return 0.5
		}
		return 0
	})
	if exact {
		p.qta("api", 0.01, curvePoint{0.02, 0.5}, curvePoint{0.07, 0.9})
	}
	return p.md
}

// TestScopeExactQTA: a QTA received exactly is stated and drawn at its own
// delays; without it the sampled curve is drawn. On a plot 100 columns wide
// of dMax 100 ms, column c stands for (c+1) ms, and of 11 rows, row 1 for
// 0.9: the exact step to 0.9 is at column 69 (70 ms), the sampled one later
// (72 ms). The steps are deltaq.QTA.RequiredSteps: the points, then the
// failure bound 1 − 0.01 at dMax.
func TestScopeExactQTA(t *testing.T) {
	small := Frame{Width: 100, Height: 11}
	s := newScopeState(DefaultLimits())
	s.addMetrics(exactQTAWindow(true))
	steps, ok := qtaSteps(s.probes["api"].qta, 0.1)
	if want := []curvePoint{{0.02, 0.5}, {0.07, 0.9}, {0.1, 0.99}}; !ok || !slices.Equal(steps, want) {
		t.Errorf("QTA steps %v (%v), want %v", steps, ok, want)
	}
	frame := renderScope(s, small)
	assertContainsAll(t, "frame", frame, "QTA: F(20ms) ≥ 0.5, F(70ms) ≥ 0.9, failure ≤ 1%\n")
	row := []rune(scopePlotRows(t, frame)[1])
	if len(row) < 70 || row[69] != markQTA || row[68] == markQTA {
		t.Errorf("exact QTA: row 0.9 is %q, want its first = at column 69", string(row))
	}

	s = newScopeState(DefaultLimits())
	s.addMetrics(exactQTAWindow(false))
	frame = renderScope(s, small)
	if strings.Contains(frame, "QTA:") {
		t.Errorf("a QTA stated without deltaq.qta.point:\n%s", frame)
	}
	row = []rune(scopePlotRows(t, frame)[1])
	if i := slices.Index(row, markQTA); i <= 69 {
		t.Errorf("sampled QTA: row 0.9 is %q, want its first = after column 69", string(row))
	}

	// A QTA probability outside [0, 1] is malformed.
	p := newExporterPayload()
	p.qta("api", 1.5, curvePoint{0.02, -0.1})
	s.addMetrics(p.md)
	if s.malformed != 2 {
		t.Errorf("malformed = %d, want 2", s.malformed)
	}
}

// TestScopeRefusesReadingsOutOfRange: a failure ratio or a divergence
// outside [0, 1] and a negative outcome count are malformed, not shown (was:
// a failure ratio of 1e300 printed as 300 digits across the header).
func TestScopeRefusesReadingsOutOfRange(t *testing.T) {
	s := newScopeState(DefaultLimits())
	p := newExporterPayload()
	p.gauge(metricFailureRatio, "api", 1e300)
	p.gauge(metricDivergence, "api", -0.5)
	p.outcomes("api", map[string]int64{"success": -5, "timeout": 2})
	s.addMetrics(p.md)
	a := s.probes["api"]
	if s.malformed != 3 || a.failure.ok || a.divergence.ok {
		t.Errorf("malformed = %d, failure %+v, divergence %+v; want 3 and neither", s.malformed, a.failure, a.divergence)
	}
	if _, ok := a.outcomes["success"]; ok || a.outcomes["timeout"].total != 2 {
		t.Errorf("outcomes %v, want timeout 2 only", a.outcomes)
	}
	if frame := renderScope(s, defaultScopeFrame); strings.Contains(frame, "failure 1") || !strings.Contains(frame, "ignored 3 malformed") {
		t.Errorf("frame:\n%s", frame)
	}
}

// scopePlotRows returns the plot rows (the lines with a y-axis bar) of the first
// probe in a frame, without the axis label and bar.
func scopePlotRows(t *testing.T, frame string) []string {
	t.Helper()
	var rows []string
	for _, line := range strings.Split(frame, "\n") {
		if i := strings.Index(line, " │"); i == 5 {
			rows = append(rows, line[i+len(" │"):])
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no plot rows in:\n%s", frame)
	}
	return rows
}

// TestRenderPlotGeometry places a ΔQ that is 0 up to 5 ms and 1 from 6 ms on
// dMax = 10 ms over 10 columns (one per ms, column c at delay (c+1) ms): columns
// 0-4 sit on the bottom row, column 5 rises from just above it to the top row,
// and columns 5-9 sit on the top row.
func TestRenderPlotGeometry(t *testing.T) {
	s := newScopeState(DefaultLimits())
	p := newExporterPayload()
	p.curve("p", seriesObserved, 0.001, 10, func(t float64) float64 {
		if t > 0.0055 {
			return 1
		}
		return 0
	})
	s.addMetrics(p.md)
	const h = 5
	rows := scopePlotRows(t, renderScope(s, Frame{Width: 10, Height: h}))
	if len(rows) != h {
		t.Fatalf("got %d plot rows, want %d: %q", len(rows), h, rows)
	}
	want := []string{
		"     #####",
		"     #",
		"     #",
		"     #",
		"#####",
	}
	for r := range want {
		if rows[r] != want[r] {
			t.Errorf("row %d = %q, want %q (plot %q)", r, rows[r], want[r], rows)
		}
	}
}

// TestCDFInterpolation checks the curve evaluation against closed forms.
func TestCDFInterpolation(t *testing.T) {
	// Uniform mass 0.8 over [0, 4ms] given at its 1 ms bin edges: F(t) = 0.2·t/ms.
	pts := []curvePoint{{0.001, 0.2}, {0.002, 0.4}, {0.003, 0.6}, {0.004, 0.8}}
	for _, c := range []struct{ t, want float64 }{
		{0, 0}, {0.0005, 0.1}, {0.001, 0.2}, {0.0025, 0.5}, {0.004, 0.8}, {0.009, 0.8},
	} {
		if got := linearCDF(pts, c.t); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("linearCDF(%g) = %g, want %g", c.t, got, c.want)
		}
	}
	steps := []curvePoint{{0.002, 0.25}, {0.005, 0.5}}
	for _, c := range []struct{ t, want float64 }{
		{0.001, 0}, {0.002, 0.25}, {0.0049, 0.25}, {0.005, 0.5}, {1, 0.5},
	} {
		if got := stepCDF(steps, c.t); got != c.want {
			t.Errorf("stepCDF(%g) = %g, want %g", c.t, got, c.want)
		}
	}
}

// TestAddMetricsLatestWindow checks that a later window replaces the curves
// and quantiles of the previous one (a batch of the same window adds to
// them: TestScopeWindowInSeveralRequests), keeps the probes and outcome
// kinds it does not resend, and counts malformed points instead of failing.
func TestAddMetricsLatestWindow(t *testing.T) {
	s := newScopeState(DefaultLimits())
	s.addMetrics(syntheticWindow())

	p := newExporterPayload()
	p.curve("checkout", seriesObserved, 0.002, 5, uniformMass(0.01, 1))
	p.quantile("checkout", seriesObserved, 0.5, 0.005)
	bad := p.cdf.AppendEmpty() // no probe
	bad.Attributes().PutStr(attrSeries, seriesObserved)
	bad.Attributes().PutStr(attrLE, "0.001")
	bad = p.cdf.AppendEmpty() // unparsable delay
	bad.Attributes().PutStr("deltaq.probe", "checkout")
	bad.Attributes().PutStr(attrSeries, seriesObserved)
	bad.Attributes().PutStr(attrLE, "soon")
	bad = p.cdf.AppendEmpty() // NaN value
	bad.Attributes().PutStr("deltaq.probe", "checkout")
	bad.Attributes().PutStr(attrSeries, seriesObserved)
	bad.Attributes().PutStr(attrLE, "0.003")
	bad.SetDoubleValue(math.NaN())
	p.outcomes("checkout", map[string]int64{"success": 950})
	s.addMetrics(shiftWindow(p.md, time.Second))

	c := s.probes["checkout"]
	if got := len(c.curves); got != 1 || len(c.curves[seriesObserved]) != 5 {
		t.Errorf("curves after second window: %d series, %d observed points; want 1 series of 5 points", got, len(c.curves[seriesObserved]))
	}
	if got := c.quantiles[seriesObserved][0.5]; got != 0.005 || len(c.quantiles) != 1 {
		t.Errorf("quantiles after second window: %v", c.quantiles)
	}
	if c.outcomes["success"].total != 950 || c.outcomes["timeout"].total != 60 {
		t.Errorf("outcomes %v: want success updated to 950, timeout kept at 60", c.outcomes)
	}
	if c.divergence.ok {
		t.Errorf("divergence %+v: a later window without one has none", c.divergence)
	}
	if s.malformed != 3 {
		t.Errorf("malformed = %d, want 3", s.malformed)
	}
	if s.probes["search"] == nil || len(s.probes["search"].curves) != 2 {
		t.Errorf("probe search not resent: its curves must stay")
	}
	if frame := renderScope(s, defaultScopeFrame); !strings.Contains(frame, "ignored 3 malformed data points") {
		t.Errorf("frame does not report the malformed points:\n%s", frame)
	}

	// A window of tangible mass 0.1 has every quantile of search (0.5)
	// unreachable: it sends its curve and no quantile, and the previous
	// window's median goes.
	s.addMetrics(unreachableQuantilesWindow())
	if q := s.probes["search"].quantiles; len(q) != 0 {
		t.Errorf("search's quantiles after a window without any: %v, want none", q)
	}
}

// unreachableQuantilesWindow is a window of search after syntheticWindow's:
// an observed ΔQ of tangible mass 0.1, so no quantile point.
func unreachableQuantilesWindow() pmetric.Metrics {
	p := newExporterPayload()
	p.curve("search", seriesObserved, 0.001, 10, uniformMass(0.01, 0.1))
	return shiftWindow(p.md, time.Second)
}

// shiftWindow moves every data point of md by d.
func shiftWindow(md pmetric.Metrics, d time.Duration) pmetric.Metrics {
	for m := range otlprecv.Metrics(md) {
		for _, dp := range numberPoints(m).All() {
			dp.SetTimestamp(pcommon.NewTimestampFromTime(dp.Timestamp().AsTime().Add(d)))
		}
	}
	return md
}

// brokenThenIdle is a window of probe api that breaks its QTA, with a
// failure ratio and a divergence, and then, one second later, a window
// without instances as the connector sends it: curves and outcome counts,
// no failure ratio, QTA verdict or divergence.
func brokenThenIdle() (broken, idle pmetric.Metrics) {
	p := newExporterPayload()
	p.curve("api", seriesObserved, 0.001, 10, uniformMass(0.01, 0.75))
	p.outcomes("api", map[string]int64{"success": 30, "timeout": 10})
	p.gauge(metricFailureRatio, "api", 0.25)
	p.gauge(metricQTAViolation, "api", 1)
	p.gauge(metricDivergence, "api", 0.3)
	q := newExporterPayload()
	q.curve("api", seriesMean, 0.001, 10, uniformMass(0.01, 0.75))
	q.outcomes("api", map[string]int64{"success": 30, "timeout": 10})
	return p.md, shiftWindow(q.md, time.Second)
}

// TestScopeReadingsAreTheWindows: the failure ratio, QTA verdict and
// divergence shown are the latest window's; a window without instances has
// none (was: the last window with instances said "QTA BROKEN" under every
// later window's time). A window sent in several requests keeps those of
// its earlier requests.
func TestScopeReadingsAreTheWindows(t *testing.T) {
	s := testScope()
	broken, idle := brokenThenIdle()
	s.addMetrics(broken)
	if frame := renderScope(s, defaultScopeFrame); !strings.Contains(frame, "QTA BROKEN │ failure 25.00% │ divergence 0.300") {
		t.Fatalf("the broken window:\n%s", frame)
	}
	s.addMetrics(idle)
	p := s.probes["api"]
	if p.failure.ok || p.violation.ok || p.divergence.ok {
		t.Errorf("after a window without instances: failure %+v, violation %+v, divergence %+v; want none", p.failure, p.violation, p.divergence)
	}
	if frame := renderScope(s, defaultScopeFrame); !strings.Contains(frame, "window ending 12:00:06.000Z\nQTA - │ in window: success 0, timeout 0\ntotal: success 30, timeout 10\n") {
		t.Errorf("the window without instances:\n%s", frame)
	}

	// The next window in two requests: the verdict, then the failure ratio.
	part := newExporterPayload()
	part.gauge(metricQTAViolation, "api", 0)
	s.addMetrics(shiftWindow(part.md, 2*time.Second))
	part = newExporterPayload()
	part.gauge(metricFailureRatio, "api", 0.01)
	s.addMetrics(shiftWindow(part.md, 2*time.Second))
	if !p.violation.ok || p.violation.v != 0 || !p.failure.ok || p.failure.v != 0.01 || p.divergence.ok {
		t.Errorf("a window in two requests: failure %+v, violation %+v, divergence %+v", p.failure, p.violation, p.divergence)
	}
}

// TestTriggersKeepNewest adds more triggers than the scope keeps, out of order.
func TestTriggersKeepNewest(t *testing.T) {
	s := newScopeState(DefaultLimits())
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for _, sec := range []int{5, 1, 9, 3, 7, 2, 8, 4, 6, 0} {
		lr := lrs.AppendEmpty()
		lr.SetEventName(eventTrigger)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd.Add(time.Duration(sec) * time.Second)))
		lr.Attributes().PutStr("deltaq.probe", "p"+strconv.Itoa(sec))
	}
	other := lrs.AppendEmpty() // not an event the scope shows
	other.Body().SetStr("hello")
	s.addLogs(ld)
	if s.triggersSeen != 10 || len(s.triggers) != maxTriggers {
		t.Fatalf("seen %d kept %d, want 10 and %d", s.triggersSeen, len(s.triggers), maxTriggers)
	}
	for i, ev := range s.triggers {
		if want := "p" + strconv.Itoa(i+2); ev.probe != want {
			t.Errorf("trigger %d is %s, want %s (the 8 newest in time order)", i, ev.probe, want)
		}
	}
}

func TestRenderScopeEmpty(t *testing.T) {
	got := renderScope(newScopeState(DefaultLimits()), defaultScopeFrame)
	want := "ΔQ scope · 0 probes · 0 metric batches · 0 triggers · 0 snapshots\n\nwaiting for deltaq metrics…\n\ntriggers: none\n"
	if got != want {
		t.Errorf("empty frame:\n%q\nwant\n%q", got, want)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var listeningRe = regexp.MustCompile(`listening for OTLP/gRPC metrics and logs on (\S+)`)

// withOnce sets Once and Timeout d.
func withOnce(d time.Duration) func(*Options) {
	return func(o *Options) { o.Once, o.Timeout = true, d }
}

// startScope runs Serve with the options set by with in the background and returns the
// address it listens on, its stdout and its result.
func startScope(t *testing.T, with ...func(*Options)) (addr string, stdout *lockedBuffer, done <-chan error) {
	t.Helper()
	o := Options{Listen: "127.0.0.1:0", Frame: DefaultFrame, Limits: DefaultLimits()}
	for _, set := range with {
		set(&o)
	}
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, o, stdout, stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listeningRe.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stdout, errc
		}
		select {
		case err := <-errc:
			t.Fatalf("scope ended before listening: %v; stderr: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("scope not listening after 10s; stderr: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exportTo sends ld (when not nil) and then md to the scope at addr, as the
// exporter does.
func exportTo(t *testing.T, addr string, ld *plog.Logs, md pmetric.Metrics) {
	t.Helper()
	conn := otlptest.Dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ld != nil {
		if _, err := plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(*ld)); err != nil {
			t.Fatalf("export logs: %v", err)
		}
	}
	if _, err := pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(md)); err != nil {
		t.Fatalf("export metrics: %v", err)
	}
}

// sendOnce sends ld and md to a scope --once at addr and waits for it to end
// (done) after its first metrics batch.
func sendOnce(t *testing.T, addr string, done <-chan error, ld plog.Logs, md pmetric.Metrics) {
	t.Helper()
	exportTo(t, addr, &ld, md)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("scope --once: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("scope --once did not exit after the first metrics batch")
	}
}

// TestScopeOnceOverOTLP sends a trigger and a window to the running scope
// over OTLP/gRPC, as the exporter does, and checks that --once prints one frame
// of them, without screen control codes, and exits.
func TestScopeOnceOverOTLP(t *testing.T) {
	addr, stdout, done := startScope(t, withOnce(20*time.Second))
	sendOnce(t, addr, done, syntheticTriggers(), syntheticWindow())
	s := newScopeState(DefaultLimits())
	s.addLogs(syntheticTriggers())
	s.addMetrics(syntheticWindow())
	if got, want := stdout.String(), renderScope(s, defaultScopeFrame); got != want {
		t.Errorf("--once printed:\n%s\nwant:\n%s", got, want)
	}
}

// TestScopeOnceTimeout: with nothing sent, --once gives up after --timeout.
func TestScopeOnceTimeout(t *testing.T) {
	_, stdout, done := startScope(t, withOnce(200*time.Millisecond))
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no metrics within --timeout 200ms") {
			t.Errorf("error %v, want a timeout", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("scope --once ignored --timeout")
	}
	if stdout.String() != "" {
		t.Errorf("printed %q without metrics", stdout.String())
	}
}

// TestScopeRedraw: without --once, every batch redraws the screen from the top.
func TestScopeRedraw(t *testing.T) {
	addr, stdout, done := startScope(t, func(o *Options) { o.Timeout = time.Second })
	exportTo(t, addr, nil, syntheticWindow())
	if err := <-done; err != nil {
		t.Fatalf("scope: %v", err)
	}
	out := stdout.String()
	if !strings.HasPrefix(out, "\x1b[H\x1b[2J") || !strings.Contains(out, "── checkout ──") {
		t.Errorf("no clear-and-redraw frame in %q", out)
	}
}

// TestScopeEscapesNames sends, over OTLP, a window and a trigger whose probe
// name, outcome, series and trigger attributes carry terminal control
// sequences and a bidi override: the --once frame shows them escaped, so
// that a sender cannot clear, retitle or reorder the screen.
func TestScopeEscapesNames(t *testing.T) {
	addr, stdout, done := startScope(t, withOnce(20*time.Second))
	p := newExporterPayload()
	p.curve(evilName, seriesObserved, 0.001, 10, uniformMass(0.008, 0.9))
	p.quantile(evilName, seriesObserved, 0.5, 0.004)
	p.quantile(evilName, "series\u202e\x1b[8m", 0.5, 0.004)
	p.outcomes(evilName, map[string]int64{"success": 9})
	// An outcome value of the sender's own, with a C1 CSI.
	oc := p.sm.Metrics().At(p.sm.Metrics().Len() - 1).Sum().DataPoints().AppendEmpty()
	oc.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	oc.Attributes().PutStr("deltaq.probe", evilName)
	oc.Attributes().PutStr("deltaq.outcome", "lost\u009b2J")
	oc.SetIntValue(1)
	ld := plog.NewLogs()
	tr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	tr.SetEventName(eventTrigger)
	tr.SetTimestamp(pcommon.NewTimestampFromTime(testWindowEnd))
	tr.SetSeverityText("WARN\x1b[2K")
	tr.Attributes().PutStr("deltaq.probe", evilName)
	tr.Attributes().PutStr(attrTrigger, "qta\r")
	tr.Attributes().PutStr("note\x1b", "x\u2066y\xff")
	sendOnce(t, addr, done, ld, p.md)
	out := stdout.String()
	assertNoControls(t, "frame", out)
	assertContainsAll(t, "frame", out,
		"── "+evilEscaped+" ── window ending",
		`lost\u009b2J 1`,
		`series\u202e\x1b[8m`,
		`WARN\x1b[2K `+evilEscaped+` qta\r note\x1b=x\u2066y\xff`,
	)
}

// TestScopeKeepsWhatIfScenariosApart: two what-if scenarios of one probe
// are two curves, named after them, not one curve of both.
func TestScopeKeepsWhatIfScenariosApart(t *testing.T) {
	m := pcommon.NewMap()
	m.PutStr(attrSeries, "whatif")
	m.PutStr(attrScenario, "faster_payment")
	if got := seriesOf(m); got != "whatif faster_payment" {
		t.Errorf("seriesOf = %q, want %q", got, "whatif faster_payment")
	}
	m.Remove(attrScenario)
	if got := seriesOf(m); got != "whatif" {
		t.Errorf("without a scenario: %q", got)
	}
}

// TestScopeDrawsBeforeTheFirstBatch: the terminal says what it waits for
// before anything arrives, as the page does, not a blank screen.
func TestScopeDrawsBeforeTheFirstBatch(t *testing.T) {
	_, stdout, done := startScope(t, func(o *Options) { o.Timeout = 300 * time.Millisecond })
	if err := <-done; err != nil {
		t.Fatalf("scope: %v", err)
	}
	if out := stdout.String(); !strings.HasPrefix(out, "\x1b[H\x1b[2J") || !strings.Contains(out, "waiting for deltaq metrics…") {
		t.Errorf("nothing drawn before the first batch: %q", out)
	}
}

// TestRenderScopeSilentSource: once the windows stop coming for three of
// their intervals (at least 5 s), the header says so, where the last frame
// stood unchanged as if live; the next window clears it.
func TestRenderScopeSilentSource(t *testing.T) {
	s := testScope()
	now := time.Now()
	s.now = func() time.Time { return now }
	s.addMetrics(shiftWindow(syntheticWindow(), time.Second))
	s.addMetrics(shiftWindow(syntheticWindow(), 2*time.Second))
	if got := renderScope(s, defaultScopeFrame); strings.Contains(got, "no metrics") {
		t.Errorf("a live source said silent:\n%s", got)
	}
	now = now.Add(4 * time.Second)
	if got := renderScope(s, defaultScopeFrame); strings.Contains(got, "no metrics") {
		t.Errorf("silent after 4 s:\n%s", got)
	}
	now = now.Add(8 * time.Second)
	got := renderScope(s, defaultScopeFrame)
	if want := "no metrics for 12s, where a window came every 1s: has the collector stopped, or stopped sending here?"; !strings.Contains(got, want) {
		t.Errorf("silent for 12 s, the frame does not say %q:\n%s", want, got)
	}
	s.addMetrics(shiftWindow(syntheticWindow(), 3*time.Second))
	if got := renderScope(s, defaultScopeFrame); strings.Contains(got, "no metrics") {
		t.Errorf("a window came, still silent:\n%s", got)
	}
}

// TestRenderScopeSilentSourceLongerInterval: a collector restarted with
// a longer interval (1 s, then 10 s) was said silent 5 s after each of its
// windows, for as long as the scope ran: the interval was the shortest
// step ever seen. It is the step of the last windows.
func TestRenderScopeSilentSourceLongerInterval(t *testing.T) {
	s := testScope()
	now := time.Now()
	s.now = func() time.Time { return now }
	for i := 1; i <= 3; i++ {
		s.addMetrics(shiftWindow(syntheticWindow(), time.Duration(i)*time.Second))
	}
	for i := 1; i <= 3; i++ {
		s.addMetrics(shiftWindow(syntheticWindow(), time.Duration(3+10*i)*time.Second))
	}
	now = now.Add(9 * time.Second)
	if got := renderScope(s, defaultScopeFrame); strings.Contains(got, "no metrics") {
		t.Errorf("9 s after a window of a source of a window every 10 s, said silent:\n%s", got)
	}
	now = now.Add(22 * time.Second)
	got := renderScope(s, defaultScopeFrame)
	if want := "no metrics for 31s, where a window came every 10s"; !strings.Contains(got, want) {
		t.Errorf("silent for 31 s, the frame does not say %q:\n%s", want, got)
	}
}

// TestScopeRedrawsWithoutBatches: a frame that changes without a batch —
// the terminal resized, the source silent — is redrawn within a second,
// not left as it was until the next batch, which may never come.
func TestScopeRedrawsWithoutBatches(t *testing.T) {
	var rows atomic.Int64
	rows.Store(3)
	_, stdout, done := startScope(t, func(o *Options) {
		o.Timeout = 2500 * time.Millisecond
		o.Screen = func() (int, int) { return int(rows.Load()), 80 }
	})
	time.Sleep(300 * time.Millisecond)
	rows.Store(40)
	if err := <-done; err != nil {
		t.Fatalf("scope: %v", err)
	}
	frames := strings.Split(stdout.String(), "\x1b[H\x1b[2J")
	if last := frames[len(frames)-1]; !strings.Contains(last, "waiting for deltaq metrics…") {
		t.Errorf("not redrawn on 40 rows after a resize from 3; frames: %q", frames)
	}
}

// plotRowRe matches a row of a plot and its axis.
var plotRowRe = regexp.MustCompile(`^.{5} │|^ {6}└`)

// TestScopePlotFitsTheTerminal: on a terminal narrower than the plot, the
// plot is drawn as wide as the terminal: each of its rows wrapped into two,
// and the curves were lost in the breaks.
func TestScopePlotFitsTheTerminal(t *testing.T) {
	addr, stdout, done := startScope(t, func(o *Options) {
		o.Timeout = time.Second
		o.Screen = func() (int, int) { return 200, 50 }
	})
	exportTo(t, addr, nil, syntheticWindow())
	if err := <-done; err != nil {
		t.Fatalf("scope: %v", err)
	}
	frames := strings.Split(stdout.String(), "\x1b[H\x1b[2J")
	last := frames[len(frames)-1]
	if !strings.Contains(last, "── checkout ──") {
		t.Fatalf("no window drawn: %q", last)
	}
	for _, l := range strings.Split(last, "\n") {
		if plotRowRe.MatchString(l) && utf8.RuneCountInString(l) > 50 {
			t.Errorf("plot row of %d columns on a terminal of 50: %q", utf8.RuneCountInString(l), l)
		}
	}
}

// TestDelayAxisLabelsApart: under a plot too narrow for its three delay
// labels, each label is written whole or not at all, with a space between
// any two, and the end (dMax) always: they ran into one another and read as
// other numbers, "54001.08e+04s" under a plot of 3 h 20 columns wide.
func TestDelayAxisLabelsApart(t *testing.T) {
	for _, xmax := range []float64{1.954e-6, 2.5e-5, 0.1, 10800} {
		end, mid := distribution.FormatDuration(xmax), distribution.FormatDuration(xmax/2)
		for width := 8; width <= 40; width++ {
			var b strings.Builder
			renderDelayAxis(&b, xmax, width)
			line := strings.TrimSuffix(b.String(), "\n")
			fields := strings.Fields(line)
			if len(fields) == 0 || fields[len(fields)-1] != end || len([]rune(line)) != width+7 {
				t.Errorf("dMax %gs, width %d: axis %q, want %q ending at column %d", xmax, width, line, end, width+7)
				continue
			}
			want := []string{"0", mid, end}
			for _, f := range fields[:len(fields)-1] {
				if i := slices.Index(want, f); i < 0 || i == 2 {
					t.Errorf("dMax %gs, width %d: axis %q has %q, not one of %q", xmax, width, line, f, want)
				} else {
					want = want[i+1:]
				}
			}
		}
	}
	var b strings.Builder
	renderDelayAxis(&b, 10800, 40)
	if got, want := b.String(), "      0                 5400s         1.08e+04s\n"; got != want {
		t.Errorf("a wide plot: axis %q, want %q", got, want)
	}
}

// percentCases: failure ratios and how both views write them, to two
// decimals unless two would read 0 or 100 for a ratio that is neither (a
// failure of 0.003 % under a QTA allowing 0.001 % read "failure 0.00%"
// beside "QTA BROKEN").
var percentCases = []struct {
	ratio float64
	want  string
}{
	{0, "0.00"},
	{0.1, "10.00"},
	{0.12345, "12.35"},
	{0.00003, "0.003"},
	{0.00001, "0.001"},
	{0.0000123, "0.0012"},
	{0.99999, "99.999"},
	{0.9999999, "99.99999"},
	{1, "100.00"},
}

func TestPercentText(t *testing.T) {
	for _, c := range percentCases {
		if got := percentText(c.ratio); got != c.want {
			t.Errorf("percentText(%v) = %q, want %q", c.ratio, got, c.want)
		}
	}
}
