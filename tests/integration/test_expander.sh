#!/usr/bin/env bash
# grpcplugin.Expander/BestOptions through the real server over TLS (CA only talks TLS
# to an expander), in both wire generations (`best-options --legacy` sends pods under
# field 4 and templates under nodeMap = 2): the design's cases (the 8-cpu node wins for
# a 0.1-cpu and a 1.5-cpu pod when the cluster size prefers 8 cpu), unknown templates
# left out, the never-empty rule, the not-exist penalty, zone balance, the GPU
# override, spot prices, and INVALID_ARGUMENT for a body that is not a message.
source "$(dirname "$0")/lib.sh"

command -v openssl >/dev/null 2>&1 || fatal "openssl is needed"

PKI="$TMP/pki"
mkdir -p "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt" >/dev/null 2>&1 || fatal "openssl: CA"
printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$PKI/server.ext"
openssl req -newkey rsa:2048 -nodes -subj "/CN=frugal" \
    -keyout "$PKI/server.key" -out "$PKI/server.csr" >/dev/null 2>&1 || fatal "openssl: csr"
openssl x509 -req -in "$PKI/server.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 2 -extfile "$PKI/server.ext" -out "$PKI/server.crt" >/dev/null 2>&1 || fatal "openssl: sign"

PORT=$(free_port)
# Cluster size 30 (the unmanaged "main" group): the default preferred-node table maps
# it (21..80 nodes) to 8 cpu, an n1-standard-8.
cat >"$TMP/frugal.yaml" <<EOF
ranking: {strategy: pricing-proposal}
listen:
  - address: 127.0.0.1:$PORT
    tls:
      cert: $PKI/server.crt
      key: $PKI/server.key
node_groups:
  - {id: main, machine_type: n1-standard-2, size: 30, managed: false}
  - {id: s2, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s8, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s8b, machine_type: n1-standard-8, zone: us-central1-b, min_size: 0, max_size: 10}
  - {id: s8-db, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10, labels: {team: db}}
  - {id: s32, machine_type: n1-standard-32, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: spot8, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10, spot: true}
autoprovisioning:
  enabled: true
  machine_types: [n1-standard-8]
  zones: [us-central1-a]
EOF

ADDR="127.0.0.1:$PORT"
CTL_OPTS=(--tls-ca "$PKI/ca.crt")
start_server "$TMP/frugal.yaml"

# row GROUP: the table row of GROUP in $OUT, columns separated by single spaces.
row() {
    echo "$OUT" | awk -v g="$1" '$2 == g { $1 = $1; print; exit }'
}
# col GROUP N: column N (1-based) of GROUP's row.
col() {
    row "$1" | awk -v n="$2" '{ print $n }'
}
winners() {
    echo "$OUT" | awk 'NR > 1 && $NF == "*" { print $2 }' | tr '\n' ' ' | sed 's/ $//'
}

# design_file CPU: s2, s8, s32 and a group without a template, each one node for one pod.
design_file() {
    cat >"$TMP/design.yaml" <<EOF
options:
  - {group: s2, node_count: 1, debug: "ca s2", pods: [{cpu: $1, memory: 64Mi}]}
  - {group: s8, node_count: 1, debug: "ca s8", pods: [{cpu: $1, memory: 64Mi}]}
  - {group: s32, node_count: 1, pods: [{cpu: $1, memory: 64Mi}]}
  - {group: no-template, node_count: 1, pods: [{cpu: $1, memory: 64Mi}]}
nodes:
  - {group: s2, machine_type: n1-standard-2, zone: us-central1-a}
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: s32, machine_type: n1-standard-32, zone: us-central1-a}
EOF
}

for gen in current legacy; do
    flag=()
    [ "$gen" = legacy ] && flag=(--legacy)
    for cpu in 100m 1500m; do
        log "$gen wire: the design's case with a $cpu pod"
        design_file "$cpu"
        assert_ok "best-options $cpu ($gen)" ctl best-options "$TMP/design.yaml" "${flag[@]}" || continue
        assert_eq "s8" "$(winners)" "the 8-cpu node wins for $cpu ($gen)"
        assert_eq 1 "$(col s8 1)" "s8 ranks first ($gen, $cpu)"
        assert_near 0.38 "$(col s8 4)" "P of n1-standard-8 ($gen, $cpu)"
        assert_near 0.095 "$(col s2 4)" "P of n1-standard-2 ($gen, $cpu)"
        assert_near 1.52 "$(col s32 4)" "P of n1-standard-32 ($gen, $cpu)"
        assert_near 1 "$(col s8 7)" "unfitness of the preferred node ($gen, $cpu)"
        assert_near 4 "$(col s2 7)" "unfitness of n1-standard-2 ($gen, $cpu)"
        assert_near 4 "$(col s32 7)" "unfitness of n1-standard-32 ($gen, $cpu)"
        assert_match "no-template +1 +- .*not scored" "$OUT" "an option without template is left out ($gen)"
        # T and X from the default pricing: the score is suppressed x (C + X) / (T + X).
        milli=${cpu%m}
        t=$(awk -v m="$milli" 'BEGIN { printf "%.12f", m / 1000 * 0.033174 + 64 / 1024 * 0.004446 }')
        assert_near "$(printf '%.6f' "$t")" "$(col s8 5)" "T of the pod ($gen, $cpu)"
        x=$(awk 'BEGIN { printf "%.9f", 0.5 * 0.033174 + 500 / 1024 * 0.004446 }')
        want=$(awk -v t="$t" -v x="$x" 'BEGIN { printf "%.6f", (0.38 + x) / (t + x) }')
        assert_near "$want" "$(col s8 9)" "score of s8 ($gen, $cpu)"

        assert_ok "best-options -o yaml ($gen)" ctl -o yaml best-options "$TMP/design.yaml" "${flag[@]}"
        assert_match '^  - group: "s8"$' "$(echo "$OUT" | sed -n 2p)" "yaml lists the winner first ($gen)"
        assert_match '^    winner: true$' "$(echo "$OUT" | sed -n 4p)" "yaml marks the winner ($gen)"
    done

    log "$gen wire: never empty"
    cat >"$TMP/none.yaml" <<EOF
options:
  - {group: a, node_count: 1, pods: [{cpu: 1}]}
  - {group: b, node_count: 2, pods: [{cpu: 1}]}
  - {group: s8, node_count: 0, pods: [{cpu: 1}]}
nodes:
  - {group: s8, machine_type: n1-standard-8}
EOF
    assert_ok "best-options without any scorable option ($gen)" ctl -o yaml best-options "$TMP/none.yaml" "${flag[@]}"
    assert_eq 3 "$(echo "$OUT" | grep -c '^    winner: true$')" "every option is answered ($gen)"
    assert_eq 3 "$(echo "$OUT" | grep -c '^    scored: false$')" "none scored ($gen)"

    log "$gen wire: not-exist penalty, zone balance, GPU, spot"
    cat >"$TMP/rules.yaml" <<EOF
options:
  - {group: nap-n1-standard-8-us-central1-a, node_count: 1, pods: [{cpu: 1, count: 2}]}
  - {group: s8, node_count: 1, pods: [{cpu: 1, count: 2}]}
  - {group: s8b, node_count: 1, pods: [{cpu: 1, count: 2}]}
  - {group: s8-db, node_count: 1, pods: [{cpu: 1, count: 2}]}
  - {group: gpu8, node_count: 1, pods: [{cpu: 1, count: 2}]}
nodes:
  - {group: nap-n1-standard-8-us-central1-a, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: s8b, machine_type: n1-standard-8, zone: us-central1-b}
  - {group: s8-db, machine_type: n1-standard-8, zone: us-central1-a, labels: {team: db}}
  - {group: gpu8, machine_type: n1-standard-8, zone: us-central1-a, gpu: 1}
EOF
    assert_ok "best-options rules ($gen)" ctl best-options "$TMP/rules.yaml" "${flag[@]}" || continue
    # s8 and s8b differ only by zone: one of them (the first); s8-db is tied, not similar.
    assert_eq "s8 s8-db" "$(winners)" "zone balance keeps one of the similar groups ($gen)"
    s8=$(col s8 9)
    assert_near "$(awk -v s="$s8" 'BEGIN { printf "%.6f", 2 * s }')" "$(col nap-n1-standard-8-us-central1-a 9)" \
        "a group that does not exist yet pays the penalty ($gen)"
    assert_near 1000 "$(col gpu8 8)" "a GPU template gets gpu_unfitness ($gen)"

    cat >"$TMP/balance.yaml" <<EOF
options:
  - {group: s8, node_count: 2, pods: [{cpu: 1, count: 2}]}
  - {group: s8b, node_count: 2, pods: [{cpu: 1, count: 2}]}
nodes:
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: s8b, machine_type: n1-standard-8, zone: us-central1-b}
EOF
    assert_ok "best-options balance ($gen)" ctl best-options "$TMP/balance.yaml" "${flag[@]}"
    assert_eq "s8" "$(winners)" "equal node counts: the first in request order ($gen)"

    cat >"$TMP/spot.yaml" <<EOF
options:
  - {group: s8, node_count: 1, pods: [{cpu: 1}]}
  - {group: spot8, node_count: 1, pods: [{cpu: 1}]}
nodes:
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: spot8, machine_type: n1-standard-8, zone: us-central1-a}
EOF
    assert_ok "best-options spot ($gen)" ctl best-options "$TMP/spot.yaml" "${flag[@]}"
    assert_eq "spot8" "$(winners)" "the spot group is cheaper ($gen)"
    assert_near 0.08 "$(col spot8 4)" "P of a spot n1-standard-8 is its preemptible price ($gen)"
done

log "a known group's template of no catalog type (a copy of a real node) is priced linearly, and warned once"
cat >"$TMP/unlabelled.yaml" <<EOF
options:
  - {group: s8, node_count: 1, pods: [{cpu: 1}]}
nodes:
  - {group: s8, machine_type: c2d-standard-8, cpu: 8, memory: 32Gi, zone: us-central1-a}
EOF
assert_ok "best-options with an unknown instance type" ctl best-options "$TMP/unlabelled.yaml"
assert_ok "again" ctl best-options "$TMP/unlabelled.yaml"
assert_eq 1 "$(grep -c 'template of node group "s8" (CA sends a copy of one of its nodes once it has one) has node.kubernetes.io/instance-type c2d-standard-8, not a machine type of the catalog: priced linearly from its capacity, not as machine type n1-standard-8' "$SERVER_LOG")" \
    "the operator is told once how to fix it"

log "zone balance follows the groups' current sizes"
assert_ok "grow s8" ctl increase s8 2
for gen in current legacy; do
    flag=()
    [ "$gen" = legacy ] && flag=(--legacy)
    assert_ok "best-options balance after growth ($gen)" ctl best-options "$TMP/balance.yaml" "${flag[@]}"
    assert_eq "s8b" "$(winners)" "the similar group with fewer nodes wins, listed second ($gen)"
done

log "bad input"
printf '\x0a\x05\x0a' >"$TMP/garbage.bin"
assert_status "INVALID_ARGUMENT" "a body that is not a BestOptionsRequest" \
    ctl raw /grpcplugin.Expander/BestOptions "$TMP/garbage.bin"
: >"$TMP/empty.bin"
assert_ok "an empty request is answered" ctl raw /grpcplugin.Expander/BestOptions "$TMP/empty.bin"
log "pods are answered under both numbers, over the wire"
# Option {nodeGroupId "a", nodeCount 1, one empty pod}; no template, so it is answered
# unchanged, its pod under podBytes = 5 (0x2a) and pod = 4 (0x22) whichever it came as.
printf '\x0a\x07\x0a\x01a\x10\x01\x2a\x00' >"$TMP/current.bin"
printf '\x0a\x07\x0a\x01a\x10\x01\x22\x00' >"$TMP/legacy.bin"
printf '\x0a\x09\x0a\x01a\x10\x01\x22\x00\x2a\x00' >"$TMP/both.bin"
assert_ok "current pods" ctl -o yaml raw /grpcplugin.Expander/BestOptions "$TMP/current.bin"
assert_eq 0a090a016110012a002200 "$(yaml_value responseHex)" "a current request's pod also under 4"
assert_ok "legacy pods" ctl -o yaml raw /grpcplugin.Expander/BestOptions "$TMP/legacy.bin"
assert_eq 0a090a0161100122002a00 "$(yaml_value responseHex)" "a legacy request's pod also under 5"
assert_ok "pods under both" ctl -o yaml raw /grpcplugin.Expander/BestOptions "$TMP/both.bin"
assert_eq 0a090a0161100122002a00 "$(yaml_value responseHex)" "pods that came under both, echoed once"
assert_exit 2 "best-options without a file" ctl best-options
printf 'options: [{group: a, pods: [{cpu: lots}]}]\n' >"$TMP/bad.yaml"
assert_exit 2 "best-options with a bad quantity" ctl best-options "$TMP/bad.yaml"
assert_match "bad.yaml:1:[0-9]+: " "$ERR" "the file error names the position"
printf 'options: [{group: a, pods: [{cpu: 1, namespace: ns, colour: red}]}]\n' >"$TMP/typo.yaml"
assert_exit 2 "best-options with an unknown pod key" ctl best-options "$TMP/typo.yaml"
assert_match "typo.yaml:1:53: unknown key colour" "$ERR" "an unknown key is an error at its position"

log "plaintext is refused on the TLS port"
assert_status "UNAVAILABLE|INTERNAL|UNKNOWN" "plaintext client" \
    "$FRUGAL" ctl --addr "$ADDR" --timeout 3000 best-options "$TMP/design.yaml"

stop_server
finish
