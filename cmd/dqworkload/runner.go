// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/deltaq-otel/deltaq/internal/gencmd"
	"github.com/deltaq-otel/deltaq/internal/tracefile"
	"github.com/deltaq-otel/deltaq/internal/workload"
)

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

// finish sends the last batch, closes the sender and the trace file, prints
// the final counts, and fails if anything was not delivered or written.
func (w *runner) finish() error {
	w.emit(w.b.Flush(w.sim.Now()))
	var c workload.Counts
	if w.sender != nil {
		if !w.sender.Close(w.o.closeTimeout) {
			fmt.Fprintf(w.out, "%7.1fs -close-timeout %v over: the batches not yet sent are dropped\n",
				time.Since(w.epoch).Seconds(), w.o.closeTimeout)
		}
		c = w.sender.Counts()
	}
	var fileErr error
	if w.file != nil {
		fileErr = w.file.Close()
	}
	fmt.Fprint(w.out, "final: ")
	w.printCounts()
	if n := c.FailedSpans + c.DroppedSpans + c.FailedStarts + c.DroppedStarts; n > 0 {
		return fmt.Errorf("%d spans and %d start events not delivered (last error: %s)",
			c.FailedSpans+c.DroppedSpans, c.FailedStarts+c.DroppedStarts, c.LastError)
	}
	return fileErr
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
// (-duration, SIGINT or SIGTERM), the system is empty or -drain is over; a
// second SIGINT or SIGTERM ends the drain at once. SIGUSR1 toggles the
// slow-down.
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
			if !w.beginDrain(s.String()) {
				fmt.Fprintf(w.out, "%7.1fs %s again: not waiting for the drain\n", w.sim.Now().Seconds(), s)
				w.drainOver()
				return
			}
			w.drainEnd = time.After(w.o.drain)
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
