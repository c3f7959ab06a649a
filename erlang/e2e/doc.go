// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests of the Erlang library dqsd_otel: its
// M/M/1/K example (erlang/examples/mm1k.escript) exports spans and start
// events over OTLP/HTTP to the built collector (bin/otelcol-deltaq with
// examples/erlang/collector.yaml), whose deltaq connector alone has the ΔQs
// of the probes worker_1, worker_2 and end_to_end sent over OTLP/gRPC to a
// server inside the test. The test then stops the collector and checks that
// the example keeps running and ends normally, counting what it could not
// export.
//
// TestRealTimeTimeoutsFromErlang sends erlang/examples/traced_http.escript a
// request that outlasts the probes' dMax and one in which the service is
// killed, and checks, from the collector's telemetry scraped every few
// milliseconds, that the deltaq connector alone (testdata/timeouts.yaml)
// counts their instances as timeouts within one timer tick of start + dMax,
// while the slow request still runs, and, in its output, each in the window
// of its start + dMax.
//
// TestMM1KCollectorRestart runs the M/M/1/K example against a collector
// whose deltaq connector takes its start events (testdata/restart.yaml),
// kills the collector a few seconds into the run and starts it again on
// the same port 3 s later, and checks that the new collector counts no
// timeout in real time: the backlog dqsd_otel sends it holds no start event,
// overdue, ahead of its span; and that dqsd_otel, retrying through the
// outage, counts no span or start event as failed.
//
// A further test, TestTraceContextFromGo, has a Go client instrumented with
// the OpenTelemetry Go SDK call erlang/examples/traced_http.escript, an
// inets httpd service, with the W3C trace context of its span; the collector
// (testdata/collector.yaml) passes every span on to a receiver inside the
// test, which checks that the handler's span continues the Go span's trace.
//
// The tests need Linux, the built collector and Erlang/OTP (erlc, escript), and run
// only when DQSD_OTEL_E2E is set:
//
//	make build
//	DQSD_OTEL_E2E=1 go test -count=1 -v ./erlang/e2e/
//
// or `make e2e-erlang`. OTELCOL names another collector binary (an absolute path).
package e2e
