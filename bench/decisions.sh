#!/usr/bin/env bash
# The tables of docs/decisions.md ("A default that does not lose to the formula"):
# every reference workload on its cluster, random, pricing-proposal and demand-fit side
# by side. Usage: bench/decisions.sh [FRUGAL_BINARY] [SEEDS] [replay options...]
set -eu
FRUGAL=${1:-build/frugal} SEEDS=${2:-24}
shift $(($# > 2 ? 2 : $#))
W=$(dirname "$0")/workloads
S=(--seeds "$SEEDS" --strategy random --strategy pricing-proposal --strategy demand-fit "$@")
"$FRUGAL" replay -c "$W/cluster.yaml" "$W"/{mix,web,jvm,cache,batch,gpu,analytics,ci}.yaml "${S[@]}"
echo
"$FRUGAL" replay -c "$W/cluster-gpu.yaml" "$W/gpu-models.yaml" "$W/gpu-small.yaml" "${S[@]}"
echo
"$FRUGAL" replay -c "$W/cluster-existing.yaml" "$W/existing.yaml" "${S[@]}"
