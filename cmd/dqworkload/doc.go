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
// SIGINT or SIGTERM stops the arrivals and lets the jobs in the system finish
// for at most -drain; a second one ends the drain at once. At the end the
// batches still queued are sent for at most -close-timeout (5 s), so that a
// collector that is gone cannot hold the exit; what is left is counted as
// dropped.
//
// dqworkload prints what it sent and what failed every -report interval and
// at the end, and exits with status 1 if anything failed to send or to be
// written.
package main
