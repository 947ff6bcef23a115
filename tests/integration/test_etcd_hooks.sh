#!/usr/bin/env bash
# Hooks with several replicas on etcd: only the leader runs the exec provider's hooks,
# whichever replica took the call; each instance's create hook runs once; when the
# leader dies in the middle of a hook, its hook process (and what the hook started)
# dies with it and the new leader runs it again, never beside the old run; when the
# leader is paused (SIGSTOP) past its lease, its hook is killed before the lease ends,
# so the new leader's rerun never overlaps it either. Reconciliation's lists run on the
# leader only.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

HOOK="$TMP/hook"
# alive PID: the process runs (a zombie whose parent died does not count).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null); [ -n "$s" ] && [ "${s#Z}" = "$s" ]; }
# The hook holds the lock $TMP/lock.INSTANCE while it runs: finding it held by a live
# run is an overlap (a lock left by a killed run is taken over).
# Each line names the frugal that ran the hook: the parent of the hook's guard process.
cat >"$HOOK" <<HOOK_EOF
#!/bin/bash
$(declare -f alive)
delay=\$(cat $TMP/delay 2>/dev/null)
frugal=\$(ps -o ppid= -p \$PPID | tr -d ' ')
if [ "\$1" = list ]; then
    echo "list \$2 \$frugal" >> $TMP/lists
    cat $TMP/machines 2>/dev/null
    exit 0
fi
echo \$\$ > $TMP/pid.\$3
echo "start \$1 \$3 \$frugal" >> $TMP/calls
lock=$TMP/lock.\$3
if ! mkdir "\$lock" 2>/dev/null; then
    other=\$(cat "\$lock/pid" 2>/dev/null)
    [ -n "\$other" ] && alive "\$other" && echo "OVERLAP \$1 \$3 \$other \$\$" >> $TMP/calls
fi
echo \$\$ > "\$lock/pid"
if [ -n "\$delay" ]; then
    sleep 300 &  # what a hook starts lives in its process group
    echo \$! > $TMP/child.\$3
    sleep "\$delay"
fi
echo "end \$1 \$3 \$frugal" >> $TMP/calls
rm -rf "\$lock"
if [ "\$1" = create ]; then
    echo "real:///\$3" >> $TMP/machines
    echo "real:///\$3"
fi
exit 0
HOOK_EOF
chmod +x "$HOOK"

etcd_start 1
hook_config() { # FILE PORT
    replica_config "$1" "$2" /frugal/hooks/
    sed -i "s|^provider:.*|provider: {kind: exec, command: $HOOK, timeout: 20s, reconcile_interval: 1s}|" "$1"
}
P1=$(free_port)
P2=$(free_port)
hook_config "$TMP/r1.yaml" "$P1"
hook_config "$TMP/r2.yaml" "$P2"
ADDR=127.0.0.1:$P1 start_server "$TMP/r1.yaml"
PID1=$SERVER_PID LOG1=$SERVER_LOG
ADDR=127.0.0.1:$P2 start_server "$TMP/r2.yaml"
PID2=$SERVER_PID LOG2=$SERVER_LOG
if grep -q "info  leader:" "$LOG1"; then
    LEAD=$PID1 FOLLOW=127.0.0.1:$P2 FPID=$PID2 FLOG=$LOG2 LCFG=$TMP/r1.yaml LADDR=127.0.0.1:$P1
else
    LEAD=$PID2 FOLLOW=127.0.0.1:$P1 FPID=$PID1 FLOG=$LOG1 LCFG=$TMP/r2.yaml LADDR=127.0.0.1:$P2
fi

# slow_create INSTANCE PID SECONDS: increase web-a by one through $FOLLOW with a hook that
# sleeps SECONDS (until $TMP/delay is removed), wait until frugal PID started INSTANCE's
# create, and set HOOK_PID to that hook's process.
slow_create() {
    echo "$3" >"$TMP/delay"
    ADDR=$FOLLOW assert_ok "increase web-a" ctl increase web-a 1
    for _ in $(seq 1 150); do grep -q "^start create $1 $2" "$TMP/calls" && break; sleep 0.1; done
    assert_match "start create $1 $2" "$(cat "$TMP/calls")" "the leader started the hook"
    for _ in $(seq 1 50); do [ -s "$TMP/child.$1" ] && break; sleep 0.1; done
    HOOK_PID=$(cat "$TMP/pid.$1")
}
# gone PID TENTHS WHAT: PID no longer runs within TENTHS tenths of a second.
gone() {
    for _ in $(seq 1 "$2"); do alive "$1" || break; sleep 0.1; done
    if alive "$1"; then fail "$3: $1 still runs"; else pass; fi
}

log "an increase on the follower: the leader runs the hooks, once each"
ADDR=$FOLLOW assert_ok "increase on the follower" ctl increase web-a 2
for _ in $(seq 1 150); do [ "$(cat "$TMP/calls" 2>/dev/null | grep -c "^end create")" -ge 2 ] && break; sleep 0.1; done
assert_eq 2 "$(grep -c '^start create' "$TMP/calls")" "two create hooks"
assert_eq 0 "$(grep '^start create' "$TMP/calls" | grep -vc " $LEAD\$")" "all run by the leader"
for _ in $(seq 1 100); do ADDR=$FOLLOW ctl -o yaml nodes web-a | grep -q 'real:///web-a-2' && break; sleep 0.1; done
assert_match "real:///web-a-2" "$(ADDR=$FOLLOW ctl -o yaml nodes web-a)" "the follower sees the hook's result"
for _ in $(seq 1 100); do [ "$(grep -c '^list web-a' "$TMP/lists" 2>/dev/null)" -ge 2 ] && break; sleep 0.1; done
assert_match "^list web-a $LEAD$" "$(cat "$TMP/lists")" "the leader lists its groups"
assert_eq 0 "$(grep -vc " $LEAD\$" "$TMP/lists")" "no list on the follower"

log "the leader dies during a hook: the hook dies too, the new leader runs it again"
slow_create web-a-3 "$LEAD" 6
CHILD_PID=$(cat "$TMP/child.web-a-3")
kill -KILL "$LEAD"
wait "$LEAD" 2>/dev/null
rm -f "$TMP/delay"
gone "$HOOK_PID" 10 "the hook of the killed leader"
gone "$CHILD_PID" 10 "the process the hook started"
for _ in $(seq 1 200); do grep -q "^end create web-a-3 $FPID" "$TMP/calls" && break; sleep 0.1; done
assert_match "end create web-a-3 $FPID" "$(cat "$TMP/calls")" "the new leader ran it again"
assert_match "info  leader:" "$(cat "$FLOG")" "the follower became leader"
for _ in $(seq 1 100); do grep -q "^list web-a $FPID$" "$TMP/lists" && break; sleep 0.1; done
assert_match "^list web-a $FPID$" "$(cat "$TMP/lists")" "the new leader lists"
for _ in $(seq 1 100); do ADDR=$FOLLOW ctl -o yaml nodes web-a | grep -q 'real:///web-a-3' && break; sleep 0.1; done
assert_match "real:///web-a-3" "$(ADDR=$FOLLOW ctl -o yaml nodes web-a)" "and its result is kept"
assert_eq 1 "$(grep -c "^start create web-a-1 " "$TMP/calls")" "a finished hook is not run again"
assert_eq 0 "$(grep -c '^OVERLAP' "$TMP/calls")" "no hook ran twice at once"

log "a leader paused past its lease: its hook dies before the lease ends, the new leader reruns it"
ADDR=$LADDR start_server "$LCFG"
NPID=$SERVER_PID
slow_create web-a-4 "$FPID" 8
CHILD_PID=$(cat "$TMP/child.web-a-4")
kill -STOP "$FPID"
t0=$(date +%s%N)
rm -f "$TMP/delay"
gone "$HOOK_PID" 25 "the hook of the paused leader (lease_ttl 2s)"
gone "$CHILD_PID" 5 "the process that hook started"
killed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
log "the paused leader's hook was gone ${killed_ms} ms after SIGSTOP"
for _ in $(seq 1 150); do grep -q "^end create web-a-4 $NPID" "$TMP/calls" && break; sleep 0.1; done
assert_match "end create web-a-4 $NPID" "$(cat "$TMP/calls")" "the new leader ran it meanwhile"
assert_eq 0 "$(grep -c '^OVERLAP' "$TMP/calls")" "never beside the paused leader's run"
kill -CONT "$FPID"
for _ in $(seq 1 30); do grep -q "leadership lease ran out" "$FLOG" && break; sleep 0.1; done
assert_match "hook create killed: this replica's leadership lease ran out" "$(cat "$FLOG")" \
    "the resumed old leader says why its hook ended"
assert_no_match "end create web-a-4 $FPID" "$(cat "$TMP/calls")" "its hook never finished"
for _ in $(seq 1 30); do ADDR=$LADDR ctl -o yaml nodes web-a | grep -q 'real:///web-a-4' && break; sleep 0.1; done
assert_match "real:///web-a-4" "$(ADDR=$LADDR ctl -o yaml nodes web-a)" "the new leader's result is kept"
for _ in $(seq 1 30); do ADDR=$FOLLOW ctl -o yaml nodes web-a | grep -q 'real:///web-a-4' && break; sleep 0.1; done
assert_match "real:///web-a-4" "$(ADDR=$FOLLOW ctl -o yaml nodes web-a)" "and the resumed replica sees it"

etcd_stop
finish
