#!/usr/bin/env bash
# make load: the throughput of one collector with the deltaq connector alone
# (its probes matched in the spans), with the deltaq processor and
# connector, and with contrib's spanmetrics connector instead, one after the
# other on the same cores. For each of
# examples/demo/collector-throughput-connector.yaml (connector),
# examples/demo/collector-throughput.yaml (deltaq) and
# examples/demo/collector-spanmetrics.yaml (spanmetrics) it starts
# bin/otelcol-deltaq on loopback, drives it with dqload (minimal spans,
# counted only when the collector acknowledges them; dqload also samples
# the collector's CPU and memory) and prints the receiver's own count of
# accepted and refused spans; then a table of both. Each collector is
# stopped by its pid, also on failure.
#
# Environment: BIN (default bin); LOAD_DIR, where the outputs go (default
# build/load); LOAD_ARGS, dqload flags for each run
# (default "-duration 20s -warmup 3s"), e.g. LOAD_ARGS="-duration 10m" for
# the memory-flat run; LOAD_RUNS, the runs (default "connector deltaq
# spanmetrics").
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
D=${LOAD_DIR:-build/load}
mkdir -p "$D"
for b in otelcol-deltaq dqload; do
  [ -x "$BIN/$b" ] || { echo "load: $BIN/$b missing (make build commands)" >&2; exit 1; }
done

collector=
stop() {
  if [ -n "$collector" ]; then
    kill -TERM "$collector" 2>/dev/null || true
    wait "$collector" 2>/dev/null || true
    collector=
  fi
}
trap stop EXIT

# run NAME CONFIG: one measurement; dqload's output goes to $D/NAME.out.
run() {
  local name=$1 config=$2 base busy p
  # Two consecutive free loopback ports.
  for _ in $(seq 50); do
    base=$((20000 + RANDOM % 30000))
    busy=0
    for p in $base $((base + 1)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; fi
    done
    [ "$busy" -eq 0 ] && break
  done
  export DELTAQ_OTLP_GRPC=127.0.0.1:$base DELTAQ_TELEMETRY_PORT=$((base + 1))

  echo "== $name: $config"
  "$BIN/otelcol-deltaq" --config="$config" >"$D/$name-collector.log" 2>&1 &
  collector=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$base") 2>/dev/null && break
    kill -0 "$collector" 2>/dev/null || { echo "load: the collector exited:" >&2; tail -20 "$D/$name-collector.log" >&2; exit 1; }
    sleep 0.1
  done
  # shellcheck disable=SC2086 # LOAD_ARGS is a list of flags
  "$BIN/dqload" -endpoint "$DELTAQ_OTLP_GRPC" -collector-pid "$collector" -report 0 ${LOAD_ARGS:--duration 20s -warmup 3s} | tee "$D/$name.out"
  echo "collector's own count (warm-up included):"
  curl -fsS "http://127.0.0.1:$DELTAQ_TELEMETRY_PORT/metrics" |
    grep -E '^otelcol_(receiver_(accepted|refused)_spans|connector_deltaq_instances|processor_deltaq_instances)' | grep -v '_bucket' || true
  stop
}

declare -A configs=(
  [connector]=examples/demo/collector-throughput-connector.yaml
  [deltaq]=examples/demo/collector-throughput.yaml
  [spanmetrics]=examples/demo/collector-spanmetrics.yaml
)
runs=${LOAD_RUNS:-connector deltaq spanmetrics}
for name in $runs; do
  [ -n "${configs[$name]:-}" ] || { echo "load: unknown run $name (connector, deltaq, spanmetrics)" >&2; exit 1; }
  run "$name" "${configs[$name]}"
done

# The table, from dqload's summary lines:
#   total: N spans acked, F failed in Ts:   R spans/s acked  failed F  mean request M ms  collector rss X MiB cpu C cores
#   collector rss: first A MiB, last B MiB, max C MiB
echo
printf '%-12s %14s %8s %16s %14s %14s\n' path "spans/s acked" failed "collector cores" "rss last MiB" "rss max MiB"
for name in $runs; do
  awk -v name="$name" '
    /^total:/ {
      for (i = 1; i <= NF; i++) {
        if ($i == "spans/s") rate = $(i - 1)
        if ($i == "cores") cpu = $(i - 1)
      }
      failed = $5
    }
    /^collector rss:/ { last = $7; maxrss = $10 }
    END { printf "%-12s %14s %8s %16s %14s %14s\n", name, rate, failed, cpu, last, maxrss }
  ' "$D/$name.out"
done
