// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package bench measures the deltaq processor and exporter side by side with
// collector-contrib's spanmetrics connector, in the same run, on the same
// spans. It is a module of its own so that the comparison's dependency on
// contrib never reaches the main module.
package bench
