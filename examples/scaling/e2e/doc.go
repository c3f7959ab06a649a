// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end test of scaling out (examples/scaling):
// three agent collectors (agent.yaml) send their windows to one gateway
// (gateway.yaml), and a control collector that sees every span runs the
// gateway's analysis on its own instances. The test checks that the
// gateway's merged ΔQs equal the control's window for window, then kills an
// agent mid-run, checks that the gateway keeps going and shows the missing
// agent, and restarts the agent, which rejoins.
//
// The test needs Linux and the built collector (five of them run at once,
// on loopback), takes about half a minute, and runs only when
// DELTAQ_SCALING_E2E is set (or `make e2e-scaling`):
//
//	make build
//	DELTAQ_SCALING_E2E=1 go test -count=1 -v ./examples/scaling/e2e/
//
// OTELCOL names another collector binary (an absolute path); by default
// bin/otelcol-deltaq of the repository.
package e2e
