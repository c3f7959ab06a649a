// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Command dqworkload runs the synthetic two-worker M/M/1/K system of the
// thesis's chapter 6.1 in real time and sends its traces to an OpenTelemetry
// Collector over OTLP/gRPC, or writes them to a file.
//
// Jobs arrive as a Poisson process of rate λ at worker_1, then go to
// worker_2; each job is a trace, a root span "job" with a child span per
// worker, "worker_1" and "worker_2", so the outcome diagram of the system
// is job = worker_1 -> worker_2. A job that finds a buffer full is dropped,
// a failure: its span at that worker and its root span end there with
// status ERROR. At the start dqworkload prints what queueing theory says of
// the parameters, then what it sent and what failed every -report and at
// the end; it exits with status 1 if anything failed to be sent or written.
//
// The flags, in groups (dqworkload -h gives them all with their defaults):
//
//   - the system: -rate (λ), -mu1 and -mu2 (the service rates μ₁, μ₂), -k
//     (each buffer's capacity K), -topology (tandem, the default: a buffer
//     and a server each; shared: one server and one buffer for both, so
//     that a job's two delays are dependent; delays: pure delays, M/G/∞),
//     -speed1 and -speed2 (multiply a worker's delays), -seed;
//   - a changing load: -ramp-to, -ramp-over, -ramp-step;
//   - a slow-down of one worker: -slow-worker, -slow-factor, -slow-delay,
//     from the start (-slow), on a schedule (-slow-after, -slow-for), or
//     toggled by SIGUSR1;
//   - the output: -endpoint, -timeout, -flush, -max-batch, -queue, -starts
//     (deltaq.span.start events for spans still running at a flush),
//     -probe-attribute, -service-name, -trace-file (OTLP JSON lines; with
//     -endpoint "" only there, simulated as fast as it can);
//   - the run: -duration, -drain, -close-timeout, -report. SIGINT or
//     SIGTERM stops the arrivals and drains the jobs in the system; a second
//     one ends the drain at once.
//
// docs/design.md, "The synthetic workload", describes the system, its
// topologies, the ramp, the start events and the clock in full.
package main
