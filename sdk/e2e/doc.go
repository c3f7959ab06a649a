// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end test of deltaqstart through the built
// collector (bin/otelcol-deltaq with testdata/collector.yaml, the deltaq
// connector alone): an application inside the test, the OpenTelemetry Go
// SDK with the OTLP/gRPC trace and log exporters and deltaqstart's span
// processor, starts spans of a probe, some of which never end and some of
// which end after dMax, and the test checks, from the collector's telemetry
// scraped every few milliseconds, that the connector counts exactly those
// as timeouts, each within one timer tick of its start + dMax, and, in its
// output, the others as successes, each timeout in the window of its start
// + dMax.
//
// The test needs Linux and the built collector, takes a few seconds, and
// runs only when DELTAQ_SDK_E2E is set:
//
//	make build
//	DELTAQ_SDK_E2E=1 OTELCOL=$PWD/bin/otelcol-deltaq go test -count=1 -v ./sdk/e2e/
//
// OTELCOL names the collector binary (bin/otelcol-deltaq of the repository
// by default).
package e2e
