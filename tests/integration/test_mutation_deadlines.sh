#!/usr/bin/env bash
# A change is answered within its caller's deadline or not made: a call whose deadline
# leaves no time to make it is DEADLINE_EXCEEDED at once (not "gave up waiting for
# earlier changes" when there were none); a change whose preparation runs past the
# deadline (half a million new instances in 200 ms) is dropped, so a caller told it
# failed finds nothing changed. DeleteNodes: an empty list names the group, and an
# unknown group is NOT_FOUND whatever the list.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
P=/clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider
cat >"$TMP/frugal.yaml" <<EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $TMP/state.yaml
provider:
  kind: simulated
  boot_seconds: 3600
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    max_size: 10
  - id: big
    machine_type: n1-standard-2
    max_size: 2000000
EOF
start_server "$TMP/frugal.yaml"

log "a deadline that leaves no time to make the change"
assert_status DEADLINE_EXCEEDED "increase with a 250 ms deadline" ctl --timeout 250 increase pool-a 1
assert_match "this call's deadline leaves [0-9]+ ms to make the change" "$ERR" \
    "the message says the deadline is too short"
assert_no_match "earlier changes" "$ERR" "no earlier change is blamed"
assert_eq 0 "$(target_size pool-a)" "nothing changed"
assert_ok "the same increase with a 2 s deadline" ctl --timeout 2000 increase pool-a 1
assert_eq 1 "$(target_size pool-a)" "made"

log "a change prepared past its deadline is dropped"
run ctl --timeout 400 increase big 500000
assert_eq 1 "$RC" "the caller is told the increase failed"
assert_match "DEADLINE_EXCEEDED" "$ERR" "as DEADLINE_EXCEEDED"
for _ in $(seq 1 600); do
    grep -q "preparing the change took past this call's deadline" "$SERVER_LOG" && break
    sleep 0.1
done
assert_match "node_group=big delta=500000 code=DEADLINE_EXCEEDED message=\"preparing the change took past this call's deadline: nothing changed\"" \
    "$(cat "$SERVER_LOG")" "the server logs the change it dropped"
assert_eq 0 "$(target_size big)" "nothing changed"
stop_server
start_server "$TMP/frugal.yaml"
assert_eq 0 "$(target_size big)" "nor after a restart"

log "DeleteNodes with no nodes"
printf '\x12\x06pool-a' >"$TMP/empty.bin"
assert_status INVALID_ARGUMENT "an empty list" ctl raw "$P/NodeGroupDeleteNodes" "$TMP/empty.bin"
assert_match "delete from pool-a: no nodes given" "$ERR" "the message names the group"
printf '\x12\x06nosuch' >"$TMP/unknown.bin"
assert_status NOT_FOUND "an empty list for an unknown group" ctl raw "$P/NodeGroupDeleteNodes" "$TMP/unknown.bin"

stop_server
finish
