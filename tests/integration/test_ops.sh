#!/usr/bin/env bash
# The ops endpoint and the logs (docs/operations.md): /healthz, /readyz and /metrics on
# `ops_listen`; the exposition passes `promtool check metrics` and a real Prometheus
# server (Debian's `prometheus`, started here on loopback) scrapes it and sees a counter
# that a gRPC call has just moved; malformed, oversized and non-GET requests get a 4xx
# and leave the server serving; JSON logs (FRUGAL_LOG_FORMAT) parse line by line, with
# the call fields (peer = the client certificate's CN) and one decision line per
# BestOptions call, winner and runner-up with their figures.
source "$(dirname "$0")/lib.sh"

for tool in openssl python3 curl promtool prometheus; do
    command -v "$tool" >/dev/null 2>&1 || fatal "$tool is needed (scripts/install-deps.sh)"
done

PKI="$TMP/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" >/dev/null 2>&1 || fatal "openssl: CA"
# make_cert NAME USAGE [SAN]
make_cert() {
    {
        echo "basicConstraints=CA:FALSE"
        echo "extendedKeyUsage=$2"
        [ -n "${3:-}" ] && echo "subjectAltName=$3"
    } >"$PKI/$1.ext"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$PKI/$1.key" \
        -out "$PKI/$1.csr" >/dev/null 2>&1 || fatal "openssl: csr $1"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" >/dev/null 2>&1 || fatal "openssl: sign $1"
}
make_cert server serverAuth "IP:127.0.0.1,DNS:localhost"
make_cert ca-client clientAuth

PORT=$(free_port)
OPS=$(free_port)
while [ "$OPS" = "$PORT" ]; do OPS=$(free_port); done
cat >"$TMP/frugal.yaml" <<EOF
ops_listen: 127.0.0.1:$OPS
listen:
  - address: 127.0.0.1:$PORT
    tls: {cert: $PKI/server.crt, key: $PKI/server.key, client_ca: $PKI/ca.crt}
state_file: $TMP/state.yaml
node_groups:
  - {id: main, machine_type: n1-standard-2, size: 30, managed: false}
  - {id: s2, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s8, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: spot8, machine_type: n1-standard-8, zone: us-central1-b, min_size: 1, max_size: 5, spot: true}
EOF
ADDR="127.0.0.1:$PORT"
CTL_OPTS=(--tls-ca "$PKI/ca.crt" --tls-cert "$PKI/ca-client.crt" --tls-key "$PKI/ca-client.key")
URL="http://127.0.0.1:$OPS"

log "bad log settings are refused before anything starts"
assert_exit 2 "unknown --log-format" "$FRUGAL" serve -c "$TMP/frugal.yaml" --log-format xml
assert_match 'unknown log format "xml"' "$ERR" "--log-format message"
run env FRUGAL_LOG_LEVEL=loud "$FRUGAL" serve -c "$TMP/frugal.yaml"
assert_eq 2 "$RC" "FRUGAL_LOG_LEVEL=loud exit status"
assert_match 'FRUGAL_LOG_LEVEL="loud"' "$ERR" "FRUGAL_LOG_LEVEL message"
sed "s/^ops_listen: .*/ops_listen: unix:\/tmp\/x/" "$TMP/frugal.yaml" >"$TMP/bad-ops.yaml"
assert_exit 1 "ops_listen on a unix socket" "$FRUGAL" serve -c "$TMP/bad-ops.yaml"
assert_match 'ops_listen.*needs HOST:PORT' "$ERR" "ops_listen message"
# with JSON logs, a config's errors are JSON lines too, each with its FILE:LINE:COL
run "$FRUGAL" serve -c "$TMP/bad-ops.yaml" --log-format json
assert_eq 1 "$RC" "ops_listen on a unix socket (JSON logs)"
run python3 -c '
import json, sys
events = [json.loads(l) for l in sys.stdin.read().splitlines()]
print(" ".join(e["level"] for e in events), any(e["msg"].startswith(sys.argv[1] + ":") for e in events))
' "$TMP/bad-ops.yaml" <<<"$ERR"
assert_eq "error True" "$OUT" "one JSON error line naming FILE:LINE:COL [$ERR]"

log "serve with JSON logs at debug level (from the environment)"
export FRUGAL_LOG_FORMAT=json FRUGAL_LOG_LEVEL=debug
start_server "$TMP/frugal.yaml"
unset FRUGAL_LOG_FORMAT FRUGAL_LOG_LEVEL

# http PATH [CURL ARGS...]: the status code in $CODE, the body in $BODY.
http() {
    local path=$1
    shift
    CODE=$(curl -s -o "$TMP/.body" -w '%{http_code}' --max-time 5 "$@" "$URL$path")
    BODY=$(cat "$TMP/.body" 2>/dev/null)
}
http /healthz
assert_eq 200 "$CODE" "/healthz"
http /readyz
assert_eq 200 "$CODE" "/readyz once serving"
assert_eq ready "$BODY" "/readyz body"

log "gRPC calls move the counters"
assert_ok "increase s2" ctl increase s2 2
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
WINNER=$(echo "$OUT" | awk 'NR > 1 && $NF == "*" { print $2; exit }')
assert_ok "best-options again" ctl best-options "$TMP/best.yaml"

http /metrics
assert_eq 200 "$CODE" "/metrics"
echo "$BODY" >"$TMP/metrics.txt"
run promtool check metrics <"$TMP/metrics.txt"
assert_eq 0 "$RC" "promtool check metrics [$OUT $ERR]"
M=$(cat "$TMP/metrics.txt")
CP='grpc_service="clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"'
assert_match "^grpc_server_handled_total\{$CP,grpc_method=\"NodeGroupIncreaseSize\",grpc_code=\"OK\"\} 1$" "$M" "handled OK"
assert_match "^grpc_server_handled_total\{$CP,grpc_method=\"NodeGroupIncreaseSize\",grpc_code=\"NOT_FOUND\"\} 1$" "$M" "handled NOT_FOUND"
# `ctl best-options` makes one call (every option's figures come with its answer), so
# the two runs above are two calls and two decisions
CALLS=$(echo "$M" | sed -n 's/^grpc_server_handled_total{grpc_service="grpcplugin.Expander",grpc_method="BestOptions",grpc_code="OK"} //p')
assert_eq 2 "$CALLS" "BestOptions calls counted"
DECISIONS=$(echo "$M" | awk '/^frugal_expander_decisions_total\{/ { n += $2 } END { print n + 0 }')
assert_eq 2 "$DECISIONS" "one decision per ctl best-options"
assert_match "^grpc_server_handling_seconds_bucket\{grpc_service=\"grpcplugin.Expander\",grpc_method=\"BestOptions\",le=\"5\"\} $CALLS$" "$M" "BestOptions latency histogram"
assert_match "^grpc_server_handling_seconds_count\{grpc_service=\"grpcplugin.Expander\",grpc_method=\"BestOptions\"\} $CALLS$" "$M" "BestOptions count"
assert_match "^frugal_expander_decisions_total\{node_group=\"$WINNER\"\} [1-9]" "$M" "decisions by winner ($WINNER)"
assert_match '^frugal_expander_options_unscored_total\{reason="no_template"\} [1-9]' "$M" "unscored: no template"
assert_match '^frugal_node_group_target_size\{node_group="s2"\} 2$' "$M" "target size"
assert_match '^frugal_node_group_min_size\{node_group="spot8"\} 1$' "$M" "min size"
assert_match '^frugal_node_group_max_size\{node_group="spot8"\} 5$' "$M" "max size"
assert_match '^frugal_instances\{node_group="s2",state="(creating|running)"\} 2$' "$M" "instances"
assert_match '^frugal_node_price_per_hour\{node_group="spot8",capacity_type="spot"\} [0-9.]+$' "$M" "spot price"
assert_match '^frugal_node_price_per_hour\{node_group="s2",capacity_type="on_demand"\} 0.095$' "$M" "on-demand price"
assert_match '^frugal_state_write_seconds_count [1-9]' "$M" "state writes timed"
assert_match '^frugal_build_info\{version="[0-9.]+",revision="([0-9a-f]{7,40}|unknown)"\} 1$' "$M" "build info"
assert_match '^frugal_config_last_reload_successful 1$' "$M" "reload successful gauge"
assert_match '^frugal_state_write_failures_total 0$' "$M" "state write failures from 0"
assert_match '^frugal_config_last_reload_success_timestamp_seconds [0-9]{10}' "$M" "reload timestamp"
assert_match '^# TYPE frugal_hook_runs_total counter$' "$M" "hook runs family"
assert_match '^# TYPE frugal_resource_limit_refusals_total counter$' "$M" "limit refusals family"
# limits.memory's default: 2 x max_message_bytes (512 MiB) + 64 MiB; the calls using it.
assert_match '^frugal_memory_budget_bytes 1140850688$' "$M" "memory budget"
assert_match '^frugal_calls_in_flight [0-9]+$' "$M" "calls in flight"
assert_match '^frugal_calls_in_flight_limit [1-9][0-9]*$' "$M" "calls in flight limit"
assert_match '^frugal_calls_awaiting_body [0-9]+$' "$M" "calls awaiting their body"
for p in process_cpu_seconds_total process_resident_memory_bytes process_open_fds process_start_time_seconds; do
    assert_match "^$p [0-9.e+]+$" "$M" "$p"
done
NOT_AFTER=$(openssl x509 -in "$PKI/server.crt" -noout -enddate | sed 's/notAfter=//')
EXPIRY=$(date -u -d "$NOT_AFTER" +%s)
assert_match "^frugal_tls_certificate_expiry_timestamp_seconds\{listener=\"127.0.0.1:$PORT\"\} $EXPIRY$" "$M" "certificate expiry"

log "malformed, oversized and unexpected HTTP requests get a 4xx; the server is unaffected"
# raw BYTES-PYTHON-EXPR: send them on a fresh connection, print the status line.
raw() {
    python3 - "$OPS" "$1" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
try:
    s.sendall(eval(sys.argv[2]))
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except OSError as e:
    data = b"closed: " + str(e).encode()
print(data.split(b"\r\n")[0].decode(errors="replace") or "closed")
EOF
}
assert_match '^HTTP/1\.[01] 400' "$(raw 'b"GET /healthz\r\n\r\n"')" "request line without a version"
assert_match '^HTTP/1\.[01] 405' "$(raw 'b"GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n"')" "unknown method"
assert_match '^HTTP/1\.[01] 505' "$(raw 'b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n"')" "unknown HTTP version"
# not HTTP at all (a TLS ClientHello): no answer can be understood; the connection closes
assert_eq closed "$(raw 'b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64) + b"\r\n\r\n"')" "binary garbage"
assert_match '^HTTP/1\.[01] 400' "$(raw 'b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n"')" "header without a colon"
assert_match '^HTTP/1\.[01] 4(13|14|31)' "$(raw 'b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n"')" "oversized header"
assert_match '^HTTP/1\.[01] 4(13|14|31)' "$(raw 'b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"')" "oversized URL"
http /metrics -X POST --data 'x=1'
assert_eq 405 "$CODE" "POST /metrics"
http /nope
assert_eq 404 "$CODE" "unknown path"
http /healthz
assert_eq 200 "$CODE" "/healthz after bad requests"

# 80 connections from 127.0.0.1, each dripping a header byte every second (never idle
# for the 10 s timeout): one address holds at most 16 of the 64 slots, so a probe from
# another address is still answered.
python3 - "$OPS" >"$TMP/drip.out" 2>&1 <<'PY_EOF' &
import socket, sys, time
conns = []
for _ in range(80):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
        s.sendall(b"GET /healthz HTTP/1.1\r\nX: ")
        conns.append(s)
    except OSError:
        pass
for _ in range(8):
    time.sleep(1)
    for s in conns:
        try:
            s.sendall(b"a")
        except OSError:
            pass
PY_EOF
DRIP=$!
sleep 1.5
http /healthz --interface 127.0.0.2
assert_eq 200 "$CODE" "/healthz from another address while one drips into 80 connections"
kill "$DRIP" 2>/dev/null
wait "$DRIP" 2>/dev/null
# a client without a certificate fails the mutual TLS handshake: gRPC logs it itself
run "$FRUGAL" ctl --addr "$ADDR" --tls-ca "$PKI/ca.crt" --timeout 2000 target-size s2
assert_eq 1 "$RC" "call without a client certificate refused"
assert_ok "gRPC still served after bad requests" ctl target-size s2
assert_eq 2 "$OUT" "target size unchanged"

log "a real Prometheus scrapes frugal and sees a counter a call has just moved"
PROM_PORT=$(free_port)
mkdir -p "$TMP/prom"
cat >"$TMP/prom/prometheus.yml" <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: frugal
    static_configs: [{targets: ["127.0.0.1:$OPS"]}]
EOF
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prom/log" 2>&1 &
PROM_PID=$!
ALL_SERVER_PIDS+=("$PROM_PID")
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null || { tail -5 "$TMP/prom/log" >&2; fatal "prometheus not ready"; }
assert_ok "increase s2 again" ctl increase s2 1
QUERY="grpc_server_handled_total{grpc_method=\"NodeGroupIncreaseSize\",grpc_code=\"OK\"}"
VALUE=""
for _ in $(seq 1 60); do
    VALUE=$(curl -s --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$QUERY" |
        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null)
    [ "$VALUE" = 2 ] && break
    sleep 0.5
done
assert_eq 2 "$VALUE" "Prometheus query of $QUERY"
UP=$(curl -s --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode 'query=up{job="frugal"}' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")')
assert_eq 1 "$UP" "Prometheus target up"
kill -TERM "$PROM_PID" 2>/dev/null
wait "$PROM_PID" 2>/dev/null

log "the reload timestamp moves on a good reload only"
reload_ts() {
    curl -s --max-time 5 "$URL/metrics" | sed -n 's/^frugal_config_last_reload_success_timestamp_seconds //p'
}
T1=$(reload_ts)
sleep 1.1
kill -HUP "$SERVER_PID"
T2=$T1
for _ in $(seq 1 50); do
    T2=$(reload_ts)
    [ "$T2" != "$T1" ] && break
    sleep 0.1
done
assert_match '^[0-9]+' "$T2" "reload timestamp after SIGHUP"
[ "$T2" != "$T1" ] && pass || fail "reload timestamp did not move on a good reload ($T1)"
cp "$TMP/frugal.yaml" "$TMP/frugal.good"
echo "bogus_key: 1" >>"$TMP/frugal.yaml"
kill -HUP "$SERVER_PID"
for _ in $(seq 1 100); do
    curl -s --max-time 5 "$URL/metrics" | grep -q '^frugal_config_last_reload_successful 0$' && break
    sleep 0.1
done
assert_eq "$T2" "$(reload_ts)" "reload timestamp after a refused reload"
assert_match '^frugal_config_last_reload_successful 0$' "$(curl -s --max-time 5 "$URL/metrics")" \
    "reload successful gauge after a refused reload"
cp "$TMP/frugal.good" "$TMP/frugal.yaml"
kill -HUP "$SERVER_PID"
OKV=""
for _ in $(seq 1 50); do
    OKV=$(curl -s --max-time 5 "$URL/metrics" | sed -n 's/^frugal_config_last_reload_successful //p')
    [ "$OKV" = 1 ] && break
    sleep 0.1
done
assert_eq 1 "$OKV" "reload successful gauge back to 1 after a good reload"

stop_server

log "the JSON log parses line by line, with call fields and decision lines"
run python3 - "$SERVER_LOG" "$WINNER" "$CALLS" <<'EOF'
import json, sys
path, winner, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(path, encoding="utf-8").read().splitlines()
events = []
for n, line in enumerate(lines, 1):
    try:
        e = json.loads(line)
    except ValueError as ex:
        sys.exit("line %d is not JSON (%s): %r" % (n, ex, line[:200]))
    for k in ("ts", "level", "msg"):
        if k not in e:
            sys.exit("line %d has no %s: %r" % (n, k, line[:200]))
    events.append(e)
def find(pred, what):
    for e in events:
        if pred(e):
            return e
    sys.exit("no %s line" % what)
rpc = find(lambda e: e["msg"] == "rpc" and e.get("method", "").endswith("/NodeGroupIncreaseSize")
           and e.get("code") == "OK", "rpc IncreaseSize OK")
if rpc.get("peer") != "ca-client" or not isinstance(rpc.get("duration_ms"), (int, float)):
    sys.exit("rpc fields: %r" % rpc)
find(lambda e: e["msg"] == "rpc" and e.get("code") == "NOT_FOUND", "rpc NOT_FOUND")
inc = find(lambda e: e.get("node_group") == "s2" and e.get("delta") == 2 and e.get("code") == "OK"
           and "duration_ms" in e, "increase mutation")
if inc["level"] != "info" or inc.get("peer") != "ca-client" or \
        inc.get("method") != "/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider/NodeGroupIncreaseSize":
    sys.exit("the mutation's info line names no method or peer: %r" % inc)
find(lambda e: e.get("node_group") == "nope" and e.get("code") == "NOT_FOUND", "refused mutation")
find(lambda e: e.get("source") == "grpc" and e.get("file") and isinstance(e.get("line"), int),
     "gRPC's own (routed through gpr_set_log_function)")
decisions = [e for e in events if e["msg"].startswith("BestOptions: chose")
             or e["msg"].startswith("BestOptions: no option could be scored")]
if len(decisions) != calls:
    sys.exit("%d decision lines for %d BestOptions calls" % (len(decisions), calls))
full = [e for e in decisions if e["options"] == 3 and "node_group" in e]
if len(full) != 2:
    sys.exit("%d decision lines of the 3-option request, want 2" % len(full))
d = full[0]
if d["level"] != "info" or d["node_group"] != winner or d["options"] != 3:
    sys.exit("decision: %r" % d)
for k in ("price", "pods_price", "score", "ratio", "unfitness", "suppressed_unfitness",
          "runner_up_price", "runner_up_pods_price", "runner_up_score", "runner_up_ratio",
          "runner_up_unfitness", "runner_up_suppressed_unfitness",
          # demand-fit (the default)'s own terms
          "spare_value", "use", "arrivals_per_hour", "pods_ratio", "mixed_gpu",
          "left_out_nodes_price", "left_out_pods_price",
          "runner_up_spare_value", "runner_up_use", "runner_up_arrivals_per_hour",
          "runner_up_pods_ratio", "runner_up_mixed_gpu", "runner_up_left_out_nodes_price",
          "runner_up_left_out_pods_price", "most_pods_first"):
    if not isinstance(d.get(k), (int, float)):
        sys.exit("decision has no figure %s: %r" % (k, d))
if d["runner_up"] not in ("s2", "s8") or d["runner_up"] == winner or d["score"] > d["runner_up_score"]:
    sys.exit("runner-up: %r" % d)
print("%d JSON lines" % len(events))
EOF
assert_eq 0 "$RC" "JSON log [$OUT $ERR]"

log "without limits.memory the budget follows the container's cgroup limit"
mkdir -p "$TMP/cg2" "$TMP/cg-bad"
echo 1073741824 >"$TMP/cg2/memory.max"
FRUGAL_CGROUP_ROOT="$TMP/cg2" start_server "$TMP/frugal.yaml"
assert_match '^frugal_memory_budget_bytes 805306368$' "$(curl -s --max-time 5 "$URL/metrics")" \
    "75 % of a 1 GiB cgroup v2 limit"
assert_match 'info +memory budget 805306368 bytes: 75% of the cgroup memory limit 1073741824 bytes \(.*/cg2/memory.max\)' \
    "$(cat "$SERVER_LOG")" "the log says which budget and why"
stop_server
echo "a lot" >"$TMP/cg-bad/memory.max"
FRUGAL_CGROUP_ROOT="$TMP/cg-bad" start_server "$TMP/frugal.yaml"
assert_match '^frugal_memory_budget_bytes 1140850688$' "$(curl -s --max-time 5 "$URL/metrics")" \
    "an unreadable cgroup limit: the default"
assert_match 'warn +memory budget 1140850688 bytes: the default.*cannot be read' \
    "$(cat "$SERVER_LOG")" "an unreadable cgroup limit is a warning, not fatal"
stop_server

finish
