#!/usr/bin/env bash
# The robustness tables of docs/decisions.md ("Spare room weighed by the arrival rate"):
# the reference workloads at rates they were not tuned on (the same families, fewer pods
# an hour), and two shapes no reference file has (tiny services only; Jobs only), each
# against random and pricing-proposal. Usage: bench/low-rate.sh [FRUGAL_BINARY] [SEEDS]
set -eu
FRUGAL=${1:-build/frugal} SEEDS=${2:-24}
W=$(cd "$(dirname "$0")/workloads" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

source "$(dirname "$0")/derive.sh"
for r in mix-2:mix:2 mix-4:mix:4 mix-8:mix:8 web-5:web:5 batch-10:batch:10 batch-30:batch:30 \
    ci-4:ci:4 gpu-small-5:gpu-small:5 gpu-models-6:gpu-models:6; do
    IFS=: read -r name file rate <<<"$r"
    derive_rate "$T" "$name" "$file" "$rate"
done
cat >"$T/tiny-20.yaml" <<'YAML'
description: tiny services only (50m, 64Mi), 20 an hour
arrivals_per_hour: 20
families:
  - {name: tiny, owner: ReplicaSet, cpu: 50m, memory: 64Mi, lifetime: [2h, 72h]}
YAML
sed 's/^arrivals_per_hour: .*/arrivals_per_hour: 60/; s/20 an hour/60 an hour/' \
    "$T/tiny-20.yaml" >"$T/tiny-60.yaml"
derive_jobs "$T"

S=(--seeds "$SEEDS" --strategy random --strategy pricing-proposal --strategy demand-fit)
"$FRUGAL" replay -c "$W/cluster.yaml" "$T"/{mix-2,mix-4,mix-8,web-5,batch-10,batch-30,ci-4}.yaml \
    "$T"/{tiny-20,tiny-60,jobs-33}.yaml "${S[@]}"
echo
"$FRUGAL" replay -c "$W/cluster-gpu.yaml" "$T"/{gpu-small-5,gpu-models-6}.yaml "${S[@]}"
