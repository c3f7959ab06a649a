// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package examples holds no code. Its directory carries the configurations users
// start from (Prometheus alert rules and configuration, Alertmanager configuration,
// the Grafana dashboard) and its tests check them: the dashboard's structure and
// queries against the exporter's metric contract, the rules with promtool when
// it is installed, and that make validate-configs is given every collector
// configuration.
package examples
