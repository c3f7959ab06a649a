// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests of scaling out (examples/scaling):
// agent collectors (agent.yaml) send their windows to one gateway
// (gateway.yaml).
//
//   - TestGatewayMergesAgents: three agents, and a control collector that
//     sees every span and runs the gateway's analysis on its own instances.
//     The gateway's merged ΔQs equal the control's window for window; an
//     agent killed mid-run leaves the gateway going and shows as missing;
//     restarted, it rejoins.
//   - TestGatewayIgnoresForgedWindows: windows of another layout, invalid,
//     far in the past and in the future are refused and counted, and the
//     agents' windows still equal the control's.
//   - TestGatewayPlacesBelongToRealAgents: 64 forged agents sending windows
//     of a probe the gateway does not name take none of its agents' places:
//     the agents' windows equal the control's, and a missing agent shows.
//   - TestGatewayMergesAutoRangedAgents: agents that choose their own dMax
//     and re-range; the gateway accepts every window and counts exactly
//     their instances, in one layout.
//   - TestIdleAgentsAreNotMissing: two agents get spans, then none: each
//     says it is idle in the windows it sees none (deltaq.window.idle), so
//     the gateway's windows_missing_agents stays flat while both run, and
//     rises once one stops.
//   - TestGatewayRestartMissesNoAgent: a gateway restarted while two idle
//     agents run counts no window missing an agent at either start, then
//     counts them once an agent stops.
//   - TestSampledAgentsAtTheGateway: traces sampled one in ten (the
//     OpenTelemetry tracestate threshold on every kept span): the gateway
//     counts ten instances a kept span, and its divergence test reads the
//     effective count of the merged windows, so independent stages keep
//     its false-alarm rate.
//
// The tests need Linux and the built collector (up to five of them run at
// once, on loopback), take about 100 s together, and run only when
// DELTAQ_SCALING_E2E is set (or `make e2e-scaling`, and `make e2e`):
//
//	make build
//	DELTAQ_SCALING_E2E=1 go test -count=1 -v ./examples/scaling/e2e/
//
// OTELCOL names another collector binary (an absolute path); by default
// bin/otelcol-deltaq of the repository.
package e2e
