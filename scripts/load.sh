#!/usr/bin/env bash
# make load: the throughput of one collector with the deltaq processor and
# exporter. Starts bin/otelcol-deltaq with
# examples/demo/collector-throughput.yaml on loopback, drives it with dqload
# (minimal spans, counted only when the collector acknowledges them) and
# prints dqload's figures, the collector's memory, and the receiver's own
# count of accepted and refused spans. The collector is stopped by its pid,
# also on failure.
#
# Environment: BIN (default bin); LOAD_ARGS, dqload flags (default
# "-duration 30s -warmup 5s"), e.g. LOAD_ARGS="-duration 10m" for the
# memory-flat run.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
D=build/load
mkdir -p "$D"
for b in otelcol-deltaq dqload; do
  [ -x "$BIN/$b" ] || { echo "load: $BIN/$b missing (make build commands)" >&2; exit 1; }
done

# Three consecutive free loopback ports.
for _ in $(seq 50); do
  base=$((20000 + RANDOM % 30000))
  busy=0
  for p in $base $((base + 1)) $((base + 2)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; fi
  done
  [ "$busy" -eq 0 ] && break
done
export DELTAQ_OTLP_GRPC=127.0.0.1:$base DELTAQ_LOOPBACK=127.0.0.1:$((base + 1)) DELTAQ_TELEMETRY_PORT=$((base + 2))

"$BIN/otelcol-deltaq" --config=examples/demo/collector-throughput.yaml >"$D/collector.log" 2>&1 &
collector=$!
stop() {
  kill -TERM "$collector" 2>/dev/null || true
  wait "$collector" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$base") 2>/dev/null && break
  kill -0 "$collector" 2>/dev/null || { echo "load: the collector exited:" >&2; tail -20 "$D/collector.log" >&2; exit 1; }
  sleep 0.1
done

# shellcheck disable=SC2086 # LOAD_ARGS is a list of flags
"$BIN/dqload" -endpoint "$DELTAQ_OTLP_GRPC" -collector-pid "$collector" ${LOAD_ARGS:--duration 30s -warmup 5s}
echo "collector's own count (warm-up included):"
curl -fsS "http://127.0.0.1:$DELTAQ_TELEMETRY_PORT/metrics" | grep -E '^otelcol_(receiver_(accepted|refused)_spans|deltaq_)' | grep -v '_bucket' || true
