// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests of the deltaq connector through
// the built collector. TestConnectorThroughCollector sends spans of a probe
// and start events over OTLP/gRPC, to the connector alone
// (testdata/collector.yaml, the layout of examples/collector.yaml) and
// through the deltaq processor (testdata/processor.yaml, the layout of
// examples/processor.yaml), and checks what two receivers inside the test
// get — the tracing and log backend exactly what was sent, the ΔQ sink the
// exact outcome counts and delays. The reload tests (testdata/reload.yaml,
// with the processor, whose instances in flight are handed over too) send
// SIGHUP with an edited configuration mid-run and check that no instance is
// lost or counted twice, that the band keeps its history and the new QTA
// applies from the next window, and that a probe whose dmax changed starts
// afresh. TestHostileSpansThroughCollector sends spans that attack the
// probe's labels (a service.name of 1,000,000 bytes, more services than the
// label names) and a window's weight (a forged sampling threshold) and
// checks the bounds that hold them.
//
// The tests need Linux and the built collector, take about twenty seconds,
// and run only when DELTAQ_CONNECTOR_E2E is set:
//
//	make build
//	DELTAQ_CONNECTOR_E2E=1 go test -count=1 -v ./connector/deltaqconnector/e2e/
//
// or `make e2e-connector`. OTELCOL names another collector binary (an absolute path).
package e2e
