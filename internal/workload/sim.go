// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package workload

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Probe names of the synthetic system (thesis chapter 6.1, Figure 6.1): one
// outcome per worker and one probe over the whole job, from its arrival at
// worker_1's buffer until worker_2 is done. Its outcome diagram is
// job = worker_1 -> worker_2.
const (
	ProbeJob     = "job"
	ProbeWorker1 = "worker_1"
	ProbeWorker2 = "worker_2"
)

// workerProbes names the two stations, in the order a job visits them.
var workerProbes = [2]string{ProbeWorker1, ProbeWorker2}

// Topology is how the two workers' work is served. Every topology visits
// worker_1 then worker_2 and emits the same spans; they differ in the
// dependence between a job's two stage delays.
type Topology uint8

const (
	// TopologyTandem gives each worker its own FIFO buffer of capacity K and
	// one server (thesis chapter 6.1). With buffers that never fill it is a
	// tandem Jackson network, in which a job's sojourn times at the two
	// stations are independent (E. Reich, "Waiting times when queues are in
	// tandem", Annals of Mathematical Statistics 28(3), 1957; it rests on
	// P. J. Burke, "The output of a queuing system", Operations Research
	// 4(6), 1956).
	TopologyTandem Topology = iota
	// TopologyShared has one server do both workers' work, FIFO over a single
	// buffer: a job queues for its worker_1 service, then re-joins the back
	// of the same queue for its worker_2 service. A job whose first stage
	// waited behind a long queue finds the jobs that arrived meanwhile ahead
	// of it for its second stage, so the two stage delays are positively
	// dependent, more so as the load ρ = λ(1/μ₁ + 1/μ₂) rises. K bounds the
	// jobs in the system; a job keeps its place from its arrival to the end
	// of worker_2, so only worker_1 drops.
	TopologyShared
	// TopologyDelays makes each worker a pure delay without a buffer or
	// waiting (an infinite-server station, M/G/∞, here with exponential
	// delays): each stage delay is drawn
	// independently from the stage's distribution, whatever the load, and
	// nothing is dropped. Both delays of a job are drawn at its arrival, so
	// that two runs with the same seed differ only by what their options
	// change: with -speed2 0.5 every job's worker_2 delay is exactly half
	// that of the run without.
	TopologyDelays
)

var topologyNames = [...]string{TopologyTandem: "tandem", TopologyShared: "shared", TopologyDelays: "delays"}

// String returns the topology's name, as ParseTopology reads it.
func (t Topology) String() string {
	if int(t) < len(topologyNames) {
		return topologyNames[t]
	}
	return fmt.Sprintf("Topology(%d)", t)
}

// ParseTopology parses "tandem", "shared" or "delays".
func ParseTopology(s string) (Topology, error) {
	for i, n := range topologyNames {
		if s == n {
			return Topology(i), nil
		}
	}
	return 0, fmt.Errorf("topology must be tandem, shared or delays, got %q", s)
}

// Config is the two-worker system of thesis chapter 6.1: Poisson arrivals at
// ArrivalRate into worker_1, then worker_2, with exponential service times.
// In the default topology each worker is a FIFO buffer of capacity K in front
// of one server (M/M/1/K); Topology selects the others. A job arriving at a
// full buffer is dropped, and its outcome (the worker's and the job's) is a
// failure.
type Config struct {
	// Topology is how the workers' work is served.
	Topology Topology
	// ArrivalRate is λ, jobs per second; with a ramp, its value at the start.
	ArrivalRate float64
	// RampTo, if not 0, is the rate λ ramps to over RampOver from the start:
	// in steps of RampStep (each step's rate is the linear ramp's at the
	// step's start), or linearly when RampStep is 0. From RampOver on λ is
	// RampTo. The arrivals stay a Poisson process of the current rate.
	RampTo float64
	// RampOver is the length of the ramp.
	RampOver time.Duration
	// RampStep is the length of one step of the ramp; 0 ramps linearly.
	RampStep time.Duration
	// ServiceRate holds μ₁ and μ₂, jobs per second per worker: the mean
	// service time (the mean delay in TopologyDelays) is Speed/μ.
	ServiceRate [2]float64
	// Speed holds each worker's speed factor, which multiplies its service
	// times (0.5 makes a worker twice as fast).
	Speed [2]float64
	// K is each worker's capacity: the jobs waiting plus the one in service
	// (Kendall's notation M/M/1/K). In TopologyShared it is the capacity of
	// the shared buffer; TopologyDelays has no buffer.
	K int

	// SlowWorker is the worker (1 or 2) that the slow-down affects; 0 means
	// none.
	SlowWorker int
	// SlowFactor multiplies the slowed worker's service times (≥ 1 slows).
	SlowFactor float64
	// SlowDelay is added to each of the slowed worker's service times, the
	// "artificial delay" of thesis chapter 6.2.2.
	SlowDelay time.Duration
	// Slow starts the run slowed.
	Slow bool
	// SlowAfter and SlowFor schedule a slow phase [SlowAfter, SlowAfter+SlowFor)
	// on the simulation clock, inverting Slow inside it. SlowFor 0 means until
	// the end. Both zero: no schedule.
	SlowAfter, SlowFor time.Duration
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	if !(c.ArrivalRate > 0) || math.IsInf(c.ArrivalRate, 0) {
		return fmt.Errorf("arrival rate must be a positive finite number of jobs per second, got %v", c.ArrivalRate)
	}
	for i, mu := range c.ServiceRate {
		if !(mu > 0) || math.IsInf(mu, 0) {
			return fmt.Errorf("service rate of worker_%d must be a positive finite number of jobs per second, got %v", i+1, mu)
		}
	}
	for i, f := range c.Speed {
		if !(f > 0) || math.IsInf(f, 0) {
			return fmt.Errorf("speed factor of worker_%d must be a positive finite number, got %v", i+1, f)
		}
	}
	if c.Topology > TopologyDelays {
		return fmt.Errorf("unknown topology %d", c.Topology)
	}
	if c.RampTo != 0 {
		if !(c.RampTo > 0) || math.IsInf(c.RampTo, 0) {
			return fmt.Errorf("ramp target rate must be a positive finite number of jobs per second (0: no ramp), got %v", c.RampTo)
		}
		if c.RampOver <= 0 {
			return fmt.Errorf("ramp duration must be positive with a ramp target rate, got %v", c.RampOver)
		}
	}
	if c.RampStep < 0 {
		return fmt.Errorf("ramp step must not be negative, got %v", c.RampStep)
	}
	if c.K < 1 {
		return fmt.Errorf("queue capacity K must be at least 1, got %d", c.K)
	}
	if c.SlowWorker < 0 || c.SlowWorker > 2 {
		return fmt.Errorf("slow worker must be 1, 2 or 0 (none), got %d", c.SlowWorker)
	}
	if !(c.SlowFactor > 0) || math.IsInf(c.SlowFactor, 0) {
		return fmt.Errorf("slow factor must be a positive finite number, got %v", c.SlowFactor)
	}
	if c.SlowDelay < 0 || c.SlowAfter < 0 || c.SlowFor < 0 {
		return errors.New("slow delay, slow-after and slow-for must not be negative")
	}
	return nil
}

// RateAt returns the arrival rate λ in force at time t of the simulation
// clock, jobs per second.
func (c Config) RateAt(t time.Duration) float64 {
	switch {
	case c.RampTo == 0 || t < 0:
		return c.ArrivalRate
	case t >= c.RampOver:
		return c.RampTo
	case c.RampStep > 0:
		t -= t % c.RampStep // the start of t's step
	}
	return c.ArrivalRate + (c.RampTo-c.ArrivalRate)*float64(t)/float64(c.RampOver)
}

// Instance is one outcome instance: one span of the emitted trace.
type Instance struct {
	Probe    string
	TraceID  [16]byte
	SpanID   [8]byte
	ParentID [8]byte // zero for the job's root span
	Start    time.Duration
	// Rate is the arrival rate λ in force when the instance's job arrived.
	Rate float64
}

// Observer receives the outcome instances of the simulation as they start and
// end, on the simulation clock.
type Observer interface {
	// Started is called when an instance starts.
	Started(in Instance)
	// Ended is called when an instance ends; failed marks a dropped job.
	Ended(in Instance, end time.Duration, failed bool)
}

// Stats counts what the simulation did.
type Stats struct {
	Arrivals  int64    // jobs that arrived at worker_1
	Completed int64    // jobs worker_2 finished
	Dropped   [2]int64 // jobs dropped at a full buffer, per worker
	InSystem  int      // jobs currently in either worker
}

// job is one message travelling through the two workers.
type job struct {
	root  Instance
	stage Instance // the worker visit in progress
	st    int      // the worker of stage: 0 for worker_1, 1 for worker_2
	// spans are the ids of the two worker spans, and delays the two pure
	// delays of TopologyDelays, all drawn at the job's arrival so that the
	// random stream does not depend on the order of later events.
	spans  [2][8]byte
	delays [2]time.Duration
}

// station is one FIFO buffer with its server; queue[0] is in service.
type station struct {
	queue []*job
}

type eventKind uint8

const (
	evArrival eventKind = iota
	evCompletion
)

type event struct {
	at      time.Duration
	seq     uint64 // breaks ties in scheduling order, for determinism
	kind    eventKind
	station int  // evCompletion at a buffer: the station whose head is done
	job     *job // evCompletion of a pure delay: the job whose stage ends
}

type eventHeap []event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// Simulator is a discrete-event simulation of the system in Config. It owns
// its clock: AdvanceTo processes every event up to a time, so the caller
// decides whether simulated time follows the wall clock (the workload) or
// runs as fast as possible (the tests, and a run that only writes a file).
type Simulator struct {
	cfg      Config
	rng      *rand.Rand
	obs      Observer
	now      time.Duration
	seq      uint64
	events   eventHeap
	stations [2]station // TopologyShared uses stations[0] only
	maxRate  float64    // the largest arrival rate of the run, for thinning
	arrivals bool
	toggled  bool
	stats    Stats
}

// NewSimulator returns a simulator at time 0 whose first arrival is scheduled.
func NewSimulator(cfg Config, rng *rand.Rand, obs Observer) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Simulator{cfg: cfg, rng: rng, obs: obs, arrivals: true, toggled: cfg.Slow,
		maxRate: max(cfg.ArrivalRate, cfg.RampTo)}
	s.schedule(event{at: s.nextArrival(0), kind: evArrival})
	return s, nil
}

// Now returns the simulation clock.
func (s *Simulator) Now() time.Duration { return s.now }

// Rate returns the arrival rate λ in force now.
func (s *Simulator) Rate() float64 { return s.cfg.RateAt(s.now) }

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats { return s.stats }

// NextEvent returns the time of the next event, and false when none is
// pending (arrivals stopped and both workers idle).
func (s *Simulator) NextEvent() (time.Duration, bool) {
	if len(s.events) == 0 {
		return 0, false
	}
	return s.events[0].at, true
}

// StopArrivals stops new jobs; jobs in the system still finish.
func (s *Simulator) StopArrivals() { s.arrivals = false }

// ToggleSlow inverts the slow-down from now on (the SIGUSR1 switch).
func (s *Simulator) ToggleSlow() { s.toggled = !s.toggled }

// Slowed reports whether the slow-down is in force at time t.
func (s *Simulator) Slowed(t time.Duration) bool {
	slow := s.toggled
	if s.cfg.SlowAfter > 0 || s.cfg.SlowFor > 0 {
		if t >= s.cfg.SlowAfter && (s.cfg.SlowFor == 0 || t < s.cfg.SlowAfter+s.cfg.SlowFor) {
			slow = !slow
		}
	}
	return slow
}

// AdvanceTo processes, in time order, every event at or before t, then sets
// the clock to t. Instances carry the simulated times of their events, so a
// caller that runs late still produces exact timestamps.
func (s *Simulator) AdvanceTo(t time.Duration) {
	for len(s.events) > 0 && s.events[0].at <= t {
		e := heap.Pop(&s.events).(event)
		s.now = e.at
		switch e.kind {
		case evArrival:
			s.arrive()
		case evCompletion:
			s.complete(e)
		}
	}
	if t > s.now {
		s.now = t
	}
}

func (s *Simulator) schedule(e event) {
	s.seq++
	e.seq = s.seq
	heap.Push(&s.events, e)
}

// exp draws an exponential delay with the given rate per second.
func (s *Simulator) exp(rate float64) time.Duration {
	return time.Duration(s.rng.ExpFloat64() / rate * float64(time.Second))
}

// nextArrival draws the first arrival after from of a Poisson process whose
// rate is RateAt(t), by thinning (P. A. W. Lewis, G. S. Shedler, "Simulation
// of nonhomogeneous Poisson processes by thinning", Naval Research Logistics
// Quarterly 26(3), 1979): candidates come at the largest rate of the run, and
// one at time t is kept with probability RateAt(t)/maxRate. Without a ramp
// every candidate is kept and no uniform number is drawn.
func (s *Simulator) nextArrival(from time.Duration) time.Duration {
	t := from
	for {
		t += s.exp(s.maxRate)
		if r := s.cfg.RateAt(t); r >= s.maxRate || s.rng.Float64()*s.maxRate < r {
			return t
		}
	}
}

// stageTime draws worker st's service time (its delay, in TopologyDelays)
// before any slow-down: exponential of mean Speed/μ.
func (s *Simulator) stageTime(st int) time.Duration {
	return time.Duration(s.rng.ExpFloat64() / s.cfg.ServiceRate[st] * s.cfg.Speed[st] * float64(time.Second))
}

// slowed applies the slow-down, if it is in force now, to a time d of worker
// st that starts now.
func (s *Simulator) slowed(st int, d time.Duration) time.Duration {
	if s.cfg.SlowWorker == st+1 && s.Slowed(s.now) {
		d = time.Duration(float64(d)*s.cfg.SlowFactor) + s.cfg.SlowDelay
	}
	return d
}

func (s *Simulator) newSpanID() (id [8]byte) {
	for id == [8]byte{} {
		putUint64(id[:], s.rng.Uint64())
	}
	return id
}

func (s *Simulator) newTraceID() (id [16]byte) {
	for id == [16]byte{} {
		putUint64(id[:8], s.rng.Uint64())
		putUint64(id[8:], s.rng.Uint64())
	}
	return id
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// arrive handles an external arrival: a new job enters worker_1.
func (s *Simulator) arrive() {
	if !s.arrivals {
		return
	}
	s.schedule(event{at: s.nextArrival(s.now), kind: evArrival})
	s.stats.Arrivals++
	s.stats.InSystem++
	j := &job{root: Instance{Probe: ProbeJob, TraceID: s.newTraceID(), SpanID: s.newSpanID(), Start: s.now, Rate: s.Rate()}}
	j.spans = [2][8]byte{s.newSpanID(), s.newSpanID()}
	if s.cfg.Topology == TopologyDelays {
		j.delays = [2]time.Duration{s.stageTime(0), s.stageTime(1)}
	}
	s.obs.Started(j.root)
	s.enter(0, j)
}

// buffer returns the station that holds worker st's jobs.
func (s *Simulator) buffer(st int) int {
	if s.cfg.Topology == TopologyShared {
		return 0
	}
	return st
}

// enter starts job j's visit to worker st. A pure delay ends after the
// job's delay; otherwise the job joins the worker's buffer, or is dropped when
// the buffer holds K jobs already (thesis 6.1.1: "If the queue's buffer is
// overloaded, it will drop the incoming message and consider the execution a
// failure"). In TopologyShared the job leaves the buffer just before it
// re-joins it for worker_2, so only worker_1 finds it full.
func (s *Simulator) enter(st int, j *job) {
	j.st = st
	j.stage = Instance{Probe: workerProbes[st], TraceID: j.root.TraceID, SpanID: j.spans[st], ParentID: j.root.SpanID,
		Start: s.now, Rate: j.root.Rate}
	s.obs.Started(j.stage)
	if s.cfg.Topology == TopologyDelays {
		s.schedule(event{at: s.now + s.slowed(st, j.delays[st]), kind: evCompletion, job: j})
		return
	}
	b := s.buffer(st)
	w := &s.stations[b]
	if len(w.queue) >= s.cfg.K {
		s.stats.Dropped[st]++
		s.stats.InSystem--
		s.obs.Ended(j.stage, s.now, true)
		s.obs.Ended(j.root, s.now, true)
		return
	}
	w.queue = append(w.queue, j)
	if len(w.queue) == 1 {
		s.serve(b)
	}
}

// serve starts the service of the job at the head of station b's buffer.
func (s *Simulator) serve(b int) {
	st := s.stations[b].queue[0].st
	s.schedule(event{at: s.now + s.slowed(st, s.stageTime(st)), kind: evCompletion, station: b})
}

// complete ends a stage: the pure delay of e.job, or the service of the job
// at the head of station e.station's buffer.
func (s *Simulator) complete(e event) {
	j := e.job
	if j == nil {
		w := &s.stations[e.station]
		j = w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		if len(w.queue) > 0 {
			s.serve(e.station)
		}
	}
	s.obs.Ended(j.stage, s.now, false)
	if j.st == 0 {
		s.enter(1, j)
		return
	}
	s.stats.Completed++
	s.stats.InSystem--
	s.obs.Ended(j.root, s.now, false)
}
