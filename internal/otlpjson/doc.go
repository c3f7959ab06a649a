// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// Package otlpjson holds the cross-language check of the OTLP/HTTP JSON that
// the Erlang library dqsd_otel writes: its test has the library export a
// fixed set of spans and their "deltaq.span.start" events to a local HTTP
// server and decodes every request with the collector's own pdata
// unmarshalers (ptraceotlp, plogotlp), so that an encoding the collector
// would misread fails here rather than in a deployment.
//
// The package has no code of its own; the test needs Erlang/OTP (erl and
// erlc on PATH) and is skipped without it.
package otlpjson
