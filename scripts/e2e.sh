#!/usr/bin/env bash
# make e2e: the collector path end to end, with real programs on loopback.
#
# Starts Prometheus (remote-write receiver on, the shipped alert rules),
# Alertmanager (the shipped configuration), the built collector with
# examples/demo/collector.yaml and, over it, collector-prometheus.yaml (the
# deltaq connector's metrics to Prometheus by remote write) and the synthetic
# workload, then asserts:
#   1. ΔQ series of every contract metric reach Prometheus for every probe;
#   2. every query of the Grafana dashboard parses and returns data;
#   3. slowing worker_2 fires the DeltaQQTAViolation alert in Alertmanager
#      for worker_2 and job (not worker_1) and lowers worker_2's Quality of
#      Outcome, and easing it resolves the alert (with no failure-ratio
#      ticket, inhibited under the page, left active as the page ends) and
#      brings the score back to 100;
#   4. the deltaq.trigger log record reaches the collector's log output;
#   5. the workload delivered every span and start event it made.
# Everything it started is stopped by process id when it exits, also on
# failure. Logs stay in build/e2e.
#
# Installs Debian's prometheus, prometheus-alertmanager, jq and curl when
# missing (needs root or sudo). Environment: BIN (default bin), E2E_TIMEOUT
# (seconds to wait for each alert transition, default 120).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
WAIT=${E2E_TIMEOUT:-120}
D=$PWD/build/e2e
rm -rf "$D"
mkdir -p "$D"

log() { printf 'e2e %(%H:%M:%S)T %s\n' -1 "$*"; }
fail() {
  log "FAIL: $*"
  exit 1
}

# --- tools ------------------------------------------------------------------
need=()
command -v prometheus >/dev/null || need+=(prometheus)
command -v prometheus-alertmanager >/dev/null || need+=(prometheus-alertmanager)
command -v jq >/dev/null || need+=(jq)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
for b in otelcol-deltaq dqworkload; do
  [ -x "$BIN/$b" ] || fail "$BIN/$b missing (make build commands)"
done

# --- processes ----------------------------------------------------------------
# shellcheck source=scripts/harness.sh
. scripts/harness.sh
stack_ports

# --- Prometheus and Alertmanager -------------------------------------------
sed -e "s|127.0.0.1:9093|$AM|g" -e "s|127.0.0.1:9090|$PROM|g" -e "s|127.0.0.1:8888|127.0.0.1:$TELEMETRY|g" \
  -e "s|^\(  - \)rules/|\1$PWD/examples/prometheus/rules/|" \
  examples/prometheus/prometheus.yml >"$D/prometheus.yml"
grep -q "$AM" "$D/prometheus.yml" || fail "examples/prometheus/prometheus.yml: no Alertmanager target to point at $AM"
# Notifications go to a port nobody listens on: the test reads Alertmanager's API.
sed -e "s|http://127.0.0.1:5001/|http://127.0.0.1:9/|" examples/alertmanager/alertmanager.yml >"$D/alertmanager.yml"

start prometheus prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/prometheus-data" \
  --web.listen-address="$PROM" --web.enable-remote-write-receiver --web.enable-lifecycle
start alertmanager prometheus-alertmanager --config.file="$D/alertmanager.yml" --storage.path="$D/alertmanager-data" \
  --web.listen-address="$AM" --cluster.listen-address=
wait_for "Prometheus ready" 30 curl -fsS "http://$PROM/-/ready"
wait_for "Alertmanager ready" 30 curl -fsS "http://$AM/-/ready"
log "Prometheus on $PROM, Alertmanager on $AM"

# --- collector and workload ---------------------------------------------------
DELTAQ_OTLP_GRPC=$OTLP_GRPC DELTAQ_OTLP_HTTP=$OTLP_HTTP \
  DELTAQ_PROMETHEUS=http://$PROM DELTAQ_TELEMETRY_PORT=$TELEMETRY DELTAQ_DIAGRAM=examples/demo/mm1k.dq \
  start collector "$BIN/otelcol-deltaq" --config=examples/demo/collector.yaml \
  --config=examples/demo/collector-prometheus.yaml
wait_for "collector OTLP port" 30 tcp_open "$OTLP_GRPC"
alive collector
log "collector on $OTLP_GRPC"

# Normal load first; the test toggles worker_2's slow-down with SIGUSR1.
start workload "$BIN/dqworkload" --endpoint "$OTLP_GRPC" --rate 100 --mu1 200 --mu2 200 --k 10 \
  --slow-worker 2 --slow-factor 4 --report 5s --seed 42
WORKLOAD=$(pid_of workload)

# prom_query EXPR: the JSON of an instant query (fails on HTTP or parse errors).
prom_query() { curl -fsS --get "http://$PROM/api/v1/query" --data-urlencode "query=$1"; }
# prom_count EXPR: the number of series of an instant query.
prom_count() {
  local out
  out=$(prom_query "$1") || return 1
  jq -e '.status == "success"' <<<"$out" >/dev/null || return 1
  jq '.data.result | length' <<<"$out"
}

# --- 1. ΔQ series for every probe ------------------------------------------------
probes=(job worker_1 worker_2)
metrics=(deltaq_observed_seconds_bucket deltaq_cdf_ratio deltaq_quantile_seconds deltaq_outcomes_total
  deltaq_failure_ratio deltaq_qta_violation deltaq_qta_point_ratio deltaq_qta_max_failure_ratio)
series_present() {
  local m p
  for m in "${metrics[@]}"; do
    for p in "${probes[@]}"; do
      [ "$(prom_count "count($m{deltaq_probe=\"$p\"})")" -gt 0 ] || return 1
    done
  done
  # Only a probe with an outcome diagram expression has a calculated ΔQ.
  [ "$(prom_count 'count(deltaq_divergence_ratio{deltaq_probe="job"})')" -gt 0 ] &&
    [ "$(prom_count 'count(deltaq_cdf_ratio{deltaq_probe="job",deltaq_series="calculated"})')" -gt 0 ]
}
wait_for "ΔQ series of every metric for probes ${probes[*]}" 60 series_present
alive collector
alive workload
log "ok: ${#metrics[@]} metrics (+ divergence and calculated ΔQ of job) for probes ${probes[*]} in Prometheus"
# Normal load: no QTA alert. (A single window may break a QTA by chance: the
# delays of jobs close in time share a queue, so one burst of arrivals delays
# many of them. The alert waits for 15 s of violations.)
sleep 5
# prom_alerts STATE: the probes with a DeltaQQTAViolation alert in STATE in Prometheus.
prom_alerts() {
  curl -fsS "http://$PROM/api/v1/alerts" |
    jq -r --arg s "$1" '[.data.alerts[] | select(.labels.alertname == "DeltaQQTAViolation" and .state == $s) | .labels.deltaq_probe] | sort | unique | join(" ")'
}
v=$(prom_alerts firing) || fail "Prometheus alerts API"
if [ -n "$v" ]; then
  # What the alert saw, for the failure's reader: each window's verdict of the
  # minute, and how busy the host was (a starved workload is slow for real).
  for p in $v; do
    log "deltaq_qta_violation{deltaq_probe=\"$p\"} over the last minute:" \
      "$(prom_query "deltaq_qta_violation{deltaq_probe=\"$p\"}[1m]" | jq -c '[.data.result[].values[][1]]')"
  done
  log "load average: $(cut -d ' ' -f 1-3 /proc/loadavg)"
  fail "QTA alert firing at normal load for: $v"
fi

# --- 2. the Grafana dashboard's queries -----------------------------------------
# The SLO panels read the series of rules/deltaq-slo.yml, whose groups run every
# 30 s, each at its own phase: wait for their first evaluation. The budget
# group reads what the SLI group recorded, and the SLI group's rates need two
# samples of their input, so the first budget can come two intervals after the
# series above, plus a remote write: 100 s covers that with a margin (45 s
# was once too short in CI).
slo_recorded() { [ "$(prom_count 'count(deltaq:slo_error_budget_remaining:ratio)')" -gt 0 ] &&
  [ "$(prom_count 'count(deltaq:slo_error_ratio:rate3d)')" -gt 0 ]; }
slo_from=$SECONDS
wait_for "the first evaluation of the SLO rules (rules/deltaq-slo.yml)" 100 slo_recorded
log "ok: the SLO rules' series, $((SECONDS - slo_from)) s after the check above"
dash=examples/grafana/deltaq-dashboard.json
[ -f "$dash" ] || fail "$dash missing"
# The variables: Grafana's label_values(SELECTOR, LABEL) is the label values API
# with match[]=SELECTOR; an "All" of a variable that others depend on is .*.
varq=$(jq -r '.templating.list[] | select(.name == "probe") | .query | if type == "object" then .query else . end' "$dash")
[[ $varq =~ ^label_values\((.+),[[:space:]]*([a-z_]+)\)$ ]] || fail "probe variable query not understood: $varq"
sel=${BASH_REMATCH[1]//\$job/.*}
sel=${sel//\$instance/.*}
sel=${sel//\$service/.*}
values=$(curl -fsS --get "http://$PROM/api/v1/label/${BASH_REMATCH[2]}/values" --data-urlencode "match[]=$sel" |
  jq -r '.data | join(" ")')
for p in "${probes[@]}"; do
  [[ " $values " == *" $p "* ]] || fail "dashboard variable probe ($varq) lacks $p: [$values]"
done
log "ok: dashboard variable probe = [$values]"
for v in job instance service; do
  q=$(jq -r --arg v "$v" '.templating.list[] | select(.name == $v) | .query' "$dash")
  [[ $q =~ ^label_values\((.+),[[:space:]]*([a-z_]+)\)$ ]] || fail "$v variable query not understood: $q"
  sel=${BASH_REMATCH[1]//\$job/.*}
  sel=${sel//\$instance/.*}
  [ "$(curl -fsS --get "http://$PROM/api/v1/label/${BASH_REMATCH[2]}/values" --data-urlencode "match[]=$sel" |
    jq '.data | length')" -gt 0 ] || fail "dashboard variable $v ($q) has no values"
done
# All probes, as Grafana writes a multi-value "All" into a regex matcher.
all="($(echo "$values" | tr ' ' '|'))"
n=0
while IFS= read -r expr; do
  [ -n "$expr" ] || continue
  q=${expr//\$\{probe\}/$all}
  q=${q//\$probe/$all}
  q=${q//\$job/.*}
  q=${q//\$instance/.*}
  q=${q//\$service/.*}
  q=${q//\$__rate_interval/1m}
  q=${q//\$__interval/15s}
  q=${q//\$__range/5m}
  # A label_replace replacement ("$1") is PromQL's, not a Grafana variable
  # (Grafana leaves a name it does not define as written).
  rest=${q//\"\$[0-9]\"/}
  [[ $rest != *'$'* ]] || fail "dashboard query has a variable this test does not know: $expr"
  out=$(curl -sS --get "http://$PROM/api/v1/query" --data-urlencode "query=$q") || fail "query failed: $q"
  [ "$(jq -r .status <<<"$out")" = success ] || fail "dashboard query does not parse: $q: $(jq -r .error <<<"$out")"
  [ "$(jq '.data.result | length' <<<"$out")" -gt 0 ] || fail "dashboard query returns no data: $q"
  n=$((n + 1))
done < <(jq -r '(.. | objects | select(has("targets")) | .targets[] | .expr // empty), (.annotations.list[] | .expr // empty | select(test("ALERTS") | not))' "$dash")
[ "$n" -gt 0 ] || fail "no queries found in $dash"
log "ok: all $n dashboard queries parse and return data"

# --- 3. the QTA alert fires when worker_2 slows, resolves when it eases ------------
# firing: the probes with an active DeltaQQTAViolation alert in Alertmanager.
firing() {
  curl -fsS --get "http://$AM/api/v2/alerts" --data-urlencode 'filter=alertname="DeltaQQTAViolation"' |
    jq -r '[.[] | select(.status.state == "active") | .labels.deltaq_probe] | sort | unique | join(" ")'
}
f=$(firing) || fail "Alertmanager alerts API"
[ -z "$f" ] || fail "QTA alert active in Alertmanager before the slow-down: $f"
# Collector log lines written before the slow-down: at normal load a single
# window may fire a trigger by chance, so step 4 reads only what follows.
slow_from=$(($(wc -l <"$D/collector.log") + 1))
kill -USR1 "$WORKLOAD"
log "worker_2 slowed (μ₂ = 50/s < λ = 100/s)"
fired() { f=$(firing) && [[ " $f " == *" worker_2 "* && " $f " == *" job "* ]]; }
wait_for "DeltaQQTAViolation for worker_2 and job in Alertmanager" "$WAIT" fired
f=$(firing)
[[ " $f " != *" worker_1 "* ]] || fail "worker_1 is not slowed, yet its QTA alert fires: $f"
log "ok: alert firing in Alertmanager for: $f"
# worker_2's Quality of Outcome in Prometheus falls as it slows: half its
# jobs are dropped, the loss component and the score reach 0.
qoo_w2='deltaq_qoo_score_percent{deltaq_probe="worker_2",deltaq_series="observed"}'
qoo_fell() { [ "$(prom_count "$qoo_w2 <= 50")" -gt 0 ]; }
wait_for "worker_2's QoO to fall to 50 or below" "$WAIT" qoo_fell
log "ok: worker_2's QoO fell: $(prom_query "$qoo_w2" | jq -r '[.data.result[].value[1]] | join(" ")')"
# The dashboard's alert annotations (from the ALERTS series) now have data.
aq=$(jq -r '.annotations.list[] | .expr // empty | select(test("ALERTS"))' "$dash")
[ -n "$aq" ] || fail "$dash: no annotation query over ALERTS"
aq=${aq//\$probe/$all}
[ "$(prom_count "$aq")" -gt 0 ] || fail "dashboard annotation query returns no data while an alert fires: $aq"
log "ok: the dashboard's alert annotations show the firing alert"
kill -USR1 "$WORKLOAD"
log "worker_2 eased"
# tickets: the probes whose DeltaQFailureRatioHigh Alertmanager would send (active: neither
# inhibited nor silenced). Half of worker_2's jobs fail while it is slowed: the alert fires
# under the page, inhibited, and the minute's failure ratio still counts them for a minute
# after the page's condition ends. The page keeps firing that minute (keep_firing_for), so
# that its end sends no ticket.
tickets() {
  curl -fsS --get "http://$AM/api/v2/alerts" --data-urlencode 'filter=alertname="DeltaQFailureRatioHigh"' |
    jq -r '[.[] | select(.status.state == "active") | .labels.deltaq_probe] | sort | unique | join(" ")'
}
ticket_sent=
resolved() {
  local f t
  t=$(tickets) || return 1
  [ -z "$t" ] || ticket_sent="$ticket_sent $t"
  f=$(firing) || return 1
  [ -z "$f" ] && [ -z "$(prom_alerts firing)" ]
}
# The page resolves a minute after its condition ends (keep_firing_for).
wait_for "the QTA alerts to resolve" "$((WAIT + 60))" resolved
for _ in $(seq 10); do
  t=$(tickets) || fail "Alertmanager alerts API"
  [ -z "$t" ] || ticket_sent="$ticket_sent $t"
  sleep 1
done
[ -z "$ticket_sent" ] || fail "the end of the page sent DeltaQFailureRatioHigh tickets (not inhibited) for:$ticket_sent"
log "ok: alert resolved; no failure-ratio ticket at the end of the page"
# ... and returns to 100 once worker_2's queue has drained.
qoo_back() { [ "$(prom_count "$qoo_w2 == 100")" -gt 0 ]; }
wait_for "worker_2's QoO back at 100" "$WAIT" qoo_back
log "ok: worker_2's QoO back at 100"

# --- 4. the trigger log record in the collector's log output ------------------------
# The debug exporter prints each record: "EventName: deltaq.trigger", then its
# attributes, one "-> key: Type(value)" line each. Look for a trigger of
# worker_2 written after the slow-down began.
triggers=$(tail -n +"$slow_from" "$D/collector.log" | awk '
  /^LogRecord #/ { if (ev && probe == "worker_2") print kind; ev = 0; probe = ""; kind = "" }
  /^EventName: deltaq\.trigger$/ { ev = 1 }
  /-> deltaq\.probe: Str\(/ { probe = $0; sub(/.*Str\(/, "", probe); sub(/\)$/, "", probe) }
  /-> deltaq\.trigger: Str\(/ { kind = $0; sub(/.*Str\(/, "", kind); sub(/\)$/, "", kind) }
  /^(Trace ID|Flags):/ { if (ev && probe == "worker_2") print kind; ev = 0; probe = ""; kind = "" }
' | sort | uniq -c | tr -s ' \n' ' ')
# Half of worker_2's jobs are dropped while it is slowed: the failure trigger
# must be among them (at normal load it drops 0.05 % of its jobs).
[[ $triggers == *" failure"* ]] ||
  fail "no deltaq.trigger record (failure) for worker_2 in the collector's log output after the slow-down; found:${triggers:- none}"
log "ok: deltaq.trigger records for worker_2 after the slow-down (count kind):$triggers"

# --- 5. the workload delivered everything ------------------------------------------
kill -TERM "$WORKLOAD"
rc=0
wait "$WORKLOAD" || rc=$?
grep '^final:' "$D/workload.log" || true
[ "$rc" -eq 0 ] || fail "the workload reports undelivered data (exit $rc)"
alive collector
# An error in the collector's log means lost output (say, a remote write
# that Prometheus refused).
if grep -q $'\terror\t' "$D/collector.log"; then
  grep $'\terror\t' "$D/collector.log" | head -n 5 | cut -c 1-400
  fail "the collector logged errors (above)"
fi
log "PASS"
