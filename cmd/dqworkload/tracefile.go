// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TraceFile writes batches of spans as the collector's file exporter does
// with format: json: each batch is one ExportTraceServiceRequest in OTLP JSON
// (ptrace's JSON marshaler) on a line of its own. A corpus recorded this way
// reads like one recorded by a collector (deltaq analyze reads both).
type TraceFile struct {
	path  string
	f     *os.File
	w     *bufio.Writer
	m     ptrace.JSONMarshaler
	spans int64
	lines int64
	err   error // the first write error; nothing is written after it
}

// CreateTraceFile creates (or truncates) the file at path.
func CreateTraceFile(path string) (*TraceFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace file: %w", err)
	}
	return &TraceFile{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Write appends the n spans of td as one line. After an error it writes
// nothing; Close reports the error.
func (t *TraceFile) Write(td ptrace.Traces, n int) {
	if n == 0 || t.err != nil {
		return
	}
	b, err := t.m.MarshalTraces(td)
	if err == nil {
		_, err = t.w.Write(append(b, '\n'))
	}
	if err != nil {
		t.err = fmt.Errorf("trace file %s: %w", t.path, err)
		return
	}
	t.spans += int64(n)
	t.lines++
}

// Spans returns the number of spans written so far (buffered ones included).
func (t *TraceFile) Spans() int64 { return t.spans }

// Close flushes and closes the file and returns the first error of the
// writes, the flush or the close.
func (t *TraceFile) Close() error {
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = fmt.Errorf("trace file %s: %w", t.path, err)
	}
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("trace file %s: %w", t.path, err)
	}
	return t.err
}
