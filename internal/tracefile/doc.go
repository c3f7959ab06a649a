// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package tracefile writes and reads trace files in the forms the
// collector's file exporter writes: OTLP JSON, one ExportTraceServiceRequest
// per line; length-prefixed protobuf or zstd-compressed records; a zstd
// stream of either. Read also takes JSON documents laid out in any way
// (indented, several on a line), as trace backends export them, and one
// protobuf ExportTraceServiceRequest without a length (an OTLP/HTTP request
// body saved to a file). The OTLP JSON that trace backends wrap (Tempo's
// "batches" and "trace", Jaeger's API v3 "result") is unwrapped, and ids
// in base64 (Tempo's) are read as in hex; JSON of other trace
// formats, which the unmarshaler reads as requests without spans, is
// refused naming what it looks like. A file compressed with gzip is read
// as the file it holds.
//
// A file is read one record (request, document) at a time, so that a file
// of any size is processed in memory bounded by its largest record: every
// bound has a default (DefaultMaxLine, DefaultMaxDocument) and a range, and
// a record beyond it is refused with an error naming the file, the line or
// byte offset and the bound.
package tracefile
