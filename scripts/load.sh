#!/usr/bin/env bash
# make load: the throughput of one collector with the deltaq connector alone
# (its probes matched in the spans), with the connector taking start events
# too (real-time timeouts), with contrib's spanmetrics connector instead, and
# with no ΔQ component at all (the ceiling), one after the other on the same
# cores. For each of examples/demo/collector-throughput.yaml
# (connector), collector-throughput-starts.yaml (starts: dqload sends each
# request's start events first, one log record a span,
# -start-events=single; starts-batch: the same in the batch form, one record
# a span name, -start-events=batch; starts-elided: the batch form for the
# spans an SDK draining its starts every 10 ms announces, those still
# running at its drain, about 43 % of them, the others remembered as ended
# with no instance, -start-drain=10ms), collector-spanmetrics.yaml
# (spanmetrics) and collector-ceiling.yaml (ceiling: the same receiver and
# debug exporter, nothing between) it starts bin/otelcol-deltaq on
# loopback, drives it with dqload (minimal spans, counted only when the
# collector acknowledges them; dqload also samples the collector's CPU and
# memory) and prints the receiver's own count of accepted and refused spans
# and log records, and the connector's of start events and timeouts; then a
# table of all. Each collector is stopped by its pid, also on failure.
#
# Environment: BIN (default bin); LOAD_DIR, where the outputs go (default
# build/load); LOAD_ARGS, dqload flags for each run
# (default "-duration 20s -warmup 3s"), e.g. LOAD_ARGS="-duration 10m" for
# the memory-flat run; LOAD_RUNS, the runs (default "connector starts
# starts-batch starts-elided spanmetrics ceiling"; deltaq, the deltaq
# processor in front of the connector, collector-throughput-processor.yaml,
# is not among them since the connector alone is the main path, nor
# ceiling-starts and ceiling-starts-batch, the ceiling sent start events too (single, batch),
# which nothing reads: what receiving them costs; all may be named); LOAD_ROUNDS,
# how many times the runs are repeated, in turn (default 1). The machine's speed
# drifts from one minute to the next, so a ratio between two runs is only as
# good as the minute they shared: each run's spans/s is shown as a fraction
# of the ceiling's and a multiple of spanmetrics' in the same round and,
# with several rounds, the median of each ratio.
#
# LOAD_PIN (default auto) keeps the generator off the collector's cores,
# as if it ran on another machine: auto puts the collector on the first
# half of the CPUs this script may use and dqload on the others (Go sizes
# GOMAXPROCS to them), or shares all of them when there is only one;
# "C:L" gives the lists to taskset (e.g. 0:1, 0-1:2-3); off shares all
# cores. Sharing biases the comparison: dqload takes from the collector
# what it needs to drive it, more from a faster one.
# LOAD_GATES: collector feature gates for every run, e.g.
# +pdata.useProtoPooling (pdata's pools for the receiver's decoding).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
D=${LOAD_DIR:-build/load}
mkdir -p "$D"
for b in otelcol-deltaq dqload; do
  [ -x "$BIN/$b" ] || { echo "load: $BIN/$b missing (make build commands)" >&2; exit 1; }
done

# cpuList LIST: the CPUs of a taskset list such as 0-3,6, one a line.
cpuList() {
  local part
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
  done
}
pin=${LOAD_PIN:-auto}
ccpus= lcpus=
case $pin in
  off) ;;
  auto)
    mapfile -t cpus < <(cpuList "$(taskset -cp $$ | sed 's/.*: *//')")
    if [ "${#cpus[@]}" -ge 2 ]; then
      half=$((${#cpus[@]} / 2))
      ccpus=$(IFS=,; echo "${cpus[*]:0:half}")
      lcpus=$(IFS=,; echo "${cpus[*]:half}")
    fi
    ;;
  *:*) ccpus=${pin%%:*} lcpus=${pin#*:} ;;
  *) echo "load: LOAD_PIN must be auto, off or COLLECTOR_CPUS:LOAD_CPUS, not $pin" >&2; exit 1 ;;
esac
# onCPUs LIST CMD...: CMD on the CPUs of LIST, or anywhere when LIST is empty.
onCPUs() {
  local cpus=$1
  shift
  if [ -n "$cpus" ]; then exec taskset -c "$cpus" "$@"; else exec "$@"; fi
}
if [ -n "$ccpus" ]; then
  echo "load: collector on CPUs $ccpus, dqload on $lcpus (LOAD_PIN=off to share them)"
else
  echo "load: collector and dqload share the CPUs"
fi
gates=()
[ -z "${LOAD_GATES:-}" ] || { gates=(--feature-gates="$LOAD_GATES"); echo "load: feature gates $LOAD_GATES"; }

collector=
stop() {
  if [ -n "$collector" ]; then
    kill -TERM "$collector" 2>/dev/null || true
    wait "$collector" 2>/dev/null || true
    collector=
  fi
}
trap stop EXIT

# run NAME CONFIG OUT: one measurement; dqload's output goes to $D/OUT.out.
run() {
  local name=$1 config=$2 out=$3 base busy p
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

  echo "== $out: $config"
  (onCPUs "$ccpus" "$BIN/otelcol-deltaq" --config="$config" "${gates[@]}") >"$D/$out-collector.log" 2>&1 &
  collector=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$base") 2>/dev/null && break
    kill -0 "$collector" 2>/dev/null || { echo "load: the collector exited:" >&2; tail -20 "$D/$out-collector.log" >&2; exit 1; }
    sleep 0.1
  done
  # shellcheck disable=SC2086 # LOAD_ARGS is a list of flags
  (onCPUs "$lcpus" "$BIN/dqload" -endpoint "$DELTAQ_OTLP_GRPC" -collector-pid "$collector" -report 0 ${flags[$name]:-} ${LOAD_ARGS:--duration 20s -warmup 3s}) |
    tee "$D/$out.out"
  echo "collector's own count (warm-up included):"
  curl -fsS "http://127.0.0.1:$DELTAQ_TELEMETRY_PORT/metrics" |
    grep -E '^otelcol_(receiver_(accepted|refused)_(spans|log_records)|(connector|processor)_deltaq_(instances|start_events|start_timeouts|late_spans))' |
    grep -v '_bucket' || true
  stop
}

declare -A configs=(
  [connector]=examples/demo/collector-throughput.yaml
  [starts]=examples/demo/collector-throughput-starts.yaml
  [starts-batch]=examples/demo/collector-throughput-starts.yaml
  [starts-elided]=examples/demo/collector-throughput-starts.yaml
  [deltaq]=examples/demo/collector-throughput-processor.yaml
  [spanmetrics]=examples/demo/collector-spanmetrics.yaml
  [ceiling]=examples/demo/collector-ceiling.yaml
  [ceiling-starts]=examples/demo/collector-ceiling.yaml
  [ceiling-starts-batch]=examples/demo/collector-ceiling.yaml
)
# dqload's own flags for a run.
declare -A flags=([starts]=-start-events=single [ceiling-starts]=-start-events=single
  [starts-batch]=-start-events=batch [ceiling-starts-batch]=-start-events=batch
  [starts-elided]="-start-events=batch -start-drain=10ms")
runs=${LOAD_RUNS:-connector starts starts-batch starts-elided spanmetrics ceiling}
rounds=${LOAD_ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "load: LOAD_ROUNDS must be a positive whole number, not $rounds" >&2; exit 1; }
for name in $runs; do
  [ -n "${configs[$name]:-}" ] || { echo "load: unknown run $name (connector, starts, starts-batch, starts-elided, deltaq, spanmetrics, ceiling, ceiling-starts, ceiling-starts-batch)" >&2; exit 1; }
done
# outName NAME ROUND: the name of a run's outputs, NAME alone in a single
# round.
outName() { if [ "$rounds" -eq 1 ]; then echo "$1"; else echo "$1-$2"; fi; }
for r in $(seq "$rounds"); do
  for name in $runs; do
    run "$name" "${configs[$name]}" "$(outName "$name" "$r")"
  done
done

# The table, from dqload's summary lines:
#   total: N spans acked, F failed in Ts:   R spans/s acked  failed F  mean request M ms  collector rss X MiB cpu C cores
#   collector rss: first A MiB, last B MiB, max C MiB
# and, when the ceiling or spanmetrics ran, each run's spans/s as a fraction
# of the ceiling's, and its spans/s and spans per core-second of collector
# CPU as multiples of spanmetrics', in the same round. printf pads by bytes:
# the headers with a × (two bytes) are one wider.
echo
printf '%-22s %14s %8s %16s %14s %14s %10s %14s %11s\n' run "spans/s acked" failed "collector cores" "rss last MiB" "rss max MiB" \
  "× ceiling" "× spanmetrics" "× per core"
summary() {
  awk '
    /^total:/ {
      for (i = 1; i <= NF; i++) {
        if ($i == "spans/s") rate = $(i - 1)
        if ($i == "cores") cpu = $(i - 1)
      }
      failed = $5
    }
    /^collector rss:/ { last = $7; maxrss = $10 }
    END { print rate, failed, cpu, last, maxrss }
  ' "$1"
}
# ratio A B: A / B to two places, - when either is missing or 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f\n", a / b; else print "-" }'; }
# The ratios of each run over the rounds, by "NAME KIND".
declare -A ratios=()
for r in $(seq "$rounds"); do
  ceil_rate= sm_rate= sm_cpu=
  [[ " $runs " != *" ceiling "* ]] || read -r ceil_rate _ < <(summary "$D/$(outName ceiling "$r").out")
  [[ " $runs " != *" spanmetrics "* ]] || read -r sm_rate _ sm_cpu _ < <(summary "$D/$(outName spanmetrics "$r").out")
  for name in $runs; do
    out=$(outName "$name" "$r")
    read -r rate failed cpu last maxrss < <(summary "$D/$out.out")
    xc=- xs=- xp=-
    [ "$name" = ceiling ] || xc=$(ratio "$rate" "$ceil_rate")
    if [ "$name" != spanmetrics ]; then
      xs=$(ratio "$rate" "$sm_rate")
      xp=$(ratio "$(ratio "$rate" "$cpu")" "$(ratio "$sm_rate" "$sm_cpu")")
    fi
    [ "$xc" = - ] || ratios["$name ceiling"]+="$xc "
    [ "$xs" = - ] || ratios["$name spanmetrics"]+="$xs "
    [ "$xp" = - ] || ratios["$name percore"]+="$xp "
    printf '%-22s %14s %8s %16s %14s %14s %9s %13s %10s\n' "$out" "$rate" "$failed" "$cpu" "$last" "$maxrss" "$xc" "$xs" "$xp"
  done
done
# median WHAT NAME RATIO...: the median and range of a run's ratios.
median() {
  local what=$1 name=$2
  shift 2
  printf '%s\n' "$@" | sort -g | awk -v name="$name" -v what="$what" '{ v[NR] = $1 } END {
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%s: median %.2f × %s over %d rounds (%.2f–%.2f)\n", name, m, what, NR, v[1], v[NR]
  }'
}
if [ "$rounds" -gt 1 ]; then
  echo
  for name in $runs; do
    # shellcheck disable=SC2086 # the ratios are lists of numbers
    [ -z "${ratios["$name ceiling"]:-}" ] || median "the ceiling's spans/s" "$name" ${ratios["$name ceiling"]}
    # shellcheck disable=SC2086
    [ -z "${ratios["$name spanmetrics"]:-}" ] || median "spanmetrics' spans/s" "$name" ${ratios["$name spanmetrics"]}
    # shellcheck disable=SC2086
    [ -z "${ratios["$name percore"]:-}" ] || median "spanmetrics' spans per core-second" "$name" ${ratios["$name percore"]}
  done
fi
