# Workloads and clusters derived from the frozen reference files (source it), shared by
# low-rate.sh and robustness.sh. W is the reference folder, every function writes to OUT.

# derive_rate OUT NAME FILE RATE: reference FILE at RATE pods an hour, as OUT/NAME.yaml
derive_rate() { sed "s/^arrivals_per_hour: .*/arrivals_per_hour: $4/" "$W/$3.yaml" >"$1/$2.yaml"; }

# derive_jobs OUT: the mix's Jobs alone (its batch and GPU families) at their share of its
# 80 pods an hour, as OUT/jobs-33.yaml
derive_jobs() {
    awk '/^  - name: (web|jvm|cache)$/ { skip = 1; next } /^  - name:/ { skip = 0 } !skip' \
        "$W/mix.yaml" | sed 's/^arrivals_per_hour: .*/arrivals_per_hour: 33/' >"$1/jobs-33.yaml"
}

# derive_scale_down OUT NAME DELAY: the reference cluster with every group's
# scale_down_unneeded set to DELAY (CA's default is 10m), as OUT/NAME.yaml
derive_scale_down() {
    sed -e "s/^\(  - {id: .*\)}$/\1, options: {scale_down_unneeded: $3}}/" \
        -e "s/^\(    max_size: .*\)$/\1\n    options: {scale_down_unneeded: $3}/" \
        "$W/cluster.yaml" >"$1/$2.yaml"
}

# derive_burst OUT NAME FILE PODS: reference FILE with every family's pods arriving PODS at
# a time (`burst`), at the same pods an hour, as OUT/NAME.yaml
derive_burst() {
    local rate
    rate=$(sed -n 's/^arrivals_per_hour: //p' "$W/$3.yaml")
    sed -e "s/^arrivals_per_hour: .*/arrivals_per_hour: $(awk -v r="$rate" -v b="$4" 'BEGIN { print r / b }')/" \
        -e "s/^\(    owner: .*\)$/\1\n    burst: [$4, $4]/" "$W/$3.yaml" >"$1/$2.yaml"
}
