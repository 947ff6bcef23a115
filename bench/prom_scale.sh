#!/usr/bin/env bash
# `frugal replay --from-prometheus` on a large cluster (docs/benchmarks.md): a trace of
# PODS pods over HOURS hours from bench/gen-trace.py, written as kube-state-metrics series
# scraped every INTERVAL seconds (bench/trace-to-ksm.py), backfilled with promtool into a
# real Prometheus on loopback. Times the replay from Prometheus (wall clock, peak memory,
# the Prometheus' own peak memory) beside the replay of the trace alone (the difference is
# the time spent asking Prometheus and building the trace), and checks that both give the
# same figures. Needs python3, promtool, prometheus, curl and GNU time.
# Usage: bench/prom_scale.sh [FRUGAL_BINARY] [PODS] [HOURS] [INTERVAL]
set -eu
FRUGAL=${1:-build/frugal} PODS=${2:-2000} HOURS=${3:-24} INTERVAL=${4:-60}
B=$(cd "$(dirname "$0")" && pwd)
source "$B/lib.sh"
T=$(mktemp -d)
PROM_PID=""
trap '[ -z "$PROM_PID" ] || kill "$PROM_PID" 2>/dev/null; rm -rf "$T"' EXIT
[ -x /usr/bin/time ] || { echo "prom_scale: GNU time (/usr/bin/time) is required" >&2; exit 1; }

# The range ends an hour ago, on the scrape grid.
END=$(( ($(date +%s) - 3600) / INTERVAL * INTERVAL ))
python3 "$B/gen-trace.py" "$PODS" "$T/trace.jsonl" --span $((HOURS * 3600)) 2>/dev/null
python3 "$B/trace-to-ksm.py" "$T/trace.jsonl" "$T/ksm.om" "$T/ref.jsonl" --end "$END" \
    --interval "$INTERVAL" 2>"$T/ksm.log"
SAMPLES=$(sed -n 's/.* pods, \([0-9]*\) samples.*/\1/p' "$T/ksm.log")
t0=$(date +%s.%N)
promtool tsdb create-blocks-from openmetrics "$T/ksm.om" "$T/data" >"$T/promtool.log" 2>&1 ||
    { tail -5 "$T/promtool.log" >&2; exit 1; }
BACKFILL=$(python3 -c "import sys; print('%.1f' % ($(date +%s.%N) - $t0))")
rm -f "$T/ksm.om"

PROM_PORT=$(port)
printf 'global: {scrape_interval: 1m}\n' >"$T/prometheus.yml"
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/data" \
    --storage.tsdb.retention.time=3650d --web.listen-address="127.0.0.1:$PROM_PORT" \
    >"$T/prom.log" 2>&1 &
PROM_PID=$!
for _ in $(seq 1 150); do
    curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
    sleep 0.2
done

cat >"$T/cluster.yaml" <<'YAML'
node_groups:
  - {id: std-4, machine_type: n1-standard-4, max_size: 2000}
  - {id: std-16, machine_type: n1-standard-16, max_size: 2000}
  - {id: mem-16, machine_type: n1-highmem-16, max_size: 2000}
  - {id: cpu-16, machine_type: n1-highcpu-16, max_size: 2000}
YAML
/usr/bin/time -f "%e %M" -o "$T/time" "$FRUGAL" replay -c "$T/cluster.yaml" \
    --from-prometheus "http://127.0.0.1:$PROM_PORT" --since "${HOURS}h" --until "$END" \
    --save-trace "$T/built.jsonl" --seeds 1 -o csv >"$T/prom.csv" 2>"$T/replay.log" ||
    { cat "$T/replay.log" >&2; exit 1; }
PROM_RSS=$(awk '/^VmHWM/ {print int($2 / 1024)}' "/proc/$PROM_PID/status")
/usr/bin/time -f "%e" -o "$T/time-ref" "$FRUGAL" replay -c "$T/cluster.yaml" "$T/ref.jsonl" \
    --seeds 1 -o csv >"$T/ref.csv"
# The same figures: every column but the workload's name.
same=no
cmp -s <(cut -d, -f2- "$T/prom.csv") <(cut -d, -f2- "$T/ref.csv") && same=yes
read -r WALL RSS_KB <"$T/time"
echo "pods=$(wc -l <"$T/built.jsonl") hours=$HOURS interval_s=$INTERVAL samples=$SAMPLES" \
    "backfill_s=$BACKFILL replay_from_prometheus_s=$WALL replay_of_trace_s=$(cat "$T/time-ref")" \
    "frugal_peak_mib=$((RSS_KB / 1024))" \
    "prometheus_peak_mib=$PROM_RSS same_figures_as_trace=$same"
