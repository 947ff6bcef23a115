# Helpers of the state benchmarks (source it): a free loopback port, the median of a
# figure in bench_state's output, the one group they scale, and an etcd cluster.

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# median FILE FIELD_REGEX: the median of the number after FIELD_REGEX on FILE's lines
median() {
    grep -o "$2 [0-9.]*" "$1" | awk '{print $NF}' | sort -g |
        awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

BENCH_GROUPS='node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 1000, size: 1}
provider: {kind: simulated, boot_seconds: 86400}'

ETCD_PIDS=()
# etcd_cluster N: starts N members on loopback (data under $TMP, pids added to PIDS and
# ETCD_PIDS), sets ENDPOINTS to their client URLs.
etcd_cluster() {
    local n=$1 i cluster="" eps=""
    local -a c p
    ETCD_PIDS=()
    for i in $(seq 0 $((n - 1))); do
        c[$i]="http://127.0.0.1:$(port)"; p[$i]="http://127.0.0.1:$(port)"
        cluster+="${cluster:+,}m$i=${p[$i]}"; eps+="${eps:+, }${c[$i]}"
    done
    for i in $(seq 0 $((n - 1))); do
        etcd --name "m$i" --data-dir "$TMP/e$n-$i" --listen-client-urls "${c[$i]}" \
            --advertise-client-urls "${c[$i]}" --listen-peer-urls "${p[$i]}" \
            --initial-advertise-peer-urls "${p[$i]}" --initial-cluster "$cluster" \
            --initial-cluster-state new >"$TMP/e$n-$i.log" 2>&1 &
        PIDS+=($!)
        ETCD_PIDS+=($!)
    done
    for _ in $(seq 1 100); do
        curl -sf -X POST "${c[0]}/v3/kv/range" -d '{"key":"AA=="}' >/dev/null 2>&1 && break; sleep 0.1
    done
    ENDPOINTS="[$eps]"
}
etcd_stop() { kill -TERM "${ETCD_PIDS[@]}"; wait "${ETCD_PIDS[@]}" 2>/dev/null || true; }
