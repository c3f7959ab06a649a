// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"math"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

// stageDelays returns, for each job that arrived in [from, to) and finished
// both workers, its worker_1 and worker_2 delays in seconds, in the order the
// jobs arrived.
func stageDelays(r *record, from, to time.Duration) (d1, d2 []float64) {
	type pair struct {
		start  time.Duration
		d      [2]float64
		done   [2]bool
		failed bool
	}
	jobs := make(map[[16]byte]*pair)
	for _, e := range r.ended {
		if e.in.Probe == ProbeJob || e.in.Start < from {
			continue
		}
		p := jobs[e.in.TraceID]
		if p == nil {
			p = &pair{}
			jobs[e.in.TraceID] = p
		}
		st := 0
		if e.in.Probe == ProbeWorker2 {
			st = 1
		} else {
			p.start = e.in.Start
		}
		p.d[st], p.done[st] = (e.end - e.in.Start).Seconds(), true
		p.failed = p.failed || e.failed
	}
	var ps []*pair
	for _, p := range jobs {
		if p.done == [2]bool{true, true} && !p.failed && p.start < to {
			ps = append(ps, p)
		}
	}
	slices.SortFunc(ps, func(a, b *pair) int { return int(a.start - b.start) })
	for _, p := range ps {
		d1 = append(d1, p.d[0])
		d2 = append(d2, p.d[1])
	}
	return d1, d2
}

// ranks returns the rank of each x (0 for the smallest); the delays are
// continuous, so ties have probability 0 and are ranked in index order.
func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
	r := make([]float64, len(x))
	for rank, i := range idx {
		r[i] = float64(rank)
	}
	return r
}

// correlations returns Pearson's and Spearman's correlation coefficients of a
// job's two stage delays, over the jobs that arrived after a warm-up of 10 s.
func correlations(t *testing.T, cfg Config, until time.Duration) (pearson, spearman float64, n int) {
	t.Helper()
	_, r := simulate(t, cfg, until)
	d1, d2 := stageDelays(r, 10*time.Second, until)
	return stat.Correlation(d1, d2, nil), stat.Correlation(ranks(d1), ranks(d2), nil), len(d1)
}

// In the tandem with buffers that never fill (a Jackson network), a job's
// sojourn times at the two stations are independent (E. Reich, "Waiting times
// when queues are in tandem", Annals of Mathematical Statistics 28(3), 1957),
// whatever the load: both correlations are 0 up to the sampling error. That
// error is about 1/√n ≈ 0.003 for n = 100 000 independent jobs, but the
// delays of successive jobs are correlated, the more so the higher the load
// (at ρ = 0.8 the queue relaxes over some 1/(μ(1 − √ρ)²) ≈ 0.45 s, about 70
// jobs), hence bounds of 0.02 at moderate loads and 0.04 at ρ = 0.8.
func TestTandemStageDelaysIndependent(t *testing.T) {
	for _, c := range []struct{ lambda, bound float64 }{{60, 0.02}, {100, 0.02}, {160, 0.04}} {
		cfg := base()
		cfg.ArrivalRate = c.lambda
		cfg.K = 1000
		p, s, n := correlations(t, cfg, time.Duration(1e5/c.lambda)*time.Second)
		t.Logf("tandem ρ=%.1f: Pearson %+.4f, Spearman %+.4f over %d jobs", c.lambda/200, p, s, n)
		if math.Abs(p) > c.bound || math.Abs(s) > c.bound {
			t.Errorf("tandem at ρ = %.1f: stage delays correlated (Pearson %.4f, Spearman %.4f over %d jobs), want 0 ± %g",
				c.lambda/200, p, s, n, c.bound)
		}
	}
}

// On the shared server a job's worker_2 visit queues behind the jobs that
// arrived during its worker_1 visit, so the longer the first delay the longer
// the second: the correlation is positive and grows with the load
// ρ = λ(1/μ₁ + 1/μ₂). Measured with this seed: Spearman 0.24, 0.53 and 0.88
// at ρ = 0.3, 0.6 and 0.9 (Pearson 0.30, 0.58, 0.91).
func TestSharedStageDelaysDependOnLoad(t *testing.T) {
	last := 0.0
	for _, lambda := range []float64{30, 60, 90} {
		cfg := base()
		cfg.Topology = TopologyShared
		cfg.ArrivalRate = lambda
		cfg.K = 1000
		p, s, n := correlations(t, cfg, time.Duration(1e5/lambda)*time.Second)
		t.Logf("shared ρ=%.1f: Pearson %+.4f, Spearman %+.4f over %d jobs", lambda/100, p, s, n)
		if s < last+0.1 || p < 0.1 {
			t.Errorf("shared at ρ = %.1f: Spearman %.4f (Pearson %.4f), want clearly positive and above %.4f at the lower load",
				lambda/100, s, p, last)
		}
		last = s
	}
	if last < 0.7 {
		t.Errorf("shared at ρ = 0.9: Spearman %.4f, want strongly positive (≥ 0.7)", last)
	}
}

// Pure delays do not queue: at λ = 1000/s against mean delays of 5 ms and
// 10 ms, some 15 jobs are in the system at a time (Little's law) with K = 1,
// yet nothing is dropped, each stage's delay is exponential of its mean
// whatever the load (its median is ln 2 times the mean), and the two delays
// of a job are independent.
func TestDelaysArePure(t *testing.T) {
	cfg := base()
	cfg.Topology = TopologyDelays
	cfg.ArrivalRate = 1000
	cfg.ServiceRate = [2]float64{200, 100}
	cfg.K = 1
	s, r := simulate(t, cfg, 100*time.Second)
	if st := s.Stats(); st.Dropped != [2]int64{} || st.InSystem < 2 {
		t.Fatalf("drops %v and %d jobs in the system: want none dropped and more than K in the system", st.Dropped, st.InSystem)
	}
	d1, d2 := stageDelays(r, 0, time.Hour)
	for i, d := range [][]float64{d1, d2} {
		mean := 1 / cfg.ServiceRate[i]
		below := 0
		for _, x := range d {
			if x <= math.Ln2*mean {
				below++
			}
		}
		got, frac := stat.Mean(d, nil), float64(below)/float64(len(d))
		t.Logf("worker_%d: mean %.3f ms (want %.3f), %.4f below the exponential median", i+1, got*1e3, mean*1e3, frac)
		// 100 000 samples: the mean's standard error is 0.3 %, the fraction's 0.0016.
		if math.Abs(got-mean)/mean > 0.015 || math.Abs(frac-0.5) > 0.008 {
			t.Errorf("worker_%d: mean %.3f ms (want %.3f ms), %.4f of delays ≤ median (want 0.5)", i+1, got*1e3, mean*1e3, frac)
		}
	}
	if p := stat.Correlation(d1, d2, nil); math.Abs(p) > 0.02 {
		t.Errorf("pure delays correlated: Pearson %.4f over %d jobs", p, len(d1))
	}
}

// With pure delays a speed factor is an exact intervention: the same seed
// gives the same jobs (trace ids, arrival times, worker_1 delays), and with
// Speed[1] = 0.5 each worker_2 delay is half that of the run without, to the
// nanosecond the durations are rounded to, and each job's duration is the
// sum of its two delays.
func TestDelaysSpeedIsExactIntervention(t *testing.T) {
	cfg := base()
	cfg.Topology = TopologyDelays
	_, baseRun := simulate(t, cfg, 100*time.Second)
	cfg.Speed[1] = 0.5
	_, fast := simulate(t, cfg, 100*time.Second)

	type job struct{ start, d1, d2, total time.Duration }
	jobs := func(r *record) map[[16]byte]*job {
		out := make(map[[16]byte]*job)
		for _, e := range r.ended {
			j := out[e.in.TraceID]
			if j == nil {
				j = &job{}
				out[e.in.TraceID] = j
			}
			switch d := e.end - e.in.Start; e.in.Probe {
			case ProbeJob:
				j.start, j.total = e.in.Start, d
			case ProbeWorker1:
				j.d1 = d
			case ProbeWorker2:
				j.d2 = d
			}
		}
		return out
	}
	a, b := jobs(baseRun), jobs(fast)
	matched := 0
	for id, ja := range a {
		jb := b[id]
		if ja.total == 0 || jb == nil || jb.total == 0 {
			continue // unfinished at the end of one run
		}
		matched++
		if jb.start != ja.start || jb.d1 != ja.d1 || (jb.d2-ja.d2/2).Abs() > 1 {
			t.Fatalf("trace %x: base (start %v, %v, %v), speed2 0.5 (start %v, %v, %v): want the same start and worker_1, half the worker_2",
				id, ja.start, ja.d1, ja.d2, jb.start, jb.d1, jb.d2)
		}
		if ja.total != ja.d1+ja.d2 || jb.total != jb.d1+jb.d2 {
			t.Fatalf("trace %x: job lasts %v and %v, not the sums of its delays", id, ja.total, jb.total)
		}
	}
	if matched < 9000 || matched < len(a)-5 {
		t.Fatalf("only %d of %d jobs found in both runs", matched, len(a))
	}
}
