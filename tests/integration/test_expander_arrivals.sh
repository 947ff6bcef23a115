#!/usr/bin/env bash
# demand-fit reads how fast pods come from their creation times (metadata.
# creationTimestamp), not from when the requests reach it: the same ten pods, sent
# within seconds to the real server, buy the snug n1-standard-2 when they were created
# a hundred hours apart (the large node's room would stay empty for days), and the
# n1-standard-16 with room for nine more when they were created 18 s apart. Pods
# without a creation time are seen when the request comes, on the wall clock; a pod
# asked about again is remembered once, and one first seen long after it was created
# counts as arriving with the latest pod.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
cat >"$TMP/frugal.yaml" <<EOF2
listen: [{address: 127.0.0.1:$PORT}]
node_groups:
  - {id: s2, machine_type: n1-standard-2, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s16, machine_type: n1-standard-16, zone: us-central1-a, min_size: 0, max_size: 10}
EOF2
ADDR="127.0.0.1:$PORT"

# ask N CREATED: one best-options call for web-N, a 1.5-core pod created at CREATED
# (unix seconds; "" for none); the winner in $WINNER, its arrivals_per_hour in $RATE.
# ctl also asks about each option alone, for its figures: the server remembers the pod
# once, by its name (ctl's pods have no uid).
ask() {
    local name=web-$1 created=${2:+, created: $2}
    cat >"$TMP/best.yaml" <<EOF2
options:
  - {group: s2, node_count: 1, pods: [{name: $name, cpu: 1500m, memory: 2Gi, owner: ReplicaSet$created}]}
  - {group: s16, node_count: 1, pods: [{name: $name, cpu: 1500m, memory: 2Gi, owner: ReplicaSet$created}]}
nodes:
  - {group: s2, machine_type: n1-standard-2, zone: us-central1-a}
  - {group: s16, machine_type: n1-standard-16, zone: us-central1-a}
EOF2
    assert_ok "best-options $name (created ${2:-never})" ctl best-options "$TMP/best.yaml"
    WINNER=$(echo "$OUT" | awk 'NR > 1 && $NF == "*" { print $2; exit }')
    RATE=$(grep 'BestOptions: chose.*"options":2' "$SERVER_LOG" | tail -1 |
        sed -n 's/.*"arrivals_per_hour":\([0-9.e+-]*\).*/\1/p')
}

T0=1767225600 # 2026-01-01T00:00:00Z

# ten STEP WANT WHAT [OLD]: on a fresh server, ask about ten pods, web-I created at
# T0 + I * STEP ("-" for no creation time, "same" for web-0 ten times, no creation
# time), then, with OLD, about web-10 created OLD seconds before T0; the last winner
# must be WANT.
ten() {
    local step=$1 want=$2 what=$3 old=${4:-} i
    start_server "$TMP/frugal.yaml"
    for i in $(seq 0 9); do
        case $step in
        -) ask "$i" "" ;;
        same) ask 0 "" ;;
        *) ask "$i" $((T0 + i * step)) ;;
        esac
    done
    [ -z "$old" ] || ask 10 $((T0 - old))
    assert_eq "$want" "$WINNER" "winner after $what"
    stop_server
}

export FRUGAL_LOG_FORMAT=json
log "pods created 100 hours apart: a slow trickle, the snug node"
ten 360000 s2 "ten pods 100 h apart"
assert_match '^0\.[0-9]+$' "$RATE" "arrivals_per_hour under one [$RATE]"

log "the same pods created 18 s apart: a busy cluster, the large node's room will fill"
ten 18 s16 "ten pods 18 s apart"
assert_match '^[0-9]{3,}(\.[0-9]+)?$' "$RATE" "arrivals_per_hour in the hundreds [$RATE]"

log "then a pod created a year ago (pending all along): held up, not a year of arrivals"
ten 18 s16 "ten pods 18 s apart and one a year old" 31536000
assert_match '^[0-9]{3,}(\.[0-9]+)?$' "$RATE" "arrivals_per_hour still in the hundreds [$RATE]"

log "one pod asked about again and again (it stays pending) is one pod: the snug node"
ten same s2 "the same pod asked ten times"
assert_eq 0 "$RATE" "one pod: no rate"

log "pods without a creation time: seen when asked, within seconds, the large node"
ten - s16 "ten pods asked seconds apart"
unset FRUGAL_LOG_FORMAT

log "BestEffort pods (no requests): the formula ranks them, the small node wins"
cat >"$TMP/besteffort.yaml" <<EOF2
options:
  - {group: s16, node_count: 1, pods: [{name: be, owner: ReplicaSet, count: 3}]}
  - {group: s2, node_count: 1, pods: [{name: be, owner: ReplicaSet, count: 3}]}
nodes:
  - {group: s2, machine_type: n1-standard-2, zone: us-central1-a}
  - {group: s16, machine_type: n1-standard-16, zone: us-central1-a}
EOF2
start_server "$TMP/frugal.yaml"
assert_ok "best-options of BestEffort pods" ctl -o yaml best-options "$TMP/besteffort.yaml"
assert_eq 1 "$(echo "$OUT" | grep -c '^    winner: true$')" "one option answered"
assert_match 'group: "?s2"?' "$(echo "$OUT" | grep -B3 '^    winner: true$')" "the small node"
assert_no_match "none of the 2 options can be scored" "$(cat "$SERVER_LOG")" "not answered unchanged"
stop_server

log "an entry with count N is N distinct pods: the pods an option leaves out are charged each"
# docs/ranking.md's example: eight 1-core pods and two 9-core ones; n1-standard-8 x1
# hosts the eight and leaves the two, which take an n1-standard-16 each later.
cat >"$TMP/frugal.yaml" <<EOF2
listen: [{address: 127.0.0.1:$PORT}]
node_groups:
  - {id: s8, machine_type: n1-standard-8, zone: us-central1-a, min_size: 0, max_size: 10}
  - {id: s16, machine_type: n1-standard-16, zone: us-central1-a, min_size: 0, max_size: 10}
EOF2
cat >"$TMP/left.yaml" <<EOF2
options:
  - {group: s8, node_count: 1, pods: [{name: small, cpu: 1, memory: 2Gi, count: 8}]}
  - {group: s16, node_count: 2, pods: [{name: small, cpu: 1, memory: 2Gi, count: 8}, {name: big, cpu: 9, memory: 8Gi, count: 2}]}
nodes:
  - {group: s8, machine_type: n1-standard-8, zone: us-central1-a}
  - {group: s16, machine_type: n1-standard-16, zone: us-central1-a}
EOF2
start_server "$TMP/frugal.yaml"
assert_ok "best-options with pods left out" ctl best-options "$TMP/left.yaml"
assert_eq "s16 1.281152" "$(echo "$OUT" | awk '$NF == "*" { print $2, $9 }')" "the 16-core option wins"
assert_eq "1.890931" "$(echo "$OUT" | awk '$2 == "s8" { print $9 }')" "s8 charged for both 9-core pods"
stop_server

log "SIGTERM after a large answer: the exit does not wait out gRPC's backup poller"
# 20 options of 20 000 pods each: the 27 MB answer's write blocks, and gRPC 1.51 then
# polls the socket from a thread that sleeps up to 10 s, which its cleanup joins.
{
    echo "options:"
    for i in $(seq 0 19); do
        echo "  - {group: s8, node_count: 5, pods: [{name: p$i, cpu: 100m, memory: 100Mi, count: 20000}]}"
    done
    echo "nodes: [{group: s8, machine_type: n1-standard-8, zone: us-central1-a}]"
} >"$TMP/large.yaml"
start_server "$TMP/frugal.yaml"
assert_ok "a 27 MB BestOptions" ctl --timeout 60000 best-options "$TMP/large.yaml"
began=$(date +%s%N)
stop_server
took_ms=$((($(date +%s%N) - began) / 1000000))
assert_match '^[0-9]+$' "$took_ms" "stop timed"
[ "$took_ms" -lt 5000 ] && pass "exit ${took_ms} ms after SIGTERM (under 5 s)" ||
    fail "exit took ${took_ms} ms after SIGTERM (gRPC's backup poller waited out?)"

finish
