# Helpers of the etcd integration tests (source after lib.sh): a real etcd (Debian's
# etcd-server) on loopback ports with temp data dirs, one or three members, and frugal
# replicas on the etcd state backend.

if ! command -v etcd >/dev/null 2>&1; then
    skip "etcd is not installed (scripts/install-deps.sh installs etcd-server)"
fi

ETCD_N=0
ETCD_CLIENT=()  # client URL of member i
ETCD_PEER=()
ETCD_PID=()
ETCD_CLUSTER=""

# etcd_member_start I: (re)start member I of the cluster made by etcd_start.
etcd_member_start() {
    local i=$1
    etcd --name "m$i" --data-dir "$TMP/etcd-$i" \
        --listen-client-urls "${ETCD_CLIENT[$i]}" --advertise-client-urls "${ETCD_CLIENT[$i]}" \
        --listen-peer-urls "${ETCD_PEER[$i]}" --initial-advertise-peer-urls "${ETCD_PEER[$i]}" \
        --initial-cluster "$ETCD_CLUSTER" --initial-cluster-state new \
        --heartbeat-interval 50 --election-timeout 500 >>"$TMP/etcd-$i.log" 2>&1 &
    ETCD_PID[$i]=$!
    ALL_SERVER_PIDS+=("${ETCD_PID[$i]}")
}

etcd_member_kill() {
    kill -KILL "${ETCD_PID[$1]}" 2>/dev/null
    wait "${ETCD_PID[$1]}" 2>/dev/null
}

# etcd_start N: a fresh N-member cluster; waits until it answers.
etcd_start() {
    ETCD_N=$1
    ETCD_CLUSTER=""
    local i
    for i in $(seq 0 $((ETCD_N - 1))); do
        ETCD_CLIENT[$i]="http://127.0.0.1:$(free_port)"
        ETCD_PEER[$i]="http://127.0.0.1:$(free_port)"
        ETCD_CLUSTER+="${ETCD_CLUSTER:+,}m$i=${ETCD_PEER[$i]}"
        rm -rf "$TMP/etcd-$i"
    done
    for i in $(seq 0 $((ETCD_N - 1))); do
        etcd_member_start "$i"
    done
    etcd_wait
}

etcd_wait() {
    local j
    for j in $(seq 1 100); do
        if curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/range" -d '{"key":"AA=="}' >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    fatal "etcd did not start (see $TMP/etcd-0.log)"
}

etcd_stop() {
    local i
    for i in $(seq 0 $((ETCD_N - 1))); do
        etcd_member_kill "$i"
    done
}

# The endpoints as a YAML flow list.
etcd_endpoints() {
    local i out=""
    for i in $(seq 0 $((ETCD_N - 1))); do
        out+="${out:+, }${ETCD_CLIENT[$i]}"
    done
    echo "[$out]"
}

b64() { printf '%s' "$1" | base64 -w0; }

# etcd_put KEY VALUE / etcd_get KEY (prints the value, empty when absent), through the
# member's JSON gateway.
etcd_put() {
    curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/put" -d "{\"key\":\"$(b64 "$1")\",\"value\":\"$(b64 "$2")\"}" >/dev/null
}
etcd_get() {
    curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/range" -d "{\"key\":\"$(b64 "$1")\"}" |
        python3 -c 'import sys,json,base64; kv=json.load(sys.stdin).get("kvs",[]); print(base64.b64decode(kv[0]["value"]).decode() if kv else "")'
}
etcd_delete_prefix() {
    local end="${1%?}$(printf "\\$(printf '%03o' $(( $(printf '%d' "'${1: -1}") + 1 )))")"
    curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/deleterange" -d "{\"key\":\"$(b64 "$1")\",\"range_end\":\"$(b64 "$end")\"}" >/dev/null
}

# replica_config FILE PORT PREFIX [EXTRA YAML]: a replica's config on the etcd backend.
replica_config() {
    cat >"$1" <<YAML
listen: [{address: "127.0.0.1:$2"}]
state:
  backend: etcd
  endpoints: $(etcd_endpoints)
  prefix: $3
  lease_ttl: 2s
  request_timeout: 1s
provider: {kind: simulated, boot_seconds: 1}
node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: ${MAX_SIZE:-10}}
YAML
}
