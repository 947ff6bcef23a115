#!/usr/bin/env bash
# The observability pack (deploy/monitoring/, docs/operations.md):
# * the PrometheusRule's groups, extracted into a plain rules file, pass `promtool check
#   rules`; `promtool test rules` runs monitoring/rules_test.yaml, where every alert fires
#   on a series that should fire it and stays silent on one that should not; every alert
#   has its runbook section; a rule with a syntax error fails promtool;
# * two real `frugal serve` (a file state with the exec provider and a TLS listener, and
#   an etcd state) get real calls, a real Prometheus scrapes both, and every query of
#   every panel of dashboard.json answers data (monitoring/dashboard_queries.py); a
#   query that errors, or answers nothing, fails, naming its panel;
# * every metric family on /metrics is documented in docs/operations.md;
# * a commit etcd does not answer is counted in frugal_state_write_failures_total.
source "$(dirname "$0")/lib.sh"

for tool in python3 curl promtool prometheus etcd openssl; do
    command -v "$tool" >/dev/null 2>&1 || fatal "$tool is needed (scripts/install-deps.sh)"
done
python3 -c 'import yaml' 2>/dev/null || fatal "python3-yaml is needed (scripts/install-deps.sh)"
HERE="$(cd "$(dirname "$0")" && pwd)"
MON="$FRUGAL_SOURCE_DIR/deploy/monitoring"
OPS_DOC="$FRUGAL_SOURCE_DIR/docs/operations.md"

log "the PrometheusRule's rules pass promtool check and their unit tests"
# extract_rules PROMETHEUSRULE OUT: its spec.groups as a plain Prometheus rules file
extract_rules() {
    python3 -c '
import sys, yaml
(rule,) = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert rule["kind"] == "PrometheusRule", rule["kind"]
yaml.safe_dump({"groups": rule["spec"]["groups"]}, open(sys.argv[2], "w"), sort_keys=False)
' "$1" "$2"
}
mkdir -p "$TMP/rules"
extract_rules "$MON/prometheusrule.yaml" "$TMP/rules/rules.yaml" || fatal "cannot extract the rules"
run promtool check rules "$TMP/rules/rules.yaml"
assert_eq 0 "$RC" "promtool check rules [$OUT $ERR]"
cp "$HERE/monitoring/rules_test.yaml" "$TMP/rules/"
run promtool test rules "$TMP/rules/rules_test.yaml"
assert_eq 0 "$RC" "promtool test rules [$OUT $ERR]"

# Every alert has a firing case and a silent case, and a runbook section whose anchor
# its annotation names.
run python3 - "$TMP/rules/rules.yaml" "$TMP/rules/rules_test.yaml" "$OPS_DOC" <<'PYEOF'
import re, sys, yaml
rules, tests, doc = sys.argv[1:4]
alerts = [r for g in yaml.safe_load(open(rules))["groups"] for r in g["rules"] if "alert" in r]
fires, silent = set(), set()
for t in yaml.safe_load(open(tests))["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else silent).add(a["alertname"])
headings = set(re.findall(r"^### (Frugal\w+)$", open(doc).read(), re.M))
bad = []
for r in alerts:
    name = r["alert"]
    if name not in fires:
        bad.append(f"{name}: no test case where it fires")
    if name not in silent:
        bad.append(f"{name}: no test case where it stays silent")
    if name not in headings:
        bad.append(f"{name}: no '### {name}' runbook section in docs/operations.md")
    if r.get("annotations", {}).get("runbook_url") != f"docs/operations.md#{name.lower()}":
        bad.append(f"{name}: its runbook_url annotation is not docs/operations.md#{name.lower()}")
print("\n".join(bad) or f"{len(alerts)} alerts, each tested both ways, each with its runbook")
sys.exit(1 if bad else 0)
PYEOF
assert_eq 0 "$RC" "every alert fires, stays silent and has a runbook [$OUT $ERR]"

log "a rule with a syntax error fails promtool"
sed 's/expr: frugal_config_last_reload_successful{job="frugal"} == 0/expr: sum(frugal_config_last_reload_successful{job="frugal"} == 0/' \
    "$MON/prometheusrule.yaml" >"$TMP/bad-rule.yaml"
extract_rules "$TMP/bad-rule.yaml" "$TMP/bad-rules.yaml"
run promtool check rules "$TMP/bad-rules.yaml"
assert_eq 1 "$RC" "promtool check rules refuses the broken expr"
assert_match 'unclosed left parenthesis' "$OUT $ERR" "promtool names the problem"

log "two real frugal serve: a file state with the exec provider and TLS, an etcd state"
"$FRUGAL_SOURCE_DIR/scripts/dev-certs.sh" "$TMP/pki" >/dev/null || fatal "dev-certs.sh failed"
PKI="$TMP/pki/frugal-server-tls"
# The hook: create prints a provider id, or exits 3 (no resources) for group "full".
printf '%s\n' '#!/bin/bash' \
    'if [ "$1" = create ]; then' \
    '    [ "$2" = full ] && { echo "no capacity left" >&2; exit 3; }' \
    '    echo "test:///$3"' \
    'fi' \
    'exit 0' >"$TMP/hook"
chmod +x "$TMP/hook"
PORT_A=$(free_port)
PLAIN_A=$(free_port)
OPS_A=$(free_port)
cat >"$TMP/a.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT_A
    tls: {cert: $PKI/tls.crt, key: $PKI/tls.key}
  - address: 127.0.0.1:$PLAIN_A
ops_listen: 127.0.0.1:$OPS_A
state_file: $TMP/a.state
limits: {receive_timeout: 1s}
provider: {kind: exec, command: $TMP/hook, timeout: 10s}
node_groups:
  - {id: s2, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s8, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10, spot: true}
  - {id: full, machine_type: n1-standard-4, zone: us-central1-b, min_size: 0, max_size: 10}
EOF
ADDR="127.0.0.1:$PORT_A"
CTL_OPTS=(--tls-ca "$PKI/ca.crt" --tls-server-name frugal.kube-system.svc)
start_server "$TMP/a.yaml"
PID_A=$SERVER_PID

source "$HERE/etcd_lib.sh"
etcd_start 1
PORT_B=$(free_port)
OPS_B=$(free_port)
cat >"$TMP/b.yaml" <<EOF
listen: [{address: "127.0.0.1:$PORT_B"}]
ops_listen: 127.0.0.1:$OPS_B
state: {backend: etcd, endpoints: ["${ETCD_CLIENT[0]}"], prefix: /monitoring/}
node_groups:
  - {id: e2, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 10}
EOF
start_server "$TMP/b.yaml" --addr "127.0.0.1:$PORT_B"
PID_B=$SERVER_PID

PROM_PORT=$(free_port)
mkdir -p "$TMP/prom"
# The scrape job operations.md gives for a Prometheus that discovers pods by their
# annotations, with the two servers as the pods it would discover (Debian's Prometheus
# has no Kubernetes discovery): its relabelling must find each one's ops port and path.
python3 - "$OPS_DOC" "$TMP/prom/prometheus.yml" "$OPS_A" "$OPS_B" <<'PYEOF' || fatal "no scrape job under 'Without the Operator' in operations.md"
import re, sys
doc, out, ports = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3:]
job = re.search(r"```yaml\n(scrape_configs:.*?)```", doc[doc.index("**Without the Operator.**"):], re.S).group(1)
pods = ", ".join(
    '{targets: ["127.0.0.1"], labels: {__meta_kubernetes_pod_label_app_kubernetes_io_name: frugal, '
    '__meta_kubernetes_pod_annotation_prometheus_io_scrape: "true", '
    f'__meta_kubernetes_pod_annotation_prometheus_io_port: "{p}", '
    '__meta_kubernetes_pod_annotation_prometheus_io_path: /metrics}}' for p in ports)
job, n = re.subn(r"kubernetes_sd_configs: .*", f"static_configs: [{pods}]", job)
assert n == 1, "one kubernetes_sd_configs line"
open(out, "w").write("global: {scrape_interval: 1s, evaluation_interval: 1s}\n" + job)
PYEOF
run promtool check config "$TMP/prom/prometheus.yml"
assert_eq 0 "$RC" "promtool check config [$OUT $ERR]"
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prom/log" 2>&1 &
PROM_PID=$!
ALL_SERVER_PIDS+=("$PROM_PID")
PROM="http://127.0.0.1:$PROM_PORT"

# prom_value QUERY [LABEL]: the value of QUERY's first sample ("" when it has none), or
# with LABEL that label of every sample, space-separated.
prom_value() {
    curl -s --get "$PROM/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
label = sys.argv[1] if len(sys.argv) > 1 else None
print(" ".join(s["metric"][label] for s in r) if label else (r[0]["value"][1] if r else ""))
' ${2:+"$2"} 2>/dev/null
}
# A first scrape of both targets before any call: the series of a kind of failure exist
# at 0 from the start, so that the alerts' increase() sees its first occurrence.
for _ in $(seq 1 100); do
    [ "$(prom_value 'count(frugal_hook_runs_total{result="no_resources"} == 0) * count(up == 1)')" = 10 ] && break
    sleep 0.2
done
assert_eq 10 "$(prom_value 'count(frugal_hook_runs_total{result="no_resources"} == 0) * count(up == 1)')" \
    "scraped before any call, every verb's no_resources series at 0"
assert_eq 10 "$(prom_value 'count(frugal_expander_options_unscored_total == 0)')" \
    "every reason an option goes unscored at 0 on both targets"
assert_eq "e2 full s2 s8" "$(prom_value 'frugal_expander_decisions_total == 0' node_group | tr ' ' '\n' | sort -u | xargs)" \
    "every group's decisions at 0 before any decision"

log "real calls: scale-ups (hook runs, one out of resources), decisions, errors, a refusal"
assert_ok "increase s2" ctl increase s2 2
assert_ok "increase full (accepted; its hook then reports no resources)" ctl increase full 1
assert_status NOT_FOUND "increase of an unknown group" ctl increase nope 1
cat >"$TMP/best.yaml" <<EOF
options:
  - {group: s2, node_count: 1, pods: [{cpu: 1500m, memory: 64Mi}]}
  - {group: s8, node_count: 1, pods: [{cpu: 1500m, memory: 64Mi}]}
  - {group: no-template, node_count: 1, pods: [{cpu: 1500m, memory: 64Mi}]}
nodes:
  - {group: s2, machine_type: n1-standard-2, zone: us-central1-a}
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
EOF
assert_ok "best-options" ctl best-options "$TMP/best.yaml"
# calls whose message never comes: refused by limits.receive_timeout (1 s)
run python3 "$HERE/h2raw.py" headers-only "127.0.0.1:$PLAIN_A" 2 1 10 # returns once both close
assert_match "closed=2 " "$OUT" "headers-only calls closed by the receive timeout"
assert_ok "etcd replica: increase" "$FRUGAL" ctl --addr "127.0.0.1:$PORT_B" increase e2 1
assert_ok "etcd replica: best-options" "$FRUGAL" ctl --addr "127.0.0.1:$PORT_B" best-options "$TMP/best.yaml"

# wait until Prometheus has scraped what the calls did on both targets, twice (a rate
# needs two samples): the hook's no_resources run, the two refused calls, both replicas up
want='sum(frugal_hook_runs_total{result="no_resources"}) * sum(frugal_calls_refused_total) / 2 * count(up == 1)'
seen=""
for _ in $(seq 1 100); do
    seen=$(prom_value "$want")
    [ "$seen" = 2 ] && break
    sleep 0.2
done
assert_eq 2 "$seen" "Prometheus saw the calls' effects ($want)" || tail -5 "$TMP/prom/log" >&2
sleep 2.5
# The alerts' own expressions see the first occurrence of each kind of failure.
rule_expr() { # ALERT: its expr in the rules extracted above
    python3 -c '
import sys, yaml
for g in yaml.safe_load(open(sys.argv[1]))["groups"]:
    for r in g["rules"]:
        if r.get("alert") == sys.argv[2]:
            print(r["expr"])
' "$TMP/rules/rules.yaml" "$1"
}
assert_eq create "$(prom_value "$(rule_expr FrugalHooksOutOfResources)" verb)" \
    "FrugalHooksOutOfResources' expression fires on the first no_resources run"
assert_match receive_timeout "$(prom_value "$(rule_expr FrugalCallsRefusedByBudget)" reason)" \
    "FrugalCallsRefusedByBudget's expression fires on the first receive timeouts"
assert_eq 1 "$(prom_value 'count(increase(grpc_server_handled_total{grpc_method="NodeGroupIncreaseSize",grpc_code="NOT_FOUND"}[5m]) > 0.5)')" \
    "the first NOT_FOUND of a method shows as an increase"
# The dashboard's decision panels see the first decision and the first unscored option.
panel_expr() { # TITLE: its first query
    python3 -c '
import json, sys
(p,) = [p for p in json.load(open(sys.argv[1]))["panels"] if p["title"] == sys.argv[2]]
print(p["targets"][0]["expr"])
' "$MON/dashboard.json" "$1"
}
decided=$(prom_value "$(panel_expr "Decisions by winner group") > 0.5" node_group)
assert_match '(s2|s8)' "$decided" "Decisions by winner group shows the first decisions"
assert_match 'no_template' "$(prom_value "$(panel_expr "Options left unscored, by reason") > 0.5" reason)" \
    "Options left unscored shows the first unscored option"

log "every panel's query answers data from the real Prometheus"
for _ in $(seq 1 10); do # a rate over a slow scrape may need one more sample
    run python3 "$HERE/monitoring/dashboard_queries.py" "$MON/dashboard.json" "$PROM"
    [ "$RC" = 0 ] && break
    sleep 1
done
assert_eq 0 "$RC" "dashboard queries [$OUT]"
assert_match '^[1-9][0-9]* queries, 0 failed$' "$OUT" "queries counted"
# the runner catches a broken query and an empty one, and names their panels
# break_panel TITLE EXPR OUT: dashboard.json with TITLE's first query replaced
break_panel() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
(p,) = [p for p in d["panels"] if p["title"] == sys.argv[2]]
p["targets"][0]["expr"] = sys.argv[3]
json.dump(d, open(sys.argv[4], "w"))
' "$MON/dashboard.json" "$1" "$2" "$3"
}
break_panel "Calls in flight" 'sum by (instance (frugal_calls_in_flight)' "$TMP/bad-dashboard.json"
run python3 "$HERE/monitoring/dashboard_queries.py" "$TMP/bad-dashboard.json" "$PROM"
assert_eq 1 "$RC" "a broken query fails"
assert_match '^FAIL: panel "Calls in flight" target A: query error: bad_data' "$OUT" "the broken panel is named"
break_panel "Config reloads" 'frugal_no_such_metric' "$TMP/empty-dashboard.json"
run python3 "$HERE/monitoring/dashboard_queries.py" "$TMP/empty-dashboard.json" "$PROM"
assert_eq 1 "$RC" "an empty query fails"
assert_match '^FAIL: panel "Config reloads" target A: no data' "$OUT" "the empty panel is named"

log "every metric family on /metrics is documented in docs/operations.md"
# check_documented PAGE...: each `# TYPE name` of the pages is in the doc
check_documented() {
    python3 -c '
import re, sys
documented = set(re.findall(r"`([a-z_:][a-z0-9_:]*)`", open(sys.argv[1]).read()))
missing = set()
for page in sys.argv[2:]:
    for m in re.finditer(r"^# TYPE (\S+) \S+$", open(page).read(), re.M):
        if m.group(1) not in documented:
            missing.add(m.group(1))
for name in sorted(missing):
    print(f"{name}: on /metrics, not in docs/operations.md")
sys.exit(1 if missing else 0)
' "$OPS_DOC" "$@"
}
curl -s --max-time 5 "http://127.0.0.1:$OPS_A/metrics" >"$TMP/a.metrics"
curl -s --max-time 5 "http://127.0.0.1:$OPS_B/metrics" >"$TMP/b.metrics"
assert_match '^# TYPE frugal_state_leader gauge$' "$(cat "$TMP/b.metrics")" "the etcd replica's families"
assert_match '^# TYPE frugal_hook_seconds histogram$' "$(cat "$TMP/a.metrics")" "the exec replica's families"
run check_documented "$TMP/a.metrics" "$TMP/b.metrics"
assert_eq 0 "$RC" "every family documented [$OUT]"
{
    cat "$TMP/a.metrics"
    echo "# TYPE frugal_undocumented_total counter"
} >"$TMP/extra.metrics"
run check_documented "$TMP/extra.metrics"
assert_eq 1 "$RC" "an undocumented family fails"
assert_match '^frugal_undocumented_total: on /metrics, not in docs/operations.md$' "$OUT" "it is named"

log "a state write that fails is counted: a mutation while etcd does not answer"
kill -STOP "${ETCD_PID[0]}"
assert_status UNAVAILABLE "increase while etcd is stopped" \
    "$FRUGAL" ctl --addr "127.0.0.1:$PORT_B" --timeout 5000 increase e2 1
FAILED=$(curl -s --max-time 5 "http://127.0.0.1:$OPS_B/metrics" | sed -n 's/^frugal_state_write_failures_total //p')
kill -CONT "${ETCD_PID[0]}"
assert_match '^[1-9][0-9]*$' "$FAILED" "frugal_state_write_failures_total counts the failed commit"
assert_eq 0 "$(sed -n 's/^frugal_state_write_failures_total //p' "$TMP/a.metrics")" \
    "the replica whose writes succeed counts none"

kill -TERM "$PROM_PID" 2>/dev/null
wait "$PROM_PID" 2>/dev/null
stop_server
SERVER_PID=$PID_A
stop_server
finish
