// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchDiagram has 10 probes: the definitions d1, d2 and system, the
// operators race and pick, and the outcomes o1 … o5.
const benchDiagram = `
d1 = o1 -> o2;
d2 = s:d1 -> f:race(o3, o4);
system = s:d2 -> p:pick[0.5, 0.5](o5, o1);
`

// BenchmarkWindowClose measures the analysis of one closed window: 100
// probes with 1000-bin histograms (dMax 1 s, 1 ms bins), 10 of them in the
// outcome diagram, a full band history (K = 30), default quantiles; every
// probe has a three-point QTA. "plain" has no trigger; "triggers" turns on
// the qta trigger, the divergence test on every diagram probe and the
// slack trend on every probe; "pooled" also pools the divergence test over 5
// windows. Filling the window is not timed.
func BenchmarkWindowClose(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchClose(b, Triggers{}) })
	trend := SlackTrendTrigger{Horizon: time.Minute}
	b.Run("triggers", func(b *testing.B) {
		benchClose(b, Triggers{QTA: true, Divergence: DivergenceTrigger{Alpha: 0.01, Windows: 3}, SlackTrend: trend})
	})
	b.Run("pooled", func(b *testing.B) {
		benchClose(b, Triggers{QTA: true, Divergence: DivergenceTrigger{Alpha: 0.01, Windows: 3, Pool: 5}, SlackTrend: trend})
	})
}

func benchClose(b *testing.B, tr Triggers) {
	names := []string{"d1", "d2", "system", "race", "pick", "o1", "o2", "o3", "o4", "o5"}
	for i := len(names); i < 100; i++ {
		names = append(names, fmt.Sprintf("probe_%02d", i))
	}
	qta := QTA{Points: []QTAPoint{{50 * time.Millisecond, 0.25}, {100 * time.Millisecond, 0.5}, {200 * time.Millisecond, 0.75}}, MaxFailure: 0.1}
	cfg := Config{Interval: time.Second, Lag: time.Second, Diagram: benchDiagram, Probes: map[string]ProbeConfig{}}
	for _, n := range names {
		cfg.Probes[n] = ProbeConfig{DMax: time.Second, Bins: 1000, QTA: qta, Triggers: tr}
	}
	e, err := New(cfg, at(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	// 2000 instances per probe per window, exponential with a mean of
	// 50 ms to 150 ms, so the histograms spread over hundreds of bins.
	var base []Instance
	for p, name := range names {
		mean := 0.05 + 0.1*float64(p)/float64(len(names))
		for j := range 2000 {
			end := t0.UnixNano() + int64(j)*int64(time.Millisecond)/4
			d := int64(rng.ExpFloat64() * mean * 1e9)
			oc := Success
			if d >= int64(time.Second) {
				oc = Timeout
			}
			base = append(base, Instance{Probe: name, Outcome: oc, Start: end - d, End: end, DMaxNs: int64(time.Second), Bins: 1000})
		}
	}
	fill := func(w int) {
		shift := int64(w) * int64(time.Second)
		bt := e.Begin()
		for _, in := range base {
			in.Start += shift
			in.End += shift
			bt.Add(&in)
		}
		bt.End()
	}
	w := 0
	for ; w < DefaultHistory+1; w++ {
		fill(w)
		e.Advance(at(time.Duration(w+2) * time.Second))
	}
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		fill(w)
		now := at(time.Duration(w+2) * time.Second)
		w++
		b.StartTimer()
		if res := e.Advance(now); len(res) != 1 {
			b.Fatalf("%d windows closed", len(res))
		}
	}
}

// BenchmarkEngineAdd measures counting one instance with its trace and
// span ids (a success of a random delay in a 1000-bin probe) into an open
// window: exemplars off (the default: the worst instances are still
// picked), on (8 groups), and on with an adjusted count of 4 per instance.
func BenchmarkEngineAdd(b *testing.B) {
	for _, c := range []struct {
		name      string
		exemplars bool
		weight    int64
	}{{"off", false, 0}, {"on", true, 0}, {"on_weighted", true, 4}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{Interval: time.Hour, Exemplars: ExemplarConfig{Enabled: c.exemplars},
				Probes: map[string]ProbeConfig{"p": {DMax: time.Second, Bins: 1000}}}
			e, err := New(cfg, t0)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ins := make([]Instance, 1024)
			for i := range ins {
				d := rng.Int64N(int64(time.Second))
				ins[i] = Instance{Probe: "p", Outcome: Success, Start: t0.UnixNano() + 1, End: t0.UnixNano() + 1 + d, Weight: c.weight}
				ins[i].TraceID[0], ins[i].TraceID[1], ins[i].SpanID[0] = byte(i), byte(i>>8), 1
			}
			bt := e.Begin()
			defer bt.End()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bt.Add(&ins[i&1023])
			}
		})
	}
}
