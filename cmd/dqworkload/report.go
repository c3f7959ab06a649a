// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/deltaq-otel/deltaq/internal/workload"
)

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
