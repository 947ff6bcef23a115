#!/usr/bin/env bash
# demand-fit against pricing-proposal and random on production-like weeks no reference
# file resembles (docs/decisions.md, "Production-like weeks, cold and already running"):
# TRACES traces of bench/gen-trace.py per set (30 owners of one pod shape each, 50m to 16
# cores; with and without GPU owners), each starting empty and, with --warm, in a running
# cluster as a trace built by `replay --from-prometheus` does. One line per set: the mean
# of demand-fit's cost over the formula's, its spread and worst trace, and pending
# pod-minutes against the formula's.
# Usage: bench/production.sh [FRUGAL_BINARY] [TRACES] [replay options...]
set -eu
FRUGAL=${1:-build/frugal} TRACES=${2:-20}
shift $(($# > 2 ? 2 : $#))
B=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

for s in $(seq 1 "$TRACES"); do
    for set in cold warm gpu-cold gpu-warm; do
        flags=()
        case $set in *warm) flags+=(--warm) ;; esac
        case $set in gpu*) flags+=(--gpu) ;; esac
        python3 "$B/gen-trace.py" 4000 "$T/$set-$s.jsonl" --seed "$s" --owners 30 "${flags[@]}" 2>/dev/null
    done
done

# Pods that no group can host (GPU models or sizes the cluster lacks) are counted and left
# out by every strategy alike: their notices are not shown.
for set in cold warm gpu-cold gpu-warm; do
    cluster=$B/workloads/cluster.yaml
    case $set in gpu*) cluster=$B/workloads/cluster-gpu.yaml ;; esac
    "$FRUGAL" replay -c "$cluster" "$T/$set"-[0-9]*.jsonl --seeds 1 --strategy random \
        --strategy pricing-proposal --strategy demand-fit -o csv "$@" >"$T/$set.csv" \
        2> >(grep -v 'no node group can host this pod' >&2)
    python3 - "$set" "$T/$set.csv" <<'PY'
import csv, statistics, sys
runs = {}
for r in csv.DictReader(open(sys.argv[2])):
    runs.setdefault(r["workload"], {})[r["strategy"]] = r
fit = [runs[w]["demand-fit"] for w in runs]
vs = [float(r["vs_pricing_mean"]) for r in fit]
rnd = [float(r["vs_random_mean"]) for r in fit]
pend = [float(runs[w]["demand-fit"]["pending_pod_minutes_mean"]) /
        max(1.0, float(runs[w]["pricing-proposal"]["pending_pod_minutes_mean"])) for w in runs]
half = 1.96 * statistics.stdev(vs) / len(vs) ** 0.5 if len(vs) > 1 else 0.0
print(f"{sys.argv[1]:9s} {len(vs)} traces: vs pricing-proposal {statistics.mean(vs):.4f} "
      f"± {half:.4f}, worst {max(vs):.3f}, above 1 on {sum(v > 1 for v in vs)}; "
      f"vs random {statistics.mean(rnd):.3f} (worst {max(rnd):.3f}); "
      f"pending pod-minutes {statistics.mean(pend):.3f} of the formula's")
PY
done
