// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"bufio"
	"fmt"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Writer writes batches of spans as the collector's file exporter does
// with format: json: each batch is one ExportTraceServiceRequest in OTLP
// JSON (ptrace's JSON marshaler) on a line of its own, the form Read reads
// one line at a time. A corpus written this way reads like one recorded by
// a collector.
type Writer struct {
	path  string
	f     *os.File
	w     *bufio.Writer
	m     ptrace.JSONMarshaler
	spans int64
	err   error // the first write error; nothing is written after it
}

// Create creates (or truncates) the file at path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace file: %w", err)
	}
	return &Writer{path: path, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Write appends the n spans of td as one line; n = 0 writes nothing.
// After an error it writes nothing; Close reports the error.
func (t *Writer) Write(td ptrace.Traces, n int) {
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
}

// Spans returns the number of spans written so far (buffered ones included).
func (t *Writer) Spans() int64 { return t.spans }

// Close flushes and closes the file and returns the first error of the
// writes, the flush or the close.
func (t *Writer) Close() error {
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = fmt.Errorf("trace file %s: %w", t.path, err)
	}
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("trace file %s: %w", t.path, err)
	}
	return t.err
}
