#!/usr/bin/env bash
# BestOptions before/after, side by side in one run (docs/benchmarks.md): for each
# "LABEL=FRUGAL_BINARY[:STRATEGY]" argument, start a fresh server with the benchmark's
# config (ranking.strategy STRATEGY when given), run bench_best_options against it, stop
# it. Every server runs on the same machine within minutes of the others.
#   bench/compare_best_options.sh BENCH_BINARY SIZES CALLS LABEL=FRUGAL[:STRATEGY]...
set -eu
BENCH=$1 SIZES=$2 CALLS=$3
shift 3
PORT=18778
for spec in "$@"; do
    label=${spec%%=*} rest=${spec#*=}
    bin=${rest%%:*} strategy=
    [ "$rest" != "$bin" ] && strategy=${rest#*:}
    cfg=$(mktemp)
    {
        echo "listen: [{address: 127.0.0.1:$PORT}]"
        echo "node_groups: [{id: main, machine_type: n1-standard-2, size: 30, managed: false}]"
        [ -n "$strategy" ] && echo "ranking: {strategy: $strategy}"
    } >"$cfg"
    "$bin" serve -c "$cfg" 2>/dev/null &
    pid=$!
    sleep 0.5
    echo "== $label ($bin${strategy:+, ranking.strategy $strategy})"
    "$BENCH" "127.0.0.1:$PORT" "$pid" --sizes "$SIZES" --calls "$CALLS" | tail -n +2
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -f "$cfg"
    PORT=$((PORT + 1))
done
