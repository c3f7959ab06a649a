// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package contract

import (
	"encoding/binary"
	"testing"
)

func testEntry(n byte, start uint64) []byte {
	var tid [16]byte
	var sid [8]byte
	tid[15], sid[7] = n, n
	return AppendStart(nil, tid, sid, start)
}

// TestDecodeStarts: a well-formed batch yields its entries in order, with
// their thresholds; a threshold not below 2⁵⁶ is none.
func TestDecodeStarts(t *testing.T) {
	entries := append(testEntry(1, 100), testEntry(2, 200)...)
	entries = append(entries, testEntry(3, 300)...)
	var th []byte
	for _, v := range []uint64{0, 1 << 55, 1 << 56} {
		th = binary.LittleEndian.AppendUint64(th, v)
	}
	s, err := DecodeStarts("checkout", entries, th, false)
	if err != StartsOK || s.Len() != 3 {
		t.Fatalf("DecodeStarts = %d entries, %v", s.Len(), err)
	}
	for i, want := range []StartEntry{{Start: 100}, {Start: 200, Threshold: 1 << 55}, {Start: 300}} {
		e := s.At(i)
		want.TraceID[15], want.SpanID[7] = byte(i+1), byte(i+1)
		if e != want || !e.Valid() {
			t.Errorf("entry %d = %+v, want %+v", i, e, want)
		}
	}
	s, err = DecodeStarts("checkout", entries, nil, false)
	if err != StartsOK || s.At(1).Threshold != 0 {
		t.Errorf("no thresholds: %v, %+v", err, s.At(1))
	}
}

// TestDecodeStartsRefused: each kind of malformed record, refused as a
// whole with its reason.
func TestDecodeStartsRefused(t *testing.T) {
	one := testEntry(1, 100)
	max := make([]byte, MaxStartEntries*StartEntryBytes)
	for _, c := range []struct {
		name       string
		probe      string
		entries    []byte
		thresholds []byte
		badTh      bool
		want       StartsError
	}{
		{"no probe", "", one, nil, false, StartsNoProbe},
		{"no entries", "p", nil, nil, false, StartsNoEntries},
		{"length", "p", one[:31], nil, false, StartsBadLength},
		{"length over", "p", append(one, 0), nil, false, StartsBadLength},
		{"too many", "p", append(max, one...), nil, false, StartsTooMany},
		{"thresholds short", "p", one, make([]byte, 7), false, StartsBadThresholds},
		{"thresholds empty", "p", one, []byte{}, false, StartsBadThresholds},
		{"thresholds not bytes", "p", one, nil, true, StartsBadThresholds},
		{"the most", "p", max, nil, false, StartsOK},
	} {
		_, err := DecodeStarts(c.probe, c.entries, c.thresholds, c.badTh)
		if err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if c.want != StartsOK && err.Error() == "" {
			t.Errorf("%s: no reason given", c.name)
		}
	}
}

// TestStartEntryValid: an entry with no trace id, no span id or no start
// time (or one past the largest int64) is invalid on its own.
func TestStartEntryValid(t *testing.T) {
	var tid [16]byte
	var sid [8]byte
	tid[0], sid[0] = 1, 1
	for _, c := range []struct {
		name  string
		entry []byte
		valid bool
	}{
		{"valid", AppendStart(nil, tid, sid, 1), true},
		{"no trace id", AppendStart(nil, [16]byte{}, sid, 1), false},
		{"no span id", AppendStart(nil, tid, [8]byte{}, 1), false},
		{"no start", AppendStart(nil, tid, sid, 0), false},
		{"start past int64", AppendStart(nil, tid, sid, 1<<63), false},
	} {
		s, err := DecodeStarts("p", c.entry, nil, false)
		if err != StartsOK {
			t.Fatal(err)
		}
		if e := s.At(0); e.Valid() != c.valid {
			t.Errorf("%s: Valid() = %v", c.name, !c.valid)
		}
	}
}

// TestDecodeStartsAllocates: checking a record and reading its entries
// allocate nothing.
func TestDecodeStartsAllocates(t *testing.T) {
	entries := append(testEntry(1, 100), testEntry(2, 200)...)
	th := make([]byte, 16)
	n := testing.AllocsPerRun(100, func() {
		s, _ := DecodeStarts("p", entries, th, false)
		for i := range s.Len() {
			_ = s.At(i)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations", n)
	}
}

func BenchmarkStartsAt(b *testing.B) {
	var entries []byte
	for i := range 512 {
		entries = append(entries, testEntry(byte(i), uint64(i+1))...)
	}
	th := make([]byte, 512*8)
	b.SetBytes(int64(len(entries)))
	var sum int64
	for b.Loop() {
		s, _ := DecodeStarts("p", entries, th, false)
		for i := range s.Len() {
			sum += s.At(i).Start
		}
	}
	_ = sum
}

// BenchmarkStartsRead is BenchmarkStartsAt through Read, as the connector
// reads a batch: each entry into one StartEntry, its ids then copied on
// field by field, as into an instance's key.
func BenchmarkStartsRead(b *testing.B) {
	var entries []byte
	for i := range 512 {
		entries = append(entries, testEntry(byte(i), uint64(i+1))...)
	}
	th := make([]byte, 512*8)
	b.SetBytes(int64(len(entries)))
	var key struct {
		tid [16]byte
		sid [8]byte
	}
	var sum int64
	for b.Loop() {
		s, _ := DecodeStarts("p", entries, th, false)
		var e StartEntry
		for i := range s.Len() {
			s.Read(i, &e)
			key.tid, key.sid = e.TraceID, e.SpanID
			sum += e.Start + int64(key.sid[7])
		}
	}
	_ = sum
}

// TestStartsReadIsAt: Read fills an entry as At returns it, whatever the
// entry held before.
func TestStartsReadIsAt(t *testing.T) {
	entries := append(testEntry(1, 100), testEntry(2, 1<<63)...)
	th := make([]byte, 16)
	binary.LittleEndian.PutUint64(th, 7)
	s, _ := DecodeStarts("p", entries, th, false)
	e := StartEntry{Start: 5, Threshold: 9}
	for i := range s.Len() {
		s.Read(i, &e)
		if e != s.At(i) {
			t.Fatalf("entry %d: Read %+v, At %+v", i, e, s.At(i))
		}
	}
}

// TestStartsIDsAreRead: IDs gives each entry's ids as Read does.
func TestStartsIDsAreRead(t *testing.T) {
	entries := append(testEntry(1, 100), testEntry(2, 200)...)
	entries = append(entries, AppendStart(nil, [16]byte{15: 9}, [8]byte{0: 4, 7: 5}, 300)...)
	s, _ := DecodeStarts("p", entries, nil, false)
	for i := range s.Len() {
		var tid [16]byte
		var sid [8]byte
		s.IDs(i, &tid, &sid)
		if e := s.At(i); tid != e.TraceID || sid != e.SpanID {
			t.Fatalf("entry %d: IDs %x %x, Read %x %x", i, tid, sid, e.TraceID, e.SpanID)
		}
	}
}
