#!/usr/bin/env bash
# The exec provider through the real server: a bash hook creates instances (creating,
# then running with the provider id it prints), fails with exit 3 or 1 (the error shows
# in `ctl nodes` and DecreaseTargetSize drops those instances), and deletes nodes; the
# new ids resolve through NodeGroupForNode; a restart re-runs the work left pending.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
HOOK="$TMP/hook"
STATE="$TMP/state.json"

# The hook logs each call; create waits while $TMP/hold exists, sleeps $TMP/delay seconds
# (when present), then fails with the status in $TMP/fail-GROUP (when present), else
# prints the real provider id.
cat >"$HOOK" <<HOOK_EOF
#!/bin/bash
D=$TMP
echo "\$*|\$FRUGAL_INSTANCE|\$FRUGAL_PROVIDER_ID|\$FRUGAL_MACHINE_TYPE|\$FRUGAL_ZONE|\$FRUGAL_LABELS|\$FRUGAL_CPU|\$FRUGAL_MEMORY" >> \$D/calls
case \$1 in
create)
    echo \$\$ > \$D/pid-\$3
    while [ -f \$D/hold ]; do sleep 0.1; done
    [ -f \$D/delay ] && sleep "\$(cat \$D/delay)"
    if [ -f \$D/fail-\$2 ]; then
        if [ -f \$D/msg-\$2 ]; then cat \$D/msg-\$2 >&2; else echo "quota exceeded in \$FRUGAL_ZONE" >&2; fi
        exit "\$(cat \$D/fail-\$2)"
    fi
    if [ -f \$D/id-\$2 ]; then cat \$D/id-\$2; else echo "openstack:///\$3-uuid"; fi
    ;;
delete)
    echo "\$3" >> \$D/deleted
    ;;
esac
exit 0
HOOK_EOF
chmod +x "$HOOK"

cat >"$TMP/frugal.yaml" <<CONFIG_EOF
listen:
  - address: 127.0.0.1:$PORT
state_file: $STATE
provider:
  kind: exec
  command: $HOOK
  timeout: 20s
  parallelism: 2
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    zone: us-central1-a
    min_size: 0
    max_size: 5
    labels: {team: web}
  - id: pool-b
    machine_type: n1-standard-4
    zone: us-central1-b
    min_size: 0
    max_size: 5
  - id: pool-c
    machine_type: n1-standard-2
    zone: us-central1-c
    min_size: 1
    max_size: 2
CONFIG_EOF

# state_of PROVIDER_ID: its STATE column in the `ctl nodes` output in $OUT.
state_of() {
    echo "$OUT" | awk -v id="$1" '$1 == id { print $2; found = 1 } END { if (!found) print "gone" }'
}

# wait_nodes GROUP REGEX: poll `ctl nodes GROUP` (10 s at most) until REGEX matches.
wait_nodes() {
    local i
    for i in $(seq 1 100); do
        run ctl nodes "$1"
        if echo "$OUT" | grep -Eq -- "$2"; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

assert_ok "check accepts the exec config" "$FRUGAL" check -c "$TMP/frugal.yaml"
assert_match "exec $HOOK, timeout 20s, parallelism 2" "$OUT" "check summary names the hook"

echo 1 >"$TMP/fail-pool-c" # pool-c's first instance, made at start for its min_size, fails
start_server "$TMP/frugal.yaml"

log "increase: creating, then running with the hook's provider id"
touch "$TMP/hold"
assert_ok "increase pool-a" ctl increase pool-a 2
assert_ok "nodes right after" ctl nodes pool-a
assert_eq creating "$(state_of frugal://pool-a/pool-a-1)" "pool-a-1 creating at first"
assert_eq creating "$(state_of frugal://pool-a/pool-a-2)" "pool-a-2 creating at first"
rm -f "$TMP/hold"
wait_nodes pool-a "^openstack:///pool-a-2-uuid +running" || fail "pool-a-2 never ran"
wait_nodes pool-a "^openstack:///pool-a-1-uuid +running" || fail "pool-a-1 never ran"
assert_eq running "$(state_of openstack:///pool-a-1-uuid)" "pool-a-1 running with its real id"
assert_eq gone "$(state_of frugal://pool-a/pool-a-1)" "placeholder id replaced"
assert_ok "node-group-for-node of the real id" ctl node-group-for-node openstack:///pool-a-1-uuid
assert_match "^pool-a " "$OUT" "the real id resolves to pool-a"
assert_ok "node-group-for-node of the placeholder" ctl node-group-for-node frugal://pool-a/pool-a-1
assert_match "no node group" "$OUT" "the placeholder no longer resolves"
assert_match "^create pool-a pool-a-1\|pool-a-1\|frugal://pool-a/pool-a-1\|n1-standard-2\|us-central1-a\|team=web\|2\|7680Mi$" \
    "$(cat "$TMP/calls")" "hook argv and environment"

log "failures: exit 3 is OutOfResources (class 1), exit 1 CreateFailed (class 99)"
echo 3 >"$TMP/fail-pool-b"
assert_ok "increase pool-b" ctl increase pool-b 1
wait_nodes pool-b "OutOfResources" || fail "no OutOfResources error shown"
assert_match "^frugal://pool-b/pool-b-1 +creating +OutOfResources +1 +quota exceeded in us-central1-b$" \
    "$OUT" "ctl nodes shows ERROR, CLASS and the hook's message"
echo 1 >"$TMP/fail-pool-b"
assert_ok "increase pool-b again" ctl increase pool-b 1
wait_nodes pool-b "CreateFailed" || fail "no CreateFailed error shown"
assert_match "^frugal://pool-b/pool-b-2 +creating +CreateFailed +99 +hook create exited with status 1: quota exceeded" \
    "$OUT" "other failures are class 99"
assert_eq 2 "$(target_size pool-b)" "failed instances count until CA decreases the target"
assert_ok "decrease drops the failed instances" ctl decrease pool-b -2
assert_eq 0 "$(target_size pool-b)" "pool-b target after the decrease"
# The OutOfResources one made nothing (exit 3) and goes; the CreateFailed one may have
# made something: its delete runs, with the placeholder id, before it goes.
for _ in $(seq 1 100); do
    run ctl nodes pool-b
    echo "$OUT" | grep -q "pool-b-" || break
    sleep 0.1
done
assert_no_match "pool-b-" "$OUT" "no pool-b instance left"
assert_eq "frugal://pool-b/pool-b-2" "$(cat "$TMP/deleted" 2>/dev/null)" \
    "the failed create's delete ran with its placeholder, the out-of-resources one's did not"
rm -f "$TMP/deleted"

log "at min_size, deleting an instance that failed to create replaces it"
wait_nodes pool-c "CreateFailed" || fail "pool-c-1 did not fail"
rm -f "$TMP/fail-pool-c"
# CA deletes it at its next loop; refused, CA >= 1.28 would lower the target instead,
# be refused again, and stop autoscaling the whole cluster.
assert_ok "delete-nodes of the failed instance at min_size" ctl delete-nodes pool-c frugal://pool-c/pool-c-1
assert_eq 1 "$(target_size pool-c)" "the target stays at min_size"
wait_nodes pool-c "^openstack:///pool-c-2-uuid +running" || fail "no replacement ran"
assert_match "node group pool-c: 1 instance\(s\) that failed to create replaced to stay at min_size 1" \
    "$(cat "$SERVER_LOG")" "the replacement is logged"
assert_status FAILED_PRECONDITION "a running instance at min_size is still kept" \
    ctl delete-nodes pool-c openstack:///pool-c-2-uuid
assert_match "would go below min_size 1" "$ERR" "with the reason"
for _ in $(seq 1 100); do grep -q "frugal://pool-c/pool-c-1" "$TMP/deleted" 2>/dev/null && break; sleep 0.1; done
assert_eq "frugal://pool-c/pool-c-1" "$(cat "$TMP/deleted" 2>/dev/null)" "the failed create's delete ran"
rm -f "$TMP/deleted"

log "delete-nodes runs the delete hook"
assert_ok "delete-nodes" ctl delete-nodes pool-a openstack:///pool-a-1-uuid
for _ in $(seq 1 100); do
    run ctl nodes pool-a
    [ "$(state_of openstack:///pool-a-1-uuid)" = gone ] && break
    sleep 0.1
done
assert_eq gone "$(state_of openstack:///pool-a-1-uuid)" "deleted instance gone"
assert_eq running "$(state_of openstack:///pool-a-2-uuid)" "the other one stays"
assert_eq "openstack:///pool-a-1-uuid" "$(cat "$TMP/deleted" 2>/dev/null)" \
    "the delete hook got the provider id"
assert_eq 1 "$(target_size pool-a)" "pool-a target after delete-nodes"

# crash_mid_create INSTANCE [RERUN_DELAY]: increase pool-a by one whose create hangs,
# kill -9 frugal while it runs, end the hook (its own process group outlives frugal, as a
# reboot would not let it), start again; the re-run create sleeps RERUN_DELAY seconds.
crash_mid_create() {
    echo 30 >"$TMP/delay"
    assert_ok "increase pool-a" ctl increase pool-a 1
    sleep 0.3
    kill_server_hard
    kill -KILL -- "-$(cat "$TMP/pid-$1")" 2>/dev/null
    rm -f "$TMP/delay" "$TMP/deleted"
    [ -n "${2:-}" ] && echo "$2" >"$TMP/delay"
    start_server "$TMP/frugal.yaml"
}

log "restart: a create left pending is re-run"
crash_mid_create pool-a-3
wait_nodes pool-a "^openstack:///pool-a-3-uuid +running" || fail "pending create not re-run after restart"
assert_ok "node-group-for-node after restart" ctl node-group-for-node openstack:///pool-a-2-uuid
assert_match "^pool-a " "$OUT" "ids persisted across the restart"

log "restart: an instance dropped after a crash in its create is deleted, not forgotten"
# The killed create may have made the machine: whether its create is re-run, queued or
# running when CA drops it, its delete runs (placeholder id, or the id a re-run printed).
# The re-run is slowed so that it cannot finish (and leave a running node, which a
# decrease may not drop) before the decrease arrives on a loaded machine.
crash_mid_create pool-a-4 5
assert_ok "decrease at once" ctl decrease pool-a -1
rm -f "$TMP/delay"
for _ in $(seq 1 300); do
    grep -q "pool-a-4" "$TMP/deleted" 2>/dev/null && break
    sleep 0.1
done
assert_match "^(frugal://pool-a/pool-a-4|openstack:///pool-a-4-uuid)$" "$(cat "$TMP/deleted" 2>/dev/null)" \
    "the dropped instance's delete ran"
for _ in $(seq 1 50); do
    run ctl nodes pool-a
    echo "$OUT" | grep -q "pool-a-4" || break
    sleep 0.1
done
assert_no_match "pool-a-4" "$OUT" "then it is gone"
stop_server

log "a message that is not UTF-8 and an id in frugal's own scheme: the state still loads"
printf 'erreur: d\xe9j\xe0 utilis\xe9\n' >"$TMP/msg-pool-b"
echo 1 >"$TMP/fail-pool-b"
start_server "$TMP/frugal.yaml"
assert_ok "increase pool-b (Latin-1 message)" ctl increase pool-b 1
wait_nodes pool-b "CreateFailed" || fail "no CreateFailed error shown"
assert_match "hook create exited with status 1: erreur: d\?j\? utilis\?$" "$OUT" "the message is scrubbed to UTF-8"
rm -f "$TMP/fail-pool-b" "$TMP/msg-pool-b"
echo "frugal://pool-a/pool-a-9" >"$TMP/id-pool-b"
assert_ok "increase pool-b (a frugal:// id)" ctl increase pool-b 1
wait_nodes pool-b "placeholder scheme" || true # asserted below
assert_match "pool-b-[0-9]+ +creating +CreateFailed +99 +hook create printed a provider id that uses frugal's own placeholder scheme frugal://" \
    "$OUT" "an id in frugal's scheme is refused"
printf 'abc\0def\n' >"$TMP/id-pool-b"
assert_ok "increase pool-b (an id with a NUL byte)" ctl increase pool-b 1
wait_nodes pool-b "NUL byte" || true # asserted below
assert_match "CreateFailed +99 +hook create printed a provider id that is empty or holds a NUL byte" \
    "$OUT" "an id with a NUL byte is refused, not cut short"
rm -f "$TMP/id-pool-b"
stop_server
start_server "$TMP/frugal.yaml"
assert_ok "the state loads after both" ctl nodes pool-b
assert_match "erreur: d\?j\? utilis\?" "$OUT" "the scrubbed message came back from the state"
stop_server

finish
