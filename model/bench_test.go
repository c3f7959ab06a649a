// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package model

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
	"github.com/deltaq-otel/deltaq/diagram"
	"github.com/deltaq-otel/deltaq/whatif"
)

// fiveSpans returns n traces of five spans, as a service would send them
// (children first): root calls A, then B and C in parallel, then D, with
// random delays; every 10th trace skips D's call and gets a second
// pattern.
func fiveSpans(n int) []Span {
	rng := rand.New(rand.NewPCG(7, 8))
	spans := make([]Span, 0, 5*n)
	for k := 0; k < n; k++ {
		t0 := float64(k) * 0.1
		d := func(mean float64) float64 { return rng.ExpFloat64() * mean }
		a0 := t0 + d(0.2)
		a1 := a0 + d(1)
		b1, c1 := a1+d(2), a1+d(3)
		end := max(b1, c1)
		tr := []Span{sp(1, 2, 1, "A", a0, a1), sp(1, 3, 1, "B", a1, b1), sp(1, 4, 1, "C", a1, c1)}
		if k%10 != 0 {
			d1 := end + d(1)
			tr = append(tr, sp(1, 5, 1, "D", end, d1))
			end = d1
		}
		tr = append(tr, sp(1, 1, 0, "root", t0, end+d(0.2)))
		for i := range tr {
			binary.BigEndian.PutUint64(tr[i].TraceID[8:], uint64(k))
		}
		spans = append(spans, tr...)
	}
	return spans
}

// BenchmarkLearn measures learning: assembling 5-span traces, closing them
// and recording exclusive times, patterns and calls (target: 100,000
// traces/s on one core). Traces start 0.1 ms apart and the grace is 1 s of
// trace time, so about 10,000 traces are open at a time.
func BenchmarkLearn(b *testing.B) {
	const n = 10000
	corpus := fiveSpans(n)
	l, err := NewLearner(Config{Grace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	traces := 0
	for i := 0; b.Loop(); i++ {
		// Each round is new traces, later in time.
		off := int64(i) * n * 1e5
		for k := range corpus {
			s := corpus[k]
			binary.BigEndian.PutUint32(s.TraceID[4:], uint32(i))
			s.Start += off
			s.End += off
			l.Add(&s)
		}
		traces += n
	}
	l.Finish()
	b.ReportMetric(float64(traces)/b.Elapsed().Seconds(), "traces/s")
	if st := l.Stats(); st.Learned != uint64(traces) || st.Evicted != 0 {
		b.Fatalf("learned %d of %d traces: %+v", st.Learned, traces, st)
	}
}

// BenchmarkLearnRecords measures learning from records of 1,000 traces
// whose spans are listed in a random order (as a document grouped by
// service lists them): each record is grouped by trace before it is
// learned (Learner.AddRecord).
func BenchmarkLearnRecords(b *testing.B) {
	const n, per = 10000, 1000
	corpus := fiveSpans(n)
	rng := rand.New(rand.NewPCG(3, 4))
	for r := 0; r < len(corpus); r += 5 * per {
		rec := corpus[r:min(r+5*per, len(corpus))]
		rng.Shuffle(len(rec), func(x, y int) { rec[x], rec[y] = rec[y], rec[x] })
	}
	l, err := NewLearner(Config{Grace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	record := make([]Span, 0, 5*per)
	b.ReportAllocs()
	b.ResetTimer()
	traces := 0
	for i := 0; b.Loop(); i++ {
		off := int64(i) * n * 1e5
		for r := 0; r < len(corpus); r += 5 * per {
			record = append(record[:0], corpus[r:min(r+5*per, len(corpus))]...)
			for k := range record {
				binary.BigEndian.PutUint32(record[k].TraceID[4:], uint32(i))
				record[k].Start += off
				record[k].End += off
			}
			l.AddRecord(record)
		}
		traces += n
	}
	l.Finish()
	b.ReportMetric(float64(traces)/b.Elapsed().Seconds(), "traces/s")
	if st := l.Stats(); st.Learned != uint64(traces) || st.Evicted != 0 {
		b.Fatalf("learned %d of %d traces: %+v", st.Learned, traces, st)
	}
}

// BenchmarkWhatIf measures a what-if prediction on a model of 50 nodes at
// 1000 bins: applying an affine intervention and evaluating the diagram
// (target: under 10 ms).
func BenchmarkWhatIf(b *testing.B) {
	m, d := fiftyNodes(b)
	iv, err := whatif.Parse("svc.op6=0.5*X+1ms")
	if err != nil {
		b.Fatal(err)
	}
	base, err := m.Inputs()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in := make(map[string]deltaq.DeltaQ, len(base))
		for k, v := range base {
			in[k] = v
		}
		if _, err := m.Apply(d, in, []whatif.Intervention{iv}); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Evaluate(d, in); err != nil {
			b.Fatal(err)
		}
	}
}

// fiftyNodes learns a model of 50 nodes: a root that calls 7 services in
// turn, each of which calls 6 more, two at a time in parallel, with
// exponential delays.
func fiftyNodes(b testing.TB) (*Model, *diagram.Diagram) {
	rng := rand.New(rand.NewPCG(3, 4))
	var spans []Span
	for k := 0; k < 2000; k++ {
		tr := uint64(k + 1)
		t0 := float64(k) * 100
		cur := t0 + rng.ExpFloat64()*0.1
		id := byte(2)
		var tspans []Span
		for s := 0; s < 7; s++ {
			sid := id
			id++
			start := cur
			cur += rng.ExpFloat64() * 0.2
			for p := 0; p < 3; p++ {
				e1, e2 := cur+rng.ExpFloat64()*0.5, cur+rng.ExpFloat64()*0.5
				tspans = append(tspans, sp(tr, id, sid, fmt.Sprintf("op%d_%d", s, 2*p), cur, e1),
					sp(tr, id+1, sid, fmt.Sprintf("op%d_%d", s, 2*p+1), cur, e2))
				id += 2
				cur = max(e1, e2)
			}
			cur += rng.ExpFloat64() * 0.2
			tspans = append(tspans, sp(tr, sid, 1, fmt.Sprintf("op%d", s), start, cur))
		}
		spans = append(spans, tspans...)
		spans = append(spans, sp(tr, 1, 0, "root", t0, cur+rng.ExpFloat64()*0.1))
	}
	m, d := build(b, Config{}, spans, 1000)
	if len(m.Nodes) != 50 {
		b.Fatalf("%d nodes, want 50", len(m.Nodes))
	}
	return m, d
}
