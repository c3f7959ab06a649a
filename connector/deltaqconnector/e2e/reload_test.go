// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"text/template"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/internal/contract"
	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
	"github.com/deltaq-otel/deltaq/internal/reload"
)

// The reload tests' probes: dMax = 2 s in 100 bins of 20 ms, so that a
// start event sent half a second before the SIGHUP reaches its deadline
// after the reload, and the span of one sent just before it can arrive
// after the reload and still end within dMax. The connector closes 1 s
// windows one interval late (lag defaults to the interval) and keeps the
// last reloadHistory observed ΔQs behind its band.
const (
	reloadDMax     = 2 * time.Second
	reloadBins     = 100
	reloadWidth    = reloadDMax / reloadBins
	reloadInterval = time.Second
	reloadHistory  = 10
)

// The QTAs of the probe before and after the reload. The test's delays are
// spread evenly over (0, 1 s) (traffic), so every window meets the first,
// lenient QTA — all successes end within 1 s and the timeouts are far fewer
// than a fifth of a window — and breaks the second, strict one: about a tenth
// of the instances end within 100 ms, never 0.6.
const (
	lenientQTA = "{points: [{delay: 1s, p: 0.5}], max_failure: 0.2}"
	strictQTA  = "{points: [{delay: 100ms, p: 0.6}], max_failure: 0.2}"
)

var (
	lenientPoints = map[string]float64{"1": 0.5}
	strictPoints  = map[string]float64{"0.1": 0.6}
)

// The collector starts at oldPhase of a second, so that the window timer
// of the first configuration ticks at about that phase, and the SIGHUP comes
// at reloadPhase, after the next second has begun but before that timer's
// tick in it: the reloaded connector's timer then ticks at another phase than
// its predecessor's, and the window that has just begun must be open all the
// same.
const (
	oldPhase    = 600 * time.Millisecond
	reloadPhase = 300 * time.Millisecond
)

// sleepToPhase sleeps until the next time whose fraction of a second is
// phase.
func sleepToPhase(phase time.Duration) {
	now := time.Now()
	d := (phase - time.Duration(now.UnixNano())%time.Second + time.Second) % time.Second
	time.Sleep(d)
}

// TestReloadLosesNothing runs the built collector with the deltaq processor
// on traces and start events and the deltaq connector (1 s windows, a QTA
// with a trigger), sends spans of known delays without pause, start events
// whose spans never come and start events whose spans come only after the
// reload, and halfway rewrites the configuration with a stricter QTA and
// sends SIGHUP. It checks, window by window across the reload, that
//  1. the windows follow each other without a gap or a repeat, and each
//     counts exactly the successes that ended in it (by bin) and the
//     timeouts whose start + dMax fell in it — a timeout whose deadline
//     passed during the reload is counted once, in its own window; a span
//     that arrived after the reload for a start event before it is a
//     success; deltaq.outcomes and deltaq.observed are each one cumulative
//     stream with one start time;
//  2. the band is that of the last reloadHistory observed ΔQs, those before
//     the reload included (a fresh engine's first band is [0, 1]);
//  3. the lenient QTA holds for the windows closed before the reload and the
//     strict one from the first window closed after it, the violation
//     gauge follows the QTA of its window, and the trigger fires once, at
//     the first window after the reload;
//  4. the collector logged the carry-over, no error, flushes its last
//     window on SIGTERM and exits 0.
func TestReloadLosesNothing(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	sink := otlptest.Start(t, otlptest.Options{})
	cfg := reloadConfig{History: reloadHistory, Probes: []reloadProbe{
		{Name: probe, DMax: reloadDMax, Bins: reloadBins, QTA: lenientQTA}}}
	sleepToPhase(oldPhase)
	began := time.Now()
	col := startReloadCollector(t, otelcol, sink.Addr(), cfg)
	s := newSender(t, col.Addr)

	stopTraffic := s.traffic(probe)
	time.Sleep(300 * time.Millisecond)
	// Timeouts whose deadlines pass long before the reload.
	s.startEvents(probe, 2, true)
	time.Sleep(4 * time.Second)
	// Timeouts whose deadlines pass after the reload, and instances whose
	// spans come after it.
	s.startEvents(probe, 3, true)
	late := s.startEvents(probe, 3, false)
	sleepToPhase(reloadPhase)

	cfg.Probes[0].QTA = strictQTA
	hup, ready := col.reload(t, cfg)
	t.Logf("reload: SIGHUP at %v, the collector ready again within %v (polled every 100 ms)",
		hup.Sub(began).Round(time.Millisecond), ready.Sub(hup).Round(time.Millisecond))
	s.lateSpans(late)
	time.Sleep(4 * time.Second)
	stopTraffic()

	// The reload is over once the new components started: a stop now,
	// within reload.Window of the SIGHUP, is a stop, and SIGTERM flushes
	// the open window with a last batch in it.
	if time.Since(hup) >= reload.Window {
		t.Fatalf("the test took %v after the reload; it means to stop within reload.Window (%v)", time.Since(hup), reload.Window)
	}
	s.batch(probe, 0)
	col.StopCleanly(t)
	s.check()
	t.Logf("sent %d successes and %d timeouts (%d attempts refused during the reload); done after %v",
		s.ledger[probe].totalSuccesses(), s.ledger[probe].totalTimeouts(), s.refused.Load(),
		time.Since(began).Round(time.Millisecond))

	wins := foldWindows(sink.Metrics(), probe)
	checkCounts(t, wins, s.ledger[probe])
	checkBand(t, wins)
	first := checkQTA(t, wins, hup, ready)
	checkTrigger(t, sink.Logs(), first)
	col.expectLog(t, `configuration reload: instances in flight carried over`, `"carried": 8`, `"dropped": 0`)
	col.expectLog(t, `configuration reload: open windows, history, totals and trigger states carried over`,
		`"probes": ["op"]`)
	col.expectNoLog(t, "starts afresh", "starts fresh", "nothing carried over")
}

// TestReloadHoldsCarriedInstances runs the connector alone on traces and
// start events (no processor) and sends SIGHUP while instances are in
// flight whose spans come only after their deadline: as after a reload,
// when clients resend what the stopped receivers refused after a backoff.
// The reloaded connector holds a carried instance until just before the
// window of its deadline closes, so each of those spans counts by its own
// duration, a success in its window, and no timeout is counted; at its
// grace alone (0 here) each was a timeout and its span late. The traffic
// around them checks every window's counts across the reload.
func TestReloadHoldsCarriedInstances(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	sink := otlptest.Start(t, otlptest.Options{})
	cfg := reloadConfig{History: reloadHistory, StartsInConnector: true,
		Probes: []reloadProbe{{Name: probe, DMax: reloadDMax, Bins: reloadBins}}}
	col := startReloadCollector(t, otelcol, sink.Addr(), cfg)
	s := newSender(t, col.Addr)
	stopTraffic := s.traffic(probe)
	time.Sleep(1500 * time.Millisecond)
	held := s.startEvents(probe, 4, false)
	time.Sleep(300 * time.Millisecond)
	hup, ready := col.reload(t, cfg)
	t.Logf("reload: the collector ready again %v after SIGHUP", ready.Sub(hup).Round(time.Millisecond))
	// Past the deadline (start + dMax), but within the span's own window
	// and the deadline's, each of which closes at least a second (the lag)
	// after its end.
	time.Sleep(time.Until(held[0].start.Add(reloadDMax + 300*time.Millisecond)))
	s.spansEndingAt(held, reloadDMax-reloadWidth/2)
	time.Sleep(3 * time.Second)
	stopTraffic()
	s.batch(probe, 0)
	col.StopCleanly(t)
	s.check()

	wins := foldWindows(sink.Metrics(), probe)
	checkCounts(t, wins, s.ledger[probe])
	col.expectLog(t, `configuration reload: instances in flight from start events carried over`, `"carried": 4`, `"dropped": 0`)
	if total := wins[len(wins)-1].outcomes[contract.Timeout]; total != 0 {
		t.Errorf("%d timeouts, want none: every span came while its instance was held", total)
	}
}

// TestReloadNewLayoutStartsAfresh reloads with another dmax for one of two
// probes: that probe starts afresh — its instances in flight are dropped,
// its deltaq.observed stream starts again in the new bins — while the other
// carries everything over, its timeout across the reload counted once.
func TestReloadNewLayoutStartsAfresh(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	const kept, changed = "kept", "changed"
	sink := otlptest.Start(t, otlptest.Options{})
	cfg := reloadConfig{History: reloadHistory, Probes: []reloadProbe{
		{Name: kept, DMax: reloadDMax, Bins: reloadBins, QTA: lenientQTA},
		{Name: changed, DMax: reloadDMax, Bins: reloadBins}}}
	sleepToPhase(oldPhase)
	col := startReloadCollector(t, otelcol, sink.Addr(), cfg)
	s := newSender(t, col.Addr)

	stopTraffic := s.traffic(kept, changed)
	time.Sleep(2 * time.Second)
	s.startEvents(kept, 1, true)
	// Dropped by the reload with its probe's old layout: never counted.
	s.startEvents(changed, 1, true)
	sleepToPhase(reloadPhase)
	cfg.Probes[1].DMax = reloadDMax / 2
	col.reload(t, cfg)
	time.Sleep(2500 * time.Millisecond)
	stopTraffic()
	col.StopCleanly(t)

	col.expectLog(t, `configuration reload: instances in flight carried over`, `"carried": 1`, `"dropped": 1`,
		`"probes_started_fresh": ["changed"]`)
	col.expectLog(t, `configuration reload: the probe's dmax or bins changed; its instances in flight are dropped and it starts fresh`,
		`"probe": "changed"`)
	// Both probes' open windows are carried (the changed probe's close in
	// its old layout); the changed probe then starts afresh in its new one.
	col.expectLog(t, `configuration reload: open windows, history, totals and trigger states carried over`,
		`"probes": ["changed", "kept"]`)
	col.expectLog(t, `configuration reload: the probe starts afresh`, `"probe": "changed"`)

	checkCounts(t, foldWindows(sink.Metrics(), kept), s.ledger[kept])

	// The changed probe: its stream before the reload in bins of 20 ms, a new
	// one after it in bins of 10 ms, starting at the start of its first window
	// after the reload; its counts restart with the stream.
	wins := foldWindows(sink.Metrics(), changed)
	var before, after []*window
	for _, w := range wins {
		if w.observed == nil {
			continue
		}
		if w.observed.bounds[0] == reloadWidth.Seconds() {
			before = append(before, w)
		} else {
			after = append(after, w)
		}
	}
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%s{%s}: %d windows in the old bins, %d in the new ones; want both",
			contract.MetricObserved, changed, len(before), len(after))
	}
	last, first := before[len(before)-1], after[0]
	if last.end >= first.end {
		t.Errorf("%s: a window in the old bins (end %v) after one in the new bins (end %v)", changed, last.end, first.end)
	}
	if b := first.observed.bounds; b[0] != 0.01 || b[len(b)-1] != 1 || len(b) != reloadBins {
		t.Errorf("%s after the reload: bounds %v…%v (%d), want 0.01…1 (%d)", changed, b[0], b[len(b)-1], len(b), reloadBins)
	}
	if first.observed.start == last.observed.start {
		t.Errorf("%s: the stream in the new bins kept the old stream's start time %v", changed, first.observed.start)
	}
	if want := first.end - pcommon.Timestamp(reloadInterval); first.observed.start != want {
		t.Errorf("%s: the new stream starts at %v, want the start of its first window %v", changed, first.observed.start, want)
	}
	if n, m := first.observed.count, first.outcomes[contract.Success]; n != uint64(m) {
		t.Errorf("%s after the reload: %s counts %d successes since the stream's start, %s %d: the counts did not restart with the stream",
			changed, contract.MetricObserved, n, contract.MetricOutcomes, m)
	}
	// A cumulative sum that falls must start again (OTLP data model, "Sums":
	// a reset is told by a new start time).
	for i := 1; i < len(wins); i++ {
		a, b := wins[i-1], wins[i]
		if a.outcomesStart == b.outcomesStart && b.outcomes[contract.Success] < a.outcomes[contract.Success] {
			t.Errorf("%s{%s}: %s fell from %d to %d at %v with the same start time %v", contract.MetricOutcomes, changed,
				contract.Success, a.outcomes[contract.Success], b.outcomes[contract.Success], b.end, b.outcomesStart)
		}
	}
	if n := first.outcomes[contract.Timeout]; n != 0 {
		t.Errorf("%s after the reload: %d timeouts, want 0 (its instance in flight was dropped)", changed, n)
	}
}

// TestRefusedReloadLosesNothing sends successes, rewrites the configuration
// with a key the collector refuses and sends SIGHUP: the collector shuts
// its components down and exits (its own behaviour on a configuration it
// cannot load). The components were told the new configuration is refused
// (package reload asks the collector's validate command), so they flushed
// the open windows as at a stop: every success sent reaches the sink, as
// many as a SIGTERM would have flushed. Before, they handed the windows to
// a reload that never came, and the last window's successes were lost.
func TestRefusedReloadLosesNothing(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the connector's end-to-end test")
	sink := otlptest.Start(t, otlptest.Options{})
	cfg := reloadConfig{History: reloadHistory, Probes: []reloadProbe{{Name: probe, DMax: reloadDMax, Bins: reloadBins}}}
	col := startReloadCollector(t, otelcol, sink.Addr(), cfg)
	s := newSender(t, col.Addr)
	stopTraffic := s.traffic(probe)
	time.Sleep(1500 * time.Millisecond)
	stopTraffic()
	s.check()

	var b bytes.Buffer
	if err := col.tmpl.Execute(&b, cfg); err != nil {
		t.Fatal(err)
	}
	b.WriteString("not_a_collector_section: {}\n")
	if err := os.WriteFile(col.file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	col.Signal(t, syscall.SIGHUP)
	if err := col.Wait(t, 30*time.Second); err == nil {
		t.Fatal("the collector accepted a configuration with an unknown section")
	}
	col.expectLog(t, `configuration reload refused: the collector stops; flushing the open windows as at a stop`)

	wins := foldWindows(sink.Metrics(), probe)
	if len(wins) == 0 {
		t.Fatalf("no %s{%s} in the sink", contract.MetricOutcomes, probe)
	}
	sent := s.ledger[probe].totalSuccesses()
	if got := wins[len(wins)-1].outcomes[contract.Success]; uint64(got) != sent {
		t.Errorf("%s{%s, success}: %d after the refused reload, want the %d sent", contract.MetricOutcomes, probe, got, sent)
	}
	t.Logf("sent %d successes; the last window the collector flushed counts %d", sent, wins[len(wins)-1].outcomes[contract.Success])
}

// --- the configuration and the collector ------------------------------------

// reloadConfig fills testdata/reload.yaml.
type reloadConfig struct {
	Probes  []reloadProbe
	History int
	// StartsInConnector has the connector alone match the spans and take
	// the start events; otherwise the processor does both.
	StartsInConnector bool
}

// reloadProbe is a probe of both the processor and the connector.
type reloadProbe struct {
	Name string
	DMax time.Duration
	Bins int
	// QTA is the connector's probes::NAME::qta in YAML flow style, with a
	// QTA trigger; empty: none.
	QTA string
}

// reloadCollector is the built collector running a configuration file the
// test writes and rewrites.
type reloadCollector struct {
	*e2etest.Collector
	file string
	tmpl *template.Template
}

// startReloadCollector writes cfg and starts the collector with it, sending
// the ΔQ output to sink, and waits until it is ready.
func startReloadCollector(t *testing.T, otelcol, sink string, cfg reloadConfig) *reloadCollector {
	t.Helper()
	tmpl, err := template.ParseFiles(filepath.Join("testdata", "reload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := &reloadCollector{file: filepath.Join(t.TempDir(), "collector.yaml"), tmpl: tmpl}
	c.write(t, cfg)
	c.Collector = e2etest.StartCollector(t, "collector", otelcol, []string{c.file}, "DELTAQ_SINK="+sink)
	c.waitLog(t, 1, "Everything is ready")
	return c
}

// write writes the configuration file: to a temporary file renamed over
// it, so that the collector never reads half of it.
func (c *reloadCollector) write(t *testing.T, cfg reloadConfig) {
	t.Helper()
	var b bytes.Buffer
	if err := c.tmpl.Execute(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.file+".tmp", b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(c.file+".tmp", c.file); err != nil {
		t.Fatal(err)
	}
}

// reload rewrites the configuration with cfg and sends SIGHUP; it returns
// when the collector is ready again, with the times of the signal and of
// the ready.
func (c *reloadCollector) reload(t *testing.T, cfg reloadConfig) (hup, ready time.Time) {
	t.Helper()
	c.write(t, cfg)
	hup = time.Now()
	c.Signal(t, syscall.SIGHUP)
	c.waitLog(t, 2, "Everything is ready")
	return hup, time.Now()
}

// waitLog waits until n lines of the collector's log contain msg.
func (c *reloadCollector) waitLog(t *testing.T, n int, msg string) {
	t.Helper()
	e2etest.Until(t, fmt.Sprintf("%q logged %d times", msg, n), 30*time.Second, func() bool {
		seen := 0
		for _, l := range c.Lines() {
			if strings.Contains(l.Text, msg) {
				seen++
			}
		}
		return seen >= n
	}, c.Proc)
}

// expectLog checks that exactly one log line holds msg, and that it holds
// every one of fields too.
func (c *reloadCollector) expectLog(t *testing.T, msg string, fields ...string) {
	t.Helper()
	var found []string
	for _, l := range c.Lines() {
		if strings.Contains(l.Text, msg) {
			found = append(found, l.Text)
		}
	}
	if len(found) != 1 {
		t.Errorf("the collector logged %q %d times, want once: %q", msg, len(found), found)
		return
	}
	for _, f := range fields {
		if !strings.Contains(found[0], f) {
			t.Errorf("the collector logged %q without %s: %s", msg, f, found[0])
		}
	}
}

// expectNoLog checks that no log line holds any of msgs.
func (c *reloadCollector) expectNoLog(t *testing.T, msgs ...string) {
	t.Helper()
	for _, l := range c.Lines() {
		for _, m := range msgs {
			if strings.Contains(l.Text, m) {
				t.Errorf("the collector logged %q: %s", m, l.Text)
			}
		}
	}
}

// --- what the test sends ------------------------------------------------------

// sender sends spans and start events over OTLP/gRPC, each request again
// until the collector acknowledges it (its receiver is down for a moment
// during a reload), built afresh for each attempt so that its times are
// current; the ledgers record what was acknowledged.
type sender struct {
	t      *testing.T
	traces ptraceotlp.GRPCClient
	logs   plogotlp.GRPCClient
	// ledger is what each probe was sent; next numbers the instances.
	mu     sync.Mutex
	ledger map[string]*ledger
	next   uint64
	// refused counts the attempts that failed; errs the requests given up.
	refused atomic.Int64
	errs    []error
	wg      sync.WaitGroup
}

// ledger is what a probe was sent and acknowledged, by window (Unix time ÷
// interval): the successes by the bin of their delay and the sum of their
// delays, the timeouts by the window of their start + dMax.
type ledger struct {
	bins     map[int64][]uint64
	sums     map[int64]float64
	timeouts map[int64]int64
}

func (l *ledger) totalSuccesses() (n uint64) {
	for _, b := range l.bins {
		for _, k := range b {
			n += k
		}
	}
	return n
}

func (l *ledger) totalTimeouts() (n int64) {
	for _, k := range l.timeouts {
		n += k
	}
	return n
}

// pending is a start event whose span the test sends later.
type pending struct {
	probe string
	tid   pcommon.TraceID
	sid   pcommon.SpanID
	start time.Time
}

func newSender(t *testing.T, addr string) *sender {
	// A short reconnection backoff: gRPC's default waits a second or more
	// before it tries the collector's receiver again after the reload.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &sender{t: t, traces: ptraceotlp.NewGRPCClient(conn), logs: plogotlp.NewGRPCClient(conn),
		ledger: map[string]*ledger{}}
}

// send builds and sends a request until it is acknowledged, then calls the
// ack that build returned; it gives up after 20 s.
func (s *sender) send(what string, build func(now time.Time) (export func(context.Context) error, ack func())) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		export, ack := build(time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := export(ctx)
		cancel()
		if err == nil {
			ack()
			return
		}
		s.refused.Add(1)
		if time.Now().After(deadline) {
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("sending %s: %w", what, err))
			s.mu.Unlock()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check fails the test for the requests given up.
func (s *sender) check() {
	s.wg.Wait()
	for _, err := range s.errs {
		s.t.Error(err)
	}
}

// ids returns new trace and span ids, distinct and never zero.
func (s *sender) ids() (pcommon.TraceID, pcommon.SpanID) {
	s.mu.Lock()
	s.next++
	n := s.next
	s.mu.Unlock()
	var tid pcommon.TraceID
	var sid pcommon.SpanID
	tid[0], sid[0] = 0x7e, 0x7e
	binary.BigEndian.PutUint64(tid[8:], n)
	binary.BigEndian.PutUint64(sid[:], n|1<<62)
	return tid, sid
}

func (s *sender) ledgerOf(probe string) *ledger {
	l := s.ledger[probe]
	if l == nil {
		l = &ledger{bins: map[int64][]uint64{}, sums: map[int64]float64{}, timeouts: map[int64]int64{}}
		s.ledger[probe] = l
	}
	return l
}

// windowOf returns the window of a time.
func windowOf(t time.Time) int64 { return t.UnixNano() / int64(reloadInterval) }

// success records an acknowledged success of the given delay ending at end.
func (s *sender) success(probe string, end time.Time, delay time.Duration) {
	l := s.ledgerOf(probe)
	k := windowOf(end)
	if l.bins[k] == nil {
		l.bins[k] = make([]uint64, reloadBins)
	}
	l.bins[k][int(delay/reloadWidth)]++
	l.sums[k] += delay.Seconds()
}

// traffic sends, every 100 ms until the returned function is called, a
// batch of five successes of each probe, ending now (batch).
func (s *sender) traffic(probes ...string) (stop func()) {
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for b := 0; ; b++ {
			for _, p := range probes {
				s.batch(p, b)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(done) }
}

// batch sends five successes of the probe ending now, batch b of a cycle
// whose delays 20 ms·k + 5 ms, k = (7b + 11j) mod 50 for j < 5, are spread
// over the first 50 bins (k is the bin; the delay is 5 ms inside it, and
// inside bin 2k of 10 ms bins too); the distribution varies from one window
// to the next, so the band has a width.
func (s *sender) batch(probe string, b int) {
	type inst struct {
		tid   pcommon.TraceID
		sid   pcommon.SpanID
		delay time.Duration
	}
	var insts [5]inst
	for j := range insts {
		insts[j].tid, insts[j].sid = s.ids()
		insts[j].delay = time.Duration((7*b+11*j)%50)*reloadWidth + 5*time.Millisecond
	}
	s.send("spans of "+probe, func(now time.Time) (func(context.Context) error, func()) {
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for _, in := range insts {
			newSpan(spans, probe, in.tid, in.sid, now.Add(-in.delay), now)
		}
		return s.exportTraces(td), func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, in := range insts {
				s.success(probe, now, in.delay)
			}
		}
	})
}

func newSpan(spans ptrace.SpanSlice, name string, tid pcommon.TraceID, sid pcommon.SpanID, start, end time.Time) {
	sp := spans.AppendEmpty()
	sp.SetName(name)
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetTraceID(tid)
	sp.SetSpanID(sid)
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
}

// startEvents sends n start events of the probe starting now. Those of
// timeouts are recorded as timeouts in the window of their start + dMax;
// the others are returned, for lateSpans.
func (s *sender) startEvents(probe string, n int, timeouts bool) []pending {
	ps := make([]pending, n)
	for i := range ps {
		ps[i].probe = probe
		ps[i].tid, ps[i].sid = s.ids()
	}
	s.send("start events of "+probe, func(now time.Time) (func(context.Context) error, func()) {
		ld := plog.NewLogs()
		records := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for i := range ps {
			ps[i].start = now
			ev := records.AppendEmpty()
			ev.SetEventName(contract.StartEventName)
			ev.SetTraceID(ps[i].tid)
			ev.SetSpanID(ps[i].sid)
			ev.SetTimestamp(pcommon.NewTimestampFromTime(now))
			ev.Attributes().PutStr(contract.AttrProbe, probe)
		}
		return func(ctx context.Context) error {
				_, err := s.logs.Export(ctx, plogotlp.NewExportRequestFromLogs(ld))
				return err
			}, func() {
				if !timeouts {
					return
				}
				s.mu.Lock()
				defer s.mu.Unlock()
				s.ledgerOf(probe).timeouts[windowOf(now.Add(reloadDMax))] += int64(n)
			}
	})
	return ps
}

// lateSpans sends the spans of the pending start events, each ending at the
// middle of the last bin that has passed since its start: successes, which
// must not also time out. It fails the test when dMax has passed.
func (s *sender) lateSpans(ps []pending) {
	for _, p := range ps {
		s.send("a late span of "+p.probe, func(now time.Time) (func(context.Context) error, func()) {
			k := (now.Sub(p.start) - reloadWidth/2) / reloadWidth
			if k >= reloadBins {
				s.t.Fatalf("the reload took longer than dMax (%v): the span of a start event sent before it cannot be a success", reloadDMax)
			}
			return s.successSpan(p, k*reloadWidth+reloadWidth/2)
		})
	}
}

// spansEndingAt sends the span of each instance of ps, of the given delay
// (which must be within dMax) after its start, whenever that is now.
func (s *sender) spansEndingAt(ps []pending, delay time.Duration) {
	for _, p := range ps {
		s.send("a held span of "+p.probe, func(time.Time) (func(context.Context) error, func()) {
			return s.successSpan(p, delay)
		})
	}
}

// successSpan returns the export of the span of p ending delay after its
// start, and its acknowledgement: a success in the ledger.
func (s *sender) successSpan(p pending, delay time.Duration) (func(context.Context) error, func()) {
	td := ptrace.NewTraces()
	newSpan(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans(), p.probe, p.tid, p.sid,
		p.start, p.start.Add(delay))
	return s.exportTraces(td), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.success(p.probe, p.start.Add(delay), delay)
	}
}

// exportTraces returns the export of td over the sender's connection.
func (s *sender) exportTraces(td ptrace.Traces) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := s.traces.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		return err
	}
}

// --- what the sink got --------------------------------------------------------

// window is the connector's output for one probe and window.
type window struct {
	end pcommon.Timestamp
	// outcomes is deltaq.outcomes by outcome, outcomesStart its start time.
	outcomes      map[string]int64
	outcomesStart pcommon.Timestamp
	observed      *histPoint
	// curves are the deltaq.cdf series at their deltaq.le edges.
	curves map[string]map[string]float64
	// qta is deltaq.qta.point by deltaq.le, maxFailure
	// deltaq.qta.max_failure.
	qta        map[string]float64
	maxFailure float64
	violation  *float64
	// repeats counts the points that came twice for the window.
	repeats int
}

// histPoint is a deltaq.observed point.
type histPoint struct {
	start  pcommon.Timestamp
	bounds []float64
	counts []uint64
	count  uint64
	sum    float64
}

// foldWindows returns the probe's windows in the metrics, oldest first.
func foldWindows(mds []pmetric.Metrics, name string) []*window {
	byEnd := map[pcommon.Timestamp]*window{}
	at := func(ts pcommon.Timestamp) *window {
		w := byEnd[ts]
		if w == nil {
			w = &window{end: ts, outcomes: map[string]int64{}, curves: map[string]map[string]float64{}}
			byEnd[ts] = w
		}
		return w
	}
	gauges := func(m pmetric.Metric, f func(w *window, a pcommon.Map, v float64)) {
		for _, dp := range m.Gauge().DataPoints().All() {
			if str(dp.Attributes(), contract.AttrProbe) == name {
				f(at(dp.Timestamp()), dp.Attributes(), dp.DoubleValue())
			}
		}
	}
	for _, md := range mds {
		for m := range otlprecv.Metrics(md) {
			switch m.Name() {
			case contract.MetricOutcomes:
				for _, dp := range m.Sum().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) != name {
						continue
					}
					w, oc := at(dp.Timestamp()), str(dp.Attributes(), contract.AttrOutcome)
					if _, ok := w.outcomes[oc]; ok {
						w.repeats++
					}
					w.outcomes[oc], w.outcomesStart = dp.IntValue(), dp.StartTimestamp()
				}
			case contract.MetricObserved:
				for _, dp := range m.Histogram().DataPoints().All() {
					if str(dp.Attributes(), contract.AttrProbe) == name {
						at(dp.Timestamp()).observed = &histPoint{start: dp.StartTimestamp(), bounds: dp.ExplicitBounds().AsRaw(),
							counts: dp.BucketCounts().AsRaw(), count: dp.Count(), sum: dp.Sum()}
					}
				}
			case contract.MetricCDF:
				gauges(m, func(w *window, a pcommon.Map, v float64) {
					series := str(a, contract.AttrSeries)
					if w.curves[series] == nil {
						w.curves[series] = map[string]float64{}
					}
					w.curves[series][str(a, contract.AttrLE)] = v
				})
			case contract.MetricQTAPoint:
				gauges(m, func(w *window, a pcommon.Map, v float64) {
					if w.qta == nil {
						w.qta = map[string]float64{}
					}
					w.qta[str(a, contract.AttrLE)] = v
				})
			case contract.MetricQTAMaxFailure:
				gauges(m, func(w *window, _ pcommon.Map, v float64) { w.maxFailure = v })
			case contract.MetricQTAViolation:
				gauges(m, func(w *window, _ pcommon.Map, v float64) { w.violation = &v })
			}
		}
	}
	wins := make([]*window, 0, len(byEnd))
	for _, w := range byEnd {
		wins = append(wins, w)
	}
	slices.SortFunc(wins, func(a, b *window) int { return cmp.Compare(a.end, b.end) })
	return wins
}

// curve returns a deltaq.cdf series of the window as a CDF at the bin
// edges, or nil when the window lacks it.
func (w *window) curve(series string) []float64 {
	pts := w.curves[series]
	if len(pts) == 0 {
		return nil
	}
	type pt struct{ le, v float64 }
	var sorted []pt
	for le, v := range pts {
		x, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return nil
		}
		sorted = append(sorted, pt{x, v})
	}
	slices.SortFunc(sorted, func(a, b pt) int { return cmp.Compare(a.le, b.le) })
	cdf := make([]float64, len(sorted))
	for i, p := range sorted {
		cdf[i] = p.v
	}
	return cdf
}

// --- the checks ---------------------------------------------------------------

// checkCounts checks the windows one by one against what was sent: no gap,
// no window twice, each window's increments of deltaq.outcomes and
// deltaq.observed exactly the instances of the window by outcome and bin,
// and one start time per cumulative stream.
func checkCounts(t *testing.T, wins []*window, l *ledger) {
	t.Helper()
	if len(wins) < 2 {
		t.Fatalf("%d windows in the output, want many", len(wins))
	}
	var prev window
	prev.outcomes = map[string]int64{}
	var prevObs *histPoint
	for i, w := range wins {
		k := int64(w.end)/int64(reloadInterval) - 1
		if i > 0 && w.end-wins[i-1].end != pcommon.Timestamp(reloadInterval) {
			t.Errorf("window ending %v follows the one ending %v: not the next window", w.end, wins[i-1].end)
		}
		if w.repeats > 0 {
			t.Errorf("window ending %v: %s came %d more times", w.end, contract.MetricOutcomes, w.repeats)
		}
		if w.outcomesStart != wins[0].outcomesStart {
			t.Errorf("window ending %v: %s starts at %v, the first window's at %v: not one stream",
				w.end, contract.MetricOutcomes, w.outcomesStart, wins[0].outcomesStart)
		}
		var succ uint64
		for _, n := range l.bins[k] {
			succ += n
		}
		want := map[string]int64{contract.Success: int64(succ), contract.Timeout: l.timeouts[k], contract.Failure: 0}
		for oc, n := range want {
			if got := w.outcomes[oc] - prev.outcomes[oc]; got != n {
				t.Errorf("window ending %v: %s{%s} grew by %d, want %d", w.end, contract.MetricOutcomes, oc, got, n)
			}
		}
		prev = *w
		if w.observed == nil {
			if succ > 0 || prevObs != nil {
				t.Errorf("window ending %v: no %s", w.end, contract.MetricObserved)
			}
			continue
		}
		o := w.observed
		if prevObs != nil && o.start != prevObs.start {
			t.Errorf("window ending %v: %s starts at %v, the previous window's at %v: not one stream",
				w.end, contract.MetricObserved, o.start, prevObs.start)
		}
		for b := range reloadBins {
			want := uint64(0)
			if l.bins[k] != nil {
				want = l.bins[k][b]
			}
			got := o.counts[b]
			if prevObs != nil {
				got -= prevObs.counts[b]
			}
			if got != want {
				t.Errorf("window ending %v: %s bucket %d grew by %d, want %d", w.end, contract.MetricObserved, b, got, want)
			}
		}
		sum := o.sum
		if prevObs != nil {
			sum -= prevObs.sum
		}
		if math.Abs(sum-l.sums[k]) > 1e-6 {
			t.Errorf("window ending %v: %s sum grew by %.9f s, want %.9f s", w.end, contract.MetricObserved, sum, l.sums[k])
		}
		prevObs = o
	}
	last := wins[len(wins)-1]
	if n := last.outcomes[contract.Success]; n != int64(l.totalSuccesses()) {
		t.Errorf("%s{%s}: %d at the end, want %d", contract.MetricOutcomes, contract.Success, n, l.totalSuccesses())
	}
	if n := last.outcomes[contract.Timeout]; n != l.totalTimeouts() {
		t.Errorf("%s{%s}: %d at the end, want %d", contract.MetricOutcomes, contract.Timeout, n, l.totalTimeouts())
	}
	for k := range l.bins {
		if k+1 < int64(wins[0].end)/int64(reloadInterval) || k+1 > int64(last.end)/int64(reloadInterval) {
			t.Errorf("successes sent in window %d, which is not in the output", k)
		}
	}
}

// checkBand checks the band of every window against the band of the last
// reloadHistory observed ΔQs (deltaq.Band), the windows before the reload
// included: a fresh engine would start again with K = 1, whose band is
// [0, 1]. Each observed ΔQ is rebuilt from its curve and its window's
// instances (the growth of deltaq.outcomes), whose count the band's
// binomial floor reads.
func checkBand(t *testing.T, wins []*window) {
	t.Helper()
	width := reloadWidth.Seconds()
	var history []deltaq.DeltaQ
	prev := map[string]int64{}
	for _, w := range wins {
		var n int64
		for oc, c := range w.outcomes {
			n += c - prev[oc]
		}
		prev = w.outcomes
		if obs := w.curve(contract.SeriesObserved); obs != nil {
			d, err := fromCurve(width, obs, n)
			if err != nil {
				t.Fatalf("window ending %v: observed CDF: %v", w.end, err)
			}
			history = append(history, d)
			if len(history) > reloadHistory {
				history = history[1:]
			}
		}
		mean, lower, upper := w.curve(contract.SeriesMean), w.curve(contract.SeriesLower), w.curve(contract.SeriesUpper)
		if len(history) == 0 {
			if mean != nil {
				t.Errorf("window ending %v: a band before any observed ΔQ", w.end)
			}
			continue
		}
		want, err := deltaq.Band(history)
		if err != nil {
			t.Fatal(err)
		}
		if len(mean) != reloadBins || len(lower) != reloadBins || len(upper) != reloadBins {
			t.Errorf("window ending %v: band of %d/%d/%d edges, want %d", w.end, len(mean), len(lower), len(upper), reloadBins)
			continue
		}
		for i := range reloadBins {
			if math.Abs(mean[i]-want.Mean[i]) > 1e-9 || math.Abs(lower[i]-want.Lower[i]) > 1e-9 ||
				math.Abs(upper[i]-want.Upper[i]) > 1e-9 {
				t.Errorf("window ending %v, edge %d: band %.6f [%.6f, %.6f], want %.6f [%.6f, %.6f] over the last %d windows",
					w.end, i, mean[i], lower[i], upper[i], want.Mean[i], want.Lower[i], want.Upper[i], len(history))
				break
			}
		}
	}
}

// fromCurve returns the observed ΔQ of n instances whose CDF at the right
// edges of bins of width width is cdf: ⌊ΔF·n⌉ instances in the middle of
// each bin, the rest failed.
func fromCurve(width float64, cdf []float64, n int64) (deltaq.DeltaQ, error) {
	var delays []float64
	prev := 0.0
	for i, f := range cdf {
		for range int(math.Round((f - prev) * float64(n))) {
			delays = append(delays, (float64(i)+0.5)*width)
		}
		prev = f
	}
	if int64(len(delays)) > n {
		return deltaq.DeltaQ{}, fmt.Errorf("%d successes of %d instances", len(delays), n)
	}
	return deltaq.FromInstances(width, len(cdf), delays, 0, n-int64(len(delays)))
}

// checkQTA checks that the windows closed before the SIGHUP carry the
// lenient QTA and those closed after the collector was ready again the
// strict one, switching once, and that deltaq.qta.violation is the verdict
// of its window's QTA on its window's observed ΔQ: 0 under the lenient QTA,
// 1 under the strict one. It returns the first window under the strict QTA.
func checkQTA(t *testing.T, wins []*window, hup, ready time.Time) *window {
	t.Helper()
	var first *window
	lag := pcommon.Timestamp(reloadInterval)
	for i, w := range wins {
		closed := (w.end + lag).AsTime()
		strict := maps.Equal(w.qta, strictPoints)
		switch {
		case !strict && !maps.Equal(w.qta, lenientPoints):
			t.Errorf("window ending %v: %s %v, want %v or %v", w.end, contract.MetricQTAPoint, w.qta, lenientPoints, strictPoints)
			continue
		case strict && first == nil:
			first = w
			t.Logf("the strict QTA from window %d of %d, due to close %v after the SIGHUP", i+1, len(wins),
				closed.Sub(hup).Round(time.Millisecond))
		case !strict && first != nil:
			t.Errorf("window ending %v: the lenient QTA again after the strict one", w.end)
		}
		// A window closes at the first tick of the timer at or after its
		// end + lag: within one interval after.
		if strict && closed.Add(reloadInterval).Before(hup) {
			t.Errorf("window ending %v, closed before the SIGHUP, has the new QTA", w.end)
		}
		if !strict && closed.After(ready) {
			t.Errorf("window ending %v, closed %v after the collector was ready again, has the old QTA",
				w.end, closed.Sub(ready))
		}
		obs := w.curve(contract.SeriesObserved)
		if obs == nil {
			if w.violation != nil {
				t.Errorf("window ending %v: %s without an observed ΔQ", w.end, contract.MetricQTAViolation)
			}
			continue
		}
		if w.violation == nil {
			t.Errorf("window ending %v: no %s", w.end, contract.MetricQTAViolation)
			continue
		}
		q := deltaq.QTA{MaxFailure: w.maxFailure}
		for le, p := range w.qta {
			d, _ := strconv.ParseFloat(le, 64)
			q.Points = append(q.Points, deltaq.Step{Delay: d, P: p})
		}
		d, err := deltaq.FromCDF(reloadWidth.Seconds(), obs)
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.Check(d)
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if strict {
			want = 1
		}
		if !c.OK != (*w.violation == 1) || *w.violation != want {
			t.Errorf("window ending %v: %s %v, want %v (its QTA %v on its observed ΔQ: ok %v)",
				w.end, contract.MetricQTAViolation, *w.violation, want, w.qta, c.OK)
		}
	}
	if first == nil {
		t.Fatalf("no window with the new QTA %v", strictPoints)
	}
	if first.violation == nil {
		t.Errorf("window ending %v, the first after the reload: no verdict", first.end)
	}
	return first
}

// checkTrigger checks that the QTA trigger of the probe fired once, for
// the first window under the strict QTA, with that QTA's requirement.
func checkTrigger(t *testing.T, lds []plog.Logs, first *window) {
	t.Helper()
	var fired []plog.LogRecord
	for _, ld := range lds {
		for lr := range otlprecv.LogRecords(ld) {
			a := lr.Attributes()
			if lr.EventName() == contract.EventTrigger && str(a, contract.AttrProbe) == probe && str(a, contract.AttrTrigger) == "qta" {
				fired = append(fired, lr)
			}
		}
	}
	if len(fired) != 1 {
		t.Fatalf("%d QTA triggers, want 1 (at the first window after the reload)", len(fired))
	}
	lr := fired[0]
	if lr.Timestamp() != first.end {
		t.Errorf("the QTA trigger fired at %v, want %v (the end of the first window after the reload)", lr.Timestamp(), first.end)
	}
	a := lr.Attributes()
	req, _ := a.Get(contract.AttrRequired)
	del, _ := a.Get(contract.AttrDelay)
	if req.Double() != 0.6 || del.Double() != 0.1 {
		t.Errorf("the QTA trigger requires %v at %v s, want 0.6 at 0.1 s (the new QTA)", req.AsRaw(), del.AsRaw())
	}
}
