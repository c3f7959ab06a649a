// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

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

// Config is the two-worker M/M/1/K system of thesis chapter 6.1: Poisson
// arrivals at ArrivalRate into worker_1's buffer, then worker_2's; each worker
// is a FIFO buffer of capacity K in front of one server with exponential
// service times. A job arriving at a full buffer is dropped, and its outcome
// (the worker's and the job's) is a failure.
type Config struct {
	// ArrivalRate is λ, jobs per second.
	ArrivalRate float64
	// ServiceRate holds μ₁ and μ₂, jobs per second per worker.
	ServiceRate [2]float64
	// K is each worker's capacity: the jobs waiting plus the one in service
	// (Kendall's notation M/M/1/K).
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

// Instance is one outcome instance: one span of the emitted trace.
type Instance struct {
	Probe    string
	TraceID  [16]byte
	SpanID   [8]byte
	ParentID [8]byte // zero for the job's root span
	Start    time.Duration
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
}

// station is one worker with its buffer; queue[0] is in service.
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
	station int
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
// runs as fast as possible (the tests).
type Simulator struct {
	cfg      Config
	rng      *rand.Rand
	obs      Observer
	now      time.Duration
	seq      uint64
	events   eventHeap
	stations [2]station
	arrivals bool
	toggled  bool
	stats    Stats
}

// NewSimulator returns a simulator at time 0 whose first arrival is scheduled.
func NewSimulator(cfg Config, rng *rand.Rand, obs Observer) (*Simulator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Simulator{cfg: cfg, rng: rng, obs: obs, arrivals: true, toggled: cfg.Slow}
	s.schedule(s.exp(cfg.ArrivalRate), evArrival, 0)
	return s, nil
}

// Now returns the simulation clock.
func (s *Simulator) Now() time.Duration { return s.now }

// Stats returns the counts so far.
func (s *Simulator) Stats() Stats {
	st := s.stats
	st.InSystem = len(s.stations[0].queue) + len(s.stations[1].queue)
	return st
}

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
			s.complete(e.station)
		}
	}
	if t > s.now {
		s.now = t
	}
}

func (s *Simulator) schedule(at time.Duration, kind eventKind, st int) {
	s.seq++
	heap.Push(&s.events, event{at: at, seq: s.seq, kind: kind, station: st})
}

// exp draws an exponential delay with the given rate per second.
func (s *Simulator) exp(rate float64) time.Duration {
	return time.Duration(s.rng.ExpFloat64() / rate * float64(time.Second))
}

// serviceTime draws worker st's service time for a service starting now.
func (s *Simulator) serviceTime(st int) time.Duration {
	d := s.exp(s.cfg.ServiceRate[st])
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
	s.schedule(s.now+s.exp(s.cfg.ArrivalRate), evArrival, 0)
	s.stats.Arrivals++
	j := &job{root: Instance{Probe: ProbeJob, TraceID: s.newTraceID(), SpanID: s.newSpanID(), Start: s.now}}
	s.obs.Started(j.root)
	s.enter(0, j)
}

// enter puts job j into worker st's buffer, or drops it when the buffer holds
// K jobs already (thesis 6.1.1: "If the queue's buffer is overloaded, it will
// drop the incoming message and consider the execution a failure").
func (s *Simulator) enter(st int, j *job) {
	j.stage = Instance{Probe: workerProbes[st], TraceID: j.root.TraceID, SpanID: s.newSpanID(), ParentID: j.root.SpanID, Start: s.now}
	s.obs.Started(j.stage)
	w := &s.stations[st]
	if len(w.queue) >= s.cfg.K {
		s.stats.Dropped[st]++
		s.obs.Ended(j.stage, s.now, true)
		s.obs.Ended(j.root, s.now, true)
		return
	}
	w.queue = append(w.queue, j)
	if len(w.queue) == 1 {
		s.schedule(s.now+s.serviceTime(st), evCompletion, st)
	}
}

// complete ends the service of the job at the head of worker st's buffer.
func (s *Simulator) complete(st int) {
	w := &s.stations[st]
	j := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	if len(w.queue) > 0 {
		s.schedule(s.now+s.serviceTime(st), evCompletion, st)
	}
	s.obs.Ended(j.stage, s.now, false)
	if st == 0 {
		s.enter(1, j)
		return
	}
	s.stats.Completed++
	s.obs.Ended(j.root, s.now, false)
}
