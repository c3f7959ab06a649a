// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// forEachSpan calls fn with every span of td.
func forEachSpan(td ptrace.Traces, fn func(ptrace.Span)) {
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				fn(s)
			}
		}
	}
}

// readAll reads a trace file with Read and returns the span names of
// every request, one string per request.
func readAll(t *testing.T, path string, o Options) ([]string, error) {
	t.Helper()
	var docs []string
	err := Read(path, o, func(td ptrace.Traces) error {
		var names []string
		forEachSpan(td, func(s ptrace.Span) { names = append(names, s.Name()) })
		docs = append(docs, strings.Join(names, ","))
		return nil
	})
	return docs, err
}

// bounds are Options with the given bounds, the format detected.
func bounds(maxLine, maxDoc int) Options { return Options{MaxLine: maxLine, MaxDocument: maxDoc} }

// TestReadTraceFileLayouts: the same documents read alike from JSON lines
// (with blank lines, CRLF line ends and no final line break), from indented
// documents, and from several documents on one line, after a byte order
// mark or not (or one per file concatenated), with strings holding
// brackets, quotes and backslashes that the splitter must skip.
func TestReadTraceFileLayouts(t *testing.T) {
	doc := func(names ...string) string {
		var spans []string
		for i, n := range names {
			b, _ := json.Marshal(n)
			spans = append(spans, fmt.Sprintf(`{"traceId":"%032x","spanId":"%016x","name":%s,"startTimeUnixNano":"1","endTimeUnixNano":"2"}`, i+1, i+1, b))
		}
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Join(spans, ",") + `]}]}]}`
	}
	d1, d2 := doc("a", `b}]"{\`), doc("c", "d", "e\n[")
	indent := func(s string) string {
		var b bytes.Buffer
		if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	want := []string{`a,b}]"{\`, "c,d,e\n["}
	for name, content := range map[string]string{
		"lines":          d1 + "\n" + d2 + "\n",
		"blank and CRLF": "\r\n" + d1 + "\r\n\r\n  \n" + d2,
		"indented":       indent(d1) + "\n" + indent(d2) + "\n",
		"indented, CRLF": strings.ReplaceAll(indent(d1)+"\n\n"+indent(d2), "\n", "\r\n"),
		"one line":       d1 + " " + d2 + "\n",
		"split mid-line": indent(d1) + d2 + "\n",
		// After a first line of one document: an indented one (files
		// of both layouts concatenated), once read as a line.
		"lines, then indented": d1 + "\n" + indent(d2) + "\n",
		// A byte order mark, as some editors write: once read as the
		// length of a 4 GB protobuf record.
		"BOM, lines":    "\uFEFF" + d1 + "\n" + d2 + "\n",
		"BOM, indented": "\uFEFF" + indent(d1) + "\n" + indent(d2) + "\n",
		// Files with a mark each, concatenated.
		"BOM each, lines":    "\uFEFF" + d1 + "\n\uFEFF" + d2 + "\n",
		"BOM each, indented": "\uFEFF" + indent(d1) + "\n\uFEFF" + indent(d2) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, writeTemp(t, "t.json", content), bounds(1<<20, 1<<20))
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
}

// TestReadTraceFileLinesRunTogether: after a first line of one document,
// a line of two documents yields both (the unmarshaler reads the first
// and drops the rest of the line unread).
func TestReadTraceFileLinesRunTogether(t *testing.T) {
	doc := func(name string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"` + name + `"}]}]}]}`
	}
	content := doc("a") + "\n" + doc("b") + doc("c") + "\n" + doc("d") + " \t" + doc("e") + "\r\n"
	got, err := readAll(t, writeTemp(t, "t.json", content), bounds(1<<20, 1<<20))
	if want := []string{"a", "b", "c", "d", "e"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestReadTraceFileErrors: errors name the file and the line, and the bounds
// hold: a line or a document beyond its bound is refused there.
func TestReadTraceFileErrors(t *testing.T) {
	good := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"a"}]}]}]}`
	long := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"` +
		strings.Repeat("x", 300) + `"}]}]}]}`
	// An indented document of 400 bytes or more whose lines are all short.
	var indented bytes.Buffer
	json.Indent(&indented, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[`+
		strings.Repeat(`{"traceId":"01000000000000000000000000000001","spanId":"0100000000000000","name":"a"},`, 4)+
		`{}]}]}]}`), "", "  ")
	for _, tc := range []struct {
		name, content string
		want          string
	}{
		{"bad third line", good + "\n" + good + "\n{\"resourceSpans\": [}\n" + good + "\n", "t.json:3: "},
		// Once read as the document before it, or as an empty request.
		{"garbage after a document", good + "\n" + good + "}]\n", `t.json:2: "}" where a JSON object was expected`},
		{"stray bracket", good + "\n}\n" + good + "\n", `t.json:2: "}" where a JSON object was expected`},
		// Cut short: a *TruncatedError (TestReadTraceFileTruncated).
		{"truncated last line", good + "\n" + good[:40], fmt.Sprintf("t.json:2: record 2 at byte %d of the file is cut short (the file ends within the line)", len(good)+1)},
		{"line too long", good + "\n" + long + "\n", "t.json:2: line longer than 256 bytes (--max-record)"},
		{"no line break at all", strings.Repeat(good, 10), "t.json:1: line longer than 256 bytes (--max-record)"},
		{"document too long", "\n" + indented.String() + "\n", "t.json:2: document longer than 300 bytes (--max-record)"},
		{"unclosed document", "\n {\n\"resourceSpans\": [\n", "t.json:2: record 1 at byte 2 of the file is cut short (the document that starts here has no end)"},
		{"no traces", "\n\n", "t.json: no traces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readAll(t, writeTemp(t, "t.json", tc.content), bounds(256, 300))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// A directory is no trace file: said as reading a file says it, not
	// as the first record of one.
	dir := t.TempDir()
	if err := Read(dir, bounds(256, 300), func(ptrace.Traces) error { return nil }); err == nil || err.Error() != "read "+dir+": is a directory" {
		t.Errorf("a directory: %v", err)
	}
	// An error of the consumer stops the reading and names the line.
	path := writeTemp(t, "t.json", good+"\n"+good+"\n"+good+"\n")
	n := 0
	err := Read(path, bounds(1<<20, 1<<20), func(ptrace.Traces) error {
		if n++; n == 2 {
			return errors.New("refused")
		}
		return nil
	})
	if err == nil || !strings.HasSuffix(err.Error(), "t.json:2: refused") || n != 2 {
		t.Errorf("consumer error: %v after %d documents, want t.json:2: refused after 2", err, n)
	}
}

// testRequests returns three export requests whose spans are named a; b, c;
// and d, and the names readAll returns for them.
func testRequests() ([]ptrace.Traces, []string) {
	var tds []ptrace.Traces
	for i, names := range [][]string{{"a"}, {"b", "c"}, {"d"}} {
		td := ptrace.NewTraces()
		spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
		for j, n := range names {
			s := spans.AppendEmpty()
			s.SetName(n)
			s.SetTraceID(pcommon.TraceID{byte(i + 1), byte(j + 1)})
			s.SetSpanID(pcommon.SpanID{byte(i + 1), byte(j + 1)})
		}
		tds = append(tds, td)
	}
	return tds, []string{"a", "b,c", "d"}
}

// marshalRequest is the file exporter's marshaller (marshaller.go): OTLP
// JSON (ptrace.JSONMarshaler) for format json, protobuf
// (ptrace.ProtoMarshaler) for format proto.
func marshalRequest(t testing.TB, td ptrace.Traces, format string) []byte {
	t.Helper()
	var b []byte
	var err error
	if format == "json" {
		b, err = (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	} else {
		b, err = (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileExporterFile returns the bytes contrib's file exporter (v0.162.0)
// writes for tds with the given format and compression, and the offset of
// each record. By default (file_writer.go, buildExportFunc): format json
// without compression writes each request then "\n" (exportMessageAsLine);
// format proto, or compression zstd, writes each as a 4-byte big-endian
// length then the bytes (exportMessageAsBuffer), compressed by codec.go's
// zstdCompress, one zstd frame per request (EncodeAll), before. With the
// exporter.file.nativeCompression gate (native), compression_writer.go
// instead streams the whole file through one zstd encoder, the records
// inside uncompressed: JSON lines for format json, length-prefixed for
// proto; the stream is a sequence of zstd frames, one per flush.
func fileExporterFile(t testing.TB, tds []ptrace.Traces, format, compression string, native bool) (file []byte, offsets []int) {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	lines := format == "json" && (compression == "" || native)
	for _, td := range tds {
		offsets = append(offsets, plain.Len())
		b := marshalRequest(t, td, format)
		if lines {
			plain.Write(b)
			plain.WriteString("\n")
			continue
		}
		if compression == "zstd" && !native {
			b = enc.EncodeAll(b, make([]byte, 0, len(b)))
		}
		plain.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		plain.Write(b)
	}
	if !native {
		return plain.Bytes(), offsets
	}
	// The writer ends a frame at every flush (flush_interval): here after
	// each record, so that a file cut within the last frame keeps the
	// records of the frames before it.
	var z []byte
	all := plain.Bytes()
	for i, off := range offsets {
		end := len(all)
		if i+1 < len(offsets) {
			end = offsets[i+1]
		}
		z = enc.EncodeAll(all[off:end], z)
	}
	return z, offsets
}

// fileExporterForms are the forms of TestReadTraceFileFormats: the file
// exporter's format and compression options, and its native compression.
var fileExporterForms = []struct {
	name, format, compression string
	native                    bool
}{
	{"json", "json", "", false},
	{"proto", "proto", "", false},
	{"json zstd", "json", "zstd", false},
	{"proto zstd", "proto", "zstd", false},
	{"json native zstd", "json", "zstd", true},
	{"proto native zstd", "proto", "zstd", true},
}

// TestReadTraceFileFormats: every form the file exporter writes is read
// without a flag, and with --format and --compression as written; forcing
// another format or compression fails with the record's position.
func TestReadTraceFileFormats(t *testing.T) {
	tds, want := testRequests()
	for _, f := range fileExporterForms {
		t.Run(f.name, func(t *testing.T) {
			b, _ := fileExporterFile(t, tds, f.format, f.compression, f.native)
			path := writeTemp(t, "t.bin", string(b))
			got, err := readAll(t, path, bounds(1<<20, 1<<20))
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("detected: %q, %v; want %q", got, err, want)
			}
			compression := f.compression
			if compression == "" {
				compression = "none"
			}
			forced := Options{Format: f.format, Compression: compression, MaxLine: 1 << 20, MaxDocument: 1 << 20}
			if got, err := readAll(t, path, forced); err != nil || !slices.Equal(got, want) {
				t.Errorf("forced %+v: %q, %v; want %q", forced, got, err, want)
			}
			other := map[string]string{"json": "proto", "proto": "json"}[f.format]
			if _, err := readAll(t, path, Options{Format: other, Compression: compression, MaxLine: 1 << 20, MaxDocument: 1 << 20}); err == nil {
				t.Errorf("--format %s read a file of format %s", other, f.format)
			}
		})
	}
	// Forcing zstd on a file without compression names the record.
	b, _ := fileExporterFile(t, tds, "proto", "", false)
	_, err := readAll(t, writeTemp(t, "t.bin", string(b)), Options{Compression: "zstd", MaxLine: 1 << 20, MaxDocument: 1 << 20})
	if err == nil || !strings.HasSuffix(err.Error(), "t.bin: record 1 at byte 0: not a zstd frame (--compression zstd)") {
		t.Errorf("forced zstd: %v", err)
	}
	// A length beyond the bound is refused, not allocated.
	_, err = readAll(t, writeTemp(t, "t.bin", "\x03\x00\x00\x00..."), bounds(1<<20, 1<<20))
	if err == nil || !strings.Contains(err.Error(), "t.bin: record 1 at byte 0: length 50331648 is above 1 MiB: not a trace file of the file exporter, or a record too large (--max-record)") {
		t.Errorf("huge length: %v", err)
	}
	// Beyond what --max-record can take, or UTF-16 text: no bound to raise.
	_, err = readAll(t, writeTemp(t, "t.bin", "\x43\x00\x00\x00..."), bounds(1<<20, 1<<20))
	if err == nil || !strings.HasSuffix(err.Error(), "length 1124073472 is above 1 MiB: not a trace file of the file exporter") {
		t.Errorf("a length beyond 1 GiB: %v", err)
	}
	_, err = readAll(t, writeTemp(t, "t.json", "\xff\xfe{\x00\"\x00"), bounds(1<<20, 1<<20))
	if err == nil || !strings.HasSuffix(err.Error(), "is above 1 MiB: UTF-16 text (its byte order mark), not read: convert it to UTF-8") {
		t.Errorf("UTF-16: %v", err)
	}
}

// TestReadRequest: a protobuf ExportTraceServiceRequest without a length
// (an OTLP/HTTP request body saved to a file), which starts with a line
// feed (the tag of its first resourceSpans, 0x0A), is read as one request,
// plain or in a zstd stream, detected or with --format proto; requests
// concatenated are one request (protobuf merges repeated fields), and one
// cut short or beyond the bound is refused naming the file.
func TestReadRequest(t *testing.T) {
	tds, _ := testRequests()
	var concatenated []byte
	for _, td := range tds {
		concatenated = append(concatenated, marshalRequest(t, td, "proto")...)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"one":         marshalRequest(t, tds[1], "proto"),
		"merged":      concatenated,
		"zstd stream": enc.EncodeAll(concatenated, nil),
	} {
		t.Run(name, func(t *testing.T) {
			want := []string{"a,b,c,d"}
			if name == "one" {
				want = []string{"b,c"}
			}
			path := writeTemp(t, "t.pb", string(content))
			for _, o := range []Options{bounds(1<<20, 1<<20), {Format: "proto", MaxLine: 1 << 20}} {
				if got, err := readAll(t, path, o); err != nil || !slices.Equal(got, want) {
					t.Errorf("%+v: got %q, %v; want %q", o, got, err, want)
				}
			}
		})
	}
	// JSON after a blank line with a control character unescaped (which
	// the unmarshaler refuses too) is told as such.
	ctl := writeTemp(t, "ctl.json", "\n"+`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"a`+"\x01"+`"}]}]}]}`)
	if _, err := readAll(t, ctl, bounds(1<<20, 1<<20)); err == nil || !strings.Contains(err.Error(), "ctl.json: byte 54: control character 0x01, which JSON does not allow unescaped") {
		t.Errorf("JSON with a control character: %v", err)
	}
	cut := writeTemp(t, "cut.pb", string(concatenated[:len(concatenated)-3]))
	if _, err := readAll(t, cut, bounds(1<<20, 1<<20)); err == nil || !strings.Contains(err.Error(), "cut.pb: not a protobuf ExportTraceServiceRequest, nor a trace file of the file exporter") {
		t.Errorf("a request cut short: %v", err)
	}
	if _, err := readAll(t, writeTemp(t, "big.pb", string(concatenated)), bounds(len(concatenated)-1, 1<<20)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("big.pb: a protobuf request (an ExportTraceServiceRequest without a length before it) longer than %d bytes (--max-record)", len(concatenated)-1)) {
		t.Errorf("a request beyond the bound: %v", err)
	}
}

// TestReadGzip: a trace file compressed with gzip (as files are to be
// kept; once read as a record of 529 MB) is read as the file it holds, in
// each form, when the compression is detected; cut short, its last record
// is a *TruncatedError at its offset in the decompressed stream.
func TestReadGzip(t *testing.T) {
	tds, want := testRequests()
	gz := func(b []byte) string {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		w.Write(b)
		w.Close()
		return z.String()
	}
	lines, offsets := fileExporterFile(t, tds, "json", "", false)
	records, _ := fileExporterFile(t, tds, "proto", "zstd", false)
	for name, content := range map[string]string{
		"json lines":   gz(lines),
		"zstd records": gz(records),
		// Two gzip members, as files compressed apart and concatenated.
		"members": gz(lines[:offsets[1]]) + gz(lines[offsets[1]:]),
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := readAll(t, writeTemp(t, "t.gz", content), bounds(1<<20, 1<<20)); err != nil || !slices.Equal(got, want) {
				t.Errorf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	var te *TruncatedError
	cut := gz(lines)
	// Where deflate cuts the text depends on its blocks: the records read
	// are some first ones, and the next is cut short at its offset.
	got, err := readAll(t, writeTemp(t, "t.gz", cut[:len(cut)-12]), bounds(1<<20, 1<<20))
	next := len(lines)
	if len(got) < len(offsets) {
		next = offsets[len(got)]
	}
	if !errors.As(err, &te) || len(got) == 0 || !slices.Equal(got, want[:len(got)]) ||
		!strings.Contains(err.Error(), fmt.Sprintf("record %d at byte %d of the decompressed stream is cut short", len(got)+1, next)) {
		t.Errorf("cut short: %q, %v", got, err)
	}
	if _, err := readAll(t, writeTemp(t, "t.gz", cut[:5]), bounds(1<<20, 1<<20)); err == nil || !strings.HasSuffix(err.Error(), "t.gz: the gzip header: unexpected EOF") {
		t.Errorf("the header cut short: %v", err)
	}
	if _, err := readAll(t, writeTemp(t, "t.gz", gz(lines)), Options{Compression: "none", MaxLine: 1 << 20}); err == nil {
		t.Error("--compression none decompressed a gzip file")
	}
}

// TestReadTraceFileTruncated: in every form, a file cut within its last
// record (a collector stopped while writing) yields the records before it
// and a *TruncatedError naming the record and its byte offset (in the
// decompressed stream for native compression); cut within the first
// record, it is an error.
func TestReadTraceFileTruncated(t *testing.T) {
	tds, want := testRequests()
	for _, f := range fileExporterForms {
		t.Run(f.name, func(t *testing.T) {
			b, offsets := fileExporterFile(t, tds, f.format, f.compression, f.native)
			path := writeTemp(t, "t.bin", string(b[:len(b)-7]))
			got, err := readAll(t, path, bounds(1<<20, 1<<20))
			var te *TruncatedError
			if !errors.As(err, &te) || !slices.Equal(got, want[:2]) {
				t.Fatalf("got %q, %v; want %q and a *TruncatedError", got, err, want[:2])
			}
			unit := "the file"
			if f.native {
				unit = "the decompressed stream"
			}
			wantMsg := fmt.Sprintf("record 3 at byte %d of %s is cut short", offsets[2], unit)
			if !strings.Contains(err.Error(), wantMsg) || !strings.HasSuffix(err.Error(), "; the 2 records before it were read") {
				t.Errorf("error %q, want %q", err, wantMsg)
			}
			// Cut within the first record: nothing to analyse.
			_, err = readAll(t, writeTemp(t, "t.bin", string(b[:min(len(b)-7, 9)])), bounds(1<<20, 1<<20))
			if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "record 1 at byte 0") {
				t.Errorf("first record cut: %v", err)
			}
		})
	}
}

// TestReadFiles: the files are read in order; one cut short in its last
// record is a warning and the next is still read; a file that cannot be
// read stops the reading with its error.
func TestReadFiles(t *testing.T) {
	tds, want := testRequests()
	b, _ := fileExporterFile(t, tds, "json", "", false)
	cut := writeTemp(t, "cut.json", string(b[:len(b)-7]))
	whole := writeTemp(t, "whole.json", string(b))
	var got []string
	warnings, err := ReadFiles([]string{cut, whole}, Options{}, func(td ptrace.Traces) error {
		var names []string
		forEachSpan(td, func(s ptrace.Span) { names = append(names, s.Name()) })
		got = append(got, strings.Join(names, ","))
		return nil
	})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "cut.json") || !slices.Equal(got, append(want[:2:2], want...)) {
		t.Fatalf("got %q, warnings %q, error %v; want %q then %q, one warning naming cut.json", got, warnings, err, want[:2], want)
	}
	missing := filepath.Join(t.TempDir(), "missing.json")
	warnings, err = ReadFiles([]string{cut, missing, whole}, Options{}, func(ptrace.Traces) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) || len(warnings) != 1 {
		t.Errorf("a missing file: warnings %q, error %v; want the cut file's warning and the missing file's error", warnings, err)
	}
	// An empty file (a collector started and stopped before any trace)
	// beside files with traces is a warning; when no file has any, the
	// first one's "no traces" is the error.
	empty := writeTemp(t, "empty.json", "")
	warnings, err = ReadFiles([]string{empty, whole}, Options{}, func(ptrace.Traces) error { return nil })
	if err != nil || len(warnings) != 1 || !strings.HasSuffix(warnings[0], "empty.json: no traces") {
		t.Errorf("an empty file beside a whole one: warnings %q, error %v; want one warning naming empty.json", warnings, err)
	}
	empty2 := writeTemp(t, "empty2.json", "\n")
	warnings, err = ReadFiles([]string{empty, empty2}, Options{}, func(ptrace.Traces) error { return nil })
	if err == nil || !strings.HasSuffix(err.Error(), "empty.json: no traces") || len(warnings) != 0 {
		t.Errorf("only empty files: warnings %q, error %v; want empty.json: no traces", warnings, err)
	}
}

// TestReadBounds: the default bounds are 64 MiB for a line and for a
// document laid out over several lines (a 246 MB indented document needed
// 970 MB when documents up to 1 GiB were taken whole; at 64 MiB a document
// costs at most about 300 MB, measured 266 MB for a 58 MB one), bounds are
// checked against [1, 1 GiB], and an indented document beyond its bound
// is refused at the bound, naming its first line.
func TestReadBounds(t *testing.T) {
	if o := (Options{}).Defaults(); o.MaxLine != 64<<20 || o.MaxDocument != 64<<20 {
		t.Errorf("defaults %+v, want 64 MiB each", o)
	}
	path := writeTemp(t, "t.json", "{}\n")
	for _, o := range []Options{{MaxLine: MaxRecordLimit + 1}, {MaxDocument: -1}} {
		if err := Read(path, o, func(ptrace.Traces) error { return nil }); err == nil || !strings.Contains(err.Error(), "want each in [1, 1 GiB]") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	var b strings.Builder
	b.WriteString("\n{\n  \"resourceSpans\": [\n")
	for b.Len() < 4<<20 {
		b.WriteString("    {\"scopeSpans\": []},\n")
	}
	b.WriteString("    {}\n  ]\n}\n")
	n := 0
	err := Read(writeTemp(t, "big.json", b.String()), Options{MaxDocument: 1 << 20}, func(ptrace.Traces) error { n++; return nil })
	if err == nil || !strings.HasSuffix(err.Error(), "big.json:2: document longer than 1 MiB (--max-record)") || n != 0 {
		t.Errorf("a 4 MiB indented document with a 1 MiB bound: %v, %d documents", err, n)
	}
}

// TestReadStdin: "-" reads standard input, in any form (here zstd
// records), named "standard input" in messages, once: given twice it is
// refused before anything is read.
func TestReadStdin(t *testing.T) {
	tds, want := testRequests()
	b, _ := fileExporterFile(t, tds, "proto", "zstd", false)
	whole := writeTemp(t, "whole.bin", string(b))
	cut := writeTemp(t, "cut.bin", string(b[:len(b)-7]))
	stdin := func(path string) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		saved := os.Stdin
		os.Stdin = f
		t.Cleanup(func() { os.Stdin = saved; f.Close() })
	}
	read := func(paths ...string) ([]string, []string, error) {
		var got []string
		warnings, err := ReadFiles(paths, Options{}, func(td ptrace.Traces) error {
			var names []string
			forEachSpan(td, func(s ptrace.Span) { names = append(names, s.Name()) })
			got = append(got, strings.Join(names, ","))
			return nil
		})
		return got, warnings, err
	}
	stdin(whole)
	if got, warnings, err := read(Stdin); err != nil || len(warnings) != 0 || !slices.Equal(got, want) {
		t.Errorf("stdin: got %q, warnings %q, error %v; want %q", got, warnings, err, want)
	}
	stdin(cut)
	got, warnings, err := read(whole, Stdin)
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "standard input: record") ||
		!slices.Equal(got, append(slices.Clone(want), want[:len(want)-1]...)) {
		t.Errorf("a cut stdin after a file: got %q, warnings %q, error %v", got, warnings, err)
	}
	got, _, err = read(whole, Stdin, Stdin)
	if err == nil || !strings.Contains(err.Error(), `"-" (standard input) given 2 times`) || len(got) != 0 {
		t.Errorf("stdin twice: got %q, error %v; want a refusal before reading", got, err)
	}
}

// TestReadFilesSameFile: a file named twice, by one path or by two (a
// symbolic link, ./x beside x, a hard link, standard input redirected from
// it), is refused before anything is read, naming both: each of its spans
// counted twice. Two files of the same content are two files.
func TestReadFilesSameFile(t *testing.T) {
	tds, want := testRequests()
	b, _ := fileExporterFile(t, tds, "json", "", false)
	whole := writeTemp(t, "whole.json", string(b))
	copied := writeTemp(t, "copy.json", string(b))
	dir := filepath.Dir(whole)
	link := filepath.Join(dir, "link.json")
	hard := filepath.Join(dir, "hard.json")
	if err := os.Symlink(whole, link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if err := os.Link(whole, hard); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	f, err := os.Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = f
	t.Cleanup(func() { os.Stdin = saved; f.Close() })
	read := func(paths ...string) (int, error) {
		n := 0
		_, err := ReadFiles(paths, Options{}, func(ptrace.Traces) error { n++; return nil })
		return n, err
	}
	for _, c := range []struct {
		paths []string
		want  string
	}{
		{[]string{whole, copied, whole}, whole + " given twice: its spans would count twice; give it once"},
		{[]string{whole, link}, whole + " and " + link + " are the same file"},
		{[]string{"./whole.json", "whole.json"}, "./whole.json and whole.json are the same file"},
		{[]string{copied, hard, "whole.json"}, hard + " and whole.json are the same file"},
		{[]string{whole, Stdin}, whole + " and standard input are the same file"},
	} {
		if n, err := read(c.paths...); err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want+":") || n != 0 {
			t.Errorf("%q: %d requests read, error %v; want %q before reading", c.paths, n, err, c.want)
		}
	}
	if n, err := read(whole, copied); err != nil || n != 2*len(want) {
		t.Errorf("a file and its copy: %d requests read, error %v; want %d", n, err, 2*len(want))
	}
}

// TestReadJSONAsRecords: a JSON trace file read as records, as --format
// proto or --compression zstd ask, is refused as JSON, saying which option
// asked for what, in the file or the stream that holds it, whatever its
// first bytes (a blank line, a document) and the bound of a record: it was
// "text that is not JSON", or "not a trace file of the file exporter"
// after a blank line, or a first record cut short under a bound of 1 GiB.
func TestReadJSONAsRecords(t *testing.T) {
	tds, _ := testRequests()
	b, _ := fileExporterFile(t, tds, "json", "", false)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(append([]byte("\n  "), b...))
	zw.Close()
	files := map[string]string{"lines.json": string(b), "blank.json": "\n  " + string(b), "indented.json": "[\n" + string(b) + "]\n", "t.json.gz": gz.String()}
	for name, content := range files {
		path := writeTemp(t, name, content)
		unit := "the file"
		if strings.HasSuffix(name, ".gz") {
			unit = "the decompressed stream"
		}
		for _, c := range []struct {
			o    Options
			want string
		}{
			{Options{Format: "proto"}, "where --format proto reads the file exporter's protobuf: leave --format out, or give --format json"},
			{Options{Format: "proto", MaxLine: MaxRecordLimit}, "where --format proto reads the file exporter's protobuf"},
			{Options{Compression: "zstd"}, "is JSON not compressed"},
			{Options{Format: "json", Compression: "zstd"}, "where --compression zstd reads records compressed with zstd: leave --compression out, or give --compression none"},
		} {
			if strings.HasSuffix(name, ".gz") && c.o.Compression != "" {
				continue // gzip is detected only with the compression detected
			}
			err := Read(path, c.o, func(ptrace.Traces) error { return nil })
			if err == nil || !strings.HasPrefix(err.Error(), path+": "+unit+" is JSON") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %+v: %v; want %q", name, c.o, err, c.want)
			}
		}
	}
}
