// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

// Reading OTLP JSON trace files one document at a time, so that a file of
// any size is analysed in memory bounded by its largest document.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Bounds, in bytes, of what readTraceFile holds at a time. The collector's
// file exporter writes one export request, a batch of spans, per line:
// maxTraceLine is far above any batch it sends, and keeps a file without line
// breaks from being read whole. A document laid out over several lines (an
// indented file) must still be held whole to be decoded: maxTraceDocument
// bounds it, larger than any line, so that such a file is accepted up to a
// size that still fits in memory.
const (
	maxTraceLine     = 64 << 20
	maxTraceDocument = 1 << 30
)

// readTraceFile calls fn with each document of an OTLP JSON trace file, in
// order, before reading the next: the collector's file exporter writes
// ExportTraceServiceRequest documents one per line (JSON lines), and a file
// whose first non-blank line is one complete JSON value is read that way,
// one line at a time. Any other file (an indented document, several on a
// line) is split into documents by their brackets. Lines are bounded by
// maxLine bytes, documents by maxDoc. Errors name the file and the line of
// the document, as FILE:LINE; an error of fn stops the reading.
func readTraceFile(path string, maxLine, maxDoc int, fn func(ptrace.Traces) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := &traceReader{path: path, br: bufio.NewReaderSize(f, 64<<10), maxLine: maxLine, maxDoc: maxDoc, fn: fn}
	if err := r.read(); err != nil {
		return err
	}
	if r.docs == 0 {
		return fmt.Errorf("%s: no traces", path)
	}
	return nil
}

// traceReader is the state of readTraceFile.
type traceReader struct {
	path            string
	br              *bufio.Reader
	maxLine, maxDoc int
	fn              func(ptrace.Traces) error
	um              ptrace.JSONUnmarshaler
	line            []byte // the current line, reused
	n               int    // number of the current line, from 1
	docs            int    // documents passed to fn
}

// read reads the file as JSON lines, or switches to split on the first
// non-blank line if that is not a complete JSON value.
func (r *traceReader) read() error {
	for {
		eof, err := r.next()
		if err != nil {
			return err
		}
		doc := bytes.TrimSpace(r.line)
		switch {
		case len(doc) == 0:
		case r.docs == 0 && !json.Valid(doc):
			return r.split()
		default:
			if err := r.decode(doc, r.n); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
	}
}

// next reads the next line, with its line break, into r.line. eof reports
// that it was the last (possibly empty) one.
func (r *traceReader) next() (eof bool, err error) {
	r.line = r.line[:0]
	r.n++
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.line)+len(chunk) > r.maxLine {
			return false, fmt.Errorf("%s:%d: line longer than %s", r.path, r.n, formatBytes(r.maxLine))
		}
		r.line = append(r.line, chunk...)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return true, nil
		default:
			return false, fmt.Errorf("%s:%d: %w", r.path, r.n, err)
		}
	}
}

// decode unmarshals one document that starts on line start and passes it
// to fn.
func (r *traceReader) decode(doc []byte, start int) error {
	td, err := r.um.UnmarshalTraces(doc)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", r.path, start, err)
	}
	r.docs++
	if err := r.fn(td); err != nil {
		return fmt.Errorf("%s:%d: %w", r.path, start, err)
	}
	return nil
}

// split reads the rest of the file from the current line on as a sequence
// of JSON documents laid out in any way, cutting them where their brackets
// close. Each document is decoded before the next is read.
func (r *traceReader) split() error {
	var sp jsonSplitter
	var doc []byte
	start := 0
	for {
		rest := r.line
		for len(rest) > 0 {
			if len(doc) == 0 {
				rest = bytes.TrimLeft(rest, " \t\r\n")
				if len(rest) == 0 {
					break
				}
				start = r.n
			}
			end := sp.feed(rest)
			complete := end >= 0
			if !complete {
				end = len(rest)
			}
			if len(doc)+end > r.maxDoc {
				return fmt.Errorf("%s:%d: document longer than %s", r.path, start, formatBytes(r.maxDoc))
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
		eof, err := r.next()
		if err != nil {
			return err
		}
		if eof && len(r.line) == 0 {
			break
		}
	}
	if len(doc) > 0 {
		return fmt.Errorf("%s:%d: the document that starts here has no end", r.path, start)
	}
	return nil
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

// formatBytes writes a size as "64 MiB" or "1 GiB" when it is a whole
// number of those, else as "1000 bytes".
func formatBytes(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
