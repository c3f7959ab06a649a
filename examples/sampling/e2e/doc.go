// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end test of sampled traces, exemplars and the
// trigger records' worst instances: a client of the OpenTelemetry JS SDK
// (client/, installed from npm with its lock file) samples its own spans
// with the SDK's consistent probability sampler, which records the
// threshold in each kept span's tracestate (ot=th:c, one in four); the
// built collector counts each kept span four times and sends the deltaq
// connector's metrics, with exemplars, to a real Prometheus by remote
// write (exemplar storage on), its trigger records to the test. The test
// checks that the counts in Prometheus match the client's unsampled totals
// within four standard errors of the sampling, and exactly four times the
// spans kept; that /api/v1/query_exemplars returns trace ids, span ids and
// delays of spans the client kept; and that the QTA trigger of the slowed
// phase names trace ids of slowed spans.
//
// The test needs Linux, the built collector, Prometheus 2.42 or later
// (Debian: apt-get install prometheus) and Node.js with npm on PATH, takes
// about half a minute, and runs only when DELTAQ_SAMPLING_E2E is set:
//
//	make build
//	DELTAQ_SAMPLING_E2E=1 go test -count=1 -v ./examples/sampling/e2e/
//
// OTELCOL names another collector binary (an absolute path).
package e2e
