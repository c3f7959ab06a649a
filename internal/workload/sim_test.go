// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// record is an Observer that keeps every instance and checks the protocol:
// each instance starts once, ends once, never before its start, and the
// simulation reports events in time order.
type record struct {
	t       *testing.T
	last    time.Duration
	open    map[[8]byte]Instance
	ended   []ended
	started int
}

type ended struct {
	in     Instance
	end    time.Duration
	failed bool
}

func newRecord(t *testing.T) *record {
	return &record{t: t, open: make(map[[8]byte]Instance)}
}

func (r *record) at(d time.Duration) {
	if d < r.last {
		r.t.Fatalf("event at %v reported after one at %v", d, r.last)
	}
	r.last = d
}

func (r *record) Started(in Instance) {
	r.at(in.Start)
	if _, dup := r.open[in.SpanID]; dup {
		r.t.Fatalf("span id %x started twice", in.SpanID)
	}
	r.open[in.SpanID] = in
	r.started++
}

func (r *record) Ended(in Instance, end time.Duration, failed bool) {
	r.at(end)
	if _, ok := r.open[in.SpanID]; !ok {
		r.t.Fatalf("%s instance %x ended without being open", in.Probe, in.SpanID)
	}
	delete(r.open, in.SpanID)
	if end < in.Start {
		r.t.Fatalf("%s instance ends at %v before its start %v", in.Probe, end, in.Start)
	}
	r.ended = append(r.ended, ended{in, end, failed})
}

// meanDuration is the mean duration in seconds of the successful instances
// of probe whose start lies in [from, to).
func (r *record) meanDuration(probe string, from, to time.Duration) (float64, int) {
	var sum float64
	var n int
	for _, e := range r.ended {
		if e.in.Probe == probe && !e.failed && e.in.Start >= from && e.in.Start < to {
			sum += (e.end - e.in.Start).Seconds()
			n++
		}
	}
	return sum / float64(n), n
}

func simulate(t *testing.T, cfg Config, until time.Duration) (*Simulator, *record) {
	t.Helper()
	r := newRecord(t)
	s, err := NewSimulator(cfg, rand.New(rand.NewPCG(1, 2)), r)
	if err != nil {
		t.Fatal(err)
	}
	s.AdvanceTo(until)
	return s, r
}

func base() Config {
	return Config{ArrivalRate: 100, ServiceRate: [2]float64{200, 200}, Speed: [2]float64{1, 1}, K: 10, SlowWorker: 2, SlowFactor: 1}
}

// Worker_1 sees Poisson arrivals, so its drop ratio and the mean time an
// accepted job spends in it must match the M/M/1/K closed forms (NewMM1K).
// λ = 100/s, μ₁ = 80/s (ρ = 1.25), K = 5: p_K = 0.2711, W = 42.96 ms.
func TestWorker1MatchesMM1K(t *testing.T) {
	cfg := base()
	cfg.ServiceRate[0] = 80
	cfg.K = 5
	s, r := simulate(t, cfg, 1000*time.Second)
	want := NewMM1K(100, 80, 5)
	st := s.Stats()
	got := float64(st.Dropped[0]) / float64(st.Arrivals)
	if math.Abs(got-want.Blocking) > 0.01 {
		t.Errorf("worker_1 drop ratio %.4f over %d arrivals, M/M/1/K gives %.4f", got, st.Arrivals, want.Blocking)
	}
	w, n := r.meanDuration(ProbeWorker1, 0, time.Hour)
	t.Logf("drop ratio %.4f (M/M/1/K %.4f), mean time in worker_1 %.2f ms (%.2f ms)", got, want.Blocking, w*1e3, want.Sojourn*1e3)
	if math.Abs(w-want.Sojourn)/want.Sojourn > 0.03 {
		t.Errorf("mean time in worker_1 %.2f ms over %d jobs, M/M/1/K gives %.2f ms", w*1e3, n, want.Sojourn*1e3)
	}
}

// With buffers that never fill, the system is a tandem of M/M/1 queues (a
// Jackson network): the mean time in worker i is 1/(μᵢ − λ) (Kleinrock vol. 1,
// §3.2), here 10 ms and 20 ms, and a job's time is their sum.
func TestTandemMeansAreJackson(t *testing.T) {
	cfg := base()
	cfg.ServiceRate = [2]float64{200, 150}
	cfg.K = 1000
	s, r := simulate(t, cfg, 1000*time.Second)
	if st := s.Stats(); st.Dropped != [2]int64{} {
		t.Fatalf("drops %v with K = 1000", st.Dropped)
	}
	for _, c := range []struct {
		probe string
		want  float64
	}{
		{ProbeWorker1, 1 / (200.0 - 100)},
		{ProbeWorker2, 1 / (150.0 - 100)},
		{ProbeJob, 1/(200.0-100) + 1/(150.0-100)},
	} {
		got, n := r.meanDuration(c.probe, 0, time.Hour)
		if math.Abs(got-c.want)/c.want > 0.03 {
			t.Errorf("%s: mean %.3f ms over %d jobs, want %.3f ms", c.probe, got*1e3, n, c.want*1e3)
		}
	}
}

// Every arrival is accounted for, and each job's spans nest: worker_1 starts
// with the job, worker_2 starts when worker_1 ends, and the job ends with the
// last worker it reached; a drop fails the worker and the job at one instant.
func TestJobsAreConsistent(t *testing.T) {
	cfg := base()
	cfg.ServiceRate = [2]float64{120, 90} // overloaded: drops at both workers
	cfg.K = 3
	s, r := simulate(t, cfg, 100*time.Second)
	if st := s.Stats(); st.Dropped[0] == 0 || st.Dropped[1] == 0 {
		t.Fatalf("expected drops at both workers, got %v", st.Dropped)
	}
	checkJobs(t, s, r)
}

// The other topologies emit jobs of the same shape: the shared server drops
// at worker_1 only (a job keeps its place for worker_2), pure delays never.
func TestTopologiesJobsAreConsistent(t *testing.T) {
	for _, topo := range []Topology{TopologyShared, TopologyDelays} {
		t.Run(topo.String(), func(t *testing.T) {
			cfg := base()
			cfg.Topology = topo
			cfg.ServiceRate = [2]float64{150, 150} // shared: ρ = 100·(2/150) = 1.33
			cfg.K = 5
			s, r := simulate(t, cfg, 100*time.Second)
			st := s.Stats()
			switch {
			case topo == TopologyShared && (st.Dropped[0] == 0 || st.Dropped[1] != 0):
				t.Fatalf("shared: drops %v, want some at worker_1 and none at worker_2", st.Dropped)
			case topo == TopologyDelays && st.Dropped != [2]int64{}:
				t.Fatalf("delays: drops %v, want none", st.Dropped)
			}
			checkJobs(t, s, r)
		})
	}
}

// checkJobs checks that the spans of every job recorded in r nest as
// TestJobsAreConsistent says and add up to the simulator's counts.
func checkJobs(t *testing.T, s *Simulator, r *record) {
	t.Helper()
	st := s.Stats()
	if st.Arrivals != st.Completed+st.Dropped[0]+st.Dropped[1]+int64(st.InSystem) {
		t.Fatalf("arrivals %d ≠ completed %d + dropped %v + in system %d", st.Arrivals, st.Completed, st.Dropped, st.InSystem)
	}
	if len(r.open) != 2*st.InSystem {
		t.Fatalf("%d instances open, want 2 per job in the system (%d)", len(r.open), st.InSystem)
	}
	type trace struct{ job, w1, w2 *ended }
	traces := make(map[[16]byte]*trace)
	for i := range r.ended {
		e := &r.ended[i]
		tr := traces[e.in.TraceID]
		if tr == nil {
			tr = &trace{}
			traces[e.in.TraceID] = tr
		}
		switch e.in.Probe {
		case ProbeJob:
			tr.job = e
		case ProbeWorker1:
			tr.w1 = e
		case ProbeWorker2:
			tr.w2 = e
		}
	}
	var failed, succeeded int64
	for id, tr := range traces {
		if tr.job == nil {
			// A job still in the system: worker_1 done, worker_2 running.
			if tr.w1 == nil || tr.w1.failed || tr.w2 != nil {
				t.Fatalf("trace %x: unfinished job with worker spans %v, %v", id, tr.w1, tr.w2)
			}
			continue
		}
		if tr.w1 == nil {
			t.Fatalf("trace %x: ended job without a worker_1 span", id)
		}
		if tr.w1.in.ParentID != tr.job.in.SpanID || tr.w1.in.Start != tr.job.in.Start {
			t.Fatalf("trace %x: worker_1 is not the job's first child", id)
		}
		switch {
		case tr.w1.failed:
			if tr.w2 != nil || !tr.job.failed || tr.job.end != tr.w1.end || tr.w1.end != tr.w1.in.Start {
				t.Fatalf("trace %x: a drop at worker_1 must end worker_1 and the job at its start", id)
			}
			failed++
		case tr.w2 == nil:
			t.Fatalf("trace %x: job ended after worker_1 succeeded without a worker_2 span", id)
		default:
			if tr.w2.in.Start != tr.w1.end || tr.w2.in.ParentID != tr.job.in.SpanID || tr.job.end != tr.w2.end || tr.job.failed != tr.w2.failed {
				t.Fatalf("trace %x: worker_2 must run from worker_1's end to the job's end", id)
			}
			if tr.job.failed {
				failed++
			} else {
				succeeded++
			}
		}
	}
	if succeeded != st.Completed || failed != st.Dropped[0]+st.Dropped[1] {
		t.Fatalf("traces: %d succeeded, %d failed; stats: %d completed, %v dropped", succeeded, failed, st.Completed, st.Dropped)
	}
}

// The scheduled slow-down multiplies the slowed worker's service times inside
// its window only. At λ = 1/s against μ = 200/s a worker is nearly always idle,
// so its mean time is about its mean service time: 5 ms, ×4 while slowed.
func TestSlowScheduleSlowsOneWorker(t *testing.T) {
	cfg := base()
	cfg.ArrivalRate = 1
	cfg.SlowFactor = 4
	cfg.SlowAfter = 2000 * time.Second
	cfg.SlowFor = 2000 * time.Second
	_, r := simulate(t, cfg, 6000*time.Second)
	m := NewMM1K(1, 200, cfg.K).Sojourn
	mSlow := NewMM1K(1, 50, cfg.K).Sojourn
	for _, c := range []struct {
		probe    string
		from, to time.Duration
		want     float64
	}{
		{ProbeWorker2, 0, 2000 * time.Second, m},
		{ProbeWorker2, 2000 * time.Second, 4000 * time.Second, mSlow},
		{ProbeWorker2, 4000 * time.Second, 6000 * time.Second, m},
		{ProbeWorker1, 2000 * time.Second, 4000 * time.Second, m},
	} {
		got, n := r.meanDuration(c.probe, c.from, c.to)
		if math.Abs(got-c.want)/c.want > 0.1 {
			t.Errorf("%s in [%v, %v): mean %.2f ms over %d jobs, want %.2f ms", c.probe, c.from, c.to, got*1e3, n, c.want*1e3)
		}
	}
}

func TestSlowed(t *testing.T) {
	cfg := base()
	cfg.SlowAfter = 10 * time.Second
	cfg.SlowFor = 5 * time.Second
	s, err := NewSimulator(cfg, rand.New(rand.NewPCG(1, 1)), newRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	check := func(at time.Duration, want bool) {
		t.Helper()
		if got := s.Slowed(at); got != want {
			t.Errorf("Slowed(%v) = %v, want %v", at, got, want)
		}
	}
	check(0, false)
	check(10*time.Second-1, false)
	check(10*time.Second, true)
	check(15*time.Second-1, true)
	check(15*time.Second, false)
	s.ToggleSlow() // SIGUSR1 inverts the schedule
	check(0, true)
	check(12*time.Second, false)

	cfg.SlowFor = 0 // until the end
	s, _ = NewSimulator(cfg, rand.New(rand.NewPCG(1, 1)), newRecord(t))
	check(time.Hour, true)
}

// After StopArrivals the jobs in the system finish and the event list empties.
func TestStopArrivalsDrains(t *testing.T) {
	s, r := simulate(t, base(), 10*time.Second)
	s.StopArrivals()
	arrivals := s.Stats().Arrivals
	for {
		next, ok := s.NextEvent()
		if !ok {
			break
		}
		s.AdvanceTo(next)
	}
	st := s.Stats()
	if st.Arrivals != arrivals || st.InSystem != 0 || len(r.open) != 0 {
		t.Fatalf("after draining: %d arrivals (had %d), %d in system, %d open instances", st.Arrivals, arrivals, st.InSystem, len(r.open))
	}
}

// The same seed gives the same run.
func TestDeterministic(t *testing.T) {
	_, a := simulate(t, base(), 5*time.Second)
	_, b := simulate(t, base(), 5*time.Second)
	if len(a.ended) != len(b.ended) {
		t.Fatalf("runs differ: %d and %d instances", len(a.ended), len(b.ended))
	}
	for i := range a.ended {
		if a.ended[i] != b.ended[i] {
			t.Fatalf("instance %d differs: %+v and %+v", i, a.ended[i], b.ended[i])
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"rate", func(c *Config) { c.ArrivalRate = 0 }, "arrival rate"},
		{"nan rate", func(c *Config) { c.ArrivalRate = math.NaN() }, "arrival rate"},
		{"mu2", func(c *Config) { c.ServiceRate[1] = -1 }, "worker_2"},
		{"mu1 inf", func(c *Config) { c.ServiceRate[0] = math.Inf(1) }, "worker_1"},
		{"k", func(c *Config) { c.K = 0 }, "capacity K"},
		{"worker", func(c *Config) { c.SlowWorker = 3 }, "slow worker"},
		{"factor", func(c *Config) { c.SlowFactor = 0 }, "slow factor"},
		{"delay", func(c *Config) { c.SlowDelay = -time.Second }, "negative"},
		{"speed2", func(c *Config) { c.Speed[1] = 0 }, "speed factor of worker_2"},
		{"topology", func(c *Config) { c.Topology = 7 }, "topology"},
		{"ramp to", func(c *Config) { c.RampTo, c.RampOver = -1, time.Second }, "ramp target"},
		{"ramp over", func(c *Config) { c.RampTo = 10 }, "ramp duration"},
		{"ramp step", func(c *Config) { c.RampTo, c.RampOver, c.RampStep = 10, time.Second, -1 }, "ramp step"},
	} {
		cfg := base()
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
		if _, err := NewSimulator(cfg, rand.New(rand.NewPCG(1, 1)), newRecord(t)); err == nil {
			t.Errorf("%s: NewSimulator accepted an invalid config", c.name)
		}
	}
	if err := base().Validate(); err != nil {
		t.Fatalf("base config: %v", err)
	}
}

// Known answers of the M/M/1/K formulas.
func TestMM1K(t *testing.T) {
	const tol = 1e-12
	// ρ = 1/2, K = 2: p = (1, 1/2, 1/4)/(7/4), so p_K = 1/7 and L = 4/7;
	// W = L/(λ(1 − p_K)) = (4/7)/(6/7) = 2/3 s at λ = 1.
	m := NewMM1K(1, 2, 2)
	if math.Abs(m.Blocking-1.0/7) > tol || math.Abs(m.MeanJobs-4.0/7) > tol || math.Abs(m.Sojourn-2.0/3) > tol {
		t.Errorf("ρ=1/2 K=2: %+v, want p_K=1/7 L=4/7 W=2/3", m)
	}
	// ρ = 1: uniform, p_K = 1/(K+1), L = K/2.
	m = NewMM1K(3, 3, 4)
	if math.Abs(m.Blocking-0.2) > tol || math.Abs(m.MeanJobs-2) > tol {
		t.Errorf("ρ=1 K=4: %+v, want p_K=1/5 L=2", m)
	}
	// K = 1 is Erlang's loss formula with one server: p_1 = ρ/(1+ρ).
	m = NewMM1K(3, 2, 1)
	if math.Abs(m.Blocking-0.6) > tol {
		t.Errorf("ρ=3/2 K=1: p_K=%v, want 0.6", m.Blocking)
	}
	// Heavy overload with a large buffer must not overflow: p_K → 1 − 1/ρ.
	m = NewMM1K(1000, 100, 1000)
	if math.Abs(m.Blocking-0.9) > 1e-9 || math.IsNaN(m.Sojourn) {
		t.Errorf("ρ=10 K=1000: %+v, want p_K=0.9", m)
	}
}
