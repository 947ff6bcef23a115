#!/usr/bin/env bash
# Memory smoke of the real daemon: `frugal serve` runs under valgrind while `frugal ctl`
# (not under valgrind: it is only the client) calls health and every CloudProvider verb,
# including refusals and a few malformed bodies; then SIGTERM, and valgrind must report
# no invalid access and no definite/indirect leak.
#
# Lives outside tests/integration/ on purpose: CMake globs tests/integration/test_*.sh
# into ctest, and this one is only run by `scripts/test.sh --valgrind`.
#
# Environment: FRUGAL (the binary, built Debug), FRUGAL_SOURCE_DIR.
source "$(dirname "$0")/integration/lib.sh"

SUPP="$FRUGAL_SOURCE_DIR/tests/valgrind.supp"
VG_LOG="$TMP/valgrind.log"
PORT=$(free_port)
MTLS_PORT=$(free_port)
while [ "$MTLS_PORT" = "$PORT" ]; do MTLS_PORT=$(free_port); done
OPS_PORT=$(free_port)
while [ "$OPS_PORT" = "$PORT" ] || [ "$OPS_PORT" = "$MTLS_PORT" ]; do OPS_PORT=$(free_port); done
ADDR="127.0.0.1:$PORT"

# A mutual-TLS listener too, so the server's TLS paths (credentials, handshakes, a
# refused client) run under valgrind. Certificates are made for this run.
command -v openssl >/dev/null 2>&1 || fatal "openssl is needed"
PKI="$TMP/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" >/dev/null 2>&1 || fatal "openssl: CA"
for spec in "server serverAuth subjectAltName=IP:127.0.0.1" "client clientAuth"; do
    set -- $spec
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n%s\n' "$2" "${3:-}" >"$PKI/$1.ext"
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$PKI/$1.key" \
        -out "$PKI/$1.csr" >/dev/null 2>&1 || fatal "openssl: csr $1"
    openssl x509 -req -in "$PKI/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
        -days 2 -extfile "$PKI/$1.ext" -out "$PKI/$1.crt" >/dev/null 2>&1 || fatal "openssl: sign $1"
done

# boot_seconds is long so instances stay creating and DecreaseTargetSize can drop one.
# A state file so every mutation goes through state_format/state_save, and a restart
# through state_load.
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
  - address: 127.0.0.1:$MTLS_PORT
    tls:
      cert: $PKI/server.crt
      key: $PKI/server.key
      client_ca: $PKI/ca.crt
state_file: $TMP/state
ops_listen: 127.0.0.1:$OPS_PORT
provider:
  kind: simulated
  boot_seconds: 3600
machine_types:
  - name: gpu-4
    cpu: 4
    memory: 16Gi
    gpu: 1
    gpu_type: nvidia-tesla-t4
    price: 0.9
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    zone: us-central1-a
    min_size: 1
    max_size: 5
    labels: {team: web}
    taints: [{key: dedicated, value: web, effect: NoSchedule}]
    options: {scale_down_unneeded: 7m}
  - id: pool-g
    machine_type: gpu-4
    min_size: 0
    max_size: 3
  - id: main
    machine_type: n1-standard-2
    size: 1
    managed: false
EOF

# start_vg_server: `frugal serve` under valgrind; valgrind's own report goes to
# $VG_LOG so the server log stays readable. Valgrind is slow to start: wait 120 s.
start_vg_server() {
    SERVER_SEQ=$((SERVER_SEQ + 1))
    SERVER_LOG="$TMP/server.$SERVER_SEQ.log"
    VG_LOG="$TMP/valgrind.$SERVER_SEQ.log"
    valgrind --error-exitcode=1 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
        --suppressions="$SUPP" --num-callers=30 --log-file="$VG_LOG" \
        "$FRUGAL" serve -c "$TMP/frugal.yaml" --init-state >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    ALL_SERVER_PIDS+=("$SERVER_PID")
    local i
    for i in $(seq 1 240); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            cat "$VG_LOG" >&2
            fatal "server exited with status $? during start-up under valgrind"
        fi
        if ctl --timeout 2000 health >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    fatal "server not healthy after 120 s under valgrind"
}

# stop_vg_server: SIGTERM, wait (leak checking takes a while), and require exit 0:
# valgrind exits 1 on any error it counted, else with the server's status.
stop_vg_server() {
    local pid=$SERVER_PID i rc
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 1 240); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        fail "server under valgrind did not exit within 120 s of SIGTERM"
        return
    fi
    wait "$pid"
    rc=$?
    SERVER_PID=""
    if [ "$rc" -ne 0 ] || grep -Eq 'ERROR SUMMARY: [1-9]|(definitely|indirectly) lost: [1-9]' "$VG_LOG"; then
        fail "valgrind/server exit status $rc"
        sed 's/^/    | /' "$VG_LOG" >&2
        show_server_log
    else
        pass
    fi
}

# Every call gets a generous deadline: the server runs 20-50 times slower.
CTL_OPTS=(--timeout 30000)
start_vg_server

log "health and read verbs"
assert_ok "health" ctl health
assert_ok "node-groups" ctl -o yaml node-groups
assert_ok "target-size" ctl target-size pool-a
assert_ok "gpu-label" ctl gpu-label
assert_ok "gpu-types" ctl gpu-types
assert_ok "refresh" ctl refresh
assert_ok "cleanup" ctl cleanup
assert_ok "template pool-a" ctl -o yaml template pool-a
assert_ok "template pool-g (gpu)" ctl -o yaml template pool-g
assert_ok "options pool-a" ctl -o yaml options pool-a --defaults-max-provision 25m
assert_status UNIMPLEMENTED "options pool-g without overrides: CA uses its own defaults" ctl -o yaml options pool-g --no-defaults

log "mutations"
assert_ok "increase pool-a" ctl increase pool-a 3
assert_ok "increase pool-g" ctl increase pool-g 1
assert_ok "refresh after increase" ctl refresh
assert_ok "nodes pool-a" ctl -o yaml nodes pool-a
mapfile -t inst_a < <(echo "$OUT" | sed -n 's/^- id: //p' | tr -d '"')
assert_eq 4 "${#inst_a[@]}" "pool-a has 4 instances"
# README says read calls answer for unmanaged groups; the server says NOT_FOUND today.
# Either is memory-clean, which is all this smoke checks.
run ctl nodes main
assert_match '^$|^NOT_FOUND' "$ERR" "nodes of the unmanaged group"
assert_ok "decrease drops a creating instance" ctl decrease pool-a -1
assert_ok "nodes pool-a after decrease" ctl -o yaml nodes pool-a
mapfile -t inst_a < <(echo "$OUT" | awk '/^- id: /{id=$3} /^  state: "creating"$/{print id}' | tr -d '"')
assert_eq 3 "${#inst_a[@]}" "pool-a has 3 creating instances"
assert_ok "delete-nodes" ctl delete-nodes pool-a "${inst_a[0]}"
assert_ok "node-group-for-node" ctl -o yaml node-group-for-node "${inst_a[1]}"
assert_ok "node-group-for-node by label" ctl node-group-for-node "" --name n1 \
    --label frugal.io/node-group=pool-g
assert_ok "node-group-for-node unknown" ctl node-group-for-node aws:///x/i-1 --name stranger
assert_ok "node-price" ctl node-price "${inst_a[1]}" --hours 2
assert_ok "node-price legacy" ctl node-price "${inst_a[1]}" --hours 2 --legacy
assert_ok "node-price template" ctl node-price "" --name template-node-for-pool-g-1
assert_ok "pod-price" ctl pod-price --cpu 500m --memory 512Mi --gpu 1
assert_ok "pod-price legacy" ctl pod-price --cpu 2 --memory 4Gi --hours 3 --legacy
# the ops endpoint: a scrape (node groups, certificates, /proc), probes, bad requests
if command -v curl >/dev/null 2>&1; then
    for path in /metrics /healthz /readyz /nope; do
        assert_ok "ops $path" curl -s --max-time 10 "http://127.0.0.1:$OPS_PORT$path"
    done
    assert_ok "ops POST" curl -s --max-time 10 -X POST -d x=1 "http://127.0.0.1:$OPS_PORT/metrics"
    assert_ok "ops oversized header" curl -s --max-time 10 -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)" \
        "http://127.0.0.1:$OPS_PORT/metrics"
fi

log "expander"
# Not a CloudProvider verb, but the largest decoder on the wire: one call per generation.
cat >"$TMP/options.yaml" <<EOF2
options:
  - {group: pool-a, node_count: 2, debug: "ca a", pods: [{cpu: 500m, memory: 64Mi}, {cpu: 1, memory: 1Gi}]}
  - {group: pool-g, node_count: 1, pods: [{cpu: 500m, memory: 64Mi}]}
  - {group: no-template, node_count: 1, pods: [{cpu: 1, memory: 64Mi}]}
nodes:
  - {group: pool-a, machine_type: n1-standard-2, zone: us-central1-a}
  - {group: pool-g, machine_type: n1-standard-8, zone: us-central1-a}
EOF2
assert_ok "best-options" ctl best-options "$TMP/options.yaml"
assert_ok "best-options legacy" ctl best-options "$TMP/options.yaml" --legacy

log "refusals"
assert_status FAILED_PRECONDITION "increase beyond max" ctl increase pool-a 10
assert_status INVALID_ARGUMENT "increase by 0" ctl increase pool-a 0
assert_status NOT_FOUND "unknown group" ctl target-size nosuch
assert_status NOT_FOUND "template of unknown group" ctl template nosuch
assert_status FAILED_PRECONDITION "decrease under min_size" ctl decrease pool-a -5
assert_status INVALID_ARGUMENT "decrease by +1" ctl decrease pool-a 1
assert_status "FAILED_PRECONDITION|NOT_FOUND" "unmanaged group" ctl increase main 1
assert_status "INVALID_ARGUMENT|FAILED_PRECONDITION" "delete unknown instance" \
    ctl delete-nodes pool-a frugal://pool-a/nope
assert_status NOT_FOUND "node-price unknown" ctl node-price aws:///x/i-1 --name stranger
assert_status INVALID_ARGUMENT "pod-price inverted period" ctl pod-price --cpu 1 --memory 1Gi --hours -2

log "malformed bodies"
CP=/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider
printf '\x0a\x10\x41' >"$TMP/length-exceeds"
printf '\x08\xff' >"$TMP/truncated-varint"
printf '\x0a\x06pool' >"$TMP/truncated-string"
for m in NodeGroupForNode PricingNodePrice PricingPodPrice NodeGroupTemplateNodeInfo \
    NodeGroupIncreaseSize NodeGroupDeleteNodes /grpcplugin.Expander/BestOptions; do
    [ "${m#/}" = "$m" ] && m="$CP/$m"
    for b in length-exceeds truncated-varint truncated-string; do
        run ctl raw "$m" "$TMP/$b"
        assert_eq INVALID_ARGUMENT "$OUT" "raw $m $b"
    done
done
assert_ok "still healthy" ctl health

log "mutual TLS listener"
MTLS=(--addr "127.0.0.1:$MTLS_PORT" --tls-ca "$PKI/ca.crt" --timeout 30000)
assert_ok "health over mTLS" "$FRUGAL" ctl "${MTLS[@]}" --tls-cert "$PKI/client.crt" \
    --tls-key "$PKI/client.key" health
assert_ok "node-groups over mTLS" "$FRUGAL" ctl "${MTLS[@]}" --tls-cert "$PKI/client.crt" \
    --tls-key "$PKI/client.key" node-groups
assert_status "UNAVAILABLE|INTERNAL|UNKNOWN" "mTLS without a client certificate" \
    "$FRUGAL" ctl "${MTLS[@]}" health
stop_vg_server

log "restart from the state file"
start_vg_server
assert_eq 2 "$(target_size pool-a)" "pool-a target survives the restart"
assert_ok "nodes after restart" ctl nodes pool-a
stop_vg_server

finish
