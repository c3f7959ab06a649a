// Copyright The deltaq-otel Authors
// SPDX-License-Identifier: Apache-2.0

// A client of the OpenTelemetry JS SDK, with the SDK's own consistent
// probability sampler (@opentelemetry/sampler-composite), which records its
// threshold in each sampled span's tracestate (ot=th:…). It starts spans
// named "work" for two phases: fast ones, then a phase in which every
// other span is slowed; only the sampled ones are exported, over
// OTLP/HTTP protobuf. It writes to its output file, as JSON, how many
// spans it started per phase and outcome (the unsampled totals), and the
// trace id, span id and delay of every span the sampler kept.
//
//   node client.mjs URL PROBABILITY FAST_SECONDS SLOW_SECONDS RATE OUT.json

import { writeFileSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { createCompositeSampler, createComposableProbabilitySampler } from '@opentelemetry/sampler-composite';

const [url, probability, fastSeconds, slowSeconds, rate, out] = process.argv.slice(2);
const p = Number(probability);

const exporter = new OTLPTraceExporter({ url });
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'sampling-e2e' }),
  sampler: createCompositeSampler(createComposableProbabilitySampler(p)),
  spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 200, maxQueueSize: 100000, maxExportBatchSize: 2000 })],
});
const tracer = provider.getTracer('sampling-e2e');

// [seconds, nanoseconds] of a time in nanoseconds (a BigInt): a nanosecond
// timestamp does not fit a JS number.
const hr = (ns) => [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];

const totals = { fast: { success: 0, failure: 0 }, slow: { success: 0, failure: 0 } };
const sampled = [];
let n = 0;

// One span ending now, of the given delay in milliseconds.
function emit(phase, delayMs, failed) {
  const end = BigInt(Date.now()) * 1_000_000n;
  const start = end - BigInt(Math.round(delayMs * 1e6));
  const span = tracer.startSpan('work', { startTime: hr(start) });
  if (failed) {
    span.setStatus({ code: 2, message: 'failed' });
  }
  totals[phase][failed ? 'failure' : 'success']++;
  const ctx = span.spanContext();
  if (span.isRecording()) {
    sampled.push({ phase, traceId: ctx.traceId, spanId: ctx.spanId, delayMs, failed, traceState: ctx.traceState ? ctx.traceState.serialize() : '' });
  }
  span.end(hr(end));
}

async function phase(name, seconds) {
  const perTick = Math.max(1, Math.round(Number(rate) / 20));
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    for (let i = 0; i < perTick; i++) {
      n++;
      // Fast: 2 to 20 ms. Slow phase: every other span 60 to 95 ms.
      let d = 2 + (n * 7919 % 1800) / 100;
      if (name === 'slow' && n % 2 === 0) {
        d = 60 + (n * 104729 % 3500) / 100;
      }
      emit(name, d, n % 50 === 0);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

await phase('fast', Number(fastSeconds));
await phase('slow', Number(slowSeconds));
await provider.forceFlush();
await provider.shutdown();
writeFileSync(out, JSON.stringify({ probability: p, totals, sampled }));
