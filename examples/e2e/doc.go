// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end test of the ΔQ metrics in a real
// Prometheus: what examples/README.md ("Prometheus names", "Reading ΔQ in
// PromQL", "Prometheus and Alertmanager") tells a user to write in PromQL,
// checked against spans of known delays. Two built collectors (explicit
// buckets, and an exponential histogram that Prometheus stores as a native
// histogram) send the deltaq connector's metrics to Prometheus by remote
// write; the test sends both the same spans in two phases and checks the
// exact increase between the phases, bucket counts, histogram_quantile and
// the improper CDF. A third collector, whose ΔQ backend is unreachable,
// must fire the pipeline-health alert DeltaQExportFailed of
// examples/prometheus/rules/collector-alerts.yml. A fourth closes and
// exports its windows as the gateway of deploy/kubernetes does (its interval
// and lag, read from gateway.yaml, and a batch processor): for a window that
// breaks the QTA, DeltaQQTABreach of the gateway's rules
// (deploy/kubernetes/prometheus/deltaq-alerts.yml) must fire, and that of
// examples/prometheus/rules/deltaq-alerts.yml, whose 10s range never holds a
// window delivered that late, must never hold an alert.
//
// The test needs Linux, the built collector and Prometheus 2.42 or later on
// PATH (Debian: apt-get install prometheus), takes about half a minute, and
// runs only when DELTAQ_PROMQL_E2E is set:
//
//	make build
//	DELTAQ_PROMQL_E2E=1 go test -count=1 -v ./examples/e2e/
//
// OTELCOL names another collector binary (an absolute path).
package e2e
