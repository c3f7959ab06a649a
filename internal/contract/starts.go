// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The batch start event: one log record that announces the starts of many
// instances of one probe, so that an application sends one record every few
// milliseconds rather than one a span (docs/contract/start-event.json,
// "batch"). Its EventName is StartsEventName; it carries AttrProbe, the
// entries in AttrStarts and, optionally, their sampling thresholds in
// AttrStartsThresholds. The record's own ids and timestamp are not read.
const (
	// StartsEventName is the EventName of the batch start event.
	StartsEventName = "deltaq.span.starts"
	// AttrStarts is the batch's entries, a bytes attribute: N entries of
	// StartEntryBytes, each the trace id (16 bytes), the span id (8) and
	// the start time in nanoseconds since the Unix epoch (uint64,
	// little-endian, 8).
	AttrStarts = "deltaq.starts"
	// AttrStartsThresholds is the optional sampling thresholds of the
	// batch's entries, a bytes attribute: N × StartThresholdBytes, each
	// the 56-bit rejection threshold (uint64, little-endian) of the span's
	// tracestate `ot=th`, 0 when the span has none.
	AttrStartsThresholds = "deltaq.starts.thresholds"
	// StartEntryBytes is the size of one entry of AttrStarts.
	StartEntryBytes = 32
	// StartThresholdBytes is the size of one threshold of
	// AttrStartsThresholds.
	StartThresholdBytes = 8
	// MaxStartEntries bounds the entries of one batch start event.
	MaxStartEntries = 1 << 16
)

// StartsError is why a batch start event is refused as a whole: it is
// malformed, and none of its entries is read. The zero value is no error.
type StartsError uint8

// The reasons a batch start event is refused (StartsError).
const (
	// StartsOK: the record is well formed.
	StartsOK StartsError = iota
	// StartsNoProbe: AttrProbe is missing, empty or not a string.
	StartsNoProbe
	// StartsNoEntries: AttrStarts is missing, empty or not bytes.
	StartsNoEntries
	// StartsBadLength: AttrStarts' length is not a multiple of
	// StartEntryBytes.
	StartsBadLength
	// StartsTooMany: more than MaxStartEntries entries.
	StartsTooMany
	// StartsBadThresholds: AttrStartsThresholds is not bytes, or its length
	// is not StartThresholdBytes times the number of entries.
	StartsBadThresholds
	numStartsErrors
)

var startsErrorText = [numStartsErrors]string{
	"",
	AttrProbe + " missing, empty or not a string",
	AttrStarts + " missing, empty or not bytes",
	AttrStarts + " length not a multiple of 32",
	AttrStarts + " holds more than 65536 entries",
	AttrStartsThresholds + " not bytes, or its length not 8 × the entries",
}

// Error returns the reason in words, for a debug log.
func (e StartsError) Error() string {
	if e >= numStartsErrors {
		return "unknown"
	}
	return startsErrorText[e]
}

// StartEntry is one instance a batch start event announces.
type StartEntry struct {
	TraceID [16]byte
	SpanID  [8]byte
	// Start is the start time in nanoseconds since the Unix epoch.
	Start int64
	// Threshold is the span's sampling threshold, 0 when it has none (or
	// the record has no AttrStartsThresholds, or the value is not below
	// 2⁵⁶, which is no threshold).
	Threshold uint64
}

// Valid reports whether the entry can be tracked: both ids are non-zero
// and the start time is positive. An invalid entry is refused on its own;
// the others of its record are read.
func (e *StartEntry) Valid() bool {
	return e.TraceID != [16]byte{} && e.SpanID != [8]byte{} && e.Start > 0
}

// Starts is the checked content of a batch start event (DecodeStarts): its
// entries are read in place, one at a time (At), with no allocation.
type Starts struct {
	entries, thresholds []byte
}

// DecodeStarts checks a batch start event whose AttrProbe value is probe
// ("" when it is missing or not a string), whose AttrStarts is entries
// (empty when it is missing or not bytes) and whose AttrStartsThresholds is
// thresholds (nil when absent; badThresholds when present but not bytes).
// It returns the entries, or the reason the record is refused. It does not
// allocate, and reads none of the entries (At does).
func DecodeStarts(probe string, entries, thresholds []byte, badThresholds bool) (Starts, StartsError) {
	switch {
	case probe == "":
		return Starts{}, StartsNoProbe
	case len(entries) == 0:
		return Starts{}, StartsNoEntries
	case len(entries)%StartEntryBytes != 0:
		return Starts{}, StartsBadLength
	case len(entries) > MaxStartEntries*StartEntryBytes:
		return Starts{}, StartsTooMany
	case badThresholds || thresholds != nil && len(thresholds) != len(entries)/StartEntryBytes*StartThresholdBytes:
		return Starts{}, StartsBadThresholds
	}
	return Starts{entries: entries, thresholds: thresholds}, StartsOK
}

// Len returns the number of entries.
func (s *Starts) Len() int { return len(s.entries) / StartEntryBytes }

// At returns entry i by value (Read), for a reader of a few entries;
// the components' loops use Read.
func (s *Starts) At(i int) StartEntry {
	var e StartEntry
	s.Read(i, &e)
	return e
}

// Read sets *e to entry i, 0 ≤ i < Len; a start time past the largest
// int64 reads as 0, which Valid refuses. It fills an entry in place rather
// than returning one: an entry returned by value is built aside and copied
// in 16-byte moves that straddle its fields' stores and wait for them, a
// stall per entry.
//
// It is small enough to be inlined into the loops over a record's entries:
// the entry is taken as an array, one bounds check, and a start time past
// the largest int64, negative as an int64, is cleared without a branch.
// The Starts is taken by reference, as by Len and At: by value, the loop
// copied its two slices for every entry it read.
func (s *Starts) Read(i int, e *StartEntry) {
	b := (*[StartEntryBytes]byte)(s.entries[i*StartEntryBytes:])
	e.TraceID, e.SpanID = [16]byte(b[:16]), [8]byte(b[16:24])
	e.Start = max(int64(binary.LittleEndian.Uint64(b[24:])), 0)
	e.Threshold = 0
	if s.thresholds != nil {
		if th := binary.LittleEndian.Uint64(s.thresholds[i*StartThresholdBytes:]); th < maxThreshold {
			e.Threshold = th
		}
	}
}

// IDs sets *traceID and *spanID to the ids of entry i, 0 ≤ i < Len,
// alone: for a reader that looks ahead at the keys of the entries to come.
func (s *Starts) IDs(i int, traceID *[16]byte, spanID *[8]byte) {
	b := (*[StartEntryBytes]byte)(s.entries[i*StartEntryBytes:])
	*traceID, *spanID = [16]byte(b[:16]), [8]byte(b[16:24])
}

// AppendStart appends the entry of an instance to a batch's AttrStarts
// bytes: the encoder of the contract, for tests and load generators.
func AppendStart(b []byte, traceID [16]byte, spanID [8]byte, start uint64) []byte {
	b = append(b, traceID[:]...)
	b = append(b, spanID[:]...)
	return binary.LittleEndian.AppendUint64(b, start)
}

// ReadStarts reads the attributes of a batch start event (DecodeStarts)
// and returns its entries and probe, or the reason it is refused. pdata
// gives a bytes value only as a copy: one a record.
func ReadStarts(attrs pcommon.Map) (Starts, string, StartsError) {
	var probe string
	if v, ok := attrs.Get(AttrProbe); ok && v.Type() == pcommon.ValueTypeStr {
		probe = v.Str()
	}
	var entries, th []byte
	if v, ok := attrs.Get(AttrStarts); ok && v.Type() == pcommon.ValueTypeBytes {
		entries = v.Bytes().AsRaw()
	}
	v, hasTh := attrs.Get(AttrStartsThresholds)
	badTh := hasTh && v.Type() != pcommon.ValueTypeBytes
	if hasTh && !badTh {
		if th = v.Bytes().AsRaw(); th == nil {
			th = []byte{} // present and empty: not absent
		}
	}
	starts, err := DecodeStarts(probe, entries, th, badTh)
	return starts, probe, err
}
