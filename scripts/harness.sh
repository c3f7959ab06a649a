# Copyright The deltaq-otel Authors
# SPDX-License-Identifier: Apache-2.0
#
# The process harness of the shell end-to-end tests (scripts/e2e.sh,
# scripts/e2e-slo.sh), sourced after they define D (the run's directory),
# log and fail. Every process started is stopped on exit, last first, and
# on a failure the last lines of each process's log are shown.

pids=()
names=()
stop_all() {
  local rc=$? i p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -0 "$p" 2>/dev/null || continue
    kill -TERM "$p" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      log "${names[i]} (pid $p) ignored SIGTERM: killing it"
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$D"/*.log; do
      echo "----- last lines of $f"
      tail -n 25 "$f"
    done
  fi
  exit "$rc"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: runs CMD in the background, output to $D/NAME.log.
start() {
  local name=$1
  shift
  "$@" >"$D/$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
}
pid_of() {
  local i
  for i in "${!names[@]}"; do
    if [ "${names[i]}" = "$1" ]; then echo "${pids[i]}"; fi
  done
}

# free_ports N: N consecutive loopback ports nobody listens on, below the
# kernel's ephemeral range: neither a listener on port 0 nor an outgoing
# connection takes one in the moment before a program binds it, and the Go
# end-to-end tests that run beside the scripts take theirs above that range
# (internal/e2etest, Ports), so the two never pick the same port.
free_ports() {
  local base p ok low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || low=32768
  [[ $low =~ ^[0-9]+$ ]] && [ "$low" -gt $((10000 + 1000 + $1)) ] || low=32768
  for _ in $(seq 50); do
    base=$((10000 + RANDOM % (low - 10000 - $1)))
    ok=1
    for ((p = base; p < base + $1; p++)); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then ok=0; break; fi
    done
    [ "$ok" -eq 1 ] && { seq "$base" $((base + $1 - 1)); return; }
  done
}

# stack_ports: the loopback addresses of the collector stack of a run, on
# five free ports: OTLP_GRPC and OTLP_HTTP (the collector's receivers),
# TELEMETRY (its own metrics, a port alone), PROM (Prometheus) and AM
# (Alertmanager).
# shellcheck disable=SC2034 # the sourcing script reads them
stack_ports() {
  mapfile -t P < <(free_ports 5)
  [ "${#P[@]}" -eq 5 ] || fail "no 5 free loopback ports found"
  OTLP_GRPC=127.0.0.1:${P[0]}
  OTLP_HTTP=127.0.0.1:${P[1]}
  TELEMETRY=${P[2]}
  PROM=127.0.0.1:${P[3]}
  AM=127.0.0.1:${P[4]}
}

# wait_for WHAT SECONDS CMD...: retries CMD every half second.
wait_for() {
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${secs}s waiting for $what"
    sleep 0.5
  done
}
alive() {
  local p
  p=$(pid_of "$1")
  kill -0 "$p" 2>/dev/null || fail "$1 exited (see $D/$1.log)"
}
tcp_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
