// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/deltaq-otel/deltaq/internal/otlprecv"

	"github.com/deltaq-otel/deltaq/internal/workload"
)

// readTraceLines reads a file written by TraceFile: one OTLP JSON
// ExportTraceServiceRequest per line, as the collector's file exporter
// writes with format: json.
func readTraceLines(t *testing.T, path string) []ptrace.Traces {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []ptrace.Traces
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalJSON(sc.Bytes()); err != nil {
			t.Fatalf("%s:%d: not an ExportTraceServiceRequest: %v", path, n, err)
		}
		out = append(out, req.Traces())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A run without a collector writes its spans to the file only, simulated as
// fast as possible: -duration 20s takes far less, yet the spans cover 20 s of
// simulated time. The file's traces have the system's shape: a root job span,
// parent of a worker_1 span that starts with it and a worker_2 span that runs
// from worker_1's end to the job's end, each with the ramp's rate of the
// job's arrival.
func TestRunTraceFileOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.json")
	var out bytes.Buffer
	began := time.Now()
	err := run([]string{"-endpoint", "", "-trace-file", path, "-topology", "delays", "-rate", "50", "-ramp-to", "150",
		"-ramp-over", "10s", "-ramp-step", "5s", "-duration", "20s", "-report", "5s", "-seed", "11"}, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if elapsed := time.Since(began); elapsed > 10*time.Second {
		t.Errorf("20 s of simulated time took %v", elapsed)
	}
	for _, s := range []string{"    5.0s λ=100/s jobs=", "   10.0s λ=150/s jobs=", "final: "} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	type trace struct{ job, w1, w2 ptrace.Span }
	traces := make(map[pcommon.TraceID]*trace)
	spans := 0
	var first, last pcommon.Timestamp
	for _, td := range readTraceLines(t, path) {
		for sp := range otlprecv.Spans(td) {
			spans++
			tr := traces[sp.TraceID()]
			if tr == nil {
				tr = &trace{}
				traces[sp.TraceID()] = tr
			}
			switch sp.Name() {
			case workload.ProbeJob:
				tr.job = sp
			case workload.ProbeWorker1:
				tr.w1 = sp
			case workload.ProbeWorker2:
				tr.w2 = sp
			}
			if first == 0 || sp.StartTimestamp() < first {
				first = sp.StartTimestamp()
			}
			last = max(last, sp.EndTimestamp())
		}
	}
	if !strings.Contains(out.String(), "file spans="+strconv.Itoa(spans)+"\n") || spans != 3*len(traces) {
		t.Fatalf("file holds %d spans of %d traces; the run says:\n%s", spans, len(traces), out.String())
	}
	if d := last.AsTime().Sub(first.AsTime()); d < 19*time.Second || d > 21*time.Second {
		t.Errorf("spans cover %v of simulated time, want about 20 s", d)
	}
	for id, tr := range traces {
		j, w1, w2 := tr.job, tr.w1, tr.w2
		if !j.ParentSpanID().IsEmpty() || w1.ParentSpanID() != j.SpanID() || w2.ParentSpanID() != j.SpanID() {
			t.Fatalf("trace %v: worker spans are not children of the job span", id)
		}
		if w1.StartTimestamp() != j.StartTimestamp() || w2.StartTimestamp() != w1.EndTimestamp() || j.EndTimestamp() != w2.EndTimestamp() {
			t.Fatalf("trace %v: worker_1 then worker_2 must fill the job", id)
		}
		rate, _ := j.Attributes().Get(workload.AttrRate)
		at := time.Duration(j.StartTimestamp() - first)
		want := 150.0
		switch {
		case at < 4900*time.Millisecond:
			want = 50
		case at > 5100*time.Millisecond && at < 9900*time.Millisecond:
			want = 100
		case at <= 10100*time.Millisecond:
			continue // near a step: first is the first arrival, not the start
		}
		if rate.Double() != want {
			t.Fatalf("trace %v: job at %v carries %s %v, want %v", id, at, workload.AttrRate, rate.Double(), want)
		}
		if r, _ := w2.Attributes().Get(workload.AttrRate); r.Double() != want {
			t.Fatalf("trace %v: worker_2 carries %s %v, want the job's %v", id, workload.AttrRate, r.Double(), want)
		}
	}
}

// The command line is checked before anything runs.
func TestParseFlagsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-topology", "ring"}, "topology must be tandem, shared or delays"},
		{[]string{"-endpoint", ""}, "-endpoint is empty and there is no -trace-file"},
		{[]string{"-endpoint", "", "-trace-file", "t.json"}, "-duration must be set"},
		{[]string{"-ramp-to", "200", "-ramp-over", "0s"}, "ramp duration"},
		{[]string{"-ramp-to", "200", "-ramp-step", "-1s"}, "ramp step"},
		{[]string{"-speed2", "0"}, "speed factor of worker_2"},
	} {
		_, err := parseFlags(c.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	o, err := parseFlags([]string{"-topology", "shared", "-speed1", "0.5", "-ramp-to", "300", "-ramp-step", "0s"}, &bytes.Buffer{})
	if err != nil || o.cfg.Topology != workload.TopologyShared || o.cfg.Speed != [2]float64{0.5, 1} || o.cfg.RampTo != 300 ||
		o.cfg.RampOver != time.Minute || o.cfg.RampStep != 0 {
		t.Errorf("parsed %+v, %v", o.cfg, err)
	}
}
