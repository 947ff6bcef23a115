#!/usr/bin/env bash
# The etcd Watch's liveness and hand edits of the store, against a real three-member
# etcd: a member that hangs (SIGSTOP) keeps a replica's Watch stream open and silent; the
# replica notices that keys changed which its Watch did not bring, marks its cache stale,
# reopens the Watch on another member and catches up. A group key deleted by hand is
# written back by the leader from its copy (a restart would otherwise take the group at
# its initial size and forget its machines); a corrupt one makes writes fail as such,
# not as a race with another replica.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

etcd_start 3
P1=$(free_port)
P2=$(free_port)
O1=$(free_port)
replica_config "$TMP/r1.yaml" "$P1" /frugal/w/
replica_config "$TMP/r2.yaml" "$P2" /frugal/w/
echo "ops_listen: 127.0.0.1:$O1" >>"$TMP/r1.yaml"
# r1 asks member 1 first, r2 member 0: r1's Watch is on member 1.
sed -i "s|endpoints: .*|endpoints: [${ETCD_CLIENT[1]}, ${ETCD_CLIENT[0]}, ${ETCD_CLIENT[2]}]|" "$TMP/r1.yaml"
R1="127.0.0.1:$P1"
R2="127.0.0.1:$P2"
stale() { curl -s "http://127.0.0.1:$O1/metrics" | awk '$1 == "frugal_state_cache_stale" { print $2 }'; }

ADDR=$R1 start_server "$TMP/r1.yaml"
PID1=$SERVER_PID LOG1=$SERVER_LOG
ADDR=$R2 start_server "$TMP/r2.yaml"
PID2=$SERVER_PID LOG2=$SERVER_LOG
ADDR=$R2 assert_ok "increase on r2" ctl increase web-a 1
for _ in $(seq 1 30); do [ "$(ADDR=$R1 target_size web-a)" = 1 ] && break; sleep 0.1; done
assert_eq 1 "$(ADDR=$R1 target_size web-a)" "r1 sees r2's change"

log "a member that hangs: r1's Watch on it is found stuck, reopened elsewhere, caught up"
kill -STOP "${ETCD_PID[1]}"
# The other two elect a raft leader again if member 1 was it: retry until they have.
for k in 1 2 3; do
    for _ in $(seq 1 50); do ADDR=$R2 ctl increase web-a 1 >/dev/null 2>&1 && break; sleep 0.1; done
done
# (A refused call "may or may not have been applied": the target is r2's, at least 4.)
WANT=$(ADDR=$R2 target_size web-a)
[ "$WANT" -ge 4 ] && pass || fail "r2 made three increases while member 1 hangs (target $WANT)"
caught=0
for _ in $(seq 1 150); do
    [ "$(ADDR=$R1 target_size web-a)" = "$WANT" ] && caught=1 && break
    sleep 0.1
done
[ $caught = 1 ] && pass || fail "r1 never caught up with target $WANT (it has $(ADDR=$R1 target_size web-a))"
# Found by its own check, or first by a refused write of r1's (the leader's refresh) that
# waited for the Watch in vain: either reopens it elsewhere.
assert_match "etcd Watch stuck: keys changed after revision|this replica's cache is at revision [0-9]+, behind [0-9]+: the Watch is not current" \
    "$(cat "$LOG1")" "the stuck Watch is logged"
for _ in $(seq 1 50); do [ "$(stale)" = 0 ] && break; sleep 0.1; done
assert_eq 0 "$(stale)" "the cache is current again"
ADDR=$R1 assert_ok "r1 writes again" ctl increase web-a 1
kill -CONT "${ETCD_PID[1]}"

log "a group key deleted by hand: the leader writes it back from its copy"
WANT=$((WANT + 1))
for _ in $(seq 1 30); do [ "$(ADDR=$R2 target_size web-a)" = "$WANT" ] && break; sleep 0.1; done
curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/deleterange" -d "{\"key\":\"$(b64 /frugal/w/groups/web-a)\"}" >/dev/null
back=""
for _ in $(seq 1 50); do
    back=$(etcd_get /frugal/w/groups/web-a)
    [ -n "$back" ] && break
    sleep 0.1
done
assert_match "target=$WANT" "$back" "the key is back with its target"
# A follower's commit may bring the key back first (it compares against an absent key
# once it saw the deletion); the leader's Watch, just reopened after the hang, still
# brings it the deletion, and the leader says so when it does.
for _ in $(seq 1 100); do
    grep -Eq "was deleted \(by hand, or by a replica whose config no longer has it\): written back" \
        "$LOG1" "$LOG2" && break
    sleep 0.1
done
assert_match "was deleted \(by hand, or by a replica whose config no longer has it\): written back" \
    "$(cat "$LOG1" "$LOG2")" "the leader says so"
assert_eq "$WANT" "$(ADDR=$R1 target_size web-a)" "r1 keeps its target"
assert_eq "$WANT" "$(ADDR=$R2 target_size web-a)" "r2 keeps its target"

log "the whole prefix deleted by hand: the leader writes the group and the schema back"
curl -sf -X POST "${ETCD_CLIENT[0]}/v3/kv/deleterange" \
    -d "{\"key\":\"$(b64 /frugal/w/)\",\"range_end\":\"$(b64 /frugal/w0)\"}" >/dev/null
for _ in $(seq 1 100); do
    [ -n "$(etcd_get /frugal/w/schema)" ] && [ -n "$(etcd_get /frugal/w/groups/web-a)" ] && break
    sleep 0.1
done
assert_eq "frugal-state-etcd version=1" "$(etcd_get /frugal/w/schema)" "the schema key is back"
assert_match "target=$WANT" "$(etcd_get /frugal/w/groups/web-a)" "the group key is back"
ADDR=$R2 SERVER_PID=$PID2 stop_server
ADDR=$R2 start_server "$TMP/r2.yaml"
PID2=$SERVER_PID LOG2=$SERVER_LOG
assert_eq "$WANT" "$(ADDR=$R2 target_size web-a)" "a replica restarted on it resumes the group"

log "a corrupt group key: writes fail naming it, not as a race; a valid value heals it"
good=$(etcd_get /frugal/w/groups/web-a)
etcd_put /frugal/w/groups/web-a "garbage"
sleep 0.5
ADDR=$R2 assert_status FAILED_PRECONDITION "increase over a corrupt key" ctl increase web-a 1
assert_match "refused as corrupt" "$ERR" "the corrupt key is the reason"
ADDR=$R1 assert_status FAILED_PRECONDITION "increase over a corrupt key on r1" ctl increase web-a 1
assert_match '^frugal_etcd_txn_refused_total\{reason="unreadable"\} [1-9]' \
    "$(curl -s "http://127.0.0.1:$O1/metrics")" "counted as unreadable"
etcd_put /frugal/w/groups/web-a "$good"
sleep 0.5
ADDR=$R2 assert_ok "increase once healed" ctl increase web-a 1

log "a target another replica sets past this replica's max_size: adopted, with a warning"
T=$(ADDR=$R1 target_size web-a)
ADDR=$R2 SERVER_PID=$PID2 stop_server
MAX_SIZE=$T replica_config "$TMP/r2-small.yaml" "$P2" /frugal/w/
ADDR=$R2 start_server "$TMP/r2-small.yaml"
PID2=$SERVER_PID LOG2=$SERVER_LOG
ADDR=$R1 assert_ok "r1 (max_size 10) increases past r2's max_size $T" ctl increase web-a 1
for _ in $(seq 1 30); do [ "$(ADDR=$R2 target_size web-a)" = $((T + 1)) ] && break; sleep 0.1; done
assert_eq $((T + 1)) "$(ADDR=$R2 target_size web-a)" "r2 adopts the shared target"
assert_match "warn .*node group web-a: another replica set its target to $((T + 1)), outside this replica's min_size 0 / max_size $T: the replicas' configurations differ" \
    "$(cat "$LOG2")" "and warns that the replicas' configurations differ"

ADDR=$R1 SERVER_PID=$PID1 stop_server
ADDR=$R2 SERVER_PID=$PID2 stop_server
etcd_stop
finish
