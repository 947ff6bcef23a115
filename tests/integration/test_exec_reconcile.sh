#!/usr/bin/env bash
# Reconciliation through the real server: with provider.reconcile_interval the hook's
# `list` is run every interval; a running machine that disappeared behind frugal's back is
# replaced after reconcile_missing_after lists (target size kept, its remains deleted); a
# list that fails or prints a malformed line changes nothing and is counted; a listed
# machine frugal does not know is reported (warning, gauge) and, once a reload turns on
# reconcile_delete_unknown, deleted through the delete hook (a failed delete retried no
# sooner than 30 s); a machine another group holds,
# listed by a hook that ignores GROUP, is neither reported nor deleted as a leak; the
# delete of a replaced machine is an instance's delete: retried, and resumed after a restart.
source "$(dirname "$0")/lib.sh"

PORT=$(free_port)
OPS_PORT=$(free_port)
ADDR="127.0.0.1:$PORT"
HOOK="$TMP/hook"
CFG="$TMP/frugal.yaml"
STATE="$TMP/state.yaml"
M="$TMP/machines" # one file per machine: the "infrastructure"
mkdir -p "$M"

cat >"$HOOK" <<HOOK_EOF
#!/bin/bash
D=$TMP
M=$M
case \$1 in
create)
    touch "\$M/\$3"
    [ -f \$D/create-slow ] && sleep 2.5 # the machine is listed before frugal has its id
    echo "test://\$3"
    ;;
delete)
    [ -f \$D/delete-fail ] && { echo "the API is down" >&2; exit 1; }
    rm -f "\$M/\${3#test://}"
    echo "\$3" >> \$D/deleted
    ;;
list)
    echo "\$2" >> \$D/lists
    # 3 means out of resources for a create only: a list that exits 3 failed.
    [ -f \$D/list-fail ] && { echo "cannot reach the API" >&2; exit 3; }
    [ -f \$D/list-hang ] && [ "\$2" = pool-b ] && exec sleep 60
    [ -f \$D/list-bad ] && echo "test://x running but odd"
    for f in \$(ls "\$M"); do echo "test://\$f running"; done
    ;;
esac
exit 0
HOOK_EOF
chmod +x "$HOOK"

# write_config DELETE_UNKNOWN [INTERVAL]
write_config() {
    cat >"$CFG" <<CONFIG_EOF
listen:
  - address: 127.0.0.1:$PORT
ops_listen: 127.0.0.1:$OPS_PORT
state_file: $STATE
provider:
  kind: exec
  command: $HOOK
  timeout: 20s
  reconcile_interval: ${2:-1s}
  reconcile_missing_after: 2
  reconcile_delete_unknown: $1
node_groups:
  - id: pool-a
    machine_type: n1-standard-2
    min_size: 0
    max_size: 5
  - id: pool-b
    machine_type: n1-standard-2
    min_size: 0
    max_size: 2
CONFIG_EOF
}

# metric LINE_REGEX: the value of the first /metrics sample matching it ("" when none).
metric() {
    curl -s --max-time 5 "http://127.0.0.1:$OPS_PORT/metrics" | grep -E "^$1 " | head -1 |
        awk '{ print $2 }'
}

# wait_for SECONDS CMD...: poll CMD every 0.2 s until it succeeds.
wait_for() {
    local limit=$(($1 * 5)) i
    shift
    for i in $(seq 1 "$limit"); do
        "$@" && return 0
        sleep 0.2
    done
    return 1
}

nodes_match() {
    run ctl nodes pool-a
    echo "$OUT" | grep -Eq -- "$1"
}

write_config false
assert_ok "check accepts the reconcile keys" "$FRUGAL" check -c "$CFG"
start_server "$CFG"

log "lists run every interval"
assert_ok "increase pool-a" ctl increase pool-a 2
wait_for 10 nodes_match "^test://pool-a-2 +running" || fail "pool-a-2 never ran"
wait_for 10 nodes_match "^test://pool-a-1 +running" || fail "pool-a-1 never ran"
wait_for 5 test -s "$TMP/lists" || fail "no list ran"
assert_match "^pool-a$" "$(cat "$TMP/lists")" "HOOK list GROUP"
sleep 1.5 # the instances have been running for an interval: they may now be judged

log "a machine removed behind frugal's back is replaced"
rm "$M/pool-a-1"
wait_for 15 nodes_match "^test://pool-a-3 +running" || fail "no replacement ran"
wait_for 5 grep -q "^test://pool-a-1$" "$TMP/deleted" || fail "the remains were not deleted"
wait_for 5 eval '! nodes_match "pool-a-1"' || fail "pool-a-1 stays after its delete ran"
assert_match "^test://pool-a-3 +running" "$OUT" "the replacement runs"
assert_match "^test://pool-a-2 +running" "$OUT" "the other instance stays"
assert_eq 2 "$(target_size pool-a)" "the target size is kept"
assert_match "instance test://pool-a-1 of pool-a is running but missing from 2 lists of the hook: replaced by frugal://pool-a/pool-a-3" \
    "$(cat "$SERVER_LOG")" "the replacement is logged"
assert_eq 1 "$(metric 'frugal_reconcile_replaced_total\{node_group="pool-a"\}')" \
    "frugal_reconcile_replaced_total"
sleep 1.5

log "a malformed list changes nothing"
touch "$TMP/list-bad"
rm "$M/pool-a-2"
wait_for 10 grep -q "list of node group pool-a ignored (malformed): line 1: more than PROVIDER_ID \[STATE\]" \
    "$SERVER_LOG" || fail "the malformed list was not reported"
sleep 2.5
run ctl nodes pool-a
assert_match "^test://pool-a-2 +running" "$OUT" "pool-a-2 is kept while lists are malformed"
MALFORMED=$(metric 'frugal_reconcile_list_failures_total\{node_group="pool-a",reason="malformed"\}')
[ "${MALFORMED:-0}" -ge 2 ] && pass || fail "malformed lists counted: [$MALFORMED]"

log "a failing list changes nothing"
rm "$TMP/list-bad"
touch "$TMP/list-fail"
wait_for 10 grep -q "list of node group pool-a ignored (failed): hook list exited with status 3: cannot reach the API" \
    "$SERVER_LOG" || fail "the failed list was not reported"
sleep 2.5
run ctl nodes pool-a
assert_match "^test://pool-a-2 +running" "$OUT" "pool-a-2 is kept while lists fail"
FAILED=$(metric 'frugal_reconcile_list_failures_total\{node_group="pool-a",reason="failed"\}')
[ "${FAILED:-0}" -ge 2 ] && pass || fail "failed lists counted: [$FAILED]"
RUNS=$(metric 'frugal_hook_runs_total\{verb="list",result="failed"\}')
[ "${RUNS:-0}" -ge 2 ] && pass || fail "the list runs counted as failed, not out of resources: [$RUNS]"
rm "$TMP/list-fail"
wait_for 15 nodes_match "^test://pool-a-4 +running" || fail "pool-a-2 not replaced once lists work"
assert_no_match "pool-a-2" "$OUT" "pool-a-2 replaced once lists work again"
sleep 1.5

log "a list that hangs is killed after one interval (at least 10 s), not provider.timeout (20 s)"
touch "$TMP/list-hang"
T0=$(date +%s)
wait_for 25 grep -q "hook list timed out after 10000 ms: killed" "$SERVER_LOG" ||
    fail "the hanging list was not killed"
ELAPSED=$(($(date +%s) - T0))
[ "$ELAPSED" -le 16 ] && pass || fail "the hanging list was killed after ${ELAPSED} s"
wait_for 5 grep -q "list of node group pool-b ignored (timeout)" "$SERVER_LOG" ||
    fail "its list was not ignored"
rm "$TMP/list-hang"

log "a list that shows none of the running machines is not believed"
mv "$M/pool-a-3" "$TMP/keep-3"
mv "$M/pool-a-4" "$TMP/keep-4"
wait_for 10 grep -q "list of node group pool-a ignored (none_listed): it shows none of the group's 2 running instances" \
    "$SERVER_LOG" || fail "the empty list was not reported"
sleep 2.5
run ctl nodes pool-a
assert_match "^test://pool-a-3 +running" "$OUT" "pool-a-3 is kept"
assert_match "^test://pool-a-4 +running" "$OUT" "pool-a-4 is kept"
NONE=$(metric 'frugal_reconcile_list_failures_total\{node_group="pool-a",reason="none_listed"\}')
[ "${NONE:-0}" -ge 2 ] && pass || fail "lists showing none counted: [$NONE]"
mv "$TMP/keep-3" "$M/pool-a-3"
mv "$TMP/keep-4" "$M/pool-a-4"
sleep 1.5

log "a machine frugal does not know is reported, then deleted once the reload allows it"
touch "$M/stray"
wait_for 10 grep -q "machine test://stray (running) is listed by the hook for node group pool-a but frugal does not know it" \
    "$SERVER_LOG" || fail "the leak was not reported"
assert_eq 1 "$(metric 'frugal_reconcile_unknown_machines\{node_group="pool-a"\}')" \
    "frugal_reconcile_unknown_machines"
# two more lists of every group (pool-a's among them) run and are judged meanwhile
LISTS=$(metric 'frugal_hook_runs_total\{verb="list",result="ok"\}')
more_lists() { [ "$(metric 'frugal_hook_runs_total\{verb="list",result="ok"\}')" -ge $((LISTS + 4)) ]; }
wait_for 10 more_lists || fail "no further lists ran"
sleep 0.5
assert_eq yes "$([ -f "$M/stray" ] && echo yes)" "not deleted without reconcile_delete_unknown"
assert_eq 1 "$(grep -c 'warn .*machine test://stray (running) is listed by the hook for node group pool-a ' "$SERVER_LOG")" \
    "the leak is warned once, not at every list"
write_config true
kill -HUP "$SERVER_PID"
wait_for 10 grep -q "^test://stray$" "$TMP/deleted" 2>/dev/null || fail "the leak was not deleted"
assert_eq no "$([ -f "$M/stray" ] && echo yes || echo no)" "the stray machine is gone"
no_unknown() { [ "$(metric 'frugal_reconcile_unknown_machines\{node_group="pool-a"\}')" = 0 ]; }
wait_for 10 no_unknown || fail "the gauge did not return to 0"
run ctl nodes pool-a
assert_match "^test://pool-a-3 +running" "$OUT" "the known instances stay"
assert_match "^test://pool-a-4 +running" "$OUT" "the known instances stay"

log "a leak whose delete fails is retried no sooner than 30 s, and warned once"
touch "$TMP/delete-fail"
FAILED0=$(metric 'frugal_hook_runs_total\{verb="delete",result="failed"\}')
touch "$M/stray-f"
delete_failed() { [ "$(metric 'frugal_hook_runs_total\{verb="delete",result="failed"\}')" -gt "${FAILED0:-0}" ]; }
wait_for 10 delete_failed || fail "the leak's delete did not run"
LISTS=$(metric 'frugal_hook_runs_total\{verb="list",result="ok"\}')
wait_for 15 more_lists || fail "no further lists ran"
assert_eq $((${FAILED0:-0} + 1)) "$(metric 'frugal_hook_runs_total\{verb="delete",result="failed"\}')" \
    "one delete in the lists of the next seconds (it ran at every list)"
assert_eq 1 "$(grep -c 'warn .*machine test://stray-f (running) is listed by the hook for node group pool-a ' "$SERVER_LOG")" \
    "the leak is warned once"
rm "$M/stray-f" "$TMP/delete-fail"
wait_for 10 no_unknown || fail "the gauge did not return to 0"

log "the hook lists every group's machines: another group's machine is not a leak"
# (the hook above ignores GROUP; reconcile_delete_unknown is on since the reload)
touch "$TMP/create-slow" # pool-a's lists show pool-b-1 while its create runs
assert_ok "increase pool-b" ctl increase pool-b 1
b_running() { run ctl nodes pool-b; echo "$OUT" | grep -Eq "^test://pool-b-1 +running"; }
wait_for 10 b_running || fail "pool-b-1 never ran"
rm "$TMP/create-slow"
wait_for 10 grep -q "the list of node group pool-a shows machines of other node groups (1, test://pool-b-1 first)" \
    "$SERVER_LOG" || fail "the other group's machine was not told apart"
sleep 3 # lists of both groups, while no machine work runs
assert_no_match "pool-b-1|pool-a-3|pool-a-4" "$(cat "$TMP/deleted")" "no known machine deleted"
assert_eq yes "$([ -f "$M/pool-b-1" ] && echo yes)" "pool-b-1's machine stays"
run ctl nodes pool-b
assert_match "^test://pool-b-1 +running" "$OUT" "pool-b keeps its instance"
assert_no_match "machine test://pool-[ab]-[0-9]+ \(running\) is listed by the hook" "$(cat "$SERVER_LOG")" \
    "no known machine called a leak"

log "the delete of a replaced machine is retried, and resumed after a restart"
touch "$TMP/delete-fail"
rm "$M/pool-a-3"
wait_for 15 grep -q "deleting instance test://pool-a-3 of pool-a failed (retried in 30 s): hook delete exited with status 1: the API is down" \
    "$SERVER_LOG" || fail "the replaced machine's delete did not run"
wait_for 10 nodes_match "^test://pool-a-5 +running" || fail "pool-a-3 not replaced"
assert_match "^test://pool-a-3 +deleting" "$OUT" "the replaced instance stays deleting while its delete fails"
assert_eq 2 "$(target_size pool-a)" "the target size is kept"
stop_server
rm "$TMP/delete-fail"
start_server "$CFG"
wait_for 10 grep -q "^test://pool-a-3$" "$TMP/deleted" || fail "the delete was not resumed after the restart"
wait_for 5 eval '! nodes_match "pool-a-3"' || fail "pool-a-3 stays after its delete ran"
assert_match "^test://pool-a-5 +running" "$OUT" "the replacement runs"
assert_match "^test://pool-a-4 +running" "$OUT" "the other instance stays"
assert_eq 2 "$(target_size pool-a)" "the target size is kept"

log "a reload that turns reconciliation off zeroes the leak gauge; a shorter interval applies at once"
write_config false
kill -HUP "$SERVER_PID"
touch "$M/stray2"
one_unknown() { [ "$(metric 'frugal_reconcile_unknown_machines\{node_group="pool-a"\}')" = 1 ]; }
wait_for 10 one_unknown || fail "the leak was not counted"
write_config false 0s
kill -HUP "$SERVER_PID"
wait_for 10 no_unknown || fail "the gauge still shows the leak with reconciliation off"
pool_a_lists() { grep -c '^pool-a$' "$TMP/lists"; }
OFF=$(pool_a_lists)
sleep 2.5
assert_eq "$OFF" "$(pool_a_lists)" "no list runs while reconciliation is off"
write_config false 1h
kill -HUP "$SERVER_PID"
wait_for 10 eval '[ "$(pool_a_lists)" -gt "$OFF" ]' || fail "no list when reconciliation came back"
sleep 2.5
HOURLY=$(pool_a_lists)
assert_eq $((OFF + 1)) "$HOURLY" "one list, then none for an hour"
write_config false 1s
kill -HUP "$SERVER_PID"
wait_for 10 eval '[ "$(pool_a_lists)" -ge $((HOURLY + 2)) ]' ||
    fail "the reload to 1s did not bring the next list forward"
rm -f "$M/stray2"
stop_server

finish
