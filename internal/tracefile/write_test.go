// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestWriterLines: each batch is one line holding exactly what ptrace's
// JSON marshaler (the file exporter's format: json) makes of it; empty
// batches write nothing; Read reads the file back batch by batch.
func TestWriterLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "traces.json")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tds, names := testRequests()
	for _, td := range tds {
		w.Write(td, td.SpanCount())
		w.Write(ptrace.NewTraces(), 0)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Spans() != 4 {
		t.Errorf("Spans() = %d, want 4", w.Spans())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, td := range tds {
		line, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		want = append(append(want, line...), '\n')
	}
	if !bytes.Equal(raw, want) {
		t.Fatalf("file holds\n%s\nwant\n%s", raw, want)
	}
	if got, err := readAll(t, path, Options{}); err != nil || !slices.Equal(got, names) {
		t.Errorf("read back %q, %v; want %q", got, err, names)
	}
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir", "t.json")); err == nil || !strings.HasPrefix(err.Error(), "trace file: ") {
		t.Errorf("file in a missing directory: %v", err)
	}
}
