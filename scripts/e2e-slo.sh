#!/usr/bin/env bash
# make e2e-slo: the error-budget rules of `deltaq slo` end to end, against real
# Prometheus and Alertmanager on loopback, with the windows scaled down from
# days to seconds.
#
# Generates the rules from examples/demo/collector.yaml with a 20-minute period
# and tiers 14.4× over 30s/6s and 6× over 2m/15s (critical: a page), 3× over 4m/30s and 1×
# over 8m/1m (warning: a ticket), evaluated every second; starts Prometheus with them,
# Alertmanager with the shipped configuration, the built collector (the demo's
# configuration with collector-prometheus.yaml over it) and the demo workload;
# then asserts:
#   1. every objective of the demo has an error ratio and a budget remaining;
#   2. the healthy phase (35 s, longer than the longest page window) raises no
#      page, pending or firing;
#   3. slowing worker_2 (μ₂ = 50/s < λ = 100/s) pages in Alertmanager for
#      worker_2 and job, and never for worker_1.
# Everything it started is stopped by process id when it exits. Logs stay in
# build/e2e-slo. Environment: BIN (default bin), E2E_TIMEOUT (seconds to wait
# for the page, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
WAIT=${E2E_TIMEOUT:-60}
D=$PWD/build/e2e-slo
rm -rf "$D"
mkdir -p "$D/rules"

log() { printf 'e2e-slo %(%H:%M:%S)T %s\n' -1 "$*"; }
fail() {
  log "FAIL: $*"
  exit 1
}
for t in prometheus prometheus-alertmanager promtool jq curl; do
  command -v "$t" >/dev/null || fail "$t missing (Debian: prometheus prometheus-alertmanager jq curl; scripts/e2e.sh installs them)"
done
for b in otelcol-deltaq dqworkload deltaq; do
  [ -x "$BIN/$b" ] || fail "$BIN/$b missing (make build commands)"
done

# --- processes ------------------------------------------------------------------
# shellcheck source=scripts/harness.sh
. scripts/harness.sh

stack_ports

# --- the rules, scaled down ----------------------------------------------------
TIERS=critical:14.4:30s:6s:2s,critical:6:2m:15s:3s,warning:3:4m:30s:5s,warning:1:8m:1m:10s
DELTAQ_DIAGRAM=examples/demo/mm1k.dq "$BIN/deltaq" slo --config examples/demo/collector.yaml \
  --period 20m --tiers "$TIERS" --interval 1s -o "$D/rules/deltaq-slo.yml" 2>"$D/slo.log" ||
  fail "deltaq slo: $(cat "$D/slo.log")"
promtool check rules "$D/rules/deltaq-slo.yml" >"$D/promtool.log" 2>&1 || fail "promtool check rules: $(cat "$D/promtool.log")"
cat >"$D/prometheus.yml" <<EOF
global:
  evaluation_interval: 1s
rule_files:
  - $D/rules/deltaq-slo.yml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ["$AM"]
EOF
sed -e "s|http://127.0.0.1:5001/|http://127.0.0.1:9/|" examples/alertmanager/alertmanager.yml >"$D/alertmanager.yml"

start prometheus prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/prometheus-data" \
  --web.listen-address="$PROM" --web.enable-remote-write-receiver
start alertmanager prometheus-alertmanager --config.file="$D/alertmanager.yml" --storage.path="$D/alertmanager-data" \
  --web.listen-address="$AM" --cluster.listen-address=
wait_for "Prometheus ready" 30 curl -fsS "http://$PROM/-/ready"
wait_for "Alertmanager ready" 30 curl -fsS "http://$AM/-/ready"

DELTAQ_OTLP_GRPC=$OTLP_GRPC DELTAQ_OTLP_HTTP=$OTLP_HTTP DELTAQ_PROMETHEUS=http://$PROM \
  DELTAQ_TELEMETRY_PORT=$TELEMETRY DELTAQ_DIAGRAM=examples/demo/mm1k.dq \
  start collector "$BIN/otelcol-deltaq" --config=examples/demo/collector.yaml \
  --config=examples/demo/collector-prometheus.yaml
wait_for "collector OTLP port" 30 tcp_open "$OTLP_GRPC"
start workload "$BIN/dqworkload" --endpoint "$OTLP_GRPC" --rate 100 --mu1 200 --mu2 200 --k 10 \
  --slow-worker 2 --slow-factor 4 --report 5s --seed 42
WORKLOAD=${pids[${#pids[@]} - 1]}
log "Prometheus $PROM, Alertmanager $AM, collector $OTLP_GRPC"

# prom_count EXPR: the number of series of an instant query.
prom_count() {
  local out
  out=$(curl -fsS --get "http://$PROM/api/v1/query" --data-urlencode "query=$1") || return 1
  jq -e '.status == "success"' <<<"$out" >/dev/null || return 1
  jq '.data.result | length' <<<"$out"
}
# prom_probes EXPR: the sorted deltaq_probe values of an instant query.
prom_probes() {
  curl -fsS --get "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
    jq -r '[.data.result[].metric.deltaq_probe] | sort | unique | join(" ")'
}

# --- 1. every objective recorded ---------------------------------------------------
want=$(grep -c '^      - record: deltaq:slo_error_budget_remaining:ratio$' "$D/rules/deltaq-slo.yml")
recorded() {
  [ "$(prom_count 'deltaq:slo_error_budget_remaining:ratio')" -eq "$want" ] &&
    [ "$(prom_count 'deltaq:slo_error_ratio:rate6s')" -eq "$want" ]
}
wait_for "error ratio and budget remaining of all $want objectives" 40 recorded
log "ok: $want objectives recorded: $(prom_probes 'deltaq:slo_error_budget_remaining:ratio')"

# --- 2. the healthy phase pages nobody ---------------------------------------------------
healthy_from=$SECONDS
sleep 35
pages=$(prom_probes "count_over_time(ALERTS{alertname=\"DeltaQErrorBudgetBurn\", severity=\"critical\"}[$((SECONDS - healthy_from + 5))s])") ||
  fail "Prometheus query"
[ -z "$pages" ] || fail "page (pending or firing) in the healthy phase for: $pages"
log "ok: no page, pending or firing, over $((SECONDS - healthy_from))s of normal load"

# --- 3. the slow-down pages for worker_2 and job, not worker_1 ------------------------------------
kill -USR1 "$WORKLOAD"
slowed=$SECONDS
log "worker_2 slowed (μ₂ = 50/s < λ = 100/s)"
paged() {
  curl -fsS --get "http://$AM/api/v2/alerts" --data-urlencode 'filter=alertname="DeltaQErrorBudgetBurn"' \
    --data-urlencode 'filter=severity="critical"' |
    jq -r '[.[] | select(.status.state == "active") | .labels.deltaq_probe] | sort | unique | join(" ")'
}
both() { p=$(paged) && [[ " $p " == *" worker_2 "* && " $p " == *" job "* ]]; }
wait_for "DeltaQErrorBudgetBurn pages for worker_2 and job in Alertmanager" "$WAIT" both
log "ok: paged after $((SECONDS - slowed))s for: $(paged)"
curl -fsS --get "http://$AM/api/v2/alerts" --data-urlencode 'filter=alertname="DeltaQErrorBudgetBurn"' |
  jq -r '.[] | "  \(.labels.severity) \(.labels.deltaq_probe) \(.labels.deltaq_slo) \(.labels.deltaq_slo_window) \(.labels.deltaq_slo_burn_rate)× \(.status.state)"' | sort
w1=$(prom_probes 'count_over_time(ALERTS{alertname="DeltaQErrorBudgetBurn", severity="critical", deltaq_probe="worker_1"}[10m])')
[ -z "$w1" ] || fail "worker_1 is not slowed, yet it paged"
log "ok: no page for worker_1"
log "PASS"
