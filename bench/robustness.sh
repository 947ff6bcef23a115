#!/usr/bin/env bash
# The robustness matrix of docs/decisions.md ("Robustness over price lists, scale-down delays
# and shapes"): demand-fit against pricing-proposal on every pair of seven clusters (the
# reference one, four other price lists or group sets in bench/robustness/, the reference one
# with a 2-minute and a 30-minute scale-down delay) and eighteen workloads (seven reference
# files, six shapes of bench/robustness/, five reference families at low rates), then the
# worst cells. Usage: bench/robustness.sh [FRUGAL_BINARY] [SEEDS]
set -eu
FRUGAL=${1:-build/frugal} SEEDS=${2:-12}
B=$(cd "$(dirname "$0")" && pwd)
W=$B/workloads R=$B/robustness
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

source "$B/derive.sh"
for r in mix-2:mix:2 web-5:web:5 batch-10:batch:10 ci-4:ci:4; do
    IFS=: read -r name file rate <<<"$r"
    derive_rate "$T" "$name" "$file" "$rate"
done
derive_jobs "$T"
derive_scale_down "$T" cluster-scale-down-2m 2m
derive_scale_down "$T" cluster-scale-down-30m 30m

workloads=("$W"/{mix,web,jvm,cache,batch,analytics,ci}.yaml
    "$R"/{tiny,near-node,half-node,memory-heavy,services,long-lived}.yaml
    "$T"/{mix-2,web-5,batch-10,ci-4,jobs-33}.yaml)
printf '%-22s %-13s %12s %11s %14s\n' CLUSTER WORKLOAD 'VS PRICING' 'WORST SEED' 'PENDING'
for c in "$W/cluster.yaml" "$R"/cluster-{aws,big-cheap,big-dear,three-groups}.yaml \
    "$T"/cluster-scale-down-{2m,30m}.yaml; do
    "$FRUGAL" replay -c "$c" "${workloads[@]}" --seeds "$SEEDS" \
        --strategy pricing-proposal --strategy demand-fit -o csv |
        awk -F, -v c="$(basename "$c" .yaml)" 'NR > 1 && $2 == "pricing-proposal" { pp[$1] = $12 }
            NR > 1 && $2 == "demand-fit" {
                printf "%-22s %-13s %12.3f %11.3f %7.0f / %.0f\n", c, $1, $21, $23, $12, pp[$1] }'
done | tee "$T/matrix"
awk '{ n++; if ($3 > m) { m = $3; mw = $1 " " $2 } if ($4 > s) { s = $4; sw = $1 " " $2 }
       if ($3 > 1) above++; if ($5 > $7) pend++ }
     END { printf "\n%d cells: worst mean %.3f (%s), worst seed %.3f (%s);\n", n, m, mw, s, sw
           printf "mean above pricing-proposal in %d, pending pod-minutes above it in %d\n", above, pend }' \
    "$T/matrix"
