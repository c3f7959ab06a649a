// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package tracefile

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Default bounds, in bytes, of what Read holds at a time. The collector's
// file exporter writes one export request, a batch of spans, per line or
// record: DefaultMaxLine is far above any batch it sends, and keeps a file
// without line breaks from being read whole; it bounds a binary record,
// decompressed, too. A document laid out over several lines (an indented
// file) must be held whole to be decoded, as a line is: DefaultMaxDocument
// bounds it alike, so that an indented document costs no more than a line.
// Decoding a record of n bytes takes a few times n of memory (the bytes and
// the decoded spans).
const (
	DefaultMaxLine     = 64 << 20
	DefaultMaxDocument = 64 << 20
	// MaxRecordLimit is the largest bound a caller may set (1 GiB).
	MaxRecordLimit = 1 << 30
)

// Options say how to read a trace file: the bounds, and the format and
// compression, each "" to detect it from the content (detectLayout).
type Options struct {
	// Format is "json" (OTLP JSON) or "proto" (OTLP protobuf), as the file
	// exporter's format option; "" detects it.
	Format string
	// Compression is "none" or "zstd", as the file exporter's compression
	// option; "" detects it.
	Compression string
	// MaxLine bounds a line and a binary record, MaxDocument a JSON
	// document laid out over several lines, in bytes; 0 takes the default.
	MaxLine, MaxDocument int
}

// Defaults returns o with the default bounds for zero ones.
func (o Options) Defaults() Options {
	if o.MaxLine == 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.MaxDocument == 0 {
		o.MaxDocument = DefaultMaxDocument
	}
	return o
}

// The forms of a trace file, as the collector's file exporter writes them
// (exporter/fileexporter of opentelemetry-collector-contrib, v0.162.0,
// file_writer.go and codec.go):
//
//   - jsonDocs: format json without compression: each ExportTraceServiceRequest
//     marshalled to JSON and followed by "\n" (exportMessageAsLine);
//   - records: format proto, or any format with compression zstd: each
//     request preceded by its length as 4 bytes, big-endian
//     (exportMessageAsBuffer), the request being the protobuf, or with
//     compression zstd one complete zstd frame (EncodeAll) of the protobuf
//     or the JSON;
//   - zstdStream: with the exporter.file.nativeCompression feature gate
//     (alpha, off by default), the whole file is a zstd stream holding
//     JSON lines (format json) or records (format proto).
//
// and one form of other tools:
//
//   - request: one ExportTraceServiceRequest in protobuf, without a length
//     (an OTLP/HTTP request body, application/x-protobuf, saved to a file).
type layout int

const (
	jsonDocs layout = iota
	records
	zstdStream
	request
)

// zstdMagic starts every zstd frame (RFC 8878, section 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// detectLayout tells the form of a file from its first bytes (headSize,
// fewer if the file is shorter) and the forced options: a zstd frame's
// magic number is a zstd stream; a protobuf request starts with the tag of
// its first resourceSpans, 0x0A, a line feed, that as a record's length
// would be beyond the bound, and has bytes that JSON cannot hold
// (isRequest); JSON starts with a bracket or white space; any other first
// byte is the high byte of a record's length (0 to 3 for a record up to 64
// MiB). With compression none a zstd magic number is read as a length,
// and with format proto or compression zstd the file is records unless it
// is a stream or a request.
func detectLayout(head []byte, o Options) layout {
	switch {
	case o.Compression != "none" && bytes.HasPrefix(head, zstdMagic):
		return zstdStream
	case o.Format != "json" && o.Compression != "zstd" && isRequest(head, o.MaxLine):
		return request
	case o.Format == "proto" || o.Compression == "zstd":
		return records
	case o.Format == "json" && o.Compression == "none":
		return jsonDocs
	case len(head) > 0 && isJSONStart(head[0]):
		return jsonDocs
	}
	return records
}

// headSize is how many first bytes of a file detectLayout looks at.
const headSize = 512

// isRequest reports whether head starts a protobuf ExportTraceServiceRequest
// rather than JSON or a record: its first byte is the tag of field 1 (its
// resourceSpans, length-delimited), a record's length starting with that
// byte would be above maxLine, and a byte below 0x20 other than tab, line
// feed and carriage return follows (a length, a tag, an id), which JSON
// holds nowhere, not even in a string (RFC 8259, section 7).
func isRequest(head []byte, maxLine int) bool {
	if len(head) < 4 || head[0] != 0x0A || int64(binary.BigEndian.Uint32(head)) <= int64(maxLine) {
		return false
	}
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

// isJSONStart reports whether c can start a JSON trace file: a bracket or
// white space.
func isJSONStart(c byte) bool {
	switch c {
	case '{', '[', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// TruncatedError is the last record of a file cut short, as when the
// collector was stopped while writing it; the records before it were read.
type TruncatedError struct{ msg string }

func (e *TruncatedError) Error() string { return e.msg }

// Stdin is the path that names standard input: a file can be piped in
// (zstdcat traces.zst | deltaq analyze -), once.
const Stdin = "-"

// ReadFiles reads the files in order with Read, passing each record to fn.
// A file whose last record was cut short (a *TruncatedError: its records
// before the cut were passed to fn) is not an error: its message is among
// the warnings, and the files after it are read. So is a file without
// traces (a collector stopped before any) beside files with some; when no
// file has any, the first one's is the error. Any other error stops the
// reading, as does Stdin given more than once, or a file given twice
// (sameFile), before anything is read.
func ReadFiles(paths []string, o Options, fn func(ptrace.Traces) error) (warnings []string, err error) {
	if n := countStdin(paths); n > 1 {
		return nil, fmt.Errorf("%q (standard input) given %d times: it can be read once", Stdin, n)
	}
	if err := sameFile(paths); err != nil {
		return nil, err
	}
	var empty error // the first file's errNoTraces
	read := false
	for _, path := range paths {
		err := Read(path, o, fn)
		var te *TruncatedError
		switch {
		case errors.As(err, &te):
			warnings, read = append(warnings, te.Error()), true
		case errors.Is(err, errNoTraces):
			warnings = append(warnings, err.Error())
			if empty == nil {
				empty = err
			}
		case err != nil:
			return warnings, err
		default:
			read = true
		}
	}
	if !read && empty != nil {
		return nil, empty
	}
	return warnings, nil
}

// errNoTraces is the error of a file without a record.
var errNoTraces = errors.New("no traces")

// Read calls fn with each request (a record: one ExportTraceServiceRequest) of a trace file (Stdin:
// standard input), in order,
// before reading the next (the forms are those of detectLayout). A JSON
// file whose first non-blank line is one complete JSON value is read one
// line at a time; any other JSON file (an indented document, several on a
// line) is split into documents by their brackets. Errors name the file
// and the line of the document, as FILE:LINE, or the record and its byte
// offset; an error of fn stops the reading. A last record cut short after
// complete ones is a *TruncatedError, returned after the complete ones
// were passed to fn.
func Read(path string, o Options, fn func(ptrace.Traces) error) error {
	o = o.Defaults()
	if o.MaxLine < 1 || o.MaxLine > MaxRecordLimit || o.MaxDocument < 1 || o.MaxDocument > MaxRecordLimit {
		return fmt.Errorf("%s: record bounds %d and %d bytes: want each in [1, %s]", path, o.MaxLine, o.MaxDocument, FormatBytes(MaxRecordLimit))
	}
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if path == Stdin {
		path = "standard input"
	}
	r := &reader{path: path, opt: o, br: bufio.NewReaderSize(f, 64<<10), fn: fn}
	defer r.close()
	if err := r.read(); err != nil {
		return err
	}
	if r.docs == 0 {
		return fmt.Errorf("%s: %w", path, errNoTraces)
	}
	return nil
}

// open opens the file at path, or standard input for Stdin (which closing
// leaves open), and refuses a directory as reading it would.
func open(path string) (io.ReadCloser, error) {
	if path == Stdin {
		return io.NopCloser(os.Stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
	}
	return f, nil
}

// sameFile refuses a file that paths name twice, by one path or by two (a
// symbolic link, ./x and x, a hard link, standard input redirected from
// it): its spans would count twice. A path that cannot be read is left to
// Read to report.
func sameFile(paths []string) error {
	type named struct {
		path string
		info fs.FileInfo
	}
	var seen []named
	for _, path := range paths {
		var info fs.FileInfo
		var err error
		if path == Stdin {
			info, err = os.Stdin.Stat()
		} else {
			info, err = os.Stat(path)
		}
		if err != nil || info.IsDir() {
			continue
		}
		for _, s := range seen {
			if !os.SameFile(s.info, info) {
				continue
			}
			if s.path == path {
				return fmt.Errorf("%s given twice: its spans would count twice; give it once", path)
			}
			return fmt.Errorf("%s and %s are the same file: its spans would count twice; give it once", displayPath(s.path), displayPath(path))
		}
		seen = append(seen, named{path, info})
	}
	return nil
}

// displayPath is path as messages name it: Stdin is standard input.
func displayPath(path string) string {
	if path == Stdin {
		return "standard input"
	}
	return path
}

func countStdin(paths []string) int {
	n := 0
	for _, p := range paths {
		if p == Stdin {
			n++
		}
	}
	return n
}

// reader is the state of Read.
type reader struct {
	path  string
	opt   Options
	br    *bufio.Reader
	fn    func(ptrace.Traces) error
	jsonU ptrace.JSONUnmarshaler
	proto ptrace.ProtoUnmarshaler
	// stream is the decoder of a zstd stream file, frames that of
	// compressed records; each is made when first needed.
	stream, frames *zstd.Decoder
	// gzipped is a file compressed with gzip, read through a decoder.
	gzipped    bool
	line       []byte // the current line, reused
	n          int    // number of the current line, from 1
	off        int64  // byte offset of the current line or record
	docs       int    // documents passed to fn
	rec, plain []byte // a record and its decompressed form, reused
}

func (r *reader) close() {
	if r.stream != nil {
		r.stream.Close()
	}
	if r.frames != nil {
		r.frames.Close()
	}
}

// utf8BOM is the byte order mark some editors and tools write at the start
// of a UTF-8 text file. It cannot start a record (whose first byte is that
// of a length of at most 64 MiB), so it is skipped as JSON's.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// trimBlankLeft trims JSON white space and byte order marks from the start
// of b: files with a mark each, concatenated, have one at the start of a
// document.
func trimBlankLeft(b []byte) []byte {
	for {
		b = bytes.TrimLeft(b, " \t\r\n")
		if !bytes.HasPrefix(b, utf8BOM) {
			return b
		}
		b = b[len(utf8BOM):]
	}
}

// trimBlank trims JSON white space from the end of b, and white space and
// byte order marks from its start.
func trimBlank(b []byte) []byte {
	return bytes.TrimRight(trimBlankLeft(b), " \t\r\n")
}

// skipBOM skips a byte order mark at the start of r.br, counting it in the
// byte offsets.
func (r *reader) skipBOM() {
	if head, _ := r.br.Peek(len(utf8BOM)); bytes.Equal(head, utf8BOM) {
		n, _ := r.br.Discard(len(utf8BOM))
		r.off += int64(n)
	}
}

// gzipMagic starts every gzip member (RFC 1952, section 2.3.1).
var gzipMagic = []byte{0x1f, 0x8b}

// inStream reports whether the file is read through a decoder of the whole
// file, zstd or gzip: offsets are in the decompressed stream.
func (r *reader) inStream() bool { return r.stream != nil || r.gzipped }

// read reads the file in the form its first bytes show. A file compressed
// with gzip (the file exporter does not write one, but a file is often
// compressed so to be kept) is read as the file it holds when the
// compression is detected.
func (r *reader) read() error {
	r.skipBOM()
	head, _ := r.br.Peek(headSize)
	if r.opt.Compression == "" && bytes.HasPrefix(head, gzipMagic) {
		d, err := gzip.NewReader(r.br)
		if err != nil {
			// The header cut short is io.ErrUnexpectedEOF, unnamed.
			return fmt.Errorf("%s: the gzip header: %w", r.path, err)
		}
		r.gzipped, r.br = true, bufio.NewReaderSize(d, 64<<10)
		return r.inner()
	}
	switch detectLayout(head, r.opt) {
	case request:
		return r.request()
	case zstdStream:
		d, err := zstd.NewReader(r.br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(r.opt.MaxLine)))
		if err != nil {
			return fmt.Errorf("%s: %w", r.path, err)
		}
		r.stream, r.br = d, bufio.NewReaderSize(d, 64<<10)
		return r.inner()
	case records:
		return r.records()
	}
	return r.jsonLines()
}

// inner reads the decompressed stream of a file.
func (r *reader) inner() error {
	// The stream holds uncompressed JSON lines or records; offsets are in
	// the decompressed stream.
	inner := Options{Format: r.opt.Format, Compression: "none", MaxLine: r.opt.MaxLine}
	r.skipBOM()
	head, _ := r.br.Peek(headSize)
	switch detectLayout(head, inner) {
	case records:
		return r.records()
	case request:
		return r.request()
	}
	return r.jsonLines()
}

// truncated returns the error of a record cut short at the end of the
// file: a *TruncatedError when records were read before it, else a plain
// error (there is nothing to analyse).
func (r *reader) truncated(where, detail string) error {
	unit := "the decompressed stream"
	if !r.inStream() {
		unit = "the file"
	}
	msg := fmt.Sprintf("%s: record %d at byte %d of %s is cut short (%s)", where, r.docs+1, r.off, unit, detail)
	if r.docs == 0 {
		return errors.New(msg)
	}
	return &TruncatedError{msg: fmt.Sprintf("%s; the %d records before it were read", msg, r.docs)}
}

// records reads length-prefixed records: a 4-byte big-endian length, then
// that many bytes, protobuf or JSON, each possibly one zstd frame.
func (r *reader) records() error {
	var hdr [4]byte
	for {
		n, err := io.ReadFull(r.br, hdr[:])
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, io.ErrUnexpectedEOF) && r.inStream():
			return r.truncated(r.path, "the compressed stream ends within it")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return r.truncated(r.path, fmt.Sprintf("%d of the 4 bytes of its length", n))
		case err != nil:
			return fmt.Errorf("%s: record %d at byte %d: %w", r.path, r.docs+1, r.off, err)
		}
		size := int64(binary.BigEndian.Uint32(hdr[:]))
		if size > int64(r.opt.MaxLine) {
			if next, _ := r.br.Peek(headSize); r.docs == 0 {
				if err := r.forcedJSON(append(hdr[:], next...)); err != nil {
					return err
				}
			}
			return fmt.Errorf("%s: record %d at byte %d: length %d is above %s: %s",
				r.path, r.docs+1, r.off, size, FormatBytes(r.opt.MaxLine), r.notRecord(hdr[:]))
		}
		if int64(cap(r.rec)) < size {
			r.rec = make([]byte, size)
		}
		r.rec = r.rec[:size]
		if n, err := io.ReadFull(r.br, r.rec); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				if err := r.forcedJSON(append(hdr[:], r.rec[:n]...)); r.docs == 0 && err != nil {
					return err
				}
				if r.inStream() {
					return r.truncated(r.path, "the compressed stream ends within it")
				}
				return r.truncated(r.path, fmt.Sprintf("its length says %d bytes, %d follow", size, n))
			}
			return fmt.Errorf("%s: record %d at byte %d: %w", r.path, r.docs+1, r.off, err)
		}
		td, err := r.payload(r.rec)
		if err != nil {
			return fmt.Errorf("%s: record %d at byte %d: %w", r.path, r.docs+1, r.off, err)
		}
		if err := r.deliver(td); err != nil {
			return fmt.Errorf("%s: record %d at byte %d: %w", r.path, r.docs, r.off, err)
		}
		r.off += 4 + size
	}
}

// request reads the file as one protobuf ExportTraceServiceRequest, bounded
// by maxLine as a record is.
func (r *reader) request() error {
	b, err := io.ReadAll(io.LimitReader(r.br, int64(r.opt.MaxLine)+1))
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: the compressed stream ends within the protobuf request", r.path)
	case err != nil:
		return fmt.Errorf("%s: %w", r.path, err)
	case len(b) > r.opt.MaxLine:
		return fmt.Errorf("%s: a protobuf request (an ExportTraceServiceRequest without a length before it) longer than %s (--max-record): a request is decoded whole",
			r.path, FormatBytes(r.opt.MaxLine))
	}
	td, err := r.proto.UnmarshalTraces(b)
	if err != nil {
		if rest := bytes.TrimLeft(b, " \t\r\n"); len(rest) > 0 && (rest[0] == '{' || rest[0] == '[') {
			// JSON after blank lines, with a control character that
			// made it look like protobuf (isRequest).
			at := bytes.IndexFunc(b, func(c rune) bool { return c < 0x20 && c != '\t' && c != '\n' && c != '\r' })
			return fmt.Errorf("%s: byte %d: control character 0x%02x, which JSON does not allow unescaped; not a protobuf ExportTraceServiceRequest either: %w",
				r.path, at, b[at], err)
		}
		return fmt.Errorf("%s: not a protobuf ExportTraceServiceRequest, nor a trace file of the file exporter: %w", r.path, err)
	}
	if err := r.deliver(td); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	return nil
}

// forcedJSON returns the error of a file whose start, head, is JSON, read
// as records because the options say so (--format proto, --compression
// zstd), which its first bytes did not fit as a record's length; nil when
// head is not JSON's start.
func (r *reader) forcedJSON(head []byte) error {
	doc := trimBlankLeft(head)
	if r.off != 0 || len(doc) == 0 || doc[0] != '{' && doc[0] != '[' {
		return nil
	}
	unit := "the file"
	if r.inStream() {
		unit = "the decompressed stream"
	}
	start := excerpt(doc[:min(len(doc), 16)])
	if r.opt.Format == "proto" {
		return fmt.Errorf("%s: %s is JSON (it starts %s), where --format proto reads the file exporter's protobuf: leave --format out, or give --format json", r.path, unit, start)
	}
	return fmt.Errorf("%s: %s is JSON not compressed (it starts %s), where --compression zstd reads records compressed with zstd: leave --compression out, or give --compression none", r.path, unit, start)
}

// notRecord says what a record's length beyond the bound, hdr, tells: a
// bound the caller may raise, or a file of another form: UTF-16 text (as
// Windows PowerShell redirects output) starts with its byte order mark,
// other text (a log, the debug exporter's output) with printable bytes,
// a length of 538 MB or more.
func (r *reader) notRecord(hdr []byte) string {
	switch {
	case r.off == 0 && (bytes.HasPrefix(hdr, []byte{0xFF, 0xFE}) || bytes.HasPrefix(hdr, []byte{0xFE, 0xFF})):
		return "UTF-16 text (its byte order mark), not read: convert it to UTF-8"
	case r.off == 0 && jsonScalar(hdr, r.br):
		return fmt.Sprintf("a JSON value that is not an object (it starts %q), not read: want %s, or the file exporter's protobuf", hdr, otlpWant)
	case r.off == 0 && !bytes.ContainsFunc(hdr, func(c rune) bool { return c < 0x20 || c > 0x7e }):
		return fmt.Sprintf("text that is not JSON (it starts %q), not read: want %s, or the file exporter's protobuf", hdr, otlpWant)
	case binary.BigEndian.Uint32(hdr) > MaxRecordLimit:
		return "not a trace file of the file exporter"
	}
	return "not a trace file of the file exporter, or a record too large (--max-record)"
}

// jsonScalar reports whether the first line of a file, hdr and what br
// holds after it, is one JSON value that is not an object or an array
// (null, a number, a string), which a JSON trace file's first line is
// not; hdr is not read as JSON's start, and the line is not read further.
func jsonScalar(hdr []byte, br *bufio.Reader) bool {
	next, _ := br.Peek(headSize)
	line, _, _ := bytes.Cut(append(slices.Clone(hdr), next...), []byte("\n"))
	line = trimBlank(line)
	return len(line) > 0 && line[0] != '{' && line[0] != '[' && json.Valid(line)
}

// payload decodes one record: a zstd frame is decompressed (bounded by
// maxLine), then JSON (a record starting with '{') or protobuf.
func (r *reader) payload(b []byte) (ptrace.Traces, error) {
	switch {
	case r.stream != nil:
	case r.opt.Compression != "none" && bytes.HasPrefix(b, zstdMagic):
		if r.frames == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(r.opt.MaxLine)))
			if err != nil {
				return ptrace.Traces{}, err
			}
			r.frames = d
		}
		plain, err := r.frames.DecodeAll(b, r.plain[:0])
		if err != nil {
			return ptrace.Traces{}, fmt.Errorf("zstd: %w", err)
		}
		r.plain, b = plain, plain
	case r.opt.Compression == "zstd":
		return ptrace.Traces{}, errors.New("not a zstd frame (--compression zstd)")
	}
	if r.opt.Format == "json" || r.opt.Format == "" && len(b) > 0 && b[0] == '{' {
		return r.unmarshalJSON(b)
	}
	return r.proto.UnmarshalTraces(b)
}

// deliver passes one request to fn.
func (r *reader) deliver(td ptrace.Traces) error {
	r.docs++
	return r.fn(td)
}

// jsonLines reads the file as JSON lines, or switches to split on the first
// non-blank line that is not one JSON value: a first line that is not
// complete (an indented document), a later one holding more than one value
// (documents run together) or something after its value, which the
// unmarshaler would drop unread, or a lone "{" (an indented document
// appended to JSON lines). Any other incomplete line is the unmarshaler's
// to refuse, naming it.
func (r *reader) jsonLines() error {
	for {
		eof, err := r.next()
		if err != nil {
			return err
		}
		doc := trimBlank(r.line)
		switch {
		case len(doc) == 0:
		case r.docs == 0 && !json.Valid(doc):
			return r.split()
		case eof && !json.Valid(doc):
			// The last line, without its line break and incomplete.
			return r.truncated(fmt.Sprintf("%s:%d", r.path, r.n), "the file ends within the line")
		case moreThanOneValue(doc) || len(doc) == 1 && doc[0] == '{':
			return r.split()
		default:
			if err := r.decode(doc, r.n); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
		r.off += int64(len(r.line))
	}
}

// next reads the next line, with its line break, into r.line. eof reports
// that it was the last (possibly empty) one.
func (r *reader) next() (eof bool, err error) {
	r.line = r.line[:0]
	r.n++
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.line)+len(chunk) > r.opt.MaxLine {
			return false, fmt.Errorf("%s:%d: line longer than %s (--max-record)", r.path, r.n, FormatBytes(r.opt.MaxLine))
		}
		r.line = append(r.line, chunk...)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return true, nil
		case errors.Is(err, io.ErrUnexpectedEOF):
			// A compressed stream cut short.
			return false, r.truncated(fmt.Sprintf("%s:%d", r.path, r.n), "the compressed stream ends within it")
		default:
			return false, fmt.Errorf("%s:%d: %w", r.path, r.n, err)
		}
	}
}

// decode unmarshals one document that starts on line start and passes it
// to fn.
func (r *reader) decode(doc []byte, start int) error {
	switch doc[0] {
	case '{':
	case '[':
		return fmt.Errorf("%s:%d: %w", r.path, start, foreignArray(doc))
	default:
		// The unmarshaler reads a stray "}" as an empty request.
		return fmt.Errorf("%s:%d: %s where a JSON object was expected", r.path, start, excerpt(doc))
	}
	td, err := r.unmarshalJSON(doc)
	switch {
	case err == nil && td.SpanCount() == 0:
		td, err = r.wrapped(doc, td)
	case err != nil && strings.Contains(err.Error(), "ID.UnmarshalJSONIter"):
		// The unmarshaler says only "length mismatch".
		err = fmt.Errorf("%w (OTLP JSON trace and span ids are 32 and 16 hex digits, or the base64 of 16 and 8 bytes)", err)
	}
	if err != nil {
		return fmt.Errorf("%s:%d: %w", r.path, start, err)
	}
	if err := r.deliver(td); err != nil {
		return fmt.Errorf("%s:%d: %w", r.path, start, err)
	}
	return nil
}

// split reads the rest of the file from the current line on as a sequence
// of JSON documents laid out in any way, cutting them where their brackets
// close. Each document is decoded before the next is read.
func (r *reader) split() error {
	var sp jsonSplitter
	var doc []byte
	start, startOff := 0, int64(0)
	for {
		rest := r.line
		for len(rest) > 0 {
			if len(doc) == 0 {
				rest = trimBlankLeft(rest)
				if len(rest) == 0 {
					break
				}
				start, startOff = r.n, r.off+int64(len(r.line)-len(rest))
			}
			end := sp.feed(rest)
			complete := end >= 0
			if !complete {
				end = len(rest)
			}
			if len(doc)+end > r.opt.MaxDocument {
				if first := append(doc, rest[:end]...); first[0] == '[' {
					return fmt.Errorf("%s:%d: %w", r.path, start, foreignArray(first))
				}
				return fmt.Errorf("%s:%d: document longer than %s (--max-record)", r.path, start, FormatBytes(r.opt.MaxDocument))
			}
			doc = append(doc, rest[:end]...)
			rest = rest[end:]
			if complete {
				if err := r.decode(doc, start); err != nil {
					return err
				}
				doc = doc[:0]
			}
		}
		r.off += int64(len(r.line))
		eof, err := r.next()
		if err != nil {
			return err
		}
		if eof && len(r.line) == 0 {
			break
		}
	}
	if len(doc) > 0 {
		r.off = startOff
		return r.truncated(fmt.Sprintf("%s:%d", r.path, start), "the document that starts here has no end")
	}
	return nil
}

// excerpt quotes the start of doc for a message, up to 40 bytes.
func excerpt(doc []byte) string {
	if len(doc) > 40 {
		return fmt.Sprintf("%q…", doc[:40])
	}
	return fmt.Sprintf("%q", doc)
}

// moreThanOneValue reports whether doc, trimmed, has something after its
// first value (its syntax is left to the unmarshaler).
func moreThanOneValue(doc []byte) bool {
	var sp jsonSplitter
	end := sp.feed(doc)
	return end >= 0 && end < len(doc)
}

// jsonSplitter finds where top-level JSON values end in a text fed to it in
// pieces: it skips strings, with their escapes, and counts brackets. It
// does not check the syntax (the unmarshaler does): text that is not an
// object or array at the top level ends a "value" at every byte, for the
// unmarshaler to refuse.
type jsonSplitter struct {
	depth    int
	inString bool
	escaped  bool
}

// feed scans b and returns the index just after the first top-level value
// that ends in it, or -1 if none does.
func (s *jsonSplitter) feed(b []byte) int {
	for i, c := range b {
		switch {
		case s.inString:
			switch {
			case s.escaped:
				s.escaped = false
			case c == '\\':
				s.escaped = true
			case c == '"':
				s.inString = false
			}
		case c == '"':
			s.inString = true
		case c == '{' || c == '[':
			s.depth++
		case c == '}' || c == ']':
			s.depth--
			if s.depth <= 0 {
				s.depth = 0
				return i + 1
			}
		case s.depth == 0 && c != ' ' && c != '\t' && c != '\r' && c != '\n':
			return i + 1
		}
	}
	return -1
}

// FormatBytes writes a size as "64 MiB" or "1 GiB" when it is a whole
// number of those, else as "1000 bytes".
func FormatBytes(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
