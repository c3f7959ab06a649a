// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// shopServices are the services of shopTraces, in the order an exporter
// that groups spans by service lists them.
var shopServices = []string{"frontend", "cart", "stock", "price", "pay", "bank"}

// shopTraces returns n traces of a shop, 20 ms apart (so that the corpus
// spans n/50 s of trace time, more than the default grace for n > 250):
// frontend.checkout calls cart.get, then stock.check and price.quote in
// parallel, then pay.charge, which calls bank.debit; 2 % of the charges
// fail. Times are exponential around the means given below, in ms.
func shopTraces(n int, seed uint64) [][]Span {
	rng := rand.New(rand.NewPCG(seed, seed^0x5e))
	e := func(mean float64) float64 { return 0.05 + rng.ExpFloat64()*mean }
	out := make([][]Span, n)
	for k := range out {
		t0 := float64(k) * 20
		mk := func(id, parent byte, service, name string, a, b float64) Span {
			s := sp(uint64(k+1), id, parent, name, a, b)
			s.Service = service
			return s
		}
		cart1 := t0 + 0.1 + e(0.5)
		stock1, price1 := cart1+e(0.8), cart1+e(0.4)
		par := max(stock1, price1)
		bank0 := par + e(0.2)
		bank1 := bank0 + e(1)
		pay1 := bank1 + e(0.3)
		failed := rng.Float64() < 0.02
		charge := mk(5, 1, "pay", "charge", par, pay1)
		charge.Failed = failed
		root := mk(1, 0, "frontend", "checkout", t0, pay1+e(0.1))
		root.Failed = failed
		out[k] = []Span{
			root,
			mk(2, 1, "cart", "get", t0+0.1, cart1),
			mk(3, 1, "stock", "check", cart1, stock1),
			mk(4, 1, "price", "quote", cart1, price1),
			charge,
			mk(6, 5, "bank", "debit", bank0, bank1),
		}
	}
	return out
}

// byService returns the spans of traces grouped by service (shopServices
// order), each service's spans in trace order: the layout of an
// ExportTraceServiceRequest as exporters write it.
func byService(traces [][]Span) []Span {
	var out []Span
	for _, svc := range shopServices {
		for _, tr := range traces {
			for _, s := range tr {
				if s.Service == svc {
					out = append(out, s)
				}
			}
		}
	}
	return out
}

// learnRecords learns the records in order with cfg and builds the model.
func learnRecords(t *testing.T, cfg Config, records [][]Span) (*Model, Stats) {
	t.Helper()
	l, err := NewLearner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		l.AddRecord(slices.Clone(r))
	}
	st := l.Finish()
	m, err := Build(l, 200)
	if err != nil {
		t.Fatal(err)
	}
	return m, st
}

// TestLayoutIndependence is a property test: the same 600 traces (12 s of
// trace time, more than twice the 5 s default grace) written in every
// layout a trace file can have give the same model — nodes, patterns,
// exclusive-time ΔQs and diagram — with every trace learned. A record is
// read whole before the trace clock moves, so the order in which it lists
// spans does not matter; the grace applies between records. The span-at-a-
// time reading of a record grouped by service (each span its own record,
// the clock moving within the document) is checked to give a wrong model,
// so that the property has power.
func TestLayoutIndependence(t *testing.T) {
	const n = 600
	for seed := uint64(1); seed <= 3; seed++ {
		traces := shopTraces(n, seed)
		rng := rand.New(rand.NewPCG(seed, 99))
		shuffled := slices.Concat(traces...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		var perService [][]Span
		grouped := byService(traces)
		for _, svc := range shopServices {
			var r []Span
			for _, s := range grouped {
				if s.Service == svc {
					r = append(r, s)
				}
			}
			perService = append(perService, r)
		}
		// Records of 16 traces each, spans by service within a record, as
		// a collector's batches.
		var batches [][]Span
		for k := 0; k < n; k += 16 {
			batches = append(batches, byService(traces[k:min(k+16, n)]))
		}
		want, wst := learnRecords(t, Config{}, traces) // a record per trace
		if wst.Learned != n || wst.Incoherence != (Incoherence{}) {
			t.Fatalf("seed %d, a record per trace: %+v, want %d coherent traces learned", seed, wst, n)
		}
		for _, c := range []struct {
			name    string
			cfg     Config
			records [][]Span
			evicted bool
		}{
			{"a record per service", Config{}, perService, false},
			{"batches of 16 traces by service", Config{}, batches, false},
			{"one record, by service", Config{}, [][]Span{grouped}, false},
			{"one record, shuffled", Config{}, [][]Span{shuffled}, false},
			// A record larger than the open-trace bounds: whole traces of
			// it are closed early, and learned right.
			{"one shuffled record beyond MaxOpenTraces", Config{MaxOpenTraces: 50}, [][]Span{shuffled}, true},
			{"one record by service beyond MaxOpenSpans", Config{MaxOpenSpans: 120}, [][]Span{grouped}, true},
		} {
			got, st := learnRecords(t, c.cfg, c.records)
			if st.Learned != n || st.Incoherence != (Incoherence{}) || (st.Evicted > 0) != c.evicted {
				t.Errorf("seed %d, %s: %+v, want %d coherent traces learned (evictions: %v)", seed, c.name, st, n, c.evicted)
			}
			if !reflect.DeepEqual(got.Nodes, want.Nodes) || got.BinWidth != want.BinWidth || string(got.Diagram()) != string(want.Diagram()) {
				t.Errorf("seed %d, %s: the model differs from that of a record per trace:\n%s\nwant\n%s", seed, c.name, got.Diagram(), want.Diagram())
			}
		}
		// The clock moving within a document: each span a record of its own.
		var spanwise [][]Span
		for _, s := range grouped {
			spanwise = append(spanwise, []Span{s})
		}
		if got, st := learnRecords(t, Config{}, spanwise); st.Incoherence.MissingParent == 0 || string(got.Diagram()) == string(want.Diagram()) {
			t.Errorf("seed %d: span at a time, by service: %+v; the test has no power", seed, st)
		}
	}
}

// TestAddRecordKeepsTraceOrder: grouping a record by trace keeps the order
// of each trace's spans, the traces in the order of their first span.
func TestAddRecordKeepsTraceOrder(t *testing.T) {
	mk := func(tr uint64, id byte) Span {
		var s Span
		binary.BigEndian.PutUint64(s.TraceID[8:], tr)
		s.SpanID[7] = id
		return s
	}
	spans := []Span{mk(2, 1), mk(1, 1), mk(2, 2), mk(1, 2), mk(2, 3)}
	var l Learner
	l.groupByTrace(spans)
	want := []Span{mk(2, 1), mk(2, 2), mk(2, 3), mk(1, 1), mk(1, 2)}
	if !reflect.DeepEqual(spans, want) {
		t.Errorf("grouped %v, want %v", spans, want)
	}
}

// TestMaxDepth reproduces a hostile trace file: one trace of 9,999 spans,
// each the parent of the next, made `deltaq model` take 25 s and 1.46 GB
// (a definition per level, each convolving all the levels below). A trace
// deeper than MaxDepth (default 64) is left out and counted, the first one
// named; one at the bound is learned; a model.json deeper than
// MaxDepthLimit, or whose parents form a cycle, is refused.
func TestMaxDepth(t *testing.T) {
	chain := func(tr uint64, n int) []Span {
		out := make([]Span, n)
		for i := range out {
			s := sp(tr, 0, 0, "op", float64(i)*0.001, 100-float64(i)*0.001)
			binary.BigEndian.PutUint64(s.SpanID[:], uint64(i+1))
			if i > 0 {
				binary.BigEndian.PutUint64(s.ParentID[:], uint64(i))
			}
			s.Name = "op" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
			out[i] = s
		}
		return out
	}
	l, err := NewLearner(Config{})
	if err != nil {
		t.Fatal(err)
	}
	l.AddRecord(chain(1, 9999))
	l.AddRecord(chain(2, DefaultMaxDepth+1)) // depth 64: at the bound
	st := l.Finish()
	cuts := l.Cuts()
	if st.TooDeep != 1 || st.Learned != 1 || len(cuts) != 1 || cuts[0] != (Cut{Bound: "MaxDepth", Trace: "00000000000000000000000000000001", Detail: "9998 calls deep"}) {
		t.Fatalf("stats %+v, cuts %+v; want trace 1 left out at depth 9998, trace 2 learned", st, cuts)
	}
	m, err := Build(l, 100)
	if err != nil || len(m.Nodes) != DefaultMaxDepth+1 {
		t.Fatalf("model of %d nodes, %v; want %d", len(m.Nodes), err, DefaultMaxDepth+1)
	}
	if _, err := NewLearner(Config{MaxDepth: MaxDepthLimit + 1}); err == nil {
		t.Errorf("MaxDepth %d accepted", MaxDepthLimit+1)
	}
	// model.json: a node whose parent is itself.
	m.Nodes[1].Parent = m.Nodes[1].Probe
	js, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(js); err == nil || !strings.Contains(err.Error(), "calls deep, or its parents form a cycle") {
		t.Errorf("a cycle of parents: %v", err)
	}
}
