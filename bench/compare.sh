#!/usr/bin/env bash
# Side by side: the same benchmark clients against two frugal binaries (say main's and a
# branch's), alternating, ROUNDS times each, on one machine in one run.
#   bench/compare.sh BASE_FRUGAL NEW_FRUGAL BENCH_DIR [ROUNDS]
# BENCH_DIR holds bench_best_options and bench_node_group_for_node (either build's).
set -euo pipefail
base=$1 new=$2 bench=$3 rounds=${4:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$tmp/bench.yaml" <<YAML
listen:
  - address: 127.0.0.1:$port
node_groups:
  - {id: main, machine_type: n1-standard-2, size: 30, managed: false}
  - {id: web-a, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 100, size: 50}
  - {id: web-b, machine_type: n1-standard-2, zone: us-central1-b, min_size: 0, max_size: 100, size: 50}
YAML
for r in $(seq 1 "$rounds"); do
    for which in base new; do
        bin=$base
        [ "$which" = new ] && bin=$new
        "$bin" serve -c "$tmp/bench.yaml" 2>"$tmp/$which.log" &
        pid=$!
        for _ in $(seq 1 100); do
            "$bin" ctl --addr "127.0.0.1:$port" --timeout 500 health >/dev/null 2>&1 && break
            sleep 0.1
        done
        echo "== round $r: $which ($bin)"
        "$bench/bench_node_group_for_node" "127.0.0.1:$port" --calls 5000 --threads 4 \
            --provider-id frugal://web-a/web-a-7
        "$bench/bench_best_options" "127.0.0.1:$port" "$pid" --sizes 10x10,100x200 --calls 20 |
            grep -E "^(options|[0-9]+ )" || true
        kill -TERM "$pid"
        wait "$pid" || true
    done
done
