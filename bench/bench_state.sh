#!/usr/bin/env bash
# IncreaseSize latency and NodeGroupForNode throughput with the file backend and with
# etcd (one and three members on loopback), plus the leader failover time.
#   bench/bench_state.sh BUILD_DIR [CALLS] [SECONDS]
# Needs etcd (Debian's etcd-server). Figures in docs/benchmarks.md.
set -euo pipefail
BUILD=${1:?usage: bench_state.sh BUILD_DIR [CALLS] [SECONDS]}
CALLS=${2:-300}
SECS=${3:-5}
FRUGAL=$BUILD/frugal
BENCH=$BUILD/bench/bench_state
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

groups='node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 1000, size: 1}
provider: {kind: simulated, boot_seconds: 86400}'

serve() { # CONFIG ADDR
    "$FRUGAL" serve -c "$1" >"$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do "$FRUGAL" ctl --addr "$2" health >/dev/null 2>&1 && return; sleep 0.1; done
    echo "server did not start: $1" >&2; exit 1
}

etcd_cluster() { # N: prints the endpoints list
    local n=$1 i cluster="" eps=""
    local -a c p
    for i in $(seq 0 $((n - 1))); do
        c[$i]="http://127.0.0.1:$(port)"; p[$i]="http://127.0.0.1:$(port)"
        cluster+="${cluster:+,}m$i=${p[$i]}"; eps+="${eps:+, }${c[$i]}"
    done
    for i in $(seq 0 $((n - 1))); do
        etcd --name "m$i" --data-dir "$TMP/e$n-$i" --listen-client-urls "${c[$i]}" \
            --advertise-client-urls "${c[$i]}" --listen-peer-urls "${p[$i]}" \
            --initial-advertise-peer-urls "${p[$i]}" --initial-cluster "$cluster" \
            --initial-cluster-state new >"$TMP/e$n-$i.log" 2>&1 &
        PIDS+=($!)
    done
    for _ in $(seq 1 100); do
        curl -sf -X POST "${c[0]}/v3/kv/range" -d '{"key":"AA=="}' >/dev/null 2>&1 && break; sleep 0.1
    done
    echo "[$eps]"
}

run() { # LABEL STATE_YAML
    local a="127.0.0.1:$(port)"
    printf 'listen: [{address: "%s"}]\n%s\n%s\n' "$a" "$2" "$groups" >"$TMP/$1.yaml"
    serve "$TMP/$1.yaml" "$a"
    echo "== $1"
    "$BENCH" "$a" web-a --calls "$CALLS" --seconds "$SECS"
    kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
}

run file "state_file: $TMP/state"
E1=$(etcd_cluster 1)
run etcd-1 "state: {backend: etcd, endpoints: $E1, prefix: /bench/, lease_ttl: 10s}"
E3=$(etcd_cluster 3)
run etcd-3 "state: {backend: etcd, endpoints: $E3, prefix: /bench/, lease_ttl: 10s}"

echo "== failover (etcd 3 members, lease_ttl 10s): kill -9 the leader"
for r in a b; do
    eval "A_$r=127.0.0.1:$(port)"
    eval "addr=\$A_$r"
    printf 'listen: [{address: "%s"}]\n%s\n%s\n' "$addr" \
        "state: {backend: etcd, endpoints: $E3, prefix: /fail/, lease_ttl: 10s}" "$groups" >"$TMP/f$r.yaml"
    serve "$TMP/f$r.yaml" "$addr"
    eval "P_$r=${PIDS[-1]}"
done
if grep -q "info  leader:" "$TMP/fa.yaml.log"; then L=$P_a; O=$TMP/fb.yaml.log; else L=$P_b; O=$TMP/fa.yaml.log; fi
t0=$(date +%s%N)
kill -KILL "$L"
until grep -q "info  leader:" "$O"; do sleep 0.05; done
echo "leadership moved in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
