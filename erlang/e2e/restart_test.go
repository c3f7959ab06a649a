// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/internal/e2etest"
	"github.com/deltaq-otel/deltaq/internal/otlptest"
)

// The restart test's run: the example at 60 jobs/s (ρ = 0.48 at each
// station) for restartRunSeconds; the collector killed killAfter into it
// and started again outage later. dqsd_otel's batches are of restartBatch
// items rather than 512, so that the backlog (some 1,500 items) fills many
// batches and many a start event falls in another batch than its span:
// before start events were elided across an export round, this run counted
// 3 to 17 false timeouts (five runs), 3 or 4 with batches of 512.
const (
	restartRate       = 60.0
	restartRunSeconds = 12
	restartBatch      = 64
	killAfter         = 4 * time.Second
	outage            = 3 * time.Second
)

const metricAcceptedSpans = "otelcol_receiver_accepted_spans"

// TestMM1KCollectorRestart runs erlang/examples/mm1k.escript against the
// built collector with testdata/restart.yaml (the deltaq connector alone,
// taking the example's start events), kills the collector killAfter into
// the run and starts it again on the same port outage later. Meanwhile
// dqsd_otel queues a backlog of several batches, which it sends to the new
// collector in one export round. It checks that
//  1. the new collector's connector counts no timeout in real time
//     (start_timeouts = 0) and no late span: at dMax = 1 s and 2 s and
//     ρ = 0.48 no instance truly runs past dMax (a chance of about e^(−75)),
//     so any timeout is a false one: a start event sent, already overdue,
//     before its span. dqsd_otel sends no start event whose span is in the
//     same export round, nor, after a retry, one whose span was queued
//     meanwhile;
//  2. the test is not idle: the new collector tracked start events (of the
//     spans running when they went) and received the backlog (at least the
//     spans of the outage's jobs);
//  3. dqsd_otel lost nothing: it counted no failed span or start event
//     (its retries outlast the restart: with 5 retries, 1.5 to 3.1 s, it
//     gave up on 2 to 96 items of the backlog per run) and dropped none
//     (the backlog fits in its queue);
//  4. the example exits 0 and the new collector stops cleanly.
//
// The first collector's start_timeouts are logged before it is killed.
func TestMM1KCollectorRestart(t *testing.T) {
	otelcol := e2etest.Gate(t, gateEnv, "the Erlang end-to-end tests (they need Erlang/OTP too)")
	root, escript, ebin := prerequisites(t)
	sink := otlptest.Start(t, otlptest.Options{})
	telemetry := e2etest.FreeAddr(t)
	env := []string{"DELTAQ_SINK=" + sink.Addr(), "DELTAQ_TELEMETRY_PORT=" + e2etest.Port(telemetry)}
	const config = "erlang/e2e/testdata/restart.yaml"
	col, httpAddr := startCollector(t, root, otelcol, config, env...)
	e2etest.WaitListening(t, httpAddr, 30*time.Second, col)
	e2etest.WaitListening(t, telemetry, 30*time.Second, col)

	mm := startExample(t, escript, ebin, root, httpAddr, restartRate, restartRunSeconds, "mm1k-restart",
		"--batch-size", strconv.Itoa(restartBatch))
	began := time.Now()
	time.Sleep(killAfter)
	e2etest.CheckRunning(t, col, mm)
	before := e2etest.Scrape(t, telemetry)
	col.Kill(t)
	killedAt := time.Now()
	t.Logf("collector killed %v into the run: %.0f start events tracked, %.0f timeouts in real time, %.0f spans",
		killedAt.Sub(began).Round(time.Millisecond), before.Sum(metricStartEvents, map[string]string{"result": "tracked"}),
		before.Sum(metricStartTimeouts, nil), before.Sum(metricAcceptedSpans, nil))

	time.Sleep(outage)
	col2 := startCollectorOn(t, "collector (restarted)", root, otelcol, config, httpAddr, env...)
	e2etest.WaitListening(t, httpAddr, 30*time.Second, col2, mm)
	e2etest.WaitListening(t, telemetry, 30*time.Second, col2, mm)
	t.Logf("collector started again, listening %v after the kill", time.Since(killedAt).Round(time.Millisecond))

	if err := mm.Wait(t, time.Until(began.Add(restartRunSeconds*time.Second))+30*time.Second); err != nil {
		t.Fatalf("mm1k exited with %v, want exit status 0", err)
	}
	// Every instance tracked has ended: its span came, or it timed out.
	e2etest.Until(t, "no instance left started", 5*time.Second, func() bool {
		return e2etest.Scrape(t, telemetry).Sum(metricInFlight, map[string]string{"state": "started"}) == 0
	}, col2)
	checkRestart(t, e2etest.Scrape(t, telemetry), mm.Lines())
	col2.StopCleanly(t)
}

// checkRestart checks the restarted collector's telemetry at the end and
// the example's done line.
func checkRestart(t *testing.T, tm e2etest.Telemetry, out []e2etest.Line) {
	t.Helper()
	done := doneLine(out)
	if done == nil {
		t.Fatalf("mm1k printed no \"mm1k: done\" line")
	}
	for _, k := range []string{"dropped", "export_failed"} {
		if _, ok := done[k]; !ok {
			t.Fatalf("mm1k's done line lacks %s=", k)
		}
	}
	timeouts, late := tm.Sum(metricStartTimeouts, nil), tm.Sum(metricLateSpans, nil)
	tracked, spans := tm.Sum(metricStartEvents, map[string]string{"result": "tracked"}), tm.Sum(metricAcceptedSpans, nil)
	t.Logf("restarted collector: %.0f start events tracked, %.0f after their span; %.0f spans; "+
		"%.0f timeouts in real time, %.0f late spans", tracked,
		tm.Sum(metricStartEvents, map[string]string{"result": "after_end"}), spans, timeouts, late)
	t.Logf("mm1k done: %v", done)
	if timeouts != 0 || late != 0 {
		t.Errorf("%s = %.0f and %s = %.0f after the restart, want 0: start events went, overdue, before their spans",
			metricStartTimeouts, timeouts, metricLateSpans, late)
	}
	if tracked == 0 {
		t.Errorf("%s{result=tracked} = 0: the restarted collector took no start event, the test proves nothing", metricStartEvents)
	}
	// The counts are dqsd_otel's over the whole run, after its final flush.
	if done["export_failed"] != 0 || done["dropped"] != 0 {
		t.Errorf("dqsd_otel counted %d spans and start events as failed (given up on after their retries) "+
			"and %d as dropped (the queue full), want 0: a restart of %v should lose nothing",
			done["export_failed"], done["dropped"], outage)
	}
	// Each job makes two or three spans; those of the outage's jobs at
	// least went to the new collector.
	if want := 2 * restartRate * outage.Seconds(); spans < want {
		t.Errorf("the restarted collector accepted %.0f spans, want at least %.0f (the outage's backlog)", spans, want)
	}
}
