// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/globtest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// gateEnv must be set for the test to run: it needs the built collector and
// Erlang/OTP, and takes about 40 s.
const gateEnv = "DQSD_OTEL_E2E"

// The example's run: its default system (λ = 50/s, mean service 8 ms, K = 10,
// so ρ = 0.4 at each station) for runSeconds.
const (
	rate       = 50.0
	serviceMs  = 8.0
	bufferK    = 10
	runSeconds = 30
)

// The probes of the example, and the one its outcome diagram defines
// (erlang/examples/mm1k.dq: end_to_end = worker_1 -> worker_2).
var (
	probes     = []string{"worker_1", "worker_2", "end_to_end"}
	expression = "end_to_end"
)

// TestMM1KThroughCollector runs erlang/examples/mm1k.escript against the
// built collector with examples/erlang/collector.yaml and checks that
//  1. the deltaq connector's ΔQs of worker_1, worker_2 and end_to_end arrive
//     (outcome counts, observed histograms, quantiles and CDFs, and the
//     calculated ΔQ of end_to_end), with hardly a timeout or failure and
//     mean delays that agree with the M/M/1/K closed form and with
//     end_to_end = worker_1 -> worker_2;
//  2. killing the collector mid-run leaves the example running: it is alive
//     seconds later, keeps generating jobs, and exits 0 with its final
//     "mm1k: done" line, counting the spans it could not export.
//
// Everything started is stopped by process id when the test ends, also on
// failure.
func TestMM1KThroughCollector(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the Erlang end-to-end tests (they need Erlang/OTP too)")
	root, escript, ebin := prerequisites(t)

	// The ΔQ sink, then the collector, then the example.
	sink := otlptest.Start(t, otlptest.Options{})
	col, httpAddr := startCollector(t, root, otelcol, "examples/erlang/collector.yaml",
		"DELTAQ_SINK="+sink.Addr())
	e2etest.WaitListening(t, httpAddr, 30*time.Second, col)
	t.Logf("collector (pid %d) on %s, ΔQs to %s", col.Pid(), httpAddr, sink.Addr())

	mm := startExample(t, escript, ebin, root, httpAddr, rate, runSeconds, "mm1k-e2e")
	mmStart := time.Now()
	t.Logf("mm1k (pid %d) started", mm.Pid())

	// 1. The ΔQs of every probe. Wait for a few windows of each, so that the
	// mean delays below rest on some hundreds of jobs, and for the example's
	// first progress report (it reports every 5 s), to compare with those
	// after the kill. The example must still have a progress report ahead of
	// it when the collector is killed: hence the deadline.
	const windows = 4
	var missing string // what the wait below still lacks, should it time out
	defer func() {
		if t.Failed() && missing != "" {
			t.Logf("still missing: %s", missing)
		}
	}()
	e2etest.Until(t, "the ΔQs of every probe", runSeconds*time.Second-10*time.Second, func() bool {
		ok, why := collect(sink.Metrics()).complete(windows)
		if ok && lastArrivals(mm) == 0 {
			ok, why = false, "no progress report from mm1k yet"
		}
		missing = why
		return ok
	}, col, mm)
	got := collect(sink.Metrics())
	t.Logf("after %v: %d metric requests; windows with instances: %s", time.Since(mmStart).Round(time.Millisecond),
		got.requests, got.windowsText())
	checkDeltaQs(t, got)

	// 2. Kill the collector (as a crash would), mid-run; the example keeps
	// running.
	arrivalsBefore := lastArrivals(mm)
	col.Kill(t)
	killedAt := time.Now()
	col.ExpectNoErrors(t)
	t.Logf("collector killed %v into the run (mm1k's last progress report: %d arrivals)",
		killedAt.Sub(mmStart).Round(time.Millisecond), arrivalsBefore)
	time.Sleep(3 * time.Second)
	if !mm.Running() {
		t.Fatalf("mm1k (pid %d) is gone 3 s after the collector was killed: %v", mm.Pid(), mm.Err())
	}
	if err := syscall.Kill(mm.Pid(), 0); err != nil {
		t.Fatalf("mm1k (pid %d) is gone 3 s after the collector was killed: %v", mm.Pid(), err)
	}
	t.Logf("mm1k (pid %d) still running 3 s after the collector was killed", mm.Pid())

	// 3. The example runs to its end (within 45 s of it) and exits 0 by
	// itself.
	left := time.Until(mmStart.Add(runSeconds * time.Second))
	if err := mm.Wait(t, left+45*time.Second); err != nil {
		t.Fatalf("mm1k exited with %v, want exit status 0", err)
	}
	checkExample(t, mm.Lines(), killedAt, arrivalsBefore)
	checkFailures(t, got, mm.Lines())
}

// doneLine returns the fields of the example's last "mm1k: done" line, nil
// when it printed none.
func doneLine(out []e2etest.Line) map[string]int64 {
	var done map[string]int64
	for _, l := range out {
		if f, ok := fields(l.Text, "mm1k: done "); ok {
			done = f
		}
	}
	return done
}

// checkFailures: the failures the connector counted before the kill are
// the example's own drops at a full buffer, at most as many as it counted
// over the whole run (its done line): worker_1's and worker_2's at each,
// end_to_end's at either.
func checkFailures(t *testing.T, got sinkState, out []e2etest.Line) {
	t.Helper()
	done := doneLine(out)
	if done == nil {
		return // checkExample says so
	}
	drops := map[string]int64{
		"worker_1":   done["failed_worker_1"],
		"worker_2":   done["failed_worker_2"],
		"end_to_end": done["failed_worker_1"] + done["failed_worker_2"],
	}
	for _, p := range probes {
		if n := got.probes[p].outcomes[contract.Failure]; n > drops[p] {
			t.Errorf("%s: %d failures counted, but the example dropped %d jobs there in the whole run", p, n, drops[p])
		}
	}
}

// prerequisites returns the repository's root, escript and the ebin
// directory of the library compiled from its sources.
func prerequisites(t *testing.T) (root, escript, ebin string) {
	t.Helper()
	root = e2etest.Root(t)
	escript = lookPath(t, "escript")
	ebin = compileLibrary(t, lookPath(t, "erlc"), filepath.Join(root, "erlang", "dqsd_otel", "src"))
	return root, escript, ebin
}

// startCollector starts the built collector with config (a path relative to
// the repository) and env added to its environment, receiving OTLP/HTTP on a
// free port (DELTAQ_OTLP_HTTP), and returns it and that port's address.
func startCollector(t *testing.T, root, otelcol, config string, env ...string) (col *e2etest.Proc, httpAddr string) {
	t.Helper()
	httpAddr = e2etest.FreeAddr(t)
	return startCollectorOn(t, "collector", root, otelcol, config, httpAddr, env...), httpAddr
}

// startCollectorOn is startCollector on a given address, as name: a
// collector started again where its predecessor listened.
func startCollectorOn(t *testing.T, name, root, otelcol, config, httpAddr string, env ...string) *e2etest.Proc {
	t.Helper()
	cmd := e2etest.CollectorCmd(otelcol, []string{config}, append([]string{"DELTAQ_OTLP_HTTP=" + httpAddr}, env...)...)
	cmd.Dir = root // the diagram's default path is relative to the repository
	return e2etest.Start(t, name, cmd)
}

// startExample starts the M/M/1/K example, with the library compiled into
// ebin, exporting to the collector's OTLP/HTTP at httpAddr: jobs arrive at
// rate per second for seconds, each station as in the default system;
// extra are further options.
func startExample(t *testing.T, escript, ebin, root, httpAddr string, rate float64, seconds int, service string,
	extra ...string) *e2etest.Proc {
	t.Helper()
	args := append([]string{filepath.Join(root, "erlang", "examples", "mm1k.escript"),
		"--endpoint", "http://" + httpAddr, "--rate", fmtFloat(rate), "--duration", strconv.Itoa(seconds),
		"--k", strconv.Itoa(bufferK), "--service-ms", fmtFloat(serviceMs), "--seed", "7",
		"--service-name", service}, extra...)
	mmCmd := exec.Command(escript, args...)
	mmCmd.Env = append(os.Environ(), "DQSD_OTEL_EBIN="+ebin)
	return e2etest.Start(t, "mm1k", mmCmd)
}

// checkDeltaQs checks what the connector sent for every probe.
func checkDeltaQs(t *testing.T, got sinkState) {
	t.Helper()
	for _, bad := range got.bad {
		t.Errorf("malformed connector output: %s", bad)
	}
	theory := mm1kSojourn(rate, serviceMs, bufferK)
	mean := map[string]float64{}
	for _, p := range probes {
		st := got.probes[p]
		if st.outcomes[contract.Success] <= 0 {
			t.Errorf("%s: %s{%s=%s} = %d, want > 0", p, contract.MetricOutcomes,
				contract.AttrOutcome, contract.Success, st.outcomes[contract.Success])
		}
		for _, series := range []string{
			contract.MetricCDF + "/" + contract.SeriesObserved,
			contract.MetricQuantile + "/" + contract.SeriesObserved,
			contract.MetricFailureRatio,
		} {
			if !st.series[series] {
				t.Errorf("%s: no %s series", p, series)
			}
		}
		// Only the probe the diagram defines has a calculated ΔQ (and a
		// divergence between it and the observed one).
		for _, series := range []string{
			contract.MetricCDF + "/" + contract.SeriesCalculated,
			contract.MetricQuantile + "/" + contract.SeriesCalculated,
			contract.MetricDivergence,
		} {
			if want := p == expression; st.series[series] != want {
				t.Errorf("%s: %s series present = %v, want %v (diagram: %s = worker_1 -> worker_2)",
					p, series, st.series[series], want, expression)
			}
		}
		// dMax (1 s, 2 s) is some 70 mean delays: at ρ = 0.4 a real timeout
		// has a chance of about e^(−75). Timeouts here mean instances the
		// connector timed out while their spans were still on the way (start
		// events and spans travel in batches). Failures are the example's
		// drops at a full buffer, a chance of 6·10⁻⁵ a job (Kleinrock 3.6) on
		// a machine to itself, but many more when the machine is starved and
		// service slows (7 of 173 jobs in a run beside other end-to-end tests,
		// 7 in the example's own count too): checkFailures holds them to the
		// example's own count once it has exited.
		if n, bad := total(st.outcomes), st.outcomes[contract.Timeout]; float64(bad) > 0.02*float64(n) {
			t.Errorf("%s: %d timeouts of %d instances, want at most 2%%", p, bad, n)
		}
		if st.successes == 0 {
			t.Errorf("%s: no successful instance in %d %s histograms", p, st.windows, contract.MetricObserved)
			continue
		}
		mean[p] = st.sum / float64(st.successes)
		t.Logf("%s: %d windows, %d successes, mean delay %.2f ms, outcomes %v", p, st.windows, st.successes,
			mean[p]*1e3, st.outcomes)
	}
	if t.Failed() {
		return
	}
	// Each station is an M/M/1/K queue (worker_2's arrivals are worker_1's
	// departures, again Poisson by Burke's theorem when hardly a job is
	// dropped). The band is wide: Erlang's timers and a shared machine
	// lengthen service times; it catches a wrong unit or a broken clock.
	for _, p := range probes[:2] {
		if m := mean[p]; m < 0.5*theory || m > 4*theory {
			t.Errorf("%s: mean delay %.2f ms, want within [0.5, 4] × the M/M/1/K mean %.2f ms", p, m*1e3, theory*1e3)
		}
	}
	// A job's end_to_end span encloses its worker_1 and worker_2 spans,
	// which follow each other within microseconds: the mean end-to-end delay
	// is the sum of the two (up to the jobs at the edges of the windows).
	sum := mean["worker_1"] + mean["worker_2"]
	if d := math.Abs(mean[expression] - sum); d > 0.1*sum+0.001 {
		t.Errorf("mean delay of %s %.2f ms, of worker_1 + worker_2 %.2f ms: want within 10%% + 1 ms",
			expression, mean[expression]*1e3, sum*1e3)
	}
}

// checkExample checks the example's output after it exited: it kept
// generating jobs after the collector was killed, drained them, and counted
// the spans it could not export.
func checkExample(t *testing.T, out []e2etest.Line, killedAt time.Time, arrivalsBefore int64) {
	t.Helper()
	var done map[string]int64
	progressed := false
	for _, l := range out {
		f, ok := fields(l.Text, "mm1k: running ")
		if ok && l.At.After(killedAt) && f["arrivals"] > arrivalsBefore {
			progressed = true
		}
		if f, ok := fields(l.Text, "mm1k: done "); ok {
			done = f
		}
	}
	if done == nil {
		t.Fatalf("mm1k printed no \"mm1k: done\" line")
	}
	if !progressed {
		t.Errorf("mm1k reported no progress after the collector was killed (arrivals before: %d)", arrivalsBefore)
	}
	for _, k := range []string{"arrivals", "completed", "failed_worker_1", "failed_worker_2", "in_flight",
		"exported_spans", "exported_events", "elided_events", "dropped", "export_failed"} {
		if _, ok := done[k]; !ok {
			t.Fatalf("mm1k's done line lacks %s=", k)
		}
	}
	// Poisson arrivals: mean rate × duration, standard deviation its square
	// root (39 for 1500); 0.8 of the mean is far below any chance shortfall.
	if want := 0.8 * rate * runSeconds; float64(done["arrivals"]) < want {
		t.Errorf("mm1k: %d arrivals, want at least %.0f: the example stopped generating early", done["arrivals"], want)
	}
	if done["in_flight"] != 0 {
		t.Errorf("mm1k: %d jobs in flight at the end, want 0", done["in_flight"])
	}
	// Spans made: end_to_end, worker_1 and worker_2 for a job that reached
	// worker_2; end_to_end and worker_1 for one dropped at worker_1. Each has
	// a start event.
	spans := 3*(done["completed"]+done["failed_worker_2"]) + 2*done["failed_worker_1"]
	if done["exported_spans"] <= 0 || done["exported_events"] <= 0 {
		t.Errorf("mm1k exported %d spans and %d start events, want some of each (before the kill)",
			done["exported_spans"], done["exported_events"])
	}
	if done["exported_spans"] >= spans {
		t.Errorf("mm1k exported %d of its %d spans, though the collector was gone for most of the run",
			done["exported_spans"], spans)
	}
	if done["export_failed"] <= 0 {
		t.Errorf("mm1k counted no failed export, though the collector was gone for most of the run")
	}
	// The done line follows the final flush, which counts what it could not
	// send as failed: every span and start event is accounted for (a start
	// whose span went in the same export round is elided, not sent).
	if n := done["exported_spans"] + done["exported_events"] + done["elided_events"] + done["dropped"] +
		done["export_failed"]; n != 2*spans {
		t.Errorf("mm1k accounts for %d items (exported, elided, dropped, failed), want the %d spans and start events it made",
			n, 2*spans)
	}
	t.Logf("mm1k done: %d arrivals, %d spans; exported %d spans and %d events, %d elided, %d dropped, %d failed",
		done["arrivals"], spans, done["exported_spans"], done["exported_events"], done["elided_events"],
		done["dropped"], done["export_failed"])
}

// total is the number of instances of all outcomes.
func total(outcomes map[string]int64) int64 {
	var n int64
	for _, c := range outcomes {
		n += c
	}
	return n
}

// mm1kSojourn is the mean time in an M/M/1/K station, in seconds, of an
// admitted job (Kleinrock, Queueing Systems vol. 1, 3.6): with ρ = λ/μ,
// P(n) = (1−ρ)ρⁿ/(1−ρ^(K+1)) for n = 0…K, L = Σ n·P(n), and by Little's law
// W = L / (λ(1 − P(K))).
func mm1kSojourn(lambda, serviceMs float64, k int) float64 {
	rho := lambda * serviceMs / 1000
	p := func(n int) float64 {
		if rho == 1 {
			return 1 / float64(k+1)
		}
		return (1 - rho) * math.Pow(rho, float64(n)) / (1 - math.Pow(rho, float64(k+1)))
	}
	l := 0.0
	for n := 0; n <= k; n++ {
		l += float64(n) * p(n)
	}
	return l / (lambda * (1 - p(k)))
}

// --- the ΔQ sink's contents: what the deltaq connector sent ------------------

// probeState is what arrived for one probe.
type probeState struct {
	// windows counts deltaq.observed data points: windows with instances.
	windows int
	// successes and sum are the instances in the histograms' finite buckets
	// and the sum of their delays in seconds.
	successes uint64
	sum       float64
	// outcomes is the latest deltaq.outcomes (cumulative) by outcome.
	outcomes   map[string]int64
	outcomesAt pcommon.Timestamp
	// series holds "metric" or "metric/series" for every series seen.
	series map[string]bool
}

// sinkState is what the connector sent, folded by probe.
type sinkState struct {
	requests int
	probes   map[string]*probeState
	bad      []string
}

// collect folds the metric requests the sink received, every probe of the
// example included (empty when nothing came for it).
func collect(mds []pmetric.Metrics) sinkState {
	s := sinkState{requests: len(mds), probes: map[string]*probeState{}}
	for _, p := range probes {
		s.probe(p)
	}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			switch m.Type() {
			case pmetric.MetricTypeHistogram:
				for _, dp := range m.Histogram().DataPoints().All() {
					s.addHistogram(m.Name(), dp)
				}
			case pmetric.MetricTypeSum:
				for _, dp := range m.Sum().DataPoints().All() {
					s.addSum(m.Name(), dp)
				}
			case pmetric.MetricTypeGauge:
				for _, dp := range m.Gauge().DataPoints().All() {
					s.addGauge(m.Name(), dp)
				}
			}
		}
	}
	return s
}

func (s *sinkState) probe(name string) *probeState {
	st := s.probes[name]
	if st == nil {
		st = &probeState{outcomes: map[string]int64{}, series: map[string]bool{}}
		s.probes[name] = st
	}
	return st
}

// probeOf returns the state of the probe of a data point of metric, or
// records the point as malformed if it names none.
func (s *sinkState) probeOf(metric string, attrs pcommon.Map) (*probeState, bool) {
	v, ok := attrs.Get(contract.AttrProbe)
	if !ok {
		s.bad = append(s.bad, metric+": a data point without "+contract.AttrProbe)
		return nil, false
	}
	return s.probe(v.Str()), true
}

// addHistogram folds one histogram point: of deltaq.observed, one window's
// successful instances.
func (s *sinkState) addHistogram(metric string, dp pmetric.HistogramDataPoint) {
	st, ok := s.probeOf(metric, dp.Attributes())
	if !ok {
		return
	}
	st.series[metric] = true
	if metric != contract.MetricObserved {
		return
	}
	bc := dp.BucketCounts().AsRaw()
	if len(bc) != dp.ExplicitBounds().Len()+1 {
		s.bad = append(s.bad, fmt.Sprintf("%s: %d buckets for %d bounds", metric, len(bc), dp.ExplicitBounds().Len()))
		return
	}
	var total uint64
	for _, c := range bc {
		total += c
	}
	if total != dp.Count() {
		s.bad = append(s.bad, fmt.Sprintf("%s: count %d, buckets sum to %d", metric, dp.Count(), total))
	}
	st.windows++
	st.successes += total - bc[len(bc)-1]
	st.sum += dp.Sum()
}

// addSum folds one sum point: of deltaq.outcomes, the latest count of an
// outcome.
func (s *sinkState) addSum(metric string, dp pmetric.NumberDataPoint) {
	st, ok := s.probeOf(metric, dp.Attributes())
	if !ok {
		return
	}
	st.series[metric] = true
	if metric == contract.MetricOutcomes && dp.Timestamp() >= st.outcomesAt {
		st.outcomesAt = dp.Timestamp()
		kind := ""
		if v, ok := dp.Attributes().Get(contract.AttrOutcome); ok {
			kind = v.AsString()
		}
		st.outcomes[kind] = dp.IntValue()
	}
}

// addGauge notes the series of one gauge point, which must be finite.
func (s *sinkState) addGauge(metric string, dp pmetric.NumberDataPoint) {
	st, ok := s.probeOf(metric, dp.Attributes())
	if !ok {
		return
	}
	if v := dp.DoubleValue(); math.IsNaN(v) || math.IsInf(v, 0) {
		s.bad = append(s.bad, fmt.Sprintf("%s: %v", metric, v))
	}
	name := metric
	if v, ok := dp.Attributes().Get(contract.AttrSeries); ok && v.AsString() != "" {
		name += "/" + v.AsString()
	}
	st.series[name] = true
}

func (s sinkState) windowsText() string {
	var parts []string
	for _, p := range probes {
		parts = append(parts, fmt.Sprintf("%s %d", p, s.probes[p].windows))
	}
	return strings.Join(parts, ", ")
}

// complete reports whether every probe has at least n windows with instances
// and all the series the checks look for; otherwise what is missing.
func (s sinkState) complete(n int) (bool, string) {
	var missing []string
	for _, p := range probes {
		st := s.probes[p]
		if st.windows < n {
			missing = append(missing, fmt.Sprintf("%s: %d of %d windows", p, st.windows, n))
		}
		if p == expression && !st.series[contract.MetricCDF+"/"+contract.SeriesCalculated] {
			missing = append(missing, p+": no calculated ΔQ")
		}
	}
	return len(missing) == 0, strings.Join(missing, "; ")
}

// --- the example's output ------------------------------------------------------

// lastArrivals is the arrival count of mm1k's last progress line so far.
func lastArrivals(mm *e2etest.Proc) int64 {
	var n int64
	for _, l := range mm.Lines() {
		if f, ok := fields(l.Text, "mm1k: running "); ok {
			n = f["arrivals"]
		}
	}
	return n
}

// fields parses the key=integer pairs of a line that starts with prefix.
func fields(text, prefix string) (map[string]int64, bool) {
	rest, ok := strings.CutPrefix(text, prefix)
	if !ok {
		return nil, false
	}
	f := map[string]int64{}
	for _, kv := range strings.Fields(rest) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			f[k] = n
		}
	}
	return f, true
}

// --- helpers -----------------------------------------------------------------------

func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not on PATH: this test needs Erlang/OTP (erlang-nox): %v", name, err)
	}
	return p
}

// compileLibrary builds dqsd_otel from src into a temporary ebin, so the test
// runs the sources as they are, and returns the directory.
func compileLibrary(t *testing.T, erlc, src string) string {
	t.Helper()
	ebin := t.TempDir()
	srcs := globtest.Glob(t, filepath.Join(src, "*.erl"))
	args := append([]string{"-o", ebin, "-I", src}, srcs...)
	if out, err := exec.Command(erlc, args...).CombinedOutput(); err != nil {
		t.Fatalf("erlc: %v\n%s", err, out)
	}
	app, err := os.ReadFile(filepath.Join(src, "dqsd_otel.app.src"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ebin, "dqsd_otel.app"), app, 0o644); err != nil {
		t.Fatal(err)
	}
	return ebin
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
