#!/usr/bin/env bash
# IncreaseSize latency and NodeGroupForNode throughput with the file backend and with
# etcd (one and three members on loopback), plus the leader failover time.
#   bench/bench_state.sh BUILD_DIR [CALLS] [SECONDS] [ROUNDS]
# Side by side: while an etcd cluster runs, ROUNDS rounds alternate a file-backend
# server and an etcd-backend server (fresh each), so both see the same machine (the
# etcd members' own CPU included); the summary gives each figure's median over the
# rounds. Needs etcd (Debian's etcd-server). Figures in docs/benchmarks.md.
set -euo pipefail
BUILD=${1:?usage: bench_state.sh BUILD_DIR [CALLS] [SECONDS] [ROUNDS]}
CALLS=${2:-300}
SECS=${3:-5}
ROUNDS=${4:-3}
FRUGAL=$BUILD/frugal
BENCH=$BUILD/bench/bench_state
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; rm -rf "$TMP"; }
trap cleanup EXIT
source "$(dirname "$0")/lib.sh"
groups=$BENCH_GROUPS

serve() { # CONFIG ADDR
    "$FRUGAL" serve -c "$1" --init-state >"$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 100); do "$FRUGAL" ctl --addr "$2" health >/dev/null 2>&1 && return; sleep 0.1; done
    echo "server did not start: $1" >&2; exit 1
}

run() { # LABEL STATE_YAML: one fresh server, one bench; its lines go to $TMP/LABEL.out
    local a="127.0.0.1:$(port)"
    printf 'listen: [{address: "%s"}]\n%s\n%s\n' "$a" "$2" "$groups" >"$TMP/$1.yaml"
    serve "$TMP/$1.yaml" "$a"
    "$BENCH" "$a" web-a --calls "$CALLS" --seconds "$SECS" | tee -a "$TMP/$1.out" | sed "s/^/$1: /"
    kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
    rm -f "$TMP/state"
}

summary() { # LABEL
    printf '%-14s IncreaseSize p50 %6.2f ms  p99 %6.2f ms  NodeGroupForNode %8.0f calls/s\n' "$1" \
        "$(median "$TMP/$1.out" 'p50')" "$(median "$TMP/$1.out" 'p99')" \
        "$(median "$TMP/$1.out" 'threads,')"
}
compare() { # FILE_LABEL ETCD_LABEL
    local f e
    f=$(median "$TMP/$1.out" 'threads,')
    e=$(median "$TMP/$2.out" 'threads,')
    awk -v f="$f" -v e="$e" -v l="$2" 'BEGIN {printf "%-14s NodeGroupForNode vs file: %+.1f %%\n", l, (e - f) * 100 / f}'
}

for n in 1 3; do
    etcd_cluster "$n"
    echo "== etcd with $n member(s) running; $ROUNDS rounds, file and etcd alternating"
    for r in $(seq 1 "$ROUNDS"); do
        run "file-$n" "state_file: $TMP/state"
        run "etcd-$n" "state: {backend: etcd, endpoints: $ENDPOINTS, prefix: /bench$r/, lease_ttl: 10s}"
    done
    [ "$n" = 3 ] || etcd_stop
done

echo "== medians over $ROUNDS rounds"
for n in 1 3; do summary "file-$n"; summary "etcd-$n"; compare "file-$n" "etcd-$n"; done

echo "== failover (etcd 3 members, lease_ttl 10s): kill -9 the leader"
for r in a b; do
    eval "A_$r=127.0.0.1:$(port)"
    eval "addr=\$A_$r"
    printf 'listen: [{address: "%s"}]\n%s\n%s\n' "$addr" \
        "state: {backend: etcd, endpoints: $ENDPOINTS, prefix: /fail/, lease_ttl: 10s}" "$groups" >"$TMP/f$r.yaml"
    serve "$TMP/f$r.yaml" "$addr"
    eval "P_$r=${PIDS[-1]}"
done
if grep -q "info  leader:" "$TMP/fa.yaml.log"; then L=$P_a; O=$TMP/fb.yaml.log; else L=$P_b; O=$TMP/fa.yaml.log; fi
t0=$(date +%s%N)
kill -KILL "$L"
until grep -q "info  leader:" "$O"; do sleep 0.05; done
echo "leadership moved in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
