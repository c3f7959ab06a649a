// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package kubernetes holds no code. Its directory carries the Kubernetes
// manifests of the agent and gateway topology (agent.yaml, gateway.yaml) and
// their tests: every document decoded strictly with the Kubernetes API types,
// the workloads' health checks, resource limits, non-root users and
// configuration volumes, the Service the agents send to, the collectors' own
// metrics and their scrape job (prometheus/scrape.yml), the gateway's expected
// agents, the alert rules for the gateway (prometheus/deltaq-alerts.yml: the
// shipped rules but for the ranges its delivery delay sets, and their promtool
// tests), and the collector configurations the ConfigMaps embed, validated by
// the built collector.
//
// A module of its own, so that the Kubernetes API modules stay out of the
// collector's module graph. make test-kubernetes (part of make e2e) runs the
// tests:
//
//	make build
//	cd deploy/kubernetes && OTELCOL=$PWD/../../bin/otelcol-deltaq go test -count=1 ./...
package kubernetes
