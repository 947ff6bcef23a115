#!/usr/bin/env bash
# The ledger test on a three-member etcd: clients on three replicas apply IncreaseSize,
# DecreaseTargetSize and DeleteNodes and record every answer, while replicas and etcd members are killed
# with kill -9 and restarted. At the end every acknowledged change is there, the group
# never left [min_size, max_size], and no instance id appears twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd_lib.sh"

RUN_S=${LEDGER_SECONDS:-9}
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
    RUN_S=${LEDGER_SECONDS:-14} # a sanitizer build gets through fewer changes a second
fi
MAX_SIZE=40
etcd_start 3
ADDRS=()
CFGS=()
PIDS=()
for i in 0 1 2; do
    port=$(free_port)
    ADDRS[$i]="127.0.0.1:$port"
    CFGS[$i]="$TMP/r$i.yaml"
    replica_config "${CFGS[$i]}" "$port" /frugal/ledger/
done
for i in 0 1 2; do
    ADDR=${ADDRS[$i]} start_server "${CFGS[$i]}"
    PIDS[$i]=$SERVER_PID
done

restart_replica() {
    kill -KILL "${PIDS[$1]}" 2>/dev/null
    wait "${PIDS[$1]}" 2>/dev/null
    sleep "$2"
    ADDR=${ADDRS[$1]} start_server "${CFGS[$1]}"
    PIDS[$1]=$SERVER_PID
}

client() { # I: one client on replica I until the end time
    local i=$1 end=$2 out="$TMP/ledger.$1" id r
    while [ "$(date +%s)" -lt "$end" ]; do
        r=$((RANDOM % 6))
        if [ "$r" -eq 0 ]; then
            if "$FRUGAL" ctl --addr "${ADDRS[$i]}" --timeout 3000 decrease web-a -1 >/dev/null 2>"$out.err"; then
                echo "dec OK" >>"$out"
            elif grep -Eq '^(UNAVAILABLE|DEADLINE_EXCEEDED|ABORTED)' "$out.err" || ! grep -q ': ' "$out.err"; then
                echo "dec UNKNOWN" >>"$out"
            else
                echo "dec NO" >>"$out"
            fi
        elif [ "$r" -gt 2 ]; then
            if "$FRUGAL" ctl --addr "${ADDRS[$i]}" --timeout 3000 increase web-a 1 >/dev/null 2>"$out.err"; then
                echo "inc OK" >>"$out"
            elif grep -Eq '^(UNAVAILABLE|DEADLINE_EXCEEDED|ABORTED)' "$out.err" || ! grep -q ': ' "$out.err"; then
                echo "inc UNKNOWN" >>"$out"
            else
                echo "inc NO $(head -c 80 "$out.err")" >>"$out"
            fi
        else
            id=$("$FRUGAL" ctl --addr "${ADDRS[$i]}" --timeout 3000 -o yaml nodes web-a 2>/dev/null |
                grep -A1 '^- id: ' | paste - - | grep 'running' | sed 's/^- id: "\{0,1\}\([^" ]*\).*/\1/' | shuf -n1)
            [ -n "$id" ] || continue
            if "$FRUGAL" ctl --addr "${ADDRS[$i]}" --timeout 3000 delete-nodes web-a "$id" >/dev/null 2>"$out.err"; then
                echo "del OK $id" >>"$out"
            elif grep -Eq '^(UNAVAILABLE|DEADLINE_EXCEEDED|ABORTED)' "$out.err" || ! grep -q ': ' "$out.err"; then
                echo "del UNKNOWN $id" >>"$out"
            else
                echo "del NO $id" >>"$out"
            fi
        fi
    done
}

sampler() { # every target size any replica shows
    local end=$1 i
    while [ "$(date +%s)" -lt "$end" ]; do
        for i in 0 1 2; do
            "$FRUGAL" ctl --addr "${ADDRS[$i]}" --timeout 1000 target-size web-a 2>/dev/null >>"$TMP/samples"
        done
        sleep 0.05
    done
}

log "clients on three replicas for ${RUN_S}s, with kill -9 of replicas and etcd members"
END=$(( $(date +%s) + RUN_S ))
CLIENTS=()
for i in 0 1 2; do client "$i" "$END" & CLIENTS+=($!); done
sampler "$END" & CLIENTS+=($!)
sleep 1.5; restart_replica 1 1
sleep 0.5; etcd_member_kill 1; sleep 1.5; etcd_member_start 1
sleep 0.5; restart_replica 2 0.5
sleep 0.5; etcd_member_kill 0; sleep 1; etcd_member_start 0
for p in "${CLIENTS[@]}"; do wait "$p"; done

cat "$TMP"/ledger.? >"$TMP/ledger"
inc_ok=$(grep -c '^inc OK' "$TMP/ledger")
inc_unknown=$(grep -c '^inc UNKNOWN' "$TMP/ledger")
# A node deleted twice counts once (the second DeleteNodes is a retry): distinct ids.
del_ok=$(grep '^del OK' "$TMP/ledger" | awk '{print $3}' | sort -u | wc -l)
del_unknown=$(grep '^del UNKNOWN' "$TMP/ledger" | awk '{print $3}' | sort -u |
    grep -vxF -f <(grep '^del OK' "$TMP/ledger" | awk '{print $3}') | wc -l)
dec_ok=$(grep -c '^dec OK' "$TMP/ledger")
dec_unknown=$(grep -c '^dec UNKNOWN' "$TMP/ledger")
echo "    decreases: $dec_ok acknowledged, $dec_unknown unknown, $(grep -c '^dec NO' "$TMP/ledger") refused"
echo "    increases: $inc_ok acknowledged, $inc_unknown unknown, $(grep -c '^inc NO' "$TMP/ledger") refused;" \
    "deletions: $del_ok acknowledged, $del_unknown unknown"
# Progress is any acknowledged change: how many of each kind a client gets through in
# RUN_S seconds depends on the machine (under ASan on two slow cores, 9 increases).
assert_eq 1 "$(( inc_ok + dec_ok + del_ok >= 10 ))" "the clients made progress"

# The Watch brings every replica up to date; one on a member just restarted retries first.
T=()
for _ in $(seq 1 150); do
    for i in 0 1 2; do T[$i]=$(ADDR=${ADDRS[$i]} target_size web-a); done
    [ "${T[0]}" != ERR ] && [ "${T[0]}" = "${T[1]}" ] && [ "${T[0]}" = "${T[2]}" ] && break
    sleep 0.1
done
assert_eq "${T[0]}" "${T[1]}" "replicas 0 and 1 agree"
assert_eq "${T[0]}" "${T[2]}" "replicas 0 and 2 agree"
lo=$(( inc_ok - del_ok - del_unknown - dec_ok - dec_unknown ))
hi=$(( inc_ok + inc_unknown - del_ok - dec_ok ))
assert_eq 1 "$(( T[0] >= lo && T[0] <= hi ))" "target ${T[0]} within the acknowledged changes [$lo, $hi]"
max_seen=$(sort -n "$TMP/samples" | tail -1)
min_seen=$(sort -n "$TMP/samples" | head -1)
assert_eq 1 "$(( max_seen <= MAX_SIZE && min_seen >= 0 ))" "never seen outside [0, $MAX_SIZE] ($min_seen..$max_seen)"

ADDR=${ADDRS[0]} run ctl -o yaml nodes web-a
ids=$(echo "$OUT" | grep '^- id: ' | sed 's/^- id: "\{0,1\}\([^" ]*\).*/\1/')
assert_eq 0 "$(echo "$ids" | sort | uniq -d | wc -l)" "no instance id twice"
gone_bad=0
for id in $(grep '^del OK' "$TMP/ledger" | awk '{print $3}'); do
    if echo "$OUT" | grep -A1 "^- id: \"\{0,1\}$id\"\{0,1\}$" | grep -q running; then gone_bad=$((gone_bad + 1)); fi
done
assert_eq 0 "$gone_bad" "every acknowledged deletion holds"

etcd_stop
finish
