// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package earlywarning

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// probe is the probe the timeline follows: the job, the outcome the
// diagram calculates from its two stages.
const probe = "job"

// ramp is one run: the workload's topology and its load schedule.
type ramp struct {
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

// mu is μ₁ = μ₂ of every run, and k the buffers' capacity K.
const (
	mu = 1000.0
	k  = 50
)

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
	v, ok := attrs.Get(outcome.AttrProbe)
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
		case outcome.MetricOutcomes:
			w.total += int64(v)
		case outcome.MetricDivergenceP:
			w.p = v
		case outcome.MetricQTASlackMin:
			w.slack = v
		case outcome.MetricQTATimeToViolation:
			w.ttv = v
		case outcome.MetricFailureRatio:
			w.failure = v
		case outcome.MetricQTAViolation:
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
				if lr.EventName() != outcome.EventTrigger || !isProbe(lr.Attributes()) {
					continue
				}
				kind, _ := lr.Attributes().Get(outcome.AttrTrigger)
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

// process is a program the test started: stopped by process id when the
// test ends, killed by the kernel should the test binary die first.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    string // path of its output
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, out: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		if p.running() {
			_ = p.cmd.Process.Kill()
		}
		<-p.exited
		if b, err := os.ReadFile(p.out); t.Failed() && err == nil {
			t.Logf("%s output:\n%s", name, b)
		}
	})
	return p
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM (if the process still runs) and waits up to timeout
// for it to exit; it returns the exit error.
func (p *process) stop(t *testing.T, timeout time.Duration) error {
	t.Helper()
	if p.running() {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM to %s (pid %d): %v", p.name, p.cmd.Process.Pid, err)
		}
	}
	select {
	case <-p.exited:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("%s (pid %d) did not exit within %v of SIGTERM", p.name, p.cmd.Process.Pid, timeout)
		return nil
	}
}

// output returns what the process wrote.
func (p *process) output(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(p.out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// collectorBinary is $OTELCOL or bin/otelcol-deltaq of the repository.
func collectorBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("OTELCOL")
	if bin == "" {
		var err error
		if bin, err = filepath.Abs(filepath.Join("..", "..", "bin", "otelcol-deltaq")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("collector binary: %v (run make build, or set OTELCOL to an absolute path)", err)
	}
	return bin
}

// buildWorkload builds cmd/dqworkload into a temporary directory.
func buildWorkload(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dqworkload")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/dqworkload").CombinedOutput(); err != nil {
		t.Fatalf("go build dqworkload: %v\n%s", err, out)
	}
	return bin
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
	// A loopback port nobody listens on, for the collector's receiver.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	col := startProcess(t, "collector", []string{"DELTAQ_OTLP_GRPC=" + addr, "DELTAQ_SINK=" + sink.Addr()},
		collector, "--config=testdata/collector.yaml")
	// The connector reports every configured probe in every window, also
	// an empty one: its first export says that the collector is up.
	sink.WaitFor(t, otlptest.Counts{Requests: 1}, 30*time.Second)

	started := time.Now()
	wl := startProcess(t, "workload", nil, workload, "-endpoint", addr, "-topology", r.topology,
		"-rate", fmt.Sprint(r.from), "-ramp-to", fmt.Sprint(r.to), "-ramp-over", r.over.String(), "-ramp-step", "0",
		"-mu1", fmt.Sprint(mu), "-mu2", fmt.Sprint(mu), "-k", fmt.Sprint(k), "-slow-worker", "0",
		"-duration", (r.over + 5*time.Second).String(), "-drain", "2s", "-report", "10s", "-seed", fmt.Sprint(r.seed))
	var exited time.Time
	sink.Until(t, "the end of the ramp", r.over+40*time.Second, func() bool {
		if done(tl.sorted()) {
			return true
		}
		if wl.running() {
			return false
		}
		// The windows of the last instances close up to two intervals
		// after them.
		if exited.IsZero() {
			exited = time.Now()
		}
		return time.Since(exited) > 3*time.Second
	})
	if err := wl.stop(t, 10*time.Second); err != nil {
		t.Errorf("the workload did not deliver everything: %v\n%s", err, lastLines(wl.output(t), 5))
	}
	if err := col.stop(t, 10*time.Second); err != nil {
		t.Errorf("the collector exited with %v, want status 0", err)
	}
	for _, l := range strings.Split(col.output(t), "\n") {
		if strings.Contains(l, "\terror\t") {
			t.Errorf("the collector logged an error: %s", l)
		}
	}
	var ws []window
	for _, w := range tl.sorted() {
		if !w.end.Before(started) {
			ws = append(ws, w)
		}
	}
	return run{ramp: r, started: started, windows: ws}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
