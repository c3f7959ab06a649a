// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"
	"github.com/deltaq-otel/deltaq/internal/otlptest"

	"github.com/deltaq-otel/deltaq/internal/workload"
)

// A short real-time run against the in-process collector: everything the
// workload reports as sent arrives, the traces have the system's shape, and
// every start event announces a span that arrives later. -trace-file holds
// the same spans.
func TestRun(t *testing.T) {
	c := otlptest.Start(t, otlptest.Options{})
	var out bytes.Buffer
	path := filepath.Join(t.TempDir(), "traces.json")
	err := run([]string{"-endpoint", c.Addr(), "-rate", "400", "-mu1", "500", "-mu2", "300", "-k", "4",
		"-duration", "700ms", "-flush", "20ms", "-report", "0", "-seed", "7", "-trace-file", path}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "final: ") {
		t.Fatalf("no final counts:\n%s", out.String())
	}
	spans := make(map[pcommon.SpanID]ptrace.Span)
	probes := make(map[string]int)
	var errorsSeen int
	for _, td := range c.Traces() {
		for sp := range otlprecv.Spans(td) {
			spans[sp.SpanID()] = sp
			probes[sp.Name()]++
			if sp.Status().Code() == ptrace.StatusCodeError {
				errorsSeen++
			}
		}
	}
	if probes[workload.ProbeJob] == 0 || probes[workload.ProbeWorker1] != probes[workload.ProbeJob] || probes[workload.ProbeWorker2] == 0 {
		t.Fatalf("spans per name %v: want one job and one worker_1 span per job", probes)
	}
	if errorsSeen == 0 {
		t.Errorf("no failure spans at ρ₂ = 1.33 with K = 4")
	}
	if !strings.Contains(out.String(), "spans sent="+strconv.Itoa(len(spans))+" failed=0 queue_dropped=0") {
		t.Errorf("collector got %d spans; workload says:\n%s", len(spans), out.String())
	}
	starts := 0
	for _, lg := range c.Logs() {
		for lr := range otlprecv.LogRecords(lg) {
			starts++
			sp, ok := spans[lr.SpanID()]
			if !ok {
				t.Fatalf("start event for span %v that never arrived", lr.SpanID())
			}
			if lr.Timestamp() != sp.StartTimestamp() {
				t.Fatalf("start event at %v, its span starts at %v", lr.Timestamp(), sp.StartTimestamp())
			}
		}
	}
	if starts == 0 {
		t.Errorf("no start events: with 20 ms flushes some instances are open at a flush")
	}
	inFile := 0
	for _, td := range readTraceLines(t, path) {
		for sp := range otlprecv.Spans(td) {
			inFile++
			if _, ok := spans[sp.SpanID()]; !ok {
				t.Fatalf("span %v in the file never reached the collector", sp.SpanID())
			}
		}
	}
	if inFile != len(spans) || !strings.Contains(out.String(), "file spans="+strconv.Itoa(inFile)) {
		t.Errorf("file holds %d spans, the collector %d; workload says:\n%s", inFile, len(spans), out.String())
	}
}

// A collector that is gone cannot hold the exit: the batches queued for it
// are given -close-timeout, then counted as not delivered, and the run fails
// saying so. Each export would otherwise wait its -timeout (a minute here).
func TestRunEndsWhenTheCollectorIsGone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var out bytes.Buffer
	start := time.Now()
	err = run([]string{"-endpoint", addr, "-duration", "300ms", "-drain", "100ms", "-timeout", "1m",
		"-close-timeout", "300ms", "-report", "0", "-seed", "7"}, &out)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "not delivered") {
		t.Fatalf("run: %v, want an error saying what was not delivered\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "-close-timeout 300ms over") {
		t.Errorf("the output does not say the close timed out:\n%s", out.String())
	}
	if took > 10*time.Second {
		t.Errorf("the run took %v: 300 ms of arrivals, 100 ms of drain, 300 ms to close", took)
	}
}
