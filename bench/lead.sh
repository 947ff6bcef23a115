#!/usr/bin/env bash
# Where demand-fit's lead on the mix comes from (docs/decisions.md, "Where the mix's lead
# comes from"): the same pods an hour in bursts of 1, 3, 10 and 30 pods; the mix at fewer
# and more pods an hour; and the formula with a fixed cluster size of 15 nodes (a 4-core
# preferred node) instead of the cluster's own. Usage: bench/lead.sh [FRUGAL_BINARY] [SEEDS]
set -eu
FRUGAL=${1:-build/frugal} SEEDS=${2:-8}
W=$(cd "$(dirname "$0")/workloads" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

source "$(dirname "$0")/derive.sh"
for b in 3 10 30; do
    derive_burst "$T" "mix-burst-$b" mix "$b"
done
for r in 10 20 40 160; do
    derive_rate "$T" "mix-$r" mix "$r"
done
{ cat "$W/cluster.yaml"; echo "ranking: {cluster_size: 15}"; } >"$T/cluster-size-15.yaml"

S=(--seeds "$SEEDS" --strategy pricing-proposal --strategy demand-fit)
echo "== the mix's 80 pods an hour, one pod per arrival, then in bursts"
"$FRUGAL" replay -c "$W/cluster.yaml" "$W/mix.yaml" "$T"/mix-burst-{3,10,30}.yaml "${S[@]}"
echo
echo "== the mix at 10, 20, 40 and 160 pods an hour"
"$FRUGAL" replay -c "$W/cluster.yaml" "$T"/mix-{10,20,40,160}.yaml "${S[@]}"
echo
echo "== jvm and web with the cluster's own size, then with the formula's preferred node"
echo "== fixed at 4 cores (ranking.cluster_size: 15), with the mix"
"$FRUGAL" replay -c "$W/cluster.yaml" "$W/jvm.yaml" "$W/web.yaml" "${S[@]}"
"$FRUGAL" replay -c "$T/cluster-size-15.yaml" "$W/mix.yaml" "$W/jvm.yaml" "$W/web.yaml" "${S[@]}"
