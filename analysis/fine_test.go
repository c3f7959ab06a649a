// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package analysis

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/deltaq-otel/deltaq/deltaq"
)

// fineBucket returns the edges, in seconds, of the analysis-resolution
// bucket [lo, hi) that holds a delay of d (deltaq.FineLayout).
func fineBucket(t *testing.T, d time.Duration) (lo, hi float64) {
	t.Helper()
	edges, err := deltaq.FineLayout().Edges()
	if err != nil {
		t.Fatal(err)
	}
	j := deltaq.LogLinearBucket(edges, int64(d))
	return float64(edges[j]) / 1e9, float64(edges[j+1]) / 1e9
}

// TestStageTimeoutsEnterTheWhole: stages of dMax 16 ms under a job of
// 40 ms, one stage instance in three at 25 ms — a timeout of the stage.
// Whether the stage's spans arrive as successes (the engine judges them
// by its dMax) or as timeouts the processor judged from spans that ended
// (Instance.Ended), the stage counts them as timeouts and the job's
// calculated ΔQ takes their completions: the same calculated ΔQ, whose
// mass within the job's dMax is the job's whole (every job completes
// within 40 ms); a synthetic timeout (not Ended) never completes.
func TestStageTimeoutsEnterTheWhole(t *testing.T) {
	cfg := Config{Diagram: "job = a -> b;", Probes: map[string]ProbeConfig{
		"a": {DMax: 16 * time.Millisecond, Bins: 16}, "b": {DMax: 16 * time.Millisecond, Bins: 16},
		"job": {DMax: 40 * time.Millisecond, Bins: 40}}}
	run := func(stage func(p string, end, d time.Duration) Instance) *ProbeResult {
		var ins []Instance
		for i := range 30 {
			end := time.Duration(i) * time.Millisecond
			d := 10 * time.Millisecond
			if i%3 == 0 {
				d = 25 * time.Millisecond
			}
			ins = append(ins, stage("a", end, d), stage("b", end, 10*time.Millisecond), ok("job", end, d+10*time.Millisecond))
		}
		r := single(t, cfg, ins)
		if a := probeOf(t, r, "a"); a.Counts != (Counts{Success: 20, Timeout: 10}) {
			t.Fatalf("stage a counts %+v, want 20 successes and 10 timeouts", a.Counts)
		}
		return probeOf(t, r, "job")
	}
	asSuccess := run(ok)
	ended := run(func(p string, end, d time.Duration) Instance {
		in := ok(p, end, d)
		if d > 16*time.Millisecond {
			in.Outcome, in.Ended = Timeout, true
		}
		return in
	})
	never := run(func(p string, end, d time.Duration) Instance {
		in := ok(p, end, d)
		if d > 16*time.Millisecond {
			in.Outcome = Timeout
		}
		return in
	})
	for name, pr := range map[string]*ProbeResult{"successes": asSuccess, "ended timeouts": ended} {
		if pr.Calculated == nil || math.Abs(pr.Calculated.Tangible()-1) > 1e-9 {
			t.Errorf("%s: the job's calculated ΔQ %v, want every job completed within 40 ms", name, pr.Calculated)
		}
		if pr.DivergenceTest.Distance != 0 {
			t.Errorf("%s: distance beyond the bounds %v, want 0: the job is the sum of its stages", name, pr.DivergenceTest.Distance)
		}
	}
	if !slices.Equal(asSuccess.Calculated.PDF(), ended.Calculated.PDF()) {
		t.Error("a stage timeout judged by the processor and one judged by the engine compose differently")
	}
	if got := never.Calculated.Tangible(); math.Abs(got-2.0/3) > 1e-9 {
		t.Errorf("synthetic timeouts: the job's calculated ΔQ completes %v, want 2/3", got)
	}
}

// TestInputBoundsFromTheLongReading: a calculated probe's input bounds,
// taken as the head of its observed ΔQ's bounds on more bins when neither
// has mass beyond the input's bins, are the reading on the input's bins,
// to the bit; with mass beyond them (bins short of the reach) they are
// read on their own, and the long reading is the one on n bins all the
// same.
func TestInputBoundsFromTheLongReading(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		h := deltaq.NewFine().NewHistogram()
		mean := []float64{2e6, 5e7, 2e8}[trial%3]
		for range 1 + rng.IntN(3000) {
			h.AddN(int64(mean*rng.ExpFloat64()), 1)
		}
		h.AddTimeouts(int64(rng.IntN(5)))
		cut := int64(time.Second)
		pr := &ProbeResult{fine: h, fineCut: cut, Counts: Counts{Success: h.Successes(), Timeout: h.Timeouts()}}
		wd := deltaq.AnalysisWidth(cut)
		reach := deltaq.GridBins(max(h.Reach(cut), 1), wd)
		n := min(deltaq.GridBins(cut, wd), deltaq.MaxBins)
		for _, bins := range []int{reach, max(reach/2, 1), reach - 1} {
			if bins < 1 || bins >= n {
				continue
			}
			a := &analyzer{}
			b, long, ok := a.inputBounds(pr, wd, bins, n, cut)
			want, err1 := h.GridBounds(wd, bins, cut)
			wantLong, err2 := h.GridBounds(wd, n, cut)
			if err1 != nil || err2 != nil || !ok {
				t.Fatalf("trial %d: %v, %v, long reading %v", trial, err1, err2, ok)
			}
			if !reflect.DeepEqual(b, want) || !reflect.DeepEqual(long, wantLong) {
				t.Fatalf("trial %d, %d bins of %d: the bounds differ from their readings", trial, bins, n)
			}
		}
	}
}
