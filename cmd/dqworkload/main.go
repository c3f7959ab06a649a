// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Command dqworkload runs the synthetic two-worker M/M/1/K system of the
// thesis's chapter 6.1 in real time and sends its traces to an OpenTelemetry
// Collector over OTLP/gRPC.
//
// Jobs arrive as a Poisson process of rate λ (-rate) at worker_1's buffer,
// are served there with exponential service times of rate μ₁ (-mu1), then
// queue for worker_2 (rate μ₂, -mu2). Each buffer holds at most K jobs
// (-k), the one in service included; a job arriving at a full buffer is
// dropped and is a failure. Every job is a trace: a root span "job" from its
// arrival until worker_2 is done (or it is dropped), with a child span per
// worker visit, "worker_1" and "worker_2", from entering the buffer until the
// service ends. A failure is a span with status ERROR. The outcome diagram of
// the system is job = worker_1 -> worker_2.
//
// Spans still running when their batch is flushed are announced by a
// deltaq.span.start log record (event name, trace and span id, deltaq.probe
// and deltaq.span.name attributes, timestamp = start), so that the deltaq
// processor can time them out (see -starts). The span of an announced
// instance reaches the collector at the first flush after it ends; if that is
// after start + dMax, the processor has already reported a timeout. Keep
// -flush well below the smallest dMax of the probes (the default, 10 ms, suits
// dMax ≥ 100 ms).
//
// The simulation is a discrete-event simulation whose clock follows the wall
// clock: every timestamp is the exact simulated time, whatever the scheduling
// jitter of the process. One worker can be slowed (-slow-worker,
// -slow-factor, -slow-delay), from the start (-slow), on a schedule
// (-slow-after, -slow-for) or by sending the process SIGUSR1, which toggles it.
//
// dqworkload prints what it sent and what failed every -report interval and
// at the end, and exits with status 1 if anything failed to send.
package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/deltaq-otel/deltaq/internal/gencmd"
)

func main() { gencmd.Main("dqworkload", run) }

// options are the command-line flags.
type options struct {
	gencmd.Client
	cfg            Config
	duration       time.Duration
	drain          time.Duration
	flush          time.Duration
	maxBatch       int
	starts         StartEvents
	probeAttribute bool
	serviceName    string
	seed           uint64
	report         time.Duration
	queue          int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := gencmd.NewFlagSet("dqworkload", stderr, &o.Client, 5*time.Second)
	fs.Float64Var(&o.cfg.ArrivalRate, "rate", 100, "arrival rate λ, jobs per second (Poisson)")
	fs.Float64Var(&o.cfg.ServiceRate[0], "mu1", 200, "worker_1 service rate μ₁, jobs per second (exponential)")
	fs.Float64Var(&o.cfg.ServiceRate[1], "mu2", 200, "worker_2 service rate μ₂, jobs per second (exponential)")
	fs.IntVar(&o.cfg.K, "k", 10, "capacity K of each worker's buffer, the job in service included")
	fs.IntVar(&o.cfg.SlowWorker, "slow-worker", 2, "worker (1 or 2) the slow-down affects, 0 for none")
	fs.Float64Var(&o.cfg.SlowFactor, "slow-factor", 4, "the slowed worker's service times are multiplied by this")
	fs.DurationVar(&o.cfg.SlowDelay, "slow-delay", 0, "and this is added to them")
	fs.BoolVar(&o.cfg.Slow, "slow", false, "start slowed (SIGUSR1 toggles)")
	fs.DurationVar(&o.cfg.SlowAfter, "slow-after", 0, "invert the slow-down from this time after the start...")
	fs.DurationVar(&o.cfg.SlowFor, "slow-for", 0, "...for this long (0: until the end)")
	fs.DurationVar(&o.duration, "duration", 0, "stop new arrivals after this long (0: run until SIGINT/SIGTERM)")
	fs.DurationVar(&o.drain, "drain", 10*time.Second, "after arrivals stop, wait at most this long for the jobs in the system")
	fs.DurationVar(&o.flush, "flush", 10*time.Millisecond, "send a batch at least this often; keep it well below the smallest dMax")
	fs.IntVar(&o.maxBatch, "max-batch", 1000, "send a batch when it holds this many spans")
	startsFlag := fs.String("starts", "open", "deltaq.span.start events: open (for spans unfinished at flush), all, none")
	fs.BoolVar(&o.probeAttribute, "probe-attribute", false, "also set deltaq.probe on every span")
	fs.StringVar(&o.serviceName, "service-name", "dqworkload", "service.name resource attribute")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	fs.DurationVar(&o.report, "report", 10*time.Second, "print counts this often (0: only at the end)")
	fs.IntVar(&o.queue, "queue", 256, "batches the sender may hold before it drops (and counts) new ones")
	if err := gencmd.Parse(fs, args); err != nil {
		return o, err
	}
	var err error
	if o.starts, err = ParseStartEvents(*startsFlag); err != nil {
		return o, err
	}
	if err := o.cfg.Validate(); err != nil {
		return o, err
	}
	switch {
	case o.flush <= 0:
		return o, errors.New("-flush must be positive")
	case o.maxBatch < 1:
		return o, errors.New("-max-batch must be at least 1")
	case o.Timeout <= 0:
		return o, errors.New("-timeout must be positive")
	case o.queue < 1:
		return o, errors.New("-queue must be at least 1")
	case o.duration < 0 || o.drain < 0 || o.report < 0:
		return o, errors.New("-duration, -drain and -report must not be negative")
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o, nil
}

// run simulates the system as the command line says, sends its traces,
// prints counts every -report and at the end, and fails if anything was not
// delivered.
func run(args []string, out io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	conn, err := o.Dial()
	if err != nil {
		return err
	}
	defer conn.Close()

	printModel(out, o)
	w := &workload{o: o, out: out, sender: NewSender(conn, o.Timeout, o.queue),
		b: &Batcher{Starts: o.starts, ProbeAttribute: o.probeAttribute, ServiceName: o.serviceName}}
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	if w.sim, err = NewSimulator(o.cfg, rng, w.b); err != nil {
		return err
	}
	w.loop()
	w.sender.Enqueue(w.b.Flush(w.sim.Now()))
	w.sender.Close()
	c := w.sender.Counts()
	fmt.Fprint(out, "final: ")
	printCounts(out, w.sim, c, w.b.Elided())
	if n := c.FailedSpans + c.DroppedSpans + c.FailedStarts + c.DroppedStarts; n > 0 {
		return fmt.Errorf("%d spans and %d start events not delivered (last error: %s)",
			c.FailedSpans+c.DroppedSpans, c.FailedStarts+c.DroppedStarts, c.LastError)
	}
	return nil
}

// workload is one run of the simulation in real time.
type workload struct {
	o      options
	out    io.Writer
	sim    *Simulator
	b      *Batcher
	sender *Sender

	epoch    time.Time // wall-clock time of simulation time 0
	slowed   bool      // the slow-down was in effect at the last advance
	draining bool
	drainEnd <-chan time.Time
}

// loop runs the simulation until, after arrivals stopped (-duration, SIGINT
// or SIGTERM), the system is empty or -drain is over. SIGUSR1 toggles the
// slow-down.
func (w *workload) loop() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	toggle := make(chan os.Signal, 1)
	signal.Notify(toggle, syscall.SIGUSR1)
	defer signal.Stop(stop)
	defer signal.Stop(toggle)

	w.epoch = time.Now()
	w.b.Epoch = w.epoch
	flush := time.NewTicker(w.o.flush)
	defer flush.Stop()
	report, stopReport := gencmd.Ticker(w.o.report)
	defer stopReport()
	var end <-chan time.Time
	if w.o.duration > 0 {
		end = time.After(w.o.duration)
	}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()

	w.slowed = w.sim.Slowed(0)
	if w.slowed && w.o.cfg.SlowWorker != 0 {
		fmt.Fprintf(w.out, "%7.1fs worker_%d slowed\n", 0.0, w.o.cfg.SlowWorker)
	}
	for {
		next, ok := w.sim.NextEvent()
		if !ok {
			return // arrivals stopped and the system is empty
		}
		wake.Reset(max(0, time.Until(w.epoch.Add(next))))
		select {
		case <-wake.C:
			w.advance()
		case <-flush.C:
			w.advance()
			w.sender.Enqueue(w.b.Flush(w.sim.Now()))
		case <-toggle:
			w.advance()
			w.sim.ToggleSlow()
			w.advance()
		case <-report:
			w.advance()
			printCounts(w.out, w.sim, w.sender.Counts(), w.b.Elided())
		case <-end:
			w.advance()
			w.beginDrain("duration reached")
		case s := <-stop:
			w.advance()
			w.beginDrain(s.String())
		case <-w.drainEnd:
			w.advance()
			fmt.Fprintf(w.out, "%7.1fs drain time over, %d jobs left unfinished\n", w.sim.Now().Seconds(), w.sim.Stats().InSystem)
			return
		}
	}
}

// advance brings the simulation to the wall clock, reports a change of the
// slow-down and sends a batch that reached -max-batch.
func (w *workload) advance() {
	w.sim.AdvanceTo(time.Since(w.epoch))
	if s := w.sim.Slowed(w.sim.Now()); s != w.slowed && w.o.cfg.SlowWorker != 0 {
		w.slowed = s
		state := "back to normal"
		if s {
			state = "slowed"
		}
		fmt.Fprintf(w.out, "%7.1fs worker_%d %s\n", w.sim.Now().Seconds(), w.o.cfg.SlowWorker, state)
	}
	if w.b.Pending() >= w.o.maxBatch {
		w.sender.Enqueue(w.b.Flush(w.sim.Now()))
	}
}

// beginDrain stops the arrivals, once, and starts the -drain timer.
func (w *workload) beginDrain(why string) {
	if w.draining {
		return
	}
	w.draining = true
	w.sim.StopArrivals()
	w.drainEnd = time.After(w.o.drain)
	fmt.Fprintf(w.out, "%7.1fs %s: no new arrivals, draining %d jobs\n", time.Since(w.epoch).Seconds(), why, w.sim.Stats().InSystem)
}

// printModel prints the parameters and the stationary M/M/1/K figures of each
// worker. worker_2's are an approximation: its input is worker_1's output,
// Poisson only for an unbounded buffer (Burke's theorem).
func printModel(out io.Writer, o options) {
	c := o.cfg
	fmt.Fprintf(out, "dqworkload: λ=%g/s μ1=%g/s μ2=%g/s K=%d → %s seed=%d\n",
		c.ArrivalRate, c.ServiceRate[0], c.ServiceRate[1], c.K, o.Endpoint, o.seed)
	lambda := c.ArrivalRate
	for i, mu := range c.ServiceRate {
		m := NewMM1K(lambda, mu, c.K)
		fmt.Fprintf(out, "  worker_%d: ρ=%.3f  P(drop)=%.4f  mean time in worker=%.2fms\n",
			i+1, m.Rho, m.Blocking, m.Sojourn*1e3)
		lambda *= 1 - m.Blocking
	}
	if c.SlowWorker != 0 {
		fmt.Fprintf(out, "  slow-down of worker_%d: service time ×%g + %v", c.SlowWorker, c.SlowFactor, c.SlowDelay)
		switch {
		case c.SlowAfter > 0 || c.SlowFor > 0:
			fmt.Fprintf(out, ", scheduled from %v for %v", c.SlowAfter, c.SlowFor)
		case c.Slow:
			fmt.Fprint(out, ", from the start")
		}
		fmt.Fprintln(out, " (SIGUSR1 toggles)")
	}
}

func printCounts(out io.Writer, sim *Simulator, c Counts, elided int64) {
	st := sim.Stats()
	fmt.Fprintf(out, "%7.1fs jobs=%d done=%d dropped=%d+%d in_system=%d | spans sent=%d failed=%d queue_dropped=%d | starts sent=%d failed=%d queue_dropped=%d elided=%d\n",
		sim.Now().Seconds(), st.Arrivals, st.Completed, st.Dropped[0], st.Dropped[1], st.InSystem,
		c.SentSpans, c.FailedSpans, c.DroppedSpans, c.SentStarts, c.FailedStarts, c.DroppedStarts, elided)
	if c.LastError != "" && c.FailedSpans+c.FailedStarts > 0 {
		fmt.Fprintf(out, "         last error: %s\n", c.LastError)
	}
}
