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

# at NAME FILE RATE: FILE with arrivals_per_hour RATE, as $T/NAME.yaml
at() { sed "s/^arrivals_per_hour: .*/arrivals_per_hour: $3/" "$W/$2.yaml" >"$T/$1.yaml"; }
at mix-2 mix 2
at mix-4 mix 4
at mix-8 mix 8
at web-5 web 5
at batch-10 batch 10
at batch-30 batch 30
at ci-4 ci 4
at gpu-small-5 gpu-small 5
at gpu-models-6 gpu-models 6
cat >"$T/tiny-20.yaml" <<'EOF'
description: tiny services only (50m, 64Mi), 20 an hour
arrivals_per_hour: 20
families:
  - {name: tiny, owner: ReplicaSet, cpu: 50m, memory: 64Mi, lifetime: [2h, 72h]}
EOF
sed 's/^arrivals_per_hour: .*/arrivals_per_hour: 60/; s/20 an hour/60 an hour/' \
    "$T/tiny-20.yaml" >"$T/tiny-60.yaml"
# Jobs only: the mix's batch and GPU families, at their share of its 80 pods an hour.
awk '/^  - name: (web|jvm|cache)$/ { skip = 1; next } /^  - name:/ { skip = 0 } !skip' \
    "$W/mix.yaml" | sed 's/^arrivals_per_hour: .*/arrivals_per_hour: 33/' >"$T/jobs-33.yaml"

S=(--seeds "$SEEDS" --strategy random --strategy pricing-proposal --strategy demand-fit)
"$FRUGAL" replay -c "$W/cluster.yaml" "$T"/{mix-2,mix-4,mix-8,web-5,batch-10,batch-30,ci-4}.yaml \
    "$T"/{tiny-20,tiny-60,jobs-33}.yaml "${S[@]}"
echo
"$FRUGAL" replay -c "$W/cluster-gpu.yaml" "$T"/{gpu-small-5,gpu-models-6}.yaml "${S[@]}"
