// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
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
	batchStarts    bool
	probeAttribute bool
	serviceName    string
	seed           uint64
	report         time.Duration
	queue          int
	closeTimeout   time.Duration
	traceFile      string
}

// parseFlags reads the command line into options and checks them; a -seed
// of 0 becomes one from the clock.
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
	startForm := fs.String("start-form", "single", "start events one a span (single: deltaq.span.start) or one a probe per flush (batch: deltaq.span.starts)")
	fs.BoolVar(&o.probeAttribute, "probe-attribute", false, "also set deltaq.probe on every span")
	fs.StringVar(&o.serviceName, "service-name", "dqworkload", "service.name resource attribute")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed (0: from the clock)")
	fs.DurationVar(&o.report, "report", 10*time.Second, "print counts and the current λ this often (0: only at the end)")
	fs.IntVar(&o.queue, "queue", 256, "batches the sender may hold before it drops (and counts) new ones")
	fs.DurationVar(&o.closeTimeout, "close-timeout", 5*time.Second, "at the end, wait at most this long for the queued batches to be sent; the rest are dropped (and counted)")
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
	switch *startForm {
	case "single":
	case "batch":
		o.batchStarts = true
	default:
		return o, fmt.Errorf("-start-form must be single or batch, not %q", *startForm)
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
	case o.closeTimeout <= 0:
		return o, errors.New("-close-timeout must be positive")
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
		b: &workload.Batcher{Starts: o.starts, BatchStarts: o.batchStarts, ProbeAttribute: o.probeAttribute, ServiceName: o.serviceName}}
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
	return w.finish()
}
