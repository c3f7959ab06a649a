// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Command dqworkload runs the synthetic two-worker M/M/1/K system of the
// thesis's chapter 6.1 in real time and sends its traces to an OpenTelemetry
// Collector over OTLP/gRPC, or writes them to a file.
//
// Jobs arrive as a Poisson process of rate λ (-rate) at worker_1's buffer,
// are served there with exponential service times of rate μ₁ (-mu1), then
// queue for worker_2 (rate μ₂, -mu2). Each buffer holds at most K jobs
// (-k), the one in service included; a job arriving at a full buffer is
// dropped and is a failure. Every job is a trace: a root span "job" from its
// arrival until worker_2 is done (or it is dropped), with a child span per
// worker visit, "worker_1" and "worker_2", one after the other, from entering
// the buffer until the service ends. A failure is a span with status ERROR.
// Every span carries the arrival rate λ its job met (dqworkload.rate). The
// outcome diagram of the system is job = worker_1 -> worker_2.
//
// -topology chooses how the work is served, with the same spans:
//
//   - tandem (the default): each worker has its own buffer and server, as
//     above. With buffers that never fill, a job's delays at the two workers
//     are independent (Reich's theorem for tandem M/M/1 queues).
//   - shared: one server does both workers' work, FIFO over one buffer of K
//     jobs that a job re-joins for its worker_2 service; its two delays are
//     positively dependent, more so as the load λ(1/μ₁ + 1/μ₂) rises.
//   - delays: each worker is a pure delay, exponential of mean 1/μ, without
//     buffer or waiting (M/G/∞): the delays are independent of each other and
//     of the load, and nothing is dropped.
//
// -speed1 and -speed2 multiply a worker's service times (its delays): 0.5
// makes it twice as fast. With the same -seed, a delays run with -speed2 0.5
// has the same jobs as one without, each with exactly half the worker_2
// delay.
//
// -ramp-to moves λ from -rate to that rate over -ramp-over, in steps of
// -ramp-step (each step holds the rate the linear ramp has at its start; the
// last level, -ramp-to, is reached at -ramp-over) or linearly with
// -ramp-step 0. The arrivals stay a Poisson process of the current rate. The
// periodic report prints the current λ.
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
// -trace-file writes every batch of spans to a file as the collector's file
// exporter does with format: json (one ExportTraceServiceRequest in OTLP
// JSON per line), in addition to sending them; with -endpoint "" nothing is
// sent, no start events are made, and the simulation does not follow the wall
// clock: it runs -duration of simulated time as fast as it can, its
// timestamps starting at the wall-clock time of the start.
//
// The simulation is a discrete-event simulation whose clock follows the wall
// clock: every timestamp is the exact simulated time, whatever the scheduling
// jitter of the process. One worker can be slowed (-slow-worker,
// -slow-factor, -slow-delay), from the start (-slow), on a schedule
// (-slow-after, -slow-for) or by sending the process SIGUSR1, which toggles it.
//
// dqworkload prints what it sent and what failed every -report interval and
// at the end, and exits with status 1 if anything failed to send or to be
// written.
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
	"github.com/deltaq-otel/deltaq/internal/tracefile"
	"github.com/deltaq-otel/deltaq/internal/workload"
)

func main() { gencmd.Main("dqworkload", run) }

// options are the command-line flags.
type options struct {
	gencmd.Client
	cfg            workload.Config
	duration       time.Duration
	drain          time.Duration
	flush          time.Duration
	maxBatch       int
	starts         workload.StartEvents
	probeAttribute bool
	serviceName    string
	seed           uint64
	report         time.Duration
	queue          int
	traceFile      string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := gencmd.NewFlagSet("dqworkload", stderr, &o.Client, 5*time.Second)
	topology := fs.String("topology", "tandem", "how the workers' work is served: tandem (a buffer and a server each), shared (one server and one FIFO buffer for both: dependent delays), delays (pure delays, no buffer: M/G/∞)")
	fs.Float64Var(&o.cfg.ArrivalRate, "rate", 100, "arrival rate λ, jobs per second (Poisson); with -ramp-to, the rate at the start")
	fs.Float64Var(&o.cfg.RampTo, "ramp-to", 0, "ramp λ from -rate to this rate over -ramp-over (0: no ramp)")
	fs.DurationVar(&o.cfg.RampOver, "ramp-over", time.Minute, "length of the ramp, from the start; λ stays at -ramp-to after it")
	fs.DurationVar(&o.cfg.RampStep, "ramp-step", 5*time.Second, "the ramp holds λ for steps of this length, each at the linear ramp's rate at its start (0: linear ramp)")
	fs.Float64Var(&o.cfg.ServiceRate[0], "mu1", 200, "worker_1 service rate μ₁, jobs per second (exponential; the mean delay's inverse with -topology delays)")
	fs.Float64Var(&o.cfg.ServiceRate[1], "mu2", 200, "worker_2 service rate μ₂, jobs per second (exponential; the mean delay's inverse with -topology delays)")
	fs.Float64Var(&o.cfg.Speed[0], "speed1", 1, "worker_1's service times (delays) are multiplied by this: 0.5 makes it twice as fast")
	fs.Float64Var(&o.cfg.Speed[1], "speed2", 1, "worker_2's service times (delays) are multiplied by this")
	fs.IntVar(&o.cfg.K, "k", 10, "capacity K of each worker's buffer, the job in service included (of the one buffer with -topology shared; unused with delays)")
	fs.IntVar(&o.cfg.SlowWorker, "slow-worker", 2, "worker (1 or 2) the slow-down affects, 0 for none")
	fs.Float64Var(&o.cfg.SlowFactor, "slow-factor", 4, "the slowed worker's service times are multiplied by this")
	fs.DurationVar(&o.cfg.SlowDelay, "slow-delay", 0, "and this is added to them")
	fs.BoolVar(&o.cfg.Slow, "slow", false, "start slowed (SIGUSR1 toggles)")
	fs.DurationVar(&o.cfg.SlowAfter, "slow-after", 0, "invert the slow-down from this time after the start...")
	fs.DurationVar(&o.cfg.SlowFor, "slow-for", 0, "...for this long (0: until the end)")
	fs.DurationVar(&o.duration, "duration", 0, "stop new arrivals after this long (0: run until SIGINT/SIGTERM; required with -endpoint '')")
	fs.DurationVar(&o.drain, "drain", 10*time.Second, "after arrivals stop, wait at most this long for the jobs in the system")
	fs.DurationVar(&o.flush, "flush", 10*time.Millisecond, "send a batch at least this often; keep it well below the smallest dMax")
	fs.IntVar(&o.maxBatch, "max-batch", 1000, "send a batch when it holds this many spans")
	startsFlag := fs.String("starts", "open", "deltaq.span.start events: open (for spans unfinished at flush), all, none")
	fs.BoolVar(&o.probeAttribute, "probe-attribute", false, "also set deltaq.probe on every span")
	fs.StringVar(&o.serviceName, "service-name", "dqworkload", "service.name resource attribute")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	fs.DurationVar(&o.report, "report", 10*time.Second, "print counts and the current λ this often (0: only at the end)")
	fs.IntVar(&o.queue, "queue", 256, "batches the sender may hold before it drops (and counts) new ones")
	fs.StringVar(&o.traceFile, "trace-file", "", "also write the spans to this `file`, as OTLP JSON lines (the collector file exporter's format: json); with -endpoint '' only there, simulated as fast as possible")
	if err := gencmd.Parse(fs, args); err != nil {
		return o, err
	}
	var err error
	if o.cfg.Topology, err = workload.ParseTopology(*topology); err != nil {
		return o, err
	}
	if o.starts, err = workload.ParseStartEvents(*startsFlag); err != nil {
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
	case o.Endpoint == "" && o.traceFile == "":
		return o, errors.New("-endpoint is empty and there is no -trace-file: the spans would go nowhere")
	case o.Endpoint == "" && o.duration == 0:
		return o, errors.New("-duration must be set with -endpoint '': the run is simulated as fast as possible, not stopped by a signal")
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	return o, nil
}

// run simulates the system as the command line says, sends its traces and
// writes them to -trace-file, prints counts every -report and at the end,
// and fails if anything was not delivered or written.
func run(args []string, out io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	w := &runner{o: o, out: out,
		b: &workload.Batcher{Starts: o.starts, ProbeAttribute: o.probeAttribute, ServiceName: o.serviceName}}
	if o.Endpoint != "" {
		conn, err := o.Dial()
		if err != nil {
			return err
		}
		defer conn.Close()
		w.sender = workload.NewSender(conn, o.Timeout, o.queue)
	} else {
		w.b.Starts = workload.StartsNone // start events are for a collector's timeouts
	}
	if o.traceFile != "" {
		if w.file, err = tracefile.Create(o.traceFile); err != nil {
			return err
		}
	}

	printModel(out, o)
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	if w.sim, err = workload.NewSimulator(o.cfg, rng, w.b); err != nil {
		return err
	}
	if w.sender != nil {
		w.loop()
	} else {
		w.fast()
	}
	w.emit(w.b.Flush(w.sim.Now()))
	var c workload.Counts
	if w.sender != nil {
		w.sender.Close()
		c = w.sender.Counts()
	}
	var fileErr error
	if w.file != nil {
		fileErr = w.file.Close()
	}
	fmt.Fprint(out, "final: ")
	w.printCounts()
	if n := c.FailedSpans + c.DroppedSpans + c.FailedStarts + c.DroppedStarts; n > 0 {
		return fmt.Errorf("%d spans and %d start events not delivered (last error: %s)",
			c.FailedSpans+c.DroppedSpans, c.FailedStarts+c.DroppedStarts, c.LastError)
	}
	return fileErr
}

// runner is one run of the simulation.
type runner struct {
	o      options
	out    io.Writer
	sim    *workload.Simulator
	b      *workload.Batcher
	sender *workload.Sender  // nil with -endpoint ""
	file   *tracefile.Writer // nil without -trace-file

	epoch    time.Time // wall-clock time of simulation time 0
	slowed   bool      // the slow-down was in effect at the last step
	draining bool
	drainEnd <-chan time.Time
}

// emit hands a batch to the trace file and the sender, in that order: the
// file is written before the sender's goroutine reads the batch.
func (w *runner) emit(b workload.Batch) {
	if w.file != nil {
		w.file.Write(b.Traces, b.Spans)
	}
	if w.sender != nil {
		w.sender.Enqueue(b)
	}
}

// start sets the epoch and reports a slow-down in force from the start.
func (w *runner) start() {
	w.epoch = time.Now()
	w.b.Epoch = w.epoch
	w.slowed = w.sim.Slowed(0)
	if w.slowed && w.o.cfg.SlowWorker != 0 {
		fmt.Fprintf(w.out, "%7.1fs worker_%d slowed\n", 0.0, w.o.cfg.SlowWorker)
	}
}

// loop runs the simulation in real time until, after arrivals stopped
// (-duration, SIGINT or SIGTERM), the system is empty or -drain is over.
// SIGUSR1 toggles the slow-down.
func (w *runner) loop() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	toggle := make(chan os.Signal, 1)
	signal.Notify(toggle, syscall.SIGUSR1)
	defer signal.Stop(stop)
	defer signal.Stop(toggle)

	w.start()
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
			w.emit(w.b.Flush(w.sim.Now()))
		case <-toggle:
			w.advance()
			w.sim.ToggleSlow()
			w.advance()
		case <-report:
			w.advance()
			w.printCounts()
		case <-end:
			w.advance()
			if w.beginDrain("duration reached") {
				w.drainEnd = time.After(w.o.drain)
			}
		case s := <-stop:
			w.advance()
			if w.beginDrain(s.String()) {
				w.drainEnd = time.After(w.o.drain)
			}
		case <-w.drainEnd:
			w.advance()
			w.drainOver()
			return
		}
	}
}

// fast runs the simulation as fast as it can, for a run that only writes a
// file: -duration of simulated time, then at most -drain more for the jobs in
// the system. Batches and reports are cut as in real time, on the
// simulation clock: every -flush, when a batch reaches -max-batch, and every
// -report.
func (w *runner) fast() {
	w.start()
	drainEnd := w.o.duration + w.o.drain
	nextFlush, nextReport := w.o.flush, w.o.report
	for {
		next, ok := w.sim.NextEvent()
		if !ok {
			return
		}
		t := min(next, nextFlush)
		if w.o.report > 0 {
			t = min(t, nextReport)
		}
		if !w.draining {
			t = min(t, w.o.duration)
		} else if t > drainEnd {
			w.step(drainEnd)
			w.drainOver()
			return
		}
		w.step(t)
		if t == nextFlush {
			w.emit(w.b.Flush(t))
			nextFlush += w.o.flush
		}
		if w.o.report > 0 && t == nextReport {
			w.printCounts()
			nextReport += w.o.report
		}
		if !w.draining && t == w.o.duration {
			w.beginDrain("duration reached")
		}
	}
}

// advance brings the simulation to the wall clock.
func (w *runner) advance() { w.step(time.Since(w.epoch)) }

// step brings the simulation to t, reports a change of the slow-down and
// sends a batch that reached -max-batch.
func (w *runner) step(t time.Duration) {
	w.sim.AdvanceTo(t)
	if s := w.sim.Slowed(w.sim.Now()); s != w.slowed && w.o.cfg.SlowWorker != 0 {
		w.slowed = s
		state := "back to normal"
		if s {
			state = "slowed"
		}
		fmt.Fprintf(w.out, "%7.1fs worker_%d %s\n", w.sim.Now().Seconds(), w.o.cfg.SlowWorker, state)
	}
	if w.b.Pending() >= w.o.maxBatch {
		w.emit(w.b.Flush(w.sim.Now()))
	}
}

// beginDrain stops the arrivals, once: it reports whether it did.
func (w *runner) beginDrain(why string) bool {
	if w.draining {
		return false
	}
	w.draining = true
	w.sim.StopArrivals()
	fmt.Fprintf(w.out, "%7.1fs %s: no new arrivals, draining %d jobs\n", w.sim.Now().Seconds(), why, w.sim.Stats().InSystem)
	return true
}

func (w *runner) drainOver() {
	fmt.Fprintf(w.out, "%7.1fs drain time over, %d jobs left unfinished\n", w.sim.Now().Seconds(), w.sim.Stats().InSystem)
}

// printModel prints the parameters and what queueing theory says of them at
// the starting rate: the stationary M/M/1/K figures of each tandem worker
// (worker_2's are an approximation: its input is worker_1's output, Poisson
// only for an unbounded buffer, by Burke's theorem), the shared server's
// load, or the pure delays' means.
func printModel(out io.Writer, o options) {
	c := o.cfg
	dest := o.Endpoint
	switch {
	case dest == "":
		dest = o.traceFile
	case o.traceFile != "":
		dest += " and " + o.traceFile
	}
	fmt.Fprintf(out, "dqworkload: %s λ=%g/s μ1=%g/s μ2=%g/s K=%d → %s seed=%d\n",
		c.Topology, c.ArrivalRate, c.ServiceRate[0], c.ServiceRate[1], c.K, dest, o.seed)
	if c.RampTo != 0 {
		how := "linearly"
		if c.RampStep > 0 {
			how = fmt.Sprintf("in steps of %v", c.RampStep)
		}
		fmt.Fprintf(out, "  λ ramps to %g/s over %v, %s\n", c.RampTo, c.RampOver, how)
	}
	if c.Speed != [2]float64{1, 1} {
		fmt.Fprintf(out, "  speed factors: worker_1 ×%g, worker_2 ×%g\n", c.Speed[0], c.Speed[1])
	}
	// The mean service time (delay) of each worker, seconds.
	mean := [2]float64{c.Speed[0] / c.ServiceRate[0], c.Speed[1] / c.ServiceRate[1]}
	lambda := c.ArrivalRate
	switch c.Topology {
	case workload.TopologyTandem:
		for i := range mean {
			m := workload.NewMM1K(lambda, 1/mean[i], c.K)
			fmt.Fprintf(out, "  worker_%d: ρ=%.3f  P(drop)=%.4f  mean time in worker=%.2fms\n",
				i+1, m.Rho, m.Blocking, m.Sojourn*1e3)
			lambda *= 1 - m.Blocking
		}
	case workload.TopologyShared:
		fmt.Fprintf(out, "  one server for both workers: ρ=λ·(%.2fms + %.2fms)=%.3f\n", mean[0]*1e3, mean[1]*1e3, lambda*(mean[0]+mean[1]))
	case workload.TopologyDelays:
		fmt.Fprintf(out, "  pure delays: mean worker_1=%.2fms worker_2=%.2fms, mean jobs in the system (Little)=%.1f\n",
			mean[0]*1e3, mean[1]*1e3, lambda*(mean[0]+mean[1]))
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

// printCounts prints the simulation's counts, the current λ, and what the
// sender and the trace file did.
func (w *runner) printCounts() {
	st := w.sim.Stats()
	fmt.Fprintf(w.out, "%7.1fs λ=%g/s jobs=%d done=%d dropped=%d+%d in_system=%d",
		w.sim.Now().Seconds(), w.sim.Rate(), st.Arrivals, st.Completed, st.Dropped[0], st.Dropped[1], st.InSystem)
	var c workload.Counts
	if w.sender != nil {
		c = w.sender.Counts()
		fmt.Fprintf(w.out, " | spans sent=%d failed=%d queue_dropped=%d | starts sent=%d failed=%d queue_dropped=%d elided=%d",
			c.SentSpans, c.FailedSpans, c.DroppedSpans, c.SentStarts, c.FailedStarts, c.DroppedStarts, w.b.Elided())
	}
	if w.file != nil {
		fmt.Fprintf(w.out, " | file spans=%d", w.file.Spans())
	}
	fmt.Fprintln(w.out)
	if c.LastError != "" && c.FailedSpans+c.FailedStarts > 0 {
		fmt.Fprintf(w.out, "         last error: %s\n", c.LastError)
	}
}
