// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// qooDirect is the Quality of Outcome score computed straight from raw
// delays by the formulas of "Quality of Outcome" (draft-ietf-ippm-qoo-10,
// section 3.3), sharing no code with the engine: each percentile p of the
// completed instances is the sample percentile, the least delay by which
// a share p of their (adjusted) count completed; the loss is the share of
// failures and timeouts; each is placed linearly between ROP and CPUP,
// clamped to [0, 1]; the score is 100 times the least of them.
type qooDirect struct {
	percentiles []float64 // seconds, one per requirement percentile
	loss        float64
	latency     float64 // 0 to 100
	lossScore   float64
	score       float64
}

type weightedDelay struct {
	d time.Duration
	w int64
}

func directQoO(req deltaq.QoORequirement, completed []weightedDelay, lost int64) qooDirect {
	slices.SortFunc(completed, func(a, b weightedDelay) int { return cmp.Compare(a.d, b.d) })
	var n int64
	for _, c := range completed {
		n += c.w
	}
	var r qooDirect
	r.loss = float64(lost) / float64(n+lost)
	clamp := func(x float64) float64 { return math.Min(math.Max(x, 0), 1) }
	r.latency = 100
	for _, l := range req.Latency {
		var t time.Duration
		if l.Percentile == 0 {
			t = completed[0].d
		} else {
			need := l.Percentile * float64(n)
			var acc int64
			for _, c := range completed {
				acc += c.w
				if float64(acc) >= need {
					t = c.d
					break
				}
			}
		}
		r.percentiles = append(r.percentiles, t.Seconds())
		m := clamp(1 - (t.Seconds()-l.ROP)/(l.CPUP-l.ROP))
		r.latency = math.Min(r.latency, 100*m)
	}
	r.lossScore = 100 * clamp(1-(r.loss-req.ROPLoss)/(req.CPUPLoss-req.ROPLoss))
	r.score = math.Min(r.latency, r.lossScore)
	return r
}

// TestQoODifferentialRawDelays scores windows of random delays (a fixed
// seed) — log-normal successes, some beyond dMax (timeouts), failures, and
// adjusted counts of 1, 2 and 4 (probability sampling) — through the
// engine, and against qooDirect on the same raw delays. The engine reads
// each percentile from its analysis counts, interpolated within the bucket
// of the sample percentile (under 1/64 of the delay wide), so each reading
// must lie in that bucket and the latency component within the bucket's
// width over CPUP − ROP; the loss, counted, must agree exactly.
func TestQoODifferentialRawDelays(t *testing.T) {
	rng := rand.New(rand.NewPCG(20260515, 34))
	q := QoOConfig{
		ROP: QoOThreshold{Points: []QoOPoint{{P: 0, Delay: 5 * ms}, {P: 0.5, Delay: 15 * ms}, {P: 0.9, Delay: 30 * ms},
			{P: 0.99, Delay: 45 * ms}, {P: 1, Delay: 60 * ms}}, MaxFailure: 0.01},
		CPUP: QoOThreshold{Points: []QoOPoint{{P: 0, Delay: 15 * ms}, {P: 0.5, Delay: 40 * ms}, {P: 0.9, Delay: 70 * ms},
			{P: 0.99, Delay: 90 * ms}, {P: 1, Delay: 100 * ms}}, MaxFailure: 0.1},
	}
	req, err := q.Requirement()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		median := time.Duration(8+4*round) * ms // moves the score across its range
		var ins []Instance
		var completed []weightedDelay
		var lost, total int64
		for i := range 3000 {
			w := int64(1) << rng.IntN(3)
			end := 100*ms + time.Duration(i)*250*time.Microsecond
			total += w
			switch {
			case rng.Float64() < 0.02:
				in := failed("x", end)
				in.Weight = w
				ins = append(ins, in)
				lost += w
				continue
			}
			d := time.Duration(float64(median) * math.Exp(0.5*rng.NormFloat64()))
			d = max(d, time.Microsecond)
			in := ok("x", end, d)
			in.Weight = w
			ins = append(ins, in)
			if d > testDMax {
				lost += w // slower than dMax: a timeout
			} else {
				completed = append(completed, weightedDelay{d, w})
			}
		}
		want := directQoO(req, completed, lost)
		pr := probeOf(t, window(t, Config{Probes: map[string]ProbeConfig{"x": {QoO: q}}}, ins), "x")
		if pr.QoO == nil || !pr.QoO.Observed.OK {
			t.Fatalf("median %v: QoO %+v, want an observed score", median, pr.QoO)
		}
		o := pr.QoO.Observed
		if got := pr.Counts.Total(); got != total {
			t.Fatalf("median %v: %d instances counted, want the adjusted count %d", median, got, total)
		}
		if !within(o.Measured.Loss, want.loss, 1e-12) || !within(o.QoO.Loss, want.lossScore, 1e-6) {
			t.Errorf("median %v: loss %v (score %v), want %v (score %v)", median, o.Measured.Loss, o.QoO.Loss, want.loss, want.lossScore)
		}
		tol := 0.0
		for i, l := range req.Latency {
			lo, hi := fineBucket(t, time.Duration(want.percentiles[i]*1e9))
			if m := o.Measured.Latency[i]; m < lo-1e-12 || m > hi+1e-12 {
				t.Errorf("median %v: percentile %v read as %v s, want within the bucket [%v, %v] s of the sample's %v s",
					median, l.Percentile, m, lo, hi, want.percentiles[i])
			}
			tol = math.Max(tol, 100*(hi-lo)/(l.CPUP-l.ROP))
		}
		if !within(o.QoO.Latency, want.latency, tol) || !within(o.QoO.Score, want.score, tol) {
			t.Errorf("median %v: latency %v, score %v; want %v, %v within %.3f", median, o.QoO.Latency, o.QoO.Score, want.latency, want.score, tol)
		}
		if s := o.QoO.Score; s != math.Min(o.QoO.Latency, o.QoO.Loss) {
			t.Errorf("median %v: score %v is not the least of latency %v and loss %v", median, s, o.QoO.Latency, o.QoO.Loss)
		}
	}
}
