// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package earlywarning

import (
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// probe is the probe the timeline follows: the job, the outcome the
// diagram calculates from its two stages.
const probe = "job"

// ramp is one run: the workload's topology and its load schedule.
type ramp struct {
	// name says which run it is in the table; demo marks the runs of the
	// demo's own configuration (examples/demo/collector.yaml, μ₁ = μ₂ =
	// 200/s, K = 10) instead of testdata/collector.yaml's (mu, k).
	name     string
	demo     bool
	topology string
	// from and to bound λ, moved linearly over `over` (dqworkload
	// -ramp-step 0); it stays at `to` after.
	from, to float64
	over     time.Duration
	// capacity is the λ at which the load ρ reaches 1: μ/2 for the shared
	// server, which serves both stages, μ for the tandem's workers.
	capacity float64
	seed     uint64
}

// mu is μ₁ = μ₂ of the runs of testdata/collector.yaml, and k the
// buffers' capacity K; demoMu and demoK those of the demo's workload
// defaults.
const (
	mu     = 1000.0
	k      = 50
	demoMu = 200.0
	demoK  = 10
)

// service returns the ramp's μ and K.
func (r ramp) service() (float64, int) {
	if r.demo {
		return demoMu, demoK
	}
	return mu, k
}

// rate is the scheduled λ at d after the workload's start.
func (r ramp) rate(d time.Duration) float64 {
	f := min(1, max(0, d.Seconds()/r.over.Seconds()))
	return r.from + f*(r.to-r.from)
}

// window is one window of the timeline: what the connector reported for the
// probe in the window that ended at end.
type window struct {
	end time.Time
	// total is the probe's deltaq.outcomes, all outcomes, since the
	// connector started; n, the window's instances, is its increase.
	total, n int64
	// p is the divergence test's p-value, NaN without a test.
	p float64
	// slack is the minimum QTA slack, NaN without one; ttv the slack
	// trend's time to violation, NaN while the trend does not fall.
	slack, ttv float64
	// failure is the failure ratio (timeouts and failures), NaN without
	// instances.
	failure float64
	// violation: the window broke the QTA; hasViolation: it said so.
	violation, hasViolation bool
	// triggers are the kinds of the probe's triggers that fired.
	triggers []string
}

// timeline folds the connector's output into windows, by window end: the
// time stamp of every metric point and trigger record of a window.
type timeline struct {
	mu      sync.Mutex
	windows map[int64]*window
}

func newTimeline() *timeline { return &timeline{windows: make(map[int64]*window)} }

func (tl *timeline) at(ts pcommon.Timestamp) *window {
	w, ok := tl.windows[int64(ts)]
	if !ok {
		w = &window{end: ts.AsTime(), p: math.NaN(), slack: math.NaN(), ttv: math.NaN(), failure: math.NaN()}
		tl.windows[int64(ts)] = w
	}
	return w
}

// isProbe reports whether a point or record belongs to the probe.
func isProbe(attrs pcommon.Map) bool {
	v, ok := attrs.Get(contract.AttrProbe)
	return ok && v.AsString() == probe
}

// addMetrics folds one export request.
func (tl *timeline) addMetrics(md pmetric.Metrics) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, rm := range md.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				tl.addMetric(m)
			}
		}
	}
}

func (tl *timeline) addMetric(m pmetric.Metric) {
	var points pmetric.NumberDataPointSlice
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		points = m.Gauge().DataPoints()
	case pmetric.MetricTypeSum:
		points = m.Sum().DataPoints()
	default:
		return
	}
	for _, dp := range points.All() {
		if !isProbe(dp.Attributes()) {
			continue
		}
		v := dp.DoubleValue()
		if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
			v = float64(dp.IntValue())
		}
		w := tl.at(dp.Timestamp())
		switch m.Name() {
		case contract.MetricOutcomes:
			w.total += int64(v)
		case contract.MetricDivergenceP:
			w.p = v
		case contract.MetricQTASlackMin:
			w.slack = v
		case contract.MetricQTATimeToViolation:
			w.ttv = v
		case contract.MetricFailureRatio:
			w.failure = v
		case contract.MetricQTAViolation:
			w.violation, w.hasViolation = v > 0, true
		}
	}
}

// addLogs folds the probe's trigger records of one export request.
func (tl *timeline) addLogs(ld plog.Logs) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if lr.EventName() != contract.EventTrigger || !isProbe(lr.Attributes()) {
					continue
				}
				kind, _ := lr.Attributes().Get(contract.AttrTrigger)
				w := tl.at(lr.Timestamp())
				w.triggers = append(w.triggers, kind.AsString())
			}
		}
	}
}

// sorted returns the windows that have a QTA verdict, oldest first, with
// their instance counts; windows without one (records of a window whose
// metrics are yet to come) are left out.
func (tl *timeline) sorted() []window {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []window
	for _, w := range tl.windows {
		if w.hasViolation {
			c := *w
			c.triggers = slices.Clone(w.triggers)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b window) int { return a.end.Compare(b.end) })
	for i := range out {
		if i > 0 {
			out[i].n = out[i].total - out[i-1].total
		}
	}
	return out
}

// run is one ramp through the collector: its timeline, and the workload's
// start, from which the schedule's λ is read.
type run struct {
	ramp    ramp
	started time.Time
	windows []window
}

// runRamp starts the test's OTLP receiver, the collector and the workload,
// and records the timeline until done says that it has seen enough or the
// workload ends (its ramp plus 5 s at the top), then stops both.
func runRamp(t *testing.T, collector, workload string, r ramp, done func([]window) bool) run {
	t.Helper()
	tl := newTimeline()
	sink := otlptest.Start(t, otlptest.Options{
		CountOnly: true,
		Metrics:   func(md pmetric.Metrics) otlptest.Reply { tl.addMetrics(md); return otlptest.Reply{} },
		Logs:      func(ld plog.Logs) otlptest.Reply { tl.addLogs(ld); return otlptest.Reply{} },
	})
	var col *e2etest.Collector
	if r.demo {
		// The demo's configuration as users start it, its addresses moved
		// to free loopback ports and its scope exporter to the test's
		// receiver.
		addrs := e2etest.FreeAddrs(t, 2)
		_, port, _ := strings.Cut(addrs[1], ":")
		col = e2etest.StartCollector(t, "collector", collector, []string{"../demo/collector.yaml"},
			"DELTAQ_SCOPE="+sink.Addr(), "DELTAQ_OTLP_HTTP="+addrs[0], "DELTAQ_TELEMETRY_PORT="+port, "DELTAQ_DIAGRAM=../demo/mm1k.dq")
	} else {
		col = e2etest.StartCollector(t, "collector", collector, []string{"testdata/collector.yaml"}, "DELTAQ_SINK="+sink.Addr())
	}
	// The connector reports every configured probe in every window, also
	// an empty one: its first export says that the collector is up.
	sink.WaitFor(t, otlptest.Counts{Requests: 1}, 30*time.Second)

	started := time.Now()
	m, kk := r.service()
	wl := e2etest.Start(t, "workload", exec.Command(workload, "-endpoint", col.Addr, "-topology", r.topology,
		"-rate", fmt.Sprint(r.from), "-ramp-to", fmt.Sprint(r.to), "-ramp-over", r.over.String(), "-ramp-step", "0",
		"-mu1", fmt.Sprint(m), "-mu2", fmt.Sprint(m), "-k", fmt.Sprint(kk), "-slow-worker", "0",
		"-duration", (r.over+5*time.Second).String(), "-drain", "2s", "-report", "10s", "-seed", fmt.Sprint(r.seed)))
	var exited time.Time
	sink.Until(t, "the end of the ramp", r.over+40*time.Second, func() bool {
		if done(tl.sorted()) {
			return true
		}
		if wl.Running() {
			return false
		}
		// The windows of the last instances close up to two intervals
		// after them.
		if exited.IsZero() {
			exited = time.Now()
		}
		return time.Since(exited) > 3*time.Second
	})
	if err := wl.Stop(t); err != nil {
		t.Errorf("the workload did not deliver everything: %v\n%s", err, wl.Tail(5))
	}
	col.StopCleanly(t)
	var ws []window
	for _, w := range tl.sorted() {
		if !w.end.Before(started) {
			ws = append(ws, w)
		}
	}
	return run{ramp: r, started: started, windows: ws}
}
