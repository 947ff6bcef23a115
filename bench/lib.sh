# Helpers of the state benchmarks (source it): a free loopback port, the median of a
# figure in bench_state's output, and the one group they scale.

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# median FILE FIELD_REGEX: the median of the number after FIELD_REGEX on FILE's lines
median() {
    grep -o "$2 [0-9.]*" "$1" | awk '{print $NF}' | sort -g |
        awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'
}

BENCH_GROUPS='node_groups:
  - {id: web-a, machine_type: n1-standard-2, min_size: 0, max_size: 1000, size: 1}
provider: {kind: simulated, boot_seconds: 86400}'
