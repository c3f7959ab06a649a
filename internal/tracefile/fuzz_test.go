// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// FuzzRead reads arbitrary files, every form detected and each forced, with
// small bounds. A read must end (no panic, no hang), every error must name
// the file, a read that succeeds or ends in a record cut short must have
// read a complete record first, and the requests passed on must hold no more spans than the
// file could encode: a span takes more than one byte of any form (zstd is
// bounded by the decompressed record, MaxLine).
func FuzzRead(f *testing.F) {
	tds, _ := testRequests()
	for _, form := range fileExporterForms {
		b, _ := fileExporterFile(f, tds, form.format, form.compression, form.native)
		f.Add(b, uint8(0))
		f.Add(b[:len(b)*2/3], uint8(0)) // cut short
	}
	f.Add([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102","spanId":"01","name":"a"}]}]}]}`), uint8(1))
	f.Add([]byte("\xef\xbb\xbf{\n \"resourceSpans\": [\n ]\n}\n{\"resourceSpans\":[]}"), uint8(0))
	f.Add([]byte("\x03\x00\x00\x00..."), uint8(2))
	f.Add([]byte("\x28\xb5\x2f\xfd"), uint8(3))
	f.Add([]byte(`{"a":"}\"{[","resourceSpans":[]}{`), uint8(1))
	f.Fuzz(func(t *testing.T, file []byte, mode uint8) {
		path := filepath.Join(t.TempDir(), "t.bin")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		const bound = 4 << 10
		o := Options{MaxLine: bound, MaxDocument: bound}
		switch mode % 5 {
		case 1:
			o.Format, o.Compression = "json", "none"
		case 2:
			o.Format, o.Compression = "proto", "none"
		case 3:
			o.Format, o.Compression = "proto", "zstd"
		case 4:
			o.Format, o.Compression = "json", "zstd"
		}
		spans, records := 0, 0
		err := Read(path, o, func(td ptrace.Traces) error {
			records++
			spans += td.SpanCount()
			return nil
		})
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error %q does not name the file", err)
		}
		// Success, or a last record cut short, follows a complete record.
		var te *TruncatedError
		if (err == nil || errors.As(err, &te)) && records == 0 {
			t.Fatalf("no record read, and error %v", err)
		}
		// A record's spans are bounded by its decompressed size, and the
		// records by the file's.
		if limit := (records + 1) * bound; spans > limit {
			t.Fatalf("%d spans from a file of %d bytes (%d records)", spans, len(file), records)
		}
	})
}
