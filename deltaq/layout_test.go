// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package deltaq

import (
	"reflect"
	"testing"
	"time"
)

// TestLayoutValid: a layout is valid with a positive dMax and either 1 to
// MaxBins uniform bins, or log-linear buckets that end at dMax and no bin
// count.
func TestLayoutValid(t *testing.T) {
	ll := LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}
	for _, c := range []struct {
		l    Layout
		want bool
	}{
		{Layout{}, false},
		{Layout{DMaxNs: 1e9, Bins: 100}, true},
		{Layout{DMaxNs: 1e9, Bins: MaxBins}, true},
		{Layout{DMaxNs: 1e9, Bins: MaxBins + 1}, false},
		{Layout{DMaxNs: 1e9}, false},
		{Layout{Bins: 100}, false},
		{Layout{DMaxNs: -1, Bins: 100}, false},
		{Layout{DMaxNs: ll.High, LogLinear: ll}, true},
		{Layout{DMaxNs: ll.High, Bins: 10, LogLinear: ll}, false},
		{Layout{DMaxNs: ll.High / 10, LogLinear: ll}, false},
	} {
		if got := c.l.Valid(); got != c.want {
			t.Errorf("%+v.Valid() = %v, want %v", c.l, got, c.want)
		}
	}
}

// TestLogLinearLayout: the layout of valid buckets has their dMax and no
// bin count; invalid buckets give none.
func TestLogLinearLayout(t *testing.T) {
	ll := LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}
	l, ok := LogLinearLayout(ll)
	if !ok || l != (Layout{DMaxNs: int64(10 * time.Second), LogLinear: ll}) || !l.Valid() || !l.IsLogLinear() {
		t.Fatalf("LogLinearLayout(%+v) = %+v, %v", ll, l, ok)
	}
	bad := ll
	bad.High = int64(5 * time.Second) // not low times a power of the factor
	if l, ok := LogLinearLayout(bad); ok || l != (Layout{}) {
		t.Errorf("LogLinearLayout(%+v) = %+v, %v; want none", bad, l, ok)
	}
}

// TestLayoutGrid: uniform bins are their own grid; log-linear buckets are
// read on LogLinear.GridWidth(MaxGridBins): 1ms to 10s by tens in 10 steps
// on its finest grid, 1ms wide, 10,000 bins (MaxGridBins's own example).
func TestLayoutGrid(t *testing.T) {
	if w, n := (Layout{DMaxNs: int64(2 * time.Second), Bins: 200}).Grid(); w != 0.01 || n != 200 {
		t.Errorf("uniform grid = %v s, %d bins; want 0.01 s, 200", w, n)
	}
	ll := LogLinear{Factor: 10, Low: int64(time.Millisecond), High: int64(10 * time.Second), Steps: 10}
	if w, n := (Layout{DMaxNs: ll.High, LogLinear: ll}).Grid(); w != 1e-3 || n != 10_000 {
		t.Errorf("log-linear grid = %v s, %d bins; want 0.001 s, 10000", w, n)
	}
	if d := (Layout{DMaxNs: int64(time.Second), Bins: 10}).DMax(); d != time.Second {
		t.Errorf("DMax() = %v, want 1s", d)
	}
}

// TestLayoutEqual: Equal is ==, for layouts that differ in any one field,
// a field added to Layout or LogLinear later included (each field of both,
// found by reflection, is changed in turn).
func TestLayoutEqual(t *testing.T) {
	base := Layout{DMaxNs: 1e9, Bins: 0, LogLinear: LogLinear{Factor: 10, Low: 1e6, High: 1e9, Steps: 20}}
	if !base.Equal(base) {
		t.Fatalf("%+v does not equal itself", base)
	}
	fields := 0
	for _, path := range [][]int{{0}, {1}, {2, 0}, {2, 1}, {2, 2}, {2, 3}} {
		o := base
		f := reflect.ValueOf(&o).Elem().FieldByIndex(path)
		f.SetInt(f.Int() + 1)
		if o.Equal(base) || base.Equal(o) || o == base {
			t.Errorf("layouts differing in field %v: Equal = %v, want false", path, o.Equal(base))
		}
		fields++
	}
	if want := reflect.TypeOf(Layout{}).NumField() - 1 + reflect.TypeOf(LogLinear{}).NumField(); fields != want {
		t.Fatalf("the test changes %d fields, Layout and LogLinear have %d: add the new one", fields, want)
	}
}
