#!/usr/bin/env bash
# State writes of two frugal builds side by side: IncreaseSize latency (each call one
# fsync'd write of the state file, or with etcd one transaction) and NodeGroupForNode
# throughput, ROUNDS alternating rounds, a fresh server each, then the medians.
#   bench/compare_state.sh BASE_BUILD_DIR NEW_BUILD_DIR [ROUNDS] [CALLS] [etcd]
# With etcd, both builds use one etcd member on loopback (a fresh prefix each run).
# Each build dir needs frugal and bench/bench_state. Figures in docs/benchmarks.md.
set -euo pipefail
USAGE="usage: compare_state.sh BASE_BUILD_DIR NEW_BUILD_DIR [ROUNDS] [CALLS] [etcd]"
BASE=${1:?$USAGE}
NEW=${2:?$USAGE}
ROUNDS=${3:-9}
CALLS=${4:-1000}
BACKEND=${5:-file}
TMP=$(mktemp -d)
SP=
PIDS=()
cleanup() {
    [ -n "$SP" ] && kill -KILL "$SP" 2>/dev/null
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
source "$(dirname "$0")/lib.sh"
RUNS=0
[ "$BACKEND" = etcd ] && etcd_cluster 1

one() { # LABEL BUILD_DIR
    local p a
    p=$(port)
    a=127.0.0.1:$p
    rm -f "$TMP"/state*
    RUNS=$((RUNS + 1))
    local state="state_file: $TMP/state"
    [ "$BACKEND" = etcd ] &&
        state="state: {backend: etcd, endpoints: $ENDPOINTS, prefix: /cmp$RUNS/, lease_ttl: 10s}"
    printf 'listen: [{address: "%s"}]\n%s\n%s\n' "$a" "$state" "$BENCH_GROUPS" >"$TMP/c.yaml"
    "$2/frugal" serve -c "$TMP/c.yaml" --init-state >"$TMP/log" 2>&1 &
    SP=$!
    for _ in $(seq 1 50); do "$2/frugal" ctl --addr "$a" health >/dev/null 2>&1 && break; sleep 0.1; done
    "$2/bench/bench_state" "$a" web-a --calls "$CALLS" --seconds 3 | tr '\n' ' ' | tee -a "$TMP/$1.out"
    echo >>"$TMP/$1.out"
    echo
    kill -TERM "$SP"; wait "$SP" 2>/dev/null || true
    SP=
}

for r in $(seq 1 "$ROUNDS"); do
    # Alternate which goes first: the disk's state drifts within a round.
    if [ $((r % 2)) = 1 ]; then order="base new"; else order="new base"; fi
    for b in $order; do
        printf '%-4s round %d: ' "$b" "$r"
        if [ "$b" = base ]; then one base "$BASE"; else one new "$NEW"; fi
    done
done
echo "== medians over $ROUNDS rounds"
for b in base new; do
    printf '%-4s IncreaseSize p50 %s ms, p99 %s ms; NodeGroupForNode %s calls/s\n' "$b" \
        "$(median "$TMP/$b.out" p50)" "$(median "$TMP/$b.out" p99)" "$(median "$TMP/$b.out" 'threads,')"
done
