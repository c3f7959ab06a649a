#!/usr/bin/env bash
# make demo: the built collector, the synthetic M/M/1/K workload and the
# terminal oscilloscope, on loopback. The scope runs in the foreground; when it
# ends (Ctrl-C), the collector and the workload are stopped too.
#
# The workload runs at its defaults (λ = 100/s, μ₁ = μ₂ = 200/s, K = 10); from
# 30 s to 50 s worker_2 is slowed four times, which breaks the QTAs of worker_2
# and job (see examples/demo/collector.yaml) and fires triggers. Send the
# workload SIGUSR1 (the command is printed below) to toggle the slow-down.
#
# Environment: BIN (default bin), the DELTAQ_* addresses of
# examples/demo/collector.yaml, WORKLOAD_ARGS (extra dqworkload flags).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
export DELTAQ_OTLP_GRPC=${DELTAQ_OTLP_GRPC:-127.0.0.1:4317}
export DELTAQ_SCOPE=${DELTAQ_SCOPE:-127.0.0.1:4327}
logs=build/demo
mkdir -p "$logs"

for b in otelcol-deltaq dqworkload deltaq; do
  [ -x "$BIN/$b" ] || { echo "demo: $BIN/$b missing: run make build commands" >&2; exit 1; }
done

pids=()
stop() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM

"$BIN/otelcol-deltaq" --config=examples/demo/collector.yaml >"$logs/collector.log" 2>&1 &
pids+=($!)
# Wait for the collector's OTLP port, or its early death.
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/${DELTAQ_OTLP_GRPC%:*}/${DELTAQ_OTLP_GRPC##*:}") 2>/dev/null; then break; fi
  kill -0 "${pids[0]}" 2>/dev/null || { echo "demo: the collector exited:" >&2; tail -20 "$logs/collector.log" >&2; exit 1; }
  sleep 0.1
done

# shellcheck disable=SC2086 # WORKLOAD_ARGS is a list of flags
"$BIN/dqworkload" --endpoint "$DELTAQ_OTLP_GRPC" --slow-after 30s --slow-for 20s ${WORKLOAD_ARGS:-} \
  >"$logs/workload.log" 2>&1 &
pids+=($!)
echo "demo: collector log $logs/collector.log, workload log $logs/workload.log"
echo "demo: toggle the slow-down of worker_2 with: kill -USR1 $!"
sleep 1

# The same oscilloscope in a browser, from the same process.
scope_http=${DELTAQ_SCOPE_HTTP:-127.0.0.1:8327}
echo "demo: browser view on http://$scope_http/"
"$BIN/deltaq" scope --listen "$DELTAQ_SCOPE" --http "$scope_http"
