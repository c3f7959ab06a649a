#!/usr/bin/env bash
# make demo: the built collector, the synthetic M/M/1/K workload and the
# terminal oscilloscope, on loopback. The scope starts first (the collector
# sends to it), then the collector, then the workload; each is waited for
# before the next starts. Ctrl-C (or SIGTERM to this script) stops all three,
# the workload first, within 5 s; should one of them exit by itself, the
# others are stopped and its last log lines printed.
#
# The workload runs at its defaults (λ = 100/s, μ₁ = μ₂ = 200/s, K = 10); from
# 30 s to 50 s worker_2 is slowed four times, which breaks the QTAs of worker_2
# and job (see examples/demo/collector.yaml) and fires triggers. Send the
# workload SIGUSR1 (the command is printed below) to toggle the slow-down.
#
# Environment: BIN (default bin), DEMO_LOGS (default build/demo), the DELTAQ_*
# addresses of examples/demo/collector.yaml, DELTAQ_SCOPE_HTTP (the browser
# view, default 127.0.0.1:8327), WORKLOAD_ARGS (extra dqworkload flags).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
export DELTAQ_OTLP_GRPC=${DELTAQ_OTLP_GRPC:-127.0.0.1:4317}
export DELTAQ_OTLP_HTTP=${DELTAQ_OTLP_HTTP:-127.0.0.1:4318}
export DELTAQ_SCOPE=${DELTAQ_SCOPE:-127.0.0.1:4327}
export DELTAQ_TELEMETRY_PORT=${DELTAQ_TELEMETRY_PORT:-8888}
scope_http=${DELTAQ_SCOPE_HTTP:-127.0.0.1:8327}
logs=${DEMO_LOGS:-build/demo}

for b in otelcol-deltaq dqworkload deltaq; do
  [ -x "$BIN/$b" ] || { echo "demo: $BIN/$b missing: run make build commands" >&2; exit 1; }
done

# accepting ADDR: something accepts TCP connections at host:port ADDR.
accepting() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

# Every address the demo listens on must be free before anything starts: a
# collector that cannot bind its port exits, and the workload would send to
# whatever holds it.
busy=0
while read -r var addr what; do
  if accepting "$addr"; then
    echo "demo: $addr ($what) is in use by another program: stop it, or set $var to a free address" >&2
    busy=1
  fi
done <<EOF
DELTAQ_SCOPE $DELTAQ_SCOPE the scope's OTLP/gRPC port
DELTAQ_SCOPE_HTTP $scope_http the scope's browser view
DELTAQ_OTLP_GRPC $DELTAQ_OTLP_GRPC the collector's OTLP/gRPC port
DELTAQ_OTLP_HTTP $DELTAQ_OTLP_HTTP the collector's OTLP/HTTP port
DELTAQ_TELEMETRY_PORT 127.0.0.1:$DELTAQ_TELEMETRY_PORT the collector's own metrics
EOF
[ "$busy" = 0 ] || exit 1
mkdir -p "$logs"

pids=() names=() logfiles=()
# stop: SIGTERM to the programs started, the last started first, so that the
# workload's last spans still reach the collector and its last windows the
# scope; each gets its share of 4.5 s (in tenths: workload 25, collector 15,
# scope 5), and SIGKILL ends whatever still runs after it. A second Ctrl-C or
# SIGTERM meanwhile is ignored: it would end this script with the programs
# still running.
stop() {
  local i p n
  local -a share=(5 15 25)
  trap '' INT TERM
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -TERM "$p" 2>/dev/null || continue
    for ((n = 0; n < ${share[i]:-5}; n++)); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# exited: stops the demo saying which program exited, with its log's last lines.
exited() {
  echo "demo: the $1 exited; the last lines of $2:" >&2
  tail -20 "$2" >&2
  exit 1
}

# start NAME OUT COMMAND...: runs COMMAND in the background, its output to the
# file OUT, or with OUT "-" its standard output to the terminal and its errors
# to $logs/NAME.log.
start() {
  local name=$1 log=$2
  shift 2
  if [ "$log" = - ]; then
    log=$logs/$name.log
    "$@" 2>"$log" &
  else
    "$@" >"$log" 2>&1 &
  fi
  pids+=($!) names+=("$name") logfiles+=("$log")
  echo $! >"$logs/$name.pid"
}

# await ADDR: waits until something accepts at ADDR; stops the demo if a
# program started exits meanwhile, or after 10 s.
await() {
  local i
  for i in $(seq 100); do
    accepting "$1" && return 0
    check
    sleep 0.1
  done
  echo "demo: nothing accepts at $1 after 10 s" >&2
  exit 1
}

# check: stops the demo if a program it started has exited.
check() {
  local i
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null || exited "${names[$i]}" "${logfiles[$i]}"
  done
}

# Said before the scope takes the terminal over.
echo "demo: browser view on http://$scope_http/"
echo "demo: logs in $logs/ (collector.log, workload.log, scope.log)"
echo "demo: toggle the slow-down of worker_2 with: kill -USR1 \$(cat $logs/workload.pid)"
sleep 1

# The oscilloscope, in this terminal and in a browser, from one process.
start scope - "$BIN/deltaq" scope --listen "$DELTAQ_SCOPE" --http "$scope_http"
await "$DELTAQ_SCOPE"
await "$scope_http"

start collector "$logs/collector.log" "$BIN/otelcol-deltaq" --config=examples/demo/collector.yaml
await "$DELTAQ_OTLP_GRPC"

# A short drain and close: the demo stops within 5 s of Ctrl-C.
# shellcheck disable=SC2086 # WORKLOAD_ARGS is a list of flags
start workload "$logs/workload.log" "$BIN/dqworkload" --endpoint "$DELTAQ_OTLP_GRPC" \
  --slow-after 30s --slow-for 20s --drain 1s --close-timeout 1s ${WORKLOAD_ARGS:-}

while true; do
  check
  sleep 0.2
done
