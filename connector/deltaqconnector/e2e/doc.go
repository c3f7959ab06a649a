// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end test of the deltaq connector through the
// built collector (bin/otelcol-deltaq with testdata/collector.yaml, the
// layout of examples/collector.yaml): the test sends spans of a probe and
// start events over OTLP/gRPC and checks what two receivers inside the test
// get — the tracing and log backend exactly what was sent, the ΔQ sink the
// exact outcome counts and delays.
//
// The test needs Linux and the built collector, takes a few seconds, and
// runs only when DELTAQ_CONNECTOR_E2E is set:
//
//	make build
//	DELTAQ_CONNECTOR_E2E=1 go test -count=1 -v ./connector/deltaqconnector/e2e/
//
// or `make e2e-connector`. OTELCOL names another collector binary (an absolute path).
package e2e
